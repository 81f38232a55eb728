//! [`RetrievalResult`]: what a retrieval returns, serializable to JSON with a stable field
//! order (declaration order; maps sorted by key).

use std::collections::BTreeMap;

use cairn_core::{CommitId, NodeId, Value};
use serde::{Deserialize, Serialize};

/// The result of one retrieval.
///
/// Same commit + same spec (+ the same plugins) ⇒ byte-identical JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalResult {
    /// The commit read; `None` only when the current branch has no commits yet (the
    /// answer is then empty, with a [`WarningCode::EmptyRepository`] warning).
    pub commit: Option<CommitId>,
    /// The validity time applied (ms since the epoch), `None` with `all_time`.
    pub valid_at: Option<i64>,
    /// The packed items, best first.
    pub items: Vec<RetrievedItem>,
    /// Sum of the items' token estimates.
    pub tokens_used: usize,
    /// The token budget, `None` if unlimited: the spec's `token_budget`, under the same
    /// name (earlier versions wrote `tokens_budget`; that name is still read).
    #[serde(alias = "tokens_budget")]
    pub token_budget: Option<usize>,
    /// Items skipped because they did not fit the budget, counted over the ranked list
    /// from the top until `limit` items were kept or the list ended; once the budget is
    /// used up exactly, every remaining item counts as dropped.
    pub dropped: usize,
    /// Distinct nodes that received a score: the union of the lanes' candidate lists, plus
    /// the new nodes graph expansion reached that pass the gates (before its `max_nodes`
    /// cut). For a listing (`list`): the nodes that pass the gates, over every page.
    pub candidates_seen: usize,
    /// What each lane returned, in lane-name order.
    pub lanes: Vec<LaneReport>,
    /// What the query planner did — a rewritten query, soft boosts (e.g. the time window
    /// a time expression named) and how many candidates gained — when it did anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::planner::PlanReport>,
    /// Everything worth knowing that is not an error, in pipeline order.
    pub warnings: Vec<Warning>,
}

/// One packed item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievedItem {
    /// The node.
    pub id: NodeId,
    /// 1-based position in `items`.
    pub rank: usize,
    /// The retrieval score that ranked the item: the fused score, or with graph expansion
    /// the unified expansion score (see [`GraphExpand`](crate::GraphExpand)). After a
    /// reranker ran, `rank` follows `rerank_score` for the reranked items instead.
    pub score: f64,
    /// The reranker's score, if a reranker scored this item.
    pub rerank_score: Option<f64>,
    /// The item's rank (1-based) and raw score in each lane that found it.
    pub lanes: BTreeMap<String, LaneScore>,
    /// For an item brought in (or scored higher) by graph expansion: the node ids from
    /// the seed to this node.
    pub source_path: Option<Vec<NodeId>>,
    /// The rendered text (see the `render` format in the crate docs): what to put in a
    /// model's context. The node's own fields follow, so a caller needs no read per item.
    pub text: String,
    /// Estimated tokens of `text`.
    pub tokens: usize,
    /// The node's labels, sorted.
    pub labels: Vec<String>,
    /// The node's properties.
    pub props: BTreeMap<String, Value>,
    /// The node's own text (whole: `text` may cut it).
    pub node_text: String,
    /// Start of the node's validity, ms (`None`: since forever).
    pub valid_from_ms: Option<i64>,
    /// End of the node's validity, ms, exclusive (`None`: until further notice).
    pub valid_until_ms: Option<i64>,
    /// Why it ranked here, when the spec asked (`explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<crate::Explanation>,
}

/// An item's place in one lane.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LaneScore {
    /// 1-based rank within the lane's candidates.
    pub rank: usize,
    /// The lane's raw score (dot product, BM25).
    pub score: f32,
}

/// What one lane returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneReport {
    /// Lane name: `dense:<model>`, `sparse:<model>` or `text`.
    pub name: String,
    /// Candidates it returned (at most the depth).
    pub hits: usize,
    /// True if an approximate index chose the candidates.
    pub approximate: bool,
    /// True if the lane's query vector was embedded from the query text by an
    /// [`Embedder`](crate::Embedder) (not given by the caller). Left out of the JSON when
    /// false, so results without an embedder serialize as before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub embedded: bool,
}

/// A typed warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// What kind of warning.
    pub code: WarningCode,
    /// A human-readable explanation naming the lane, node or setting.
    pub message: String,
}

impl Warning {
    /// A warning.
    pub(crate) fn new(code: WarningCode, message: impl Into<String>) -> Warning {
        Warning {
            code,
            message: message.into(),
        }
    }
}

/// Warning codes (snake_case in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WarningCode {
    /// The gates (labels, properties, validity) admit no node of the commit.
    GatesMatchNothing,
    /// A lane returned no candidates.
    LaneEmpty,
    /// A lane could not run on this commit (its model has no vectors here, say at an
    /// older commit): the other lanes ran without it.
    LaneUnavailable,
    /// The validity gate excluded nodes the other gates admit, and the answer had room
    /// for more: facts not yet valid, or already ended, at the validity time. The message
    /// says how many and how to see them (`valid_at` another time, or all time).
    ValidityExcluded,
    /// The dense lane's candidates were chosen by an approximate (HNSW) index.
    DenseApproximate,
    /// Graph expansion found no usable edge from its seeds.
    ExpansionNoEdges,
    /// Graph expansion was asked for an edge kind the commit does not have.
    ExpansionUnknownKind,
    /// Graph expansion stopped at its visit cap.
    ExpansionTruncated,
    /// Graph expansion reached nodes only through the label or property gates' excluded
    /// side and so added none: expansion adds only nodes that pass every gate (it walks
    /// through the others). The message says how many were reached.
    ExpansionGated,
    /// The reranker failed; the retrieval order stands.
    RerankFailed,
    /// The query planner failed or returned an invalid plan; the query ran unplanned.
    PlannerFailed,
    /// Items were skipped because they did not fit the token budget.
    BudgetDropped,
    /// Derived index data was found damaged or missing and rebuilt from the objects (the
    /// result is what it would have been; the message names the part).
    DerivedRebuilt,
    /// The current branch has no commits yet: nothing is stored, so nothing was found
    /// (the normal first recall of a new memory; not an error).
    EmptyRepository,
    /// The query text could not be embedded by the source's default query embedder (the
    /// message says why): the query ran without that dense lane.
    QueryNotEmbedded,
}
