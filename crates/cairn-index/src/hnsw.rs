//! An HNSW graph (instant-distance 0.6.1) over the vectors of one model in a *base* node set.
//!
//! # Why a base, and which one
//!
//! Building a graph is slow (instant-distance builds about 1,500 points/s of 384-d vectors on
//! one core with the parameters below), it has no insert or delete, and its parallel build is
//! not deterministic. So a graph is never built on the commit path of a small change. Instead
//! a commit's [`DenseIndex`](crate::DenseIndex) is *exact vectors* plus, optionally, an
//! [`HnswBase`] built for the vectors of an ancestor (the *base commit*): points of the base
//! whose vector is still present are answered through the graph, every other vector (added or
//! changed since the base) by an exact scan, and vectors removed since the base are dropped
//! from the graph's answers. Same commit + same base ⇒ same index ⇒ same answers.
//!
//! The policy the Repo layer applies, along first-parent history (so the base a commit uses is
//! a function of its history, which its id names):
//!
//! * below [`HNSW_MIN_NODES`] vectors no base is used: the exact scan is fast enough;
//! * otherwise a commit keeps its parent's base until [`needs_new_base`] says the part the
//!   base does not cover has grown past `total / REBASE_DIVISOR` (10 %);
//!   the commit where it says so becomes the new base commit, and its descendants reuse that
//!   base until the rule fires again. The graph itself can be built off the commit path
//!   (it is a pure function of the base commit's vectors, cached by [`HnswBase::key`]).
//!
//! # Metric
//!
//! The dense lane ranks by the exact dot product (see [`DenseIndex`](crate::DenseIndex)).
//! The graph navigates by cosine distance `1 − a·b / (‖a‖‖b‖)` over the raw vectors it
//! stores (norms computed once per point). For L2-normalised embeddings (MiniLM and most
//! sentence encoders) cosine order is dot order, so the graph's candidates are the dot-product
//! neighbours; for unnormalised vectors they are the cosine neighbours, rescored by the exact
//! dot product — an approximation that only the approximate path makes.
//!
//! # Determinism
//!
//! The graph is built in a one-thread rayon pool (instant-distance's parallel insertion order
//! otherwise depends on thread scheduling) with a fixed seed, and every distance goes through
//! the fixed-order dot kernel, so a base's graph — and its bytes — are a function of
//! `(model, dim, params, ids, vectors)` alone, on any 64-bit machine.
//!
//! # Parameters (measured, see [`HnswParams::default`])

use std::sync::Arc;

use cairn_core::codec::{decode_derived_serde, encode_derived_serde};
use cairn_core::{Hash, NodeId};
use instant_distance::{Builder, Heuristic, HnswMap, Point, Search};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::dense::{int8, kernel};
use crate::error::IndexError;

/// Tag byte of a persisted [`HnswBase`] (derived data, format version 1).
pub const TAG_HNSW_BASE: u8 = 0xA2;

/// Below this many vectors no HNSW base is built: the exact scan answers.
///
/// Measured (one core, 384-d): the exact scan costs about 0.1 ms per 1,000 vectors
/// (≈ 2.4 ms at 20,000, ≈ 14 ms at 100,000), a graph query about 0.5–1 ms; a graph for
/// 20,000 vectors takes ≈ 13 s to build. Under 20,000 vectors the exact scan is within a
/// few milliseconds and needs no build at all.
pub const HNSW_MIN_NODES: usize = 20_000;

/// A new base is due when uncovered changes exceed `total / REBASE_DIVISOR` (10 %).
pub const REBASE_DIVISOR: usize = 10;

/// The documented base-selection rule: true if a commit should become a new base commit.
///
/// * `base_len`: points in the current base (0 if the commit has none);
/// * `delta_len`: vectors of the commit the base does not cover
///   ([`DenseIndex::delta_len`](crate::DenseIndex::delta_len));
/// * `removed_since_base`: base points whose vector is gone from the commit
///   ([`DenseIndex::stale_base_len`](crate::DenseIndex::stale_base_len));
/// * `total`: vectors in the commit ([`DenseIndex::len`](crate::DenseIndex::len)).
///
/// No base below [`HNSW_MIN_NODES`]; a first base as soon as the commit reaches it; then a
/// new one when `delta_len + removed_since_base > total / 10` (at least 2,000 changes, as
/// `total >= HNSW_MIN_NODES`). At 10 % the exact delta scan stays under ~1.5 ms at 100,000
/// vectors, the graph's answers lose few candidates to removed points, and a rebuild is
/// amortised over at least a tenth of the collection's worth of changes.
///
/// ```
/// use cairn_index::hnsw::needs_new_base;
/// assert!(!needs_new_base(0, 5_000, 0, 5_000)); // small: exact only
/// assert!(needs_new_base(0, 30_000, 0, 30_000)); // first base
/// assert!(!needs_new_base(100_000, 900, 50, 100_950)); // small delta: keep the base
/// assert!(needs_new_base(100_000, 8_000, 4_000, 104_000)); // > 10 %: rebuild
/// ```
pub fn needs_new_base(base_len: usize, delta_len: usize, removed_since_base: usize, total: usize) -> bool {
    if total < HNSW_MIN_NODES {
        return false;
    }
    if base_len == 0 {
        return true;
    }
    delta_len.saturating_add(removed_since_base) > total / REBASE_DIVISOR
}

/// HNSW build and search parameters (part of a base's key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HnswParams {
    /// Seed of the layer assignment.
    pub seed: u64,
    /// `ef_construction`: candidate list size while inserting.
    pub ef_construction: usize,
    /// `ef_search`: candidate list size of a query, and so the most candidates one graph
    /// query can return (instant-distance fixes it at build time).
    pub ef_search: usize,
    /// Use instant-distance's neighbour-selection heuristic (slower build).
    pub heuristic: bool,
}

impl Default for HnswParams {
    /// `ef_construction = 100`, `ef_search = 128`, heuristic off, a fixed seed.
    ///
    /// Chosen on the Cranfield and CISI MiniLM embeddings (one thread; recall@10 against
    /// the exact scan, averaged over all queries; vaswani was only reported, not tuned on):
    ///
    /// | setting | cranfield build | recall@10 | cisi build | recall@10 |
    /// |---|---:|---:|---:|---:|
    /// | heuristic on, efc 100, ef 128 | 1.55 s | 1.000 | 1.55 s | 1.000 |
    /// | heuristic off, efc 50, ef 128 | 0.40 s | 0.999 | 0.45 s | 1.000 |
    /// | **heuristic off, efc 100, ef 128** | 0.65 s | 1.000 | 0.70 s | 1.000 |
    /// | heuristic off, efc 200, ef 128 | 1.10 s | 1.000 | 1.20 s | 1.000 |
    /// | heuristic off, efc 100, ef 64 | 0.65 s | 0.998 | 0.70 s | 0.999 |
    ///
    /// The heuristic (instant-distance's default) costs 2–6× the build time for no recall
    /// on these sets (on vaswani: 46 s vs 7.6 s, recall 0.999 vs 1.000), and query time
    /// grows with `ef_search` while recall@10 saturates by 128; 128 also lets one graph query
    /// serve `k` up to 32 with 4× over-fetch (see [`DenseIndex::search`](crate::DenseIndex::search)).
    fn default() -> Self {
        HnswParams {
            seed: 0x6361_6972_6e2d_6877, // "cairn-hw"
            ef_construction: 100,
            ef_search: 128,
            heuristic: false,
        }
    }
}

/// One graph point: the raw vector (stored, and the key of coverage lookups) and, for
/// navigation, its int8 codes with one combined scale (code scale × inverse norm), both
/// recomputed from the vector, never stored.
#[derive(Clone)]
pub(crate) struct GraphPoint {
    v: Arc<[f32]>,
    codes: Arc<[i8]>,
    scale: f32,
}

impl GraphPoint {
    fn new(v: Arc<[f32]>) -> GraphPoint {
        let mut codes = vec![0i8; v.len()];
        let code_scale = int8::quantize(&v, &mut codes);
        let scale = code_scale * kernel::inv_norm(&v);
        GraphPoint {
            v,
            codes: codes.into(),
            scale,
        }
    }
}

impl Point for GraphPoint {
    /// Cosine distance over the int8 codes: `1 − (Σ qa·qb) · (sa · sb)`, exact integer sum,
    /// `sa · sb` formed first so the distance is symmetric bit for bit.
    fn distance(&self, other: &Self) -> f32 {
        1.0 - int8::dot_i8(&self.codes, &other.codes) as f32 * (self.scale * other.scale)
    }
}

/// A point is stored as its vector's little-endian bytes (one length-prefixed byte string:
/// bincode copies it in one go instead of decoding float by float).
impl Serialize for GraphPoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::with_capacity(self.v.len() * 4);
        for x in self.v.iter() {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        s.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for GraphPoint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = GraphPoint;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a vector as little-endian f32 bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<GraphPoint, E> {
                let words = b.chunks_exact(4);
                if !words.remainder().is_empty() {
                    return Err(E::invalid_length(b.len(), &self));
                }
                let v: Arc<[f32]> = words.map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                Ok(GraphPoint::new(v))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, b: Vec<u8>) -> Result<GraphPoint, E> {
                self.visit_bytes(&b)
            }
        }
        d.deserialize_byte_buf(Bytes)
    }
}

/// An HNSW index over `(NodeId, vector)` pairs of a base node set. Built in a one-thread
/// rayon pool with a fixed seed, so the graph — and its bytes — are a function of the
/// input alone.
///
/// Point `i` is node `ids[i]` with the `i`-th vector given to [`HnswBase::build`]. A
/// [`DenseIndex`](crate::DenseIndex) with this base attached answers a vector through the
/// graph iff the base has a point with a bitwise-equal vector (identity does not matter: the
/// graph finds positions, scores come from the index's own vectors).
pub struct HnswBase {
    /// Hash of (model, dimension, params, the base's ids and vectors): what it was built from.
    pub key: Hash,
    /// Point `i` of the graph is node `ids[i]`.
    pub ids: Vec<NodeId>,
    model: String,
    dim: usize,
    params: HnswParams,
    graph: HnswMap<GraphPoint, u32>,
    /// Point `i`'s vector (shared with the graph's copy).
    vectors: Vec<Arc<[f32]>>,
    /// `(fingerprint(vector), i)` sorted: finds points by vector.
    by_fingerprint: Vec<(u64, u32)>,
    /// Point `i` → the smallest point with a bitwise-equal vector.
    canonical: Vec<u32>,
}

impl std::fmt::Debug for HnswBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HnswBase({}, {} points)", self.key.short(), self.ids.len())
    }
}

impl HnswBase {
    /// Builds the graph of `model` over `ids` (strictly increasing, the base commit's nodes
    /// that have a vector) and `vectors` (`ids.len() * dim` finite floats, row `i` for
    /// `ids[i]`), in a one-thread rayon pool with `params.seed`.
    ///
    /// Errors ([`IndexError::Inconsistent`]): a zero `dim`, a vector slice of the wrong
    /// length, ids out of order, a non-finite component, or a failure to start the build
    /// thread.
    pub fn build(
        model: &str,
        dim: usize,
        ids: Vec<NodeId>,
        vectors: &[f32],
        params: &HnswParams,
    ) -> Result<HnswBase, IndexError> {
        let bad = |what: String| IndexError::Inconsistent(format!("HNSW base for model `{model}`: {what}"));
        if dim == 0 {
            return Err(bad("dimension 0".into()));
        }
        if ids.len().checked_mul(dim) != Some(vectors.len()) {
            return Err(bad(format!(
                "{} ids but {} floats for dimension {dim}",
                ids.len(),
                vectors.len()
            )));
        }
        if u32::try_from(ids.len()).map_or(true, |n| n == u32::MAX) {
            return Err(bad(format!("{} points is too many", ids.len())));
        }
        if let Some(w) = ids.windows(2).position(|w| w[0] >= w[1]) {
            return Err(bad(format!("ids not strictly increasing at {:?}", ids[w + 1])));
        }
        if let Some(p) = vectors.iter().position(|x| !x.is_finite()) {
            return Err(bad(format!("non-finite component in the vector of {:?}", ids[p / dim])));
        }
        let key = base_key(model, dim, params, &ids, vectors.chunks_exact(dim));
        let points: Vec<GraphPoint> = vectors.chunks_exact(dim).map(|v| GraphPoint::new(v.into())).collect();
        let values: Vec<u32> = (0..ids.len() as u32).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "cairn-hnsw-build".to_string())
            .build()
            .map_err(|e| bad(format!("cannot start the build thread: {e}")))?;
        let builder = Builder::default()
            .seed(params.seed)
            .ef_construction(params.ef_construction)
            .ef_search(params.ef_search)
            .select_heuristic(params.heuristic.then(Heuristic::default));
        let graph = pool.install(move || builder.build(points, values));
        HnswBase::assemble(key, model.to_string(), dim, *params, ids, graph)
    }

    /// Adds the lookup tables to a built or decoded graph, checking that its values are a
    /// permutation of the points and its vectors have `dim` components.
    fn assemble(
        key: Hash,
        model: String,
        dim: usize,
        params: HnswParams,
        ids: Vec<NodeId>,
        graph: HnswMap<GraphPoint, u32>,
    ) -> Result<HnswBase, IndexError> {
        let bad = |what: &str| IndexError::BadStoredIndex(format!("HNSW base {}: {what}", key.short()));
        let n = ids.len();
        if graph.values.len() != n {
            return Err(bad("point count differs from id count"));
        }
        let mut slots: Vec<Option<Arc<[f32]>>> = vec![None; n];
        let mut count = 0usize;
        for (pid, point) in graph.iter() {
            let value = graph.values.get(pid.into_inner() as usize).copied();
            let slot = value
                .and_then(|i| slots.get_mut(i as usize))
                .ok_or_else(|| bad("bad point value"))?;
            if slot.is_some() || point.v.len() != dim {
                return Err(bad("duplicate point value or wrong dimension"));
            }
            *slot = Some(point.v.clone());
            count += 1;
        }
        if count != n {
            return Err(bad("point count differs from id count"));
        }
        let vectors: Vec<Arc<[f32]>> = slots.into_iter().flatten().collect();
        let mut by_fingerprint: Vec<(u64, u32)> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (fingerprint(v), i as u32))
            .collect();
        by_fingerprint.sort_unstable();
        let mut canonical: Vec<u32> = (0..n as u32).collect();
        for run in by_fingerprint.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
            for (j, &(_, i)) in run.iter().enumerate() {
                if let Some(&(_, first)) = run[..j]
                    .iter()
                    .find(|(_, e)| bits_eq(&vectors[*e as usize], &vectors[i as usize]))
                {
                    canonical[i as usize] = canonical[first as usize];
                }
            }
        }
        Ok(HnswBase {
            key,
            ids,
            model,
            dim,
            params,
            graph,
            vectors,
            by_fingerprint,
            canonical,
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    /// True if the base has no points.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }
    /// The vectors' dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// The parameters it was built with.
    pub fn params(&self) -> &HnswParams {
        &self.params
    }
    /// The most candidates one graph query returns (`params.ef_search`).
    pub fn ef_search(&self) -> usize {
        self.params.ef_search
    }

    /// The smallest point whose vector is bitwise equal to point `p`'s (`p` itself if none
    /// is smaller).
    pub(crate) fn canonical(&self, p: u32) -> u32 {
        self.canonical.get(p as usize).copied().unwrap_or(p)
    }

    /// The smallest point whose vector is bitwise equal to `v`, if any.
    pub(crate) fn find(&self, v: &[f32]) -> Option<u32> {
        let fp = fingerprint(v);
        let start = self.by_fingerprint.partition_point(|e| e.0 < fp);
        self.by_fingerprint[start..]
            .iter()
            .take_while(|e| e.0 == fp)
            .find(|e| bits_eq(&self.vectors[e.1 as usize], v))
            .map(|e| self.canonical[e.1 as usize])
    }

    /// The canonical points of up to `ef_search` approximate nearest neighbours of `query`
    /// (cosine), nearest first. Single-threaded and deterministic.
    pub(crate) fn search(&self, query: &[f32]) -> Vec<u32> {
        let point = GraphPoint::new(query.into());
        let mut search = Search::default();
        self.graph
            .search(&point, &mut search)
            .filter_map(|item| self.canonical.get(*item.value as usize).copied())
            .collect()
    }
}

/// Bitwise equality of two vectors (so `-0.0 != 0.0`, and equal means identical bytes).
pub(crate) fn bits_eq(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// A 64-bit hash of a vector's bits, for lookup only (equality is always checked bitwise).
/// Four independent multiply-rotate lanes (component `i` into lane `i mod 4`), so it runs
/// at memory speed rather than at the latency of one dependency chain.
pub(crate) fn fingerprint(v: &[f32]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes = [v.len() as u64, 1, 2, 3];
    let mut chunks = v.chunks_exact(4);
    for c in &mut chunks {
        for (h, x) in lanes.iter_mut().zip(c) {
            *h = (h.rotate_left(26) ^ u64::from(x.to_bits())).wrapping_mul(K);
        }
    }
    for (h, x) in lanes.iter_mut().zip(chunks.remainder()) {
        *h = (h.rotate_left(26) ^ u64::from(x.to_bits())).wrapping_mul(K);
    }
    let h = lanes
        .iter()
        .fold(0u64, |acc, &l| (acc.rotate_left(31) ^ l).wrapping_mul(K));
    h ^ (h >> 29)
}

/// The base key: blake3 over
/// `"cairn/hnsw-base/v1 instant-distance=0.6.1\0"`, then `u64` LE length + UTF-8 of the
/// model, `dim` (u64), `seed`, `ef_construction`, `ef_search` (u64 each), `heuristic` (one
/// byte), the point count (u64), and per point its id (u64 length + UTF-8) and its `dim`
/// components as `f32` LE bits.
fn base_key<'a>(
    model: &str,
    dim: usize,
    params: &HnswParams,
    ids: &[NodeId],
    vectors: impl Iterator<Item = &'a [f32]>,
) -> Hash {
    // Written into one buffer flushed in large pieces: blake3 hashes big inputs with SIMD
    // across chunks, small updates one block at a time. The bytes hashed are the same.
    let mut h = blake3::Hasher::new();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 17);
    buf.extend_from_slice(b"cairn/hnsw-base/v1 instant-distance=0.6.1\0");
    buf.extend_from_slice(&(model.len() as u64).to_le_bytes());
    buf.extend_from_slice(model.as_bytes());
    for x in [
        dim as u64,
        params.seed,
        params.ef_construction as u64,
        params.ef_search as u64,
    ] {
        buf.extend_from_slice(&x.to_le_bytes());
    }
    buf.push(u8::from(params.heuristic));
    buf.extend_from_slice(&(ids.len() as u64).to_le_bytes());
    for (id, v) in ids.iter().zip(vectors) {
        buf.extend_from_slice(&(id.as_bytes().len() as u64).to_le_bytes());
        buf.extend_from_slice(id.as_bytes());
        for x in v {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        if buf.len() >= 1 << 16 {
            h.update(&buf);
            buf.clear();
        }
    }
    h.update(&buf);
    Hash::from_bytes(*h.finalize().as_bytes())
}

/// Version of the persisted layout inside [`TAG_HNSW_BASE`].
const FORMAT: u32 = 1;

#[derive(Serialize)]
struct StoredBaseRef<'a> {
    format: u32,
    key: &'a Hash,
    model: &'a str,
    dim: u64,
    params: &'a HnswParams,
    ids: &'a [NodeId],
    graph: &'a HnswMap<GraphPoint, u32>,
}

#[derive(Deserialize)]
struct StoredBase {
    format: u32,
    key: Hash,
    model: String,
    dim: u64,
    params: HnswParams,
    ids: Vec<NodeId>,
    graph: HnswMap<GraphPoint, u32>,
}

/// Encodes a base for storage: [`TAG_HNSW_BASE`], then (bincode serde, fixed-width little
/// endian) the format version, key, model, dimension, params, ids and instant-distance's
/// own serialization of the graph (points as their raw vectors).
pub fn encode_hnsw(base: &HnswBase) -> Result<Vec<u8>, IndexError> {
    let stored = StoredBaseRef {
        format: FORMAT,
        key: &base.key,
        model: &base.model,
        dim: base.dim as u64,
        params: &base.params,
        ids: &base.ids,
        graph: &base.graph,
    };
    encode_derived_serde(TAG_HNSW_BASE, &stored)
        .map_err(|e| IndexError::BadStoredIndex(format!("cannot encode HNSW base {}: {e}", base.key.short())))
}

/// Decodes a base written by [`encode_hnsw`], re-checking its key against its ids and
/// vectors, and the graph's point table against its ids.
///
/// The graph's links are instant-distance's derived data and are trusted as read (the
/// store checksums what it returns).
pub fn decode_hnsw(bytes: &[u8]) -> Result<HnswBase, IndexError> {
    let stored: StoredBase = decode_derived_serde(TAG_HNSW_BASE, bytes)
        .map_err(|e| IndexError::BadStoredIndex(format!("HNSW base: {e}")))?;
    if stored.format != FORMAT {
        return Err(IndexError::BadStoredIndex(format!(
            "HNSW base format {} (this build reads {FORMAT})",
            stored.format
        )));
    }
    let dim = usize::try_from(stored.dim)
        .ok()
        .filter(|d| *d > 0)
        .ok_or_else(|| IndexError::BadStoredIndex(format!("HNSW base dimension {}", stored.dim)))?;
    if stored.ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(IndexError::BadStoredIndex(
            "HNSW base ids not strictly increasing".into(),
        ));
    }
    let base = HnswBase::assemble(stored.key, stored.model, dim, stored.params, stored.ids, stored.graph)?;
    if base.vectors.iter().any(|v| v.iter().any(|x| !x.is_finite())) {
        return Err(IndexError::BadStoredIndex(
            "HNSW base has a non-finite component".into(),
        ));
    }
    let key = base_key(
        &base.model,
        dim,
        &base.params,
        &base.ids,
        base.vectors.iter().map(|v| &v[..]),
    );
    if key != base.key {
        return Err(IndexError::BadStoredIndex(format!(
            "HNSW base names key {} but its content hashes to {}",
            base.key.short(),
            key.short()
        )));
    }
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<NodeId> {
        (0..n).map(|i| NodeId::new(format!("n{i:05}")).unwrap()).collect()
    }

    fn vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n * dim)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn rebase_rule() {
        assert!(!needs_new_base(0, HNSW_MIN_NODES - 1, 0, HNSW_MIN_NODES - 1));
        assert!(needs_new_base(0, HNSW_MIN_NODES, 0, HNSW_MIN_NODES));
        assert!(!needs_new_base(20_000, 1_000, 1_020, 20_200));
        assert!(needs_new_base(20_000, 1_000, 1_021, 20_200));
        assert!(!needs_new_base(100_000, 5_000, 5_000, 100_000));
        assert!(needs_new_base(100_000, 5_001, 5_000, 100_000));
    }

    #[test]
    fn build_is_deterministic_and_round_trips() {
        let (n, dim) = (300, 12);
        let v = vectors(n, dim, 3);
        let p = HnswParams::default();
        let a = HnswBase::build("m", dim, ids(n), &v, &p).unwrap();
        let b = HnswBase::build("m", dim, ids(n), &v, &p).unwrap();
        assert_eq!(a.key, b.key);
        let bytes = encode_hnsw(&a).unwrap();
        assert_eq!(bytes, encode_hnsw(&b).unwrap());
        let c = decode_hnsw(&bytes).unwrap();
        assert_eq!(encode_hnsw(&c).unwrap(), bytes);
        assert_eq!(c.key, a.key);
        assert_eq!(c.ids, a.ids);
        for i in 0..n {
            assert_eq!(a.find(&v[i * dim..(i + 1) * dim]), Some(i as u32));
            assert_eq!(c.find(&v[i * dim..(i + 1) * dim]), Some(i as u32));
        }
        assert_eq!(a.find(&vec![0.5; dim]), None);
        // Another seed is another key.
        let q = HnswParams { seed: 1, ..p };
        assert_ne!(HnswBase::build("m", dim, ids(n), &v, &q).unwrap().key, a.key);
    }

    #[test]
    fn duplicates_share_a_canonical_point() {
        let dim = 4;
        let mut v = vectors(5, dim, 9);
        let first: Vec<f32> = v[4..8].to_vec();
        v[12..16].copy_from_slice(&first);
        let b = HnswBase::build("m", dim, ids(5), &v, &HnswParams::default()).unwrap();
        assert_eq!(b.find(&first), Some(1));
        assert_eq!(b.canonical, vec![0, 1, 2, 1, 4]);
        // Every graph answer is canonical.
        assert!(b.search(&first).iter().all(|&p| p != 3));
    }

    #[test]
    fn bad_input_and_bad_bytes_are_errors() {
        let p = HnswParams::default();
        assert!(HnswBase::build("m", 0, ids(1), &[], &p).is_err());
        assert!(HnswBase::build("m", 2, ids(2), &[1.0; 3], &p).is_err());
        assert!(HnswBase::build("m", 1, ids(2), &[1.0, f32::NAN], &p).is_err());
        let mut rev = ids(2);
        rev.reverse();
        assert!(HnswBase::build("m", 1, rev, &[1.0, 2.0], &p).is_err());
        let b = HnswBase::build("m", 3, ids(20), &vectors(20, 3, 1), &p).unwrap();
        let bytes = encode_hnsw(&b).unwrap();
        assert!(decode_hnsw(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode_hnsw(&[]).is_err());
        // Flip one bit of a vector component: the key check refuses it.
        let needle = b.vectors[7][1].to_le_bytes();
        let at = bytes.windows(4).position(|w| w == needle).unwrap();
        let mut bad = bytes.clone();
        bad[at] ^= 1;
        assert!(matches!(decode_hnsw(&bad), Err(IndexError::BadStoredIndex(_))));
    }

    #[test]
    fn empty_base() {
        let b = HnswBase::build("m", 3, vec![], &[], &HnswParams::default()).unwrap();
        assert!(b.is_empty());
        assert!(b.search(&[1.0, 0.0, 0.0]).is_empty());
        let c = decode_hnsw(&encode_hnsw(&b).unwrap()).unwrap();
        assert_eq!(c.key, b.key);
    }
}
