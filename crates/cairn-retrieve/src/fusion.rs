//! Fusing the lanes' ranked lists into one.
//!
//! Methods, with lanes taken in name order (`dense:*` < `sparse:*` < `text`) so that each
//! node's sum is accumulated in the same order every time and is reproducible bit for bit:
//!
//! * **Score** (`score`, the default): the weighted mean of normalised lane scores,
//!   `score(x) = Σ_l w_l · n_l(s_l(x)) / Σ_l w_l` with `n_l(s) = (s − lo_l) / (hi_l −
//!   lo_l)` (1 for every hit if `hi_l == lo_l`). For the `text` and `sparse:*` lanes `lo_l`
//!   and `hi_l` are the lowest and best candidate scores (min-max: the best candidate gets
//!   1, the lowest 0). A `dense:*` lane's score is a **cosine** (the dot product of unit
//!   vectors, which embedding models give) and is taken as it is: `lo_l = min(0, lowest)`
//!   and `hi_l = max(1, best)` ([`COSINE_FLOOR`], [`COSINE_CEILING`]), so a candidate at
//!   cosine 0.62 adds 0.62 of the lane's weight whatever the other candidates score. A
//!   dense lane that is sure of its best match adds much more to it than one whose
//!   candidates are all middling.
//! * **Min-max** (`min_max`): the same weighted mean with every lane min-max-normalised,
//!   dense lanes included (the default before dense lanes were read as cosines; for dense
//!   vectors that are not unit length). Text weight [`MIN_MAX_TEXT_WEIGHT`] = 0.8.
//! * **DBSF** (`dbsf`): distribution-based score fusion, the same weighted mean over
//!   `n_l(s) = clamp((s − (μ_l − 3σ_l)) / 6σ_l, 0, 1)` (mean μ and population standard
//!   deviation σ of the lane's candidate scores; 1 for every hit if `σ = 0`).
//! * **RRF** (`rrf`): `score(x) = Σ_l 1 / (k + rank_l(x))`, ranks from 1 within each lane's
//!   candidate list. `k` defaults to [`DEFAULT_RRF_K`] = 60.
//! * **Weighted RRF** (`weighted_rrf`): `score(x) = Σ_l w_l / (k + rank_l(x))`.
//!
//! A node absent from a lane gets nothing from it (under the score-scale methods: the bottom
//! of the lane's scale, 0). A lane without an explicit weight weighs 1, except the `text`
//! lane: [`DEFAULT_TEXT_WEIGHT`] = 0.4 under `score`, [`MIN_MAX_TEXT_WEIGHT`] = 0.8 under
//! `min_max` and [`DBSF_TEXT_WEIGHT`] = 0.8 under `dbsf`. A lane that cannot run on the commit (`lane_unavailable`: no vectors of its
//! model) weighs 0, so the result is the query's without that lane.
//!
//! ## The fusion scale
//!
//! Under `score`, `min_max` and `dbsf` the fused score is a weighted *mean* of per-lane
//! scores that each lie in `[0, 1]`, so it lies in `[0, 1]` whatever the number of lanes
//! and weights: 1 is "the best candidate of every lane" (under `score`: at cosine 1 in
//! every dense lane). Each lane's term `w_l · n_l / Σ w` is what `explain` shows as its
//! contribution, and the terms sum to the fused score. The query planner's soft boosts ([`crate::planner`]) are added on
//! this scale as a share of its top ([`FusionMethod::scale_top`]: 1 here, `Σ_l w_l / (k +
//! 1)` under RRF) and appear as terms too. Graph expansion maps the fused score onto its
//! own `[0, α + β]` scale by a min-max over the competing window (see [`crate::expand`]);
//! `explain` shows that step as its [`ExpansionTerm`](crate::ExpansionTerm).
//!
//! ## Why `score`, with dense lanes as cosines, by default (measured)
//!
//! Dense MiniLM + BM25 (k1 = 0.9, b = 0.4, stemmed, question words dropped from the
//! query), depth 1000, `crates/cairn-eval/tests/eval_hybrid.rs`. Tuned on Cranfield and
//! CISI only; NPL (Vaswani) is the acceptance set, never tuned on. nDCG@10 / Recall@100:
//!
//! | fusion | Cranfield | CISI | Vaswani (acceptance) |
//! |---|---:|---:|---:|
//! | dense lane alone | 0.3998 / 0.7724 | 0.4192 / 0.4720 | 0.4335 / 0.6074 |
//! | text lane alone | 0.3780 / 0.7341 | 0.3799 / 0.4330 | 0.4475 / 0.6231 |
//! | RRF, k = 60 | 0.4349 / 0.7929 | 0.4440 / 0.5015 | 0.5147 / 0.6942 |
//! | score, min-max on every lane, text 0.8 (the previous default) | 0.4397 / 0.7948 | 0.4575 / 0.5072 | 0.5237 / 0.6998 |
//! | **score, dense as cosine, text 0.4 (the default)** | **0.4382 / 0.8014** | **0.4590 / 0.5064** | **0.5233 / 0.7053** |
//!
//! On the real embeddings the two score fusions are within 0.002 of each other. They
//! part when the dense lane is weak — a small embedding model on conversational agent
//! memory, where its neighbours are near-ties. Min-max stretches any lane's candidates
//! over the whole of `[0, 1]`, so a lane that is guessing weighs as much as one that is
//! sure, and the fusion can fall below the text lane alone. `weak_lane_fusion` (an ignored
//! test) measures it on the same collections with each query vector mixed with a seeded
//! random direction, `q' = normalise(q + σ·u)`; at σ = 3 the dense lane is at 42–60 % of
//! the text lane's nDCG@10:
//!
//! | σ = 3 | Cranfield | CISI | Vaswani |
//! |---|---:|---:|---:|
//! | dense lane alone | 0.2003 / 0.5711 | 0.2289 / 0.3268 | 0.1889 / 0.3094 |
//! | text lane alone | 0.3780 / 0.7341 | 0.3799 / 0.4330 | 0.4475 / 0.6231 |
//! | RRF, k = 60 | 0.3573 / 0.7447 | 0.3771 / 0.4461 | 0.3939 / 0.5872 |
//! | score, min-max, text 0.8 | 0.3670 / 0.7223 | 0.3836 / 0.4354 | 0.3916 / 0.5574 |
//! | **score, dense as cosine, text 0.4** | **0.3986 / 0.7593** | **0.4159 / 0.4533** | **0.4675 / 0.6408** |
//!
//! With dense lanes as cosines the fusion stays above the better lane on both metrics at
//! every σ measured (0, 0.8, 1.2, 2, 3). At σ = 3 RRF falls below the text lane on all
//! three collections, min-max on Cranfield and Vaswani (on CISI it stays 0.004 above on
//! nDCG@10). The text weight 0.4 is the best of 0.3 / 0.4 / 0.5 on Cranfield and CISI
//! together with the real embeddings (nDCG@10 0.4390 / 0.4548 at 0.3, 0.4382 / 0.4590 at
//! 0.4, 0.4379 / 0.4552 at 0.5), and within 0.003 of the best on each. A
//! variant that keeps the dense floor at the lowest candidate (`(s − lowest) / (1 −
//! lowest)`) measured within 0.01 of it but gives a lone candidate 0. These are
//! `min_max` and the dense-as-cosine `score`; the first table's two rows are those
//! methods in the pipeline (`default_fusion_never_loses_to_a_lane`). The older grid
//! (`fusion_grid`, `zscore_grid`): DBSF's ±3σ clamp saturates on Cranfield (0.3795–0.3879:
//! many BM25 hits stand more than 3σ above the lane's mean and all normalise to 1); a
//! z-score without the clamp is no better than min-max.
//!
//! A dense score is a dot product, a cosine only for unit vectors. Vectors of other
//! lengths still fuse: a best score above 1 becomes the top of the scale (a negative
//! lowest score its bottom); with vectors much shorter than 1 the dense lane adds little,
//! so give it a weight or normalise the vectors.
//!
//! Min-max needs a deep list for a meaningful minimum (the text lane's, and every lane's
//! under `min_max`), hence the default depth of 1000 for multi-lane queries (see [`RetrieveSpec::effective_depth`]).
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

/// The `text` lane's weight under the `score` method (the default) when none is given
/// (module docs); every other lane weighs 1.
pub const DEFAULT_TEXT_WEIGHT: f64 = 0.4;

/// The `text` lane's weight under the `dbsf` method when none is given.
pub const DBSF_TEXT_WEIGHT: f64 = 0.8;

/// The `text` lane's weight under the `min_max` method when none is given (its best on
/// Cranfield and CISI when it was the default).
pub const MIN_MAX_TEXT_WEIGHT: f64 = 0.8;

/// The top of a `dense:*` lane's scale under `score`: the cosine of identical directions.
/// A lane's best candidate scoring above it (vectors longer than 1) is the top instead.
pub const COSINE_CEILING: f64 = 1.0;

/// The bottom of a `dense:*` lane's scale under `score`: an unrelated (orthogonal) vector.
/// A lane's lowest candidate scoring below it is the bottom instead.
pub const COSINE_FLOOR: f64 = 0.0;

/// How many standard deviations either side of a lane's mean DBSF maps onto `[0, 1]`.
pub const DBSF_SIGMAS: f64 = 3.0;

/// How lanes are fused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FusionMethod {
    /// Reciprocal rank fusion, every lane weight 1.
    Rrf,
    /// Reciprocal rank fusion with a weight per lane.
    WeightedRrf,
    /// Weighted mean of min-max-normalised lane scores (the default).
    #[default]
    Score,
    /// Distribution-based score fusion: weighted mean of lane scores normalised by each
    /// lane's mean ± 3σ.
    Dbsf,
    /// Weighted mean of min-max-normalised scores on every lane, dense lanes included
    /// (for dense vectors that are not unit length).
    MinMax,
}

impl FusionMethod {
    /// The method's name in JSON (`rrf`, `weighted_rrf`, `score`, `dbsf`, `min_max`).
    pub fn name(self) -> &'static str {
        match self {
            FusionMethod::Rrf => "rrf",
            FusionMethod::WeightedRrf => "weighted_rrf",
            FusionMethod::Score => "score",
            FusionMethod::Dbsf => "dbsf",
            FusionMethod::MinMax => "min_max",
        }
    }

    /// True for the rank-based methods (`rrf`, `weighted_rrf`), which take `k`.
    pub fn is_rank_based(self) -> bool {
        matches!(self, FusionMethod::Rrf | FusionMethod::WeightedRrf)
    }

    /// The highest fused score the method can give with these lane weights (lane order):
    /// 1 for `score`, `min_max` and `dbsf` (a weighted mean of `[0, 1]` terms), `Σ w / (k + 1)` for
    /// weighted RRF and `lanes / (k + 1)` for RRF. Soft boosts are a share of it.
    ///
    /// ```
    /// use cairn_retrieve::FusionMethod;
    /// assert_eq!(FusionMethod::Score.scale_top(60.0, &[1.0, 0.8]), 1.0);
    /// assert_eq!(FusionMethod::Rrf.scale_top(60.0, &[1.0, 0.8]), 2.0 / 61.0);
    /// ```
    pub fn scale_top(self, k: f64, weights: &[f64]) -> f64 {
        match self {
            FusionMethod::Rrf => weights.len() as f64 / (k + 1.0),
            FusionMethod::WeightedRrf => weights.iter().sum::<f64>() / (k + 1.0),
            FusionMethod::Score | FusionMethod::Dbsf | FusionMethod::MinMax => 1.0,
        }
    }
}

/// Fusion settings. In JSON: `{"method": "score"|"min_max"|"dbsf"|"rrf"|"weighted_rrf", "k": 60,
/// "weights": {"dense:minilm": 1.0, "text": 0.5}}`, every field optional (`method`
/// defaults to `score`).
///
/// `k` applies to the RRF methods only and `weights` to every method but plain `rrf`;
/// `execute()` refuses a setting its method would ignore, a weight for a lane the query
/// does not have, and a negative or non-finite number.
///
/// ```
/// use cairn_retrieve::{Fusion, FusionMethod};
/// assert_eq!(Fusion::default().method, FusionMethod::Score);
/// let f = Fusion::weighted_rrf().k(30.0).weight("text", 0.5);
/// assert_eq!(f.method, FusionMethod::WeightedRrf);
/// assert_eq!(f.weights["text"], 0.5);
/// assert_eq!(Fusion::rrf().method, FusionMethod::Rrf);
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
    /// Weight per lane name; missing lanes weigh 1 (`text`: [`DEFAULT_TEXT_WEIGHT`] under
    /// `score`, [`MIN_MAX_TEXT_WEIGHT`] under `min_max`, [`DBSF_TEXT_WEIGHT`] under `dbsf`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub weights: BTreeMap<String, f64>,
}

impl Fusion {
    /// Plain RRF with `k` = 60.
    pub fn rrf() -> Fusion {
        Fusion::with_method(FusionMethod::Rrf)
    }

    /// Weighted RRF (set weights with [`Fusion::weight`]).
    pub fn weighted_rrf() -> Fusion {
        Fusion::with_method(FusionMethod::WeightedRrf)
    }

    /// Weighted mean of normalised scores (dense lanes as cosines, the others min-max),
    /// the default (text lane weight [`DEFAULT_TEXT_WEIGHT`] unless set).
    pub fn score() -> Fusion {
        Fusion::with_method(FusionMethod::Score)
    }

    /// Distribution-based score fusion (text lane weight [`DBSF_TEXT_WEIGHT`] unless set).
    pub fn dbsf() -> Fusion {
        Fusion::with_method(FusionMethod::Dbsf)
    }

    /// Min-max on every lane, dense lanes included (text lane weight
    /// [`MIN_MAX_TEXT_WEIGHT`] unless set): the default before dense lanes were read as
    /// cosines, for dense vectors that are not unit length.
    pub fn min_max() -> Fusion {
        Fusion::with_method(FusionMethod::MinMax)
    }

    /// Default settings for `method`.
    pub fn with_method(method: FusionMethod) -> Fusion {
        Fusion {
            method,
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
        let k = match (self.method.is_rank_based(), self.k) {
            (false, Some(_)) => {
                return Err(RetrieveError::invalid(
                    "fusion.k",
                    format!(
                        "`k` applies to methods `rrf` and `weighted_rrf` only (this fusion's method is `{}`)",
                        self.method.name()
                    ),
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
                "plain `rrf` ignores weights; use method `weighted_rrf`, `score`, `min_max` or `dbsf`",
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
            (FusionMethod::Dbsf, "text") => DBSF_TEXT_WEIGHT,
            (FusionMethod::MinMax, "text") => MIN_MAX_TEXT_WEIGHT,
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

/// How one lane's raw scores map onto `[0, 1]` under a score-scale method:
/// `n(s) = clamp((s − lo) / (hi − lo), 0, 1)`, or 1 for every hit if `hi ≤ lo`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LaneScale {
    lo: f64,
    hi: f64,
}

impl LaneScale {
    /// The scale of lane `lane`'s `hits` under `method` (unused, all-zero, for the RRF
    /// methods). Sums run in rank order, so the statistics are reproducible bit for bit.
    pub(crate) fn of(method: FusionMethod, lane: &str, hits: &[Hit]) -> LaneScale {
        let scores = || hits.iter().map(|h| f64::from(h.score));
        match method {
            FusionMethod::Rrf | FusionMethod::WeightedRrf => LaneScale { lo: 0.0, hi: 0.0 },
            FusionMethod::Score | FusionMethod::MinMax => {
                let (lo, hi) = scores().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| (lo.min(s), hi.max(s)));
                if method == FusionMethod::Score && lane.starts_with("dense:") {
                    return LaneScale {
                        lo: lo.min(COSINE_FLOOR),
                        hi: hi.max(COSINE_CEILING),
                    };
                }
                LaneScale { lo, hi }
            }
            FusionMethod::Dbsf => {
                if hits.is_empty() {
                    return LaneScale { lo: 0.0, hi: 0.0 };
                }
                let n = hits.len() as f64;
                let mean = scores().sum::<f64>() / n;
                let var = scores().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n;
                let sd = var.sqrt();
                LaneScale {
                    lo: mean - DBSF_SIGMAS * sd,
                    hi: mean + DBSF_SIGMAS * sd,
                }
            }
        }
    }

    /// The normalised score, in `[0, 1]`.
    pub(crate) fn normalise(&self, score: f32) -> f64 {
        if self.hi > self.lo {
            ((f64::from(score) - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
}

/// What a lane adds to a node's fused score: `weight / (k + rank)` under the RRF methods
/// (plain RRF passes weight 1), `weight / weight_sum · n(score)` under the score-scale ones.
pub(crate) fn contribution(
    method: FusionMethod,
    k: f64,
    weight: f64,
    weight_sum: f64,
    scale: &LaneScale,
    place: &LanePlace,
) -> f64 {
    match method {
        FusionMethod::Rrf => 1.0 / (k + place.rank as f64),
        FusionMethod::WeightedRrf => weight / (k + place.rank as f64),
        FusionMethod::Score | FusionMethod::Dbsf | FusionMethod::MinMax => {
            weight / weight_sum * scale.normalise(place.score)
        }
    }
}

/// The sum of `weights`, in lane order.
pub(crate) fn weight_sum(weights: &[f64]) -> f64 {
    weights.iter().sum()
}

/// Fuses `lanes` (sorted by name; `weights[i]` belongs to `lanes[i]`) into one list in
/// `(score desc, ordinal asc)` order. See the [module docs](self) for the formulas.
pub(crate) fn fuse(lanes: &[LaneHits], method: FusionMethod, k: f64, weights: &[f64]) -> Vec<Fused> {
    debug_assert!(lanes.windows(2).all(|w| w[0].name < w[1].name));
    debug_assert_eq!(lanes.len(), weights.len());
    let total = weight_sum(weights);
    // Every (ordinal, lane) contribution, in lane order; a stable sort by ordinal then
    // groups each node's contributions, still in lane order (the sum's fixed order).
    let mut entries: Vec<(Ordinal, f64, LanePlace)> = Vec::with_capacity(lanes.iter().map(|l| l.hits.len()).sum());
    for (li, lane) in lanes.iter().enumerate() {
        let scale = LaneScale::of(method, &lane.name, &lane.hits);
        for (i, hit) in lane.hits.iter().enumerate() {
            let place = LanePlace {
                lane: li,
                rank: i + 1,
                score: hit.score,
            };
            let c = contribution(method, k, weights[li], total, &scale, &place);
            entries.push((hit.ordinal, c, place));
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
            lane("sparse:m", &[(1, 0.9), (2, 0.5), (3, 0.1)]),
            lane("text", &[(3, 7.0)]),
        ];
        let f = fuse(&lanes, FusionMethod::Score, 60.0, &[1.0, 0.5]);
        // sparse: 1 → 1.0, 2 → 0.5, 3 → 0.0; text has one hit (max == min) → 1.0. Each
        // lane's term is weighted by its share of the weight sum 1.5.
        let (lo, hi) = (f64::from(0.1f32), f64::from(0.9f32));
        let d = |s: f32| 1.0 / 1.5 * ((f64::from(s) - lo) / (hi - lo));
        assert_eq!(scores(&f), vec![(1, d(0.9)), (2, d(0.5)), (3, d(0.1) + 0.5 / 1.5)]);
        assert_eq!(f[0].score, 1.0 / 1.5);
    }

    #[test]
    fn score_fusion_takes_a_dense_lane_as_cosines() {
        // A sure dense lane (best cosine 0.9) and a guessing one (every candidate near
        // 0.3): min-max would give both bests 1; as cosines they keep what they say.
        let sure = lane("dense:m", &[(1, 0.9), (2, 0.5), (3, 0.1)]);
        let guessing = lane("dense:m", &[(1, 0.31), (2, 0.30), (3, 0.29)]);
        let n = |l: &LaneHits, s: f32| LaneScale::of(FusionMethod::Score, &l.name, &l.hits).normalise(s);
        assert_eq!(n(&sure, 0.9), f64::from(0.9f32));
        assert_eq!(n(&sure, 0.1), f64::from(0.1f32));
        assert_eq!(n(&guessing, 0.31), f64::from(0.31f32));
        // With the text lane, the guessing lane leaves the order to the text lane.
        let text = lane("text", &[(3, 9.0), (2, 5.0), (1, 1.0)]);
        let f = fuse(&[guessing, text], FusionMethod::Score, 60.0, &[1.0, 0.4]);
        assert_eq!(f.iter().map(|x| x.ordinal).collect::<Vec<_>>(), vec![3, 2, 1]);
        // A lone candidate gets its cosine (min-max would give it 1).
        let one = lane("dense:m", &[(7, 0.5)]);
        assert_eq!(n(&one, 0.5), 0.5);
        // Vectors of other lengths: a best above 1 and a lowest below 0 bound the scale.
        let long = lane("dense:m", &[(1, 4.0), (2, -2.0)]);
        assert_eq!(n(&long, 4.0), 1.0);
        assert_eq!(n(&long, -2.0), 0.0);
        assert_eq!(n(&long, 1.0), 0.5);
        // Sparse and text lanes stay min-max.
        let sparse = lane("sparse:m", &[(1, 0.31), (2, 0.29)]);
        assert_eq!(n(&sparse, 0.31), 1.0);
        assert_eq!(n(&sparse, 0.29), 0.0);
    }

    #[test]
    fn min_max_normalises_dense_lanes_too() {
        let lanes = [
            lane("dense:m", &[(1, 0.31), (2, 0.30), (3, 0.29)]),
            lane("text", &[(3, 9.0), (2, 5.0)]),
        ];
        let f = fuse(&lanes, FusionMethod::MinMax, 60.0, &[1.0, 0.8]);
        let n = |s: f32| (f64::from(s) - f64::from(0.29f32)) / (f64::from(0.31f32) - f64::from(0.29f32));
        // The guessing dense lane's best gets 1, as the text lane's best does, and wins.
        assert_eq!(
            scores(&f),
            vec![(1, 1.0 / 1.8), (3, 0.8 / 1.8), (2, 1.0 / 1.8 * n(0.30) + 0.0)]
        );
        // Under `score` the text lane's best leads (the dense lane adds ~0.3 to each).
        let s = fuse(&lanes, FusionMethod::Score, 60.0, &[1.0, 0.8]);
        assert_eq!(s.iter().map(|x| x.ordinal).collect::<Vec<_>>(), vec![3, 1, 2]);
        assert_eq!(
            Fusion::min_max().resolve(&["dense:m".into(), "text".into()]).unwrap().1,
            vec![1.0, MIN_MAX_TEXT_WEIGHT]
        );
    }

    #[test]
    fn dbsf_by_hand() {
        // dense: mean 0.5, σ = sqrt(((0.4)² + 0 + (0.4)²)/3); text: one hit (σ = 0) → 1.
        let lanes = [
            lane("dense:m", &[(1, 0.9), (2, 0.5), (3, 0.1)]),
            lane("text", &[(3, 7.0)]),
        ];
        let f = fuse(&lanes, FusionMethod::Dbsf, 60.0, &[1.0, 1.0]);
        let xs = [0.9f32, 0.5, 0.1].map(f64::from);
        let mean = xs.iter().sum::<f64>() / 3.0;
        let sd = (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 3.0).sqrt();
        let (lo, hi) = (mean - 3.0 * sd, mean + 3.0 * sd);
        let n = |s: f32| ((f64::from(s) - lo) / (hi - lo)).clamp(0.0, 1.0);
        assert_eq!(
            scores(&f),
            vec![(3, 0.5 * n(0.1) + 0.5), (1, 0.5 * n(0.9)), (2, 0.5 * n(0.5))]
        );
        // Every fused score stays on the unit scale.
        assert!(f.iter().all(|x| (0.0..=1.0).contains(&x.score)));
    }

    #[test]
    fn dbsf_clamps_outliers_and_ties_by_ordinal() {
        // 9 equal scores and one far outlier: the outlier clamps to 1, the rest sit at
        // the same normalised value and tie, broken by ordinal.
        let mut hits: Vec<(Ordinal, f32)> = (10..19).rev().map(|o| (o, 1.0)).collect();
        hits.insert(0, (50, 100.0));
        let scale = LaneScale::of(FusionMethod::Dbsf, "text", &lane("text", &hits).hits);
        assert_eq!(scale.normalise(100.0), 1.0);
        assert_eq!(scale.normalise(-1e9), 0.0);
        let f = fuse(&[lane("text", &hits)], FusionMethod::Dbsf, 60.0, &[1.0]);
        assert_eq!(f[0].ordinal, 50);
        let rest: Vec<Ordinal> = f[1..].iter().map(|x| x.ordinal).collect();
        assert_eq!(rest, (10..19).collect::<Vec<_>>());
    }

    #[test]
    fn scale_top_bounds_every_method() {
        let lanes = [
            lane("dense:m", &[(1, 1.0), (2, 0.5), (3, 0.1)]),
            lane("text", &[(1, 7.0), (4, 3.0)]),
        ];
        for method in [
            FusionMethod::Rrf,
            FusionMethod::WeightedRrf,
            FusionMethod::Score,
            FusionMethod::Dbsf,
            FusionMethod::MinMax,
        ] {
            let w = [1.0, 0.8];
            let f = fuse(&lanes, method, 60.0, &w);
            let top = method.scale_top(60.0, &w);
            assert!(f[0].score <= top + 1e-12, "{method:?}");
            if method != FusionMethod::Dbsf {
                // Node 1 tops both lanes, at cosine 1 in the dense one: the top of the
                // scale. (Under DBSF a lane's best reaches 1 only if it stands 3σ above
                // the lane's mean.)
                assert!((f[0].score - top).abs() < 1e-12, "{method:?}");
            }
        }
    }

    #[test]
    fn empty_lanes_fuse_to_nothing() {
        assert!(fuse(&[lane("text", &[])], FusionMethod::Rrf, 60.0, &[1.0]).is_empty());
    }

    #[test]
    fn resolve_checks_settings() {
        let lanes = vec!["dense:m".to_string(), "text".to_string()];
        let field = |f: Fusion| match f.resolve(&lanes) {
            Err(RetrieveError::InvalidSetting { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(Fusion::rrf().resolve(&lanes).unwrap(), (60.0, vec![1.0, 1.0]));
        assert_eq!(Fusion::default(), Fusion::score());
        assert_eq!(
            Fusion::default().resolve(&lanes).unwrap(),
            (60.0, vec![1.0, DEFAULT_TEXT_WEIGHT])
        );
        assert_eq!(field(Fusion::dbsf().k(3.0)), "fusion.k");
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
