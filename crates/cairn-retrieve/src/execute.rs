//! The pipeline on a resolved commit: validate → gates → plan → lanes → fusion (+ soft
//! boosts) → expansion → rerank → packing → result. [`execute_spec`] is the whole of it, with no repository in
//! sight, so every stage is testable over in-memory indexes.

use std::fmt;
use std::sync::Arc;

use cairn_core::Node;
use cairn_index::{CommitIndexes, IndexError, IndexNeeds, Ordinal};
use rayon::prelude::*;

use crate::embed::Embedder;
use crate::error::RetrieveError;
use crate::expand::{expand, GraphExpand, MAX_EXPANSION_VISITS};
use crate::explain::{self, ExpansionTerm, FusionTerm};
use crate::fusion::{fuse, Fused, FusionMethod, LaneHits, LanePlace};
use crate::gates::{Gate, GateSpec};
use crate::lanes::{run_lane, LaneQuery, LaneRun};
use crate::pack::pack;
use crate::planner::{PlanReport, PlanRequest, PlannerMode, QueryPlan, QueryPlanner, RulePlanner, SoftBoost};
use crate::render::{min_rendered_chars, render_item, DEFAULT_TEXT_CAP_CHARS};
use crate::rerank::{rerank_order, RerankCandidate, RerankError, Reranker};
use crate::result::{LaneReport, LaneScore, RetrievalResult, RetrievedItem, Warning, WarningCode};
use crate::source::{ResolvedCommit, RetrievalSource, SourceError};
use crate::spec::{RetrieveSpec, ValidAt, ANN_DEFAULT_MIN_VECTORS, DEFAULT_RERANK_TOP_N, MAX_DEPTH};
use crate::tokens::{CharRatioEstimator, TokenEstimator};

/// The optional models a retrieval can use: a reranker, a token estimator (default
/// [`CharRatioEstimator`]), a query embedder for one dense model and a query planner
/// (default [`RulePlanner`]).
#[derive(Clone, Default)]
pub struct Plugins {
    /// Plans the query (rewrites, soft boosts); [`RulePlanner`] if `None`, none at all
    /// with the spec's `"planner": "none"`.
    pub planner: Option<Arc<dyn QueryPlanner>>,
    /// Reorders the top `rerank_top_n` items; none by default.
    pub reranker: Option<Arc<dyn Reranker>>,
    /// Estimates tokens for packing; [`CharRatioEstimator`] if `None`.
    pub token_estimator: Option<Arc<dyn TokenEstimator>>,
    /// `(dense model, embedder)`: embeds the spec's `text` when it has no `vector`.
    pub embedder: Option<(String, Arc<dyn Embedder>)>,
}

impl fmt::Debug for Plugins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugins")
            .field("reranker", &self.reranker.is_some())
            .field("token_estimator", &self.token_estimator.is_some())
            .field("embedder", &self.embedder.as_ref().map(|(m, _)| m))
            .field("planner", &self.planner.as_ref().map(|p| p.name().to_string()))
            .finish()
    }
}

/// Runs `spec` on an already-resolved commit (the spec's `at` is not consulted: the
/// caller resolved it). See the crate docs for every stage.
///
/// Errors: any invalid setting ([`RetrieveError::NoLane`],
/// [`RetrieveError::InvalidSetting`]), a lane the indexes refuse
/// ([`RetrieveError::Index`]), an embedder failure, or a node the source cannot load.
///
/// ```
/// use std::sync::Arc;
/// use cairn_core::{CommitId, Hash, Node, NodeId};
/// use cairn_index::{CommitIndexes, IndexParams};
/// use cairn_retrieve::{execute_spec, Plugins, ResolvedCommit, RetrieveSpec};
///
/// let node = Node::new(NodeId::new("doc-1").unwrap()).with_text("how wings stall");
/// let nodes = vec![(Hash::of(b"doc-1"), node)];
/// let commit = ResolvedCommit {
///     commit: CommitId(Hash::of(b"commit")),
///     timestamp_ms: 0,
///     indexes: Arc::new(CommitIndexes::build(Hash::of(b"key"), &IndexParams::default(), &nodes, &[])),
///     repairs: Vec::new(),
/// };
/// let spec = RetrieveSpec::from_json(r#"{"text": "stall"}"#)?;
/// let result = execute_spec(&commit, &spec, &Plugins::default())?;
/// assert_eq!(result.items[0].id.as_str(), "doc-1");
/// assert_eq!(result.items[0].text, "id: doc-1\ntext: how wings stall");
/// # Ok::<(), cairn_retrieve::RetrieveError>(())
/// ```
pub fn execute_spec(
    resolved: &ResolvedCommit,
    spec: &RetrieveSpec,
    plugins: &Plugins,
) -> Result<RetrievalResult, RetrieveError> {
    let plan = Plan::new(spec, QueryEmbedding::explicit(plugins))?;
    if !resolved.indexes.satisfies(&plan.needs()) {
        return Err(RetrieveError::Source(SourceError::Storage(
            "the resolved commit's index view lacks parts this spec reads".into(),
        )));
    }
    run_plan(resolved, &plan, plugins)
}

/// A checked spec: every setting validated and defaulted, lanes in name order.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    lanes: Vec<LaneQuery>,
    fusion_method: FusionMethod,
    rrf_k: f64,
    weights: Vec<f64>,
    gates: GateSpec,
    valid_at: Option<ValidAt>,
    expand: Option<GraphExpand>,
    limit: usize,
    depth: usize,
    token_budget: Option<usize>,
    text_cap: usize,
    render_props: Vec<String>,
    rerank_top_n: usize,
    query_text: Option<String>,
    ann: Option<bool>,
    /// List mode, with the id to start after.
    list: Option<Option<String>>,
    /// Explain every item.
    explain: bool,
    /// The dense lane's query vector comes from the embedder (reported per lane; a plan
    /// may re-embed it).
    dense_embedded: bool,
    /// The embedder that made it, if any.
    embedder: Option<EmbedWith>,
    /// Warnings raised while planning (the query embedding's), reported first.
    notes: Vec<Warning>,
    /// Plan the query (`"planner": "none"` switches it off).
    planner: PlannerMode,
}

/// A query embedder chosen for a plan, and whether its failure fails the retrieval.
#[derive(Clone)]
pub(crate) struct EmbedWith {
    model: String,
    embedder: Arc<dyn Embedder>,
    /// Chosen by the caller (a named embedder, or one given to the builder): a failure is
    /// an error. The source's default: a failure is a warning.
    strict: bool,
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
    fn embed(&self, text: &str, notes: &mut Vec<Warning>) -> Result<Vec<f32>, RetrieveError> {
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
    fn not_embedded(&self, e: &RetrieveError) -> Warning {
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
    fn embedded(&self, lane: &LaneQuery) -> bool {
        self.dense_embedded && matches!(lane, LaneQuery::Dense { .. })
    }

    /// True if the dense lane of `model` runs approximately on this view.
    fn ann_for(&self, indexes: &CommitIndexes, model: &str) -> bool {
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
    let again = source.resolve(Some(&resolved.commit.to_hex()), &more)?;
    let mut repairs = resolved.repairs;
    repairs.extend(again.repairs.clone());
    Ok(ResolvedCommit { repairs, ..again })
}

/// For each lane that found nothing, how many matches the validity gate alone took from
/// it (`"N match(es) of lane `x`"`), found by running it again without that gate.
fn validity_hidden(
    indexes: &CommitIndexes,
    plan: &Plan,
    lanes: &[LaneQuery],
    lane_hits: &[LaneHits],
    others: Option<&cairn_index::Filter>,
    unavailable: &[RetrieveError],
) -> Result<Vec<String>, RetrieveError> {
    let mut hidden = Vec::new();
    for (query, hits) in lanes.iter().zip(lane_hits) {
        let name = query.name();
        let skipped = unavailable
            .iter()
            .any(|e| matches!(e, RetrieveError::Index { lane, .. } if *lane == name));
        if !hits.hits.is_empty() || skipped {
            continue;
        }
        let again = run_lane(indexes, query, plan.depth, others, false)?;
        if !again.hits.hits.is_empty() {
            let n = again.hits.hits.len();
            let more = if n == plan.depth { "+" } else { "" };
            hidden.push(format!("{n}{more} match(es) of lane `{name}`"));
        }
    }
    Ok(hidden)
}

/// A listing looks at most this many times `limit` nodes for one page.
const LIST_WINDOW: usize = 16;

/// The first ordinal whose id sorts after `id` (ordinals follow the ids' byte order).
fn first_ordinal_after(indexes: &CommitIndexes, id: &str) -> Ordinal {
    let (mut lo, mut hi) = (0, indexes.node_count());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if indexes.id(mid).as_str().as_bytes() <= id.as_bytes() {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// One entry of the final ranking, before packing.
#[derive(Debug, Clone)]
struct Ranked {
    ordinal: Ordinal,
    score: f64,
    rerank_score: Option<f64>,
    lanes: Vec<LanePlace>,
    path: Option<Vec<Ordinal>>,
    /// How expansion scored it (expansion on only).
    expansion: Option<ExpansionTerm>,
}

/// Runs the planner the plugins and the spec ask for. `Ok(None)`: no planning (switched
/// off, or a listing); `Err`: the planner failed or returned an invalid plan (the
/// retrieval goes on unplanned, with a warning).
fn run_planner(plan: &Plan, plugins: &Plugins, reference_ms: i64) -> Result<Option<(String, QueryPlan)>, String> {
    if plan.planner == PlannerMode::None || plan.list.is_some() {
        return Ok(None);
    }
    let default_planner = RulePlanner::default();
    let planner: &dyn QueryPlanner = match &plugins.planner {
        Some(p) => p.as_ref(),
        None => &default_planner,
    };
    let names: Vec<String> = plan.lanes.iter().map(LaneQuery::name).collect();
    let request = PlanRequest {
        text: plan.query_text.as_deref(),
        reference_ms,
        lanes: &names,
    };
    let name = planner.name().to_string();
    let qp = planner
        .plan(&request)
        .map_err(|e| format!("planner `{name}` failed, the query runs unplanned: {e}"))?;
    for (i, b) in qp.boosts.iter().enumerate() {
        b.check()
            .map_err(|m| format!("planner `{name}` returned an invalid boost {i} ({m}), the query runs unplanned"))?;
    }
    for (field, text) in [("text", &qp.text), ("embed_text", &qp.embed_text)] {
        if text.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(format!(
                "planner `{name}` returned an empty `{field}`, the query runs unplanned"
            ));
        }
    }
    Ok(Some((name, qp)))
}

/// The plan's lanes with the planner's rewrites applied: the text lane's query, and the
/// dense lane's vector re-embedded from `embed_text` when the embedder made it.
fn planned_lanes(
    plan: &Plan,
    qp: Option<&QueryPlan>,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<LaneQuery>, RetrieveError> {
    let mut lanes = plan.lanes.clone();
    let Some(qp) = qp else { return Ok(lanes) };
    for lane in &mut lanes {
        match lane {
            LaneQuery::Text { query } => {
                if let Some(t) = &qp.text {
                    query.clone_from(t);
                }
            }
            LaneQuery::Dense { vector, .. } if plan.dense_embedded => {
                if let (Some(t), Some(with)) = (&qp.embed_text, &plan.embedder) {
                    match with.embed(t, warnings) {
                        Ok(v) => *vector = v,
                        // The default embedder failing on the rewrite keeps the query's
                        // own vector.
                        Err(e) if !with.strict => warnings.push(with.not_embedded(&e)),
                        Err(e) => return Err(e),
                    }
                }
            }
            _ => {}
        }
        lane.check()?;
    }
    Ok(lanes)
}

/// Adds the plan's soft boosts to the fused scores (each boost in plan order, after the
/// lanes' sum) and restores the `(score desc, ordinal asc)` order. Returns how many
/// candidates gained.
fn apply_boosts(indexes: &CommitIndexes, boosts: &[SoftBoost], top: f64, fused: &mut [Fused]) -> usize {
    if boosts.is_empty() {
        return 0;
    }
    let mut boosted = 0;
    for f in fused.iter_mut() {
        let (from, until) = indexes.validity(f.ordinal);
        let mut gained = false;
        for b in boosts {
            let strength = b.strength(from, until);
            if strength > 0.0 {
                f.score += b.weight() * top * strength;
                gained = true;
            }
        }
        boosted += usize::from(gained);
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.ordinal.cmp(&b.ordinal)));
    boosted
}

/// The explanation terms of the boosts a node gained.
fn boost_terms(indexes: &CommitIndexes, boosts: &[SoftBoost], top: f64, ordinal: Ordinal) -> Vec<FusionTerm> {
    let (from, until) = indexes.validity(ordinal);
    boosts
        .iter()
        .filter_map(|b| {
            let strength = b.strength(from, until);
            (strength > 0.0).then(|| FusionTerm {
                lane: b.term_name().to_string(),
                rank: 0,
                lane_score: strength as f32,
                weight: b.weight(),
                contribution: b.weight() * top * strength,
            })
        })
        .collect()
}

/// Runs a checked plan on a resolved commit.
pub(crate) fn run_plan(
    resolved: &ResolvedCommit,
    plan: &Plan,
    plugins: &Plugins,
) -> Result<RetrievalResult, RetrieveError> {
    let indexes: &CommitIndexes = &resolved.indexes;
    let valid_at_ms = match plan.valid_at {
        None => Some(resolved.timestamp_ms),
        Some(ValidAt::At(t)) => Some(t),
        Some(ValidAt::AllTime) => None,
    };
    let mut warnings: Vec<Warning> = plan.notes.clone();
    warnings.extend(
        resolved
            .repairs
            .iter()
            .map(|r| Warning::new(WarningCode::DerivedRebuilt, r.clone())),
    );

    // Gates, pushed into every lane's search as its filter.
    let gate = Gate::build(
        indexes,
        &GateSpec {
            valid_at_ms,
            ..plan.gates.clone()
        },
    );
    let gates_empty = gate.filter.as_ref().is_some_and(|f| f.is_empty());
    if gates_empty {
        warnings.push(Warning::new(
            WarningCode::GatesMatchNothing,
            "no node of the commit passes the label, property and validity gates",
        ));
    }

    // Plan: the reference time of relative expressions is the validity time asked for,
    // else the commit's (never the wall clock).
    let reference_ms = match plan.valid_at {
        Some(ValidAt::At(t)) => t,
        _ => resolved.timestamp_ms,
    };
    let planned = match run_planner(plan, plugins, reference_ms) {
        Ok(p) => p,
        Err(message) => {
            warnings.push(Warning::new(WarningCode::PlannerFailed, message));
            None
        }
    };
    let lanes = planned_lanes(plan, planned.as_ref().map(|p| &p.1), &mut warnings)?;
    let boosts: &[SoftBoost] = planned.as_ref().map_or(&[], |p| &p.1.boosts);

    // Lanes.
    let mut lane_hits: Vec<LaneHits> = Vec::with_capacity(plan.lanes.len());
    let mut unavailable: Vec<RetrieveError> = Vec::new();
    // Whether each lane ran (false: it cannot run on this commit).
    let mut ran: Vec<bool> = Vec::with_capacity(plan.lanes.len());
    let mut reports = Vec::with_capacity(plan.lanes.len());
    // The lanes run at once (each also splits its own scan): every lane's result is a
    // function of the commit and its query alone, and the results are taken in lane order.
    let runs: Vec<Result<LaneRun, RetrieveError>> = lanes
        .par_iter()
        .map(|query| {
            let ann = match query {
                LaneQuery::Dense { model, .. } => plan.ann_for(indexes, model),
                _ => false,
            };
            run_lane(indexes, query, plan.depth, gate.filter.as_ref(), ann)
        })
        .collect();
    for (query, run) in lanes.iter().zip(runs) {
        let run = match run {
            Ok(run) => run,
            // A model this commit has no vectors of (an older commit, another branch):
            // the lane cannot run here; the others do, unless none can.
            Err(
                e @ RetrieveError::Index {
                    source: IndexError::UnknownModel { .. },
                    ..
                },
            ) => {
                warnings.push(Warning::new(
                    WarningCode::LaneUnavailable,
                    format!("{e}: this lane cannot run on this commit; the other lanes ran without it"),
                ));
                unavailable.push(e);
                ran.push(false);
                lane_hits.push(LaneHits {
                    name: query.name(),
                    hits: Vec::new(),
                });
                reports.push(LaneReport {
                    name: query.name(),
                    hits: 0,
                    approximate: false,
                    embedded: plan.embedded(query),
                });
                continue;
            }
            Err(e) => return Err(e),
        };
        if run.hits.hits.is_empty() && !gates_empty {
            warnings.push(Warning::new(
                WarningCode::LaneEmpty,
                format!("lane `{}` found no candidates", run.hits.name),
            ));
        }
        if run.approximate {
            warnings.push(Warning::new(
                WarningCode::DenseApproximate,
                format!("lane `{}` used an approximate (HNSW) index", run.hits.name),
            ));
        }
        reports.push(LaneReport {
            name: run.hits.name.clone(),
            hits: run.hits.hits.len(),
            approximate: run.approximate,
            embedded: plan.embedded(query),
        });
        lane_hits.push(run.hits);
        ran.push(true);
    }

    if !plan.lanes.is_empty() && unavailable.len() == plan.lanes.len() {
        return Err(unavailable.swap_remove(0));
    }
    // A lane that found nothing only because of validity: say what validity hid (the
    // validity-free filter is built only then).
    if gate.valid.is_some() && lane_hits.iter().any(|l| l.hits.is_empty()) {
        let others = Gate::without_validity(indexes, &plan.gates);
        let hidden = validity_hidden(indexes, plan, &lanes, &lane_hits, others.as_ref(), &unavailable)?;
        if !hidden.is_empty() {
            let when = match plan.valid_at {
                None => "the commit's time, the default",
                Some(_) => "the time asked for",
            };
            warnings.push(Warning::new(
                WarningCode::ValidityExcluded,
                format!(
                    "validity at {} ms ({when}) excluded {}: facts not yet valid or already ended then; set `valid_at` to another time, or all time (CLI: --valid-at, --all-time), to see them",
                    valid_at_ms.unwrap_or_default(),
                    hidden.join(", ")
                ),
            ));
        }
    }

    // A lane that cannot run weighs nothing: the fusion, its scale and the explanation
    // are those of the query without it.
    let weights: Vec<f64> = plan
        .weights
        .iter()
        .zip(&ran)
        .map(|(w, ran)| if *ran { *w } else { 0.0 })
        .collect();
    let ran_weights: Vec<f64> = plan
        .weights
        .iter()
        .zip(&ran)
        .filter(|(_, ran)| **ran)
        .map(|(w, _)| *w)
        .collect();
    if !plan.lanes.is_empty() && plan.fusion_method != FusionMethod::Rrf && !weights.iter().any(|w| *w > 0.0) {
        return Err(RetrieveError::invalid(
            "fusion.weights",
            "every lane that can run on this commit weighs 0 (the lanes with a weight above 0 cannot run here)",
        ));
    }

    // Fusion, then the planner's soft boosts on the fusion's scale.
    let mut fused = fuse(&lane_hits, plan.fusion_method, plan.rrf_k, &weights);
    let scale_top = plan.fusion_method.scale_top(plan.rrf_k, &ran_weights);
    let boosted = apply_boosts(indexes, boosts, scale_top, &mut fused);
    let plan_report = planned
        .as_ref()
        .filter(|(_, qp)| !qp.is_empty())
        .map(|(planner, qp)| PlanReport {
            planner: planner.clone(),
            plan: qp.clone(),
            boosted,
        });
    let mut candidates_seen = fused.len();

    // Expansion (onto one score scale with the fused candidates).
    let mut ranked: Vec<Ranked> = match &plan.expand {
        None => fused
            .into_iter()
            .map(|f| Ranked {
                ordinal: f.ordinal,
                score: f.score,
                rerank_score: None,
                lanes: f.lanes,
                path: None,
                expansion: None,
            })
            .collect(),
        Some(settings) => {
            let (ranked, considered) = rank_with_expansion(indexes, settings, &gate, fused, plan.limit, &mut warnings);
            candidates_seen += considered;
            ranked
        }
    };

    // Rerank the top N.
    if let Some(reranker) = &plugins.reranker {
        if let Err(e) = rerank_head(reranker.as_ref(), plan, &mut ranked, indexes) {
            warnings.push(Warning::new(
                WarningCode::RerankFailed,
                format!("the reranker failed, the retrieval order stands: {e}"),
            ));
        }
    }

    // List mode: the admitted nodes in id order (ordinals follow ids), after `after`.
    if let Some(after) = &plan.list {
        let start = match after {
            None => 0,
            Some(id) => first_ordinal_after(indexes, id),
        };
        let admitted: Box<dyn Iterator<Item = Ordinal>> = match &gate.filter {
            Some(f) => Box::new(f.iter().skip_while(move |o| *o < start)),
            None => Box::new(start..indexes.node_count()),
        };
        // Enough for a page even if the budget skips many (an item that does not fit is
        // skipped, as in a ranking).
        let window = plan.limit.saturating_mul(LIST_WINDOW);
        ranked = admitted
            .take(window)
            .map(|ordinal| Ranked {
                ordinal,
                score: 0.0,
                rerank_score: None,
                lanes: Vec::new(),
                path: None,
                expansion: None,
            })
            .collect();
        // For a listing: how many nodes pass the gates (the whole listing, every page).
        candidates_seen = gate
            .filter
            .as_ref()
            .map_or(indexes.node_count() as usize, |f| f.len() as usize);
    }

    // Pack.
    let default_estimator = CharRatioEstimator::default();
    let estimator: &dyn TokenEstimator = match &plugins.token_estimator {
        Some(e) => e.as_ref(),
        None => &default_estimator,
    };
    let min_tokens = |i: usize| {
        let o = ranked[i].ordinal;
        estimator.lower_bound(min_rendered_chars(
            indexes.id(o).as_str(),
            indexes.text_chars(o),
            plan.text_cap,
        ))
    };
    let packed = pack(
        ranked.len(),
        plan.limit,
        plan.token_budget,
        estimator,
        min_tokens,
        |i| {
            Ok::<_, std::convert::Infallible>(render_item(
                indexes,
                ranked[i].ordinal,
                &plan.render_props,
                plan.text_cap,
            ))
        },
    )
    .unwrap_or_else(|e| match e {});
    if packed.dropped > 0 {
        warnings.push(Warning::new(
            WarningCode::BudgetDropped,
            format!(
                "{} item(s) did not fit the budget of {} tokens and were skipped",
                packed.dropped,
                plan.token_budget.unwrap_or(usize::MAX)
            ),
        ));
    }

    let lane_names: Vec<&str> = reports.iter().map(|r| r.name.as_str()).collect();
    let explainer = plan.explain.then(|| explain::Context {
        indexes,
        method: plan.fusion_method,
        rrf_k: plan.rrf_k,
        weights: &weights,
        scales: explain::Context::scales_of(plan.fusion_method, &lane_hits),
        lane_names: &lane_names,
        gates: explain::Context::gate_lines(&GateSpec {
            valid_at_ms,
            ..plan.gates.clone()
        }),
    });
    let items = packed
        .items
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let r = &ranked[p.position];
            let (from, until) = indexes.validity(r.ordinal);
            RetrievedItem {
                id: indexes.id(r.ordinal).clone(),
                rank: i + 1,
                score: r.score,
                rerank_score: r.rerank_score,
                lanes: r
                    .lanes
                    .iter()
                    .map(|l| {
                        (
                            lane_names[l.lane].to_string(),
                            LaneScore {
                                rank: l.rank,
                                score: l.score,
                            },
                        )
                    })
                    .collect(),
                source_path: r
                    .path
                    .as_ref()
                    .map(|p| p.iter().map(|o| indexes.id(*o).clone()).collect()),
                text: p.text,
                tokens: p.tokens,
                labels: indexes.labels_of(r.ordinal).into_iter().map(str::to_owned).collect(),
                props: indexes.props_of(r.ordinal),
                node_text: indexes.text(r.ordinal).to_owned(),
                valid_from_ms: (from != i64::MIN).then_some(from),
                valid_until_ms: (until != i64::MAX).then_some(until),
                explain: explainer.as_ref().map(|x| {
                    x.explain(
                        &r.lanes,
                        boost_terms(indexes, boosts, scale_top, r.ordinal),
                        r.expansion.clone(),
                        r.path.as_deref(),
                    )
                }),
            }
        })
        .collect();

    Ok(RetrievalResult {
        commit: Some(resolved.commit),
        valid_at: valid_at_ms,
        items,
        tokens_used: packed.tokens_used,
        tokens_budget: plan.token_budget,
        dropped: packed.dropped,
        candidates_seen,
        lanes: reports,
        plan: plan_report,
        warnings,
    })
}

/// The answer of a retrieval at the head of `branch`, which has no commits yet: no items,
/// each lane reported with no hits, and an [`WarningCode::EmptyRepository`] warning.
pub(crate) fn empty_result(plan: &Plan, branch: &str) -> RetrievalResult {
    let lanes = plan
        .lanes
        .iter()
        .map(|q| LaneReport {
            name: q.name(),
            hits: 0,
            approximate: false,
            embedded: plan.embedded(q),
        })
        .collect();
    RetrievalResult {
        commit: None,
        valid_at: match plan.valid_at {
            Some(ValidAt::At(t)) => Some(t),
            _ => None,
        },
        items: Vec::new(),
        tokens_used: 0,
        tokens_budget: plan.token_budget,
        dropped: 0,
        candidates_seen: 0,
        lanes,
        plan: None,
        warnings: plan
            .notes
            .iter()
            .cloned()
            .chain([Warning::new(
                WarningCode::EmptyRepository,
                format!("the current branch `{branch}` has no commits yet: nothing is stored, so nothing was found"),
            )])
            .collect(),
    }
}

/// Expands from the top fused candidates and merges everything into one ranking on the
/// expansion scale; returns it with the number of new nodes considered.
fn rank_with_expansion(
    indexes: &CommitIndexes,
    settings: &GraphExpand,
    gate: &Gate,
    fused: Vec<Fused>,
    limit: usize,
    warnings: &mut Vec<Warning>,
) -> (Vec<Ranked>, usize) {
    // Min-max over the candidates that compete for the result (the top `limit + max_nodes`):
    // fused scores live on the fusion's scale — under RRF they are nearly flat at the top —
    // so dividing by the top score would leave every direct hit near 1 and no expanded node
    // could ever win a place. See the module docs of `expand`.
    let window = (limit + settings.max_nodes).clamp(1, fused.len().max(1));
    let top = fused.first().map_or(0.0, |f| f.score);
    let floor = fused.get(window - 1).map_or(0.0, |f| f.score);
    let norm = |s: f64| {
        if top > floor {
            ((s - floor) / (top - floor)).clamp(0.0, 1.0)
        } else {
            1.0
        }
    };
    let seeds: Vec<(Ordinal, f64)> = fused.iter().map(|f| (f.ordinal, norm(f.score))).collect();
    let n_seeds = settings.seeds.unwrap_or(limit).min(seeds.len());
    let exp = expand(indexes, settings, gate, &seeds, n_seeds);
    if !exp.unknown_kinds.is_empty() {
        warnings.push(Warning::new(
            WarningCode::ExpansionUnknownKind,
            format!("the commit has no edges of kind {}", quote_list(&exp.unknown_kinds)),
        ));
    }
    if exp.edges_followed == 0 && n_seeds > 0 {
        warnings.push(Warning::new(
            WarningCode::ExpansionNoEdges,
            format!("graph expansion found no usable edge from its {n_seeds} seed(s)"),
        ));
    }
    if exp.added.is_empty() && exp.gated_out > 0 {
        warnings.push(Warning::new(
            WarningCode::ExpansionGated,
            format!(
                "graph expansion reached {} node(s) that the label or property gates exclude, and added none: \
                 expansion adds only nodes that pass every gate (drop or widen the gates to see them)",
                exp.gated_out
            ),
        ));
    }
    if exp.truncated {
        warnings.push(Warning::new(
            WarningCode::ExpansionTruncated,
            format!("graph expansion stopped after examining {MAX_EXPANSION_VISITS} edges"),
        ));
    }
    let seed_norm: std::collections::BTreeMap<Ordinal, f64> = seeds[..n_seeds].iter().copied().collect();
    let reached = |reach: &crate::expand::Reach| ExpansionTerm {
        normalised: seed_norm.get(&reach.path[0]).copied().unwrap_or(0.0),
        distance: reach.distance,
        score: reach.score,
    };
    let mut improved = exp.improved;
    let mut out: Vec<Ranked> = fused
        .into_iter()
        .map(|f| {
            let (score, path, term) = match improved.remove(&f.ordinal) {
                Some(reach) => (reach.score, Some(reach.path.clone()), reached(&reach)),
                None => {
                    let n = norm(f.score);
                    let score = settings.candidate_score(n);
                    let term = ExpansionTerm {
                        normalised: n,
                        distance: 0,
                        score,
                    };
                    (score, None, term)
                }
            };
            Ranked {
                ordinal: f.ordinal,
                score,
                rerank_score: None,
                lanes: f.lanes,
                path,
                expansion: Some(term),
            }
        })
        .collect();
    out.extend(exp.added.into_iter().map(|(ordinal, reach)| Ranked {
        ordinal,
        score: reach.score,
        rerank_score: None,
        lanes: Vec::new(),
        expansion: Some(reached(&reach)),
        path: Some(reach.path),
    }));
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.ordinal.cmp(&b.ordinal)));
    (out, exp.considered)
}

/// Reranks the top `rerank_top_n` of `ranked` in place; on a reranker failure the order
/// is unchanged. Candidates carry their node as the index holds it (id, labels,
/// properties, text, validity; no vectors).
fn rerank_head(
    reranker: &dyn Reranker,
    plan: &Plan,
    ranked: &mut Vec<Ranked>,
    indexes: &CommitIndexes,
) -> Result<(), RerankError> {
    let n = plan.rerank_top_n.min(ranked.len());
    if n == 0 {
        return Ok(());
    }
    let nodes: Vec<Node> = ranked[..n]
        .iter()
        .map(|r| node_from_columns(indexes, r.ordinal))
        .collect();
    let candidates: Vec<RerankCandidate<'_>> = ranked[..n]
        .iter()
        .zip(&nodes)
        .map(|(r, node)| RerankCandidate {
            id: &node.id,
            node,
            score: r.score,
        })
        .collect();
    let order = rerank_order(reranker, plan.query_text.as_deref(), &candidates)?;
    let head: Vec<Ranked> = order
        .iter()
        .map(|&(i, s)| Ranked {
            rerank_score: Some(s),
            ..ranked[i].clone()
        })
        .collect();
    ranked.splice(..n, head);
    Ok(())
}

/// The node at `ordinal` as the index's columns hold it.
fn node_from_columns(indexes: &CommitIndexes, ordinal: Ordinal) -> Node {
    let (from, until) = indexes.validity(ordinal);
    let mut node = Node::new(indexes.id(ordinal).clone()).with_text(indexes.text(ordinal));
    for l in indexes.labels_of(ordinal) {
        node = node.with_label(l);
    }
    node.props = indexes.props_of(ordinal);
    node.validity = cairn_core::Validity::new((from != i64::MIN).then_some(from), (until != i64::MAX).then_some(until));
    node
}

fn quote_list(xs: &[String]) -> String {
    xs.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
}

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
