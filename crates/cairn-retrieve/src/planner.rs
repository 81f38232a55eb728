//! Query planning: a plugin seam between the spec and the lanes.
//!
//! A [`QueryPlanner`] reads the query (its text, the spec, the reference time) and returns
//! a [`QueryPlan`]: a rewritten query for the BM25 lane, a rewritten text for the query
//! embedder, and *soft boosts* — small additions to the fused score of the candidates
//! that match a hint. A boost never removes a candidate and never adds one: it reorders
//! what the lanes found.
//!
//! The default planner is [`RulePlanner`]: deterministic rules, no model. It recognises
//! explicit time expressions ([`crate::time_expr`]: "in July 2023", "last May", "2019",
//! "on 2023-05-04", "May 4, 2023") and turns each into a [`SoftBoost::ValidityOverlap`]:
//! a candidate whose validity interval overlaps the window named gains up to
//! [`DEFAULT_TIME_BOOST`] of the fusion scale's top (see [`crate::fusion`]); one that
//! misses the window gains less the further it is from it (half per
//! [`TIME_BOOST_HALF_LIFE_DAYS`] days), because a question's date can be off by days. A
//! candidate without any validity bound gains nothing (nothing says when it held), so on
//! data without validity — the evaluation collections — the ranking is unchanged.
//!
//! The planner runs after the commit is resolved, with the reference time of relative
//! expressions set to the spec's `valid_at` (a time), else the commit's timestamp — never
//! the wall clock. It is on by default; `"planner": "none"` in the spec (or
//! [`Retrieval::no_planner`](crate::Retrieval::no_planner)) switches it off. What it did is
//! reported in [`RetrievalResult::plan`](crate::RetrievalResult::plan), and each boost is
//! a term of the item's [`Explanation`](crate::Explanation).
//!
//! Note that the validity *gate* still applies: by default it keeps what is valid at the
//! commit's time, so a question about a past month ranks, among the facts valid now, the
//! ones that also held then. Ask with `valid_at` set to all time to rank every fact.
//!
//! ## An LLM-backed planner
//!
//! A planner backed by a language model is the user's implementation of the trait. It
//! should be deterministic for byte-identical results (cache its answers by query), and
//! may fail: a failure leaves the query unplanned and the result carries a
//! `planner_failed` warning.
//!
//! ```
//! use cairn_retrieve::{PlanError, PlanRequest, QueryPlan, QueryPlanner, RulePlanner, SoftBoost};
//!
//! /// Asks a model to rewrite the question into keywords; keeps the rule planner's time
//! /// boosts.
//! struct LlmPlanner<F: Fn(&str) -> Result<String, String> + Send + Sync> {
//!     complete: F,
//! }
//!
//! impl<F: Fn(&str) -> Result<String, String> + Send + Sync> QueryPlanner for LlmPlanner<F> {
//!     fn name(&self) -> &str {
//!         "llm"
//!     }
//!     fn plan(&self, request: &PlanRequest<'_>) -> Result<QueryPlan, PlanError> {
//!         let mut plan = RulePlanner::default().plan(request)?;
//!         if let Some(text) = request.text {
//!             let prompt = format!("Rewrite as search keywords: {text}");
//!             let keywords = (self.complete)(&prompt).map_err(PlanError::new)?;
//!             plan.text = Some(keywords);
//!         }
//!         Ok(plan)
//!     }
//! }
//!
//! let planner = LlmPlanner { complete: |_: &str| Ok("lisbon move".to_string()) };
//! let request = PlanRequest { text: Some("when did I move to Lisbon last May?"), reference_ms: 1_718_409_600_000, lanes: &[] };
//! let plan = planner.plan(&request).unwrap();
//! assert_eq!(plan.text.as_deref(), Some("lisbon move"));
//! assert!(matches!(&plan.boosts[0], SoftBoost::ValidityOverlap { expression, .. } if expression == "last May"));
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::time_expr::{find_time_expressions, TimeWindow};

/// The share of the fusion scale's top a time boost adds to a candidate whose validity
/// overlaps the window (module docs).
pub const DEFAULT_TIME_BOOST: f64 = 0.1;

/// Days after which a time boost halves for a candidate whose validity misses the window.
pub const TIME_BOOST_HALF_LIFE_DAYS: f64 = 7.0;

/// What a planner sees.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest<'a> {
    /// The spec's query text, if any.
    pub text: Option<&'a str>,
    /// The reference time for relative expressions (ms): the spec's `valid_at` if it is a
    /// time, else the commit's timestamp.
    pub reference_ms: i64,
    /// The query's lanes, in name order (`dense:<model>`, `sparse:<model>`, `text`).
    pub lanes: &'a [String],
}

/// A planner's answer. The default plan changes nothing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct QueryPlan {
    /// The query the BM25 lane searches instead of the spec's text (`None`: the spec's
    /// text). Ignored without a `text` lane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The text the query embedder embeds instead of the spec's text, when the dense lane
    /// is made from the text by an [`Embedder`](crate::Embedder) (ignored when the spec
    /// gives a vector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_text: Option<String>,
    /// Soft boosts on the fused score.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boosts: Vec<SoftBoost>,
}

impl QueryPlan {
    /// True if the plan changes nothing.
    pub fn is_empty(&self) -> bool {
        self.text.is_none() && self.embed_text.is_none() && self.boosts.is_empty()
    }
}

/// A soft boost: a small addition to the fused score of the candidates that match it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SoftBoost {
    /// Candidates whose validity interval `[valid_from, valid_until)` overlaps `window`
    /// gain `weight · top` (`top`: the fusion scale's top, see
    /// [`FusionMethod::scale_top`](crate::FusionMethod::scale_top)); candidates that miss
    /// it by `g` days gain `weight · top · 0.5^(g / half_life_days)`; candidates with no
    /// validity bound gain nothing.
    ValidityOverlap {
        /// The expression as written in the query.
        expression: String,
        /// The window it names.
        window: TimeWindow,
        /// Share of the scale's top added on overlap (finite, in `[0, 1]`).
        weight: f64,
        /// Days after which the boost halves outside the window (finite, > 0).
        half_life_days: f64,
    },
}

impl SoftBoost {
    /// Checks the boost's numbers; the message names the bad field.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self {
            SoftBoost::ValidityOverlap {
                window,
                weight,
                half_life_days,
                ..
            } => {
                if !(weight.is_finite() && (0.0..=1.0).contains(weight)) {
                    return Err(format!("weight must be in [0, 1], got {weight}"));
                }
                if !(half_life_days.is_finite() && *half_life_days > 0.0) {
                    return Err(format!("half_life_days must be > 0, got {half_life_days}"));
                }
                if window.start_ms >= window.end_ms {
                    return Err(format!("the window [{}, {}) is empty", window.start_ms, window.end_ms));
                }
                Ok(())
            }
        }
    }

    /// The boost's strength in `[0, 1]` for a node valid over `[from, until)`
    /// (`i64::MIN` / `i64::MAX` for an open end).
    pub(crate) fn strength(&self, from: i64, until: i64) -> f64 {
        match self {
            SoftBoost::ValidityOverlap {
                window, half_life_days, ..
            } => {
                if from == i64::MIN && until == i64::MAX {
                    return 0.0;
                }
                let gap = window.gap_ms(from, until);
                if gap == 0 {
                    1.0
                } else {
                    let days = gap as f64 / 86_400_000.0;
                    0.5f64.powf(days / half_life_days)
                }
            }
        }
    }

    /// The boost's share of the scale's top at full strength.
    pub(crate) fn weight(&self) -> f64 {
        match self {
            SoftBoost::ValidityOverlap { weight, .. } => *weight,
        }
    }

    /// The boost's name in an explanation (`boost:time`).
    pub(crate) fn term_name(&self) -> &'static str {
        match self {
            SoftBoost::ValidityOverlap { .. } => "boost:time",
        }
    }
}

/// Why a planner could not plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    /// What went wrong, for the warning.
    pub message: String,
}

impl PlanError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> PlanError {
        PlanError {
            message: message.into(),
        }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PlanError {}

/// Plans a query: rewrites per lane and soft boosts (module docs).
///
/// Contract: `plan` must be deterministic for byte-identical results (same request ⇒ same
/// plan) and must not read the wall clock (relative time is relative to
/// [`PlanRequest::reference_ms`]). It may be called from several threads at once. On an
/// `Err` the retrieval runs unplanned and warns `planner_failed`; a plan with an invalid
/// boost (a weight outside `[0, 1]`, an empty window) is treated the same way.
pub trait QueryPlanner: Send + Sync {
    /// The planner's name, reported in the result.
    fn name(&self) -> &str;

    /// Plans the query.
    fn plan(&self, request: &PlanRequest<'_>) -> Result<QueryPlan, PlanError>;
}

/// The default planner: explicit time expressions become validity-overlap boosts
/// (module docs). No rewrite.
///
/// ```
/// use cairn_retrieve::{PlanRequest, QueryPlanner, RulePlanner, SoftBoost};
/// let request = PlanRequest { text: Some("what happened on 2023-05-04?"), reference_ms: 0, lanes: &[] };
/// let plan = RulePlanner::default().plan(&request).unwrap();
/// assert_eq!(plan.boosts.len(), 1);
/// let none = PlanRequest { text: Some("how do wings stall"), ..request };
/// assert!(RulePlanner::default().plan(&none).unwrap().is_empty());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RulePlanner {
    /// Share of the scale's top a time boost adds (default [`DEFAULT_TIME_BOOST`]).
    pub time_boost: f64,
    /// Half-life of a time boost outside its window, in days (default
    /// [`TIME_BOOST_HALF_LIFE_DAYS`]).
    pub half_life_days: f64,
}

impl Default for RulePlanner {
    fn default() -> Self {
        RulePlanner {
            time_boost: DEFAULT_TIME_BOOST,
            half_life_days: TIME_BOOST_HALF_LIFE_DAYS,
        }
    }
}

impl QueryPlanner for RulePlanner {
    fn name(&self) -> &str {
        "rule"
    }

    fn plan(&self, request: &PlanRequest<'_>) -> Result<QueryPlan, PlanError> {
        let boosts = request
            .text
            .map(|t| find_time_expressions(t, request.reference_ms))
            .unwrap_or_default()
            .into_iter()
            .map(|e| SoftBoost::ValidityOverlap {
                expression: e.text,
                window: e.window,
                weight: self.time_boost,
                half_life_days: self.half_life_days,
            })
            .collect();
        Ok(QueryPlan {
            boosts,
            ..QueryPlan::default()
        })
    }
}

/// Whether a retrieval plans its query. In JSON: `"default"` or `"none"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlannerMode {
    /// The planner plugin if one is set, else [`RulePlanner`].
    #[default]
    Default,
    /// No planning: the lanes search the spec as written.
    None,
}

/// What the planner did, in the result (only when it changed something).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanReport {
    /// The planner's [`QueryPlanner::name`].
    pub planner: String,
    /// The plan.
    #[serde(flatten)]
    pub plan: QueryPlan,
    /// Candidates that gained from a boost (strength above 0).
    pub boosted: usize,
}
