//! Fixtures shared by this crate's remote tests (`remotes.rs`, `object_store.rs`): a corpus
//! commit, a one-node commit, and one query's result bytes to compare copies by.

#![allow(dead_code)] // each test file uses a different subset

use cairn::{CommitId, Node, NodeId, Repo};

/// `n` corpus nodes (text and a 384-d vector) committed in one commit.
pub fn corpus_commit(repo: &Repo, n: usize) -> CommitId {
    let mut tx = repo.transaction().unwrap();
    for node in cairn_testkit::corpus(n) {
        tx.put_node(node).unwrap();
    }
    tx.commit("corpus").unwrap()
}

/// A commit putting one `Note` node with `text`.
pub fn commit_one(repo: &Repo, node: &str, text: &str) -> CommitId {
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new(node).unwrap()).with_label("Note").with_text(text))
        .unwrap();
    tx.commit(&format!("put {node}")).unwrap()
}

/// The same query's result JSON, at `rev`.
pub fn answer(repo: &Repo, rev: &str) -> String {
    let q = cairn_testkit::corpus(3)[2].embeddings["minilm"].clone();
    let r = repo
        .retrieve()
        .at(rev)
        .vector("minilm", &q)
        .text("the river stone")
        .limit(10)
        .execute()
        .unwrap();
    serde_json::to_string(&r).unwrap()
}
