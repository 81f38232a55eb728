//! [`RetrieveSpec`]: everything a retrieval asks for, as plain data with a JSON form.
//!
//! The builder ([`Retrieval`](crate::Retrieval)) records into a spec; the CLI's
//! `retrieve --batch` reads one spec per line. Every field is optional, but a spec needs at
//! least one lane (`text`, `vector` or `sparse`). Unknown fields are rejected, and a spec
//! that does not parse is a [`RetrieveError::MalformedSpec`].
//!
//! ```json
//! {
//!   "text": "how do wings stall",
//!   "vector": {"model": "minilm", "embedding": [0.1, 0.2, 0.3]},
//!   "sparse": {"model": "splade", "indices": [3, 17], "values": [0.5, 1.2]},
//!   "labels_all": ["Document"],
//!   "labels_any": ["Paper", "Note"],
//!   "where": [
//!     {"key": "lang", "op": "eq", "value": "en"},
//!     {"key": "venue", "op": "in", "values": ["AIAA", "JFM"]},
//!     {"key": "year", "op": "range", "min": 1950, "max": 1970},
//!     {"key": "doi", "op": "exists"}
//!   ],
//!   "valid_at": 1700000000000,
//!   "at": "main",
//!   "expand": {"hops": 2, "max_nodes": 50, "direction": "both", "kinds": ["cites"],
//!              "alpha": 0.7, "beta": 0.3, "tau": 2.0, "hop_decay": 0.5, "seeds": 10},
//!   "fusion": {"method": "weighted_rrf", "k": 60, "weights": {"dense:minilm": 1.0, "text": 0.5}},
//!   "token_budget": 2000,
//!   "limit": 10,
//!   "text_cap": 1000,
//!   "depth": 100,
//!   "render_props": ["title", "year"],
//!   "rerank_top_n": 50
//! }
//! ```
//!
//! | field | meaning | default |
//! |---|---|---|
//! | `text` | BM25 lane `text` (and the query an [`Embedder`](crate::Embedder) or [`Reranker`](crate::Reranker) sees) | no text lane |
//! | `vector` | dense lane `dense:<model>` | no dense lane |
//! | `sparse` | sparse lane `sparse:<model>` | no sparse lane |
//! | `labels_all` / `labels_any` | label gates (every / at least one); empty = no gate | no gate |
//! | `where` | property gates, all must hold (`eq`, `in`, `range` inclusive, `exists`) | no gate |
//! | `valid_at` | validity time: ms, or a string as `--valid-at` takes it (RFC 3339, `2024-06-01T09:30` read as UTC, `2024-06-01`); a node or edge counts iff `valid_from ≤ t < valid_until`; or `"all_time"` to switch the gate off | the commit's timestamp |
//! | `at` | revision to read (resolved by the [`RetrievalSource`](crate::RetrievalSource)) | the branch head |
//! | `expand` | graph expansion, see [`GraphExpand`] | off |
//! | `fusion` | see [`Fusion`] | `score` (dense lanes as cosines, text and sparse min-max), text weight 0.4 |
//! | `token_budget` | packing budget in estimated tokens (≥ 1) | unlimited |
//! | `limit` | most items returned (1..=[`MAX_DEPTH`]) | [`DEFAULT_LIMIT`] |
//! | `text_cap` | characters of node text rendered per item | [`DEFAULT_TEXT_CAP_CHARS`](crate::DEFAULT_TEXT_CAP_CHARS) |
//! | `depth` | candidates each lane fetches (1..=[`MAX_DEPTH`]) | several lanes: `max(1000, limit)`; one lane: `max(100, limit)` |
//! | `render_props` | property keys rendered into each item's text, in this order | none |
//! | `rerank_top_n` | how many top items a reranker reorders (≥ 1) | [`DEFAULT_RERANK_TOP_N`] |
//! | `explain` | explain every item (lane terms, boosts, expansion) | off |
//! | `planner` | `"none"` switches query planning off (see [`crate::planner`]) | `"default"`: the rule planner |
//! | `embed` | `false`: never embed `text` into a dense lane | embed `text` with the source's query embedder when no `vector` is given (see [`RetrievalSource::query_embedder`](crate::RetrievalSource::query_embedder)) |
//! | `embedder` | the query embedder by name (its failure is an error) | the source's default (its failure is a `query_not_embedded` warning) |

use std::fmt;

use cairn_core::{SparseVector, Value};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::RetrieveError;
use crate::expand::GraphExpand;
use crate::fusion::Fusion;
use crate::planner::PlannerMode;
use crate::time_expr::{parse_time_ms, TIME_FORMS};

/// Items returned when the spec says nothing.
pub const DEFAULT_LIMIT: usize = 10;
/// Candidates each lane fetches by default when the query has several lanes (see
/// [`RetrieveSpec::effective_depth`]).
pub const DEFAULT_FUSION_DEPTH: usize = 1000;
/// Candidates a single-lane query fetches by default, at least.
pub const DEFAULT_SINGLE_LANE_DEPTH: usize = 100;
/// The largest `depth` and `limit` accepted (bounds the memory a single query can ask for).
pub const MAX_DEPTH: usize = 1_000_000;
/// How many top items a reranker sees by default.
pub const DEFAULT_RERANK_TOP_N: usize = 50;

/// A retrieval request as data. See the [module docs](self) for the JSON form.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrieveSpec {
    /// BM25 query text (lane `text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Dense query (lane `dense:<model>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<VectorQuery>,
    /// Sparse query (lane `sparse:<model>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse: Option<SparseQuery>,
    /// Kept nodes carry every one of these labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels_all: Vec<String>,
    /// Kept nodes carry at least one of these labels (empty: no gate).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels_any: Vec<String>,
    /// Property gates; every clause must hold.
    #[serde(default, rename = "where", skip_serializing_if = "Vec::is_empty")]
    pub where_clauses: Vec<WhereClause>,
    /// Validity time; `None` means the resolved commit's timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_at: Option<ValidAt>,
    /// Revision to read; `None` means the branch head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Graph expansion from the top seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expand: Option<GraphExpand>,
    /// How the lanes are fused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<Fusion>,
    /// Packing budget in estimated tokens; `None` is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<usize>,
    /// Most items returned ([`DEFAULT_LIMIT`] if `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Characters of node text rendered per item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_cap: Option<usize>,
    /// Candidates fetched per lane; see [`RetrieveSpec::effective_depth`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// Property keys rendered into each item, in this order (absent keys are skipped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub render_props: Vec<String>,
    /// How many top items a reranker reorders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_top_n: Option<usize>,
    /// The dense lane's mode: `true` searches the HNSW unit graphs (approximate, every
    /// candidate rescored exactly), `false` is exact; absent: exact below
    /// [`ANN_DEFAULT_MIN_VECTORS`] vectors of the model, approximate from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ann: Option<bool>,
    /// List mode: no lane ranks; the nodes that pass the gates come in id order (paged by
    /// `after` and `limit`, packed under `token_budget`). A listing names no lane, and
    /// takes no expansion, fusion or reranking.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub list: bool,
    /// List mode: start after this node id (the last id of the previous page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Give every item an [`Explanation`](crate::Explanation): lane ranks and scores,
    /// fusion terms, gates, expansion path. Changes no ranking.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain: bool,
    /// Query planning: `"default"` (the planner plugin, else the
    /// [`RulePlanner`](crate::RulePlanner)) or `"none"`; absent means `"default"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<PlannerMode>,
    /// Whether the query `text` is also embedded into a dense lane when the spec gives no
    /// `vector`: absent or `true` asks the source for its query embedder (for a
    /// repository: [`embedder`](Self::embedder) if set, else its default one, if any);
    /// `false` never embeds (`cairn retrieve --no-embed`). See
    /// [`RetrievalSource::query_embedder`](crate::RetrievalSource::query_embedder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed: Option<bool>,
    /// The query embedder by name (a repository's configured embedder, `cairn embedder
    /// set NAME`); absent: the source's default. Naming one makes its failure an error
    /// rather than a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
}

/// From this many vectors of a dense model, a spec without `ann` searches approximately.
///
/// Measured (`cargo bench --bench chunked`, 384-d): the exact lane (an int8 scan with a
/// proven bound, then exact rescoring) costs about 40 ns per scanned vector on 2 cores, so
/// a few milliseconds at 100,000 vectors and 40–60 ms unfiltered at 1,000,000 (12.8 ms on
/// 16 cores); the graphs cut that to 7 ms (3.3 ms on 16 cores, recall@10 0.99), but a
/// unit's graph (32k vectors on average; a node's unit holds ~65k, at most ~262k) is
/// rebuilt after any change to the unit — seconds to tens of seconds, paid by the first
/// approximate query after a commit. Agents commit every turn, so exact stays the default
/// until the scan itself grows past ~40 ms on a small machine: 2,000,000 vectors.
pub const ANN_DEFAULT_MIN_VECTORS: usize = 2_000_000;

impl RetrieveSpec {
    /// Parses one JSON spec.
    ///
    /// ```
    /// use cairn_retrieve::{RetrieveError, RetrieveSpec};
    /// let spec = RetrieveSpec::from_json(r#"{"text": "wing stall", "limit": 5}"#).unwrap();
    /// assert_eq!(spec.limit, Some(5));
    /// let err = RetrieveSpec::from_json(r#"{"text": "x", "colour": "red"}"#).unwrap_err();
    /// assert!(matches!(err, RetrieveError::MalformedSpec { .. }));
    /// ```
    pub fn from_json(json: &str) -> Result<RetrieveSpec, RetrieveError> {
        serde_json::from_str(json).map_err(|e| RetrieveError::MalformedSpec { message: e.to_string() })
    }

    /// The spec as compact JSON (fields in declaration order, unset fields omitted).
    pub fn to_json(&self) -> String {
        // A spec holds only strings, finite-or-not floats and integers; serde_json writes
        // non-finite floats as `null` rather than failing, so this cannot error.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// True if the spec names at least one lane.
    pub fn has_lane(&self) -> bool {
        self.text.is_some() || self.vector.is_some() || self.sparse.is_some()
    }

    /// The effective `limit`.
    pub fn effective_limit(&self) -> usize {
        self.limit.unwrap_or(DEFAULT_LIMIT)
    }

    /// The effective per-lane candidate depth: `depth` if set; otherwise, with several
    /// lanes (an embedder-made dense lane counts: pass `embedded_lane`),
    /// `max(DEFAULT_FUSION_DEPTH, limit)` — fusion by normalised scores needs a deep list,
    /// and a fixed depth keeps the top items independent of `limit`; with one lane,
    /// `max(DEFAULT_SINGLE_LANE_DEPTH, limit)` (one lane's top items do not depend on depth).
    ///
    /// Graph expansion adds `max_nodes` on top of the fused candidates, so it does not need
    /// a deeper list.
    pub fn effective_depth(&self, embedded_lane: bool) -> usize {
        self.depth.unwrap_or_else(|| {
            let lanes = usize::from(self.text.is_some())
                + usize::from(self.vector.is_some() || embedded_lane)
                + usize::from(self.sparse.is_some());
            let base = if lanes > 1 {
                DEFAULT_FUSION_DEPTH
            } else {
                DEFAULT_SINGLE_LANE_DEPTH
            };
            base.max(self.effective_limit())
        })
    }
}

/// A dense query: a model name and the query embedding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorQuery {
    /// Dense model name (as on the nodes' `embeddings`).
    pub model: String,
    /// The query vector; the model's dimension, finite components.
    pub embedding: Vec<f32>,
}

/// A sparse query: a model name and a sparse vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SparseQuery {
    /// Sparse model name (as on the nodes' `sparse`).
    pub model: String,
    /// Strictly increasing dimension indices.
    pub indices: Vec<u32>,
    /// One finite weight per index.
    pub values: Vec<f32>,
}

impl SparseQuery {
    /// The query as a [`SparseVector`].
    pub fn to_vector(&self) -> SparseVector {
        SparseVector::new(self.indices.clone(), self.values.clone())
    }
}

/// The operator of a [`WhereClause`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhereOp {
    /// The property equals `value` (numbers compare numerically).
    Eq,
    /// The property equals one of `values`.
    In,
    /// The property is a number in `[min, max]` (either end may be omitted).
    Range,
    /// The property is present.
    Exists,
}

impl WhereOp {
    fn name(self) -> &'static str {
        match self {
            WhereOp::Eq => "eq",
            WhereOp::In => "in",
            WhereOp::Range => "range",
            WhereOp::Exists => "exists",
        }
    }
}

/// A property gate: `key`, an operator, and the operands that operator uses (`eq`:
/// `value`; `in`: `values`; `range`: `min` and/or `max`; `exists`: none). Operands the
/// operator does not use are refused by `execute()`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhereClause {
    /// The property key.
    pub key: String,
    /// The operator.
    pub op: WhereOp,
    /// Operand of `eq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Operands of `in`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<Value>>,
    /// Inclusive lower bound of `range`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Inclusive upper bound of `range`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

impl WhereClause {
    fn bare(key: impl Into<String>, op: WhereOp) -> WhereClause {
        WhereClause {
            key: key.into(),
            op,
            value: None,
            values: None,
            min: None,
            max: None,
        }
    }

    /// `key == value`.
    pub fn eq(key: impl Into<String>, value: impl Into<Value>) -> WhereClause {
        WhereClause {
            value: Some(value.into()),
            ..WhereClause::bare(key, WhereOp::Eq)
        }
    }

    /// `key ∈ values`.
    pub fn is_in(key: impl Into<String>, values: Vec<Value>) -> WhereClause {
        WhereClause {
            values: Some(values),
            ..WhereClause::bare(key, WhereOp::In)
        }
    }

    /// `min ≤ key ≤ max` for a numeric property (`None` leaves that end open).
    pub fn range(key: impl Into<String>, min: Option<f64>, max: Option<f64>) -> WhereClause {
        WhereClause {
            min,
            max,
            ..WhereClause::bare(key, WhereOp::Range)
        }
    }

    /// `key` is present.
    pub fn exists(key: impl Into<String>) -> WhereClause {
        WhereClause::bare(key, WhereOp::Exists)
    }

    /// Checks the clause (the right operands for its operator, finite numbers) and turns it
    /// into the index's predicate. `at` is the clause's position, for the error message.
    pub(crate) fn to_predicate(&self, at: usize) -> Result<cairn_index::PropertyPredicate, RetrieveError> {
        use cairn_index::PropertyPredicate as P;
        let field = |name: &str| format!("where[{at}].{name}");
        if self.key.is_empty() {
            return Err(RetrieveError::invalid(field("key"), "the property key is empty"));
        }
        let unused = |name: &str| {
            RetrieveError::invalid(field(name), format!("`{name}` is not used by op `{}`", self.op.name()))
        };
        let check_value = |name: String, v: &Value| {
            v.check(cairn_core::limits::MAX_VALUE_DEPTH)
                .map_err(|(path, problem)| RetrieveError::invalid(format!("{name}{path}"), describe(problem)))
        };
        match self.op {
            WhereOp::Eq => {
                if self.values.is_some() {
                    return Err(unused("values"));
                }
                if self.min.is_some() || self.max.is_some() {
                    return Err(unused(if self.min.is_some() { "min" } else { "max" }));
                }
                let v = self
                    .value
                    .clone()
                    .ok_or_else(|| RetrieveError::invalid(field("value"), "op `eq` needs a `value`"))?;
                check_value(field("value"), &v)?;
                Ok(P::Equals(v))
            }
            WhereOp::In => {
                if self.value.is_some() {
                    return Err(unused("value"));
                }
                if self.min.is_some() || self.max.is_some() {
                    return Err(unused(if self.min.is_some() { "min" } else { "max" }));
                }
                let vs = self
                    .values
                    .clone()
                    .ok_or_else(|| RetrieveError::invalid(field("values"), "op `in` needs `values`"))?;
                if vs.is_empty() {
                    return Err(RetrieveError::invalid(
                        field("values"),
                        "op `in` needs at least one value",
                    ));
                }
                for (i, v) in vs.iter().enumerate() {
                    check_value(format!("{}[{i}]", field("values")), v)?;
                }
                Ok(P::In(vs))
            }
            WhereOp::Range => {
                if self.value.is_some() {
                    return Err(unused("value"));
                }
                if self.values.is_some() {
                    return Err(unused("values"));
                }
                if self.min.is_none() && self.max.is_none() {
                    return Err(RetrieveError::invalid(
                        field("min"),
                        "op `range` needs `min`, `max` or both",
                    ));
                }
                for (name, b) in [("min", self.min), ("max", self.max)] {
                    if b.is_some_and(|b| !b.is_finite()) {
                        return Err(RetrieveError::invalid(field(name), "not a finite number"));
                    }
                }
                if let (Some(lo), Some(hi)) = (self.min, self.max) {
                    if lo > hi {
                        return Err(RetrieveError::invalid(
                            field("min"),
                            format!("min {lo} is above max {hi}"),
                        ));
                    }
                }
                Ok(P::Range {
                    min: self.min,
                    max: self.max,
                })
            }
            WhereOp::Exists => {
                for (name, set) in [
                    ("value", self.value.is_some()),
                    ("values", self.values.is_some()),
                    ("min", self.min.is_some()),
                    ("max", self.max.is_some()),
                ] {
                    if set {
                        return Err(unused(name));
                    }
                }
                Ok(P::Exists)
            }
        }
    }
}

fn describe(problem: cairn_core::value::ValueProblem) -> &'static str {
    match problem {
        cairn_core::value::ValueProblem::NonFinite => "not a finite number",
        cairn_core::value::ValueProblem::TooDeep => "lists or maps nested too deeply",
        _ => "not a storable value",
    }
}

/// The validity time of a retrieval. In JSON: an integer (ms since the epoch), the string
/// `"all_time"`, or a time string in any form [`parse_time_ms`] reads (RFC 3339, a date
/// and time without an offset read as UTC, a plain date), as `--valid-at` takes it. It is
/// written back as the integer, so a spec's JSON form stays canonical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValidAt {
    /// Keep nodes and edges with `valid_from ≤ t < valid_until`.
    At(i64),
    /// No validity gate.
    AllTime,
}

impl Serialize for ValidAt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ValidAt::At(t) => s.serialize_i64(*t),
            ValidAt::AllTime => s.serialize_str("all_time"),
        }
    }
}

impl<'de> Deserialize<'de> for ValidAt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ValidAt;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "\"all_time\" or a time: {TIME_FORMS}")
            }
            fn visit_i64<E: de::Error>(self, t: i64) -> Result<ValidAt, E> {
                Ok(ValidAt::At(t))
            }
            fn visit_u64<E: de::Error>(self, t: u64) -> Result<ValidAt, E> {
                i64::try_from(t)
                    .map(ValidAt::At)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(t), &self))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ValidAt, E> {
                match s {
                    "all_time" => Ok(ValidAt::AllTime),
                    _ => parse_time_ms(s)
                        .map(ValidAt::At)
                        .ok_or_else(|| E::invalid_value(de::Unexpected::Str(s), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::FusionMethod;

    #[test]
    fn full_spec_parses_and_round_trips() {
        let json = r#"{
          "text": "how do wings stall",
          "vector": {"model": "minilm", "embedding": [0.5, 0.25]},
          "sparse": {"model": "splade", "indices": [3, 17], "values": [0.5, 1.5]},
          "labels_all": ["Document"], "labels_any": ["Paper", "Note"],
          "where": [{"key": "lang", "op": "eq", "value": "en"},
                    {"key": "year", "op": "range", "min": 1950, "max": 1970},
                    {"key": "v", "op": "in", "values": [1, "x"]},
                    {"key": "doi", "op": "exists"}],
          "valid_at": 1700000000000, "at": "main",
          "expand": {"hops": 2, "max_nodes": 50, "direction": "out", "kinds": ["cites"],
                     "alpha": 0.7, "beta": 0.3, "tau": 2.0, "hop_decay": 0.5, "seeds": 10},
          "fusion": {"method": "weighted_rrf", "k": 60, "weights": {"dense:minilm": 1.0, "text": 0.5}},
          "token_budget": 2000, "limit": 10, "text_cap": 500, "depth": 100,
          "render_props": ["title"], "rerank_top_n": 20
        }"#;
        let spec = RetrieveSpec::from_json(json).unwrap();
        assert_eq!(spec.text.as_deref(), Some("how do wings stall"));
        assert_eq!(spec.vector.as_ref().unwrap().embedding, vec![0.5, 0.25]);
        assert_eq!(spec.where_clauses.len(), 4);
        assert_eq!(spec.valid_at, Some(ValidAt::At(1_700_000_000_000)));
        assert_eq!(spec.fusion.as_ref().unwrap().method, FusionMethod::WeightedRrf);
        assert_eq!(spec.expand.as_ref().unwrap().hops, 2);
        let again = RetrieveSpec::from_json(&spec.to_json()).unwrap();
        assert_eq!(again, spec);
    }

    #[test]
    fn unknown_fields_are_rejected_everywhere() {
        for json in [
            r#"{"text": "x", "colour": 1}"#,
            r#"{"vector": {"model": "m", "embedding": [1], "norm": true}}"#,
            r#"{"text": "x", "where": [{"key": "k", "op": "eq", "value": 1, "extra": 2}]}"#,
            r#"{"text": "x", "expand": {"hops": 1, "depth": 3}}"#,
            r#"{"text": "x", "fusion": {"method": "rrf", "kk": 3}}"#,
        ] {
            let err = RetrieveSpec::from_json(json).unwrap_err();
            assert!(
                matches!(&err, RetrieveError::MalformedSpec { message } if message.contains("unknown field")),
                "{json}: {err}"
            );
        }
    }

    #[test]
    fn bad_types_are_malformed_specs() {
        for json in [
            r#"{"text": 3}"#,
            r#"{"text": "x", "limit": -1}"#,
            r#"{"text": "x", "valid_at": "yesterday"}"#,
            r#"{"text": "x", "valid_at": 1.5}"#,
            r#"{"text": "x", "where": [{"key": "k", "op": "like"}]}"#,
            r#"{"text": "x", "fusion": {"method": "borda"}}"#,
            r#"not json"#,
        ] {
            assert!(
                matches!(RetrieveSpec::from_json(json), Err(RetrieveError::MalformedSpec { .. })),
                "{json}"
            );
        }
    }

    #[test]
    fn valid_at_reads_time_strings_and_writes_ms() {
        for (text, ms) in [
            ("2020-06-01", 1_590_969_600_000i64),
            ("2020-06-01T02:00:00+02:00", 1_590_969_600_000),
            ("2020-06-01 00:00", 1_590_969_600_000),
            ("1590969600000", 1_590_969_600_000),
        ] {
            let spec = RetrieveSpec::from_json(&format!(r#"{{"text": "x", "valid_at": "{text}"}}"#)).unwrap();
            assert_eq!(spec.valid_at, Some(ValidAt::At(ms)), "{text}");
            let canonical = format!(r#"{{"text":"x","valid_at":{ms}}}"#);
            assert_eq!(spec.to_json(), canonical);
            assert_eq!(RetrieveSpec::from_json(&canonical).unwrap(), spec);
        }
        let err = RetrieveSpec::from_json(r#"{"text": "x", "valid_at": "soon"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"soon\"") && err.contains("all_time") && err.contains("RFC 3339"),
            "{err}"
        );
    }

    #[test]
    fn valid_at_all_time_round_trips() {
        let spec = RetrieveSpec::from_json(r#"{"text": "x", "valid_at": "all_time"}"#).unwrap();
        assert_eq!(spec.valid_at, Some(ValidAt::AllTime));
        assert_eq!(spec.to_json(), r#"{"text":"x","valid_at":"all_time"}"#);
        let neg = RetrieveSpec::from_json(r#"{"text": "x", "valid_at": -5}"#).unwrap();
        assert_eq!(neg.valid_at, Some(ValidAt::At(-5)));
    }

    #[test]
    fn defaults_for_limit_and_depth() {
        let mut spec = RetrieveSpec::default();
        assert!(!spec.has_lane());
        assert_eq!(spec.effective_limit(), DEFAULT_LIMIT);
        spec.text = Some("x".into());
        assert_eq!(spec.effective_depth(false), 100);
        assert_eq!(spec.effective_depth(true), 1000);
        spec.limit = Some(500);
        assert_eq!(spec.effective_depth(false), 500);
        spec.sparse = Some(SparseQuery {
            model: "s".into(),
            indices: vec![1],
            values: vec![1.0],
        });
        assert_eq!(spec.effective_depth(false), 1000);
        spec.limit = Some(5000);
        assert_eq!(spec.effective_depth(false), 5000);
        spec.depth = Some(7);
        assert_eq!(spec.effective_depth(false), 7);
    }

    #[test]
    fn where_clauses_check_their_operands() {
        use cairn_index::PropertyPredicate as P;
        assert_eq!(
            WhereClause::eq("k", 1i64).to_predicate(0).unwrap(),
            P::Equals(Value::Int(1))
        );
        assert_eq!(
            WhereClause::range("y", Some(1.0), None).to_predicate(0).unwrap(),
            P::Range {
                min: Some(1.0),
                max: None
            }
        );
        assert_eq!(WhereClause::exists("k").to_predicate(0).unwrap(), P::Exists);
        let bad = [
            (WhereClause::bare("k", WhereOp::Eq), "where[3].value"),
            (WhereClause::is_in("k", vec![]), "where[3].values"),
            (WhereClause::range("k", None, None), "where[3].min"),
            (WhereClause::range("k", Some(2.0), Some(1.0)), "where[3].min"),
            (WhereClause::range("k", Some(f64::NAN), None), "where[3].min"),
            (WhereClause::eq("k", f64::INFINITY), "where[3].value"),
            (
                WhereClause {
                    min: Some(1.0),
                    ..WhereClause::exists("k")
                },
                "where[3].min",
            ),
            (WhereClause::exists(""), "where[3].key"),
        ];
        for (clause, path) in bad {
            match clause.to_predicate(3) {
                Err(RetrieveError::InvalidSetting { field, .. }) => assert_eq!(field, path, "{clause:?}"),
                other => panic!("{clause:?}: {other:?}"),
            }
        }
    }
}
