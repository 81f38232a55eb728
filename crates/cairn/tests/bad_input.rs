//! Bad input gets a typed error and changes nothing: the transaction keeps its state, and
//! a failed commit or import writes no ref.

use cairn::{Edge, Error, Node, NodeId, Repo, SparseVector, Validity};
use cairn_core::ValidationError;

fn id(s: &str) -> NodeId {
    NodeId::new(s).expect("valid id")
}

fn repo_with_one_node() -> Repo {
    let repo = Repo::in_memory().expect("repo");
    let mut tx = repo.transaction().expect("tx");
    tx.put_node(Node::new(id("a")).with_embedding("m", vec![1.0, 0.0, 0.0]))
        .expect("put");
    tx.commit("base").expect("commit");
    repo
}

#[test]
fn every_bad_node_is_refused_and_changes_nothing() {
    let repo = repo_with_one_node();
    let head = repo.head().unwrap();
    let objects_before = repo.store().stats().unwrap().objects;
    let mut tx = repo.transaction().unwrap();
    let cases: Vec<(Node, &str)> = vec![
        (
            Node::new(id("b")).with_embedding("m", vec![1.0, f32::NAN, 0.0]),
            "NaN embedding",
        ),
        (
            Node::new(id("b")).with_embedding("m", vec![1.0, f32::INFINITY, 0.0]),
            "inf embedding",
        ),
        (
            Node::new(id("b")).with_embedding("m", vec![1.0, 0.0]),
            "wrong dimension",
        ),
        (
            Node::new(id("b")).with_sparse("s", SparseVector::new(vec![2, 1], vec![1.0, 1.0])),
            "unsorted sparse",
        ),
        (
            Node::new(id("b")).with_sparse("s", SparseVector::new(vec![1, 1], vec![1.0, 1.0])),
            "duplicate sparse",
        ),
        (
            Node::new(id("b")).with_sparse("s", SparseVector::new(vec![1], vec![f32::NAN])),
            "NaN sparse",
        ),
        (
            Node::new(id("b")).with_validity(Validity::new(Some(10), Some(10))),
            "empty validity",
        ),
        (
            Node::new(id("b")).with_text("x".repeat(cairn_core::limits::MAX_TEXT_BYTES + 1)),
            "oversize text",
        ),
        (Node::new(id("b")).with_prop("p", f64::NAN), "NaN property"),
        (Node::new(id("b")).with_label("x".repeat(200)), "oversize label"),
    ];
    for (node, what) in cases {
        match tx.put_node(node) {
            Err(Error::Validation(e)) => {
                let msg = e.to_string();
                assert!(msg.contains("\"b\""), "{what}: message names the node: {msg}");
            }
            other => panic!("{what}: expected a validation error, got {other:?}"),
        }
        assert!(tx.is_empty(), "{what}: the transaction changed");
    }
    assert!(matches!(
        tx.put_node(Node::new(id("b")).with_embedding("m", vec![1.0, 0.0])),
        Err(Error::Validation(ValidationError::DimensionMismatch {
            expected: 3,
            got: 2,
            ..
        }))
    ));
    // Edges: missing endpoint, NaN weight, empty validity.
    assert!(matches!(
        tx.put_edge(Edge::new(id("a"), "k", id("missing"))),
        Err(Error::Validation(ValidationError::MissingEndpoint { .. }))
    ));
    assert!(tx
        .put_edge(Edge::new(id("a"), "k", id("a")).with_weight(f64::NAN))
        .is_err());
    assert!(tx
        .put_edge(Edge::new(id("a"), "k", id("a")).with_validity(Validity::new(Some(5), Some(1))))
        .is_err());
    assert!(matches!(
        tx.delete_node(&id("missing")),
        Err(Error::NodeNotFound { .. })
    ));
    assert!(tx.is_empty());
    drop(tx);
    assert_eq!(repo.head().unwrap(), head);
    assert_eq!(
        repo.store().stats().unwrap().objects,
        objects_before,
        "objects were written"
    );
    // Ids: empty and oversize.
    assert!(NodeId::new("").is_err());
    assert!(NodeId::new("x".repeat(257)).is_err());
}

#[test]
fn unknown_revisions_and_branches_are_typed_errors() {
    let repo = repo_with_one_node();
    for rev in ["nope", "HEAD~5", "deadbeef", &"0".repeat(64), "main@{0}", "HEAD~x"] {
        match repo.resolve(rev) {
            Err(Error::UnknownRevision { .. }) => {}
            other => panic!("{rev}: expected UnknownRevision, got {other:?}"),
        }
    }
    assert!(matches!(repo.switch_branch("ghost"), Err(Error::UnknownBranch(_))));
    assert!(matches!(repo.delete_branch("main"), Err(Error::DeleteCurrentBranch(_))));
    assert!(repo.create_branch("bad name", None).is_err());
}

#[test]
fn timestamps_never_go_backwards() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("a"))).unwrap();
    tx.commit_at("t=1000", 1000).unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("b"))).unwrap();
    assert!(matches!(
        tx.commit_at("t=999", 999),
        Err(Error::TimestampBeforeParent {
            timestamp_ms: 999,
            parent_ms: 1000
        })
    ));
}

#[test]
fn bad_import_line_imports_nothing() {
    let repo = repo_with_one_node();
    let head = repo.head().unwrap();
    let file = "{\"node\": {\"id\": \"x\"}}\n{\"node\": {\"id\": \"y\", \"embeddings\": {\"m\": [1.0]}}}\n";
    match repo.import_jsonl(file.as_bytes(), "bad", &mut |_| {}) {
        Err(Error::Import { line: 2, detail, .. }) => assert!(detail.contains("dimension"), "{detail}"),
        other => panic!("expected an import error on line 2, got {other:?}"),
    }
    let file = "{\"node\": {\"id\": \"x\"}}\n\n{not json\n";
    assert!(matches!(
        repo.import_jsonl(file.as_bytes(), "bad", &mut |_| {}),
        Err(Error::Import { line: 3, .. })
    ));
    assert_eq!(repo.head().unwrap(), head);
    assert!(repo.node(&id("x")).unwrap().is_none());
}

#[test]
fn a_time_of_the_wrong_json_type_names_the_field_and_the_forms() {
    let repo = repo_with_one_node();
    let head = repo.head().unwrap();
    for (line, field, what) in [
        (r#"{"node": {"id": "ok1", "valid_from": 1.5}}"#, "valid_from", "1.5"),
        (r#"{"node": {"id": "ok1", "valid_until": true}}"#, "valid_until", "true"),
        (
            r#"{"edge": {"source": "a", "target": "a", "kind": "k", "valid_from": [1]}}"#,
            "valid_from",
            "a list",
        ),
        (
            r#"{"invalidate": {"id": "a", "valid_until": 1.5}}"#,
            "valid_until",
            "1.5",
        ),
        (
            r#"{"patch": {"id": "a", "valid_from": {"ms": 1}}}"#,
            "valid_from",
            "an object",
        ),
    ] {
        match repo.import_jsonl(line.as_bytes(), "bad", &mut |_| {}) {
            Err(Error::Import { line: 1, detail, .. }) => {
                assert!(detail.starts_with(&format!("`{field}`: ")), "{detail}");
                assert!(detail.contains(what), "{detail}");
                assert!(
                    detail.contains("ms since the epoch") && detail.contains("RFC 3339"),
                    "{detail}"
                );
                assert!(!detail.contains("untagged"), "{detail}");
            }
            other => panic!("{line}: expected an import error on line 1, got {other:?}"),
        }
    }
    assert_eq!(repo.head().unwrap(), head);
    // The accepted forms still work, and null opens a patched end.
    let ok = "{\"node\": {\"id\": \"t\", \"valid_from\": 5, \"valid_until\": \"2024-06-01\"}}\n\
              {\"patch\": {\"id\": \"t\", \"valid_until\": null}}\n";
    repo.import_jsonl(ok.as_bytes(), "ok", &mut |_| {}).unwrap();
    let t = repo.node(&id("t")).unwrap().unwrap();
    assert_eq!((t.validity.valid_from_ms, t.validity.valid_until_ms), (Some(5), None));
}

#[test]
fn a_line_of_the_wrong_shape_says_what_a_line_is() {
    let repo = repo_with_one_node();
    let head = repo.head().unwrap();
    for (line, found) in [
        ("{}", "(found none)"),
        (
            r#"{"node": {"id": "x"}, "edge": {"source": "x", "target": "x", "kind": "k"}}"#,
            "(found `node` and `edge`)",
        ),
        (r#"{"nodes": {"id": "x"}}"#, "(found `nodes`)"),
        (
            "[1]",
            "found a list (the import format is JSON Lines: one object per line, not one JSON array)",
        ),
    ] {
        match repo.import_jsonl(format!("\n{line}\n").as_bytes(), "bad", &mut |_| {}) {
            Err(Error::Import { line: 2, detail, .. }) => {
                assert!(
                    detail.starts_with("a line is an object with exactly one of node, edge, "),
                    "{detail}"
                );
                assert!(detail.contains(found), "{line}: {detail}");
            }
            other => panic!("{line}: expected an import error on line 2, got {other:?}"),
        }
    }
    // Bad JSON, and a well-shaped line with a bad body, keep serde's message; a
    // pretty-printed object (its first line is `{` alone) also says what the format is.
    for (line, says) in [
        ("{not json", "key must be a string"),
        (r#"{"node": {"id": "x", "bogus": 1}}"#, "bogus"),
        (
            "{\n  \"node\": {\"id\": \"x\"}\n}",
            "JSON Lines, one complete object per line",
        ),
    ] {
        match repo.import_jsonl(line.as_bytes(), "bad", &mut |_| {}) {
            Err(Error::Import { line: 1, detail, .. }) => assert!(detail.contains(says), "{detail}"),
            other => panic!("{line}: expected an import error, got {other:?}"),
        }
    }
    assert_eq!(repo.head().unwrap(), head);
}
