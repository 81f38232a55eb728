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
//! 3. the remaining rows are rescored with the exact kernel and the best `k` kept.
//!
//! Both phases run over chunks in parallel (rayon); the candidate set and the final
//! `(score, ordinal)` order do not depend on scheduling, so neither does the result. Small
//! searches (at most [`EXACT_SCAN_ROWS`] rows in the filter) skip the estimate.
//!
//! # Approximate ([`CommitIndexes::dense_search_ann`])
//!
//! Each unit (a content-defined run of chunks, `unit.rs`) has an HNSW graph over its
//! vectors; the search asks every unit's graph for its `ef = max(k, 64)` best rows in the
//! filter, rescores them with the exact kernel and keeps the best `k`. A unit is scanned
//! exactly instead when it has fewer than [`ANN_MIN_ROWS`] vectors, when the filter keeps at
//! most `4·ef` of its rows, or less than a sixteenth of them (a filtered graph walk would
//! then visit mostly rejected rows) — decisions that depend only on counts, never on what
//! happens to be cached.

use std::sync::Arc;

use rayon::prelude::*;

use crate::chunk::{DenseChunk, Local};
use crate::dense::int8::QueryCodes;
use crate::error::IndexError;
use crate::hit::{top_k, Hit, Ordinal};
use crate::unit::UnitGraph;
use crate::view::{CommitIndexes, Filter, FilterPart};

/// Searches over at most this many rows score every row exactly (no estimate phase).
pub const EXACT_SCAN_ROWS: usize = 2048;

/// Rows below which the phases run on the calling thread.
const PARALLEL_ROWS: usize = 16_384;

/// Below this many vectors in a unit, its rows are scanned exactly even in ANN mode.
pub const ANN_MIN_ROWS: usize = 4096;

/// Settings of an approximate search ([`CommitIndexes::dense_search_ann_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnnOptions {
    /// The candidate list of each graph walk; `None`: `max(k, 64)`.
    pub ef: Option<usize>,
    /// Units with fewer vectors are scanned exactly ([`ANN_MIN_ROWS`] by default).
    pub min_unit_rows: usize,
}

impl Default for AnnOptions {
    fn default() -> Self {
        AnnOptions {
            ef: None,
            min_unit_rows: ANN_MIN_ROWS,
        }
    }
}

/// The result of a dense search.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseSearch {
    /// Hits with exact dot-product scores, `(score desc, ordinal asc)`.
    pub hits: Vec<Hit>,
    /// True if an approximate (HNSW) graph chose the candidates.
    pub approximate: bool,
    /// Rows rescored with the exact kernel.
    pub rescored: usize,
}

/// One unit of a dense view: chunks `first..first + count` and their graph.
#[derive(Debug, Clone)]
pub(crate) struct UnitRef {
    pub(crate) first: usize,
    pub(crate) count: usize,
    pub(crate) graph: Arc<UnitGraph>,
}

/// The dense parts of one model, aligned with a view's chunks.
#[derive(Debug, Clone)]
pub struct DenseView {
    model: String,
    dim: usize,
    parts: Vec<Option<Arc<DenseChunk>>>,
    rows: usize,
    units: Option<Vec<UnitRef>>,
}

impl DenseView {
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
        }
    }

    pub(crate) fn set_units(
        &mut self,
        units: Vec<(usize, usize, Arc<UnitGraph>)>,
        chunks: usize,
    ) -> Result<(), IndexError> {
        let mut next = 0;
        for (first, count, graph) in &units {
            let rows: usize = self.parts[*first..*first + *count]
                .iter()
                .flatten()
                .map(|p| p.len())
                .sum();
            if *first != next || graph.len() as usize != rows {
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
        self.units = Some(
            units
                .into_iter()
                .map(|(first, count, graph)| UnitRef { first, count, graph })
                .collect(),
        );
        Ok(())
    }

    /// Number of unit graphs attached.
    pub fn unit_count(&self) -> usize {
        self.units.as_ref().map_or(0, Vec::len)
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

/// A row found in phase 1: `(chunk, row, lower, upper)`.
type Candidate = (u32, u32, f64, f64);

/// The rows of `part` admitted by `filter`, in row order.
fn rows_in(part: &DenseChunk, filter: Option<&FilterPart>) -> Vec<u32> {
    match filter {
        None | Some(FilterPart::All) => (0..part.len() as u32).collect(),
        Some(FilterPart::Some(b)) => {
            if (b.len() as usize).saturating_mul(8) < part.len() {
                b.iter().filter_map(|l| part.row_of(l).map(|r| r as u32)).collect()
            } else {
                part.rows()
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| b.contains(**l))
                    .map(|(r, _)| r as u32)
                    .collect()
            }
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

    /// The rows of each chunk in `filter`, as `(chunk, rows)`; chunks without any are left out.
    fn filtered_rows(&self, view: &DenseView, filter: Option<&Filter>) -> Vec<(usize, Vec<u32>)> {
        view.parts
            .iter()
            .enumerate()
            .filter_map(|(c, p)| {
                let p = p.as_ref()?;
                let rows = rows_in(p, filter.map(|f| f.part(c)));
                (!rows.is_empty()).then_some((c, rows))
            })
            .collect()
    }

    fn rescore(&self, view: &DenseView, query: &[f32], k: usize, rows: &[(usize, Vec<u32>)]) -> Vec<Hit> {
        let total: usize = rows.iter().map(|(_, r)| r.len()).sum();
        let score_chunk = |(c, rs): &(usize, Vec<u32>)| -> Vec<Hit> {
            let Some(part) = view.part(*c) else {
                return Vec::new();
            };
            let base = self.offset(*c);
            top_k(
                rs.iter().map(|&r| Hit {
                    ordinal: base + part.rows()[r as usize],
                    score: part.score(query, r as usize),
                }),
                k,
            )
        };
        let per_chunk: Vec<Vec<Hit>> = if total >= PARALLEL_ROWS {
            rows.par_iter().map(score_chunk).collect()
        } else {
            rows.iter().map(score_chunk).collect()
        };
        top_k(per_chunk.into_iter().flatten(), k)
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
            return Ok(DenseSearch {
                hits: Vec::new(),
                approximate: false,
                rescored: 0,
            });
        }
        let rows = self.filtered_rows(view, filter);
        let total: usize = rows.iter().map(|(_, r)| r.len()).sum();
        if total <= k || total <= EXACT_SCAN_ROWS {
            return Ok(DenseSearch {
                hits: self.rescore(view, query, k, &rows),
                approximate: false,
                rescored: total,
            });
        }
        // Phase 1: bounds.
        let q = QueryCodes::new(query);
        let bound_chunk = |(c, rs): &(usize, Vec<u32>)| -> Vec<Candidate> {
            let Some(part) = view.part(*c) else {
                return Vec::new();
            };
            rs.iter()
                .map(|&r| {
                    let i = r as usize;
                    let (lo, hi) = q.bounds(part.codes(i), part.scales[i], part.bound_u[i], part.bound_v[i]);
                    (*c as u32, r, lo, hi)
                })
                .collect()
        };
        let cands: Vec<Candidate> = if total >= PARALLEL_ROWS {
            rows.par_iter().flat_map_iter(bound_chunk).collect()
        } else {
            rows.iter().flat_map(bound_chunk).collect()
        };
        let mut lowers: Vec<f64> = cands.iter().map(|c| c.2).collect();
        let nth = lowers.len() - k;
        let (_, tau, _) = lowers.select_nth_unstable_by(nth, f64::total_cmp);
        let tau = *tau;
        // Phase 2: rescore what can still enter the top k.
        let mut kept: Vec<(usize, Vec<u32>)> = Vec::new();
        for &(c, r, _, hi) in &cands {
            if hi < tau {
                continue;
            }
            match kept.last_mut() {
                Some((lc, rs)) if *lc == c as usize => rs.push(r),
                _ => kept.push((c as usize, vec![r])),
            }
        }
        let rescored = kept.iter().map(|(_, r)| r.len()).sum();
        Ok(DenseSearch {
            hits: self.rescore(view, query, k, &kept),
            approximate: false,
            rescored,
        })
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
        Ok(self.rescore(view, query, k, &rows))
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
            return Ok(DenseSearch {
                hits: Vec::new(),
                approximate: false,
                rescored: 0,
            });
        }
        let ef = options.ef.unwrap_or(64).max(k);
        let q = QueryCodes::new(query);
        let search_unit = |u: &UnitRef| -> (Vec<(usize, Vec<u32>)>, bool) {
            // The unit's rows: chunk by chunk, in order.
            let chunks: Vec<usize> = (u.first..u.first + u.count).collect();
            let mut starts = Vec::with_capacity(chunks.len() + 1);
            let mut n = 0usize;
            for &c in &chunks {
                starts.push(n);
                n += view.part(c).map_or(0, |p| p.len());
            }
            starts.push(n);
            let in_filter: usize = match filter {
                None => n,
                Some(f) => chunks
                    .iter()
                    .map(|&c| view.part(c).map_or(0, |p| rows_in(p, Some(f.part(c))).len()))
                    .sum(),
            };
            if in_filter == 0 {
                return (Vec::new(), false);
            }
            let exact_rows = || -> Vec<(usize, Vec<u32>)> {
                chunks
                    .iter()
                    .filter_map(|&c| {
                        let p = view.part(c)?;
                        let rs = rows_in(p, filter.map(|f| f.part(c)));
                        (!rs.is_empty()).then_some((c, rs))
                    })
                    .collect()
            };
            if n < options.min_unit_rows || in_filter <= 4 * ef || in_filter.saturating_mul(16) < n {
                return (exact_rows(), false);
            }
            let locate = |row: u32| -> (usize, usize) {
                let i = starts.partition_point(|&s| s <= row as usize) - 1;
                (chunks[i], row as usize - starts[i])
            };
            let accept = |row: u32| {
                let (c, r) = locate(row);
                match (filter, view.part(c)) {
                    (None, _) => true,
                    (Some(f), Some(p)) => f.part(c).contains(p.rows()[r]),
                    (Some(_), None) => false,
                }
            };
            let dist = |row: u32| {
                let (c, r) = locate(row);
                match view.part(c) {
                    Some(p) => -(crate::dense::int8::dot_i16_i8(&q.codes, p.codes(r)) as f32 * p.scales[r]),
                    None => f32::INFINITY,
                }
            };
            let found = u.graph.search(ef, dist, accept);
            let mut out: Vec<(usize, Vec<u32>)> = Vec::new();
            let mut found: Vec<(usize, u32)> = found
                .into_iter()
                .map(|row| {
                    let (c, r) = locate(row);
                    (c, r as u32)
                })
                .collect();
            found.sort_unstable();
            for (c, r) in found {
                match out.last_mut() {
                    Some((lc, rs)) if *lc == c => rs.push(r),
                    _ => out.push((c, vec![r])),
                }
            }
            (out, true)
        };
        let per_unit: Vec<(Vec<(usize, Vec<u32>)>, bool)> = units.par_iter().map(search_unit).collect();
        let approximate = per_unit.iter().any(|(_, a)| *a);
        let rows: Vec<(usize, Vec<u32>)> = per_unit.into_iter().flat_map(|(r, _)| r).collect();
        let rescored = rows.iter().map(|(_, r)| r.len()).sum();
        Ok(DenseSearch {
            hits: self.rescore(view, query, k, &rows),
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
