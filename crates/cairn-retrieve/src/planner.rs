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
//! candidate without any validity bound gains nothing (nothing says when it held).
//!
//! Each expression also becomes a [`SoftBoost::TextDates`]: a candidate whose *text* names
//! a date in the window ("during 1916-1920", "in 1917", "May 2021" — the grammar of
//! [`cairn_index::dates`], read when the node's chunk is built and stored with it) gains up
//! to [`DEFAULT_TEXT_DATE_BOOST`] of the scale's top; a date near the window gains less,
//! measured in the date's own length (a year one year off gains a quarter), and a vague
//! date gains its share (the 1990s for a question about 1995: a tenth). A candidate whose
//! text names no date gains nothing, so data without dates ranks as before. A query
//! longer than [`TEXT_DATE_FULL_WORDS`] words gets a proportionally smaller text-date
//! boost: in a paragraph-long query (CISI's are abstracts: "… the 1979 totals for
//! bibliographic databases …") a date is a detail, and the full boost measured 0.006
//! nDCG@10 below none there. Both boosts
//! are soft: they reorder what the lanes found and never gate. Measured on time-sensitive
//! questions in README ("Time in the text").
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

use cairn_index::dates::DaySpan;
use cairn_index::{CommitIndexes, Ordinal};

use crate::time_expr::{find_time_expressions, TimeWindow};

/// The share of the fusion scale's top a time boost adds to a candidate whose validity
/// overlaps the window (module docs).
pub const DEFAULT_TIME_BOOST: f64 = 0.1;

/// Days after which a time boost halves for a candidate whose validity misses the window.
pub const TIME_BOOST_HALF_LIFE_DAYS: f64 = 7.0;

/// The share of the fusion scale's top a text-date boost adds to a candidate whose text
/// names a date inside the window (module docs), for a query of at most
/// [`TEXT_DATE_FULL_WORDS`] words.
pub const DEFAULT_TEXT_DATE_BOOST: f64 = 0.2;

/// A query longer than this many words gets a text-date boost scaled by `this / words`:
/// a date in a paragraph-long query is a detail of it, not the question (module docs).
pub const TEXT_DATE_FULL_WORDS: f64 = 24.0;

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
    /// Candidates whose text names a date in or near `window` (the node chunk's text
    /// dates, [`cairn_index::dates`]) gain `weight · top · s`, with `s` the best over the
    /// text's dates `d`: the share of `d`'s days inside the window when they overlap
    /// (a year inside a five-year window: 1; the 1990s for a window of 1995: 0.1), else
    /// `0.5^((gap + len(d)) / len(d))` — a date one of its own lengths away (the year
    /// right after the window) gains a quarter of the boost, as far again an eighth.
    /// Candidates whose text names no date gain nothing.
    TextDates {
        /// The expression as written in the query.
        expression: String,
        /// The window it names.
        window: TimeWindow,
        /// Share of the scale's top added at full strength (finite, in `[0, 1]`).
        weight: f64,
    },
}

/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;

impl SoftBoost {
    /// Checks the boost's numbers; the message names the bad field.
    pub(crate) fn check(&self) -> Result<(), String> {
        let (window, weight) = match self {
            SoftBoost::ValidityOverlap {
                window,
                weight,
                half_life_days,
                ..
            } => {
                if !(half_life_days.is_finite() && *half_life_days > 0.0) {
                    return Err(format!("half_life_days must be > 0, got {half_life_days}"));
                }
                (window, weight)
            }
            SoftBoost::TextDates { window, weight, .. } => (window, weight),
        };
        if !(weight.is_finite() && (0.0..=1.0).contains(weight)) {
            return Err(format!("weight must be in [0, 1], got {weight}"));
        }
        if window.start_ms >= window.end_ms {
            return Err(format!("the window [{}, {}) is empty", window.start_ms, window.end_ms));
        }
        Ok(())
    }

    /// The boost's strength in `[0, 1]` for the node at `ordinal`.
    pub(crate) fn strength(&self, indexes: &CommitIndexes, ordinal: Ordinal) -> f64 {
        match self {
            SoftBoost::ValidityOverlap {
                window, half_life_days, ..
            } => {
                let (from, until) = indexes.validity(ordinal);
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
            SoftBoost::TextDates { window, .. } => text_date_strength(window, indexes.text_dates(ordinal)),
        }
    }

    /// The boost's share of the scale's top at full strength.
    pub(crate) fn weight(&self) -> f64 {
        match self {
            SoftBoost::ValidityOverlap { weight, .. } | SoftBoost::TextDates { weight, .. } => *weight,
        }
    }

    /// The boost's name in an explanation (`boost:time`, `boost:text_date`).
    pub(crate) fn term_name(&self) -> &'static str {
        match self {
            SoftBoost::ValidityOverlap { .. } => "boost:time",
            SoftBoost::TextDates { .. } => "boost:text_date",
        }
    }
}

/// [`SoftBoost::TextDates`]'s strength for a text whose dates are `dates`; the best over
/// them, taken in their stored (sorted) order.
fn text_date_strength(window: &TimeWindow, dates: &[DaySpan]) -> f64 {
    // The window in whole days (a window is whole days when the planner makes it).
    let (ws, we) = (
        window.start_ms.div_euclid(DAY_MS),
        (window.end_ms - 1).div_euclid(DAY_MS) + 1,
    );
    let mut best = 0.0f64;
    for d in dates {
        let (a, b) = (i64::from(d.start), i64::from(d.end));
        let len = (b - a) as f64;
        let overlap = b.min(we) - a.max(ws);
        let s = if overlap > 0 {
            overlap as f64 / len
        } else {
            let gap = if b <= ws { ws - b } else { a - we };
            0.5f64.powf((gap as f64 + len) / len)
        };
        best = best.max(s);
    }
    best
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
/// // One validity boost and one text-date boost per time expression.
/// assert_eq!(plan.boosts.len(), 2);
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
    /// Share of the scale's top a text-date boost adds (default
    /// [`DEFAULT_TEXT_DATE_BOOST`]; 0 turns text dates off).
    pub text_date_boost: f64,
}

impl Default for RulePlanner {
    fn default() -> Self {
        RulePlanner {
            time_boost: DEFAULT_TIME_BOOST,
            half_life_days: TIME_BOOST_HALF_LIFE_DAYS,
            text_date_boost: DEFAULT_TEXT_DATE_BOOST,
        }
    }
}

impl QueryPlanner for RulePlanner {
    fn name(&self) -> &str {
        "rule"
    }

    fn plan(&self, request: &PlanRequest<'_>) -> Result<QueryPlan, PlanError> {
        let mut boosts = Vec::new();
        let words = request.text.map_or(0, |t| {
            t.split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .count()
        });
        for e in request
            .text
            .map(|t| find_time_expressions(t, request.reference_ms))
            .unwrap_or_default()
        {
            boosts.push(SoftBoost::ValidityOverlap {
                expression: e.text.clone(),
                window: e.window,
                weight: self.time_boost,
                half_life_days: self.half_life_days,
            });
            if self.text_date_boost > 0.0 {
                boosts.push(SoftBoost::TextDates {
                    expression: e.text,
                    window: e.window,
                    weight: self.text_date_boost * (TEXT_DATE_FULL_WORDS / words.max(1) as f64).min(1.0),
                });
            }
        }
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
