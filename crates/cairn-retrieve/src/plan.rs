//! The checked plan of a retrieval: a spec validated and defaulted, its query text
//! embedded as the embedder policy says ([`QueryEmbedding`]), and the commit resolved with
//! the index parts the plan reads ([`resolve_for`]). The stages that run a plan are in
//! `run.rs`.

use std::fmt;
use std::sync::Arc;

use cairn_index::{CommitIndexes, IndexNeeds};

use crate::embed::Embedder;
use crate::error::RetrieveError;
use crate::execute::Plugins;
use crate::expand::GraphExpand;
use crate::fusion::FusionMethod;
use crate::gates::GateSpec;
use crate::lanes::LaneQuery;
use crate::planner::PlannerMode;
use crate::render::DEFAULT_TEXT_CAP_CHARS;
use crate::result::{Warning, WarningCode};
use crate::source::{ResolvedCommit, RetrievalSource};
use crate::spec::{RetrieveSpec, ValidAt, ANN_DEFAULT_MIN_VECTORS, DEFAULT_RERANK_TOP_N, MAX_DEPTH};

/// A checked spec: every setting validated and defaulted, lanes in name order.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) lanes: Vec<LaneQuery>,
    pub(crate) fusion_method: FusionMethod,
    pub(crate) rrf_k: f64,
    pub(crate) weights: Vec<f64>,
    pub(crate) gates: GateSpec,
    pub(crate) valid_at: Option<ValidAt>,
    pub(crate) expand: Option<GraphExpand>,
    pub(crate) limit: usize,
    pub(crate) depth: usize,
    pub(crate) token_budget: Option<usize>,
    pub(crate) text_cap: usize,
    pub(crate) render_props: Vec<String>,
    pub(crate) rerank_top_n: usize,
    pub(crate) query_text: Option<String>,
    pub(crate) ann: Option<bool>,
    /// List mode, with the id to start after.
    pub(crate) list: Option<Option<String>>,
    /// Explain every item.
    pub(crate) explain: bool,
    /// The dense lane's query vector comes from the embedder (reported per lane; a plan
    /// may re-embed it).
    pub(crate) dense_embedded: bool,
    /// The embedder that made it, if any.
    pub(crate) embedder: Option<EmbedWith>,
    /// Warnings raised while planning (the query embedding's), reported first.
    pub(crate) notes: Vec<Warning>,
    /// Plan the query (`"planner": "none"` switches it off).
    pub(crate) planner: PlannerMode,
}

/// A query embedder chosen for a plan, and whether its failure fails the retrieval.
#[derive(Clone)]
pub(crate) struct EmbedWith {
    pub(crate) model: String,
    pub(crate) embedder: Arc<dyn Embedder>,
    /// Chosen by the caller (a named embedder, or one given to the builder): a failure is
    /// an error. The source's default: a failure is a warning.
    pub(crate) strict: bool,
}

impl fmt::Debug for EmbedWith {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbedWith")
            .field("model", &self.model)
            .field("strict", &self.strict)
            .finish()
    }
}

impl EmbedWith {
    /// The vector of `text`, with the embedder's repair notes added to `notes`.
    pub(crate) fn embed(&self, text: &str, notes: &mut Vec<Warning>) -> Result<Vec<f32>, RetrieveError> {
        let result = self.embedder.embed(text);
        notes.extend(
            self.embedder
                .take_warnings()
                .into_iter()
                .map(|m| Warning::new(WarningCode::DerivedRebuilt, m)),
        );
        result.map_err(|e| RetrieveError::Embedder {
            model: self.model.clone(),
            message: e.message,
        })
    }

    /// A failure of the default embedder as the warning that replaces it.
    pub(crate) fn not_embedded(&self, e: &RetrieveError) -> Warning {
        Warning::new(
            WarningCode::QueryNotEmbedded,
            format!(
                "the query text was not embedded for dense model `{}` ({e}): the query ran without that lane",
                self.model
            ),
        )
    }
}

/// How a retrieval's query text is embedded: the embedder policy, decided once for every
/// interface (see [`RetrievalSource::query_embedder`]).
pub(crate) struct QueryEmbedding {
    with: Option<EmbedWith>,
    notes: Vec<Warning>,
}

impl QueryEmbedding {
    /// The builder's own embedder only ([`execute_spec`], which has no source).
    pub(crate) fn explicit(plugins: &Plugins) -> QueryEmbedding {
        QueryEmbedding {
            with: plugins.embedder.as_ref().map(|(model, e)| EmbedWith {
                model: model.clone(),
                embedder: Arc::clone(e),
                strict: true,
            }),
            notes: Vec::new(),
        }
    }

    /// The policy: nothing to embed without `text`, with a `vector`, in a listing, or with
    /// `"embed": false`; else the spec's named embedder (strict), the builder's embedder
    /// (strict), or the source's default (a failure is a warning).
    pub(crate) fn choose<S: RetrievalSource>(
        source: &S,
        spec: &RetrieveSpec,
        plugins: &Plugins,
    ) -> Result<QueryEmbedding, RetrieveError> {
        let none = |notes| QueryEmbedding { with: None, notes };
        if let Some(name) = &spec.embedder {
            if name.is_empty() {
                return Err(RetrieveError::invalid("embedder", "the embedder name is empty"));
            }
            if spec.embed == Some(false) {
                return Err(RetrieveError::invalid(
                    "embedder",
                    "names a query embedder, but `embed` is false",
                ));
            }
            if spec.vector.is_some() {
                return Err(RetrieveError::invalid(
                    "embedder",
                    "names a query embedder for `text`, but the spec gives its own `vector`",
                ));
            }
            if spec.text.is_none() {
                return Err(RetrieveError::invalid(
                    "embedder",
                    "names a query embedder, but there is no `text`",
                ));
            }
        }
        if spec.embed == Some(false) || spec.vector.is_some() || spec.text.is_none() || spec.list {
            return Ok(none(Vec::new()));
        }
        if spec.embedder.is_none() && plugins.embedder.is_some() {
            return Ok(QueryEmbedding::explicit(plugins));
        }
        let name = spec.embedder.as_deref();
        match source.query_embedder(name) {
            Ok(Some((model, embedder))) => Ok(QueryEmbedding {
                with: Some(EmbedWith {
                    model,
                    embedder,
                    strict: name.is_some(),
                }),
                notes: Vec::new(),
            }),
            Ok(None) => match name {
                Some(n) => Err(RetrieveError::Embedder {
                    model: n.to_string(),
                    message: "no query embedder of that name".into(),
                }),
                None => Ok(none(Vec::new())),
            },
            Err(e) => match name {
                Some(n) => Err(RetrieveError::Embedder {
                    model: n.to_string(),
                    message: e.message,
                }),
                None => Ok(none(vec![Warning::new(
                    WarningCode::QueryNotEmbedded,
                    format!("the query text was not embedded ({e}): the query ran without a dense lane from it"),
                )])),
            },
        }
    }
}

impl Plan {
    /// Validates `spec` (and runs the embedder `embedding` chose, if any).
    pub(crate) fn new(spec: &RetrieveSpec, embedding: QueryEmbedding) -> Result<Plan, RetrieveError> {
        if spec.list {
            if spec.has_lane() {
                return Err(RetrieveError::invalid(
                    "list",
                    "a listing ranks by no lane: drop `text`, `vector` and `sparse`",
                ));
            }
            for (field, set) in [
                ("expand", spec.expand.is_some()),
                ("fusion", spec.fusion.is_some()),
                ("rerank_top_n", spec.rerank_top_n.is_some()),
                ("planner", spec.planner.is_some()),
            ] {
                if set {
                    return Err(RetrieveError::invalid(field, "not used by a listing (`list`)"));
                }
            }
        } else {
            if !spec.has_lane() {
                return Err(RetrieveError::NoLane);
            }
            if spec.after.is_some() {
                return Err(RetrieveError::invalid("after", "pages a listing: set `list`"));
            }
        }
        let positive = |field: &str, v: Option<usize>| match v {
            Some(0) => Err(RetrieveError::invalid(field, "must be at least 1, got 0")),
            _ => Ok(()),
        };
        positive("limit", spec.limit)?;
        positive("token_budget", spec.token_budget)?;
        positive("rerank_top_n", spec.rerank_top_n)?;
        positive("depth", spec.depth)?;
        for (field, v) in [("depth", spec.depth), ("limit", spec.limit)] {
            if let Some(v) = v.filter(|v| *v > MAX_DEPTH) {
                return Err(RetrieveError::invalid(field, format!("at most {MAX_DEPTH}, got {v}")));
            }
        }
        for (field, labels) in [("labels_all", &spec.labels_all), ("labels_any", &spec.labels_any)] {
            if let Some(i) = labels.iter().position(String::is_empty) {
                return Err(RetrieveError::invalid(format!("{field}[{i}]"), "a label is empty"));
            }
        }
        let predicates = spec
            .where_clauses
            .iter()
            .enumerate()
            .map(|(i, c)| Ok((c.key.clone(), c.to_predicate(i)?)))
            .collect::<Result<Vec<_>, RetrieveError>>()?;
        if let Some(e) = &spec.expand {
            e.check()?;
        }

        let mut lanes = Vec::new();
        let QueryEmbedding { with, mut notes } = embedding;
        let mut embedder = None;
        if let Some(v) = &spec.vector {
            lanes.push(LaneQuery::Dense {
                model: v.model.clone(),
                vector: v.embedding.clone(),
            });
        } else if let (Some(with), Some(text)) = (with, &spec.text) {
            match with.embed(text, &mut notes) {
                Ok(vector) => {
                    lanes.push(LaneQuery::Dense {
                        model: with.model.clone(),
                        vector,
                    });
                    embedder = Some(with);
                }
                Err(e) if !with.strict => notes.push(with.not_embedded(&e)),
                Err(e) => return Err(e),
            }
        }
        if let Some(s) = &spec.sparse {
            lanes.push(LaneQuery::Sparse {
                model: s.model.clone(),
                vector: s.to_vector(),
            });
        }
        if let Some(t) = &spec.text {
            lanes.push(LaneQuery::Text { query: t.clone() });
        }
        for lane in &lanes {
            if let LaneQuery::Dense { model, .. } | LaneQuery::Sparse { model, .. } = lane {
                if model.is_empty() {
                    let field = if matches!(lane, LaneQuery::Dense { .. }) {
                        "vector.model"
                    } else {
                        "sparse.model"
                    };
                    return Err(RetrieveError::invalid(field, "the model name is empty"));
                }
            }
            lane.check()?;
        }
        lanes.sort_by_key(LaneQuery::name);
        let names: Vec<String> = lanes.iter().map(LaneQuery::name).collect();
        let fusion = spec.fusion.clone().unwrap_or_default();
        let (rrf_k, weights) = if spec.list {
            (0.0, Vec::new())
        } else {
            fusion.resolve(&names)?
        };

        Ok(Plan {
            lanes,
            fusion_method: fusion.method,
            rrf_k,
            weights,
            gates: GateSpec {
                labels_all: spec.labels_all.clone(),
                labels_any: spec.labels_any.clone(),
                predicates,
                valid_at_ms: None,
            },
            valid_at: spec.valid_at,
            expand: spec.expand.clone(),
            limit: spec.effective_limit(),
            depth: spec.effective_depth(embedder.is_some()),
            token_budget: spec.token_budget,
            text_cap: spec.text_cap.unwrap_or(DEFAULT_TEXT_CAP_CHARS),
            render_props: spec.render_props.clone(),
            rerank_top_n: spec.rerank_top_n.unwrap_or(DEFAULT_RERANK_TOP_N),
            query_text: spec.text.clone(),
            ann: spec.ann,
            list: spec.list.then(|| spec.after.clone()),
            explain: spec.explain,
            dense_embedded: embedder.is_some(),
            embedder,
            notes,
            planner: spec.planner.unwrap_or_default(),
        })
    }

    /// The index parts the plan's lanes and expansion read (unit graphs only when the
    /// spec asks for the approximate mode; the default mode is decided once the commit's
    /// vector count is known, see [`resolve_for`]).
    pub(crate) fn needs(&self) -> IndexNeeds {
        let mut needs = IndexNeeds {
            edges: self.expand.is_some(),
            ..IndexNeeds::default()
        };
        for lane in &self.lanes {
            match lane {
                LaneQuery::Dense { model, .. } => {
                    needs.dense.insert(model.clone());
                    if self.ann == Some(true) {
                        needs.graphs.insert(model.clone());
                    }
                }
                LaneQuery::Sparse { model, .. } => {
                    needs.sparse.insert(model.clone());
                }
                LaneQuery::Text { .. } => needs.text = true,
            }
        }
        needs
    }

    /// True if `lane`'s query vector came from the embedder (reported per lane).
    pub(crate) fn embedded(&self, lane: &LaneQuery) -> bool {
        self.dense_embedded && matches!(lane, LaneQuery::Dense { .. })
    }

    /// True if the dense lane of `model` runs approximately on this view.
    pub(crate) fn ann_for(&self, indexes: &CommitIndexes, model: &str) -> bool {
        match self.ann {
            Some(a) => a,
            None => indexes.dense(model).is_some_and(|d| d.len() >= ANN_DEFAULT_MIN_VECTORS),
        }
    }
}

/// Resolves the plan's commit with the parts it needs: first as [`Plan::needs`] says,
/// then — when the default mode turns approximate for a model this large — again with the
/// model's unit graphs. So whether a query is approximate depends on the commit's content
/// and the spec, never on what happens to be cached.
pub(crate) fn resolve_for<S: RetrievalSource>(
    source: &S,
    at: Option<&str>,
    plan: &Plan,
) -> Result<ResolvedCommit, RetrieveError> {
    let needs = plan.needs();
    let resolved = source.resolve(at, &needs)?;
    let mut more = needs.clone();
    for lane in &plan.lanes {
        if let LaneQuery::Dense { model, .. } = lane {
            if plan.ann_for(&resolved.indexes, model) {
                more.graphs.insert(model.clone());
            }
        }
    }
    if more == needs {
        return Ok(resolved);
    }
    // Resolve the same commit again (by id: a branch may have moved meanwhile).
    let again = source.resolve_commit(&resolved.commit, &more)?;
    let mut repairs = resolved.repairs;
    repairs.extend(again.repairs.clone());
    Ok(ResolvedCommit { repairs, ..again })
}

/// For each lane that found nothing, how many matches the validity gate alone took from
/// it (`"N match(es) of lane `x`"`), found by running it again without that gate.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::VectorQuery;

    #[test]
    fn plan_refuses_bad_settings() {
        let base = RetrieveSpec {
            text: Some("wings".into()),
            ..RetrieveSpec::default()
        };
        let plugins = Plugins::default();
        assert_eq!(
            Plan::new(&RetrieveSpec::default(), QueryEmbedding::explicit(&plugins)).unwrap_err(),
            RetrieveError::NoLane
        );
        let field = |spec: RetrieveSpec| match Plan::new(&spec, QueryEmbedding::explicit(&plugins)) {
            Err(RetrieveError::InvalidSetting { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(RetrieveSpec {
                limit: Some(0),
                ..base.clone()
            }),
            "limit"
        );
        assert_eq!(
            field(RetrieveSpec {
                token_budget: Some(0),
                ..base.clone()
            }),
            "token_budget"
        );
        assert_eq!(
            field(RetrieveSpec {
                depth: Some(0),
                ..base.clone()
            }),
            "depth"
        );
        assert_eq!(
            field(RetrieveSpec {
                depth: Some(MAX_DEPTH + 1),
                ..base.clone()
            }),
            "depth"
        );
        assert_eq!(
            field(RetrieveSpec {
                limit: Some(MAX_DEPTH + 1),
                ..base.clone()
            }),
            "limit"
        );
        assert_eq!(
            field(RetrieveSpec {
                rerank_top_n: Some(0),
                ..base.clone()
            }),
            "rerank_top_n"
        );
        assert_eq!(
            field(RetrieveSpec {
                labels_any: vec![String::new()],
                ..base.clone()
            }),
            "labels_any[0]"
        );
        assert_eq!(
            field(RetrieveSpec {
                text: Some(" ".into()),
                ..base.clone()
            }),
            "text"
        );
        let empty_vec = RetrieveSpec {
            vector: Some(VectorQuery {
                model: "m".into(),
                embedding: vec![],
            }),
            ..base.clone()
        };
        assert_eq!(field(empty_vec), "vector.embedding");
        let nameless = RetrieveSpec {
            vector: Some(VectorQuery {
                model: String::new(),
                embedding: vec![1.0],
            }),
            ..base.clone()
        };
        assert_eq!(field(nameless), "vector.model");
    }

    #[test]
    fn plan_orders_lanes_and_uses_the_embedder() {
        struct Fake;
        impl Embedder for Fake {
            fn embed(&self, text: &str) -> Result<Vec<f32>, crate::embed::EmbedError> {
                Ok(vec![text.len() as f32, 1.0])
            }
        }
        let spec = RetrieveSpec {
            text: Some("abc".into()),
            ..RetrieveSpec::default()
        };
        let plugins = Plugins {
            embedder: Some(("m".into(), Arc::new(Fake))),
            ..Plugins::default()
        };
        let plan = Plan::new(&spec, QueryEmbedding::explicit(&plugins)).unwrap();
        assert_eq!(
            plan.lanes,
            vec![
                LaneQuery::Dense {
                    model: "m".into(),
                    vector: vec![3.0, 1.0]
                },
                LaneQuery::Text { query: "abc".into() }
            ]
        );
        assert_eq!(
            (plan.limit, plan.depth, plan.text_cap, plan.rrf_k),
            (10, 1000, 1000, 60.0)
        );
        assert_eq!(plan.fusion_method, FusionMethod::Score);
    }
}
