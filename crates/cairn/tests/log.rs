//! `Repo::log` and `Repo::iter_log`: order, limits and streaming.

use cairn::{CommitId, Node, NodeId, Repo};

fn commit(repo: &Repo, i: usize, ts: i64) -> CommitId {
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new(format!("n{i}")).unwrap()).with_text(format!("v{i}")))
        .unwrap();
    tx.commit_at(&format!("c{i}"), ts).unwrap()
}

#[test]
fn commits_made_in_the_same_millisecond_are_logged_children_first() {
    let repo = Repo::in_memory().unwrap();
    // Twenty commits sharing one timestamp: their ids are in no particular order, so only
    // the generation can put each child before its parent.
    let ids: Vec<CommitId> = (0..20).map(|i| commit(&repo, i, 1_700_000_000_000)).collect();
    let logged: Vec<CommitId> = repo.log(None, None).unwrap().into_iter().map(|(id, _)| id).collect();
    let newest_first: Vec<CommitId> = ids.iter().rev().copied().collect();
    assert_eq!(logged, newest_first);
}

#[test]
fn iter_log_yields_what_log_returns_and_stops_where_asked() {
    let repo = Repo::in_memory().unwrap();
    for i in 0..12 {
        commit(&repo, i, 1_700_000_000_000 + (i as i64 / 3) * 1000);
    }
    repo.create_branch("side", Some("HEAD~4")).unwrap();
    let mut tx = repo.transaction_on("side").unwrap();
    tx.put_node(Node::new(NodeId::new("side").unwrap())).unwrap();
    tx.commit_at("side work", 1_700_000_005_000).unwrap();
    let outcome = repo.merge("main", "side").unwrap();
    outcome.commit_at("merge side", 1_700_000_006_000).unwrap();

    let all = repo.log(None, None).unwrap();
    assert_eq!(all.len(), 14, "12 commits, the side commit and the merge");
    let streamed: Vec<_> = repo.iter_log(None).unwrap().collect::<cairn::Result<_>>().unwrap();
    assert_eq!(streamed, all);
    let first_five: Vec<_> = repo
        .iter_log(Some("main"))
        .unwrap()
        .take(5)
        .map(Result::unwrap)
        .collect();
    assert_eq!(first_five, all[..5]);
    assert_eq!(repo.log(None, Some(5)).unwrap(), all[..5]);
    // Every commit comes before its parents.
    let position = |id: &CommitId| all.iter().position(|(c, _)| c == id).unwrap();
    for (i, (_, c)) in all.iter().enumerate() {
        for p in &c.parents {
            assert!(position(p) > i, "a parent logged before its child");
        }
    }
}

#[test]
fn an_empty_branch_logs_nothing_and_an_unknown_revision_is_an_error() {
    let repo = Repo::in_memory().unwrap();
    assert_eq!(repo.iter_log(None).unwrap().count(), 0);
    assert!(repo.log(None, None).unwrap().is_empty());
    assert!(matches!(
        repo.iter_log(Some("nope")),
        Err(cairn::Error::UnknownRevision { .. })
    ));
}
