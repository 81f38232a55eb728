//! The commit writer's registration of dense dimensions: a commit that loses its branch
//! compare-and-swap leaves no dimension behind, and every commit re-registers the
//! dimensions its nodes rely on.

use cairn::{Error, Node, NodeId, Repo};
use cairn_graph::Refs;

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

#[test]
fn a_commit_that_loses_its_swap_registers_no_dimension() {
    let repo = Repo::in_memory().unwrap();
    let mut loser = repo.transaction().unwrap();
    loser
        .put_node(Node::new(id("a")).with_embedding("m", vec![1.0, 0.0, 0.0]))
        .unwrap();
    let mut winner = repo.transaction().unwrap();
    winner.put_node(Node::new(id("b"))).unwrap();
    winner.commit("first").unwrap();

    assert!(matches!(loser.commit("second"), Err(Error::Conflict { .. })));
    assert_eq!(repo.dense_dim("m").unwrap(), None, "the lost commit's dimension stayed");

    // So the model is still free for another dimension.
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("c")).with_embedding("m", vec![1.0, 0.0]))
        .unwrap();
    tx.commit("third").unwrap();
    assert_eq!(repo.dense_dim("m").unwrap(), Some(2));
}

#[test]
fn a_merge_that_loses_its_swap_registers_no_dimension() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("x")).with_text("base")).unwrap();
    tx.commit("base").unwrap();
    repo.create_branch("side", Some("HEAD")).unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("x")).with_text("ours")).unwrap();
    tx.commit("ours").unwrap();
    let mut tx = repo.transaction_on("side").unwrap();
    tx.put_node(Node::new(id("x")).with_text("theirs")).unwrap();
    tx.commit("theirs").unwrap();

    let mut merge = repo.merge("main", "side").unwrap();
    assert_eq!(merge.conflicts().len(), 1);
    merge
        .resolve(
            0,
            cairn::Resolution::Node(Some(Node::new(id("x")).with_embedding("m", vec![1.0; 4]))),
        )
        .unwrap();
    // Another writer moves the branch before the merge commits.
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("y"))).unwrap();
    tx.commit("meanwhile").unwrap();

    assert!(matches!(merge.commit("merge"), Err(Error::Conflict { .. })));
    assert_eq!(repo.dense_dim("m").unwrap(), None);
}

#[test]
fn a_commit_re_registers_a_dimension_it_read_before_it_was_taken_back() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("a")).with_embedding("m", vec![1.0, 0.0, 0.0]))
        .unwrap();
    tx.commit("registers m").unwrap();

    // A transaction validates against the registration ...
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("b")).with_embedding("m", vec![0.0, 1.0, 0.0]))
        .unwrap();
    // ... which then disappears (as if a writer that lost its swap took it back).
    let refs = Refs::new(repo.store().as_ref());
    assert!(refs.remove_meta_if("dense-dim/m", &3u32.to_le_bytes()).unwrap());
    assert_eq!(repo.dense_dim("m").unwrap(), None);

    tx.commit("relies on m").unwrap();
    assert_eq!(
        repo.dense_dim("m").unwrap(),
        Some(3),
        "the commit did not re-register m"
    );
}
