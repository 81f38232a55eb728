//! Repository-level behaviour of the graph: cascading deletes, reads at any commit, the
//! same content giving the same hashes whatever the order of writes, diff, branches, and
//! as-of-time resolution.

use cairn::{ChangeKind, Edge, EdgeKey, Node, NodeId, Repo};

fn id(s: &str) -> NodeId {
    NodeId::new(s).expect("valid id")
}

#[test]
fn deleting_a_node_deletes_its_edges_both_ways() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    for n in ["a", "b", "c"] {
        tx.put_node(Node::new(id(n))).unwrap();
    }
    tx.put_edge(Edge::new(id("a"), "cites", id("b"))).unwrap();
    tx.put_edge(Edge::new(id("b"), "cites", id("c"))).unwrap();
    tx.put_edge(Edge::new(id("a"), "cites", id("c"))).unwrap();
    let c1 = tx.commit("c1").unwrap();
    assert_eq!(repo.edges_from(&c1, &id("a")).unwrap().len(), 2);
    assert_eq!(repo.edges_to(&c1, &id("c")).unwrap().len(), 2);
    let mut tx = repo.transaction().unwrap();
    tx.delete_node(&id("b")).unwrap();
    let c2 = tx.commit("c2").unwrap();
    let edges = repo.edges_at(&c2).unwrap();
    assert_eq!(edges.len(), 1);
    assert_eq!(
        edges[0].key(),
        EdgeKey {
            source: id("a"),
            kind: "cites".into(),
            target: id("c")
        }
    );
    assert_eq!(repo.stats(&c2).unwrap().edges, 1);
    assert_eq!(repo.stats(&c2).unwrap().nodes, 2);
    // The old commit still reads as it was.
    assert!(repo.node_at(&c1, &id("b")).unwrap().is_some());
    let d = repo.diff(&c1, &c2).unwrap();
    assert_eq!(d.nodes.len(), 1);
    assert_eq!(d.nodes[0].kind, ChangeKind::Removed);
    assert_eq!(d.edges.len(), 2);
}

#[test]
fn same_content_same_roots_whatever_the_order() {
    let nodes: Vec<Node> = (0..300)
        .map(|i| {
            Node::new(id(&format!("n{i:03}")))
                .with_label("L")
                .with_text(format!("text {i}"))
        })
        .collect();
    let r1 = Repo::in_memory().unwrap();
    let mut tx = r1.transaction().unwrap();
    for n in &nodes {
        tx.put_node(n.clone()).unwrap();
    }
    let c1 = tx.commit("all at once").unwrap();
    let r2 = Repo::in_memory().unwrap();
    for chunk in nodes.rchunks(37) {
        let mut tx = r2.transaction().unwrap();
        for n in chunk.iter().rev() {
            tx.put_node(n.clone()).unwrap();
        }
        tx.commit("in pieces, reversed").unwrap();
    }
    let c2 = r2.head().unwrap().unwrap();
    let (s1, s2) = (r1.stats(&c1).unwrap(), r2.stats(&c2).unwrap());
    assert_eq!(s1.node_root, s2.node_root);
    assert_eq!(s1.nodes, 300);
    assert_eq!(s2.nodes, 300);
}

#[test]
fn branches_and_revisions() {
    let repo = Repo::in_memory().unwrap();
    let mut commits = Vec::new();
    for i in 0..5 {
        let mut tx = repo.transaction().unwrap();
        tx.put_node(Node::new(id(&format!("n{i}")))).unwrap();
        commits.push(tx.commit_at(&format!("c{i}"), 1000 * (i + 1)).unwrap());
    }
    assert_eq!(repo.resolve("HEAD").unwrap(), commits[4]);
    assert_eq!(repo.resolve("HEAD~2").unwrap(), commits[2]);
    assert_eq!(repo.resolve("main~4").unwrap(), commits[0]);
    assert_eq!(repo.resolve(&commits[1].to_hex()[..10]).unwrap(), commits[1]);
    // As-of transaction time.
    assert_eq!(repo.as_of("main", 3500).unwrap(), Some(commits[2]));
    assert_eq!(repo.as_of("main", 3000).unwrap(), Some(commits[2]));
    assert_eq!(repo.as_of("main", 999).unwrap(), None);
    assert_eq!(repo.resolve("main@{4000}").unwrap(), commits[3]);
    // Branching.
    repo.create_branch("exp", Some("HEAD~1")).unwrap();
    repo.switch_branch("exp").unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("only-on-exp"))).unwrap();
    let e1 = tx.commit_at("exp work", 10_000).unwrap();
    assert_eq!(repo.commit(&e1).unwrap().parents, vec![commits[3]]);
    assert!(repo.node_at(&commits[4], &id("only-on-exp")).unwrap().is_none());
    assert_eq!(repo.as_of("exp", 4500).unwrap(), Some(commits[3]));
    let names: Vec<String> = repo.branches().unwrap().into_iter().map(|(b, _)| b).collect();
    assert_eq!(names, vec!["exp".to_string(), "main".to_string()]);
    repo.switch_branch("main").unwrap();
    repo.delete_branch("exp").unwrap();
    assert_eq!(repo.branches().unwrap().len(), 1);
}

/// Expansion adds only nodes that pass the gates; when it reached some only on the
/// excluded side and added none, the result says so instead of staying silent.
#[test]
fn expansion_that_the_gates_empty_is_a_warning() {
    use cairn::retrieve::{GraphExpand, WarningCode};
    let repo = Repo::in_memory().unwrap();
    let id = |s: &str| NodeId::new(s).unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("alice")).with_label("Person").with_text("Alice"))
        .unwrap();
    tx.put_node(
        Node::new(id("fact-1"))
            .with_label("Fact")
            .with_text("she lives in Paris"),
    )
    .unwrap();
    tx.put_edge(cairn::Edge::new(id("fact-1"), "about", id("alice")))
        .unwrap();
    tx.commit("memory").unwrap();
    let run = |label: Option<&str>| {
        let mut q = repo.retrieve().text("Paris").expand(GraphExpand::hops(1));
        if let Some(l) = label {
            q = q.label(l);
        }
        q.execute().unwrap()
    };
    let open = run(None);
    let ids: Vec<&str> = open.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["fact-1", "alice"]);
    assert!(open.warnings.iter().all(|w| w.code != WarningCode::ExpansionGated));
    let gated = run(Some("Fact"));
    assert_eq!(gated.items.len(), 1);
    let warning = gated
        .warnings
        .iter()
        .find(|w| w.code == WarningCode::ExpansionGated)
        .expect("a warning says expansion was gated");
    assert!(warning.message.contains("reached 1 node"), "{}", warning.message);
}

/// A changed vector of the same dimension reads as changed in a diff: each side's summary
/// carries a fingerprint of its values (an unchanged vector is not listed at all).
#[test]
fn a_changed_vector_reads_as_changed() {
    use cairn::{node_field_changes, Node, NodeId, SparseVector};
    let id = NodeId::new("n").unwrap();
    let before = Node::new(id.clone())
        .with_embedding("tiny", vec![1.0, 0.0, 0.0])
        .with_sparse("kw", SparseVector::new(vec![1, 5], vec![1.0, 2.0]));
    let after = Node::new(id)
        .with_embedding("tiny", vec![0.0, 1.0, 0.0])
        .with_sparse("kw", SparseVector::new(vec![1, 5], vec![1.0, 3.0]));
    let changes = node_field_changes(&before, &after);
    let fields: Vec<&str> = changes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["embeddings.tiny", "sparse.kw"]);
    for c in &changes {
        assert_ne!(c.before, c.after, "{c:?}");
    }
    assert!(changes[0].before.starts_with("\"3-d #") && changes[0].after.starts_with("\"3-d #"));
    assert!(changes[1].before.starts_with("\"2 entries #"));
    assert!(node_field_changes(&before, &before).is_empty());
}
