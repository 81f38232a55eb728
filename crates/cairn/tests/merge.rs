//! Three-way branch merges: clean merges, identical changes, conflicts and their
//! resolution, strategies, deletions, dropped dangling edges, fast-forward, and that
//! nothing a merge does not touch is lost (embeddings, sparse vectors, validity, edges).

use std::collections::{BTreeMap, BTreeSet};

use cairn::{
    Conflict, Edge, EdgeKey, Error, MergeKind, MergeStrategy, Node, NodeId, Repo, Resolution, SparseVector, Validity,
};

fn id(s: &str) -> NodeId {
    NodeId::new(s).expect("valid id")
}

fn doc(s: &str, text: &str) -> Node {
    Node::new(id(s)).with_label("Doc").with_text(text)
}

fn edge(a: &str, kind: &str, b: &str) -> Edge {
    Edge::new(id(a), kind, id(b))
}

fn key(a: &str, kind: &str, b: &str) -> EdgeKey {
    edge(a, kind, b).key()
}

/// A repo whose `main` holds nodes a, b, c and edges a→b, b→c, with branch `feature` at
/// the same commit.
fn base_repo() -> Repo {
    let repo = Repo::in_memory().expect("repo");
    let mut tx = repo.transaction().expect("tx");
    for (n, t) in [("a", "alpha"), ("b", "beta"), ("c", "gamma")] {
        tx.put_node(doc(n, t)).expect("put");
    }
    tx.put_edge(edge("a", "cites", "b")).expect("edge");
    tx.put_edge(edge("b", "cites", "c")).expect("edge");
    tx.commit("base").expect("commit");
    repo.create_branch("feature", None).expect("branch");
    repo
}

fn on(repo: &Repo, branch: &str, f: impl FnOnce(&mut cairn::Transaction<'_>)) -> cairn::CommitId {
    let mut tx = repo.transaction_on(branch).expect("tx");
    f(&mut tx);
    tx.commit(branch).expect("commit")
}

/// Every node of the head by id, and every edge by key.
fn graph(repo: &Repo, branch: &str) -> (BTreeMap<NodeId, Node>, BTreeMap<EdgeKey, Edge>) {
    let head = repo.branch_head(branch).expect("head").expect("has commits");
    let nodes = repo.nodes_at(&head, None).expect("nodes");
    let edges = repo.edges_at(&head).expect("edges");
    (
        nodes.into_iter().map(|n| (n.id.clone(), n)).collect(),
        edges.into_iter().map(|e| (e.key(), e)).collect(),
    )
}

/// Counts, reverse edge tree and fsck agree with the content.
fn assert_consistent(repo: &Repo, branch: &str) {
    let head = repo.branch_head(branch).expect("head").expect("has commits");
    let (nodes, edges) = graph(repo, branch);
    let stats = repo.stats(&head).expect("stats");
    assert_eq!(stats.nodes, nodes.len() as u64, "node_count");
    assert_eq!(stats.edges, edges.len() as u64, "edge_count");
    let mut incoming = 0;
    for n in nodes.keys() {
        for e in repo.edges_to(&head, n).expect("edges_to") {
            assert!(edges.contains_key(&e.key()), "reverse tree holds {}", e.key());
            incoming += 1;
        }
    }
    assert_eq!(incoming, edges.len(), "reverse tree size");
    for k in edges.keys() {
        assert!(
            nodes.contains_key(&k.source) && nodes.contains_key(&k.target),
            "dangling {k}"
        );
    }
    let fsck = repo.fsck().expect("fsck");
    assert!(fsck.is_ok(), "{:?}", fsck.problems);
}

#[test]
fn clean_merge_takes_both_sides() {
    let repo = base_repo();
    let ours = on(&repo, "main", |tx| {
        tx.put_node(doc("a", "alpha ours")).unwrap();
        tx.put_node(doc("d", "delta")).unwrap();
        tx.put_edge(edge("d", "cites", "a")).unwrap();
    });
    let theirs = on(&repo, "feature", |tx| {
        tx.put_node(doc("b", "beta theirs")).unwrap();
        tx.put_node(doc("e", "epsilon")).unwrap();
        tx.put_edge(edge("c", "cites", "e")).unwrap();
        tx.delete_edge(&key("a", "cites", "b")).unwrap();
    });
    let merge = repo.merge("main", "feature").expect("merge");
    assert_eq!(merge.kind(), MergeKind::ThreeWay);
    assert!(merge.conflicts().is_empty());
    assert_eq!(merge.ours(), Some(ours));
    assert_eq!(merge.theirs(), theirs);
    assert_eq!(merge.node_changes().len(), 2, "b and e come from theirs");
    assert_eq!(merge.edge_changes().len(), 2, "c→e added, a→b deleted");
    assert!(merge.dropped_edges().expect("dropped").is_empty());
    let m = merge.commit("merge feature").expect("commit");

    let c = repo.commit(&m).expect("commit");
    assert_eq!(c.parents, vec![ours, theirs], "two parents, ours first");
    assert_eq!(c.generation, repo.commit(&ours).unwrap().generation + 1);
    assert_eq!(repo.head().unwrap(), Some(m));
    let (nodes, edges) = graph(&repo, "main");
    let texts: BTreeMap<&str, &str> = nodes.iter().map(|(k, n)| (k.as_str(), n.text.as_str())).collect();
    assert_eq!(
        texts,
        BTreeMap::from([
            ("a", "alpha ours"),
            ("b", "beta theirs"),
            ("c", "gamma"),
            ("d", "delta"),
            ("e", "epsilon")
        ])
    );
    let keys: BTreeSet<EdgeKey> = edges.keys().cloned().collect();
    assert_eq!(
        keys,
        BTreeSet::from([key("b", "cites", "c"), key("c", "cites", "e"), key("d", "cites", "a")])
    );
    assert_consistent(&repo, "main");
    // Both sides' commits are in the merged history.
    let log: BTreeSet<_> = repo.log(None, None).unwrap().into_iter().map(|(id, _)| id).collect();
    assert!(log.contains(&ours) && log.contains(&theirs));
}

#[test]
fn identical_change_on_both_sides_is_taken_once() {
    let repo = base_repo();
    for branch in ["main", "feature"] {
        on(&repo, branch, |tx| {
            tx.put_node(doc("a", "same edit")).unwrap();
            tx.put_node(doc("x", "same new node")).unwrap();
            tx.put_edge(edge("x", "cites", "a")).unwrap();
            tx.delete_node(&id("c")).unwrap();
        });
    }
    // Differing commits (timestamps and branch messages), identical changes.
    on(&repo, "feature", |tx| tx.put_node(doc("y", "only theirs")).unwrap());
    let merge = repo.merge("main", "feature").expect("merge");
    assert!(merge.conflicts().is_empty(), "{:?}", merge.conflicts());
    let changed: Vec<&str> = merge.node_changes().keys().map(NodeId::as_str).collect();
    assert_eq!(changed, ["y"], "identical changes need nothing on ours");
    merge.commit("merge").expect("commit");
    let (nodes, _) = graph(&repo, "main");
    assert_eq!(nodes.len(), 4); // a, b, x, y (c deleted on both)
    assert_eq!(nodes[&id("a")].text, "same edit");
    assert!(!nodes.contains_key(&id("c")));
    assert_consistent(&repo, "main");
}

/// main and feature each edit node `a` (and edge a→b) differently.
fn conflicting_repo() -> Repo {
    let repo = base_repo();
    on(&repo, "main", |tx| {
        tx.put_node(doc("a", "ours")).unwrap();
        tx.put_edge(edge("a", "cites", "b").with_weight(2.0)).unwrap();
    });
    on(&repo, "feature", |tx| {
        tx.put_node(doc("a", "theirs")).unwrap();
        tx.put_edge(edge("a", "cites", "b").with_weight(3.0)).unwrap();
        tx.put_node(doc("t", "clean")).unwrap();
    });
    repo
}

#[test]
fn conflict_reports_all_versions_and_blocks_commit_until_resolved() {
    let repo = conflicting_repo();
    let head = repo.head().unwrap();
    let mut merge = repo.merge("main", "feature").expect("merge");
    assert_eq!(merge.conflicts().len(), 2);
    assert_eq!(merge.unresolved(), 2);
    match &merge.conflicts()[0] {
        Conflict::Node {
            id: n,
            base,
            ours,
            theirs,
        } => {
            assert_eq!(n.as_str(), "a");
            assert_eq!(base.as_ref().unwrap().text, "alpha");
            assert_eq!(ours.as_ref().unwrap().text, "ours");
            assert_eq!(theirs.as_ref().unwrap().text, "theirs");
        }
        other => panic!("expected a node conflict first, got {other:?}"),
    }
    match &merge.conflicts()[1] {
        Conflict::Edge {
            key: k,
            base,
            ours,
            theirs,
        } => {
            assert_eq!(k, &key("a", "cites", "b"));
            assert_eq!(base.as_ref().unwrap().weight, 1.0);
            assert_eq!(ours.as_ref().unwrap().weight, 2.0);
            assert_eq!(theirs.as_ref().unwrap().weight, 3.0);
        }
        other => panic!("expected an edge conflict, got {other:?}"),
    }
    // Conflicts serialize with every version.
    let json = serde_json::to_value(merge.conflicts()).expect("json");
    assert_eq!(json[0]["type"], "node");
    assert_eq!(json[0]["theirs"]["text"], "theirs");

    assert!(matches!(merge.commit("too early"), Err(Error::MergeConflicts(2))));
    merge.resolve(0, Resolution::Theirs).expect("resolve");
    assert!(matches!(merge.commit("still early"), Err(Error::MergeConflicts(1))));
    assert_eq!(repo.head().unwrap(), head, "a refused merge changes nothing");

    // Bad resolutions are refused and leave the conflict unresolved.
    assert!(matches!(
        merge.resolve(7, Resolution::Ours),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        merge.resolve(1, Resolution::Node(Some(doc("a", "x")))),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        merge.resolve(1, Resolution::Edge(Some(edge("a", "cites", "c")))),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        merge.resolve(1, Resolution::Edge(Some(edge("a", "cites", "b").with_weight(f64::NAN)))),
        Err(Error::Validation(_))
    ));
    assert_eq!(merge.unresolved(), 1);

    merge
        .resolve_edge(
            &key("a", "cites", "b"),
            Resolution::Edge(Some(edge("a", "cites", "b").with_weight(5.0))),
        )
        .expect("resolve edge");
    let m = merge.commit("resolved").expect("commit");
    let (nodes, edges) = graph(&repo, "main");
    assert_eq!(nodes[&id("a")].text, "theirs");
    assert_eq!(nodes[&id("t")].text, "clean");
    assert_eq!(edges[&key("a", "cites", "b")].weight, 5.0);
    assert_eq!(repo.commit(&m).unwrap().parents.len(), 2);
    assert_consistent(&repo, "main");
}

#[test]
fn resolution_by_value_and_base() {
    let repo = conflicting_repo();
    let mut merge = repo.merge("main", "feature").expect("merge");
    merge
        .resolve_node(
            &id("a"),
            Resolution::Node(Some(doc("a", "hand merged").with_prop("v", 3i64))),
        )
        .expect("resolve");
    merge
        .resolve_edge(&key("a", "cites", "b"), Resolution::Base)
        .expect("base");
    // No conflict on the node (unknown, or merged cleanly) or edge: refused, saying so.
    for r in [
        merge.resolve_node(&id("zzz"), Resolution::Ours),
        merge.resolve_node(&id("b"), Resolution::Ours),
    ] {
        match r {
            Err(Error::InvalidArgument(m)) => assert!(
                m.starts_with("no conflict on node ")
                    && m.contains("the merge has 2 conflict(s), on node a, edge (a)-[cites]->(b)"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
    }
    match merge.resolve_edge(&key("b", "cites", "a"), Resolution::Ours) {
        Err(Error::InvalidArgument(m)) => assert!(m.starts_with("no conflict on edge (b)-[cites]->(a): "), "{m}"),
        other => panic!("{other:?}"),
    }
    merge.commit("by value").expect("commit");
    let (nodes, edges) = graph(&repo, "main");
    assert_eq!(nodes[&id("a")].text, "hand merged");
    assert_eq!(edges[&key("a", "cites", "b")].weight, 1.0);
    assert_consistent(&repo, "main");
}

#[test]
fn strategies_ours_and_theirs() {
    for (strategy, text, weight) in [
        (MergeStrategy::Ours, "ours", 2.0),
        (MergeStrategy::Theirs, "theirs", 3.0),
    ] {
        let repo = conflicting_repo();
        let merge = repo.merge_with("main", "feature", strategy).expect("merge");
        assert_eq!(merge.unresolved(), 0);
        merge.commit("strategy").expect("commit");
        let (nodes, edges) = graph(&repo, "main");
        assert_eq!(nodes[&id("a")].text, text, "{strategy:?}");
        assert_eq!(edges[&key("a", "cites", "b")].weight, weight, "{strategy:?}");
        assert_eq!(
            nodes[&id("t")].text,
            "clean",
            "clean changes merge whatever the strategy"
        );
        assert_consistent(&repo, "main");
    }
    let repo = conflicting_repo();
    let merge = repo
        .merge_with("main", "feature", MergeStrategy::Manual)
        .expect("merge");
    assert_eq!(merge.unresolved(), 2);
}

#[test]
fn delete_vs_unchanged_deletes_on_either_side() {
    let repo = base_repo();
    on(&repo, "main", |tx| tx.delete_node(&id("a")).unwrap());
    on(&repo, "feature", |tx| {
        tx.delete_node(&id("c")).unwrap();
        tx.put_node(doc("f", "feature")).unwrap();
    });
    let merge = repo.merge("main", "feature").expect("merge");
    assert!(merge.conflicts().is_empty());
    merge.commit("merge").expect("commit");
    let (nodes, edges) = graph(&repo, "main");
    let ids: Vec<&str> = nodes.keys().map(NodeId::as_str).collect();
    assert_eq!(ids, ["b", "f"], "neither deletion is resurrected");
    assert!(edges.is_empty(), "a→b went with a, b→c with c");
    assert_consistent(&repo, "main");
}

#[test]
fn delete_vs_change_conflicts() {
    let repo = base_repo();
    on(&repo, "main", |tx| tx.delete_node(&id("a")).unwrap());
    on(&repo, "feature", |tx| {
        tx.put_node(doc("a", "changed")).unwrap();
        tx.put_node(doc("g", "new")).unwrap();
        tx.put_edge(edge("g", "cites", "a")).unwrap();
    });
    let merge = repo.merge("main", "feature").expect("merge");
    assert_eq!(merge.conflicts().len(), 1);
    assert!(matches!(
        &merge.conflicts()[0],
        Conflict::Node { ours: None, theirs: Some(t), base: Some(_), .. } if t.text == "changed"
    ));

    // Keeping the deletion drops theirs' new edge to `a` rather than leaving it dangling.
    let mut keep_delete = repo.merge("main", "feature").expect("merge");
    keep_delete.resolve(0, Resolution::Ours).unwrap();
    assert_eq!(keep_delete.dropped_edges().unwrap(), [key("g", "cites", "a")]);
    // Taking theirs keeps `a`, so nothing dangles.
    let mut take_change = repo.merge("main", "feature").expect("merge");
    take_change.resolve(0, Resolution::Theirs).unwrap();
    assert!(take_change.dropped_edges().unwrap().is_empty());

    keep_delete.commit("keep the delete").expect("commit");
    let (nodes, edges) = graph(&repo, "main");
    assert!(!nodes.contains_key(&id("a")));
    assert!(nodes.contains_key(&id("g")));
    assert!(!edges.contains_key(&key("g", "cites", "a")));
    assert_consistent(&repo, "main");
}

#[test]
fn edges_to_a_node_deleted_by_the_other_side_are_dropped() {
    let repo = base_repo();
    // Ours deletes c (and so b→c); theirs adds edges to and from c and changes b→c.
    on(&repo, "main", |tx| tx.delete_node(&id("c")).unwrap());
    on(&repo, "feature", |tx| {
        tx.put_edge(edge("a", "mentions", "c")).unwrap();
        tx.put_edge(edge("c", "mentions", "a")).unwrap();
        tx.put_edge(edge("a", "cites", "b").with_weight(9.0)).unwrap();
    });
    let merge = repo.merge("main", "feature").expect("merge");
    assert!(merge.conflicts().is_empty(), "{:?}", merge.conflicts());
    assert_eq!(
        merge.dropped_edges().unwrap(),
        [key("a", "mentions", "c"), key("c", "mentions", "a")]
    );
    merge.commit("merge").expect("commit");
    let (_, edges) = graph(&repo, "main");
    let keys: Vec<EdgeKey> = edges.keys().cloned().collect();
    assert_eq!(keys, [key("a", "cites", "b")]);
    assert_eq!(edges[&key("a", "cites", "b")].weight, 9.0);
    assert_consistent(&repo, "main");

    // The other direction: theirs deletes a node ours added an edge to.
    let repo = base_repo();
    on(&repo, "main", |tx| {
        tx.put_node(doc("o", "ours")).unwrap();
        tx.put_edge(edge("o", "cites", "b")).unwrap();
    });
    on(&repo, "feature", |tx| tx.delete_node(&id("b")).unwrap());
    let merge = repo.merge("main", "feature").expect("merge");
    assert_eq!(merge.dropped_edges().unwrap(), [key("o", "cites", "b")]);
    merge.commit("merge").expect("commit");
    let (nodes, edges) = graph(&repo, "main");
    assert!(!nodes.contains_key(&id("b")));
    assert!(edges.is_empty());
    assert_consistent(&repo, "main");
}

#[test]
fn embeddings_sparse_vectors_validity_and_untouched_edges_survive() {
    let repo = Repo::in_memory().expect("repo");
    let rich = |name: &str, text: &str, v: Vec<f32>| {
        doc(name, text)
            .with_embedding("mini", v)
            .with_sparse("splade", SparseVector::new(vec![1, 7], vec![0.5, 0.25]))
            .with_validity(Validity::new(Some(10), Some(1_000)))
            .with_prop("rank", 1i64)
    };
    let mut tx = repo.transaction().unwrap();
    tx.put_node(rich("p", "p base", vec![1.0, 0.0, 0.0])).unwrap();
    tx.put_node(rich("q", "q base", vec![0.0, 1.0, 0.0])).unwrap();
    tx.put_node(rich("r", "untouched", vec![0.0, 0.0, 1.0])).unwrap();
    tx.put_edge(edge("p", "cites", "r").with_validity(Validity::new(Some(5), None)))
        .unwrap();
    tx.put_edge(edge("r", "cites", "q").with_weight(0.5)).unwrap();
    tx.commit("base").unwrap();
    repo.create_branch("feature", None).unwrap();
    // Theirs changes q's embedding and text; ours changes p's text only.
    on(&repo, "feature", |tx| {
        tx.put_node(rich("q", "q theirs", vec![0.0, 0.6, 0.8])).unwrap();
    });
    on(&repo, "main", |tx| {
        tx.put_node(rich("p", "p ours", vec![1.0, 0.0, 0.0])).unwrap();
    });
    let expected_nodes = BTreeMap::from([
        (id("p"), rich("p", "p ours", vec![1.0, 0.0, 0.0])),
        (id("q"), rich("q", "q theirs", vec![0.0, 0.6, 0.8])),
        (id("r"), rich("r", "untouched", vec![0.0, 0.0, 1.0])),
    ]);
    let (_, expected_edges) = graph(&repo, "main");

    let merge = repo.merge("main", "feature").expect("merge");
    merge.commit("merge").expect("commit");
    let (nodes, edges) = graph(&repo, "main");
    assert_eq!(
        nodes, expected_nodes,
        "every field, embeddings included, survives the merge"
    );
    assert_eq!(
        edges, expected_edges,
        "untouched edges survive with weight and validity"
    );
    assert_consistent(&repo, "main");

    // The merged embedding is searchable: the dense lane finds q by theirs' vector.
    let result = repo
        .retrieve()
        .vector("mini", &[0.0, 0.6, 0.8])
        .valid_at(100)
        .limit(1)
        .execute()
        .expect("retrieve");
    assert_eq!(result.items[0].id.as_str(), "q");
}

#[test]
fn resolution_values_obey_the_dimension_registry() {
    let repo = base_repo();
    on(&repo, "main", |tx| {
        tx.put_node(doc("a", "ours").with_embedding("mini", vec![1.0, 0.0]))
            .unwrap();
    });
    on(&repo, "feature", |tx| tx.put_node(doc("a", "theirs")).unwrap());
    let mut merge = repo.merge("main", "feature").expect("merge");
    let bad = doc("a", "x").with_embedding("mini", vec![1.0, 0.0, 0.0]);
    assert!(matches!(
        merge.resolve(0, Resolution::Node(Some(bad))),
        Err(Error::Validation(cairn_core::ValidationError::DimensionMismatch { .. }))
    ));
    let good = doc("a", "x").with_embedding("mini", vec![0.0, 1.0]);
    merge.resolve(0, Resolution::Node(Some(good.clone()))).expect("resolve");
    merge.commit("merge").expect("commit");
    assert_eq!(repo.node(&id("a")).unwrap().unwrap(), good);
}

#[test]
fn fast_forward_and_up_to_date() {
    let repo = base_repo();
    let base = repo.head().unwrap().unwrap();
    let f1 = on(&repo, "feature", |tx| tx.put_node(doc("f", "one")).unwrap());
    let f2 = on(&repo, "feature", |tx| tx.put_node(doc("f", "two")).unwrap());
    let merge = repo.merge("main", "feature").expect("merge");
    assert_eq!(merge.kind(), MergeKind::FastForward);
    assert_eq!(merge.base(), Some(base));
    assert_eq!(merge.commit("ignored").expect("ff"), f2);
    assert_eq!(repo.head().unwrap(), Some(f2), "the branch moved, no commit was made");
    assert_eq!(repo.log(None, None).unwrap().len(), 3);
    // The time index follows the moved branch.
    let ts = repo.commit(&f1).unwrap().timestamp_ms;
    assert_eq!(repo.as_of("main", ts).unwrap().map(|c| c == f1 || c == f2), Some(true));

    // Merging an ancestor (or the same commit) is up to date.
    for rev in ["feature", "main~1", "main"] {
        let merge = repo.merge("main", rev).expect("merge");
        assert_eq!(merge.kind(), MergeKind::UpToDate, "{rev}");
        assert_eq!(merge.commit("noop").unwrap(), f2);
    }
    assert_eq!(repo.head().unwrap(), Some(f2));
    assert!(matches!(repo.merge("nope", "feature"), Err(Error::UnknownBranch(_))));
}

#[test]
fn branch_moved_during_merge_is_a_conflict_error() {
    let repo = conflicting_repo();
    let merge = repo.merge_with("main", "feature", MergeStrategy::Ours).expect("merge");
    let moved = on(&repo, "main", |tx| tx.put_node(doc("late", "writer")).unwrap());
    match merge.commit("stale") {
        Err(Error::Conflict { branch, .. }) => assert_eq!(branch, "main"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(repo.head().unwrap(), Some(moved));
    // Merging again from the new head works.
    repo.merge_with("main", "feature", MergeStrategy::Ours)
        .unwrap()
        .commit("again")
        .expect("commit");
    assert!(repo.node(&id("late")).unwrap().is_some());
    assert_consistent(&repo, "main");
}

#[test]
fn merge_timestamps_never_go_backwards() {
    let repo = conflicting_repo();
    let merge = repo.merge_with("main", "feature", MergeStrategy::Theirs).unwrap();
    let theirs_ms = repo.commit(&merge.theirs()).unwrap().timestamp_ms;
    assert!(matches!(
        merge.commit_at("early", theirs_ms - 1),
        Err(Error::TimestampBeforeParent { .. })
    ));
    let m = merge.commit_at("on time", theirs_ms + 5).expect("commit");
    assert_eq!(repo.commit(&m).unwrap().timestamp_ms, theirs_ms + 5);
    assert_eq!(repo.as_of("main", theirs_ms + 5).unwrap(), Some(m));
}

#[test]
fn disjoint_histories_merge_against_an_empty_base() {
    let repo = Repo::in_memory().unwrap();
    on(&repo, "main", |tx| {
        tx.put_node(doc("a", "main a")).unwrap();
        tx.put_node(doc("s", "shared")).unwrap();
    });
    let mut tx = repo.orphan_transaction("other").unwrap();
    tx.put_node(doc("a", "other a")).unwrap();
    tx.put_node(doc("s", "shared")).unwrap();
    tx.put_node(doc("o", "other only")).unwrap();
    tx.commit("other").unwrap();
    let merge = repo.merge("main", "other").expect("merge");
    assert_eq!(merge.base(), None);
    assert_eq!(merge.conflicts().len(), 1);
    assert!(matches!(&merge.conflicts()[0], Conflict::Node { base: None, .. }));
    let merge = repo.merge_with("main", "other", MergeStrategy::Ours).unwrap();
    merge.commit("merge").unwrap();
    let (nodes, _) = graph(&repo, "main");
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[&id("a")].text, "main a");
    assert_consistent(&repo, "main");
}
