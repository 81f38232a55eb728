//! Concurrent writers on one branch: compare-and-swap means no lost update; the loser
//! of a race gets a typed conflict.

use std::sync::{Arc, Barrier};

use cairn::{Error, Node, NodeId, Repo};

fn id(s: String) -> NodeId {
    NodeId::new(s).expect("valid id")
}

#[test]
fn racing_transactions_from_one_base_one_wins() {
    let repo = Repo::in_memory().expect("repo");
    let mut tx = repo.transaction().expect("tx");
    tx.put_node(Node::new(id("seed".into()))).expect("put");
    let base = tx.commit("seed").expect("commit");
    // All transactions start from the same head before any commits.
    let txs: Vec<_> = (0..6)
        .map(|i| {
            let mut tx = repo.transaction().expect("tx");
            tx.put_node(Node::new(id(format!("w{i}")))).expect("put");
            tx
        })
        .collect();
    let mut ok = 0;
    let mut conflicts = 0;
    for tx in txs {
        match tx.commit("race") {
            Ok(_) => ok += 1,
            Err(Error::Conflict { expected, .. }) => {
                assert_eq!(expected, base.to_hex());
                conflicts += 1;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!((ok, conflicts), (1, 5));
}

#[test]
fn threads_with_retry_lose_no_update() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repo::init(dir.path().join("r")).expect("init");
    let threads = 4;
    let per_thread = 15;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let repo = repo.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let mut conflicts = 0;
                for i in 0..per_thread {
                    loop {
                        let mut tx = repo.transaction().expect("tx");
                        tx.put_node(Node::new(id(format!("t{t}-{i}")))).expect("put");
                        match tx.commit("w") {
                            Ok(_) => break,
                            Err(Error::Conflict { .. }) => conflicts += 1,
                            Err(e) => panic!("unexpected error {e}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let conflicts: usize = handles.into_iter().map(|h| h.join().expect("thread")).sum();
    let head = repo.head().expect("head").expect("has commits");
    let nodes = repo.nodes_at(&head, None).expect("nodes");
    assert_eq!(nodes.len(), threads * per_thread, "an update was lost");
    assert_eq!(repo.log(None, None).expect("log").len(), threads * per_thread);
    eprintln!("{conflicts} conflicts retried");
}
