//! The dense part of a node chunk (one per dense model): the exact vectors, and what the
//! int8 scan reads — codes, scales and the bound terms of `dense/int8.rs`, all computed
//! from the vectors when the part is built, and stored ahead of them (the part's head,
//! `storage-format.md` §7.3.4). The exact vectors are held in memory, or left in the
//! stored part and read a row at a time through a [`crate::RowSource`].

use std::sync::Arc;

use crate::chunk::node::Local;
use crate::dense::int8::{kernel_gamma, quantize_row, row_terms};
use crate::dense::kernel;
use crate::dense::rows::{row_crc, RowSource, StoredRows};

/// Vectors of one model in one chunk: row `r` is local ordinal `rows[r]` (increasing).
#[derive(Debug, Clone, Default)]
pub struct DenseChunk {
    pub(crate) dim: usize,
    pub(crate) rows: Vec<Local>,
    /// `rows.len() · dim` components; empty when they are `stored`.
    pub(crate) vectors: Vec<f32>,
    /// Where the rows are read from when they are not held in memory.
    pub(crate) stored: Option<StoredRows>,
    pub(crate) codes: Vec<i8>,
    pub(crate) scales: Vec<f32>,
    /// Bound terms per row (`dense/int8.rs`).
    pub(crate) bound_u: Vec<f32>,
    pub(crate) bound_v: Vec<f32>,
    /// True if row `r` is local ordinal `r` for every row (every node of the chunk has a
    /// vector up to the last row): rows are then found without a search.
    pub(crate) identity: bool,
}

/// Bitwise equality of the stored content (rows and vector bits; the rest is derived). A
/// part whose rows are on disk is compared by its rows' checksums and codes.
impl PartialEq for DenseChunk {
    fn eq(&self, other: &Self) -> bool {
        if self.dim != other.dim || self.rows != other.rows {
            return false;
        }
        match (&self.stored, &other.stored) {
            (None, None) => {
                self.vectors.len() == other.vectors.len()
                    && self
                        .vectors
                        .iter()
                        .zip(&other.vectors)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
            }
            _ => self.row_crcs() == other.row_crcs() && self.codes == other.codes,
        }
    }
}

/// A dense part as its stored head holds it (`persist::decode_dense_head`): everything
/// but the exact rows — their local ordinals, int8 codes, scales, bound terms and
/// checksums.
#[derive(Debug, Clone)]
pub struct DenseHead {
    pub(crate) dim: usize,
    pub(crate) rows: Vec<Local>,
    pub(crate) codes: Vec<i8>,
    pub(crate) scales: Vec<f32>,
    pub(crate) bound_u: Vec<f32>,
    pub(crate) bound_v: Vec<f32>,
    pub(crate) crcs: Vec<u32>,
}

impl DenseHead {
    /// The part, with its rows left in the stored value `key` (whose rows start at byte
    /// `first`) and read through `source`.
    pub fn into_rows_stored(mut self, source: Arc<dyn RowSource>, key: &[u8], first: u64) -> DenseChunk {
        let crcs = std::mem::take(&mut self.crcs).into();
        let mut d = self.with_vectors(Vec::new());
        d.stored = Some(StoredRows {
            source,
            key: key.into(),
            first,
            crcs,
            reader: Default::default(),
        });
        d
    }

    /// The part, with its rows in memory (`vectors`, checked against the head's checksums
    /// by the caller).
    pub(crate) fn with_vectors(self, vectors: Vec<f32>) -> DenseChunk {
        let identity = self.rows.iter().enumerate().all(|(r, &l)| r as Local == l);
        DenseChunk {
            dim: self.dim,
            rows: self.rows,
            vectors,
            stored: None,
            codes: self.codes,
            scales: self.scales,
            bound_u: self.bound_u,
            bound_v: self.bound_v,
            identity,
        }
    }
}

impl DenseChunk {
    /// Builds from rows (increasing local ordinals) and their vectors (`rows.len() · dim`
    /// finite components).
    pub(crate) fn from_rows(dim: usize, rows: Vec<Local>, vectors: Vec<f32>) -> DenseChunk {
        debug_assert_eq!(rows.len() * dim, vectors.len());
        let n = rows.len();
        let mut codes = vec![0i8; n * dim];
        let mut scales = Vec::with_capacity(n);
        let mut bound_u = Vec::with_capacity(n);
        let mut bound_v = Vec::with_capacity(n);
        let gamma = kernel_gamma(dim);
        if dim > 0 {
            for (v, c) in vectors.chunks_exact(dim).zip(codes.chunks_exact_mut(dim)) {
                let s = quantize_row(v, c);
                let (u, w) = row_terms(v, c, s, gamma);
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
            codes,
            scales,
            bound_u,
            bound_v,
            identity,
        }
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

    /// Row `r`'s vector, if the rows are held in memory (`None` when they are read from
    /// the store: [`DenseChunk::rows_in_memory`]).
    pub fn vector(&self, r: usize) -> Option<&[f32]> {
        self.vectors.get(r * self.dim..(r + 1) * self.dim)
    }

    /// True if the exact rows are held in memory; false if they are read from the stored
    /// part when rescoring needs them.
    pub fn rows_in_memory(&self) -> bool {
        self.stored.is_none()
    }

    /// The part with its exact rows left in the stored value `key` (the part's own
    /// encoding, [`crate::persist::encode_dense`], whose rows start at byte `first`),
    /// read through `source`; the codes and bounds stay, the rows in memory are let go.
    /// A part already on disk is returned as it is.
    pub fn into_rows_stored(mut self, source: Arc<dyn RowSource>, key: &[u8], first: u64) -> DenseChunk {
        if self.stored.is_none() {
            let crcs = self.row_crcs().into();
            self.vectors = Vec::new();
            self.stored = Some(StoredRows {
                source,
                key: key.into(),
                first,
                crcs,
                reader: Default::default(),
            });
        }
        self
    }

    /// Each row's crc32 (of its little-endian bytes).
    pub(crate) fn row_crcs(&self) -> Vec<u32> {
        match &self.stored {
            Some(s) => s.crcs.to_vec(),
            None if self.dim == 0 => vec![0; self.rows.len()],
            None => self.vectors.chunks_exact(self.dim).map(row_crc).collect(),
        }
    }

    /// Row `r`'s codes.
    pub(crate) fn codes(&self, r: usize) -> &[i8] {
        &self.codes[r * self.dim..(r + 1) * self.dim]
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
            Some(s) => s.with_row(r, self.dim, |v| kernel::dot(query, v)),
        }
    }

    /// Scores row `r` with the vector of node object `node` (what [`DenseChunk::score`]
    /// could not read), after telling the source that the stored part is damaged.
    pub(crate) fn score_from_data(
        &self,
        query: &[f32],
        r: usize,
        node: &cairn_core::Hash,
        model: &str,
        why: String,
    ) -> Result<f32, String> {
        let Some(s) = &self.stored else {
            return Err(why);
        };
        s.source.damaged(&s.key, why);
        let v = s.source.node_vector(node, model)?;
        if v.len() != self.dim || row_crc(&v) != s.crcs[r] {
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
        let stored = self.stored.as_ref().map_or(0, |s| s.crcs.len() * 4 + s.key.len() + 64);
        self.rows.len() * (4 + 4 + 4 + 4) + self.vectors.len() * 4 + self.codes.len() + stored + 128
    }
}
