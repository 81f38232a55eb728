//! A transaction holding more than 64 MiB of encoded nodes writes them to the store ahead of
//! its commit (a bulk import never holds its whole input). Until the commit lands the
//! written nodes are pinned against `gc`; a dropped transaction's nodes are garbage.

use cairn::{GcOptions, Node, NodeId, Repo, StoreKind};

/// 80 nodes of ~1 MiB of text: more than the 64 MiB a transaction holds before writing.
const NODES: usize = 80;

fn node(i: usize) -> Node {
    let word = ["wing", "stall", "lift", "drag"][i % 4];
    let text = format!("{word}{i} ").repeat((1 << 20) / (word.len() + 4) - 1);
    Node::new(NodeId::new(format!("n{i:03}")).unwrap())
        .with_label("Doc")
        .with_text(text)
}

fn repo(dir: &tempfile::TempDir) -> Repo {
    Repo::init_with(dir.path().join("repo"), StoreKind::Segment).unwrap()
}

#[test]
fn nodes_written_ahead_survive_a_gc_before_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(&dir);
    let mut tx = repo.transaction().unwrap();
    for i in 0..NODES {
        tx.put_node(node(i)).unwrap();
    }
    let objects_written = repo.store().stats().unwrap().objects;
    assert!(objects_written >= 60, "only {objects_written} objects written ahead");
    // A node written ahead reads back through the transaction.
    assert_eq!(tx.node(&node(0).id).unwrap().unwrap(), node(0));
    // gc now: nothing reaches those nodes but the open transaction.
    let report = repo.gc_with(&GcOptions::now()).unwrap();
    assert_eq!(report.objects_removed, 0);
    tx.commit("bulk").unwrap();
    let report = repo.fsck().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    for i in (0..NODES).step_by(7) {
        assert_eq!(repo.node(&node(i).id).unwrap().unwrap(), node(i));
    }
    // Committed and unpinned: a gc keeps them (the branch reaches them).
    assert_eq!(repo.gc_with(&GcOptions::now()).unwrap().objects_removed, 0);
    assert_eq!(repo.node(&node(3).id).unwrap().unwrap(), node(3));
}

#[test]
fn a_dropped_transactions_nodes_are_collected() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(&dir);
    let mut tx = repo.transaction().unwrap();
    tx.put_node(node(0)).unwrap();
    tx.commit("one").unwrap();
    let before = repo.store().stats().unwrap().objects;
    let mut tx = repo.transaction().unwrap();
    for i in 1..NODES {
        tx.put_node(node(i)).unwrap();
    }
    assert!(repo.store().stats().unwrap().objects > before);
    drop(tx);
    let report = repo.gc_with(&GcOptions::now()).unwrap();
    assert!(report.objects_removed > 0);
    assert_eq!(repo.store().stats().unwrap().objects, before);
    assert!(repo.fsck().unwrap().is_ok());
}

#[test]
fn the_same_content_gives_the_same_commit_tree_whether_written_ahead_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let big = repo(&dir);
    let mut tx = big.transaction().unwrap();
    for i in 0..NODES {
        tx.put_node(node(i)).unwrap();
    }
    let a = tx.commit_at("bulk", 1).unwrap();
    // The same nodes in commits of 10 (none written ahead), then squashed by content.
    let dir2 = tempfile::tempdir().unwrap();
    let small = repo(&dir2);
    for start in (0..NODES).step_by(10) {
        let mut tx = small.transaction().unwrap();
        for i in start..start + 10 {
            tx.put_node(node(i)).unwrap();
        }
        tx.commit_at("part", 1).unwrap();
    }
    let ca = big.commit(&a).unwrap();
    let cb = small.commit(&small.head().unwrap().unwrap()).unwrap();
    assert_eq!(ca.node_root, cb.node_root);
}
