//! Facts that change: `invalidate`, `invalidate_edge` and `patch_node`, through the API
//! and the import format; plain dates and offset-less times.

use cairn::parse_time_ms;
use cairn::{Edge, EdgeKey, Error, Node, NodeId, NodePatch, Repo, Value};

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

fn seeded() -> Repo {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(
        Node::new(id("alice"))
            .with_label("Person")
            .with_label("Student")
            .with_prop("school", Value::from("ENS"))
            .with_text("Alice studies in Paris")
            .with_embedding("m", vec![1.0, 0.0]),
    )
    .unwrap();
    tx.put_node(Node::new(id("acme")).with_label("Company")).unwrap();
    tx.put_edge(Edge::new(id("alice"), "works_at", id("acme"))).unwrap();
    tx.commit("seed").unwrap();
    repo
}

#[test]
fn invalidate_ends_a_fact_and_keeps_the_rest() {
    let repo = seeded();
    let before = repo.node(&id("alice")).unwrap().unwrap();
    let t = parse_time_ms("2024-06-01").unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.invalidate(&id("alice"), t).unwrap();
    let key = EdgeKey {
        source: id("alice"),
        kind: "works_at".into(),
        target: id("acme"),
    };
    tx.invalidate_edge(&key, t).unwrap();
    tx.commit("ended").unwrap();
    let after = repo.node(&id("alice")).unwrap().unwrap();
    assert_eq!(after.validity.valid_until_ms, Some(t));
    let mut expected = before;
    expected.validity.valid_until_ms = Some(t);
    assert_eq!(after, expected);
    let head = repo.head().unwrap().unwrap();
    assert_eq!(
        repo.edge_at(&head, &key).unwrap().unwrap().validity.valid_until_ms,
        Some(t)
    );
}

#[test]
fn invalidate_and_patch_refuse_what_is_not_there_or_not_valid() {
    let repo = seeded();
    let mut tx = repo.transaction().unwrap();
    assert!(matches!(
        tx.invalidate(&id("nobody"), 5),
        Err(Error::NodeNotFound { .. })
    ));
    assert!(matches!(
        tx.patch_node(&id("nobody"), NodePatch::new().text("x")),
        Err(Error::NodeNotFound { .. })
    ));
    let missing = EdgeKey {
        source: id("alice"),
        kind: "knows".into(),
        target: id("acme"),
    };
    assert!(matches!(
        tx.invalidate_edge(&missing, 5),
        Err(Error::EdgeNotFound { .. })
    ));
    // An end at or before the start is refused, and the transaction is unchanged.
    tx.patch_node(&id("alice"), NodePatch::new().valid_from(Some(100)))
        .unwrap();
    assert!(matches!(tx.invalidate(&id("alice"), 100), Err(Error::Validation(_))));
    assert_eq!(tx.node(&id("alice")).unwrap().unwrap().validity.valid_until_ms, None);
    // A wrong dimension is refused as in a put.
    assert!(matches!(
        tx.patch_node(&id("alice"), NodePatch::new().embedding("m", vec![1.0, 0.0, 0.0])),
        Err(Error::Validation(_))
    ));
}

#[test]
fn patch_changes_only_what_it_names() {
    let repo = seeded();
    let mut tx = repo.transaction().unwrap();
    tx.patch_node(
        &id("alice"),
        NodePatch::new()
            .add_label("Employee")
            .remove_label("Student")
            .remove_prop("school")
            .set_prop("team", Value::from("search"))
            .text("Alice works in Lyon"),
    )
    .unwrap();
    tx.commit("graduated").unwrap();
    let n = repo.node(&id("alice")).unwrap().unwrap();
    assert_eq!(
        n.labels.iter().map(String::as_str).collect::<Vec<_>>(),
        ["Employee", "Person"]
    );
    assert_eq!(n.props.len(), 1);
    assert_eq!(n.props["team"], Value::from("search"));
    assert_eq!(n.text, "Alice works in Lyon");
    assert_eq!(n.embeddings["m"], vec![1.0, 0.0], "vectors kept");
    // The edge is untouched.
    let head = repo.head().unwrap().unwrap();
    assert_eq!(repo.edges_from(&head, &id("alice")).unwrap().len(), 1);
}

#[test]
fn the_import_format_invalidates_and_patches() {
    let repo = seeded();
    let lines = r#"{"invalidate": {"id": "alice", "valid_until": "2024-06-01"}}
{"invalidate_edge": {"source": "alice", "kind": "works_at", "target": "acme", "valid_until": "2024-06-01T12:00"}}
{"patch": {"id": "acme", "labels_add": ["Employer"], "props": {"size": 12}, "valid_from": "2001-02-03 04:05:06"}}
"#;
    repo.import_jsonl(lines.as_bytes(), "changes", &mut |_| {}).unwrap();
    let alice = repo.node(&id("alice")).unwrap().unwrap();
    assert_eq!(alice.validity.valid_until_ms, Some(1_717_200_000_000));
    let acme = repo.node(&id("acme")).unwrap().unwrap();
    assert!(acme.labels.contains("Employer") && acme.labels.contains("Company"));
    assert_eq!(acme.props["size"], Value::from(12i64));
    assert_eq!(acme.validity.valid_from_ms, parse_time_ms("2001-02-03T04:05:06Z"));
    let head = repo.head().unwrap().unwrap();
    let edge = &repo.edges_from(&head, &id("alice")).unwrap()[0];
    assert_eq!(edge.validity.valid_until_ms, Some(1_717_243_200_000));
    // `null` opens an end again.
    repo.import_jsonl(
        r#"{"patch": {"id": "alice", "valid_until": null}}"#.as_bytes(),
        "reopen",
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(repo.node(&id("alice")).unwrap().unwrap().validity.valid_until_ms, None);
    // Errors name the line; nothing is committed.
    let before = repo.head().unwrap();
    let bad = "{\"invalidate\": {\"id\": \"alice\", \"valid_until\": \"2024-06-01\"}}\n{\"invalidate\": {\"id\": \"ghost\", \"valid_until\": 5}}\n";
    match repo.import_jsonl(bad.as_bytes(), "bad", &mut |_| {}) {
        Err(Error::Import { line: 2, detail, .. }) => assert!(detail.contains("ghost"), "{detail}"),
        other => panic!("{other:?}"),
    }
    let bad_time = r#"{"invalidate": {"id": "alice", "valid_until": "June 1st"}}"#;
    match repo.import_jsonl(bad_time.as_bytes(), "bad", &mut |_| {}) {
        Err(Error::Import { line: 1, detail, .. }) => {
            assert!(detail.contains("plain date") || detail.contains("a date"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(repo.head().unwrap(), before);
}

#[test]
fn times_without_an_offset_are_utc() {
    let cases = [
        ("2024-06-01", 1_717_200_000_000),
        ("2024-06-01T00:00:00", 1_717_200_000_000),
        ("2024-06-01T00:00", 1_717_200_000_000),
        ("2024-06-01 00:00:00.250", 1_717_200_000_250),
        ("2024-06-01T02:00:00+02:00", 1_717_200_000_000),
        ("2024-06-01T00:00:00Z", 1_717_200_000_000),
        ("1717200000000", 1_717_200_000_000),
        ("-5", -5),
    ];
    for (s, ms) in cases {
        assert_eq!(parse_time_ms(s), Some(ms), "{s}");
    }
    for bad in ["", "2024-13-01", "2024-06-01T25:00", "01/06/2024", "2024-06-01T"] {
        assert_eq!(parse_time_ms(bad), None, "{bad}");
    }
}
