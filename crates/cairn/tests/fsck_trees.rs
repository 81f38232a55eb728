//! `fsck` checks the Merkle search tree invariants: commits whose trees were written
//! wrong on purpose (as a writer bug would) are reported, each with what is wrong, and a
//! sound history with merges and deletions is not.

use cairn::{Edge, Node, NodeId, Repo};
use cairn_core::level::key_level;
use cairn_core::{Commit, CommitId, Hash, TreeEntry, TreeNode};
use cairn_graph::{BranchName, PendingWrites, Refs};

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

/// A key of the given level.
fn key_of_level(level: u8, prefix: &str) -> String {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .find(|k| key_level(k.as_bytes()) == level)
        .unwrap()
}

fn leaf(out: &mut PendingWrites, level: u8, entries: &[(&str, Hash)]) -> Hash {
    out.add_tree(&TreeNode {
        level,
        left: None,
        entries: entries
            .iter()
            .map(|(k, v)| TreeEntry {
                key: k.as_bytes().to_vec(),
                value: *v,
                right: None,
            })
            .collect(),
    })
}

/// Writes `commit` (with the objects in `out`) and points branch `name` at it.
fn publish(repo: &Repo, name: &str, out: PendingWrites, commit: &Commit) {
    let mut out = out;
    let id = out.add_commit(commit);
    out.flush_to(repo.store().as_ref()).unwrap();
    let refs = Refs::new(repo.store().as_ref());
    refs.cas_branch(&BranchName::new(name).unwrap(), None, Some(id))
        .unwrap()
        .unwrap();
}

fn commit(node_root: Option<Hash>, node_count: u64) -> Commit {
    Commit {
        parents: Vec::<CommitId>::new(),
        node_root,
        edge_root: None,
        edge_in_root: None,
        node_count,
        edge_count: 0,
        author: "test".into(),
        message: "bad".into(),
        timestamp_ms: 0,
        generation: 0,
        index_base: None,
        changes_since_base: 0,
    }
}

/// Runs fsck and returns its problems joined, asserting there is at least one.
fn problems(repo: &Repo) -> String {
    let report = repo.fsck().unwrap();
    assert!(!report.is_ok(), "fsck found nothing");
    report.problems.join("\n")
}

#[test]
fn a_sound_history_has_no_tree_problems() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..300 {
        tx.put_node(Node::new(id(&format!("n{i}")))).unwrap();
    }
    for i in 0..299 {
        tx.put_edge(Edge::new(id(&format!("n{i}")), "next", id(&format!("n{}", i + 1))))
            .unwrap();
    }
    tx.commit("base").unwrap();
    repo.create_branch("side", Some("HEAD")).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in (0..300).step_by(7) {
        tx.delete_node(&id(&format!("n{i}"))).unwrap();
    }
    tx.commit("deletes").unwrap();
    let mut tx = repo.transaction_on("side").unwrap();
    tx.put_node(Node::new(id("extra")).with_text("x")).unwrap();
    tx.put_edge(Edge::new(id("extra"), "k", id("n1"))).unwrap();
    tx.commit("side").unwrap();
    repo.merge("main", "side").unwrap().commit("merge").unwrap();
    let report = repo.fsck().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn a_count_that_does_not_match_the_tree_is_reported() {
    let repo = Repo::in_memory().unwrap();
    let mut out = PendingWrites::new();
    let k = key_of_level(0, "a");
    let node = out.add_node(&Node::new(id(&k)));
    let root = leaf(&mut out, 0, &[(&k, node)]);
    publish(&repo, "main", out, &commit(Some(root), 5));
    let p = problems(&repo);
    assert!(p.contains("node_count is 5 but its node tree holds 1"), "{p}");
}

#[test]
fn a_key_of_the_wrong_level_is_reported() {
    let repo = Repo::in_memory().unwrap();
    let mut out = PendingWrites::new();
    let k = key_of_level(0, "a");
    let node = out.add_node(&Node::new(id(&k)));
    let root = leaf(&mut out, 1, &[(&k, node)]);
    publish(&repo, "main", out, &commit(Some(root), 1));
    let p = problems(&repo);
    assert!(p.contains("has level 0, the node's is 1"), "{p}");
}

#[test]
fn a_key_that_is_not_its_nodes_id_is_reported() {
    let repo = Repo::in_memory().unwrap();
    let mut out = PendingWrites::new();
    let k = key_of_level(0, "a");
    let other = out.add_node(&Node::new(id("someone-else")));
    let root = leaf(&mut out, 0, &[(&k, other)]);
    publish(&repo, "main", out, &commit(Some(root), 1));
    let p = problems(&repo);
    assert!(p.contains("stored under another key"), "{p}");
}

#[test]
fn keys_out_of_order_and_subtrees_outside_their_gap_are_reported() {
    let repo = Repo::in_memory().unwrap();
    let mut out = PendingWrites::new();
    let a = key_of_level(0, "a");
    let b = key_of_level(0, "b");
    let (na, nb) = (out.add_node(&Node::new(id(&a))), out.add_node(&Node::new(id(&b))));
    let root = leaf(&mut out, 0, &[(&b, nb), (&a, na)]);
    publish(&repo, "main", out, &commit(Some(root), 2));
    assert!(problems(&repo).contains("not strictly increasing"));

    let repo = Repo::in_memory().unwrap();
    let mut out = PendingWrites::new();
    let top = key_of_level(1, "m");
    let low = key_of_level(0, "z"); // sorts after `top`, but placed before it
    let (nt, nl) = (out.add_node(&Node::new(id(&top))), out.add_node(&Node::new(id(&low))));
    let left = leaf(&mut out, 0, &[(&low, nl)]);
    let root = out.add_tree(&TreeNode {
        level: 1,
        left: Some(left),
        entries: vec![TreeEntry {
            key: top.as_bytes().to_vec(),
            value: nt,
            right: None,
        }],
    });
    publish(&repo, "main", out, &commit(Some(root), 2));
    assert!(problems(&repo).contains("outside its gap"));
}

#[test]
fn a_reverse_edge_tree_that_does_not_mirror_the_edge_tree_is_reported() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    for n in ["a", "b", "c"] {
        tx.put_node(Node::new(id(n))).unwrap();
    }
    tx.put_edge(Edge::new(id("a"), "k", id("b"))).unwrap();
    tx.put_edge(Edge::new(id("a"), "k", id("c"))).unwrap();
    tx.commit("edges").unwrap();
    let head = repo.head().unwrap().unwrap();
    let good = repo.commit(&head).unwrap();

    // A copy of the commit whose reverse tree is the one of a commit with only a→b.
    let mut tx = repo.transaction().unwrap();
    tx.delete_edge(&Edge::new(id("a"), "k", id("c")).key()).unwrap();
    tx.commit("one edge").unwrap();
    let one = repo.commit(&repo.head().unwrap().unwrap()).unwrap();
    let mut bad = good.clone();
    bad.edge_in_root = one.edge_in_root;
    bad.message = "mirror broken".into();
    publish(&repo, "broken", PendingWrites::new(), &bad);
    let p = problems(&repo);
    assert!(p.contains("edge_count is 2 but its reverse edge tree holds 1"), "{p}");

    // Same count, different edge: the digest catches it.
    let mut tx = repo.transaction().unwrap();
    tx.put_edge(Edge::new(id("b"), "k", id("c"))).unwrap();
    tx.commit("other edge").unwrap();
    let other = repo.commit(&repo.head().unwrap().unwrap()).unwrap();
    let mut bad = good;
    bad.edge_in_root = other.edge_in_root;
    bad.message = "mirror swapped".into();
    publish(&repo, "swapped", PendingWrites::new(), &bad);
    let p = problems(&repo);
    assert!(p.contains("does not hold the same edges"), "{p}");
}

#[test]
fn a_tree_key_that_does_not_decode_is_corruption_naming_the_tree() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("a"))).unwrap();
    let good = tx.commit("good").unwrap();
    // Any stored hash serves as the entry's value: only the key is read.
    let value = repo.commit(&good).unwrap().node_root.expect("a node root");
    // A node tree whose only key is not UTF-8 (a writer never stores one).
    let bad_key = vec![0xff, 0xfe];
    let mut out = PendingWrites::default();
    let root = out.add_tree(&TreeNode {
        level: key_level(&bad_key),
        left: None,
        entries: vec![TreeEntry {
            key: bad_key,
            value,
            right: None,
        }],
    });
    let mut c = commit(Some(root), 1);
    c.parents = vec![good];
    publish(&repo, "damaged", out, &c);
    let damaged = repo.resolve("damaged").unwrap();
    let err = repo.diff(&good, &damaged).unwrap_err();
    match &err {
        cairn::Error::Graph(cairn_graph::GraphError::Corrupt { kind, hash, detail }) => {
            assert_eq!(*kind, "node tree");
            assert_eq!(*hash, root);
            assert!(detail.contains("fffe"), "{detail}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    // Not reported as bad input.
    assert!(!matches!(err, cairn::Error::InvalidArgument(_)));
}

/// A handle keeps the commits it read (a retrieval asks for its commit several times), but
/// `fsck` checks the store: a commit object gone since it was read is reported.
#[test]
fn fsck_reads_commits_from_the_store_not_the_handles_cache() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new("a").unwrap()).with_text("x"))
        .unwrap();
    let head = tx.commit("one").unwrap();
    assert!(repo.fsck().unwrap().problems.is_empty());
    repo.commit(&head).unwrap();
    repo.store().delete_objects(&[*head.hash()]).unwrap();
    let report = repo.fsck().unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains(&head.to_hex())),
        "{:?}",
        report.problems
    );
}
