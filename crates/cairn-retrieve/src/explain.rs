//! Why an item ranked where it did (`explain`): each lane's rank and score and what it
//! added to the fused score, the gates every item passed, and for an item reached by
//! graph expansion the path from its seed with the kind and direction of every edge.
//! Computed only when asked for; it never changes the ranking.

use cairn_index::{AdjacentEdge, CommitIndexes, Ordinal};
use serde::{Deserialize, Serialize};

use crate::fusion::{contribution, weight_sum, FusionMethod, LaneHits, LanePlace, LaneScale};
use crate::gates::GateSpec;

/// An item's explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The fusion: `dbsf (mean ± 3σ)`, `score (dense as cosine, others min-max)`, `min_max`, `rrf (k = 60)` or
    /// `weighted_rrf (k = 60)`.
    pub fusion: String,
    /// One term per lane that found the item, in lane order, then one per soft boost the
    /// query planner gave it; their contributions sum to the fused score (before
    /// expansion or reranking), on the scale of [`crate::fusion`].
    pub terms: Vec<FusionTerm>,
    /// With graph expansion on, how the fused score became the item's score (see
    /// [`crate::expand`]); `None` without expansion, where the item's score is the sum
    /// of `terms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expansion: Option<ExpansionTerm>,
    /// The gates every item passed (labels, properties, validity time).
    pub gates: Vec<String>,
    /// For an item reached by graph expansion: the steps from its seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<PathStep>>,
}

/// What one lane (or one soft boost) contributed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FusionTerm {
    /// The lane, or `boost:<kind>` for a planner's soft boost (e.g. `boost:time`).
    pub lane: String,
    /// The item's rank in the lane (1-based); 0 for a boost.
    pub rank: usize,
    /// The lane's own score for the item; for a boost, the boost's strength in `[0, 1]`.
    pub lane_score: f32,
    /// The lane's weight; for a boost, the share of the scale's top it may add.
    pub weight: f64,
    /// What the term added to the fused score: `weight / Σ weights · n(score)` under
    /// `dbsf` and `score`, `weight / (k + rank)` under RRF, `weight · scale top ·
    /// strength` for a boost.
    pub contribution: f64,
}

/// How graph expansion turned an item's fused score into its score (see
/// [`crate::expand`]): a fused candidate scores `alpha · normalised + beta`; a node
/// reached over edges scores `alpha · seed_normalised · γ^d + beta · e^{−d/τ}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpansionTerm {
    /// The fused score min-max normalised over the competing window (the top
    /// `limit + max_nodes` fused candidates): the item's own for a candidate kept as
    /// is, its seed's for an item scored by a path.
    pub normalised: f64,
    /// Edges from the seed (0 for a candidate scored as itself).
    pub distance: u32,
    /// The item's score on the expansion scale `[0, α + β]`.
    pub score: f64,
}

/// One edge of an expansion path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathStep {
    /// The node walked from.
    pub from: String,
    /// The edge's kind (`?` if the commit's edges no longer tell).
    pub kind: String,
    /// `out` if the edge goes from `from` to `to`, `in` if it comes from `to`.
    pub direction: String,
    /// The node walked to.
    pub to: String,
}

/// What the explanation needs from the plan, the same for every item.
pub(crate) struct Context<'a> {
    pub indexes: &'a CommitIndexes,
    pub method: FusionMethod,
    pub rrf_k: f64,
    pub weights: &'a [f64],
    pub lane_names: &'a [&'a str],
    pub gates: Vec<String>,
    /// Each lane's normalisation (score-scale methods).
    pub scales: Vec<LaneScale>,
}

impl Context<'_> {
    /// The gates as lines.
    pub(crate) fn gate_lines(spec: &GateSpec) -> Vec<String> {
        let mut out = Vec::new();
        if !spec.labels_all.is_empty() {
            out.push(format!("labels, all of: {}", spec.labels_all.join(", ")));
        }
        if !spec.labels_any.is_empty() {
            out.push(format!("labels, any of: {}", spec.labels_any.join(", ")));
        }
        for (key, _) in &spec.predicates {
            out.push(format!("property `{key}` matches its clause"));
        }
        match spec.valid_at_ms {
            Some(t) => out.push(format!("valid at {t} ms")),
            None => out.push("validity: all time".into()),
        }
        out
    }

    /// The lanes' normalisations under `method`, for [`Context::scales`].
    pub(crate) fn scales_of(method: FusionMethod, lanes: &[LaneHits]) -> Vec<LaneScale> {
        lanes.iter().map(|l| LaneScale::of(method, &l.name, &l.hits)).collect()
    }

    /// The explanation of one item: its lane terms, then `boosts` (already terms).
    pub(crate) fn explain(
        &self,
        places: &[LanePlace],
        boosts: Vec<FusionTerm>,
        expansion: Option<ExpansionTerm>,
        path: Option<&[Ordinal]>,
    ) -> Explanation {
        let fusion = match self.method {
            FusionMethod::Rrf => format!("rrf (k = {})", self.rrf_k),
            FusionMethod::WeightedRrf => format!("weighted_rrf (k = {})", self.rrf_k),
            FusionMethod::Score => "score (dense as cosine, others min-max)".to_string(),
            FusionMethod::Dbsf => "dbsf (mean ± 3σ)".to_string(),
            FusionMethod::MinMax => "min_max".to_string(),
        };
        let total = weight_sum(self.weights);
        let mut terms: Vec<FusionTerm> = places
            .iter()
            .map(|p| {
                // Plain RRF weighs every lane 1, as the fusion does.
                let weight = match self.method {
                    FusionMethod::Rrf => 1.0,
                    _ => self.weights[p.lane],
                };
                FusionTerm {
                    lane: self.lane_names[p.lane].to_string(),
                    rank: p.rank,
                    lane_score: p.score,
                    weight,
                    contribution: contribution(self.method, self.rrf_k, weight, total, &self.scales[p.lane], p),
                }
            })
            .collect();
        terms.extend(boosts);
        Explanation {
            fusion,
            terms,
            gates: self.gates.clone(),
            expansion,
            path: path.map(|p| self.steps(p)),
        }
    }

    fn steps(&self, path: &[Ordinal]) -> Vec<PathStep> {
        let mut adjacent: Vec<AdjacentEdge> = Vec::new();
        path.windows(2)
            .map(|w| {
                let (a, b) = (w[0], w[1]);
                let mut kind = "?".to_string();
                let mut direction = "?";
                for (dir, outgoing) in [("out", true), ("in", false)] {
                    adjacent.clear();
                    if outgoing {
                        self.indexes.outgoing(a, &mut adjacent);
                    } else {
                        self.indexes.incoming(a, &mut adjacent);
                    }
                    if let Some(e) = adjacent.iter().find(|e| e.other == b) {
                        kind = self
                            .indexes
                            .edge_kinds()
                            .get(e.kind as usize)
                            .cloned()
                            .unwrap_or_else(|| "?".into());
                        direction = dir;
                        break;
                    }
                }
                PathStep {
                    from: self.indexes.id(a).to_string(),
                    kind,
                    direction: direction.to_string(),
                    to: self.indexes.id(b).to_string(),
                }
            })
            .collect()
    }
}
