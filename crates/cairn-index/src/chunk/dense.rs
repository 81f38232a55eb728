//! The dense part of a node chunk (one per dense model): what the int8 scan reads —
//! codes, scales and the bound terms of `dense/int8.rs`, all computed from the vectors when
//! the part is built — and where each row's exact vector is: its node object, the offset of
//! the vector in the object's encoding, and the row's crc32 (`storage-format.md` §7.3.4).
//! The exact vectors are held in memory, or left in the node objects and read a row at a
//! time through a [`crate::RowSource`]; the stored part holds no vectors either way.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use cairn_core::Hash;

use crate::chunk::node::Local;
use crate::chunk::row_fields::RowFields;
use crate::dense::int8::{kernel_gamma, quantize_row, row_terms};
use crate::dense::kernel;
use crate::dense::rows::{row_crc, with_row, HeldRows, RowAt, RowSource, StoredRows};

/// Vectors of one model in one chunk: row `r` is local ordinal `rows[r]` (increasing).
#[derive(Debug, Clone, Default)]
pub struct DenseChunk {
    pub(crate) dim: usize,
    pub(crate) rows: Vec<Local>,
    /// `rows.len() · dim` components; empty when they are `stored`.
    pub(crate) vectors: Vec<f32>,
    /// The source rows are read from when they are not held in memory.
    pub(crate) stored: Option<StoredRows>,
    /// `rows.len() · dim` int8 codes (as bytes: built here, or where the stored part lies,
    /// [`crate::persist::decode_dense_shared`]).
    pub(crate) codes: Bytes,
    /// Each row's scale and bound terms (`dense/int8.rs`), crc32 of its little-endian
    /// bytes, node object and where its vector starts in the object's encoding: read where
    /// they lie, as the codes.
    pub(crate) fields: RowFields,
    /// True if row `r` is local ordinal `r` for every row (every node of the chunk has a
    /// vector up to the last row): rows are then found without a search.
    pub(crate) identity: bool,
    /// `Some` for a stored part whose codes no store checked as it read them: each row's
    /// codes are checked against their crc32 the first time they are read
    /// ([`DenseChunk::checked_codes`]). `None`: every row's codes are known good (built
    /// here, or read from a store that checked the whole value).
    pub(crate) unchecked: Option<CodeChecks>,
}

/// The rows of a dense part whose codes have been checked against their crc32 so far: one
/// bit a row, set the first time a row's codes are read and pass (a row that fails is not
/// set, and is checked — and fails — again). The first 64 rows' bits lie in the part
/// itself, next to what a scan reads of it anyway (most chunks hold about 64 nodes), the
/// rest in one allocation. A clone starts with the bits set so far (they hold for its
/// codes, the same bytes).
#[derive(Debug)]
pub(crate) struct CodeChecks {
    first: AtomicU64,
    /// Rows 64 and on, 64 a word (empty, no allocation, for a part of at most 64 rows).
    rest: Box<[AtomicU64]>,
}

impl Clone for CodeChecks {
    fn clone(&self) -> CodeChecks {
        let copy = |w: &AtomicU64| AtomicU64::new(w.load(Ordering::Relaxed));
        CodeChecks {
            first: copy(&self.first),
            rest: self.rest.iter().map(copy).collect(),
        }
    }
}

impl CodeChecks {
    fn new(rows: usize) -> CodeChecks {
        CodeChecks {
            first: AtomicU64::new(0),
            rest: (0..rows.div_ceil(64).saturating_sub(1))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    #[inline(always)]
    fn word(&self, r: usize) -> &AtomicU64 {
        match r / 64 {
            0 => &self.first,
            w => &self.rest[w - 1],
        }
    }

    #[inline(always)]
    fn passed(&self, r: usize) -> bool {
        self.word(r).load(Ordering::Relaxed) & (1 << (r % 64)) != 0
    }

    fn set(&self, r: usize) {
        self.word(r).fetch_or(1 << (r % 64), Ordering::Relaxed);
    }

    /// Heap bytes beyond the part.
    fn heap_bytes(&self) -> usize {
        self.rest.len() * 8
    }
}

/// Equality of the stored content (everything the part's encoding holds), and of the
/// vectors' bits where both parts hold them in memory.
impl PartialEq for DenseChunk {
    fn eq(&self, other: &Self) -> bool {
        let vectors = match (&self.stored, &other.stored) {
            (None, None) => same_bits(&self.vectors, &other.vectors),
            _ => true,
        };
        vectors && self.head_eq(other)
    }
}

/// A dense part as it is stored (`persist::decode_dense`): everything but the exact rows —
/// their local ordinals, int8 codes, scales, bound terms, checksums, and where each row is.
#[derive(Debug, Clone)]
pub struct DenseHead {
    pub(crate) dim: usize,
    pub(crate) rows: Vec<Local>,
    /// The int8 codes as bytes (a slice of the stored value where the store hands one out).
    pub(crate) codes: Bytes,
    /// The per-row fields, as stored (a slice of the stored value where the codes are).
    pub(crate) fields: RowFields,
    /// True if the store checked the codes (the whole value) as it read them; else each
    /// row's are checked against its crc32 when first read.
    pub(crate) codes_checked: bool,
}

/// Equality of the stored content (whether the codes were checked yet is not content).
impl PartialEq for DenseHead {
    fn eq(&self, other: &Self) -> bool {
        self.dim == other.dim && self.rows == other.rows && self.fields == other.fields && self.codes == other.codes
    }
}

impl DenseHead {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True if the part has no rows (never so for a decoded part).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Row `r`'s node object and the offset of its vector in the object's encoding.
    pub fn row_place(&self, r: usize) -> Option<(Hash, u32)> {
        self.fields.place(r)
    }

    /// The part, with its rows left in their node objects and read through `source`, one
    /// at a time as rescoring needs them; `key` is the part's store key (reported to
    /// `source` if a row cannot be read).
    pub fn into_rows_stored(self, source: Arc<dyn RowSource>, key: &[u8]) -> DenseChunk {
        self.with_stored(source, key, false)
    }

    /// The part, holding its rows in memory once read: each is read from its node object
    /// through `source` (checked against its crc32) the first time it is rescored, and
    /// kept, so that loading a part reads none. A row that cannot be read is not kept: it is
    /// scored from its node object whole and the part reported to `source` as damaged
    /// (`key`: its store key), as for [`DenseHead::into_rows_stored`].
    pub fn into_rows_held(self, source: Arc<dyn RowSource>, key: &[u8]) -> DenseChunk {
        self.with_stored(source, key, true)
    }

    fn with_stored(self, source: Arc<dyn RowSource>, key: &[u8], held: bool) -> DenseChunk {
        let mut d = self.with_vectors(Vec::new());
        d.stored = Some(StoredRows {
            source,
            key: key.into(),
            held: held.then(|| (0..d.rows.len()).map(|_| OnceLock::new()).collect()),
        });
        d
    }

    fn with_vectors(self, vectors: Vec<f32>) -> DenseChunk {
        let identity = self.rows.iter().enumerate().all(|(r, &l)| r as Local == l);
        let unchecked = (!self.codes_checked).then(|| CodeChecks::new(self.rows.len()));
        DenseChunk {
            dim: self.dim,
            rows: self.rows,
            vectors,
            stored: None,
            codes: self.codes,
            fields: self.fields,
            identity,
            unchecked,
        }
    }
}

/// One row of a chunk being built: its local ordinal, node object, the vector's offset in
/// the object's encoding, and the vector.
pub(crate) struct BuiltRow<'a> {
    pub(crate) local: Local,
    pub(crate) node: Hash,
    pub(crate) offset: u32,
    pub(crate) vector: &'a [f32],
}

impl DenseChunk {
    /// Builds from rows (increasing local ordinals, vectors of `dim` finite components).
    pub(crate) fn from_rows<'a>(dim: usize, built: impl ExactSizeIterator<Item = BuiltRow<'a>>) -> DenseChunk {
        let n = built.len();
        let mut rows = Vec::with_capacity(n);
        let mut vectors = Vec::with_capacity(n * dim);
        let mut nodes = Vec::with_capacity(n);
        let mut offsets = Vec::with_capacity(n);
        let mut crcs = Vec::with_capacity(n);
        let mut code_crcs = Vec::with_capacity(n);
        for b in built {
            debug_assert_eq!(b.vector.len(), dim);
            rows.push(b.local);
            nodes.push(b.node);
            offsets.push(b.offset);
            crcs.push(row_crc(b.vector));
            vectors.extend_from_slice(b.vector);
        }
        let mut codes = vec![0i8; n * dim];
        let mut scales = Vec::with_capacity(n);
        let mut bound_u = Vec::with_capacity(n);
        let mut bound_v = Vec::with_capacity(n);
        let gamma = kernel_gamma(dim);
        if dim > 0 {
            for (v, c) in vectors.chunks_exact(dim).zip(codes.chunks_exact_mut(dim)) {
                let s = quantize_row(v, c);
                let (u, w) = row_terms(v, c, s, gamma);
                code_crcs.push(crc32fast::hash(bytemuck::cast_slice(c)));
                scales.push(s);
                bound_u.push(u);
                bound_v.push(w);
            }
        }
        let identity = rows.iter().enumerate().all(|(r, &l)| r as Local == l);
        DenseChunk {
            dim,
            rows,
            vectors,
            stored: None,
            // Same size and alignment: the allocation is reused.
            codes: Bytes::from(codes.into_iter().map(|c| c as u8).collect::<Vec<u8>>()),
            fields: RowFields::build(&scales, &bound_u, &bound_v, &crcs, &code_crcs, &nodes, &offsets),
            identity,
            unchecked: None,
        }
    }

    /// True if the two parts store the same bytes (everything but the vectors).
    fn head_eq(&self, other: &Self) -> bool {
        self.dim == other.dim && self.rows == other.rows && self.fields == other.fields && self.codes == other.codes
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of rows (nodes with a vector of this model).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True if no node of the chunk has a vector of this model.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The local ordinals of the rows.
    pub fn rows(&self) -> &[Local] {
        &self.rows
    }

    /// Row `r`'s vector, if it is in memory now (`None` when the rows are read from the
    /// node objects, [`DenseChunk::rows_in_memory`], or held but this one not read yet).
    pub fn vector(&self, r: usize) -> Option<&[f32]> {
        match &self.stored {
            None => self.vectors.get(r * self.dim..(r + 1) * self.dim),
            Some(s) => s.held.as_ref()?.get(r)?.get().map(|v| &**v),
        }
    }

    /// True if the part holds its rows once read ([`DenseHead::into_rows_held`]) and some
    /// are not read yet.
    pub fn rows_unread(&self) -> bool {
        self.stored
            .as_ref()
            .and_then(|s| s.held.as_ref())
            .is_some_and(|h| h.iter().any(|r| r.get().is_none()))
    }

    /// Reads every row of a part that holds its rows once read and has not read them yet
    /// (a view fills its parts this way after loading them, off the query path). A row
    /// that cannot be read is left unread: rescoring reads it from its node object whole
    /// when it needs it, and reports the part then. Stops, before the next row, once
    /// `stop` is set.
    pub fn read_held_rows(&self, stop: &AtomicBool) {
        let Some(s) = &self.stored else {
            return;
        };
        let Some(held) = &s.held else {
            return;
        };
        for r in 0..held.len() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let _ = self.held_row(s, held, r);
        }
    }

    /// Row `r` of a part that holds its rows once read: kept, or read now (checked) and
    /// kept — two threads reading it at once keep one copy of the same bytes. `Err` (why)
    /// if it cannot be read; nothing is kept then.
    fn held_row<'a>(&self, s: &StoredRows, held: &'a HeldRows, r: usize) -> Result<&'a [f32], String> {
        let row = &held[r];
        if let Some(v) = row.get() {
            return Ok(v);
        }
        let v: Box<[f32]> = with_row(&*s.source, self.row_at(r), |v| v.into())?;
        Ok(row.get_or_init(|| v))
    }

    /// Where row `r` is.
    fn row_at(&self, r: usize) -> RowAt {
        RowAt {
            node: self.fields.node(r),
            offset: self.fields.offset(r),
            dim: self.dim,
            crc: self.fields.crc(r),
        }
    }

    /// Row `r`'s node object and the offset of its vector in the object's encoding.
    pub fn row_place(&self, r: usize) -> Option<(Hash, u32)> {
        self.fields.place(r)
    }

    /// Row `r`'s int8 scale.
    #[inline(always)]
    pub(crate) fn scale(&self, r: usize) -> f32 {
        self.fields.scale(r)
    }

    /// Row `r`'s scale and bound terms `u` and `v` (`dense/int8.rs`).
    #[inline(always)]
    pub(crate) fn bound_terms(&self, r: usize) -> (f32, f32, f32) {
        (self.fields.scale(r), self.fields.bound_u(r), self.fields.bound_v(r))
    }

    /// Prefetches row `r`'s codes, scale and bound terms.
    #[inline(always)]
    pub(crate) fn prefetch_bounds(&self, r: usize) {
        crate::dense::prefetch::prefetch(self.codes(r));
        for b in self.fields.bound_bytes(r) {
            crate::dense::prefetch::prefetch(b);
        }
    }

    /// True if the exact rows are held in memory (or will be, each once first rescored:
    /// [`DenseHead::into_rows_held`]); false if they are read from the node objects each
    /// time rescoring needs them.
    pub fn rows_in_memory(&self) -> bool {
        self.stored.as_ref().is_none_or(|s| s.held.is_some())
    }

    /// The part with its exact rows left in their node objects, read through `source`
    /// (`key`: the part's store key, reported to `source` if a row cannot be read); the
    /// codes and bounds stay, the rows in memory are let go. A part already on disk is
    /// returned as it is.
    pub fn into_rows_stored(mut self, source: Arc<dyn RowSource>, key: &[u8]) -> DenseChunk {
        match &mut self.stored {
            Some(s) => s.held = None,
            None => {
                self.vectors = Vec::new();
                self.stored = Some(StoredRows {
                    source,
                    key: key.into(),
                    held: None,
                });
            }
        }
        self
    }

    /// Row `r`'s codes as they lie, checked or not: for a prefetch, or for a caller that
    /// has checked the part ([`DenseChunk::check_codes`]). A scan reads them through
    /// [`DenseChunk::checked_codes`].
    #[inline(always)]
    pub(crate) fn codes(&self, r: usize) -> &[i8] {
        bytemuck::cast_slice(&self.codes[r * self.dim..(r + 1) * self.dim])
    }

    /// Row `r`'s codes, known to be those the part was built with: the codes of a stored
    /// part no store checked are checked against the row's crc32 (and for −128, which no
    /// quantisation writes) the first time they are read, so a cold load reads only the
    /// codes of the rows it scores. `None` if they fail: the part is reported damaged to
    /// its source (it is rebuilt from the objects) and the caller does without the codes
    /// (a bound that cannot prune, a graph distance that is never the nearest).
    #[inline(always)]
    pub(crate) fn checked_codes(&self, r: usize) -> Option<&[i8]> {
        match &self.unchecked {
            Some(checks) if !checks.passed(r) => self.check_row(checks, r),
            _ => Some(self.codes(r)),
        }
    }

    /// Checks row `r`'s codes ([`DenseChunk::checked_codes`]).
    #[inline(never)]
    fn check_row(&self, checks: &CodeChecks, r: usize) -> Option<&[i8]> {
        if self.fields.codes_hold(r, &self.codes[r * self.dim..(r + 1) * self.dim]) {
            checks.set(r);
            return Some(self.codes(r));
        }
        if let Some(s) = &self.stored {
            s.source.damaged(&s.key, RowFields::codes_refused(r));
        }
        None
    }

    /// Checks the codes of every row not checked yet against the row's crc32 (a stored
    /// part's codes are otherwise checked a row at a time, when first read), as what is
    /// built from all of them (a unit's graph) needs; `Err` (why) for the first row that
    /// fails, which is also reported to the part's source, so that it is rebuilt.
    pub fn check_codes(&self) -> Result<(), String> {
        match (0..self.len()).find(|&r| self.checked_codes(r).is_none()) {
            Some(r) => Err(RowFields::codes_refused(r)),
            None => Ok(()),
        }
    }

    /// The row of local ordinal `local`, if it has a vector.
    pub fn row_of(&self, local: Local) -> Option<usize> {
        if self.identity {
            return ((local as usize) < self.rows.len()).then_some(local as usize);
        }
        self.rows.binary_search(&local).ok()
    }

    /// The exact kernel score of row `r` for `query`. `Err` (why) only for a row on disk
    /// that cannot be read or fails its checksum: the caller scores it from the data
    /// ([`DenseChunk::score_from_data`]).
    #[inline]
    pub(crate) fn score(&self, query: &[f32], r: usize) -> Result<f32, String> {
        match &self.stored {
            None => Ok(kernel::dot(query, &self.vectors[r * self.dim..(r + 1) * self.dim])),
            Some(s) => {
                if let Some(held) = &s.held {
                    return Ok(kernel::dot(query, self.held_row(s, held, r)?));
                }
                with_row(&*s.source, self.row_at(r), |v| kernel::dot(query, v))
            }
        }
    }

    /// Scores row `r` with the vector of its node object read whole (what
    /// [`DenseChunk::score`] could not read by range), after telling the source that the
    /// stored part is damaged.
    pub(crate) fn score_from_data(&self, query: &[f32], r: usize, model: &str, why: String) -> Result<f32, String> {
        let Some(s) = &self.stored else {
            return Err(why);
        };
        s.source.damaged(&s.key, why);
        let node = &self.fields.node(r);
        let v = s.source.node_vector(node, model)?;
        if v.len() != self.dim || row_crc(&v) != self.fields.crc(r) {
            return Err(format!(
                "node {} does not hold the vector its index part was built from",
                node.short()
            ));
        }
        Ok(kernel::dot(query, &v))
    }

    /// Prefetches row `r`'s vector when it is in memory.
    #[inline]
    pub(crate) fn prefetch_row(&self, r: usize) {
        if let Some(v) = self.vector(r) {
            crate::dense::prefetch::prefetch(v);
        }
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        // Rows held once read count from the start: a part's charge does not change.
        let stored = self.stored.as_ref().map_or(0, |s| {
            s.key.len() + 64 + s.held.as_ref().map_or(0, |h| h.len() * (self.dim * 4 + 32))
        });
        let checks = self.unchecked.as_ref().map_or(0, CodeChecks::heap_bytes);
        self.rows.len() * 4
            + self.fields.as_bytes().len()
            + self.vectors.len() * 4
            + self.codes.len()
            + stored
            + checks
            + 128
    }
}

/// True if `a` and `b` hold the same floats, bit for bit.
fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}
