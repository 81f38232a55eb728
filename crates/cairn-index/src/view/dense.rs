//! The dense lane across chunks: exact by default, approximate on request.
//!
//! # Exact (default)
//!
//! A hit's score is the dot product of the query and the node's stored vector, computed by
//! one kernel with a fixed summation order (`dense/kernel.rs`), so a score is the same bits
//! on every machine. Hits are ordered `(score desc, ordinal asc)`. The search returns
//! exactly what scoring every vector in the filter would — [`CommitIndexes::dense_search_reference`]
//! does that, and tests hold the two equal — but reads a quarter of the bytes:
//!
//! 1. every row in the filter gets an int8 estimate `a` and a proven bound `B` with the
//!    kernel score within `a ± B` (`dense/int8.rs`);
//! 2. `τ` is the `k`-th largest lower bound `a − B`: `k` rows score at least `τ`, so a row
//!    whose upper bound `a + B` is below `τ` cannot enter the top `k`, not even on a tie;
//! 3. the remaining rows are rescored with the exact kernel in order of their upper bound,
//!    highest first, in batches (the first of `max(k, 16)` rows, each later one twice the
//!    last), until the next upper bound is below the `k`-th best exact score so far (no row
//!    left can enter the top `k`, not even on a tie); the best `k` are kept. With the rows on disk each rescored row is a read, and
//!    a bar of exact scores spares most of them: at 1M 384-d rows, an ANN search's 23,700
//!    candidates cost 436 reads instead of 650.
//!
//! The bounds run over chunks in parallel (rayon); the candidate set, the rows rescored
//! and the final `(score, ordinal)` order do not depend on scheduling, so neither does
//! the result. Small
//! searches (at most [`EXACT_SCAN_ROWS`] rows in the filter, with the rows in memory) skip
//! the estimate.
//!
//! # Approximate ([`CommitIndexes::dense_search_ann`])
//!
//! Each unit (a content-defined run of chunks, `unit.rs`) has an HNSW graph over its
//! vectors; the search asks every unit's graph for its best `ef` rows in the filter
//! ([`ann_ef`], raised to the graph's measured reach), and keeps the best `k` of them,
//! with the rows of scanned units and of chunks no unit covers, by one exact search over
//! them all (its bounds first, so only rows that may win are rescored: one bar for every
//! candidate). A unit is scanned
//! exactly instead when it has fewer than [`ANN_MIN_ROWS`] vectors or when the filter
//! keeps at most `64·ef` of its rows (a filtered walk visits about `ef / selectivity`
//! rows, more than such a scan reads) — decisions that depend only on counts, never on
//! what happens to be cached.
//!
//! The units walked may be another commit's ([`CommitIndexes::set_base_graphs`]): each
//! graph then keeps the parts it was built over, a row of a chunk the view lacks is walked
//! through (its distance from those parts) but never accepted, and the view's chunks no
//! unit holds (the overlay) are scanned exactly with the scanned units.

use std::sync::Arc;

use parking_lot::Mutex;

use rayon::prelude::*;

use super::inherit::InheritedRows;
use crate::chunk::{DenseChunk, Local};
use crate::dense::int8::QueryCodes;
use crate::dense::prefetch;
use crate::error::IndexError;
use crate::hit::{top_k_vec, Hit, Ordinal, TopK};
use crate::hnsw::Reach;
use crate::unit::UnitGraph;
use crate::view::filter::admits;
use crate::view::{CommitIndexes, Filter, FilterPart};

/// Searches over at most this many rows score every row exactly (no estimate phase).
pub const EXACT_SCAN_ROWS: usize = 2048;

/// Rows below which the phases run on the calling thread.
const PARALLEL_ROWS: usize = 4096;

/// Rows on disk below which rescoring runs on the calling thread.
const PARALLEL_DISK_ROWS: usize = 64;

/// The smallest first batch of the exact search's rescoring ([`CommitIndexes::exact_top_k`]):
/// the first batch is `max(k, RESCORE_BATCH)` rows (no bar stops anything before `k` rows
/// are scored), each later one twice the last.
const RESCORE_BATCH: usize = 16;

/// Below this many vectors in a unit, its rows are scanned exactly even in ANN mode.
pub const ANN_MIN_ROWS: usize = 4096;

/// Settings of an approximate search ([`CommitIndexes::dense_search_ann_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnnOptions {
    /// The candidate list of each graph walk, used as given (at least `k`) on every unit;
    /// `None`: [`ann_ef`]`(k, units)` raised to each graph's measured [`Reach`], and a unit whose
    /// graph reaches no `ef` is scanned exactly.
    pub ef: Option<usize>,
    /// Units with fewer vectors are scanned exactly ([`ANN_MIN_ROWS`] by default).
    pub min_unit_rows: usize,
    /// A unit whose filtered rows are at most this many times `ef` is scanned exactly
    /// (64 by default; 0 always walks the graph).
    pub exact_scan_factor: usize,
}

impl Default for AnnOptions {
    fn default() -> Self {
        AnnOptions {
            ef: None,
            min_unit_rows: ANN_MIN_ROWS,
            exact_scan_factor: 64,
        }
    }
}

/// The candidate list of each unit's graph walk for a search of `depth` candidates over
/// `units` units, before a graph's measured reach raises it:
/// `max(`[`ann_floor`]`(units), min(depth, ⌈3·depth / units⌉))`.
///
/// * Units split the nodes by id, not by vector, so each holds about `depth / units` of
///   the true top `depth`; three times that share leaves room for the unevenness of a
///   random split, and a single unit walks with `depth` itself.
/// * The floor keeps a walk wide enough to find its unit's few best rows; each graph's
///   measured reach ([`Reach`]) then raises `ef` to what that graph needs to find a row's
///   10 nearest neighbours.
///
/// ```
/// use cairn_index::ann_ef;
/// assert_eq!(ann_ef(10, 1), 64);
/// assert_eq!(ann_ef(100, 1), 100);
/// assert_eq!(ann_ef(100, 30), 16);
/// assert_eq!(ann_ef(1000, 30), 100);
/// ```
pub fn ann_ef(depth: usize, units: usize) -> usize {
    let units = units.max(1);
    let share = depth.saturating_mul(3).div_ceil(units);
    depth.min(share).max(ann_floor(units))
}

/// The least `ef` of a unit's walk among `units` walked units: `64 / ⌈√units⌉`, at least
/// 16 (the smallest `ef` a graph's reach can name).
///
/// * One unit keeps 64: with 32, Cranfield and CISI keep recall@10 ≥ 0.995 but the Vaswani
///   acceptance set drops to 0.989 (`tests/eval_dense.rs`).
/// * With many units, each holds a few of the best rows at most, and a walk of 64 per
///   unit made the approximate search cost ~64 rows' walk times the units. Measured once
///   (README, session 23) at 600k clustered 384-d vectors (14 units, depth 100): a floor of
///   16 kept recall@10 at 1.000 and took 0.58 ms a query against 0.90 ms with 64; in the
///   1M bench (30 units), 2.2 against 2.6 ms at recall@10 0.9855 against 0.9880.
///
/// ```
/// use cairn_index::view::ann_floor;
/// assert_eq!([1, 2, 4, 5, 9, 10, 30].map(ann_floor), [64, 32, 32, 21, 21, 16, 16]);
/// ```
pub fn ann_floor(units: usize) -> usize {
    let units = units.max(1);
    let root = units.isqrt();
    let root = if root * root < units { root + 1 } else { root };
    (64 / root).max(16)
}

/// The result of a dense search.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DenseSearch {
    /// Hits with exact dot-product scores, `(score desc, ordinal asc)`.
    pub hits: Vec<Hit>,
    /// True if an approximate (HNSW) graph chose the candidates.
    pub approximate: bool,
    /// Rows rescored with the exact kernel.
    pub rescored: usize,
}

/// One unit graph a dense view walks: the graph, the dense parts it was built over (its
/// unit's chunks, in order), and where each of those chunks is in the view. A view's own
/// units map every chunk to itself; units borrowed from a base commit ([`BaseUnit`]) may
/// have chunks the view lacks, whose rows are walked through but never returned.
#[derive(Debug, Clone)]
pub(crate) struct UnitRef {
    pub(crate) graph: Arc<UnitGraph>,
    /// The unit's chunks' parts (`None`: no vector of the model).
    pub(crate) parts: Arc<[Option<Arc<DenseChunk>>]>,
    /// Unit chunk → the view's chunk (`None`: the view lacks it).
    pub(crate) chunks: Arc<[Option<u32>]>,
    /// Graph row → `(unit chunk, row)`.
    pub(crate) rows: Arc<[Row]>,
    /// Rows of the unit's chunks the view has.
    pub(crate) live_rows: usize,
}

/// A unit graph of a base commit, for [`CommitIndexes::set_base_graphs`]: `graph` was built
/// over `parts` (the base unit's chunks' dense parts in order, `None` for a chunk without a
/// vector of the model), and `chunks[i]` is the view's chunk equal to the unit's chunk `i`
/// (same content key, so the same part), or `None` if the view lacks it.
#[derive(Debug, Clone)]
pub struct BaseUnit {
    /// The unit's graph.
    pub graph: Arc<UnitGraph>,
    /// The parts the graph was built over.
    pub parts: Vec<Option<Arc<DenseChunk>>>,
    /// Each unit chunk's index in the view.
    pub chunks: Vec<Option<usize>>,
}

/// The dense parts of one model, aligned with a view's chunks.
#[derive(Debug, Clone)]
pub struct DenseView {
    model: String,
    dim: usize,
    parts: Vec<Option<Arc<DenseChunk>>>,
    rows: usize,
    units: Option<Vec<UnitRef>>,
    /// Chunks no unit covers, scanned exactly in ANN mode (in order).
    overlay: Arc<[u32]>,
    /// The tree root whose units the graphs are ([`DenseView::graphs_origin`]).
    origin: Option<cairn_core::Hash>,
    /// Row lists of recent filters ([`DenseView::rows_for`]); clones of the view share it
    /// (their parts are the same).
    rows_memo: Arc<Mutex<Vec<RowsMemo>>>,
    /// The donor's row lists, for a view assembled from one (`inherit.rs`).
    inherited: Option<InheritedRows>,
}

/// A remembered row list: the filter's parts (`None`: no filter), kept alive so that the
/// pointer cannot be reused by another filter while it is remembered, and its rows.
pub(crate) type RowsMemo = (Option<Arc<Vec<FilterPart>>>, Arc<[Row]>);

/// Row lists a dense view remembers (as many as the view's label gates), and the most
/// rows they hold together (8 bytes each: 32 MiB).
pub(crate) const ROWS_MEMO: usize = 16;
pub(crate) const ROWS_MEMO_ROWS: usize = 4 << 20;

impl DenseView {
    /// True if the parts' exact rows are read from the store, not held in memory (one
    /// rule decides for every part of a view; the first part tells, and a view that mixes
    /// the two only scores at another speed).
    fn rows_on_disk(&self) -> bool {
        self.parts.iter().flatten().next().is_some_and(|p| !p.rows_in_memory())
    }

    pub(crate) fn new(model: &str, mut parts: Vec<Option<Arc<DenseChunk>>>) -> DenseView {
        let dim = parts.iter().flatten().map(|p| p.dim()).next().unwrap_or(0);
        for p in &mut parts {
            if p.as_ref().is_some_and(|p| p.dim() != dim || p.is_empty()) {
                *p = None;
            }
        }
        let rows = parts.iter().flatten().map(|p| p.len()).sum();
        DenseView {
            model: model.to_string(),
            dim,
            parts,
            rows,
            units: None,
            overlay: Arc::from(Vec::new()),
            origin: None,
            rows_memo: Arc::default(),
            inherited: None,
        }
    }

    /// The row memo, for a view assembled from this one (`inherit.rs`).
    pub(crate) fn rows_memo(&self) -> Arc<Mutex<Vec<RowsMemo>>> {
        Arc::clone(&self.rows_memo)
    }

    pub(crate) fn set_inherited(&mut self, inherited: InheritedRows) {
        self.inherited = Some(inherited);
    }

    /// What this view can derive from older views (`inherit.rs`).
    pub(crate) fn inherited(&self) -> Option<&InheritedRows> {
        self.inherited.as_ref()
    }

    /// The rows admitted by the filter with `parts` (`None`: every row), in chunk and row
    /// order, from `build` unless a recent call asked for the same filter. "The same" is
    /// the same shared parts (a label gate the view memoised hands every query the same
    /// ones), so a hit can never be another filter's rows.
    fn rows_for(&self, parts: Option<&Arc<Vec<FilterPart>>>, build: impl FnOnce() -> Vec<Row>) -> Arc<[Row]> {
        let same = |m: &RowsMemo| match (&m.0, parts) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        if let Some(m) = self.rows_memo.lock().iter().find(|m| same(m)) {
            return Arc::clone(&m.1);
        }
        let rows: Arc<[Row]> = build().into();
        let mut memo = self.rows_memo.lock();
        if !memo.iter().any(same) && rows.len() <= ROWS_MEMO_ROWS {
            while memo.len() >= ROWS_MEMO || memo.iter().map(|m| m.1.len()).sum::<usize>() + rows.len() > ROWS_MEMO_ROWS
            {
                memo.remove(0);
            }
            memo.push((parts.cloned(), Arc::clone(&rows)));
        }
        rows
    }

    /// Attaches units borrowed from the node tree `origin`'s units (a view's own units are
    /// the case where every chunk maps to itself): checks that each graph covers its parts'
    /// rows, that a mapped chunk's part is the view's (same rows), and that no chunk is
    /// mapped twice; the view's chunks no unit covers become the exact overlay.
    pub(crate) fn set_base_units(
        &mut self,
        units: Vec<BaseUnit>,
        chunks: usize,
        origin: Option<cairn_core::Hash>,
    ) -> Result<(), IndexError> {
        let bad = |what: String| IndexError::Inconsistent(format!("unit graphs of `{}`: {what}", self.model));
        let mut covered = vec![false; chunks];
        let mut refs = Vec::with_capacity(units.len());
        for u in units {
            if u.parts.len() != u.chunks.len() {
                return Err(bad("parts and chunks differ in length".into()));
            }
            let parts: Vec<Option<Arc<DenseChunk>>> =
                u.parts.into_iter().map(|p| p.filter(|p| !p.is_empty())).collect();
            if parts.iter().flatten().any(|p| p.dim() != self.dim) {
                return Err(bad("a part of another dimension".into()));
            }
            let total: usize = parts.iter().flatten().map(|p| p.len()).sum();
            if u.graph.len() as usize != total {
                return Err(bad(format!("a graph of {} rows over {total} rows", u.graph.len())));
            }
            let mut live_rows = 0;
            for (p, c) in parts.iter().zip(&u.chunks) {
                let Some(c) = *c else { continue };
                if c >= chunks || std::mem::replace(&mut covered[c], true) {
                    return Err(bad(format!("chunk {c} mapped twice or out of range")));
                }
                let mine = self.parts.get(c).and_then(Option::as_ref);
                let same = match (p, mine) {
                    (Some(p), Some(m)) => Arc::ptr_eq(p, m) || (p.len() == m.len() && p.rows() == m.rows()),
                    (None, None) => true,
                    _ => false,
                };
                if !same {
                    return Err(bad(format!("chunk {c}'s part is not the view's")));
                }
                live_rows += p.as_ref().map_or(0, |p| p.len());
            }
            let rows: Vec<Row> = parts
                .iter()
                .enumerate()
                .flat_map(|(i, p)| {
                    let n = p.as_ref().map_or(0, |p| p.len() as u32);
                    (0..n).map(move |r| (i as u32, r))
                })
                .collect();
            refs.push(UnitRef {
                graph: u.graph,
                parts: parts.into(),
                chunks: u.chunks.iter().map(|c| c.map(|c| c as u32)).collect(),
                rows: rows.into(),
                live_rows,
            });
        }
        let overlay: Vec<u32> = (0..chunks)
            .filter(|&c| !covered[c] && self.parts.get(c).is_some_and(Option::is_some))
            .map(|c| c as u32)
            .collect();
        self.units = Some(refs);
        self.overlay = overlay.into();
        self.origin = origin;
        Ok(())
    }

    /// Attaches the view's own units: `(first chunk, chunk count, graph)`, covering every
    /// chunk once, in order.
    pub(crate) fn set_units(
        &mut self,
        units: Vec<(usize, usize, Arc<UnitGraph>)>,
        chunks: usize,
    ) -> Result<(), IndexError> {
        let mut next = 0;
        for (first, count, _) in &units {
            if *first != next {
                return Err(IndexError::Inconsistent(format!(
                    "unit graphs of `{}` do not cover the chunks in order",
                    self.model
                )));
            }
            next = first + count;
        }
        if next != chunks {
            return Err(IndexError::Inconsistent(format!(
                "unit graphs of `{}` cover {next} of {chunks} chunks",
                self.model
            )));
        }
        let units = units
            .into_iter()
            .map(|(first, count, graph)| BaseUnit {
                graph,
                parts: self.parts[first..first + count].to_vec(),
                chunks: (first..first + count).map(Some).collect(),
            })
            .collect();
        self.set_base_units(units, chunks, None)
    }

    /// The node tree whose units the attached graphs are: `None` for the view's own, else
    /// the base's root given to [`CommitIndexes::set_base_graphs`].
    pub fn graphs_origin(&self) -> Option<cairn_core::Hash> {
        self.origin
    }

    /// Chunks no attached unit covers (scanned exactly by an approximate search).
    pub fn overlay_chunks(&self) -> usize {
        self.overlay.len()
    }

    /// Number of unit graphs attached.
    pub fn unit_count(&self) -> usize {
        self.units.as_ref().map_or(0, Vec::len)
    }

    /// Unit `u`'s graph, if unit graphs are attached.
    pub fn unit_graph(&self, u: usize) -> Option<&Arc<UnitGraph>> {
        self.units.as_ref()?.get(u).map(|r| &r.graph)
    }

    /// True if unit graphs are attached.
    pub fn has_units(&self) -> bool {
        self.units.is_some()
    }

    /// The model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True if no node has a vector of this model.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Chunk `c`'s part.
    pub fn part(&self, c: usize) -> Option<&Arc<DenseChunk>> {
        self.parts.get(c).and_then(Option::as_ref)
    }
}

/// A row of a dense view: `(chunk, row in the chunk's part)`.
pub(crate) type Row = (u32, u32);

/// A gated approximate search's view of its filter: the rows in it, where each chunk's
/// start in them, and its bitset.
type Gated<'f> = (Arc<[Row]>, Vec<u32>, &'f [u64]);

/// Appends the rows of chunk `c`'s `part` admitted by `filter` to `out`, in row order.
pub(crate) fn push_rows(c: usize, part: &DenseChunk, filter: Option<&FilterPart>, out: &mut Vec<Row>) {
    let c = c as u32;
    match filter {
        None | Some(FilterPart::All) => out.extend((0..part.len() as u32).map(|r| (c, r))),
        Some(FilterPart::Some(b)) => {
            if part.identity {
                let n = part.len() as u32;
                out.extend(b.iter().take_while(|&l| l < n).map(|l| (c, l)));
            } else if (b.len() as usize).saturating_mul(8) < part.len() {
                out.extend(b.iter().filter_map(|l| part.row_of(l).map(|r| (c, r as u32))));
            } else {
                out.extend(
                    part.rows()
                        .iter()
                        .enumerate()
                        .filter(|(_, l)| b.contains(**l))
                        .map(|(r, _)| (c, r as u32)),
                );
            }
        }
    }
}

/// Prefetches the part (its header) of the row `4·AHEAD` places after `rows[i]`: the struct
/// whose array addresses a row `AHEAD` places on will need.
#[inline(always)]
fn prefetch_part_ahead(view: &DenseView, rows: &[Row], i: usize) {
    if let Some(&(c, _)) = rows.get(i + 4 * prefetch::AHEAD) {
        if let Some(part) = view.part(c as usize) {
            prefetch::prefetch(std::slice::from_ref::<DenseChunk>(part));
        }
    }
}

/// The bound pass's prefetch: row `i + AHEAD`'s codes and its three per-row bound terms
/// (separate arrays, so separate cache lines), and the part of row `i + 4·AHEAD` itself
/// (the struct that holds those arrays' addresses), so that finding row `i + AHEAD`'s
/// addresses does not wait for a miss.
#[inline(always)]
fn prefetch_bounds_ahead(view: &DenseView, rows: &[Row], i: usize) {
    prefetch_part_ahead(view, rows, i);
    if let Some(&(c, r)) = rows.get(i + prefetch::AHEAD) {
        if let Some(part) = view.part(c as usize) {
            let r = r as usize;
            part.prefetch_bounds(r);
        }
    }
}

impl CommitIndexes {
    fn dense_view_for(&self, model: &str, query: &[f32]) -> Result<&DenseView, IndexError> {
        if !self.has_dense_model(model) {
            return Err(IndexError::UnknownModel {
                kind: "dense",
                model: model.to_string(),
            });
        }
        let view = self
            .dense
            .get(model)
            .ok_or_else(|| IndexError::NotLoaded(format!("dense:{model}")))?;
        if query.len() != view.dim {
            return Err(IndexError::DimensionMismatch {
                model: model.to_string(),
                expected: view.dim,
                got: query.len(),
            });
        }
        if let Some(position) = query.iter().position(|x| !x.is_finite()) {
            return Err(IndexError::NonFiniteQuery {
                model: model.to_string(),
                position,
            });
        }
        Ok(view)
    }

    /// The rows in `filter`, in chunk and row order (remembered per filter:
    /// [`DenseView::rows_for`]).
    fn filtered_rows(&self, view: &DenseView, filter: Option<&Filter>) -> Arc<[Row]> {
        view.rows_for(filter.map(|f| &f.parts), || {
            if let Some(rows) = filter.and_then(|f| view.inherited.as_ref()?.rows(view, f)) {
                return rows;
            }
            let mut out = Vec::new();
            for (c, p) in view.parts.iter().enumerate() {
                if let Some(p) = p {
                    push_rows(c, p, filter.map(|f| f.part(c)), &mut out);
                }
            }
            out
        })
    }

    /// The `k` best of `rows` by the exact kernel. A row on disk that cannot be read is
    /// scored from its node object ([`crate::dense::rows`]); `Err` only if that fails too.
    fn rescore(&self, view: &DenseView, query: &[f32], k: usize, rows: &[Row]) -> Result<Vec<Hit>, IndexError> {
        let hit = |i: usize| -> Result<Option<Hit>, IndexError> {
            // The part four rows further on (its header), then the row and its local.
            prefetch_part_ahead(view, rows, i);
            if let Some(&(c, r)) = rows.get(i + prefetch::AHEAD) {
                if let Some(part) = view.part(c as usize) {
                    part.prefetch_row(r as usize);
                    prefetch::prefetch(std::slice::from_ref(&part.rows()[r as usize]));
                }
            }
            let (c, r) = rows[i];
            let Some(part) = view.part(c as usize) else {
                return Ok(None);
            };
            let (c, r) = (c as usize, r as usize);
            let local = part.rows()[r];
            let score = part.score(query, r).or_else(|why| {
                let node = self.chunks()[c].hash(local);
                part.score_from_data(query, r, &view.model, why)
                    .map_err(|e| IndexError::UnreadableRow(format!("dense:{} node {}: {e}", view.model, node.short())))
            })?;
            Ok(Some(Hit {
                ordinal: self.offset(c) + local,
                score,
            }))
        };
        // Rows on disk are a read each: spread over the threads from a few dozen on, so
        // that reads the page cache misses wait side by side.
        let (parallel, min_len) = if view.rows_on_disk() {
            (PARALLEL_DISK_ROWS, PARALLEL_DISK_ROWS / 2)
        } else {
            (PARALLEL_ROWS, 1024)
        };
        let hits: Vec<Hit> = if rows.len() >= parallel {
            (0..rows.len())
                .into_par_iter()
                .with_min_len(min_len)
                .filter_map(|i| hit(i).transpose())
                .collect::<Result<_, _>>()?
        } else {
            (0..rows.len())
                .filter_map(|i| hit(i).transpose())
                .collect::<Result<_, _>>()?
        };
        Ok(top_k_vec(hits, k))
    }

    /// The `k` nodes with the highest dot product with `query` among `filter`, exact
    /// (module docs). Returns exactly `min(k, |filter ∩ nodes with a vector|)` hits.
    ///
    /// Errors: [`IndexError::UnknownModel`] if no node has a vector of `model`,
    /// [`IndexError::DimensionMismatch`], [`IndexError::NonFiniteQuery`], and
    /// [`IndexError::NotLoaded`] if the model's parts are not in this view.
    pub fn dense_search(
        &self,
        model: &str,
        query: &[f32],
        k: usize,
        filter: Option<&Filter>,
    ) -> Result<DenseSearch, IndexError> {
        let view = self.dense_view_for(model, query)?;
        if k == 0 {
            return Ok(DenseSearch::default());
        }
        let rows = self.filtered_rows(view, filter);
        let (hits, rescored) = self.exact_top_k(view, query, k, &rows)?;
        Ok(DenseSearch {
            hits,
            approximate: false,
            rescored,
        })
    }

    /// The exact `k` best of `rows` (module docs: int8 bounds, then exact rescoring of the
    /// rows that can still enter the top `k`); also returns how many rows were rescored.
    fn exact_top_k(
        &self,
        view: &DenseView,
        query: &[f32],
        k: usize,
        rows: &[Row],
    ) -> Result<(Vec<Hit>, usize), IndexError> {
        let total = rows.len();
        // Few rows are scored outright, unless scoring one means reading it from disk: a
        // row's codes are in memory, and the bound pass spares the reads of rows that
        // cannot win.
        if total <= k || (total <= EXACT_SCAN_ROWS && !view.rows_on_disk()) {
            return Ok((self.rescore(view, query, k, rows)?, total));
        }
        // Phase 1: bounds, in row order.
        let q = QueryCodes::new(query);
        let bound = |i: usize| -> (f64, f64) {
            prefetch_bounds_ahead(view, rows, i);
            let (c, r) = rows[i];
            match view.part(c as usize) {
                Some(part) => {
                    let i = r as usize;
                    let (s, u, v) = part.bound_terms(i);
                    match part.checked_codes(i) {
                        Some(codes) => q.bounds(codes, s, u, v),
                        // Codes that fail their checksum bound nothing: the row is
                        // rescored from its exact vector, so the answer is the same.
                        None => (f64::NEG_INFINITY, f64::INFINITY),
                    }
                }
                None => (f64::NEG_INFINITY, f64::NEG_INFINITY),
            }
        };
        let bounds: Vec<(f64, f64)> = if total >= PARALLEL_ROWS {
            (0..total).into_par_iter().with_min_len(1024).map(bound).collect()
        } else {
            (0..total).map(bound).collect()
        };
        let mut lowers: Vec<f64> = bounds.iter().map(|b| b.0).collect();
        let nth = lowers.len() - k;
        let (_, tau, _) = lowers.select_nth_unstable_by(nth, f64::total_cmp);
        let tau = *tau;
        // Phase 2: what can still enter the top k, by upper bound, highest first (ties in
        // row order)…
        let mut kept: Vec<(f64, Row)> = rows
            .iter()
            .zip(&bounds)
            .filter(|(_, b)| b.1 >= tau)
            .map(|(r, b)| (b.1, *r))
            .collect();
        kept.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        // …rescored in batches of growing size, each cut where the upper bounds fall below
        // the k-th best exact score so far, until the next upper bound is below it: no row
        // left can enter the top k, not even on a tie. The rows rescored, and the result,
        // are fixed by the data.
        let mut top = TopK::new(k);
        let (mut at, mut batch) = (0, k.max(RESCORE_BATCH));
        while at < kept.len() {
            let mut end = (at + batch).min(kept.len());
            if let Some(bar) = top.bar() {
                end = at + kept[at..end].partition_point(|r| r.0 >= f64::from(bar));
            }
            if end == at {
                break;
            }
            let rows: Vec<Row> = kept[at..end].iter().map(|&(_, r)| r).collect();
            for hit in self.rescore(view, query, k, &rows)? {
                top.push(hit);
            }
            at = end;
            batch *= 2;
        }
        Ok((top.into_sorted(), at))
    }

    /// The exact answer by scoring every vector in `filter` with the exact kernel: the
    /// reference [`CommitIndexes::dense_search`] is held to. Errors as that.
    pub fn dense_search_reference(
        &self,
        model: &str,
        query: &[f32],
        k: usize,
        filter: Option<&Filter>,
    ) -> Result<Vec<Hit>, IndexError> {
        let view = self.dense_view_for(model, query)?;
        let rows = self.filtered_rows(view, filter);
        self.rescore(view, query, k, &rows)
    }

    /// Approximate search through the model's unit graphs (module docs): candidates from
    /// each unit's graph, rescored exactly. Errors as [`CommitIndexes::dense_search`], and
    /// [`IndexError::NotLoaded`] if the unit graphs are not attached (the caller builds
    /// them: results never depend on what happens to be cached).
    pub fn dense_search_ann(
        &self,
        model: &str,
        query: &[f32],
        k: usize,
        filter: Option<&Filter>,
    ) -> Result<DenseSearch, IndexError> {
        self.dense_search_ann_with(model, query, k, filter, &AnnOptions::default())
    }

    /// [`CommitIndexes::dense_search_ann`] with explicit settings.
    pub fn dense_search_ann_with(
        &self,
        model: &str,
        query: &[f32],
        k: usize,
        filter: Option<&Filter>,
        options: &AnnOptions,
    ) -> Result<DenseSearch, IndexError> {
        let view = self.dense_view_for(model, query)?;
        let units = view
            .units
            .as_ref()
            .ok_or_else(|| IndexError::NotLoaded(format!("unit graphs of dense:{model}")))?;
        if k == 0 {
            return Ok(DenseSearch::default());
        }
        let base_ef = ann_ef(k, units.len());
        let q = QueryCodes::new(query);
        // Under a filter: its rows (the exact lane's list, remembered per filter) and where
        // each chunk's start in it, so that a unit counts and lists its rows in the filter
        // from its chunks' stretches instead of reading each chunk's bitmap; and the
        // filter's bitset, which a walk tests the rows it may return against.
        let gated: Option<Gated> = filter.map(|f| {
            let rows = self.filtered_rows(view, Some(f));
            let mut starts = vec![0u32; view.parts.len() + 1];
            for &(c, _) in rows.iter() {
                starts[c as usize + 1] += 1;
            }
            for c in 1..starts.len() {
                starts[c] += starts[c - 1];
            }
            (rows, starts, f.bits())
        });
        // Per unit: the rows a walk found (to rescore), or the unit's rows in the filter (to
        // scan exactly); the flag says which.
        let search_unit = |u: &UnitRef| -> (Vec<Row>, bool) {
            // The unit's rows the view has, in the filter, chunk by chunk, in order (listed
            // only when the unit is scanned; under a filter they are counted from `starts`).
            let scan = || {
                let mut rows: Vec<Row> = Vec::new();
                for c in u.chunks.iter().flatten() {
                    let c = *c as usize;
                    match &gated {
                        Some((listed, starts, _)) => {
                            rows.extend_from_slice(&listed[starts[c] as usize..starts[c + 1] as usize]);
                        }
                        None => {
                            if let Some(p) = view.part(c) {
                                push_rows(c, p, None, &mut rows);
                            }
                        }
                    }
                }
                rows
            };
            let n = u.graph.len() as usize;
            let admitted = match &gated {
                Some((_, starts, _)) => u
                    .chunks
                    .iter()
                    .flatten()
                    .map(|&c| (starts[c as usize + 1] - starts[c as usize]) as usize)
                    .sum(),
                None => u.live_rows,
            };
            // The walk's ef: as given, else the depth's, raised to what the graph's own
            // measurement needs; a graph that reaches no ef is not walked.
            let ef = match (options.ef, u.graph.reach()) {
                (Some(ef), _) => ef.max(k),
                (None, Reach::Unreachable) => return (scan(), false),
                (None, Reach::Ef(e)) => base_ef.max(e as usize),
                (None, Reach::Unmeasured) => base_ef,
            };
            // Exact when it is cheap or the graph would be slow: a small unit, a filter
            // keeping few rows (a filtered walk visits about ef/selectivity rows; scanning
            // the filter's rows is cheaper below ~64·ef of them).
            if admitted == 0 || n < options.min_unit_rows || admitted <= options.exact_scan_factor.saturating_mul(ef) {
                return (scan(), false);
            }
            // Graph rows are the unit's; distances use the unit's own parts (a chunk the
            // view lacks is walked through), acceptance and results the view's chunks.
            let own = |g: u32| {
                let (i, r) = u.rows[g as usize];
                (i as usize, r as usize)
            };
            let accept = |g: u32| {
                let (i, r) = own(g);
                match (u.chunks[i], &gated) {
                    (None, _) => false,
                    (Some(_), None) => true,
                    (Some(c), Some((_, _, bits))) => u.parts[i]
                        .as_ref()
                        .is_some_and(|p| admits(bits, self.offset(c as usize) + p.rows()[r])),
                }
            };
            let dist = |g: u32| {
                let (i, r) = own(g);
                match u.parts[i]
                    .as_ref()
                    .and_then(|p| Some((p.checked_codes(r)?, p.scale(r))))
                {
                    Some((codes, scale)) => -(crate::dense::int8::dot_i16_i8(&q.codes, codes) as f32 * scale),
                    None => f32::INFINITY,
                }
            };
            let ahead = |g: u32| {
                let (i, r) = own(g);
                if let Some(p) = &u.parts[i] {
                    prefetch::prefetch(p.codes(r));
                }
            };
            let mut found: Vec<Row> = u
                .graph
                .search_prefetching(ef, dist, accept, ahead)
                .into_iter()
                .filter_map(|g| {
                    let (i, r) = u.rows[g as usize];
                    u.chunks[i as usize].map(|c| (c, r))
                })
                .collect();
            found.sort_unstable();
            (found, true)
        };
        let per_unit: Vec<(Vec<Row>, bool)> = units.par_iter().map(search_unit).collect();
        let approximate = per_unit.iter().any(|(_, a)| *a);
        // The candidates: the rows of chunks no unit covers (new since the base commit
        // whose units these are), every row in the filter of a scanned unit, and the rows
        // each walk found. One exact top k over them all: the int8 bounds spare the reads
        // of rows that cannot win (`exact_top_k`), with one bar for the scanned and the
        // walked rows alike, so a walked row costs its codes and a read of its exact row
        // only if it may still enter the best `k` of the whole search.
        let mut candidates: Vec<Row> = Vec::new();
        for &c in view.overlay.iter() {
            let c = c as usize;
            if let Some(p) = view.part(c) {
                push_rows(c, p, filter.map(|f| f.part(c)), &mut candidates);
            }
        }
        for (rows, _) in per_unit {
            candidates.extend(rows);
        }
        let (hits, rescored) = self.exact_top_k(view, query, k, &candidates)?;
        Ok(DenseSearch {
            hits,
            approximate,
            rescored,
        })
    }

    /// Ordinal of chunk `c`'s row `r` in `model`'s dense view.
    pub fn dense_row_ordinal(&self, model: &str, c: usize, r: usize) -> Option<Ordinal> {
        let p = self.dense.get(model)?.part(c)?;
        let l: Local = *p.rows().get(r)?;
        Some(self.offset(c) + l)
    }
}
