//! Every documented cap (storage-format §2.4, `cairn_core::limits`) at exactly the cap is
//! accepted and stored, and one past it is refused with an error that names the cap —
//! through the library and through a JSON Lines import alike — and a refusal changes
//! nothing.

use cairn::{Edge, Error, Node, NodeId, Repo, SparseVector, Value};
use cairn_core::limits::{
    MAX_AUTHOR_BYTES, MAX_EMBEDDING_DIM, MAX_IMPORT_LINE_BYTES, MAX_LABELS, MAX_MESSAGE_BYTES, MAX_MODELS_PER_NODE,
    MAX_NAME_BYTES, MAX_NODE_ID_BYTES, MAX_PROPS_BYTES, MAX_SPARSE_NNZ, MAX_TEXT_BYTES, MAX_VALUE_DEPTH,
};
use serde_json::json;

fn id(s: &str) -> NodeId {
    NodeId::new(s).expect("valid id")
}

/// A value nested `depth` lists deep (`depth` 0: a plain number).
fn nested(depth: usize) -> Value {
    let mut v = Value::Int(1);
    for _ in 0..depth {
        v = Value::List(vec![v]);
    }
    v
}

/// A string property whose accounted size (key bytes + value bytes) is `bytes`.
fn props_of(bytes: usize) -> Value {
    Value::String("p".repeat(bytes - 1))
}

/// One cap's two sides: a node at the cap and one past it, and the number the refusal
/// must name.
struct Case {
    what: &'static str,
    at_cap: Node,
    past_cap: Node,
    cap: usize,
}

fn cases() -> Vec<Case> {
    let n = |s: &str| Node::new(id(s));
    let labels = |count: usize| (0..count).fold(n("a"), |node, i| node.with_label(format!("l{i}")));
    let models = |count: usize| (0..count).fold(n("a"), |node, i| node.with_embedding(format!("m{i}"), vec![1.0]));
    let sparse = |nnz: usize| n("a").with_sparse("s", SparseVector::new((0..nnz as u32).collect(), vec![1.0; nnz]));
    vec![
        Case {
            what: "labels",
            at_cap: labels(MAX_LABELS),
            past_cap: labels(MAX_LABELS + 1),
            cap: MAX_LABELS,
        },
        Case {
            what: "label name",
            at_cap: n("a").with_label("x".repeat(MAX_NAME_BYTES)),
            past_cap: n("a").with_label("x".repeat(MAX_NAME_BYTES + 1)),
            cap: MAX_NAME_BYTES,
        },
        Case {
            what: "property key",
            at_cap: n("a").with_prop("k".repeat(MAX_NAME_BYTES), 1),
            past_cap: n("a").with_prop("k".repeat(MAX_NAME_BYTES + 1), 1),
            cap: MAX_NAME_BYTES,
        },
        Case {
            what: "model name",
            at_cap: n("a").with_embedding("m".repeat(MAX_NAME_BYTES), vec![1.0]),
            past_cap: n("a").with_embedding("m".repeat(MAX_NAME_BYTES + 1), vec![1.0]),
            cap: MAX_NAME_BYTES,
        },
        Case {
            what: "text",
            at_cap: n("a").with_text("t".repeat(MAX_TEXT_BYTES)),
            past_cap: n("a").with_text("t".repeat(MAX_TEXT_BYTES + 1)),
            cap: MAX_TEXT_BYTES,
        },
        Case {
            what: "embedding dimensions",
            at_cap: n("a").with_embedding("m", vec![0.5; MAX_EMBEDDING_DIM]),
            past_cap: n("a").with_embedding("m", vec![0.5; MAX_EMBEDDING_DIM + 1]),
            cap: MAX_EMBEDDING_DIM,
        },
        Case {
            what: "models per node",
            at_cap: models(MAX_MODELS_PER_NODE),
            past_cap: models(MAX_MODELS_PER_NODE + 1),
            cap: MAX_MODELS_PER_NODE,
        },
        Case {
            what: "sparse entries",
            at_cap: sparse(MAX_SPARSE_NNZ),
            past_cap: sparse(MAX_SPARSE_NNZ + 1),
            cap: MAX_SPARSE_NNZ,
        },
        Case {
            what: "property nesting",
            at_cap: n("a").with_prop("p", nested(MAX_VALUE_DEPTH)),
            past_cap: n("a").with_prop("p", nested(MAX_VALUE_DEPTH + 1)),
            cap: MAX_VALUE_DEPTH,
        },
        Case {
            what: "property bytes",
            at_cap: n("a").with_prop("p", props_of(MAX_PROPS_BYTES)),
            past_cap: n("a").with_prop("p", props_of(MAX_PROPS_BYTES + 1)),
            cap: MAX_PROPS_BYTES,
        },
    ]
}

/// The node as one line of the import format.
fn json_line(node: &Node) -> String {
    let sparse: serde_json::Map<String, serde_json::Value> = node
        .sparse
        .iter()
        .map(|(m, s)| (m.clone(), json!({"indices": s.indices, "values": s.values})))
        .collect();
    json!({"node": {
        "id": node.id.as_str(),
        "labels": node.labels,
        "text": node.text,
        "props": node.props,
        "embeddings": node.embeddings,
        "sparse": sparse,
    }})
    .to_string()
}

#[test]
fn every_cap_is_accepted_at_the_cap_and_refused_one_past_it() {
    for case in cases() {
        let repo = Repo::in_memory().unwrap();
        let mut tx = repo.transaction().unwrap();
        tx.put_node(case.at_cap.clone())
            .unwrap_or_else(|e| panic!("{}: at the cap refused: {e}", case.what));
        tx.commit("at cap").unwrap();
        assert_eq!(
            repo.node(&id("a")).unwrap().as_ref(),
            Some(&case.at_cap),
            "{}: read back differs",
            case.what
        );

        let head = repo.head().unwrap();
        let mut tx = repo.transaction().unwrap();
        match tx.put_node(case.past_cap.clone()) {
            Err(Error::Validation(e)) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&case.cap.to_string()),
                    "{}: cap not named: {msg}",
                    case.what
                );
            }
            other => panic!("{}: one past the cap gave {other:?}", case.what),
        }
        assert!(tx.is_empty(), "{}: the refused put changed the transaction", case.what);
        drop(tx);
        assert_eq!(repo.head().unwrap(), head);
    }
}

#[test]
fn every_cap_holds_through_import_lines() {
    for case in cases() {
        let repo = Repo::in_memory().unwrap();
        let line = json_line(&case.at_cap);
        repo.import_jsonl(line.as_bytes(), "at cap", &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: import at the cap refused: {e}", case.what));
        assert_eq!(
            repo.node(&id("a")).unwrap().as_ref(),
            Some(&case.at_cap),
            "{}",
            case.what
        );

        let head = repo.head().unwrap();
        let line = json_line(&case.past_cap);
        match repo.import_jsonl(line.as_bytes(), "past cap", &mut |_| {}) {
            Err(Error::Import { line: 1, detail, .. }) => {
                assert!(
                    detail.contains(&case.cap.to_string()),
                    "{}: cap not named: {detail}",
                    case.what
                );
            }
            other => panic!("{}: import one past the cap gave {other:?}", case.what),
        }
        assert_eq!(
            repo.head().unwrap(),
            head,
            "{}: a refused import moved the head",
            case.what
        );
    }
}

#[test]
fn edges_names_ids_and_commit_fields_respect_their_caps() {
    // Node ids.
    assert!(NodeId::new("i".repeat(MAX_NODE_ID_BYTES)).is_ok());
    let err = NodeId::new("i".repeat(MAX_NODE_ID_BYTES + 1)).unwrap_err();
    assert!(err.to_string().contains(&MAX_NODE_ID_BYTES.to_string()), "{err}");

    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("a"))).unwrap();
    // Edge kinds and edge properties.
    tx.put_edge(Edge::new(id("a"), "k".repeat(MAX_NAME_BYTES), id("a")))
        .unwrap();
    let err = tx
        .put_edge(Edge::new(id("a"), "k".repeat(MAX_NAME_BYTES + 1), id("a")))
        .unwrap_err();
    assert!(err.to_string().contains(&MAX_NAME_BYTES.to_string()), "{err}");
    let mut edge = Edge::new(id("a"), "deep", id("a"));
    edge.props.insert("p".into(), nested(MAX_VALUE_DEPTH));
    tx.put_edge(edge.clone()).unwrap();
    edge.props.insert("p".into(), nested(MAX_VALUE_DEPTH + 1));
    let err = tx.put_edge(edge).unwrap_err();
    assert!(err.to_string().contains(&MAX_VALUE_DEPTH.to_string()), "{err}");
    // Author.
    tx.set_author("w".repeat(MAX_AUTHOR_BYTES)).unwrap();
    let err = tx.set_author("w".repeat(MAX_AUTHOR_BYTES + 1)).unwrap_err();
    assert!(err.to_string().contains("1 KiB"), "{err}");
    // An empty author (`CAIRN_AUTHOR=` in a shell) is refused, not written.
    for empty in ["", "  "] {
        let err = tx.set_author(empty).unwrap_err();
        assert!(matches!(err, cairn::Error::InvalidArgument(_)), "{err}");
    }
    tx.commit(&"m".repeat(MAX_MESSAGE_BYTES)).unwrap();

    // Commit message one past its cap.
    let head = repo.head().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("b"))).unwrap();
    let err = tx.commit(&"m".repeat(MAX_MESSAGE_BYTES + 1)).unwrap_err();
    assert!(err.to_string().contains("64 KiB"), "{err}");
    assert_eq!(repo.head().unwrap(), head);
    assert_eq!(repo.commit(&head.unwrap()).unwrap().message.len(), MAX_MESSAGE_BYTES);
}

#[test]
fn an_import_line_may_be_exactly_the_line_cap_long() {
    // JSON allows whitespace anywhere between tokens: pad a small node to the cap.
    let head = r#"{"node": {"id": "a", "text": "padded"}"#;
    let mut line = String::with_capacity(MAX_IMPORT_LINE_BYTES + 2);
    line.push_str(head);
    line.extend(std::iter::repeat_n(' ', MAX_IMPORT_LINE_BYTES - head.len() - 1));
    line.push('}');
    assert_eq!(line.len(), MAX_IMPORT_LINE_BYTES);
    let repo = Repo::in_memory().unwrap();
    repo.import_jsonl(format!("{line}\n").as_bytes(), "at cap", &mut |_| {})
        .expect("a line of exactly the cap is accepted");
    assert_eq!(repo.node(&id("a")).unwrap().unwrap().text, "padded");

    // One byte more (a space before the closing brace) is refused, naming the cap.
    line.insert(line.len() - 1, ' ');
    let before = repo.head().unwrap();
    match repo.import_jsonl(line.as_bytes(), "past cap", &mut |_| {}) {
        Err(Error::Import { line: 1, detail, .. }) => {
            assert!(detail.contains(&MAX_IMPORT_LINE_BYTES.to_string()), "{detail}")
        }
        other => panic!("expected the line cap, got {other:?}"),
    }
    assert_eq!(repo.head().unwrap(), before);
}

#[test]
fn ids_chosen_to_share_one_tree_node_are_refused_before_anything_is_written() {
    // Ids of 256 bytes that all have level 0 share the root tree node: 60,000 of them
    // would make it ~17.8 MB, over the object limit the decoder enforces.
    let ids: Vec<NodeId> = (0u32..)
        .map(|i| format!("{i:0>256}"))
        .filter(|s| cairn_core::level::key_level(s.as_bytes()) == 0)
        .take(60_000)
        .map(|s| NodeId::new(s).unwrap())
        .collect();
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("seed"))).unwrap();
    tx.commit("seed").unwrap();
    let head = repo.head().unwrap();
    let objects = repo.store().stats().unwrap().objects;

    let mut tx = repo.transaction().unwrap();
    for id in &ids {
        tx.put_node(Node::new(id.clone())).unwrap();
    }
    match tx.commit("adversarial") {
        Err(Error::Graph(cairn_graph::GraphError::TooLarge {
            kind: "tree node",
            bytes,
            max,
        })) => {
            assert!(bytes > max, "{bytes} <= {max}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(repo.head().unwrap(), head);
    assert_eq!(repo.store().stats().unwrap().objects, objects, "objects were written");
}
