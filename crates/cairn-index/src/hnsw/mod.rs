//! Deterministic HNSW graph ("unit graph") over one block of `n` points: the graph of one
//! dense model over one unit's vectors ([`crate::unit`]).
//!
//! Points are identified by `u32` row numbers `0..n`. The module never sees vectors: the caller
//! supplies a distance function `dist(a, b)` at build time and `dist_q(row)` at search time.
//! Smaller is closer; distances may be negative (e.g. `-dot`).
//!
//! # Determinism
//!
//! The graph is a pure function of `(n, the values returned by dist, GraphParams)`:
//! building twice, on any machine, in any thread, gives identical [`UnitGraph::encode`] bytes.
//!
//! * **Levels** come from a self-contained SplitMix64 generator seeded with `params.seed`
//!   (`state += 0x9E3779B97F4A7C15`, then the standard xor-shift/multiply mix), drawn in row order.
//!   No transcendental functions are used (f64 `ln` may differ between libms). Instead, a node's
//!   level is the number of consecutive successes of a 1-in-`m` trial:
//!   `level = 0; while level < 16 { r = next_u64(); if r % m == 0 { level += 1 } else { break } }`.
//!   This gives `P(level >= k) = m^-k`, the same distribution as the classic
//!   `floor(-ln(u) / ln(m))`. Rows' draws are consumed sequentially, so row `i`'s level depends
//!   on the draws of rows `0..i`.
//! * **Ordering**: every comparison of candidates orders by `(distance via f32::total_cmp, row id)`.
//!   No hash-map iteration order is involved anywhere (the visited set is a generation-stamped
//!   array during build and a bitset during search).
//! * **Build** inserts rows `0..n` in increasing order, single-threaded (parallelise across graphs).
//!
//! # Construction
//!
//! Standard HNSW (Malkov & Yashunin) with these choices:
//!
//! * Layer caps: `m` neighbours on layers >= 1, `2m` on layer 0. A new node selects up to `m`
//!   neighbours on every layer (as hnswlib does); layer-0 lists grow towards `2m` through reverse
//!   links.
//! * Neighbour selection is the HNSW heuristic: candidates are scanned in `(distance, id)` order and
//!   a candidate `c` is kept only if `dist(base, c) < dist(c, k)` (strictly, under `total_cmp`) for
//!   every already-kept `k`; then the remaining slots are filled with the closest pruned candidates
//!   ("keepPrunedConnections"). Measured on 20,000 x 64-d sets (test `variants_recall`, m = 16,
//!   ef_construction = 100), the fill gives +0.1 to +1.0 point recall@10 at ef 32/64/128 and
//!   reaches a given recall with ~3-10% fewer search distance calls, for ~1.0-1.2x the build
//!   distance calls; without it a block full of duplicate vectors keeps one link per node. Kept.
//!   (Selecting `2m` instead of `m` on layer 0 for new nodes: ~same recall per search distance
//!   call, 1.5-2.2x build cost. Not kept.)
//! * When a reverse link overflows a neighbour list, the list plus the new node is re-selected with
//!   the same rule. With the fill, re-selecting `cap + 1` candidates always drops exactly one (the
//!   farthest pruned one, else the farthest); kept/pruned flags are cached per list and updated
//!   incrementally, which gives the same result as re-running the heuristic with ~3-5x fewer
//!   distance calls (test `incremental_reselect_is_exact`).
//! * The entry points of layer `l` are all `ef_construction` results of layer `l + 1`; the
//!   effective `ef_construction` is `max(params.ef_construction, params.m)`.
//! * **Reachability repair.** HNSW can leave nodes with no in-links (always with many duplicate
//!   points, occasionally otherwise). After all insertions, for each layer, nodes not reachable
//!   from the entry point are visited in row order. For such a node `u`, a search over the
//!   reachable part of the layer finds `u`'s nearest reachable nodes; `u` is appended to the list
//!   of the closest one that has room. If all of them are full, the closest one, `v`, has its
//!   farthest neighbour `w` replaced by `u`, and `u -> w` is added to `u`'s list (replacing `u`'s
//!   farthest neighbour if `u` is full). No previously reachable node becomes unreachable
//!   (`v -> w` becomes `v -> u -> w`; `u`'s old out-links were on no path from the entry point),
//!   so after the pass every node of every layer is reachable from the entry point.
//! * Stored lists are finally sorted by row id (canonical; lets `decode` reject duplicates by
//!   requiring strictly increasing ids).
//!
//! # Search
//!
//! Greedy descent (ef = 1) on layers `top..1` ignoring the filter, then best-first search on
//! layer 0 seeded with the descent's end point and the entry point (the latter guarantees the
//! whole graph is reachable from the frontier). Filtered search: rejected rows are traversed
//! (they enter the candidate frontier when closer than the current worst result, or while the
//! result list is not full) but never enter the result list. Results are the up-to-`ef` best
//! accepted rows found, by `(distance, id)`. If the result list never fills, the whole graph is
//! traversed, so `search` returns `min(ef, number of accepted rows)` rows; the flip side is that
//! a filter accepting very few rows costs up to `n` distance calls (a caller may prefer a
//! brute-force scan of the accepted rows then).
//!
//! # Encoding (`CUG1`), all integers fixed-width little endian
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `b"CUG1"` (the `1` is the format version) |
//! | 4 | 4 | `n`: u32, number of nodes |
//! | 8 | 4 | `m`: u32, `2 <= m <= 32767` |
//! | 12 | 4 | `ef_construction`: u32 (as given in the params) |
//! | 16 | 8 | `seed`: u64 |
//! | 24 | 4 | entry point: u32 (`u32::MAX` iff `n == 0`) |
//! | 28 | 1 | top level: u8 (0 if `n == 0`, else the maximum node level, `<= 16`) |
//! | 29 | n | one u8 level per node, in row order (`<= 16`) |
//!
//! Then for each layer `l = 0, 1, ..., top`, for each node whose level is `>= l`, in row order:
//! u16 neighbour count (`<= 2m` on layer 0, `<= m` above), then that many u32 neighbour ids, in
//! strictly increasing order, each `< n`, `!=` the node itself, and of a node whose level is `>= l`.
//! Nothing follows the last list. The entry point is the lowest row whose level equals the top
//! level. An empty graph is exactly the 29-byte header.
//!
//! `decode` accepts exactly this language (a node level above 16 is refused: the encoder never
//! writes one). It does *not* re-derive levels from the seed, nor re-run the build.

pub mod reach;

use crate::error::IndexError;
use crate::persist::{bad, Reader};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

pub use reach::Reach;

/// Magic and format version.
pub const MAGIC: [u8; 4] = *b"CUG1";
/// Highest node level the build assigns and `decode` accepts.
pub const MAX_LEVEL: u8 = 16;
/// Largest accepted `m` (so that `2m` fits the u16 count).
pub const MAX_M: usize = (u16::MAX / 2) as usize;
const HEADER_LEN: usize = 29;

/// Build and search parameters. Part of the caller's cache key, so every field matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphParams {
    /// Max neighbours per node on upper layers (default 16); layer 0 keeps `2 * m`.
    /// Must be in `2..=32767`.
    pub m: usize,
    /// Candidate list size during construction (default 100). Must fit in a u32.
    pub ef_construction: usize,
    /// Level assignment seed (caller derives it from content).
    pub seed: u64,
}

impl Default for GraphParams {
    fn default() -> Self {
        GraphParams {
            m: 16,
            ef_construction: 100,
            seed: 0,
        }
    }
}

/// A frozen HNSW graph over rows `0..n`.
#[derive(Clone, PartialEq, Eq)]
pub struct UnitGraph {
    n: u32,
    params: GraphParams,
    /// `u32::MAX` when empty.
    entry: u32,
    top: u8,
    levels: Vec<u8>,
    /// `top + 1` layers (one empty layer when `n == 0`).
    layers: Vec<Layer>,
    /// How far a walk must look ([`reach`]); not part of the `CUG1` bytes.
    reach: Reach,
}

/// Compressed neighbour lists of one layer.
#[derive(Clone, PartialEq, Eq)]
struct Layer {
    /// Rows of this layer, increasing. Empty for layer 0, where slot == row.
    members: Vec<u32>,
    /// `offsets[s]..offsets[s + 1]` indexes `ids` for slot `s`; `len = slots + 1`.
    offsets: Vec<usize>,
    /// Neighbour ids, each list sorted by id.
    ids: Vec<u32>,
}

impl Layer {
    #[inline]
    fn slot(&self, layer: usize, row: u32) -> Option<usize> {
        if layer == 0 {
            Some(row as usize)
        } else {
            self.members.binary_search(&row).ok()
        }
    }
    #[inline]
    fn list(&self, slot: usize) -> &[u32] {
        &self.ids[self.offsets[slot]..self.offsets[slot + 1]]
    }
}

impl std::fmt::Debug for UnitGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnitGraph")
            .field("n", &self.n)
            .field("params", &self.params)
            .field("entry", &self.entry)
            .field("top", &self.top)
            .field("edges", &self.layers.iter().map(|l| l.ids.len()).collect::<Vec<_>>())
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Ordering, PRNG, small helpers
// ---------------------------------------------------------------------------------------------

/// A candidate: ordered by `(d via total_cmp, id)`.
#[derive(Clone, Copy, Debug)]
struct Cand {
    d: f32,
    id: u32,
}

impl Ord for Cand {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        self.d.total_cmp(&o.d).then(self.id.cmp(&o.id))
    }
}
impl PartialOrd for Cand {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl PartialEq for Cand {
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Cand {}

/// SplitMix64 (Steele, Lea, Flood).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Levels of rows `0..n`: for each row in order, count consecutive draws with `r % m == 0`
/// (capped at [`MAX_LEVEL`]).
#[allow(unknown_lints, clippy::manual_is_multiple_of)] // `% m == 0` mirrors the documented rule
fn assign_levels(n: u32, m: usize, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64(seed);
    let m = m as u64;
    (0..n)
        .map(|_| {
            let mut level = 0u8;
            while level < MAX_LEVEL && rng.next_u64() % m == 0 {
                level += 1;
            }
            level
        })
        .collect()
}

/// Generation-stamped visited set (build side).
struct Visited {
    stamp: Vec<u32>,
    gen: u32,
}

impl Visited {
    fn new(n: usize) -> Self {
        Visited {
            stamp: vec![0; n],
            gen: 0,
        }
    }
    fn reset(&mut self) {
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.stamp.fill(0);
            self.gen = 1;
        }
    }
    /// Returns true if `id` was not yet visited.
    #[inline]
    fn insert(&mut self, id: u32) -> bool {
        let s = &mut self.stamp[id as usize];
        if *s == self.gen {
            false
        } else {
            *s = self.gen;
            true
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------------------------

/// Construction-time knobs, fixed in production; the tests compare variants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BuildOptions {
    /// Fill remaining slots with the closest pruned candidates.
    pub keep_pruned: bool,
    /// A new node selects `2m` (instead of `m`) neighbours on layer 0.
    pub select_2m_layer0: bool,
    /// Run the reachability repair pass.
    pub repair: bool,
    /// With `keep_pruned`: re-select overflowing lists incrementally from cached kept/pruned
    /// flags (same result as from scratch, fewer `dist` calls).
    pub incremental: bool,
}

pub(crate) const DEFAULT_OPTIONS: BuildOptions = BuildOptions {
    keep_pruned: true,
    select_2m_layer0: false,
    repair: true,
    incremental: true,
};

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BuildStats {
    /// Nodes (summed over layers) that the repair pass had to connect.
    pub repaired: usize,
    /// Of those, how many needed the swap (no reachable neighbour had room).
    pub swapped: usize,
    /// Number of `dist` calls.
    pub dist_calls: u64,
    /// Of those, made by neighbour selection for new nodes / re-selection after overflow.
    pub select_calls: u64,
    pub reselect_calls: u64,
}

/// Fixed-capacity neighbour lists of one layer during build. Each list is kept sorted by
/// `(distance to the list's node, id)`.
struct BLayer {
    cap: usize,
    /// Rows of this layer, increasing; unused (empty) for layer 0.
    members: Vec<u32>,
    cnt: Vec<u16>,
    nbr: Vec<u32>,
    nd: Vec<f32>,
    /// Per entry: kept (true) or pruned by the selection heuristic run over the list itself.
    /// Meaningful only where `valid[slot]`.
    kept: Vec<bool>,
    valid: Vec<bool>,
}

impl BLayer {
    fn new(cap: usize, members: Vec<u32>, slots: usize) -> Self {
        BLayer {
            cap,
            members,
            cnt: vec![0; slots],
            nbr: vec![0; slots * cap],
            nd: vec![0.0; slots * cap],
            kept: vec![false; slots * cap],
            valid: vec![false; slots],
        }
    }
    #[inline]
    fn slot(&self, row: u32) -> usize {
        if self.members.is_empty() {
            row as usize
        } else {
            // Every id stored in this layer is a member, by construction.
            self.members
                .binary_search(&row)
                .unwrap_or_else(|_| unreachable!("row not in layer"))
        }
    }
    #[inline]
    fn row(&self, slot: usize) -> u32 {
        if self.members.is_empty() {
            slot as u32
        } else {
            self.members[slot]
        }
    }
    #[inline]
    fn len(&self, slot: usize) -> usize {
        self.cnt[slot] as usize
    }
    #[inline]
    fn ids(&self, slot: usize) -> &[u32] {
        let b = slot * self.cap;
        &self.nbr[b..b + self.len(slot)]
    }
    fn cands(&self, slot: usize) -> impl Iterator<Item = Cand> + '_ {
        let b = slot * self.cap;
        let c = self.len(slot);
        self.nbr[b..b + c]
            .iter()
            .zip(&self.nd[b..b + c])
            .map(|(&id, &d)| Cand { d, id })
    }
    fn kept_flags(&self, slot: usize) -> &[bool] {
        let b = slot * self.cap;
        &self.kept[b..b + self.len(slot)]
    }
    /// Replaces the list; `list` must be sorted. Invalidates the kept flags.
    fn set(&mut self, slot: usize, list: &[Cand]) {
        debug_assert!(list.len() <= self.cap && list.windows(2).all(|w| w[0] < w[1]));
        let b = slot * self.cap;
        for (i, c) in list.iter().enumerate() {
            self.nbr[b + i] = c.id;
            self.nd[b + i] = c.d;
        }
        self.cnt[slot] = list.len() as u16;
        self.valid[slot] = false;
    }
    /// Replaces the list with `list` (sorted) and its valid kept flags.
    fn set_with_flags(&mut self, slot: usize, list: &[Cand], flags: &[bool]) {
        self.set(slot, list);
        let b = slot * self.cap;
        self.kept[b..b + flags.len()].copy_from_slice(flags);
        self.valid[slot] = true;
    }
    /// Inserts `c` in sorted position; the list must have room. Invalidates the kept flags.
    fn insert(&mut self, slot: usize, c: Cand) {
        let b = slot * self.cap;
        let len = self.len(slot);
        debug_assert!(len < self.cap);
        let mut i = len;
        while i > 0
            && c < (Cand {
                d: self.nd[b + i - 1],
                id: self.nbr[b + i - 1],
            })
        {
            self.nbr[b + i] = self.nbr[b + i - 1];
            self.nd[b + i] = self.nd[b + i - 1];
            i -= 1;
        }
        self.nbr[b + i] = c.id;
        self.nd[b + i] = c.d;
        self.cnt[slot] += 1;
        self.valid[slot] = false;
    }
    /// Removes the farthest entry (the last); the list must be non-empty.
    fn pop_farthest(&mut self, slot: usize) -> Cand {
        let len = self.len(slot);
        debug_assert!(len > 0);
        let j = slot * self.cap + len - 1;
        self.cnt[slot] -= 1;
        self.valid[slot] = false;
        Cand {
            d: self.nd[j],
            id: self.nbr[j],
        }
    }
}

/// Scratch heaps reused across searches.
#[derive(Default)]
struct Heaps {
    frontier: BinaryHeap<Reverse<Cand>>,
    results: BinaryHeap<Cand>,
}

/// Best-first search of one build layer; returns up to `ef` results sorted ascending.
fn search_layer(
    layer: &BLayer,
    visited: &mut Visited,
    heaps: &mut Heaps,
    distq: &impl Fn(u32) -> f32,
    seeds: &[Cand],
    ef: usize,
) -> Vec<Cand> {
    visited.reset();
    let Heaps { frontier, results } = heaps;
    frontier.clear();
    results.clear();
    for &s in seeds {
        if visited.insert(s.id) {
            frontier.push(Reverse(s));
            results.push(s);
            if results.len() > ef {
                results.pop();
            }
        }
    }
    while let Some(Reverse(c)) = frontier.pop() {
        if results.len() >= ef {
            if let Some(worst) = results.peek() {
                if c > *worst {
                    break;
                }
            }
        }
        for &nb in layer.ids(layer.slot(c.id)) {
            if !visited.insert(nb) {
                continue;
            }
            let e = Cand { d: distq(nb), id: nb };
            let admit = match results.peek() {
                Some(worst) => results.len() < ef || e < *worst,
                None => true,
            };
            if admit {
                frontier.push(Reverse(e));
                results.push(e);
                if results.len() > ef {
                    results.pop();
                }
            }
        }
    }
    let mut out: Vec<Cand> = results.drain().collect();
    out.sort_unstable();
    out
}

/// Greedy (ef = 1) descent on one build layer.
fn greedy(layer: &BLayer, distq: &impl Fn(u32) -> f32, mut cur: Cand) -> Cand {
    loop {
        let mut best = cur;
        for &nb in layer.ids(layer.slot(cur.id)) {
            let e = Cand { d: distq(nb), id: nb };
            if e < best {
                best = e;
            }
        }
        if best.id == cur.id {
            return cur;
        }
        cur = best;
    }
}

/// HNSW neighbour-selection heuristic. `cands` must be sorted ascending by `(d, id)` where `d`
/// is the distance to the base node.
fn select(cands: &[Cand], maxm: usize, keep_pruned: bool, dist: &impl Fn(u32, u32) -> f32) -> Vec<Cand> {
    if cands.len() <= maxm {
        return cands.to_vec();
    }
    let mut kept: Vec<Cand> = Vec::with_capacity(maxm);
    let mut pruned: Vec<Cand> = Vec::new();
    for &c in cands {
        if kept.len() >= maxm {
            break;
        }
        let good = kept.iter().all(|k| c.d.total_cmp(&dist(c.id, k.id)) == Ordering::Less);
        if good {
            kept.push(c);
        } else if keep_pruned {
            pruned.push(c);
        }
    }
    if keep_pruned {
        for p in pruned {
            if kept.len() >= maxm {
                break;
            }
            kept.push(p);
        }
    }
    kept
}

/// Re-selection of a full list (`cap` entries, sorted) plus a new candidate `q`, with
/// keepPrunedConnections. With `cap + 1` candidates the heuristic-plus-fill keeps all but one:
/// the farthest pruned candidate, or the farthest candidate if none is pruned. A candidate's
/// kept/pruned status depends only on the kept candidates before it, so dropping a pruned (or
/// the last) candidate leaves the other statuses unchanged: they are cached per list and
/// updated incrementally when `q` is inserted. The result (and the order of the arguments of
/// every `dist` call made) is identical to `select` run from scratch; only fewer calls are made.
fn reselect_keep_pruned(
    layer: &mut BLayer,
    slot: usize,
    q: Cand,
    dist: &impl Fn(u32, u32) -> f32,
    cs: &mut Vec<Cand>,
    st: &mut Vec<bool>,
) {
    // `c` is kept relative to kept `k` iff it is strictly closer to the base than to `k`.
    let closer = |c: &Cand, k: &Cand| c.d.total_cmp(&dist(c.id, k.id)) == Ordering::Less;
    cs.clear();
    st.clear();
    cs.extend(layer.cands(slot));
    let p = cs.partition_point(|c| *c < q);
    // Index of the last candidate once `q` is inserted. Its status matters only if an earlier
    // candidate is pruned: otherwise it is dropped either way (this mirrors `select`, which stops
    // scanning once `cap` candidates are kept), so its check is skipped.
    let last = cs.len();
    let skip_last = |st: &[bool]| st[..last].iter().all(|&k| k);
    if layer.valid[slot] {
        st.extend_from_slice(layer.kept_flags(slot));
        let q_kept = if p == last && skip_last(st) {
            false
        } else {
            (0..p).all(|j| !st[j] || closer(&q, &cs[j]))
        };
        cs.insert(p, q);
        st.insert(p, q_kept);
        if q_kept {
            // Until some old status flips, the kept set before each later candidate is its
            // old one plus `q`: old pruned stay pruned, old kept need only be checked vs `q`.
            let mut changed = false;
            for i in p + 1..cs.len() {
                if i == last && skip_last(st) {
                    st[i] = false;
                } else if !changed {
                    if st[i] && !closer(&cs[i], &q) {
                        st[i] = false;
                        changed = true;
                    }
                } else {
                    let c = cs[i];
                    let k = (0..i).all(|j| !st[j] || closer(&c, &cs[j]));
                    st[i] = k;
                }
            }
        }
    } else {
        cs.insert(p, q);
        for i in 0..cs.len() {
            let k = if i == last && skip_last(st) {
                false
            } else {
                let c = cs[i];
                (0..i).all(|j| !st[j] || closer(&c, &cs[j]))
            };
            st.push(k);
        }
    }
    let drop = (0..cs.len()).rev().find(|&i| !st[i]).unwrap_or(cs.len() - 1);
    cs.remove(drop);
    st.remove(drop);
    layer.set_with_flags(slot, cs, st);
}

struct Builder<D: Fn(u32, u32) -> f32> {
    n: u32,
    m: usize,
    efc: usize,
    opts: BuildOptions,
    dist: D,
    levels: Vec<u8>,
    layers: Vec<BLayer>,
    visited: Visited,
    heaps: Heaps,
    scratch_c: Vec<Cand>,
    scratch_s: Vec<bool>,
    entry: u32,
    top: u8,
    stats: BuildStats,
}

impl<D: Fn(u32, u32) -> f32> Builder<D> {
    fn new(n: u32, params: &GraphParams, opts: BuildOptions, dist: D) -> Self {
        let m = params.m;
        let levels = assign_levels(n, m, params.seed);
        let max_level = levels.iter().copied().max().unwrap_or(0);
        let mut layers = Vec::with_capacity(max_level as usize + 1);
        for l in 0..=max_level {
            let cap = if l == 0 { 2 * m } else { m };
            let members: Vec<u32> = if l == 0 {
                Vec::new()
            } else {
                (0..n).filter(|&r| levels[r as usize] >= l).collect()
            };
            let slots = if l == 0 { n as usize } else { members.len() };
            layers.push(BLayer::new(cap, members, slots));
        }
        Builder {
            n,
            m,
            efc: params.ef_construction.max(m),
            opts,
            dist,
            levels,
            layers,
            visited: Visited::new(n as usize),
            heaps: Heaps::default(),
            scratch_c: Vec::new(),
            scratch_s: Vec::new(),
            entry: u32::MAX,
            top: 0,
            stats: BuildStats::default(),
        }
    }

    fn insert(&mut self, q: u32) {
        let lq = self.levels[q as usize];
        if q == 0 {
            self.entry = 0;
            self.top = lq;
            return;
        }
        let dist = &self.dist;
        let calls = std::cell::Cell::new(0u64);
        let dq = |x: u32| {
            calls.set(calls.get() + 1);
            dist(q, x)
        };
        let dpair = |a: u32, b: u32| {
            calls.set(calls.get() + 1);
            dist(a, b)
        };
        let mut ep = Cand {
            d: dq(self.entry),
            id: self.entry,
        };
        let mut l = self.top;
        while l > lq {
            ep = greedy(&self.layers[l as usize], &dq, ep);
            l -= 1;
        }
        let mut seeds = vec![ep];
        let mut l = lq.min(self.top) as i32;
        while l >= 0 {
            let li = l as usize;
            let w = search_layer(
                &self.layers[li],
                &mut self.visited,
                &mut self.heaps,
                &dq,
                &seeds,
                self.efc,
            );
            let maxm = if li == 0 && self.opts.select_2m_layer0 {
                2 * self.m
            } else {
                self.m
            };
            let before = calls.get();
            let mut sel = select(&w, maxm, self.opts.keep_pruned, &dpair);
            self.stats.select_calls += calls.get() - before;
            sel.sort_unstable();
            let layer = &mut self.layers[li];
            let qs = layer.slot(q);
            layer.set(qs, &sel);
            let before = calls.get();
            for c in &sel {
                let es = layer.slot(c.id);
                let back = Cand { d: c.d, id: q };
                if layer.len(es) < layer.cap {
                    layer.insert(es, back);
                } else if self.opts.keep_pruned && self.opts.incremental {
                    reselect_keep_pruned(layer, es, back, &dpair, &mut self.scratch_c, &mut self.scratch_s);
                } else {
                    let mut cs: Vec<Cand> = layer.cands(es).collect();
                    cs.push(back);
                    cs.sort_unstable();
                    let mut resel = select(&cs, layer.cap, self.opts.keep_pruned, &dpair);
                    resel.sort_unstable();
                    layer.set(es, &resel);
                }
            }
            self.stats.reselect_calls += calls.get() - before;
            seeds = w;
            l -= 1;
        }
        if lq > self.top {
            self.entry = q;
            self.top = lq;
        }
        self.stats.dist_calls += calls.get();
    }

    /// Makes every node of every layer reachable from the entry point (see module docs).
    fn repair(&mut self) {
        if self.n == 0 {
            return;
        }
        let entry = self.entry;
        for li in 0..=self.top as usize {
            let slots = self.layers[li].cnt.len();
            let mut reach = vec![false; slots];
            let mut stack = Vec::new();
            let es = self.layers[li].slot(entry);
            reach[es] = true;
            stack.push(es);
            Self::flood(&self.layers[li], &mut reach, &mut stack);
            for s in 0..slots {
                if reach[s] {
                    continue;
                }
                let u = self.layers[li].row(s);
                let dist = &self.dist;
                let calls = std::cell::Cell::new(0u64);
                let du = |x: u32| {
                    calls.set(calls.get() + 1);
                    dist(u, x)
                };
                let seed = Cand {
                    d: du(entry),
                    id: entry,
                };
                let r = search_layer(
                    &self.layers[li],
                    &mut self.visited,
                    &mut self.heaps,
                    &du,
                    &[seed],
                    self.efc,
                );
                let layer = &mut self.layers[li];
                let room = r.iter().find(|c| layer.len(layer.slot(c.id)) < layer.cap);
                if let Some(v) = room {
                    let vs = layer.slot(v.id);
                    layer.insert(vs, Cand { d: v.d, id: u });
                } else {
                    // r is non-empty: it contains at least the entry point.
                    let v = r[0];
                    let vs = layer.slot(v.id);
                    let w = layer.pop_farthest(vs);
                    layer.insert(vs, Cand { d: v.d, id: u });
                    if !layer.ids(s).contains(&w.id) {
                        let uw = Cand { d: du(w.id), id: w.id };
                        if layer.len(s) >= layer.cap {
                            layer.pop_farthest(s);
                        }
                        layer.insert(s, uw);
                    }
                    self.stats.swapped += 1;
                }
                self.stats.repaired += 1;
                self.stats.dist_calls += calls.get();
                reach[s] = true;
                stack.push(s);
                Self::flood(&self.layers[li], &mut reach, &mut stack);
            }
        }
    }

    fn flood(layer: &BLayer, reach: &mut [bool], stack: &mut Vec<usize>) {
        while let Some(s) = stack.pop() {
            for &nb in layer.ids(s) {
                let ns = layer.slot(nb);
                if !reach[ns] {
                    reach[ns] = true;
                    stack.push(ns);
                }
            }
        }
    }

    fn freeze(self, params: &GraphParams) -> UnitGraph {
        let mut layers = Vec::with_capacity(self.layers.len());
        for bl in &self.layers {
            let slots = bl.cnt.len();
            let total: usize = bl.cnt.iter().map(|&c| c as usize).sum();
            let mut offsets = Vec::with_capacity(slots + 1);
            let mut ids = Vec::with_capacity(total);
            offsets.push(0);
            for s in 0..slots {
                let start = ids.len();
                ids.extend_from_slice(bl.ids(s));
                ids[start..].sort_unstable();
                offsets.push(ids.len());
            }
            layers.push(Layer {
                members: bl.members.clone(),
                offsets,
                ids,
            });
        }
        if self.n == 0 {
            layers.truncate(1);
        }
        UnitGraph {
            n: self.n,
            params: *params,
            entry: self.entry,
            top: self.top,
            levels: self.levels,
            layers,
            reach: Reach::Unmeasured,
        }
    }
}

pub(crate) fn build_with_options(
    n: u32,
    params: &GraphParams,
    opts: BuildOptions,
    dist: impl Fn(u32, u32) -> f32,
) -> (UnitGraph, BuildStats) {
    assert!(
        (2..=MAX_M).contains(&params.m),
        "GraphParams::m must be in 2..={MAX_M}, got {}",
        params.m
    );
    assert!(
        u32::try_from(params.ef_construction).is_ok(),
        "GraphParams::ef_construction must fit in a u32"
    );
    let mut b = Builder::new(n, params, opts, dist);
    for q in 0..n {
        b.insert(q);
    }
    if opts.repair {
        b.repair();
    }
    let stats = b.stats;
    (b.freeze(params), stats)
}

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

impl UnitGraph {
    /// Inserts rows `0..n` in increasing order. `dist(a, b)` must be symmetric and finite; it may
    /// be negative (e.g. `-dot`); smaller = closer. The result depends only on `n`, the values
    /// `dist` returns and `params`.
    ///
    /// # Panics
    /// If `params.m` is not in `2..=32767` or `params.ef_construction` does not fit in a u32.
    pub fn build(n: u32, params: &GraphParams, dist: impl Fn(u32, u32) -> f32) -> UnitGraph {
        build_with_options(n, params, DEFAULT_OPTIONS, dist).0
    }

    /// Best-first search from the entry point; `dist_q(row)` is the distance from the query to
    /// a row. Returns up to `ef` rows (the `ef` closest found on layer 0, ordered by
    /// `(distance, row)` ascending) among those with `accept(row) == true`. Rejected rows are
    /// still traversed but never returned and never count toward the result list.
    pub fn search(&self, ef: usize, dist_q: impl Fn(u32) -> f32, accept: impl Fn(u32) -> bool) -> Vec<u32> {
        self.search_hiding(ef, dist_q, accept, u32::MAX, |_| {})
    }

    /// [`UnitGraph::search`], calling `prefetch(row)` for each unvisited neighbour of a
    /// row before measuring their distances, so that their data (read by `dist_q`) is on
    /// its way from memory while the first is scored. A hint: the result is the same.
    pub fn search_prefetching(
        &self,
        ef: usize,
        dist_q: impl Fn(u32) -> f32,
        accept: impl Fn(u32) -> bool,
        prefetch: impl Fn(u32),
    ) -> Vec<u32> {
        self.search_hiding(ef, dist_q, accept, u32::MAX, prefetch)
    }

    /// [`UnitGraph::search`] as if row `hidden` were not in the graph: it is never stepped
    /// on (unless it is the entry point) nor returned, so its neighbour list — its own
    /// nearest rows — cannot lead the walk. The reach measurement ([`reach`]) queries with
    /// rows of the graph this way, which makes them as hard as a query from outside.
    pub(crate) fn search_hiding(
        &self,
        ef: usize,
        dist_q: impl Fn(u32) -> f32,
        accept: impl Fn(u32) -> bool,
        hidden: u32,
        prefetch: impl Fn(u32),
    ) -> Vec<u32> {
        let accept = |r: u32| r != hidden && accept(r);
        if self.n == 0 || ef == 0 {
            return Vec::new();
        }
        // Greedy descent on the upper layers (filter ignored).
        let mut cur = Cand {
            d: dist_q(self.entry),
            id: self.entry,
        };
        for li in (1..=self.top as usize).rev() {
            let layer = &self.layers[li];
            loop {
                let mut best = cur;
                // Validated by build/decode: every stored id is a member of its layer.
                let Some(s) = layer.slot(li, cur.id) else {
                    break;
                };
                for &nb in layer.list(s) {
                    if nb == hidden {
                        continue;
                    }
                    let e = Cand { d: dist_q(nb), id: nb };
                    if e < best {
                        best = e;
                    }
                }
                if best.id == cur.id {
                    break;
                }
                cur = best;
            }
        }
        // Filtered best-first search on layer 0.
        let layer0 = &self.layers[0];
        let mut visited = vec![0u64; (self.n as usize).div_ceil(64)];
        if hidden < self.n && hidden != cur.id && hidden != self.entry {
            visited[(hidden >> 6) as usize] |= 1u64 << (hidden & 63);
        }
        let seen = |visited: &[u64], id: u32| visited[(id >> 6) as usize] & (1u64 << (id & 63)) != 0;
        let mark = |visited: &mut [u64], id: u32| -> bool {
            let (w, b) = ((id >> 6) as usize, id & 63);
            let fresh = visited[w] & (1u64 << b) == 0;
            visited[w] |= 1u64 << b;
            fresh
        };
        let mut frontier: BinaryHeap<Reverse<Cand>> = BinaryHeap::new();
        let mut results: BinaryHeap<Cand> = BinaryHeap::with_capacity(ef.min(self.n as usize) + 1);
        // Seed with the descent's end point and with the entry point: every node is reachable
        // from the entry point (repair pass), so a result list that never fills means the whole
        // graph was traversed and every accepted row is returned.
        let mut seeds = vec![cur];
        if cur.id != self.entry {
            seeds.push(Cand {
                d: dist_q(self.entry),
                id: self.entry,
            });
        }
        for s in seeds {
            mark(&mut visited, s.id);
            frontier.push(Reverse(s));
            if accept(s.id) {
                results.push(s);
                if results.len() > ef {
                    results.pop();
                }
            }
        }
        while let Some(Reverse(c)) = frontier.pop() {
            if results.len() >= ef {
                if let Some(worst) = results.peek() {
                    if c > *worst {
                        break;
                    }
                }
            }
            let list = layer0.list(c.id as usize);
            for &nb in list {
                if !seen(&visited, nb) {
                    prefetch(nb);
                }
            }
            for &nb in list {
                if !mark(&mut visited, nb) {
                    continue;
                }
                let e = Cand { d: dist_q(nb), id: nb };
                let admit = match results.peek() {
                    Some(worst) => results.len() < ef || e < *worst,
                    None => true,
                };
                if admit {
                    frontier.push(Reverse(e));
                    if accept(nb) {
                        results.push(e);
                        if results.len() > ef {
                            results.pop();
                        }
                    }
                }
            }
        }
        results.into_sorted_vec().into_iter().map(|c| c.id).collect()
    }

    /// How far a walk must look, as measured by [`reach::measure`] (set by the unit build
    /// and by the stored unit graph record; [`Reach::Unmeasured`] otherwise).
    pub fn reach(&self) -> Reach {
        self.reach
    }

    /// Sets [`UnitGraph::reach`].
    pub fn set_reach(&mut self, reach: Reach) {
        self.reach = reach;
    }

    /// Number of nodes.
    pub fn len(&self) -> u32 {
        self.n
    }

    /// True if the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The parameters the graph was built with.
    pub fn params(&self) -> GraphParams {
        self.params
    }

    /// Entry point (`None` when empty).
    pub fn entry_point(&self) -> Option<u32> {
        (self.n > 0).then_some(self.entry)
    }

    /// Level of a node.
    pub fn level(&self, row: u32) -> Option<u8> {
        self.levels.get(row as usize).copied()
    }

    /// Stored neighbour list (sorted by id) of `row` on `layer`, if `row` is on that layer.
    pub fn neighbours(&self, layer: usize, row: u32) -> Option<&[u32]> {
        if row >= self.n {
            return None;
        }
        let l = self.layers.get(layer)?;
        let s = l.slot(layer, row)?;
        Some(l.list(s))
    }

    /// Canonical bytes; see the module docs for the format.
    pub fn encode(&self) -> Vec<u8> {
        let edges: usize = self.layers.iter().map(|l| l.ids.len()).sum();
        let slots: usize = self.layers.iter().map(|l| l.offsets.len() - 1).sum();
        let mut out = Vec::with_capacity(HEADER_LEN + self.levels.len() + 2 * slots + 4 * edges);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.n.to_le_bytes());
        out.extend_from_slice(&(self.params.m as u32).to_le_bytes());
        out.extend_from_slice(&(self.params.ef_construction as u32).to_le_bytes());
        out.extend_from_slice(&self.params.seed.to_le_bytes());
        out.extend_from_slice(&self.entry.to_le_bytes());
        out.push(self.top);
        out.extend_from_slice(&self.levels);
        if self.n > 0 {
            for layer in &self.layers {
                for s in 0..layer.offsets.len() - 1 {
                    let list = layer.list(s);
                    out.extend_from_slice(&(list.len() as u16).to_le_bytes());
                    for &id in list {
                        out.extend_from_slice(&id.to_le_bytes());
                    }
                }
            }
        }
        out
    }

    /// Strict, bounded decode of [`encode`](Self::encode)'s output. Never panics; never
    /// allocates more than the input could describe; refuses anything the encoder would not
    /// write.
    /// Errors are [`IndexError::BadStoredIndex`], their text starting `unit graph: `.
    pub fn decode(bytes: &[u8]) -> Result<UnitGraph, IndexError> {
        Self::decode_strict(bytes).map_err(|e| match e {
            IndexError::BadStoredIndex(d) => IndexError::BadStoredIndex(format!("unit graph: {d}")),
            other => other,
        })
    }

    #[allow(clippy::needless_range_loop)]
    fn decode_strict(bytes: &[u8]) -> Result<UnitGraph, IndexError> {
        let mut r = Reader::new(bytes);
        if bytes.len() < HEADER_LEN {
            return Err(bad(format!(
                "truncated header: {} bytes, need {HEADER_LEN}",
                bytes.len()
            )));
        }
        let magic = r.take(4)?;
        if magic != MAGIC {
            return Err(bad(format!("bad magic/version {magic:?}, expected {MAGIC:?}")));
        }
        let n = r.u32()?;
        let m = r.u32()? as usize;
        let ef_construction = r.u32()? as usize;
        let seed = r.u64()?;
        let entry = r.u32()?;
        let top = r.u8()?;
        if !(2..=MAX_M).contains(&m) {
            return Err(bad(format!("m = {m} out of range 2..={MAX_M}")));
        }
        if top > MAX_LEVEL {
            return Err(bad(format!("top level {top} > {MAX_LEVEL}")));
        }
        let params = GraphParams {
            m,
            ef_construction,
            seed,
        };
        if n == 0 {
            if entry != u32::MAX {
                return Err(bad(format!("empty graph with entry point {entry}")));
            }
            if top != 0 {
                return Err(bad(format!("empty graph with top level {top}")));
            }
            if r.remaining() != 0 {
                return Err(bad(format!("{} trailing bytes", r.remaining())));
            }
            return Ok(UnitGraph {
                n,
                params,
                entry,
                top,
                levels: Vec::new(),
                layers: vec![Layer {
                    members: Vec::new(),
                    offsets: vec![0],
                    ids: Vec::new(),
                }],
                reach: Reach::Unmeasured,
            });
        }
        let nu = n as usize;
        // Each node needs its level byte and at least a u16 count on layer 0.
        if r.remaining() / 3 < nu {
            return Err(bad(format!(
                "truncated: {n} nodes need at least {} more bytes, have {}",
                3 * nu as u64,
                r.remaining()
            )));
        }
        let levels = r.take(nu)?.to_vec();
        let mut max_level = 0u8;
        let mut first_top = None;
        for (i, &lv) in levels.iter().enumerate() {
            if lv > MAX_LEVEL {
                return Err(bad(format!("node {i} has level {lv} > {MAX_LEVEL}")));
            }
            if lv > max_level || first_top.is_none() {
                max_level = lv;
                first_top = Some(i);
            }
        }
        if max_level != top {
            return Err(bad(format!("top level {top} but highest node level is {max_level}")));
        }
        if entry >= n || levels[entry as usize] != top {
            return Err(bad(format!("entry point {entry} is not a node of top level {top}")));
        }
        if first_top != Some(entry as usize) {
            return Err(bad(format!(
                "entry point {entry} is not the first node of top level {top}"
            )));
        }
        let mut layers = Vec::with_capacity(top as usize + 1);
        for l in 0..=top {
            let cap = if l == 0 { 2 * m } else { m };
            let members: Vec<u32> = if l == 0 {
                Vec::new()
            } else {
                let count = levels.iter().filter(|&&lv| lv >= l).count();
                if r.remaining() / 2 < count {
                    return Err(bad(format!("truncated layer {l}: {count} lists")));
                }
                let mut v = Vec::with_capacity(count);
                v.extend((0..n).filter(|&row| levels[row as usize] >= l));
                v
            };
            let slots = if l == 0 { nu } else { members.len() };
            if r.remaining() / 2 < slots {
                return Err(bad(format!("truncated layer {l}: {slots} lists")));
            }
            let mut offsets = Vec::with_capacity(slots + 1);
            offsets.push(0usize);
            let mut ids: Vec<u32> = Vec::new();
            for s in 0..slots {
                let row = if l == 0 { s as u32 } else { members[s] };
                let c = r.u16().map_err(|e| bad(format!("layer {l} node {row}: {e}")))? as usize;
                if c > cap {
                    return Err(bad(format!("layer {l} node {row}: {c} neighbours > cap {cap}")));
                }
                if r.remaining() / 4 < c {
                    return Err(bad(format!("layer {l} node {row}: truncated list of {c}")));
                }
                ids.reserve(c);
                let mut prev: Option<u32> = None;
                for _ in 0..c {
                    let id = r.u32()?;
                    if id >= n {
                        return Err(bad(format!("layer {l} node {row}: neighbour {id} >= n = {n}")));
                    }
                    if id == row {
                        return Err(bad(format!("layer {l} node {row}: self-loop")));
                    }
                    if levels[id as usize] < l {
                        return Err(bad(format!("layer {l} node {row}: neighbour {id} is not on layer {l}")));
                    }
                    if let Some(p) = prev {
                        if id == p {
                            return Err(bad(format!("layer {l} node {row}: duplicate neighbour {id}")));
                        }
                        if id < p {
                            return Err(bad(format!("layer {l} node {row}: neighbours not sorted")));
                        }
                    }
                    prev = Some(id);
                    ids.push(id);
                }
                offsets.push(ids.len());
            }
            ids.shrink_to_fit();
            layers.push(Layer { members, offsets, ids });
        }
        if r.remaining() != 0 {
            return Err(bad(format!("{} trailing bytes", r.remaining())));
        }
        Ok(UnitGraph {
            n,
            params,
            entry,
            top,
            levels,
            layers,
            reach: Reach::Unmeasured,
        })
    }

    /// Approximate heap bytes (for an LRU).
    pub fn heap_bytes(&self) -> usize {
        self.levels.capacity()
            + self.layers.capacity() * std::mem::size_of::<Layer>()
            + self
                .layers
                .iter()
                .map(|l| {
                    l.members.capacity() * 4
                        + l.offsets.capacity() * std::mem::size_of::<usize>()
                        + l.ids.capacity() * 4
                })
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests;
