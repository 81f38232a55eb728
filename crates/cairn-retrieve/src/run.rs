//! Running a checked plan on a resolved commit, stage by stage: gates → query planner →
//! lanes → fusion (+ soft boosts) → expansion → rerank → listing → packing → result
//! ([`run_plan`]), and the answer of an empty branch ([`empty_result`]).

use cairn_core::Node;
use cairn_index::{CommitIndexes, IndexError, Ordinal};
use rayon::prelude::*;

use crate::error::RetrieveError;
use crate::execute::Plugins;
use crate::expand::{expand, GraphExpand, MAX_EXPANSION_VISITS};
use crate::explain::{self, ExpansionTerm, FusionTerm};
use crate::fusion::{fuse, Fused, FusionMethod, LaneHits, LanePlace};
use crate::gates::{Gate, GateSpec};
use crate::lanes::{run_lane, LaneQuery, LaneRun};
use crate::pack::{pack, Packed};
use crate::plan::Plan;
use crate::planner::{PlanReport, PlanRequest, PlannerMode, QueryPlan, QueryPlanner, RulePlanner, SoftBoost};
use crate::render::{min_rendered_chars, render_item};
use crate::rerank::{rerank_order, RerankCandidate, RerankError, Reranker};
use crate::result::{LaneReport, LaneScore, RetrievalResult, RetrievedItem, Warning, WarningCode};
use crate::source::ResolvedCommit;
use crate::spec::ValidAt;
use crate::tokens::{CharRatioEstimator, TokenEstimator};

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
        if indexes.id(mid).as_bytes() <= id.as_bytes() {
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
        let mut gained = false;
        for b in boosts {
            let strength = b.strength(indexes, f.ordinal);
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
    boosts
        .iter()
        .filter_map(|b| {
            let strength = b.strength(indexes, ordinal);
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
    let LaneResults {
        hits: lane_hits,
        ran,
        reports,
    } = run_lanes(indexes, plan, &lanes, &gate, valid_at_ms, &mut warnings)?;

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
        let n = plan.rerank_top_n.min(ranked.len());
        let nodes: Vec<Node> = ranked[..n]
            .iter()
            .map(|r| node_from_columns(indexes, r.ordinal))
            .collect::<Result<_, _>>()?;
        if let Err(e) = rerank_head(reranker.as_ref(), plan, &mut ranked, &nodes) {
            warnings.push(Warning::new(
                WarningCode::RerankFailed,
                format!("the reranker failed, the retrieval order stands: {e}"),
            ));
        }
    }

    // List mode: the admitted nodes in id order (ordinals follow ids), after `after`.
    if let Some(after) = &plan.list {
        (ranked, candidates_seen) = list_page(indexes, plan, &gate, after.as_deref());
    }

    // Pack.
    let packed = pack_ranked(indexes, plan, plugins, &ranked, &mut warnings)?;

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
            Ok(RetrievedItem {
                id: indexes.node_id(r.ordinal),
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
                source_path: r.path.as_ref().map(|p| p.iter().map(|o| indexes.node_id(*o)).collect()),
                text: p.text,
                tokens: p.tokens,
                labels: indexes.labels_of(r.ordinal).into_iter().map(str::to_owned).collect(),
                props: indexes.props_of(r.ordinal),
                node_text: node_text(indexes, r.ordinal)?,
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
            })
        })
        .collect::<Result<_, RetrieveError>>()?;

    Ok(RetrievalResult {
        commit: Some(resolved.commit),
        valid_at: valid_at_ms,
        items,
        tokens_used: packed.tokens_used,
        token_budget: plan.token_budget,
        dropped: packed.dropped,
        candidates_seen,
        lanes: reports,
        plan: plan_report,
        warnings,
    })
}

/// List mode: up to a page's window of the nodes the gates admit, in id order (ordinals
/// follow ids) after `after`, and how many pass the gates (the whole listing, every page).
fn list_page(indexes: &CommitIndexes, plan: &Plan, gate: &Gate, after: Option<&str>) -> (Vec<Ranked>, usize) {
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
    let ranked = admitted
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
    let passing = gate
        .filter
        .as_ref()
        .map_or(indexes.node_count() as usize, |f| f.len() as usize);
    (ranked, passing)
}

/// Packing: the ranked items in order, each rendered only if it can still fit (see
/// `pack.rs`), under the token budget and `limit`; a warning says how many were dropped.
fn pack_ranked(
    indexes: &CommitIndexes,
    plan: &Plan,
    plugins: &Plugins,
    ranked: &[Ranked],
    warnings: &mut Vec<Warning>,
) -> Result<Packed, RetrieveError> {
    let default_estimator = CharRatioEstimator::default();
    let estimator: &dyn TokenEstimator = match &plugins.token_estimator {
        Some(e) => e.as_ref(),
        None => &default_estimator,
    };
    let min_tokens = |i: usize| {
        let o = ranked[i].ordinal;
        estimator.lower_bound(min_rendered_chars(
            indexes.id_chars(o),
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
        |i| render_item(indexes, ranked[i].ordinal, &plan.render_props, plan.text_cap).map_err(unreadable),
    )?;
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
    Ok(packed)
}

/// What the lanes stage hands the fusion, in lane order: each lane's hits (none for a lane
/// that cannot run on this commit), whether it ran, and its report.
struct LaneResults {
    hits: Vec<LaneHits>,
    ran: Vec<bool>,
    reports: Vec<LaneReport>,
}

/// The lanes stage: every lane at once under the gates' filter (each also splits its own
/// scan; the results are taken in lane order), a lane whose model this commit lacks
/// skipped with a warning (an error only if no lane can run), and — when a lane found
/// nothing only because of validity — what validity hid.
fn run_lanes(
    indexes: &CommitIndexes,
    plan: &Plan,
    lanes: &[LaneQuery],
    gate: &Gate,
    valid_at_ms: Option<i64>,
    warnings: &mut Vec<Warning>,
) -> Result<LaneResults, RetrieveError> {
    let gates_empty = gate.filter.as_ref().is_some_and(|f| f.is_empty());
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
        let hidden = validity_hidden(indexes, plan, lanes, &lane_hits, others.as_ref(), &unavailable)?;
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
    Ok(LaneResults {
        hits: lane_hits,
        ran,
        reports,
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
        token_budget: plan.token_budget,
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
    nodes: &[Node],
) -> Result<(), RerankError> {
    let n = nodes.len();
    if n == 0 {
        return Ok(());
    }
    let candidates: Vec<RerankCandidate<'_>> = ranked[..n]
        .iter()
        .zip(nodes)
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

/// A node text that could not be read (from its stored part nor its node object): damaged
/// data, never rendered as some other text.
fn unreadable(e: cairn_index::IndexError) -> RetrieveError {
    RetrieveError::Source(crate::SourceError::Corrupt(e.to_string()))
}

/// The text of the node at `ordinal`.
fn node_text(indexes: &CommitIndexes, ordinal: Ordinal) -> Result<String, RetrieveError> {
    indexes.text(ordinal).map(|t| t.into_owned()).map_err(unreadable)
}

/// The node at `ordinal` as the index's columns hold it.
fn node_from_columns(indexes: &CommitIndexes, ordinal: Ordinal) -> Result<Node, RetrieveError> {
    let (from, until) = indexes.validity(ordinal);
    let mut node = Node::new(indexes.node_id(ordinal)).with_text(node_text(indexes, ordinal)?);
    for l in indexes.labels_of(ordinal) {
        node = node.with_label(l);
    }
    node.props = indexes.props_of(ordinal);
    node.validity = cairn_core::Validity::new((from != i64::MIN).then_some(from), (until != i64::MAX).then_some(until));
    Ok(node)
}

fn quote_list(xs: &[String]) -> String {
    xs.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
}
