//! An HNSW graph (instant-distance 0.6.1) over the vectors of one model in a *base* node set.
//!
//! # Why a base, and which one
//!
//! Building a graph is slow (one core, 384-d, the default parameters: 11,429 Vaswani
//! vectors in ~10 CPU s, 100,000 synthetic clustered vectors in ~90 CPU s), it has no insert
//! or delete, and instant-distance's parallel build is not deterministic. So a graph is
//! never built on the commit path of a small change. Instead a commit's [`DenseIndex`](crate::DenseIndex) is *exact vectors* plus, optionally, an
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
//!   base does not cover has grown past `total / REBASE_DIVISOR` (10 %); the commit where
//!   it says so becomes the new base commit, and its descendants reuse that base until the
//!   rule fires again. The graph itself can be built off the commit path (it is a pure
//!   function of the base commit's vectors, cached by [`HnswBase::key`]). Attach it with
//!   `DenseIndex::with_base`; `DenseIndex::derive` carries it to descendants.
//!
//! # Metric
//!
//! The dense lane ranks by the exact dot product (see [`DenseIndex`](crate::DenseIndex)).
//! The graph only proposes candidates, and navigates by cosine distance computed on int8
//! codes of the vectors (`dense/int8.rs`): `1 − (Σ qa·qb) · (sa · sb)` with `s` = code
//! scale × `1/‖v‖`. The integer sum is exact, so distances are reproducible, and reading
//! 384 bytes per point instead of 1,536 made the Vaswani build ~28 % and its queries ~17 %
//! cheaper than `f32` cosine (one back-to-back measurement), with the same recall@10
//! (0.9978) and nDCG@10. For
//! L2-normalised embeddings (MiniLM and most sentence encoders) cosine order is dot order,
//! so the candidates are the dot-product neighbours; for unnormalised vectors they are the
//! cosine neighbours, rescored by the exact dot product — an approximation that only the
//! graph path makes.
//!
//! # Determinism
//!
//! The graph is built in a one-thread rayon pool (instant-distance's parallel insertion order
//! otherwise depends on thread scheduling) with a fixed seed, and every distance is plain,
//! fixed-order arithmetic, so a base's graph — and its bytes — are a function of
//! `(model, dim, params, ids, vectors)` alone, on any 64-bit machine (instant-distance's
//! `SmallRng` is Xoshiro256++ there).
//!
//! Parameters were chosen by measurement: see [`HnswParams::default`].

use std::sync::Arc;

use cairn_core::codec::bincode;
use cairn_core::codec::encode_derived_serde;
use cairn_core::{Hash, NodeId};
use instant_distance::{Builder, Heuristic, HnswMap, Point, Search};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::dense::{int8, kernel};
use crate::error::IndexError;

/// Tag byte of a persisted [`HnswBase`] (derived data, format version 1).
pub const TAG_HNSW_BASE: u8 = 0xA2;

/// Below this many vectors no HNSW base is built: the exact scan answers.
///
/// Measured on one core of a shared machine, 384-d: the exact scan is memory-bound at about
/// 0.25 ms per 1,000 vectors (1.5–2.5 ms at Vaswani's 11,429, ~5 ms at 20,000, ~25 ms at
/// 100,000); a graph query costs ~1 ms (Vaswani and 100,000 alike); a graph costs ~30 CPU s
/// to build at 20,000 vectors, ~90 at 100,000. Below 20,000 the exact scan stays within a
/// few milliseconds of the graph, and needs no build at all.
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
    /// Chosen on the Cranfield and CISI MiniLM embeddings (1,400 and 1,460 docs, 384-d; one
    /// thread; build in CPU seconds; recall@10 of the graph path against the exact scan over
    /// all queries; query in CPU ms; Vaswani was only reported, not tuned on):
    ///
    /// | setting | cranfield build | recall@10 | query | cisi build | recall@10 | query |
    /// |---|---:|---:|---:|---:|---:|---:|
    /// | heuristic on, efc 100, ef 128 | 2.85 | 0.9996 | 0.23 | 2.73 | 1.0000 | 0.22 |
    /// | heuristic off, efc 50, ef 128 | 0.17 | 0.9956 | 0.27 | 0.18 | 0.9987 | 0.34 |
    /// | **heuristic off, efc 100, ef 128** | 0.23 | 0.9996 | 0.27 | 0.24 | 1.0000 | 0.26 |
    /// | heuristic off, efc 200, ef 128 | 0.27 | 0.9996 | 0.25 | 0.31 | 1.0000 | 0.29 |
    /// | heuristic off, efc 100, ef 40 | 0.24 | 0.9964 | 0.16 | 0.26 | 0.9987 | 0.17 |
    /// | heuristic off, efc 100, ef 64 | 0.23 | 0.9973 | 0.28 | 0.51 | 1.0000 | 0.21 |
    /// | heuristic off, efc 100, ef 256 | 0.41 | 1.0000 | 0.40 | 0.29 | 1.0000 | 0.53 |
    ///
    /// (CPU time is read in 10 ms ticks on a shared machine: build times are ±0.05 s.)
    ///
    /// * Heuristic off: instant-distance's neighbour-selection heuristic costs ~12× the build
    ///   for no recall here (on Vaswani, measured for the issue: 46 s vs 7.6 s).
    /// * `ef_construction` 100: 50 loses recall (and moves nDCG@10 by 0.001), 200 costs more
    ///   build for nothing.
    /// * `ef_search` 128: recall@10 saturates there (64 and 40 drop on Cranfield, 40 moves
    ///   CISI's nDCG@10), and it lets one graph query serve `k` up to 32 with the 4×
    ///   over-fetch of [`DenseIndex::search`](crate::DenseIndex::search).
    ///
    /// With it, nDCG@10 through the graph equals the exact scan's on Cranfield (0.3998) and
    /// CISI (0.4192); on Vaswani 0.4327 against 0.4335 (recall@10 0.9978).
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
    /// [`fingerprint`] of `v`, made while the vector is in cache.
    fingerprint: u64,
}

impl GraphPoint {
    /// Everything derived from a vector is computed here in one visit, while the vector is
    /// hot in cache (loading a base is otherwise a series of passes over all vectors).
    fn new(v: Arc<[f32]>) -> GraphPoint {
        let (inv, code_scale) = int8::scales(&v);
        // Collected from exact-size iterators: one allocation each, no copy.
        let codes: Arc<[i8]> = v.iter().map(|&x| int8::code(x, inv)).collect();
        let scale = code_scale * kernel::inv_norm(&v);
        GraphPoint {
            fingerprint: fingerprint(&v),
            v,
            codes,
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
                if !v.iter().fold(true, |ok, x| ok & x.is_finite()) {
                    return Err(E::custom("non-finite vector component"));
                }
                Ok(GraphPoint::new(v))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, b: Vec<u8>) -> Result<GraphPoint, E> {
                self.visit_bytes(&b)
            }
        }
        d.deserialize_bytes(Bytes)
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
        let mut slots: Vec<Option<&GraphPoint>> = vec![None; n];
        let mut count = 0usize;
        for (pid, point) in graph.iter() {
            let value = graph.values.get(pid.into_inner() as usize).copied();
            let slot = value
                .and_then(|i| slots.get_mut(i as usize))
                .ok_or_else(|| bad("bad point value"))?;
            if slot.is_some() || point.v.len() != dim {
                return Err(bad("duplicate point value or wrong dimension"));
            }
            *slot = Some(point);
            count += 1;
        }
        if count != n {
            return Err(bad("point count differs from id count"));
        }
        let points: Vec<&GraphPoint> = slots.into_iter().flatten().collect();
        let mut by_fingerprint: Vec<(u64, u32)> = points
            .iter()
            .enumerate()
            .map(|(i, p)| (p.fingerprint, i as u32))
            .collect();
        let vectors: Vec<Arc<[f32]>> = points.iter().map(|p| p.v.clone()).collect();
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
/// Eight independent `u32` multiply-xor lanes (component `i` into lane `i mod 8`), which
/// the compiler vectorises, folded into 64 bits at the end.
pub(crate) fn fingerprint(v: &[f32]) -> u64 {
    const K32: u32 = 0x9E37_79B1;
    const K64: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes = [0x2545_F491u32; 8];
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        if let Ok(c) = <&[f32; 8]>::try_from(c) {
            for l in 0..8 {
                lanes[l] = (lanes[l] ^ c[l].to_bits()).wrapping_mul(K32) ^ (lanes[l] >> 15);
            }
        }
    }
    for (h, x) in lanes.iter_mut().zip(chunks.remainder()) {
        *h = (*h ^ x.to_bits()).wrapping_mul(K32) ^ (*h >> 15);
    }
    let h = lanes.iter().fold(v.len() as u64, |acc, &l| {
        (acc.rotate_left(23) ^ u64::from(l)).wrapping_mul(K64)
    });
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
        let start = buf.len();
        buf.resize(start + v.len() * 4, 0);
        for (out, x) in buf[start..].chunks_exact_mut(4).zip(v) {
            out.copy_from_slice(&x.to_le_bytes());
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

/// What [`StoredBaseRef`] wrote, read back borrowing its strings from the input (a `Hash`
/// and a `NodeId` serialize as strings).
#[derive(Deserialize)]
struct StoredBase<'a> {
    format: u32,
    key: &'a str,
    model: &'a str,
    dim: u64,
    params: HnswParams,
    #[serde(borrow)]
    ids: Vec<&'a str>,
    graph: HnswMap<GraphPoint, u32>,
}

/// Reads a value written by [`encode_derived_serde`] behind [`TAG_HNSW_BASE`], in the same
/// configuration, *borrowing* from the input: byte strings and strings are checked against
/// the bytes that remain and never copied or pre-allocated by a claimed length (sequences
/// pre-allocate cautiously), so garbage cannot make the decoder allocate without bound.
fn decode_borrowed<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, IndexError> {
    let bad = |what: String| IndexError::BadStoredIndex(format!("HNSW base: {what}"));
    match bytes.first() {
        Some(&TAG_HNSW_BASE) => {}
        Some(&t) => return Err(bad(format!("tag 0x{t:02x}, expected 0x{TAG_HNSW_BASE:02x}"))),
        None => return Err(bad("empty input".into())),
    }
    let cfg = bincode::config::standard()
        .with_little_endian()
        .with_fixed_int_encoding();
    let (value, used) =
        bincode::serde::borrow_decode_from_slice::<T, _>(&bytes[1..], cfg).map_err(|e| bad(e.to_string()))?;
    if used != bytes.len() - 1 {
        return Err(bad("trailing bytes".into()));
    }
    Ok(value)
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

/// The graph as instant-distance's serde derive lays it out (`HnswMap { hnsw: Hnsw {
/// ef_search, points, zero, layers }, values }`: bincode writes nested structs as the
/// concatenation of their fields, so one flat struct reads it; `PointId` is a transparent
/// `u32`), read only to
/// check its links: instant-distance indexes with them unchecked, so a link out of range
/// would panic in a later search.
#[derive(Deserialize)]
struct GraphLayout {
    ef_search: u64,
    points: Vec<SkipBytes>,
    zero: Vec<ZeroLinks>,
    layers: Vec<Vec<[u32; 32]>>,
    values: Vec<u32>,
}

#[derive(Deserialize)]
#[allow(dead_code)] // read for their layout only
struct StoredLayout<'a> {
    format: u32,
    key: &'a str,
    model: &'a str,
    dim: u64,
    params: HnswParams,
    #[serde(borrow)]
    ids: Vec<&'a str>,
    graph: GraphLayout,
}

/// A byte string read and dropped.
struct SkipBytes;

impl<'de> Deserialize<'de> for SkipBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SkipBytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: serde::de::Error>(self, _: &[u8]) -> Result<SkipBytes, E> {
                Ok(SkipBytes)
            }
            fn visit_byte_buf<E: serde::de::Error>(self, _: Vec<u8>) -> Result<SkipBytes, E> {
                Ok(SkipBytes)
            }
        }
        d.deserialize_bytes(V)
    }
}

/// A layer-zero node: 64 links (`u32::MAX` = none), a fixed-size tuple.
struct ZeroLinks([u32; 64]);

impl<'de> Deserialize<'de> for ZeroLinks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ZeroLinks;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("64 links")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<ZeroLinks, A::Error> {
                let mut links = [0u32; 64];
                for (i, l) in links.iter_mut().enumerate() {
                    *l = seq
                        .next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(i, &self))?;
                }
                Ok(ZeroLinks(links))
            }
        }
        d.deserialize_tuple(64, V)
    }
}

/// Checks the links of a stored graph of `n` points: every link of layer zero is below `n`,
/// every link of an upper layer is below that layer's size, layers shrink going up, and the
/// stored `ef_search` is the params'. (Links end at the first `u32::MAX`.)
fn check_graph_layout(bytes: &[u8], n: usize, ef_search: usize) -> Result<(), IndexError> {
    let bad = |what: &str| IndexError::BadStoredIndex(format!("HNSW base graph: {what}"));
    let stored: StoredLayout<'_> = decode_borrowed(bytes)?;
    let g = stored.graph;
    if g.ef_search != ef_search as u64 {
        return Err(bad("ef_search differs from the parameters"));
    }
    if g.points.len() != n || g.zero.len() != n || g.values.len() != n {
        return Err(bad("table sizes differ from the point count"));
    }
    let links_ok = |links: &[u32], bound: usize| {
        links
            .iter()
            .take_while(|&&l| l != u32::MAX)
            .all(|&l| (l as usize) < bound)
    };
    if !g.zero.iter().all(|z| links_ok(&z.0, n)) {
        return Err(bad("layer-zero link out of range"));
    }
    let mut below = n;
    for layer in &g.layers {
        if layer.is_empty() || layer.len() > below || !layer.iter().all(|u| links_ok(u, layer.len())) {
            return Err(bad("upper layer out of shape or link out of range"));
        }
        below = layer.len();
    }
    Ok(())
}

/// Decodes a base written by [`encode_hnsw`], re-checking its key against its ids and
/// vectors, the graph's point table against its ids, and every link of the graph against
/// the point count, so that searching a decoded base cannot index out of range.
pub fn decode_hnsw(bytes: &[u8]) -> Result<HnswBase, IndexError> {
    let stored: StoredBase<'_> = decode_borrowed(bytes)?;
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
    let bad = |what: &str| IndexError::BadStoredIndex(format!("HNSW base: {what}"));
    let key = Hash::from_hex(stored.key).map_err(|_| bad("bad key"))?;
    let ids = stored
        .ids
        .iter()
        .map(|s| NodeId::new(*s))
        .collect::<Result<Vec<NodeId>, _>>()
        .map_err(|_| bad("bad node id"))?;
    if ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad("ids not strictly increasing"));
    }
    let base = HnswBase::assemble(key, stored.model.to_string(), dim, stored.params, ids, stored.graph)?;
    // (Non-finite components were refused while reading the points.)
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
    check_graph_layout(bytes, base.len(), base.params.ef_search)?;
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
        // A graph link out of range (20 points: one layer; the bytes end with layer zero's
        // 20 × 64 links, an empty upper-layer list and the 20 values).
        let last_node = bytes.len() - (8 + 4 * 20) - 8 - 64 * 4;
        let mut bad = bytes.clone();
        bad[last_node..last_node + 4].copy_from_slice(&25u32.to_le_bytes());
        let err = decode_hnsw(&bad).unwrap_err();
        assert!(err.to_string().contains("link out of range"), "{err}");
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
