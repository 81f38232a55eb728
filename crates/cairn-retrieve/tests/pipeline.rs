//! The whole pipeline over a hand-written corpus: gates, lanes, fusion, expansion,
//! rerank, packing, warnings and errors.

mod common;

use std::sync::Arc;

use cairn_core::{Node, SparseVector, Value};
use cairn_index::{CommitIndexes, IndexError, IndexParams};
use cairn_retrieve::{
    execute_spec, Direction, EmbedError, Embedder, Fusion, GraphExpand, Plugins, RerankCandidate, RerankError,
    Reranker, ResolvedCommit, Retrieval, RetrievalResult, RetrieveError, RetrieveSpec, SourceError, WarningCode,
};
use common::*;

fn ids(r: &RetrievalResult) -> Vec<&str> {
    r.items.iter().map(|i| i.id.as_str()).collect()
}

fn codes(r: &RetrievalResult) -> Vec<WarningCode> {
    r.warnings.iter().map(|w| w.code).collect()
}

#[test]
fn hybrid_ranks_fuses_and_reports_lanes() {
    let src = source();
    let r = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .text("wing stall")
        .fusion(Fusion::rrf())
        .execute()
        .unwrap();
    assert_eq!(r.commit, Some(src.commits["main"].commit));
    assert_eq!(r.valid_at, Some(MAIN_TS));
    assert_eq!(r.items[0].id.as_str(), "doc-01", "{:?}", ids(&r));
    // Ranks are 1.. and scores never increase.
    for (i, item) in r.items.iter().enumerate() {
        assert_eq!(item.rank, i + 1);
        assert!(item.source_path.is_none());
    }
    assert!(r.items.windows(2).all(|w| w[0].score >= w[1].score));
    // The top item is in both lanes; its score is the RRF sum.
    let top = &r.items[0];
    let (d, t) = (&top.lanes["dense:minilm"], &top.lanes["text"]);
    assert_eq!(top.score, 1.0 / (60.0 + d.rank as f64) + 1.0 / (60.0 + t.rank as f64));
    assert_eq!(
        r.lanes.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        vec!["dense:minilm", "text"]
    );
    assert!(r.lanes.iter().all(|l| !l.approximate));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.items.len(), 10);
    assert!(r.candidates_seen >= 10);
    assert!(r.items[0]
        .text
        .starts_with("id: doc-01\nlabels: Document\ntext: Wing stall"));
    assert_eq!(r.tokens_used, r.items.iter().map(|i| i.tokens).sum::<usize>());
    // The default fusion: the dense cosine + 0.4 · text min-max, over their weight sum.
    let d = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .text("wing stall")
        .execute()
        .unwrap();
    assert!(d.items.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(d.items[0].score <= 1.8 && d.items[0].lanes.len() == 2);
}

#[test]
fn validity_defaults_to_the_commit_time() {
    let src = source();
    let run = |b: Retrieval<&FakeSource>| b.vector("minilm", &STALL).limit(30).execute().unwrap();
    let now = run(Retrieval::new(&src));
    assert!(
        !ids(&now).contains(&"doc-08") && !ids(&now).contains(&"doc-09"),
        "{:?}",
        ids(&now)
    );
    let past = run(Retrieval::new(&src).valid_at(1_550_000_000_000));
    assert!(ids(&past).contains(&"doc-08") && !ids(&past).contains(&"doc-09"));
    assert_eq!(past.valid_at, Some(1_550_000_000_000));
    let future = run(Retrieval::new(&src).valid_at(1_800_000_000_000));
    assert!(!ids(&future).contains(&"doc-08") && ids(&future).contains(&"doc-09"));
    let all = run(Retrieval::new(&src).all_time());
    assert!(ids(&all).contains(&"doc-08") && ids(&all).contains(&"doc-09"));
    assert_eq!(all.valid_at, None);
    // `at` reads another commit, whose timestamp is then the validity time.
    let old = run(Retrieval::new(&src).at("old"));
    assert_eq!(old.commit, Some(src.commits["old"].commit));
    assert_eq!(old.valid_at, Some(OLD_TS));
    assert!(ids(&old).contains(&"doc-08") && !ids(&old).contains(&"doc-11"));
}

#[test]
fn label_and_property_gates() {
    let src = source();
    let notes = Retrieval::new(&src)
        .label("Note")
        .vector("minilm", &STALL)
        .execute()
        .unwrap();
    assert_eq!(ids(&notes), vec!["note-01", "note-02"]);
    let any = Retrieval::new(&src)
        .any_label("Note")
        .any_label("Rare")
        .text("stall drag")
        .execute()
        .unwrap();
    // "drag" is rarer than "stall", so note-02 leads.
    assert_eq!(ids(&any), vec!["note-02", "doc-12", "note-01"]);
    let de = Retrieval::new(&src)
        .where_eq("lang", "de")
        .vector("minilm", &STALL)
        .execute()
        .unwrap();
    assert_eq!(ids(&de), vec!["doc-11", "doc-04"]);
    let years = Retrieval::new(&src)
        .where_range("year", Some(1960.0), Some(1965.0))
        .vector("minilm", &STALL)
        .execute()
        .unwrap();
    assert_eq!(ids(&years), vec!["doc-02", "doc-05", "doc-04"]);
    let inn = Retrieval::new(&src)
        .where_in("lang", vec![Value::from("fr"), Value::from("de")])
        .text("stall")
        .execute()
        .unwrap();
    assert_eq!(ids(&inn), vec!["doc-11", "doc-06"]);
    let titled = Retrieval::new(&src)
        .where_exists("title")
        .text("wing")
        .execute()
        .unwrap();
    assert_eq!(ids(&titled), vec!["doc-01"]);
    let nothing = Retrieval::new(&src).label("Nope").text("wing").execute().unwrap();
    assert!(nothing.items.is_empty());
    assert_eq!(codes(&nothing), vec![WarningCode::GatesMatchNothing]);
}

#[test]
fn a_selective_gate_is_pushed_below_the_top_k_cut() {
    // 10,000 nodes, 10 of them `Rare` (0.1 %), all much worse for the query than the rest.
    let nodes: Vec<Node> = (0..10_000u32)
        .map(|i| {
            let rare = i % 1000 == 999;
            let n = Node::new(id(&format!("n{i:05}")))
                .with_text(if rare {
                    "alpha gamma gamma gamma gamma"
                } else {
                    "alpha beta"
                })
                .with_embedding(
                    "m",
                    if rare {
                        vec![0.1, 1.0]
                    } else {
                        vec![1.0, 0.01 * (i % 7) as f32]
                    },
                );
            if rare {
                n.with_label("Rare")
            } else {
                n.with_label("Common")
            }
        })
        .collect();
    let commit = resolved("big", 0, nodes, &[]);
    for spec in [
        r#"{"vector": {"model": "m", "embedding": [1.0, 0.0]}, "labels_all": ["Rare"], "depth": 100}"#,
        r#"{"text": "alpha", "labels_all": ["Rare"], "depth": 100}"#,
        r#"{"text": "alpha", "vector": {"model": "m", "embedding": [1.0, 0.0]}, "labels_any": ["Rare"], "depth": 20}"#,
    ] {
        let spec = RetrieveSpec::from_json(spec).unwrap();
        let r = execute_spec(&commit, &spec, &Plugins::default()).unwrap();
        assert_eq!(r.items.len(), 10, "{spec:?}");
        assert!(r.items.iter().all(|i| i.text.contains("Rare")));
    }
}

#[test]
fn sparse_lane_and_score_fusion() {
    let src = source();
    let r = Retrieval::new(&src)
        .sparse("splade", SparseVector::new(vec![1, 2], vec![1.0, 0.5]))
        .text("stall")
        .fusion(Fusion::score().weight("text", 0.5))
        .execute()
        .unwrap();
    assert_eq!(r.lanes[0].name, "sparse:splade");
    assert_eq!(r.items[0].id.as_str(), "doc-01");
    assert!(r.items.windows(2).all(|w| w[0].score >= w[1].score));
    // Gated to one node, each lane normalises its single hit to 1: the weighted mean
    // (1·1 + 0.5·1) / 1.5 is the top of the scale.
    let one = Retrieval::new(&src)
        .where_exists("title")
        .sparse("splade", SparseVector::new(vec![1, 2], vec![1.0, 0.5]))
        .text("stall")
        .fusion(Fusion::score().weight("text", 0.5))
        .execute()
        .unwrap();
    assert_eq!(ids(&one), vec!["doc-01"]);
    assert_eq!(one.items[0].score, 1.0);
}

#[test]
fn expansion_brings_in_neighbours_with_paths() {
    let src = source();
    let r = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .limit(20)
        .expand(GraphExpand::hops(1).seeds(1).max_nodes(3))
        .execute()
        .unwrap();
    // The top seed scores α + β = 1.0; its neighbours α·γ + β·e^(−1/2).
    assert_eq!(r.items[0].id.as_str(), "doc-01");
    assert_eq!(r.items[0].score, 1.0);
    let neighbour = 0.7 * 0.5 + 0.3 * (-0.5f64).exp();
    let expanded: Vec<(&str, Vec<&str>)> = r
        .items
        .iter()
        .filter(|i| i.lanes.is_empty())
        .map(|i| {
            (
                i.id.as_str(),
                i.source_path.as_ref().unwrap().iter().map(|p| p.as_str()).collect(),
            )
        })
        .collect();
    // doc-01's neighbours: doc-02 and doc-10 cite it (already candidates: improved), person-01
    // and topic-stall (new).
    assert_eq!(
        expanded,
        vec![
            ("person-01", vec!["doc-01", "person-01"]),
            ("topic-stall", vec!["doc-01", "topic-stall"])
        ]
    );
    for item in r.items.iter().filter(|i| i.source_path.is_some()) {
        assert_eq!(item.score, neighbour, "{}", item.id);
    }
    // Every dense candidate plus the two new nodes reached.
    assert_eq!(r.candidates_seen, r.lanes[0].hits + 2);
}

#[test]
fn expansion_respects_gates_kinds_direction_and_edge_validity() {
    let src = source();
    // Under a Document gate, the walk passes through topic-stall but adds only documents.
    let r = Retrieval::new(&src)
        .label("Document")
        .text("pilots recovery")
        .expand(GraphExpand::hops(2).kind("mentions"))
        .execute()
        .unwrap();
    assert_eq!(ids(&r), vec!["doc-06", "doc-01", "doc-12"]);
    assert_eq!(
        r.items[1]
            .source_path
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        vec!["doc-06", "topic-stall", "doc-01"]
    );
    // Out-edges only: doc-07 → doc-05 expired before the commit, so nothing is reachable.
    let expired = Retrieval::new(&src)
        .text("library classification")
        .expand(GraphExpand::hops(1).direction(Direction::Out))
        .execute()
        .unwrap();
    assert_eq!(ids(&expired), vec!["doc-07"]);
    assert_eq!(codes(&expired), vec![WarningCode::ExpansionNoEdges]);
    // At a time the edge held, it is followed.
    let then = Retrieval::new(&src)
        .text("library classification")
        .valid_at(1_600_000_000_000)
        .expand(GraphExpand::hops(1).direction(Direction::Out))
        .execute()
        .unwrap();
    assert_eq!(ids(&then), vec!["doc-07", "doc-05"]);
    // An unknown kind warns.
    let unknown = Retrieval::new(&src)
        .text("stall")
        .expand(GraphExpand::hops(1).kind("likes"))
        .execute()
        .unwrap();
    assert_eq!(
        codes(&unknown),
        vec![WarningCode::ExpansionUnknownKind, WarningCode::ExpansionNoEdges]
    );
}

#[test]
fn expanded_items_can_win_places_when_packed() {
    let src = source();
    let r = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .limit(15)
        .expand(GraphExpand::hops(1).seeds(2))
        .execute()
        .unwrap();
    // Neighbours of the top seed (0.35 + 0.3·e^(−1/2) ≈ 0.53) outrank the direct hits whose
    // normalised score is below ≈ 0.33.
    let first_expanded = r
        .items
        .iter()
        .position(|i| i.lanes.is_empty())
        .expect("an expanded item");
    let weaker: Vec<&str> = r.items[first_expanded + 1..]
        .iter()
        .filter(|i| !i.lanes.is_empty())
        .map(|i| i.id.as_str())
        .collect();
    assert!(!weaker.is_empty(), "{:?}", ids(&r));
    // Without the hop decay, they come right after the strongest hits.
    let no_decay = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .limit(15)
        .expand(GraphExpand::hops(1).seeds(2).hop_decay(1.0))
        .execute()
        .unwrap();
    assert!(no_decay.items.iter().position(|i| i.lanes.is_empty()).unwrap() < first_expanded);
}

struct Reverse;
impl Reranker for Reverse {
    fn rerank(&self, _: Option<&str>, c: &[RerankCandidate<'_>]) -> Result<Vec<f64>, RerankError> {
        Ok((0..c.len()).map(|i| i as f64).collect())
    }
}

struct Broken;
impl Reranker for Broken {
    fn rerank(&self, _: Option<&str>, _: &[RerankCandidate<'_>]) -> Result<Vec<f64>, RerankError> {
        Err(RerankError::new("model offline"))
    }
}

#[test]
fn rerank_reorders_the_top_n_or_keeps_the_order_on_failure() {
    let src = source();
    let base = || {
        Retrieval::new(&src)
            .vector("minilm", &STALL)
            .text("wing stall")
            .limit(6)
    };
    let plain = base().execute().unwrap();
    let reversed = base().rerank_with(Reverse).rerank_top_n(3).execute().unwrap();
    let p = ids(&plain);
    assert_eq!(ids(&reversed), vec![p[2], p[1], p[0], p[3], p[4], p[5]]);
    assert_eq!(reversed.items[0].rerank_score, Some(2.0));
    assert_eq!(reversed.items[3].rerank_score, None);
    let failed = base().rerank_with(Broken).execute().unwrap();
    assert_eq!(ids(&failed), p);
    assert_eq!(codes(&failed), vec![WarningCode::RerankFailed]);
    assert!(failed.warnings[0].message.contains("model offline"));
}

#[test]
fn packing_skips_items_that_do_not_fit_and_honours_limit() {
    let src = source();
    let all = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .limit(30)
        .execute()
        .unwrap();
    let budget = all.items[0].tokens + all.items[2].tokens;
    assert!(
        all.items[1].tokens > all.items[2].tokens,
        "fixture: item 2 must be the smaller"
    );
    let r = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .limit(30)
        .token_budget(budget)
        .execute()
        .unwrap();
    let got = ids(&r);
    // Greedy in rank order: item 0 fits, item 1 does not, item 2 fits exactly; nothing
    // is reordered.
    assert_eq!(&got[..2], &[all.items[0].id.as_str(), all.items[2].id.as_str()]);
    assert!(r.tokens_used <= budget);
    assert_eq!(r.token_budget, Some(budget));
    // The spec's name in the JSON; a result written under the old name still reads.
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains(&format!(r#""token_budget":{budget}"#)), "{json}");
    let old: cairn_retrieve::RetrievalResult =
        serde_json::from_str(&json.replace(r#""token_budget""#, r#""tokens_budget""#)).unwrap();
    assert_eq!(old, r);
    assert!(r.dropped >= 1);
    assert_eq!(codes(&r), vec![WarningCode::BudgetDropped]);
    let few = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .limit(3)
        .execute()
        .unwrap();
    assert_eq!(ids(&few), ids(&all)[..3].to_vec());
    // text_cap and render_props shape the text.
    let capped = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .limit(1)
        .text_cap(9)
        .render_props(&["title", "year"])
        .execute()
        .unwrap();
    assert_eq!(
        capped.items[0].text,
        "id: doc-01\nlabels: Document\ntitle: \"Wing stall\"\nyear: 1958\ntext: Wing stal…"
    );
}

#[test]
fn an_empty_lane_warns() {
    let src = source();
    let r = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .text("zzyzx")
        .execute()
        .unwrap();
    assert_eq!(codes(&r), vec![WarningCode::LaneEmpty]);
    assert!(r.warnings[0].message.contains("`text`"));
    assert!(!r.items.is_empty());
}

struct FakeEmbedder;
impl Embedder for FakeEmbedder {
    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        if text.contains("stall") {
            Ok(STALL.to_vec())
        } else {
            Err(EmbedError::new("no idea"))
        }
    }
}

#[test]
fn an_embedder_fills_in_the_dense_lane() {
    let src = source();
    let r = Retrieval::new(&src)
        .text("stall")
        .embed_text_with("minilm", FakeEmbedder)
        .execute()
        .unwrap();
    assert_eq!(
        r.lanes.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        vec!["dense:minilm", "text"]
    );
    let direct = Retrieval::new(&src)
        .text("stall")
        .vector("minilm", &STALL)
        .execute()
        .unwrap();
    // The same result as with the vector given, but for the lane report saying the
    // dense query was embedded.
    assert!(r.lanes[0].embedded && !direct.lanes[0].embedded);
    let mut r = r;
    r.lanes[0].embedded = false;
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(&direct).unwrap()
    );
    let err = Retrieval::new(&src)
        .text("wings")
        .embed_text_with("minilm", FakeEmbedder)
        .execute()
        .unwrap_err();
    assert_eq!(
        err,
        RetrieveError::Embedder {
            model: "minilm".into(),
            message: "no idea".into()
        }
    );
}

#[test]
fn bad_input_is_a_typed_error() {
    let src = source();
    let lane_err = |r: Result<RetrievalResult, RetrieveError>| match r {
        Err(RetrieveError::Index { lane, source }) => (lane, source),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        Retrieval::new(&src).label("Document").execute().unwrap_err(),
        RetrieveError::NoLane
    );
    let (lane, e) = lane_err(
        Retrieval::new(&src)
            .vector("minilm", &[0.1, f32::NAN, 0.0, 0.0])
            .execute(),
    );
    assert_eq!(
        (lane.as_str(), e),
        (
            "dense:minilm",
            IndexError::NonFiniteQuery {
                model: "minilm".into(),
                position: 1
            }
        )
    );
    let (_, e) = lane_err(Retrieval::new(&src).vector("minilm", &[1.0, 0.0]).execute());
    assert_eq!(
        e,
        IndexError::DimensionMismatch {
            model: "minilm".into(),
            expected: 4,
            got: 2
        }
    );
    let (lane, e) = lane_err(Retrieval::new(&src).vector("bert", &STALL).execute());
    assert_eq!(
        (lane.as_str(), e),
        (
            "dense:bert",
            IndexError::UnknownModel {
                kind: "dense",
                model: "bert".into()
            }
        )
    );
    let (_, e) = lane_err(
        Retrieval::new(&src)
            .sparse("bm42", SparseVector::new(vec![1], vec![1.0]))
            .execute(),
    );
    assert!(matches!(e, IndexError::UnknownModel { kind: "sparse", .. }));
    let (_, e) = lane_err(
        Retrieval::new(&src)
            .sparse("splade", SparseVector::new(vec![1, 2], vec![1.0]))
            .execute(),
    );
    assert!(matches!(e, IndexError::BadSparseQuery { .. }));
    let err = Retrieval::new(&src).text("x").at("nope").execute().unwrap_err();
    assert!(matches!(
        err,
        RetrieveError::Source(SourceError::UnknownRevision { .. })
    ));
    assert!(err.to_string().contains("nope"));
    for (b, field) in [
        (Retrieval::new(&src).text("x").limit(0), "limit"),
        (
            Retrieval::new(&src)
                .text("x")
                .expand(GraphExpand::hops(1).alpha(f64::NAN)),
            "expand.alpha",
        ),
        (
            Retrieval::new(&src).text("x").expand(GraphExpand::hops(1).tau(-1.0)),
            "expand.tau",
        ),
        (
            Retrieval::new(&src)
                .text("x")
                .fusion(Fusion::weighted_rrf().weight("dense:minilm", 1.0)),
            "fusion.weights.dense:minilm",
        ),
        (
            Retrieval::new(&src).text("x").where_range("year", Some(2.0), Some(1.0)),
            "where[0].min",
        ),
    ] {
        match b.execute() {
            Err(RetrieveError::InvalidSetting { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    // Settings are checked before the commit is resolved.
    assert_eq!(
        Retrieval::new(&src).at("nope").execute().unwrap_err(),
        RetrieveError::NoLane
    );
}

#[test]
fn from_spec_equals_the_builder() {
    let src = source();
    let json = r#"{"text": "wing stall", "vector": {"model": "minilm", "embedding": [1, 0, 0, 0]},
                   "labels_all": ["Document"], "where": [{"key": "year", "op": "range", "max": 1965}],
                   "expand": {"hops": 1, "max_nodes": 2}, "token_budget": 200, "limit": 4}"#;
    let a = Retrieval::from_spec(&src, RetrieveSpec::from_json(json).unwrap())
        .execute()
        .unwrap();
    let b = Retrieval::new(&src)
        .text("wing stall")
        .vector("minilm", &STALL)
        .label("Document")
        .where_range("year", None, Some(1965.0))
        .expand(GraphExpand::hops(1).max_nodes(2))
        .token_budget(200)
        .limit(4)
        .execute()
        .unwrap();
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    // The result JSON round-trips.
    let back: RetrievalResult = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
    assert_eq!(back, a);
}

#[test]
fn a_view_missing_the_parts_a_spec_reads_is_refused() {
    let (nodes, edges) = corpus();
    let full = resolved("main", MAIN_TS, nodes, &edges);
    let cores = full.indexes.chunks().to_vec();
    let bare = CommitIndexes::assemble(full.indexes.key, IndexParams::default(), cores).unwrap();
    let commit = ResolvedCommit {
        indexes: Arc::new(bare),
        ..full
    };
    let spec = RetrieveSpec::from_json(r#"{"text": "stall"}"#).unwrap();
    let err = execute_spec(&commit, &spec, &Plugins::default()).unwrap_err();
    assert!(matches!(err, RetrieveError::Source(SourceError::Storage(_))), "{err:?}");
}

#[test]
fn an_approximate_dense_lane_warns() {
    // 5,000 nodes on a circle (one unit, large enough for its graph), unit graphs attached.
    let nodes: Vec<Node> = (0..5000u32)
        .map(|i| {
            let a = i as f32 * 0.00125;
            Node::new(id(&format!("p{i:04}"))).with_embedding("m", vec![a.cos(), a.sin()])
        })
        .collect();
    let mut commit = resolved("hnsw", 0, nodes, &[]);
    let mut indexes = (*commit.indexes).clone();
    indexes.build_unit_graphs("m").unwrap();
    commit.indexes = Arc::new(indexes);
    let spec = RetrieveSpec::from_json(
        r#"{"vector": {"model": "m", "embedding": [1, 0]}, "depth": 10, "limit": 5, "ann": true}"#,
    )
    .unwrap();
    let r = execute_spec(&commit, &spec, &Plugins::default()).unwrap();
    assert!(r.lanes[0].approximate);
    assert_eq!(codes(&r), vec![WarningCode::DenseApproximate]);
    assert_eq!(r.items[0].id.as_str(), "p0000");
}

#[test]
fn a_lane_emptied_by_validity_says_so() {
    let src = source();
    // "Obsolete" appears only in doc-08, whose validity ended before the commit.
    let r = Retrieval::new(&src).text("obsolete").execute().unwrap();
    assert!(r.items.is_empty());
    assert_eq!(codes(&r), vec![WarningCode::LaneEmpty, WarningCode::ValidityExcluded]);
    let msg = &r.warnings[1].message;
    assert!(
        msg.contains("1 match(es) of lane `text`") && msg.contains("--all-time"),
        "{msg}"
    );
    // Seen when asked for.
    let all = Retrieval::new(&src).text("obsolete").all_time().execute().unwrap();
    assert_eq!(ids(&all), vec!["doc-08"]);
    assert!(all.warnings.is_empty(), "{:?}", all.warnings);
    // A lane empty for another reason is not blamed on validity.
    let none = Retrieval::new(&src).text("zzyzx").execute().unwrap();
    assert_eq!(codes(&none), vec![WarningCode::LaneEmpty]);
}

#[test]
fn a_lane_that_cannot_run_on_the_commit_is_skipped_with_a_warning() {
    let src = source();
    let both = Retrieval::new(&src)
        .vector("no-such-model", &STALL)
        .text("stall")
        .execute()
        .unwrap();
    let text_only = Retrieval::new(&src).text("stall").execute().unwrap();
    assert_eq!(ids(&both), ids(&text_only));
    // The lane that cannot run weighs nothing: the scores are those of the text lane alone
    // (it would otherwise keep its share of the weights, and the top item score 1 / 1.8).
    let scores = |r: &cairn_retrieve::RetrievalResult| r.items.iter().map(|i| i.score).collect::<Vec<_>>();
    assert_eq!(scores(&both), scores(&text_only));
    assert_eq!(both.items[0].score, 1.0);
    assert_eq!(codes(&both), vec![WarningCode::LaneUnavailable]);
    // The same under every method, and with explain the terms still sum to the score.
    for fusion in [Fusion::rrf(), Fusion::weighted_rrf(), Fusion::score(), Fusion::dbsf()] {
        let with = Retrieval::new(&src)
            .vector("no-such-model", &STALL)
            .text("stall")
            .fusion(fusion.clone())
            .explain()
            .execute()
            .unwrap();
        let without = Retrieval::new(&src)
            .text("stall")
            .fusion(fusion.clone())
            .explain()
            .execute()
            .unwrap();
        assert_eq!(scores(&with), scores(&without), "{fusion:?}");
        let x = with.items[0].explain.as_ref().unwrap();
        assert_eq!(x.terms.iter().map(|t| t.contribution).sum::<f64>(), with.items[0].score);
    }
    // Only the lane that cannot run has a weight above 0: nothing is left to rank by.
    let err = Retrieval::new(&src)
        .vector("no-such-model", &STALL)
        .text("stall")
        .fusion(Fusion::score().weight("text", 0.0))
        .execute()
        .unwrap_err();
    assert!(err.to_string().contains("fusion.weights"), "{err}");
    assert!(
        both.warnings[0].message.contains("no-such-model"),
        "{}",
        both.warnings[0].message
    );
    // Every lane unavailable: the query fails, naming the model.
    let err = Retrieval::new(&src)
        .vector("no-such-model", &STALL)
        .execute()
        .unwrap_err();
    assert!(err.to_string().contains("no-such-model"), "{err}");
}

#[test]
fn explain_says_why_each_item_ranked_and_changes_nothing() {
    let src = source();
    for fusion in [Fusion::rrf(), Fusion::score()] {
        let base = || {
            Retrieval::new(&src)
                .vector("minilm", &STALL)
                .text("stall wing")
                .label("Document")
                .fusion(fusion.clone())
        };
        let plain = base().execute().unwrap();
        let explained = base().explain().execute().unwrap();
        assert_eq!(ids(&plain), ids(&explained));
        for (p, e) in plain.items.iter().zip(&explained.items) {
            assert_eq!(p.score, e.score);
            assert!(p.explain.is_none());
            let x = e.explain.as_ref().unwrap();
            let sum: f64 = x.terms.iter().map(|t| t.contribution).sum();
            assert!((sum - e.score).abs() < 1e-12, "{} vs {}: {x:?}", sum, e.score);
            let lanes: Vec<&str> = x.terms.iter().map(|t| t.lane.as_str()).collect();
            assert_eq!(lanes, e.lanes.keys().map(String::as_str).collect::<Vec<_>>());
            for t in &x.terms {
                assert_eq!(t.rank, e.lanes[&t.lane].rank);
            }
            assert!(x.gates.iter().any(|g| g.contains("Document")), "{:?}", x.gates);
            assert!(x.path.is_none());
        }
    }
    // An expanded item: its path, edge by edge, with kinds and directions.
    let r = Retrieval::new(&src)
        .vector("minilm", &STALL)
        .limit(20)
        .expand(GraphExpand::hops(1).seeds(1).max_nodes(3))
        .explain()
        .execute()
        .unwrap();
    let expanded = r.items.iter().find(|i| i.lanes.is_empty()).unwrap();
    let path = expanded.explain.as_ref().unwrap().path.as_ref().unwrap();
    let ids_on_path: Vec<&str> = path
        .iter()
        .map(|s| s.from.as_str())
        .chain(path.last().map(|s| s.to.as_str()))
        .collect();
    assert_eq!(
        ids_on_path,
        expanded
            .source_path
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
    );
    for step in path {
        assert_ne!(step.kind, "?", "{step:?}");
        assert!(step.direction == "out" || step.direction == "in", "{step:?}");
    }
}
