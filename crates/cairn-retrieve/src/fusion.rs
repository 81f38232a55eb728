//! Fusing the lanes' ranked lists into one: reciprocal rank fusion with k = 60 (the
//! default), weighted reciprocal rank fusion, or a weighted sum of min-max-normalised
//! scores.
//!
//! Formulas, with lanes taken in name order (`dense:*` < `sparse:*` < `text`) so that each
//! node's sum is accumulated in the same order every time and is reproducible bit for bit:
//!
//! * **Score** (`score`): `score(n) = Σ_l w_l · (s_l(n) − min_l) / (max_l − min_l)`
//!   over each lane's candidate list; if `max_l == min_l` every hit of the lane normalises
//!   to 1. A node absent from a lane gets nothing from it.
//! * **RRF** (`rrf`, the default): `score(n) = Σ_l 1 / (k + rank_l(n))`, ranks from 1 within each lane's
//!   candidate list. `k` defaults to [`DEFAULT_RRF_K`] = 60.
//! * **Weighted RRF** (`weighted_rrf`): `score(n) = Σ_l w_l / (k + rank_l(n))`.
//!
//! A lane without an explicit weight weighs 1, except the `text` lane under `score`, which
//! weighs [`DEFAULT_TEXT_WEIGHT`] = 0.8.
//!
//! ## Measured (`tests/eval_hybrid.rs`)
//!
//! RRF with k = 60 is the default: rank-based, it needs no score calibration between
//! lanes and is what agent frameworks expect. Score fusion with the text lane weighted 0.8
//! measured better on both tuning collections; ask for it with `Fusion::score()` (the
//! `cairn eval` command reports both).
//!
//! Tuned on Cranfield and CISI only (NPL/Vaswani is kept for acceptance), dense MiniLM +
//! BM25 (k1 = 0.9, b = 0.4, stemmed), nDCG@10:
//!
//! | fusion | Cranfield | CISI |
//! |---|---:|---:|
//! | RRF, k = 60 | 0.4295 | 0.4481 |
//! | score, text 1.0, depth 1000 | 0.4321 | 0.4531 |
//! | **score, text 0.8, depth 1000** | **0.4383** | **0.4525** |
//! | score, text 0.8, depth 100 | 0.4369 | 0.4425 |
//! | README best RRF row (either BM25 setting) | 0.4370 | 0.4483 |
//!
//! Min-max normalisation needs a deep list for a meaningful minimum, hence the default
//! depth of 1000 for multi-lane queries (see [`RetrieveSpec::effective_depth`]); RRF does
//! not care about depth but leaves Cranfield below its reference row. Text weights 0.5–0.85
//! all pass both references at depth 700–1000; 0.8 has the widest margin.
//!
//! The fused list is ordered by `(score desc, ordinal asc)` — ordinal order is node-id
//! order, so ties go to the smaller node id.
//!
//! [`RetrieveSpec::effective_depth`]: crate::RetrieveSpec::effective_depth

use std::collections::BTreeMap;

use cairn_index::{Hit, Ordinal};
use serde::{Deserialize, Serialize};

use crate::error::RetrieveError;

/// The RRF constant when none is given.
pub const DEFAULT_RRF_K: f64 = 60.0;

/// The `text` lane's weight under the `score` method when none is given (module docs).
pub const DEFAULT_TEXT_WEIGHT: f64 = 0.8;

/// How lanes are fused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionMethod {
    /// Reciprocal rank fusion, every lane weight 1 (the default).
    #[default]
    Rrf,
    /// Reciprocal rank fusion with a weight per lane.
    WeightedRrf,
    /// Weighted sum of min-max-normalised lane scores.
    Score,
}

/// Fusion settings. In JSON: `{"method": "score"|"rrf"|"weighted_rrf", "k": 60,
/// "weights": {"dense:minilm": 1.0, "text": 0.5}}`, every field optional (`method`
/// defaults to `rrf`).
///
/// `k` applies to the RRF methods only and `weights` to `weighted_rrf` and `score` only;
/// `execute()` refuses a setting its method would ignore, a weight for a lane the query
/// does not have, and a negative or non-finite number.
///
/// ```
/// use cairn_retrieve::{Fusion, FusionMethod};
/// let f = Fusion::weighted_rrf().k(30.0).weight("text", 0.5);
/// assert_eq!(f.method, FusionMethod::WeightedRrf);
/// assert_eq!(f.weights["text"], 0.5);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fusion {
    /// The method.
    #[serde(default)]
    pub method: FusionMethod,
    /// RRF constant (default [`DEFAULT_RRF_K`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<f64>,
    /// Weight per lane name; missing lanes weigh 1 (`text` under `score`: 0.8).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub weights: BTreeMap<String, f64>,
}

impl Fusion {
    /// Plain RRF with `k` = 60 (the default).
    pub fn rrf() -> Fusion {
        Fusion::default()
    }

    /// Weighted RRF (set weights with [`Fusion::weight`]).
    pub fn weighted_rrf() -> Fusion {
        Fusion {
            method: FusionMethod::WeightedRrf,
            ..Fusion::default()
        }
    }

    /// Weighted sum of min-max-normalised scores (text lane weight 0.8 unless set).
    pub fn score() -> Fusion {
        Fusion {
            method: FusionMethod::Score,
            ..Fusion::default()
        }
    }

    /// Sets the RRF constant.
    pub fn k(mut self, k: f64) -> Fusion {
        self.k = Some(k);
        self
    }

    /// Sets the weight of a lane (`dense:<model>`, `sparse:<model>` or `text`).
    pub fn weight(mut self, lane: impl Into<String>, weight: f64) -> Fusion {
        self.weights.insert(lane.into(), weight);
        self
    }

    /// Checks the settings against the query's lanes (sorted names) and returns the
    /// resolved `(k, weight per lane)`.
    pub(crate) fn resolve(&self, lanes: &[String]) -> Result<(f64, Vec<f64>), RetrieveError> {
        let k = match (self.method, self.k) {
            (FusionMethod::Score, Some(_)) => {
                return Err(RetrieveError::invalid(
                    "fusion.k",
                    "`k` applies to methods `rrf` and `weighted_rrf` only (this fusion's method is `score`)",
                ))
            }
            (_, Some(k)) if !(k.is_finite() && k >= 0.0) => {
                return Err(RetrieveError::invalid(
                    "fusion.k",
                    format!("must be a finite number ≥ 0, got {k}"),
                ))
            }
            (_, k) => k.unwrap_or(DEFAULT_RRF_K),
        };
        if self.method == FusionMethod::Rrf && !self.weights.is_empty() {
            return Err(RetrieveError::invalid(
                "fusion.weights",
                "plain `rrf` ignores weights; use method `weighted_rrf` or `score`",
            ));
        }
        for (lane, w) in &self.weights {
            if !lanes.contains(lane) {
                return Err(RetrieveError::invalid(
                    format!("fusion.weights.{lane}"),
                    format!("the query has no lane `{lane}` (its lanes: {})", lanes.join(", ")),
                ));
            }
            if !(w.is_finite() && *w >= 0.0) {
                return Err(RetrieveError::invalid(
                    format!("fusion.weights.{lane}"),
                    format!("must be a finite number ≥ 0, got {w}"),
                ));
            }
        }
        let default_weight = |lane: &str| match (self.method, lane) {
            (FusionMethod::Score, "text") => DEFAULT_TEXT_WEIGHT,
            _ => 1.0,
        };
        let weights: Vec<f64> = lanes
            .iter()
            .map(|l| self.weights.get(l).copied().unwrap_or_else(|| default_weight(l)))
            .collect();
        if !weights.iter().any(|w| *w > 0.0) {
            return Err(RetrieveError::invalid(
                "fusion.weights",
                "at least one lane needs a weight above 0",
            ));
        }
        Ok((k, weights))
    }
}

/// One lane's ranked candidates, best first, in `(score desc, ordinal asc)` order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LaneHits {
    /// Lane name.
    pub name: String,
    /// Candidates.
    pub hits: Vec<Hit>,
}

/// A node's place in one lane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LanePlace {
    /// Index of the lane in the fused lane list.
    pub lane: usize,
    /// 1-based rank within the lane.
    pub rank: usize,
    /// The lane's raw score.
    pub score: f32,
}

/// A fused candidate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fused {
    /// The node.
    pub ordinal: Ordinal,
    /// Fused score.
    pub score: f64,
    /// Its place in each lane that found it, in lane order.
    pub lanes: Vec<LanePlace>,
}

/// Fuses `lanes` (sorted by name; `weights[i]` belongs to `lanes[i]`) into one list in
/// `(score desc, ordinal asc)` order. See the [module docs](self) for the formulas.
pub(crate) fn fuse(lanes: &[LaneHits], method: FusionMethod, k: f64, weights: &[f64]) -> Vec<Fused> {
    debug_assert!(lanes.windows(2).all(|w| w[0].name < w[1].name));
    debug_assert_eq!(lanes.len(), weights.len());
    // Every (ordinal, lane) contribution, in lane order; a stable sort by ordinal then
    // groups each node's contributions, still in lane order (the sum's fixed order).
    let mut entries: Vec<(Ordinal, f64, LanePlace)> = Vec::with_capacity(lanes.iter().map(|l| l.hits.len()).sum());
    for (li, lane) in lanes.iter().enumerate() {
        let w = match method {
            FusionMethod::Rrf => 1.0,
            _ => weights[li],
        };
        let (min, max) = lane
            .hits
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), h| {
                (lo.min(f64::from(h.score)), hi.max(f64::from(h.score)))
            });
        for (i, hit) in lane.hits.iter().enumerate() {
            let rank = i + 1;
            let contribution = match method {
                FusionMethod::Rrf | FusionMethod::WeightedRrf => w / (k + rank as f64),
                FusionMethod::Score => {
                    let normalised = if max > min {
                        (f64::from(hit.score) - min) / (max - min)
                    } else {
                        1.0
                    };
                    w * normalised
                }
            };
            entries.push((
                hit.ordinal,
                contribution,
                LanePlace {
                    lane: li,
                    rank,
                    score: hit.score,
                },
            ));
        }
    }
    entries.sort_by_key(|e| e.0);
    let mut fused: Vec<Fused> = Vec::with_capacity(entries.len());
    for group in entries.chunk_by(|a, b| a.0 == b.0) {
        let mut f = Fused {
            ordinal: group[0].0,
            score: 0.0,
            lanes: Vec::with_capacity(group.len()),
        };
        for (_, contribution, place) in group {
            f.score += contribution;
            f.lanes.push(*place);
        }
        fused.push(f);
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.ordinal.cmp(&b.ordinal)));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(name: &str, hits: &[(Ordinal, f32)]) -> LaneHits {
        LaneHits {
            name: name.into(),
            hits: hits.iter().map(|&(ordinal, score)| Hit { ordinal, score }).collect(),
        }
    }

    fn scores(f: &[Fused]) -> Vec<(Ordinal, f64)> {
        f.iter().map(|x| (x.ordinal, x.score)).collect()
    }

    #[test]
    fn rrf_by_hand() {
        let lanes = [
            lane("dense:m", &[(4, 0.9), (2, 0.8), (7, 0.1)]),
            lane("text", &[(2, 12.0), (9, 3.0)]),
        ];
        let f = fuse(&lanes, FusionMethod::Rrf, 60.0, &[1.0, 1.0]);
        // 2: 1/62 + 1/61; 4: 1/61; 9: 1/62; 7: 1/63.
        assert_eq!(
            scores(&f),
            vec![
                (2, 1.0 / 62.0 + 1.0 / 61.0),
                (4, 1.0 / 61.0),
                (9, 1.0 / 62.0),
                (7, 1.0 / 63.0)
            ]
        );
        assert_eq!(
            f[0].lanes,
            vec![
                LanePlace {
                    lane: 0,
                    rank: 2,
                    score: 0.8
                },
                LanePlace {
                    lane: 1,
                    rank: 1,
                    score: 12.0
                }
            ]
        );
    }

    #[test]
    fn rrf_ties_go_to_the_smaller_ordinal() {
        let lanes = [
            lane("dense:m", &[(5, 1.0), (3, 0.5)]),
            lane("text", &[(3, 1.0), (5, 0.5)]),
        ];
        let f = fuse(&lanes, FusionMethod::Rrf, 60.0, &[1.0, 1.0]);
        assert_eq!(f[0].score, f[1].score);
        assert_eq!((f[0].ordinal, f[1].ordinal), (3, 5));
    }

    #[test]
    fn weighted_rrf_and_k() {
        let lanes = [
            lane("dense:m", &[(1, 0.9), (2, 0.8)]),
            lane("text", &[(2, 5.0), (1, 4.0)]),
        ];
        let f = fuse(&lanes, FusionMethod::WeightedRrf, 10.0, &[2.0, 1.0]);
        assert_eq!(
            scores(&f),
            vec![(1, 2.0 / 11.0 + 1.0 / 12.0), (2, 2.0 / 12.0 + 1.0 / 11.0)]
        );
        // Plain RRF ignores the weights it is handed.
        let p = fuse(&lanes, FusionMethod::Rrf, 10.0, &[2.0, 1.0]);
        assert_eq!(p[0].score, 1.0 / 11.0 + 1.0 / 12.0);
    }

    #[test]
    fn score_fusion_min_max() {
        let lanes = [
            lane("dense:m", &[(1, 0.9), (2, 0.5), (3, 0.1)]),
            lane("text", &[(3, 7.0)]),
        ];
        let f = fuse(&lanes, FusionMethod::Score, 60.0, &[1.0, 0.5]);
        // dense: 1 → 1.0, 2 → 0.5, 3 → 0.0; text has one hit (max == min) → 1.0 · 0.5.
        let (lo, hi) = (f64::from(0.1f32), f64::from(0.9f32));
        let d = |s: f32| (f64::from(s) - lo) / (hi - lo);
        assert_eq!(scores(&f), vec![(1, d(0.9)), (2, d(0.5)), (3, d(0.1) + 0.5)]);
    }

    #[test]
    fn empty_lanes_fuse_to_nothing() {
        assert!(fuse(&[lane("text", &[])], FusionMethod::Rrf, 60.0, &[1.0]).is_empty());
    }

    #[test]
    fn resolve_checks_settings() {
        let lanes = vec!["dense:m".to_string(), "text".to_string()];
        assert_eq!(Fusion::rrf().resolve(&lanes).unwrap(), (60.0, vec![1.0, 1.0]));
        assert_eq!(Fusion::default(), Fusion::rrf());
        assert_eq!(
            Fusion::score().resolve(&lanes).unwrap(),
            (60.0, vec![1.0, DEFAULT_TEXT_WEIGHT])
        );
        assert_eq!(
            Fusion::score().weight("text", 0.5).resolve(&lanes).unwrap(),
            (60.0, vec![1.0, 0.5])
        );
        assert_eq!(
            Fusion::weighted_rrf()
                .k(5.0)
                .weight("text", 0.5)
                .resolve(&lanes)
                .unwrap(),
            (5.0, vec![1.0, 0.5])
        );
        let field = |f: Fusion| match f.resolve(&lanes) {
            Err(RetrieveError::InvalidSetting { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(Fusion::rrf().weight("text", 2.0)), "fusion.weights");
        assert_eq!(field(Fusion::score().k(3.0)), "fusion.k");
        assert_eq!(field(Fusion::rrf().k(-1.0)), "fusion.k");
        assert_eq!(field(Fusion::rrf().k(f64::NAN)), "fusion.k");
        assert_eq!(
            field(Fusion::score().weight("sparse:x", 1.0)),
            "fusion.weights.sparse:x"
        );
        assert_eq!(
            field(Fusion::score().weight("text", f64::INFINITY)),
            "fusion.weights.text"
        );
        assert_eq!(
            field(Fusion::score().weight("text", 0.0).weight("dense:m", 0.0)),
            "fusion.weights"
        );
    }
}
