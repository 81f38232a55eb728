//! Importing a collection into a repository and evaluating runs on it, on a tiny
//! collection built in memory (no files needed).

use std::collections::BTreeMap;

use cairn::{NodeId, Repo, Value};
use cairn_eval::{
    evaluate, import_collection, import_collection_with_meta, Collection, CorpusDoc, DocMeta, EvalRun, Link, Qrels,
    Query, DOCUMENT_LABEL, EVAL_MODEL, LINK_KIND,
};

/// Three documents in 2 dimensions; query 1 asks for "a" (relevant), query 2 has no
/// judgment.
fn tiny() -> Collection {
    let doc = |id: &str, text: &str| CorpusDoc {
        id: id.into(),
        title: String::new(),
        text: text.into(),
    };
    Collection {
        corpus: vec![
            doc("a", "wing stall"),
            doc("b", "rocket nozzle"),
            doc("c", "boundary layer"),
        ],
        queries: vec![
            Query {
                id: "1".into(),
                text: "stall".into(),
            },
            Query {
                id: "2".into(),
                text: "nozzle".into(),
            },
        ],
        qrels: Qrels(BTreeMap::from([(
            "1".to_string(),
            BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 0)]),
        )])),
        dim: 2,
        corpus_embeddings: vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8],
        query_embeddings: vec![1.0, 0.0, 0.0, 1.0],
        links: Some(vec![Link {
            source: "a".into(),
            target: "c".into(),
            weight: 2.0,
        }]),
    }
}

#[test]
fn import_maps_documents_meta_and_links() {
    let repo = Repo::in_memory().unwrap();
    let c = tiny();
    let meta = DocMeta(BTreeMap::from([(
        "a".to_string(),
        BTreeMap::from([("author".to_string(), "Okafor".to_string())]),
    )]));
    let head = import_collection_with_meta(&repo, &c, &meta, true).unwrap();
    let a = repo.node_at(&head, &NodeId::new("a").unwrap()).unwrap().unwrap();
    assert_eq!(a.text, "wing stall");
    assert!(a.labels.contains(DOCUMENT_LABEL));
    assert_eq!(a.embeddings[EVAL_MODEL], vec![1.0, 0.0]);
    assert_eq!(a.props["author"], Value::String("Okafor".into()));
    let edges = repo.edges_at(&head).unwrap();
    assert_eq!(edges.len(), 1);
    assert_eq!((edges[0].kind.as_str(), edges[0].weight), (LINK_KIND, 2.0));

    let repo = Repo::in_memory().unwrap();
    let head = import_collection(&repo, &c, false).unwrap();
    assert_eq!(repo.stats(&head).unwrap().edges, 0);
}

#[test]
fn an_invalid_id_commits_nothing() {
    let repo = Repo::in_memory().unwrap();
    let mut c = tiny();
    c.corpus[1].id = String::new();
    let err = import_collection(&repo, &c, false).unwrap_err();
    assert!(matches!(err, cairn::Error::InvalidArgument(_)), "{err}");
    assert_eq!(repo.head().unwrap(), None);
}

#[test]
fn evaluate_scores_only_judged_queries() {
    let repo = Repo::in_memory().unwrap();
    let c = tiny();
    import_collection(&repo, &c, false).unwrap();
    for run in [EvalRun::dense(), EvalRun::text(), EvalRun::hybrid()] {
        let s = evaluate(&repo, &c, &run).unwrap();
        assert_eq!((s.queries, s.judged), (2, 1), "{run:?}");
        assert_eq!((s.ndcg10, s.recall100), (1.0, 1.0), "{run:?}");
        assert!(!s.approximate);
    }
    let s = evaluate(&repo, &c, &EvalRun::dense().limit_queries(1)).unwrap();
    assert_eq!(s.queries, 1);
}

#[test]
fn a_failing_query_is_named() {
    let repo = Repo::in_memory().unwrap();
    let c = tiny();
    import_collection(&repo, &c, false).unwrap();
    let err = evaluate(&repo, &c, &EvalRun::hybrid().at("nope")).unwrap_err();
    assert_eq!(err.query_id, "1");
    assert!(err.to_string().starts_with("query 1: "), "{err}");
}
