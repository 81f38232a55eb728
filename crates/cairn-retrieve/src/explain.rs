//! Why an item ranked where it did (`explain`): each lane's rank and score and what it
//! added to the fused score, the gates every item passed, and for an item reached by
//! graph expansion the path from its seed with the kind and direction of every edge.
//! Computed only when asked for; it never changes the ranking.

use cairn_index::{AdjacentEdge, CommitIndexes, Ordinal};
use serde::{Deserialize, Serialize};

use crate::fusion::{FusionMethod, LaneHits, LanePlace};
use crate::gates::GateSpec;

/// An item's explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The fusion: `rrf (k = 60)`, `weighted_rrf (k = 60)` or `score (min-max)`.
    pub fusion: String,
    /// One term per lane that found the item, in lane order; their contributions sum to
    /// the fused score (before expansion or reranking).
    pub terms: Vec<FusionTerm>,
    /// The gates every item passed (labels, properties, validity time).
    pub gates: Vec<String>,
    /// For an item reached by graph expansion: the steps from its seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<PathStep>>,
}

/// What one lane contributed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FusionTerm {
    /// The lane.
    pub lane: String,
    /// The item's rank in the lane (1-based).
    pub rank: usize,
    /// The lane's own score for the item.
    pub lane_score: f32,
    /// The lane's weight.
    pub weight: f64,
    /// What the lane added to the fused score: `weight / (k + rank)` for RRF,
    /// `weight · (score − min) / (max − min)` for score fusion.
    pub contribution: f64,
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
    pub lanes: &'a [LaneHits],
    pub lane_names: &'a [&'a str],
    pub gates: Vec<String>,
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

    /// The explanation of one item.
    pub(crate) fn explain(&self, places: &[LanePlace], path: Option<&[Ordinal]>) -> Explanation {
        let fusion = match self.method {
            FusionMethod::Rrf => format!("rrf (k = {})", self.rrf_k),
            FusionMethod::WeightedRrf => format!("weighted_rrf (k = {})", self.rrf_k),
            FusionMethod::Score => "score (min-max)".to_string(),
        };
        let terms = places
            .iter()
            .map(|p| {
                // Plain RRF weighs every lane 1, as the fusion does.
                let weight = match self.method {
                    FusionMethod::Rrf => 1.0,
                    _ => self.weights[p.lane],
                };
                let contribution = match self.method {
                    FusionMethod::Rrf | FusionMethod::WeightedRrf => weight / (self.rrf_k + p.rank as f64),
                    FusionMethod::Score => {
                        let hits = &self.lanes[p.lane].hits;
                        let (min, max) = hits.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), h| {
                            (lo.min(f64::from(h.score)), hi.max(f64::from(h.score)))
                        });
                        if max > min {
                            weight * (f64::from(p.score) - min) / (max - min)
                        } else {
                            weight
                        }
                    }
                };
                FusionTerm {
                    lane: self.lane_names[p.lane].to_string(),
                    rank: p.rank,
                    lane_score: p.score,
                    weight,
                    contribution,
                }
            })
            .collect();
        Explanation {
            fusion,
            terms,
            gates: self.gates.clone(),
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
