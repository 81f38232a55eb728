//! Retrieval quality on real judged collections (`shared/eval`, see its README): the
//! default fusion must be at least as good as either lane alone on every collection and
//! reach the README's best RRF row on the tuning ones; question words must not hurt; the
//! planner must not change their results; graph expansion over CISI's links is measured.
//! Skips (with a message) if the data is absent.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cairn_core::{Edge, Node, NodeId};
use cairn_eval::{mean, ndcg_at_k, recall_at_k, Collection};
use cairn_retrieve::expand::DEFAULT_HOP_DECAY;
use cairn_retrieve::{execute_spec, Fusion, GraphExpand, Plugins, ResolvedCommit, RetrieveSpec, VectorQuery};

mod common;
use common::resolved;

fn eval_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval");
    if dir.join("cranfield/meta.json").exists() {
        Some(dir)
    } else {
        eprintln!("skipping: no evaluation collections at {}", dir.display());
        None
    }
}

fn commit(c: &Collection, with_links: bool) -> ResolvedCommit {
    let nodes: Vec<Node> = c
        .corpus
        .iter()
        .enumerate()
        .map(|(i, d)| {
            Node::new(NodeId::new(d.id.clone()).unwrap())
                .with_label("Doc")
                .with_text(d.full_text())
                .with_embedding("minilm", c.doc_embedding(i).to_vec())
        })
        .collect();
    let edges: Vec<Edge> = match (&c.links, with_links) {
        (Some(links), true) => links
            .iter()
            .map(|l| {
                Edge::new(
                    NodeId::new(l.source.clone()).unwrap(),
                    "links",
                    NodeId::new(l.target.clone()).unwrap(),
                )
                .with_weight(l.weight)
            })
            .collect(),
        _ => Vec::new(),
    };
    resolved("eval", 0, nodes, &edges)
}

struct Scores {
    ndcg10: f64,
    recall100: f64,
    /// The share of queries whose first item is relevant.
    hit1: f64,
}

fn evaluate(c: &Collection, commit: &ResolvedCommit, make: impl Fn(usize) -> RetrieveSpec) -> Scores {
    let mut ndcg = Vec::new();
    let mut recall = Vec::new();
    let mut hit1 = Vec::new();
    for (i, q) in c.queries.iter().enumerate() {
        let qrels: BTreeMap<String, i64> = c.qrels.get(&q.id);
        let spec = make(i);
        let r = execute_spec(commit, &spec, &Plugins::default()).unwrap();
        let ranked: Vec<String> = r.items.iter().map(|it| it.id.as_str().to_string()).collect();
        ndcg.push(ndcg_at_k(&ranked, &qrels, 10));
        recall.push(recall_at_k(&ranked, &qrels, 100));
        let relevant = |id: &String| qrels.get(id).is_some_and(|g| *g > 0);
        hit1.push(
            qrels
                .values()
                .any(|g| *g > 0)
                .then(|| if ranked.first().is_some_and(relevant) { 1.0 } else { 0.0 }),
        );
    }
    Scores {
        ndcg10: mean(ndcg),
        recall100: mean(recall),
        hit1: mean(hit1),
    }
}

fn spec(c: &Collection, i: usize, text: bool, vector: bool) -> RetrieveSpec {
    RetrieveSpec {
        text: text.then(|| c.queries[i].text.clone()),
        vector: vector.then(|| VectorQuery {
            model: "minilm".into(),
            embedding: c.query_embedding(i).to_vec(),
        }),
        limit: Some(100),
        text_cap: Some(0),
        ..RetrieveSpec::default()
    }
}

/// Fails unless `fused` is at least as good as the better of `dense` and `text` on
/// nDCG@10 and on Recall@100.
fn assert_not_below_a_lane(what: &str, fused: &Scores, dense: &Scores, text: &Scores) {
    assert!(
        fused.ndcg10 >= dense.ndcg10.max(text.ndcg10),
        "{what}: default fusion nDCG@10 {:.4} below a single lane",
        fused.ndcg10
    );
    assert!(
        fused.recall100 >= dense.recall100.max(text.recall100),
        "{what}: default fusion R@100 {:.4} below a single lane",
        fused.recall100
    );
}

/// README `baselines.py`, best RRF row per collection (either BM25 setting).
const REFERENCE_RRF_NDCG10: [(&str, f64); 2] = [("cranfield", 0.437), ("cisi", 0.448)];

/// The three collections: Cranfield and CISI tune, NPL (Vaswani) is acceptance only.
const COLLECTIONS: [&str; 3] = ["cranfield", "cisi", "vaswani"];

fn fused(c: &Collection, i: usize, fusion: Option<Fusion>) -> RetrieveSpec {
    RetrieveSpec {
        fusion,
        ..spec(c, i, true, true)
    }
}

/// The default hybrid (text + dense, default fusion) is at least as good as the better
/// single lane on every collection, on nDCG@10 and on Recall@100; the tuned collections
/// also reach the README's best RRF row.
#[test]
fn default_fusion_never_loses_to_a_lane() {
    let Some(dir) = eval_dir() else { return };
    for name in COLLECTIONS {
        let c = Collection::load(&dir.join(name)).unwrap();
        let commit = commit(&c, false);
        let dense = evaluate(&c, &commit, |i| spec(&c, i, false, true));
        let text = evaluate(&c, &commit, |i| spec(&c, i, true, false));
        let rrf = evaluate(&c, &commit, |i| fused(&c, i, Some(Fusion::rrf())));
        let min_max = evaluate(&c, &commit, |i| fused(&c, i, Some(Fusion::min_max())));
        let hybrid = evaluate(&c, &commit, |i| fused(&c, i, None));
        eprintln!(
            "| {name} | {:.4} / {:.4} | {:.4} / {:.4} | {:.4} / {:.4} | {:.4} / {:.4} | {:.4} / {:.4} |",
            dense.ndcg10,
            dense.recall100,
            text.ndcg10,
            text.recall100,
            rrf.ndcg10,
            rrf.recall100,
            min_max.ndcg10,
            min_max.recall100,
            hybrid.ndcg10,
            hybrid.recall100
        );
        assert_not_below_a_lane(name, &hybrid, &dense, &text);
        eprintln!(
            "{name} hit@1: dense {:.4}, text {:.4}, default {:.4}",
            dense.hit1, text.hit1, hybrid.hit1
        );
        assert!(
            hybrid.hit1 >= dense.hit1.max(text.hit1),
            "{name}: default fusion hit@1 {:.4} below a single lane",
            hybrid.hit1
        );
        if let Some((_, reference)) = REFERENCE_RRF_NDCG10.iter().find(|r| r.0 == name) {
            assert!(
                hybrid.ndcg10 >= *reference,
                "{name}: {:.4} < reference {reference}",
                hybrid.ndcg10
            );
        }
    }
}

/// The tuning grid behind the default (Cranfield and CISI only; run with `--ignored
/// --nocapture`).
#[test]
#[ignore = "a measurement: prints the fusion grid on the tuning collections"]
fn fusion_grid() {
    let Some(dir) = eval_dir() else { return };
    for name in ["cranfield", "cisi"] {
        let c = Collection::load(&dir.join(name)).unwrap();
        let commit = commit(&c, false);
        let mut rows: Vec<(String, Fusion)> = vec![
            ("rrf k=60".into(), Fusion::rrf()),
            ("rrf k=20".into(), Fusion::rrf().k(20.0)),
        ];
        for w in [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2] {
            rows.push((format!("score text {w}"), Fusion::score().weight("text", w)));
            rows.push((format!("dbsf text {w}"), Fusion::dbsf().weight("text", w)));
        }
        for (title, fusion) in rows {
            let s = evaluate(&c, &commit, |i| fused(&c, i, Some(fusion.clone())));
            eprintln!("{name} | {title} | {:.4} | {:.4}", s.ndcg10, s.recall100);
        }
    }
}

/// One lane's hits straight from the indexes (no question-word handling).
fn raw_lane(commit: &ResolvedCommit, c: &Collection, i: usize, text: Option<&str>) -> Vec<cairn_index::Hit> {
    match text {
        Some(t) => commit.indexes.text_search(t, 1000, None).unwrap(),
        None => {
            commit
                .indexes
                .dense_search("minilm", c.query_embedding(i), 1000, None)
                .unwrap()
                .hits
        }
    }
}

/// How a by-hand fusion maps a lane's raw scores onto its scale.
#[derive(Clone, Copy, Debug)]
enum Norm {
    /// `(s − min) / (max − min)`, the pipeline's `score` on text and sparse lanes.
    MinMax,
    /// `(s − min(0, min)) / (max(1, max) − min(0, min))`: a cosine as it is, the
    /// pipeline's `score` on dense lanes.
    Cosine,
    /// `(s − min) / (max(1, max) − min)`: the bottom as min-max, the top at the cosine
    /// ceiling (a variant measured in `weak_lane_fusion`).
    ToCosineCeiling,
    /// `(s − min) / σ`: the z-score, shifted so that a lane's last candidate (and a node
    /// the lane did not find) is 0.
    ZScore,
}

/// A weighted-mean score fusion over raw lanes `(hits, weight, normalisation)`, written
/// out here so that a query can be fused without the text lane's question-word handling,
/// or with a normalisation the pipeline does not offer (lanes in the pipeline's order:
/// dense, then text). The best 100.
fn fuse_by_hand(lanes: &[(Vec<cairn_index::Hit>, f64, Norm)]) -> Vec<u32> {
    let total: f64 = lanes.iter().map(|l| l.1).sum();
    let mut sums: BTreeMap<u32, f64> = BTreeMap::new();
    for (hits, w, norm) in lanes {
        let n = hits.len() as f64;
        let scores = || hits.iter().map(|h| f64::from(h.score));
        let mean = scores().sum::<f64>() / n;
        let sd = (scores().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n).sqrt();
        let (min, max) = scores().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), s| (a.min(s), b.max(s)));
        let (lo, hi) = match norm {
            Norm::MinMax => (min, max),
            Norm::Cosine => (min.min(0.0), max.max(1.0)),
            Norm::ToCosineCeiling => (min, max.max(1.0)),
            Norm::ZScore => (min, min + sd),
        };
        for h in hits {
            let s = f64::from(h.score);
            let v = if hi > lo { (s - lo) / (hi - lo) } else { 1.0 };
            *sums.entry(h.ordinal).or_insert(0.0) += w / total * v;
        }
    }
    let mut v: Vec<(u32, f64)> = sums.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter().take(100).map(|x| x.0).collect()
}

/// Metrics of a ranking function over every query of `c`.
fn score_ranked(c: &Collection, ranked: &dyn Fn(usize) -> Vec<String>) -> (f64, f64) {
    let mut ndcg = Vec::new();
    let mut recall = Vec::new();
    for (i, q) in c.queries.iter().enumerate() {
        let qrels = c.qrels.get(&q.id);
        let r = ranked(i);
        ndcg.push(ndcg_at_k(&r, &qrels, 10));
        recall.push(recall_at_k(&r, &qrels, 100));
    }
    (mean(ndcg), mean(recall))
}

/// The z-score candidate, which the pipeline does not offer (Cranfield and CISI only).
#[test]
#[ignore = "a measurement: prints the z-score fusion on the tuning collections"]
fn zscore_grid() {
    use cairn_index::analyzer::strip_question_words;
    let Some(dir) = eval_dir() else { return };
    for name in ["cranfield", "cisi"] {
        let c = Collection::load(&dir.join(name)).unwrap();
        let commit = commit(&c, false);
        for w in [0.4, 0.6, 0.8, 1.0] {
            let (n, r) = score_ranked(&c, &|i| {
                let q = strip_question_words(&c.queries[i].text).into_owned();
                fuse_by_hand(&[
                    (raw_lane(&commit, &c, i, None), 1.0, Norm::ZScore),
                    (raw_lane(&commit, &c, i, Some(&q)), w, Norm::ZScore),
                ])
                .into_iter()
                .map(|o| commit.indexes.id(o).to_string())
                .collect()
            });
            eprintln!("{name} | zscore text {w} | {n:.4} | {r:.4}");
        }
    }
}

/// The question words ([`cairn_index::analyzer::QUESTION_WORDS`]) must not hurt the
/// judged collections: text lane and default hybrid, with and without them.
#[test]
fn question_words_do_not_hurt_the_collections() {
    use cairn_index::analyzer::strip_question_words;
    let Some(dir) = eval_dir() else { return };
    for name in COLLECTIONS {
        let c = Collection::load(&dir.join(name)).unwrap();
        let commit = commit(&c, false);
        let ids = |ordinals: Vec<u32>| -> Vec<String> {
            ordinals.into_iter().map(|o| commit.indexes.id(o).to_string()).collect()
        };
        let score = |ranked: &dyn Fn(usize) -> Vec<String>| score_ranked(&c, ranked);
        let changed = c
            .queries
            .iter()
            .filter(|q| strip_question_words(&q.text) != q.text.as_str())
            .count();
        let text = |strip: bool| {
            score(&|i| {
                let q = &c.queries[i].text;
                let q = if strip {
                    strip_question_words(q).into_owned()
                } else {
                    q.clone()
                };
                ids(raw_lane(&commit, &c, i, Some(&q))
                    .into_iter()
                    .take(100)
                    .map(|h| h.ordinal)
                    .collect())
            })
        };
        let hybrid = |strip: bool| {
            score(&|i| {
                let q = &c.queries[i].text;
                let q = if strip {
                    strip_question_words(q).into_owned()
                } else {
                    q.clone()
                };
                ids(fuse_by_hand(&[
                    (raw_lane(&commit, &c, i, None), 1.0, Norm::Cosine),
                    (
                        raw_lane(&commit, &c, i, Some(&q)),
                        cairn_retrieve::DEFAULT_TEXT_WEIGHT,
                        Norm::MinMax,
                    ),
                ]))
            })
        };
        let (text_off, text_on, hybrid_off, hybrid_on) = (text(false), text(true), hybrid(false), hybrid(true));
        // The hand-written fusion is the pipeline's: the same numbers through execute_spec
        // (unplanned: the planner's text-date boost is measured on its own, below).
        let unplanned = |spec: RetrieveSpec| RetrieveSpec {
            planner: Some(cairn_retrieve::PlannerMode::None),
            ..spec
        };
        let pipeline = evaluate(&c, &commit, |i| unplanned(fused(&c, i, None)));
        assert!(
            (pipeline.ndcg10 - hybrid_on.0).abs() < 1e-9,
            "{name}: {} vs {}",
            pipeline.ndcg10,
            hybrid_on.0
        );
        let text_pipeline = evaluate(&c, &commit, |i| unplanned(spec(&c, i, true, false)));
        assert!((text_pipeline.ndcg10 - text_on.0).abs() < 1e-9);
        eprintln!(
            "| {name} | {changed}/{} | {:.4} / {:.4} | {:.4} / {:.4} | {:.4} / {:.4} | {:.4} / {:.4} |",
            c.queries.len(),
            text_off.0,
            text_off.1,
            text_on.0,
            text_on.1,
            hybrid_off.0,
            hybrid_off.1,
            hybrid_on.0,
            hybrid_on.1
        );
        // "Must not hurt": no more than measurement noise below (one query of a few
        // hundred moving a place) on nDCG@10; on Recall@100 0.005, since with dense lanes
        // fused as cosines CISI's hybrid R@100 moves 0.5102 -> 0.5064 while its nDCG@10
        // gains (0.4570 -> 0.4590) and the text lane gains on both (~12 relevant documents
        // among 3,114 leave the top 100 of their queries).
        for (what, off, on) in [("text", text_off, text_on), ("hybrid", hybrid_off, hybrid_on)] {
            assert!(
                on.0 >= off.0 - 0.002,
                "{name} {what}: nDCG@10 {:.4} -> {:.4}",
                off.0,
                on.0
            );
            assert!(
                on.1 >= off.1 - 0.005,
                "{name} {what}: R@100 {:.4} -> {:.4}",
                off.1,
                on.1
            );
        }
    }
}

/// The rule planner is on by default. These collections carry no validity, so its
/// validity boost must change nothing (the planner without text-date boosts gives the same
/// items and scores as `"planner": "none"`, for every query); the text-date boost changes
/// only the queries that name a time, and must not lower nDCG@10 or Recall@100.
#[test]
fn planner_changes_only_queries_that_name_a_time() {
    let Some(dir) = eval_dir() else { return };
    let validity_only = Plugins {
        planner: Some(std::sync::Arc::new(cairn_retrieve::RulePlanner {
            text_date_boost: 0.0,
            ..cairn_retrieve::RulePlanner::default()
        })),
        ..Plugins::default()
    };
    for name in COLLECTIONS {
        let c = Collection::load(&dir.join(name)).unwrap();
        let commit = commit(&c, false);
        let mut with_time = 0;
        for i in 0..c.queries.len() {
            let off_spec = RetrieveSpec {
                planner: Some(cairn_retrieve::PlannerMode::None),
                ..fused(&c, i, None)
            };
            let off = execute_spec(&commit, &off_spec, &Plugins::default()).unwrap();
            let validity = execute_spec(&commit, &fused(&c, i, None), &validity_only).unwrap();
            assert_eq!(validity.items, off.items, "{name} query {i}");
            let on = execute_spec(&commit, &fused(&c, i, None), &Plugins::default()).unwrap();
            match &on.plan {
                Some(_) => with_time += 1,
                None => assert_eq!(on.items, off.items, "{name} query {i}"),
            }
        }
        let off = evaluate(&c, &commit, |i| RetrieveSpec {
            planner: Some(cairn_retrieve::PlannerMode::None),
            ..fused(&c, i, None)
        });
        let on = evaluate(&c, &commit, |i| fused(&c, i, None));
        eprintln!(
            "{name}: {with_time} queries name a time; planner off {:.4} / {:.4}, on {:.4} / {:.4}",
            off.ndcg10, off.recall100, on.ndcg10, on.recall100
        );
        assert!(on.ndcg10 >= off.ndcg10 && on.recall100 >= off.recall100, "{name}");
    }
}

#[test]
fn cisi_link_expansion() {
    let Some(dir) = eval_dir() else { return };
    let c = Collection::load(&dir.join("cisi")).unwrap();
    let commit = commit(&c, true);
    let run = |depth: Option<usize>, expand: Option<GraphExpand>| {
        evaluate(&c, &commit, |i| RetrieveSpec {
            depth,
            expand: expand.clone(),
            ..spec(&c, i, true, true)
        })
    };
    let mut default_ndcg_delta = f64::NAN;
    let mut default_recall_delta = f64::NAN;
    for depth in [None, Some(100)] {
        let base = run(depth, None);
        eprintln!(
            "cisi depth {depth:?}: no expansion nDCG@10 {:.4} R@100 {:.4}",
            base.ndcg10, base.recall100
        );
        for gamma in [1.0, 0.5] {
            let e = run(depth, Some(GraphExpand::hops(1).hop_decay(gamma)));
            eprintln!(
                "  links, 1 hop, 100 seeds, γ = {gamma}: nDCG@10 {:.4} R@100 {:.4}",
                e.ndcg10, e.recall100
            );
            if depth.is_none() && gamma == DEFAULT_HOP_DECAY {
                default_ndcg_delta = e.ndcg10 - base.ndcg10;
                default_recall_delta = e.recall100 - base.recall100;
            }
        }
    }
    // CISI's links (~53 per document) do not raise Recall@100 (reported above); with the
    // default hop decay, expanded neighbours take places in the tail but leave the head of
    // the ranking — the strong direct hits — intact.
    eprintln!("default expansion: nDCG@10 {default_ndcg_delta:+.4}, R@100 {default_recall_delta:+.4}");
    assert!(
        default_ndcg_delta.abs() <= 0.01,
        "default expansion moved CISI nDCG@10 by {default_ndcg_delta:.4}"
    );
    assert!(
        default_recall_delta != 0.0,
        "expanded items never won a place: expansion is inert"
    );
}

/// Query `i`'s vector mixed with a seeded random direction: `normalise(q + σ·u)`, `u` a
/// unit vector drawn per query. σ = 0 is the real embedding; the dense lane weakens as σ
/// grows (at σ = 3 it is at 42–60 % of the text lane's nDCG@10).
fn weakened(c: &Collection, i: usize, sigma: f32) -> Vec<f32> {
    let mut rng = cairn_testkit::Rng(0x5eed ^ i as u64);
    let u = cairn_testkit::unit_vector(&mut rng, 384);
    let q: Vec<f32> = c
        .query_embedding(i)
        .iter()
        .zip(&u)
        .map(|(a, b)| a + sigma * b)
        .collect();
    cairn_testkit::normalise(q)
}

/// The default fusion must not fall below the better lane when the dense lane is weak
/// (a small embedding model on conversational memory): with each query vector weakened
/// ([`weakened`], σ = 2 and 3: the dense lane at 66–83 % and 42–60 % of the text lane's
/// nDCG@10), through the pipeline, on every collection and both metrics. Min-max on
/// every lane (the previous default) fails this at σ = 3 on Cranfield and Vaswani.
#[test]
fn default_fusion_holds_with_a_weak_dense_lane() {
    let Some(dir) = eval_dir() else { return };
    for name in COLLECTIONS {
        let c = Collection::load(&dir.join(name)).unwrap();
        let commit = commit(&c, false);
        let text = evaluate(&c, &commit, |i| spec(&c, i, true, false));
        for sigma in [2.0f32, 3.0] {
            let with = |i: usize, text: bool| RetrieveSpec {
                vector: Some(VectorQuery {
                    model: "minilm".into(),
                    embedding: weakened(&c, i, sigma),
                }),
                ..spec(&c, i, text, false)
            };
            let dense = evaluate(&c, &commit, |i| with(i, false));
            let hybrid = evaluate(&c, &commit, |i| with(i, true));
            eprintln!(
                "| {name} | σ {sigma} | dense {:.4} / {:.4} | text {:.4} / {:.4} | default {:.4} / {:.4} |",
                dense.ndcg10, dense.recall100, text.ndcg10, text.recall100, hybrid.ndcg10, hybrid.recall100
            );
            assert!(
                dense.ndcg10 < text.ndcg10,
                "{name} σ {sigma}: the dense lane is not weak"
            );
            assert_not_below_a_lane(&format!("{name} σ {sigma}"), &hybrid, &dense, &text);
        }
    }
}

/// An RRF fusion (k = 60) of raw lanes.
fn rrf_lanes(lanes: &[Vec<cairn_index::Hit>]) -> Vec<u32> {
    let mut sums: BTreeMap<u32, f64> = BTreeMap::new();
    for hits in lanes {
        for (r, h) in hits.iter().enumerate() {
            *sums.entry(h.ordinal).or_insert(0.0) += 1.0 / (60.0 + r as f64 + 1.0);
        }
    }
    let mut v: Vec<(u32, f64)> = sums.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter().take(100).map(|x| x.0).collect()
}

/// The dense lane made weak on purpose: each query vector mixed with a fixed random
/// direction, `q' = normalise(q + σ·u)` (`u` a seeded unit vector per query), so that
/// the dense lane falls below the text lane as it does with a small model on
/// conversational memory. Prints each fusion against both lanes (nDCG@10 / R@100) for
/// σ from 0 (the real embeddings) up. A measurement, not a tuning run: run with
/// `--ignored --nocapture`.
#[test]
#[ignore = "a measurement: prints fusions under a weakened dense lane"]
fn weak_lane_fusion() {
    use cairn_index::analyzer::strip_question_words;
    let Some(dir) = eval_dir() else { return };
    for name in COLLECTIONS {
        let c = Collection::load(&dir.join(name)).unwrap();
        let commit = commit(&c, false);
        let ids = |v: Vec<u32>| -> Vec<String> { v.into_iter().map(|o| commit.indexes.id(o).to_string()).collect() };
        for sigma in [0.0f32, 0.8, 1.2, 2.0, 3.0] {
            let lanes: Vec<(Vec<cairn_index::Hit>, Vec<cairn_index::Hit>)> = (0..c.queries.len())
                .map(|i| {
                    let q = weakened(&c, i, sigma);
                    let dense = commit.indexes.dense_search("minilm", &q, 1000, None).unwrap().hits;
                    let t = strip_question_words(&c.queries[i].text).into_owned();
                    let text = commit.indexes.text_search(&t, 1000, None).unwrap();
                    (dense, text)
                })
                .collect();
            let mut rows: Vec<(String, (f64, f64))> = Vec::new();
            let take = |f: &dyn Fn(usize) -> Vec<u32>| score_ranked(&c, &|i| ids(f(i)));
            rows.push((
                "dense".into(),
                take(&|i| lanes[i].0.iter().take(100).map(|h| h.ordinal).collect()),
            ));
            rows.push((
                "text".into(),
                take(&|i| lanes[i].1.iter().take(100).map(|h| h.ordinal).collect()),
            ));
            rows.push((
                "rrf k=60".into(),
                take(&|i| rrf_lanes(&[lanes[i].0.clone(), lanes[i].1.clone()])),
            ));
            let score_fusions = [
                ("min-max, text 0.8 (the previous default)", Norm::MinMax, 0.8),
                ("dense as cosine, text 0.3", Norm::Cosine, 0.3),
                ("dense as cosine, text 0.4 (the default)", Norm::Cosine, 0.4),
                ("dense as cosine, text 0.5", Norm::Cosine, 0.5),
                ("dense to the cosine ceiling, text 0.4", Norm::ToCosineCeiling, 0.4),
            ];
            for (title, dense_norm, w) in score_fusions {
                rows.push((
                    title.to_string(),
                    take(&|i| {
                        fuse_by_hand(&[
                            (lanes[i].0.clone(), 1.0, dense_norm),
                            (lanes[i].1.clone(), w, Norm::MinMax),
                        ])
                    }),
                ));
            }
            for (title, (n, r)) in rows {
                eprintln!("{name} | σ {sigma} | {title} | {n:.4} | {r:.4}");
            }
        }
    }
}

/// Writes each query's raw lanes (depth 1000) of the three collections as JSON lines to
/// `CAIRN_EVAL_DUMP_DIR/<name>.jsonl`, for exploring fusions outside the pipeline.
#[test]
#[ignore = "a tool: dumps the lanes of every query"]
fn dump_lanes() {
    let Ok(out) = std::env::var("CAIRN_EVAL_DUMP_DIR") else {
        eprintln!("set CAIRN_EVAL_DUMP_DIR=DIR");
        return;
    };
    let Some(dir) = eval_dir() else { return };
    for name in COLLECTIONS {
        let c = Collection::load(&dir.join(name)).unwrap();
        let commit = commit(&c, false);
        let mut lines = String::new();
        for (i, q) in c.queries.iter().enumerate() {
            let mut v = serde_json::json!({"q": i, "gold": c.qrels.get(&q.id)});
            for (lane, text, dense) in [("text", true, false), ("dense", false, true)] {
                let spec = RetrieveSpec {
                    limit: Some(1000),
                    ..spec(&c, i, text, dense)
                };
                let r = execute_spec(&commit, &spec, &Plugins::default()).unwrap();
                let hits: Vec<(String, f32)> = r
                    .items
                    .iter()
                    .map(|it| (it.id.as_str().to_string(), it.lanes.values().next().unwrap().score))
                    .collect();
                v[lane] = serde_json::json!(hits);
            }
            lines.push_str(&v.to_string());
            lines.push('\n');
        }
        std::fs::write(std::path::Path::new(&out).join(format!("{name}.jsonl")), lines).unwrap();
    }
}
