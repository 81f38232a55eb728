//! Dense-vector index for one model: an exact scan (the reference answer) and an optional
//! HNSW base plus an exact scan of the nodes the base does not cover.
//!
//! # Scores
//!
//! A hit's score is the dot product of the query and the node's stored vector, computed by
//! one kernel with a fixed summation order (16 `f32` lanes, a fixed reduction tree, then the
//! tail; see `dense/kernel.rs`). It is plain Rust arithmetic that the compiler vectorises on
//! the baseline target, so a score is the same bits on every machine, whichever path (exact
//! or graph) found the node. Hits are ordered `(score desc, ordinal asc)`.
//!
//! # Paths
//!
//! * **Exact**: every vector (or every vector in the filter) is scored. Always used without
//!   a base, for `k` above `ef_search / 4`, and for filters that keep too few vectors for the
//!   graph to find `k` of them (see [`DenseIndex::search`]).
//! * **Graph**: the base's graph proposes up to `ef_search` points; those still present (a
//!   present vector bitwise equal to the point's) and in the filter, plus every vector the
//!   base does not cover (the *delta*) in the filter, are rescored exactly. If fewer than
//!   `min(k, |filter ∩ present|)` candidates survive, the search falls back to the exact
//!   filtered scan, so a filtered query returns its `k` results whenever `k` exist.
//!
//! * **int8 scan** ([`DenseIndex::search_int8`], opt-in): a scan of int8 codes (a quarter of
//!   the exact scan's memory traffic) whose best candidates are rescored exactly.
//!
//! [`DenseIndex::search_exact`] always answers exactly, whatever is attached.
//!
//! Search is single-threaded: the same index and query give the same bytes out, whatever
//! the thread count.
//!
//! # Storage
//!
//! Present ordinals in increasing order and their vectors in one flat `Vec<f32>` (row `r` =
//! `r`-th present ordinal), plus the same ordinals as a bitmap for filter intersections. The
//! scan streams one contiguous array; derive is a remap and one copy; a filter of `f`
//! ordinals finds its rows by `f` binary searches. An attached base adds, per row, the
//! base point standing for it and, per point, its rows (compressed sparse rows).

pub(crate) mod int8;
pub(crate) mod kernel;

use std::sync::{Arc, OnceLock};

use cairn_core::limits::MAX_EMBEDDING_DIM;
use cairn_core::{Hash, NodeId};
use roaring::RoaringBitmap;

use crate::error::IndexError;
use crate::hit::{top_k, Hit, Ordinal};
use crate::hnsw::{HnswBase, HnswParams};
use crate::node_table::OrdinalRemap;
use int8::Int8Codes;

/// Tag byte of a persisted [`DenseIndex`] (derived data, format version 1).
pub const TAG_DENSE_INDEX: u8 = 0xA1;

/// The graph path needs `ef_search >= OVERFETCH · k` (and, with a filter, that many
/// expected survivors); otherwise the search is exact.
pub const OVERFETCH: usize = 4;

/// Candidates [`DenseIndex::search_int8`] rescores for `k = 10` in the measurements: the
/// int8 scan's recall@10 against the exact scan was ≥ 0.99 with it on Cranfield, CISI and
/// Vaswani.
pub const INT8_RESCORE: usize = 100;

/// Marks a row no base point covers.
const UNCOVERED: u32 = u32::MAX;

/// The result of a dense search.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseSearch {
    /// Hits with exact dot-product scores, `(score desc, ordinal asc)`.
    pub hits: Vec<Hit>,
    /// True if an approximate (HNSW) graph chose the candidates.
    pub approximate: bool,
}

/// Vectors of one model by ordinal (flat, `dim` floats per present node), the bitmap of
/// ordinals that have a vector, and optionally an HNSW base.
///
/// Layout: row `r` is the `r`-th present ordinal (`ordinals[r]`, increasing) and its vector
/// `vectors[r·dim .. (r+1)·dim]`, so the exact scan streams one contiguous array. With a base
/// attached, each row records the base point (if any) with a bitwise-equal vector, and each
/// point the rows it stands for (several when nodes share a vector).
///
/// ```
/// use cairn_index::DenseIndex;
/// let v = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]];
/// let index = DenseIndex::build("m", 2, 4, [(0, &v[0][..]), (1, &v[1][..]), (3, &v[2][..])]);
/// let found = index.search(&[0.0, 1.0], 2, None).unwrap();
/// assert_eq!(found.hits.iter().map(|h| h.ordinal).collect::<Vec<_>>(), vec![3, 1]);
/// assert!(!found.approximate);
/// assert!(index.search(&[1.0], 2, None).is_err()); // wrong dimension
/// ```
#[derive(Clone)]
pub struct DenseIndex {
    pub(crate) model: String,
    pub(crate) dim: usize,
    pub(crate) base: Option<Arc<HnswBase>>,
    /// The commit's node count (every ordinal is below it).
    n_nodes: u32,
    /// Present ordinals, strictly increasing (row order).
    ordinals: Vec<Ordinal>,
    /// The same set, for filter intersections.
    present: RoaringBitmap,
    /// `ordinals.len() · dim` components.
    vectors: Vec<f32>,
    /// The key of the base this index names: the attached base's, or the one named by
    /// stored bytes until the loader re-attaches it.
    base_key: Option<Hash>,
    /// Coverage by the attached base (empty without one).
    cover: Coverage,
    /// int8 codes of `vectors`, made on the first [`DenseIndex::search_int8`].
    int8: OnceLock<Int8Codes>,
}

/// How the attached base's points map to rows.
#[derive(Clone, Default)]
struct Coverage {
    /// Row → canonical base point, or [`UNCOVERED`].
    row_point: Vec<u32>,
    /// Rows no point covers, increasing.
    delta_rows: Vec<u32>,
    /// Canonical point `p`'s rows are `point_rows[point_start[p] .. point_start[p + 1]]`.
    point_start: Vec<u32>,
    point_rows: Vec<u32>,
    /// Base points (duplicates counted) whose vector no row has.
    stale_points: usize,
}

impl Coverage {
    fn new(row_point: Vec<u32>, base: &HnswBase) -> Coverage {
        let n_points = base.len();
        let mut point_start = vec![0u32; n_points + 1];
        let mut delta_rows = Vec::new();
        for (row, &p) in row_point.iter().enumerate() {
            if p == UNCOVERED {
                delta_rows.push(row as u32);
            } else {
                point_start[p as usize + 1] += 1;
            }
        }
        for p in 0..n_points {
            point_start[p + 1] += point_start[p];
        }
        let mut next = point_start.clone();
        let mut point_rows = vec![0u32; row_point.len() - delta_rows.len()];
        for (row, &p) in row_point.iter().enumerate() {
            if p != UNCOVERED {
                point_rows[next[p as usize] as usize] = row as u32;
                next[p as usize] += 1;
            }
        }
        let stale_points = (0..n_points)
            .filter(|&p| {
                let c = base.canonical(p as u32) as usize;
                point_start[c] == point_start[c + 1]
            })
            .count();
        Coverage {
            row_point,
            delta_rows,
            point_start,
            point_rows,
            stale_points,
        }
    }

    fn rows_of(&self, point: u32) -> &[u32] {
        let p = point as usize;
        match (self.point_start.get(p), self.point_start.get(p + 1)) {
            (Some(&a), Some(&b)) => &self.point_rows[a as usize..b as usize],
            _ => &[],
        }
    }
}

impl std::fmt::Debug for DenseIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseIndex")
            .field("model", &self.model)
            .field("dim", &self.dim)
            .field("n_nodes", &self.n_nodes)
            .field("len", &self.len())
            .field("delta_len", &self.delta_len())
            .field("base", &self.base)
            .field("named_base_key", &self.base_key.map(|k| k.short()))
            .finish()
    }
}

/// Semantic equality: model, dimension, node count, the vectors by ordinal (bitwise) and
/// the named base key ([`DenseIndex::named_base_key`]: a decoded index equals the one it was
/// encoded from). Coverage is a function of these and the base, so it is not compared.
impl PartialEq for DenseIndex {
    fn eq(&self, other: &Self) -> bool {
        self.model == other.model
            && self.dim == other.dim
            && self.n_nodes == other.n_nodes
            && self.ordinals == other.ordinals
            && self.vectors.len() == other.vectors.len()
            && self
                .vectors
                .iter()
                .zip(&other.vectors)
                .all(|(a, b)| a.to_bits() == b.to_bits())
            && self.base_key == other.base_key
    }
}

impl DenseIndex {
    /// Builds the exact index of `model` from `(ordinal, vector)` pairs in increasing
    /// ordinal order; `n_nodes` is the commit's node count. Every vector has `dim` finite
    /// components (validated upstream).
    ///
    /// # Panics
    ///
    /// If that contract is broken (an ordinal out of order or `>= n_nodes`, a vector of
    /// another length): a bug in the caller, not bad user input.
    pub fn build<'a>(
        model: &str,
        dim: usize,
        n_nodes: u32,
        vectors: impl IntoIterator<Item = (Ordinal, &'a [f32])>,
    ) -> DenseIndex {
        let mut index = DenseIndex::empty(model.to_string(), dim, n_nodes);
        for (ordinal, v) in vectors {
            index.push(ordinal, v);
        }
        index
    }

    fn empty(model: String, dim: usize, n_nodes: u32) -> DenseIndex {
        DenseIndex {
            model,
            dim,
            base: None,
            n_nodes,
            ordinals: Vec::new(),
            present: RoaringBitmap::new(),
            vectors: Vec::new(),
            base_key: None,
            cover: Coverage::default(),
            int8: OnceLock::new(),
        }
    }

    /// Appends a row (the contract checks of [`DenseIndex::build`]).
    fn push(&mut self, ordinal: Ordinal, v: &[f32]) {
        assert!(
            ordinal < self.n_nodes && self.ordinals.last().is_none_or(|&last| last < ordinal),
            "dense index `{}`: ordinal {ordinal} out of order or not below {}",
            self.model,
            self.n_nodes
        );
        assert_eq!(
            v.len(),
            self.dim,
            "dense index `{}`: vector of ordinal {ordinal}",
            self.model
        );
        self.ordinals.push(ordinal);
        self.present.push(ordinal);
        self.vectors.extend_from_slice(v);
    }

    /// Derives a child's index from the parent's: unchanged vectors move by `remap`,
    /// `upserted` (child ordinals, increasing) are the added or changed nodes that have a
    /// vector of this model. Equal to [`DenseIndex::build`] over the child's vectors
    /// (tested), and it keeps the parent's HNSW base (re-attached).
    ///
    /// Costs one copy of the vectors (`O(n·dim)`) plus a base lookup per upserted vector.
    ///
    /// # Panics
    ///
    /// If `remap` is not the parent's (`old_to_new.len()` differs from the parent's node
    /// count), or an upserted ordinal collides with a remapped one or breaks the
    /// [`DenseIndex::build`] contract.
    pub fn derive<'a>(
        parent: &DenseIndex,
        remap: &OrdinalRemap,
        upserted: impl IntoIterator<Item = (Ordinal, &'a [f32])>,
    ) -> DenseIndex {
        assert_eq!(
            remap.old_to_new.len(),
            parent.n_nodes as usize,
            "dense index `{}`: remap is not from the parent's node table",
            parent.model
        );
        // Kept rows: (child ordinal, parent row). Unchanged nodes keep their id order, so
        // this is increasing; sort anyway if a caller's remap is not monotone.
        let mut kept: Vec<(Ordinal, u32)> = parent
            .ordinals
            .iter()
            .enumerate()
            .filter_map(|(row, &o)| remap.old_to_new[o as usize].map(|n| (n, row as u32)))
            .collect();
        if kept.windows(2).any(|w| w[0].0 >= w[1].0) {
            kept.sort_unstable();
        }
        let parent_cover = parent.base.as_ref().map(|_| &parent.cover.row_point);
        let mut child = DenseIndex::empty(parent.model.clone(), parent.dim, remap.new_len);
        child.vectors.reserve(parent.vectors.len());
        child.ordinals.reserve(parent.ordinals.len());
        let mut row_point = Vec::new();
        let mut kept = kept.into_iter().peekable();
        let mut take_kept_below = |child: &mut DenseIndex, row_point: &mut Vec<u32>, limit: Option<Ordinal>| {
            while let Some(&(o, row)) = kept.peek() {
                if limit.is_some_and(|l| o >= l) {
                    assert!(
                        limit != Some(o),
                        "dense index `{}`: ordinal {o} both kept and upserted",
                        child.model
                    );
                    break;
                }
                kept.next();
                child.push(o, parent.row(row as usize));
                if let Some(points) = parent_cover {
                    row_point.push(points[row as usize]);
                }
            }
        };
        for (o, v) in upserted {
            take_kept_below(&mut child, &mut row_point, Some(o));
            child.push(o, v);
            if let Some(base) = &parent.base {
                row_point.push(base.find(v).unwrap_or(UNCOVERED));
            }
        }
        take_kept_below(&mut child, &mut row_point, None);
        child.base_key = parent.base_key;
        if let Some(base) = &parent.base {
            child.cover = Coverage::new(row_point, base);
            child.base = Some(base.clone());
        }
        child
    }

    /// This index with `base` attached: base points whose node is present here with a
    /// bitwise-equal vector are answered through the graph; every other vector stays in
    /// the exact "delta" scan.
    ///
    /// Coverage is decided by vector content (a point stands for every present vector
    /// bitwise equal to its own), so it is a function of this index's vectors and the base,
    /// and [`DenseIndex::derive`] reproduces it exactly. A base of another dimension covers
    /// nothing. Costs a hash and a lookup per vector (`O(n·dim)`).
    pub fn with_base(&self, base: Arc<HnswBase>) -> DenseIndex {
        let mut out = DenseIndex {
            model: self.model.clone(),
            dim: self.dim,
            base: None,
            n_nodes: self.n_nodes,
            ordinals: self.ordinals.clone(),
            present: self.present.clone(),
            vectors: self.vectors.clone(),
            base_key: None,
            cover: Coverage::default(),
            int8: self.int8.clone(),
        };
        out.attach(base);
        out
    }

    /// [`DenseIndex::with_base`] without copying the vectors (for a loader that owns the
    /// index it just decoded).
    pub fn into_with_base(mut self, base: Arc<HnswBase>) -> DenseIndex {
        self.attach(base);
        self
    }

    fn attach(&mut self, base: Arc<HnswBase>) {
        let row_point: Vec<u32> = (0..self.len())
            .map(|r| base.find(self.row(r)).unwrap_or(UNCOVERED))
            .collect();
        self.cover = Coverage::new(row_point, &base);
        self.base_key = Some(base.key);
        self.base = Some(base);
    }

    /// The attached base, if any.
    pub fn base(&self) -> Option<&Arc<HnswBase>> {
        self.base.as_ref()
    }

    /// The key of the attached base, if any (`None` for an index read by [`decode_dense`]
    /// until its base is re-attached: compare this with a base's key to know whether to
    /// attach it).
    pub fn base_key(&self) -> Option<Hash> {
        self.base.as_ref().map(|b| b.key)
    }

    /// The key of the base this index *names*: the attached base's, or — for an index read by
    /// [`decode_dense`] — the one it was stored with, to re-attach with
    /// [`DenseIndex::with_base`]. Until it is re-attached, the index answers exactly.
    pub fn named_base_key(&self) -> Option<Hash> {
        self.base_key
    }

    /// Number of vectors not covered by the base (all of them without a base).
    pub fn delta_len(&self) -> usize {
        match self.base {
            Some(_) => self.cover.delta_rows.len(),
            None => self.len(),
        }
    }

    /// Number of points of the attached base whose vector is no longer present (removed
    /// or changed since the base): the `removed_since_base` of
    /// [`needs_new_base`](crate::hnsw::needs_new_base). 0 without a base.
    pub fn stale_base_len(&self) -> usize {
        match self.base {
            Some(_) => self.cover.stale_points,
            None => 0,
        }
    }

    /// Number of nodes with a vector of this model.
    pub fn len(&self) -> usize {
        self.ordinals.len()
    }
    /// True if no node has a vector of this model.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The model's dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The commit's node count (ordinals of this index are below it).
    pub fn node_count(&self) -> u32 {
        self.n_nodes
    }

    /// The ordinals that have a vector.
    pub fn present(&self) -> &RoaringBitmap {
        &self.present
    }

    /// The vector of the node at `ordinal`, if it has one.
    pub fn vector(&self, ordinal: Ordinal) -> Option<&[f32]> {
        self.ordinals.binary_search(&ordinal).ok().map(|r| self.row(r))
    }

    fn row(&self, row: usize) -> &[f32] {
        &self.vectors[row * self.dim..(row + 1) * self.dim]
    }

    /// Builds an HNSW base over every vector of this index (the Repo calls this for a base
    /// commit, off the commit path). `node_ids` are the commit's ids in ordinal order
    /// ([`NodeTable::ids`](crate::NodeTable::ids)).
    pub fn build_base(&self, node_ids: &[NodeId], params: &HnswParams) -> Result<HnswBase, IndexError> {
        if node_ids.len() != self.n_nodes as usize {
            return Err(IndexError::Inconsistent(format!(
                "dense index `{}` has {} nodes but {} ids were given",
                self.model,
                self.n_nodes,
                node_ids.len()
            )));
        }
        let ids = self.ordinals.iter().map(|&o| node_ids[o as usize].clone()).collect();
        HnswBase::build(&self.model, self.dim, ids, &self.vectors, params)
    }

    /// Checks a query vector: its dimension, then that every component is finite.
    fn check_query(&self, query: &[f32]) -> Result<(), IndexError> {
        if query.len() != self.dim {
            return Err(IndexError::DimensionMismatch {
                model: self.model.clone(),
                expected: self.dim,
                got: query.len(),
            });
        }
        if let Some(position) = query.iter().position(|x| !x.is_finite()) {
            return Err(IndexError::NonFiniteQuery {
                model: self.model.clone(),
                position,
            });
        }
        Ok(())
    }

    /// The `k` nodes with the highest dot product with `query` among `filter`.
    ///
    /// Errors: [`IndexError::DimensionMismatch`] for a query of another dimension,
    /// [`IndexError::NonFiniteQuery`] for a NaN or infinite component. Ordinals in `filter`
    /// without a vector are ignored; hits are never outside `filter`.
    ///
    /// Returns exactly `min(k, |filter ∩ present|)` hits with exact scores. The path:
    ///
    /// * no base attached, or nothing covered by it, or `OVERFETCH · k > ef_search`: exact;
    /// * a filter whose expected share of the graph's `ef_search` candidates,
    ///   `ef_search · |filter ∩ present| / len`, is under `OVERFETCH · k`: exact over the
    ///   filter (a 0.1 % label at 100,000 nodes is 100 vectors: microseconds);
    /// * otherwise the graph path (module docs), falling back to the exact filtered scan if
    ///   fewer than `min(k, |filter ∩ present|)` candidates survive.
    pub fn search(&self, query: &[f32], k: usize, filter: Option<&RoaringBitmap>) -> Result<DenseSearch, IndexError> {
        self.check_query(query)?;
        let exact = |f: Option<&RoaringBitmap>| DenseSearch {
            hits: self.exact(query, k, f),
            approximate: false,
        };
        let base = match &self.base {
            Some(b) if k > 0 && self.cover.delta_rows.len() < self.len() => b,
            _ => return Ok(exact(filter)),
        };
        let ef = base.ef_search();
        if k.saturating_mul(OVERFETCH) > ef {
            return Ok(exact(filter));
        }
        let in_filter = match filter {
            Some(f) => f.intersection_len(&self.present) as usize,
            None => self.len(),
        };
        // Expected graph survivors `ef · in_filter / len` against `OVERFETCH · k`.
        if (ef as u128) * (in_filter as u128) < (OVERFETCH as u128) * (k as u128) * (self.len() as u128) {
            return Ok(exact(filter));
        }
        let passes = |row: u32| filter.is_none_or(|f| f.contains(self.ordinals[row as usize]));
        let mut rows: Vec<u32> = Vec::with_capacity(ef + self.cover.delta_rows.len());
        for point in base.search(query) {
            rows.extend(self.cover.rows_of(point).iter().copied().filter(|&r| passes(r)));
        }
        rows.extend(self.cover.delta_rows.iter().copied().filter(|&r| passes(r)));
        rows.sort_unstable();
        rows.dedup();
        if rows.len() < k.min(in_filter) {
            return Ok(exact(filter));
        }
        let hits = top_k(rows.iter().map(|&r| self.hit(query, r as usize)), k);
        Ok(DenseSearch {
            hits,
            approximate: true,
        })
    }

    /// The exact answer, whatever is attached: every vector (in `filter`) scored.
    ///
    /// Errors as [`DenseIndex::search`].
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<&RoaringBitmap>,
    ) -> Result<Vec<Hit>, IndexError> {
        self.check_query(query)?;
        Ok(self.exact(query, k, filter))
    }

    fn hit(&self, query: &[f32], row: usize) -> Hit {
        Hit {
            ordinal: self.ordinals[row],
            score: kernel::dot(query, self.row(row)),
        }
    }

    fn exact(&self, query: &[f32], k: usize, filter: Option<&RoaringBitmap>) -> Vec<Hit> {
        self.scan(k, filter, |r| self.hit(query, r))
    }

    /// The `k` best of `score(row)` over the rows in `filter` (all without one).
    fn scan(&self, k: usize, filter: Option<&RoaringBitmap>, score: impl FnMut(usize) -> Hit) -> Vec<Hit> {
        if k == 0 {
            return Vec::new();
        }
        let Some(filter) = filter else {
            return top_k((0..self.len()).map(score), k);
        };
        // Walk the smaller side: a selective filter by binary search into the rows (each
        // search starting where the last ended), a broad one by testing each row.
        if filter.len().saturating_mul(8) < self.len() as u64 {
            let mut from = 0usize;
            let rows = filter.iter().filter_map(|o| {
                let at = from + self.ordinals[from..].partition_point(|&x| x < o);
                from = at;
                (self.ordinals.get(at) == Some(&o)).then_some(at)
            });
            top_k(rows.map(score), k)
        } else {
            let rows = (0..self.len()).filter(|&r| filter.contains(self.ordinals[r]));
            top_k(rows.map(score), k)
        }
    }

    /// The `k` best nodes by an int8 scan that exactly rescores its `rescore` best
    /// candidates (at least `k`): a quarter of the exact scan's memory traffic, for the
    /// price of recall (see `dense/int8.rs`; [`INT8_RESCORE`] candidates gave recall@10 ≥
    /// 0.99 on the evaluation sets). Ignores the base. Deterministic; scores are exact.
    ///
    /// `approximate` is false when every vector in the filter was rescored. The codes are
    /// made on the first call (`O(n·dim)`, a quarter of the vectors' memory) and kept.
    ///
    /// Errors as [`DenseIndex::search`].
    pub fn search_int8(
        &self,
        query: &[f32],
        k: usize,
        rescore: usize,
        filter: Option<&RoaringBitmap>,
    ) -> Result<DenseSearch, IndexError> {
        self.check_query(query)?;
        let codes = self.int8.get_or_init(|| Int8Codes::new(&self.vectors, self.dim));
        let mut q = vec![0i8; self.dim];
        let q_scale = int8::quantize(query, &mut q);
        let mut scanned = 0usize;
        // Rows stand in for ordinals while ranking candidates: same order, cheaper lookup.
        let candidates = self.scan(rescore.max(k), filter, |r| {
            scanned += 1;
            let dot = int8::dot_i8(&q, codes.row(r, self.dim));
            Hit {
                ordinal: r as u32,
                score: dot as f32 * (q_scale * codes.scales[r]),
            }
        });
        let hits = top_k(candidates.iter().map(|c| self.hit(query, c.ordinal as usize)), k);
        Ok(DenseSearch {
            hits,
            approximate: candidates.len() < scanned,
        })
    }
}

/// Encodes the exact part of an index and the key of the base it names (not the base:
/// bases are stored once, by key, with [`encode_hnsw`](crate::hnsw::encode_hnsw)).
///
/// Layout (fixed-width little endian, the same bytes bincode's fixed-int configuration
/// writes for these fields): [`TAG_DENSE_INDEX`]; model (u64 length + UTF-8); `dim` (u64);
/// node count (u32); base key (`0u8`, or `1u8` + 32 bytes); row count (u64); the ordinals
/// (u32 each, increasing); the vectors (`f32` bits, row-major).
pub fn encode_dense(index: &DenseIndex) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + index.model.len() + index.ordinals.len() * 4 + index.vectors.len() * 4);
    out.push(TAG_DENSE_INDEX);
    out.extend_from_slice(&(index.model.len() as u64).to_le_bytes());
    out.extend_from_slice(index.model.as_bytes());
    out.extend_from_slice(&(index.dim as u64).to_le_bytes());
    out.extend_from_slice(&index.n_nodes.to_le_bytes());
    match &index.base_key {
        None => out.push(0),
        Some(k) => {
            out.push(1);
            out.extend_from_slice(k.as_bytes());
        }
    }
    out.extend_from_slice(&(index.ordinals.len() as u64).to_le_bytes());
    for o in &index.ordinals {
        out.extend_from_slice(&o.to_le_bytes());
    }
    for x in &index.vectors {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// Decodes bytes written by [`encode_dense`]. The result has no base attached; if
/// [`DenseIndex::named_base_key`] names one, re-attach it with [`DenseIndex::with_base`].
///
/// Refuses (with [`IndexError::BadStoredIndex`]) a wrong tag, truncated or trailing bytes,
/// lengths that do not fit the input (checked before allocating), a dimension outside
/// `1..=4096`, ordinals out of order or out of range, and non-finite components.
pub fn decode_dense(bytes: &[u8]) -> Result<DenseIndex, IndexError> {
    let mut r = Reader { bytes, at: 0 };
    let tag = r.take(1)?[0];
    if tag != TAG_DENSE_INDEX {
        return Err(bad_dense(format!("tag 0x{tag:02x}, expected 0x{TAG_DENSE_INDEX:02x}")));
    }
    let model_len = r.len_within(1)?;
    let model = std::str::from_utf8(r.take(model_len)?)
        .map_err(|_| bad_dense("model name is not UTF-8".into()))?
        .to_string();
    let dim = r.u64()?;
    if dim == 0 || dim > MAX_EMBEDDING_DIM as u64 {
        return Err(bad_dense(format!("dimension {dim}")));
    }
    let dim = dim as usize;
    let n_nodes = u32::from_le_bytes(r.array()?);
    let base_key = match r.take(1)?[0] {
        0 => None,
        1 => Some(Hash::from_bytes(r.array()?)),
        b => return Err(bad_dense(format!("base flag {b}"))),
    };
    let rows = r.len_within(4 + 4 * dim)?;
    let mut index = DenseIndex::empty(model, dim, n_nodes);
    index.base_key = base_key;
    index.ordinals = r
        .take(rows * 4)?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if index.ordinals.windows(2).any(|w| w[0] >= w[1]) || index.ordinals.last().is_some_and(|&o| o >= n_nodes) {
        return Err(bad_dense("ordinals out of order or out of range".into()));
    }
    index.vectors = r
        .take(rows * dim * 4)?
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if index.vectors.iter().any(|x| !x.is_finite()) {
        return Err(bad_dense("non-finite component".into()));
    }
    if r.at != bytes.len() {
        return Err(bad_dense("trailing bytes".into()));
    }
    index.present = RoaringBitmap::from_sorted_iter(index.ordinals.iter().copied())
        .map_err(|_| bad_dense("ordinals out of order".into()))?;
    Ok(index)
}

fn bad_dense(what: String) -> IndexError {
    IndexError::BadStoredIndex(format!("dense index: {what}"))
}

/// A bounds-checked cursor over stored bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], IndexError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| bad_dense("truncated".into()))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], IndexError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u64(&mut self) -> Result<u64, IndexError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// A u64 count of items of `item_bytes` each that must fit in the remaining input.
    fn len_within(&mut self, item_bytes: usize) -> Result<usize, IndexError> {
        let n = self.u64()?;
        let left = (self.bytes.len() - self.at) as u64;
        if n.checked_mul(item_bytes as u64).is_none_or(|b| b > left) {
            return Err(bad_dense(format!("length {n} exceeds the input")));
        }
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests;
