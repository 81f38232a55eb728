//! # cairn-retrieve
//!
//! The deterministic hybrid retrieval pipeline over a commit's indexes, for AI agents:
//!
//! ```text
//! spec ─► gates ─► plan ─► lanes ─► fusion ─► expansion ─► rerank ─► packing ─► result
//! ```
//!
//! 1. **Gates**: labels (all-of, any-of), property predicates (`eq`, `in`, `range`,
//!    `exists`) and the validity time (`valid_from ≤ t < valid_until`; by default `t` is
//!    the commit's timestamp, never the wall clock) are combined into one bitmap that every
//!    lane searches *within*, so a selective gate never empties a result while matching
//!    nodes exist.
//! 2. **Plan** ([`QueryPlanner`], default [`RulePlanner`]; `"planner": "none"` switches
//!    it off): may rewrite the query per lane and add soft boosts — the rule planner turns
//!    explicit time expressions ("in July 2023", "last May") into a boost for items whose
//!    validity overlaps the window, relative to the commit's time, never the wall clock.
//! 3. **Lanes**: `dense:<model>` (dot product), `sparse:<model>` (dot product) and `text`
//!    (BM25, the query without conversational question words), each fetching `depth`
//!    candidates (default 1000 with several lanes).
//! 4. **Fusion** ([`Fusion`]): score fusion (the default: the weighted mean of the lanes'
//!    scores on `[0, 1]` — a dense lane's cosine as it is, the text and sparse lanes
//!    min-max — text weight 0.4, so a dense lane that is guessing cannot outvote the text
//!    lane; at least as good as either lane alone on every evaluation collection, also
//!    with a deliberately weakened dense lane, see [`fusion`]), min-max on every lane (the
//!    previous default, for vectors that are not unit length), DBSF (mean ±
//!    3σ), RRF (`k` = 60, one call away: [`Fusion::rrf`]) or weighted RRF; the planner's
//!    boosts are added on the same scale; ties by node id.
//! 5. **Graph expansion** ([`GraphExpand`], optional): a deterministic BFS from the top
//!    seeds; candidates score `α·n + β` and expanded nodes `α·n(seed)·γ^d + β·e^{−d/τ}`,
//!    one scale (see [`expand`]).
//! 6. **Rerank** ([`Reranker`], optional) of the top `rerank_top_n`.
//! 7. **Packing**: each item rendered to compact text (id, labels, chosen properties, text
//!    cut at `text_cap` characters), its tokens estimated ([`TokenEstimator`], default
//!    [`CharRatioEstimator`]: `ceil(chars/4)`), packed greedily in rank order under the
//!    token budget, at most `limit` items.
//! 8. **Result** ([`RetrievalResult`]): items with per-lane ranks and scores, expansion
//!    paths, rendered text and tokens, plus typed [`Warning`]s; serde JSON, stable field
//!    order.
//!
//! Determinism: the same commit and the same spec give a byte-identical result JSON —
//! across processes, thread counts, and fresh or reloaded indexes. Every ranked list is
//! ordered by `(score desc, node id asc)`, every float sum runs in a fixed order, and no
//! hash-map order leaks.
//!
//! Entry points: the builder [`Retrieval`] (`repo.retrieve()` in the `cairn` crate), the
//! JSON [`RetrieveSpec`], and [`execute_spec`] on an already-resolved commit. Evaluation
//! on judged collections (metrics, loader, `cairn eval`) lives in the `cairn-eval` crate.

#![warn(missing_docs)]

pub mod builder;
pub mod embed;
pub mod error;
pub mod execute;
pub mod expand;
pub mod explain;
pub mod fusion;
mod gates;
mod lanes;
mod pack;
mod plan;
pub mod planner;
pub mod render;
pub mod rerank;
pub mod result;
mod run;
pub mod source;
pub mod spec;
pub mod time_expr;
pub mod tokens;

pub use builder::Retrieval;
pub use embed::{EmbedError, Embedder, ModelEmbedder};
pub use error::RetrieveError;
pub use execute::{execute_spec, Plugins};
pub use expand::{Direction, GraphExpand};
pub use explain::{ExpansionTerm, Explanation, FusionTerm, PathStep};
pub use fusion::{
    Fusion, FusionMethod, COSINE_CEILING, COSINE_FLOOR, DBSF_SIGMAS, DBSF_TEXT_WEIGHT, DEFAULT_RRF_K,
    DEFAULT_TEXT_WEIGHT, MIN_MAX_TEXT_WEIGHT,
};
pub use planner::{PlanError, PlanReport, PlanRequest, PlannerMode, QueryPlan, QueryPlanner, RulePlanner, SoftBoost};
pub use render::DEFAULT_TEXT_CAP_CHARS;
pub use rerank::{RerankCandidate, RerankError, Reranker, TermOverlapReranker};
pub use result::{LaneReport, LaneScore, RetrievalResult, RetrievedItem, Warning, WarningCode};
pub use source::{ResolvedCommit, RetrievalSource, SourceCause, SourceError};
pub use spec::{RetrieveSpec, SparseQuery, ValidAt, VectorQuery, WhereClause, WhereOp, ANN_DEFAULT_MIN_VECTORS};
pub use time_expr::{TimeExpression, TimeWindow};
pub use tokens::{CharRatioEstimator, TokenEstimator};
