//! Node history: which commits of a branch added, changed or removed one node, newest
//! first, checked against a naive walk that reads the node at every commit.

use cairn::{ChangeKind, CommitId, MergeStrategy, Node, NodeHistoryEntry, NodeId, Repo, Resolution};

fn id(s: &str) -> NodeId {
    NodeId::new(s).expect("valid id")
}

fn commit(repo: &Repo, branch: &str, f: impl FnOnce(&mut cairn::Transaction<'_>)) -> CommitId {
    let mut tx = repo.transaction_on(branch).expect("tx");
    f(&mut tx);
    tx.commit("c").expect("commit")
}

/// The history computed the slow way: the node read at every first-parent commit and
/// compared with its parent's.
fn naive_history(repo: &Repo, rev: &str, node: &NodeId) -> Vec<(CommitId, ChangeKind)> {
    let mut chain = Vec::new();
    let mut cur = Some(repo.resolve(rev).unwrap());
    while let Some(c) = cur {
        chain.push(c);
        cur = repo.commit(&c).unwrap().parents.first().copied();
    }
    let mut out = Vec::new();
    for (i, c) in chain.iter().enumerate() {
        let here = repo.node_at(c, node).unwrap();
        let before = chain.get(i + 1).and_then(|p| repo.node_at(p, node).unwrap());
        if here != before {
            let kind = match (&before, &here) {
                (None, _) => ChangeKind::Added,
                (_, None) => ChangeKind::Removed,
                _ => ChangeKind::Changed,
            };
            out.push((*c, kind));
        }
    }
    out
}

fn summary(h: &[NodeHistoryEntry]) -> Vec<(CommitId, ChangeKind)> {
    h.iter().map(|e| (e.commit, e.change)).collect()
}

#[test]
fn added_changed_removed_newest_first() {
    let repo = Repo::in_memory().unwrap();
    let a = id("a");
    let c1 = commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("v1")).unwrap()
    });
    let _c2 = commit(&repo, "main", |tx| tx.put_node(Node::new(id("b"))).unwrap());
    let c3 = commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("v2")).unwrap()
    });
    // Putting the same value again changes nothing: not reported.
    let _c4 = commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("v2")).unwrap()
    });
    let c5 = commit(&repo, "main", |tx| tx.delete_node(&a).unwrap());
    let _c6 = commit(&repo, "main", |tx| tx.put_node(Node::new(id("c"))).unwrap());
    let c7 = commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("v3")).unwrap()
    });

    let h = repo.history(&a).expect("history");
    assert_eq!(
        summary(&h),
        [
            (c7, ChangeKind::Added),
            (c5, ChangeKind::Removed),
            (c3, ChangeKind::Changed),
            (c1, ChangeKind::Added)
        ]
    );
    // Hashes chain: each entry's previous is the next (older) entry's hash.
    for w in h.windows(2) {
        assert_eq!(w[0].previous, w[1].hash);
    }
    assert_eq!(h[1].hash, None);
    assert_eq!(h[3].previous, None);
    // The hashes are the node objects' hashes, as diff reports them.
    let d = repo
        .diff(&repo.resolve(&format!("{}~1", c3.to_hex())).unwrap(), &c3)
        .unwrap();
    assert_eq!(h[2].hash, d.nodes[0].after);
    assert!(h.windows(2).all(|w| w[0].timestamp_ms >= w[1].timestamp_ms));
    // Serialisable for the CLI.
    let json = serde_json::to_value(&h).unwrap();
    assert_eq!(json[1]["change"], "removed");

    // Equal to the naive per-commit walk.
    assert_eq!(summary(&h), naive_history(&repo, "main", &a));
}

#[test]
fn history_of_a_branch_with_limit_and_unknown_nodes() {
    let repo = Repo::in_memory().unwrap();
    assert!(repo.history(&id("a")).unwrap().is_empty(), "no commits yet");
    let a = id("a");
    commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("v1")).unwrap()
    });
    repo.create_branch("feature", None).unwrap();
    let f1 = commit(&repo, "feature", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("f1")).unwrap()
    });
    let f2 = commit(&repo, "feature", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("f2")).unwrap()
    });
    assert_eq!(repo.history(&a).unwrap().len(), 1, "main did not see feature's edits");
    assert_eq!(repo.history_of("feature", &a, None).unwrap().len(), 3);
    let two = repo.history_of("feature", &a, Some(2)).unwrap();
    assert_eq!(summary(&two), [(f2, ChangeKind::Changed), (f1, ChangeKind::Changed)]);
    assert_eq!(repo.history_of("feature~1", &a, None).unwrap()[0].commit, f1);
    assert!(repo.history_of("feature", &id("never"), None).unwrap().is_empty());
    assert!(repo.history_of("nope", &a, None).is_err());
}

#[test]
fn history_follows_a_merged_branch_to_the_commit_that_made_the_change() {
    let repo = Repo::in_memory().unwrap();
    let a = id("a");
    let c1 = commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("v1")).unwrap()
    });
    repo.create_branch("feature", None).unwrap();
    let f1 = commit(&repo, "feature", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("theirs")).unwrap()
    });
    let f2 = commit(&repo, "feature", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("theirs 2")).unwrap()
    });
    commit(&repo, "main", |tx| tx.put_node(Node::new(id("other"))).unwrap());
    let m = repo
        .merge_with("main", "feature", MergeStrategy::Manual)
        .unwrap()
        .commit("merge")
        .unwrap();
    let h = repo.history(&a).unwrap();
    // The merge took the feature's value unchanged: the feature's commits are reported,
    // not the merge.
    assert_eq!(
        summary(&h),
        [
            (f2, ChangeKind::Changed),
            (f1, ChangeKind::Changed),
            (c1, ChangeKind::Added)
        ]
    );
    assert!(!h.iter().any(|e| e.commit == m));
    for w in h.windows(2) {
        assert_eq!(w[0].previous, w[1].hash);
    }
}

#[test]
fn a_merge_that_resolved_a_conflict_is_reported_and_both_sides_are_followed() {
    let repo = Repo::in_memory().unwrap();
    let a = id("a");
    let c1 = commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("v1")).unwrap()
    });
    repo.create_branch("feature", None).unwrap();
    let f1 = commit(&repo, "feature", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("theirs")).unwrap()
    });
    let o1 = commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("ours")).unwrap()
    });
    let mut merge = repo.merge_with("main", "feature", MergeStrategy::Manual).unwrap();
    assert_eq!(merge.conflicts().len(), 1);
    merge
        .resolve_node(&a, Resolution::Node(Some(Node::new(a.clone()).with_text("both"))))
        .unwrap();
    let m = merge.commit("merge").unwrap();
    let h = repo.history(&a).unwrap();
    let got = summary(&h);
    assert_eq!(got[0], (m, ChangeKind::Changed));
    assert!(got.contains(&(o1, ChangeKind::Changed)), "{got:?}");
    assert!(got.contains(&(f1, ChangeKind::Changed)), "{got:?}");
    assert_eq!(got.last(), Some(&(c1, ChangeKind::Added)));
    assert_eq!(got.len(), 4);
    // A limit cuts the same walk.
    assert_eq!(summary(&repo.history_of("main", &a, Some(2)).unwrap()), got[..2]);
}

#[test]
fn two_hundred_commits_match_the_naive_walk() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..2_000 {
        tx.put_node(Node::new(id(&format!("n{i:05}"))).with_text("seed"))
            .unwrap();
    }
    tx.commit("seed").unwrap();
    let target = id("n00042");
    for i in 0..200u32 {
        commit(&repo, "main", |tx| {
            if i % 10 == 0 {
                tx.put_node(Node::new(target.clone()).with_text(format!("edit {i}")))
                    .unwrap();
            } else {
                tx.put_node(Node::new(id(&format!("n{:05}", 100 + i))).with_text(format!("edit {i}")))
                    .unwrap();
            }
            if i == 155 {
                tx.delete_node(&target).unwrap();
            }
        });
    }
    let h = repo.history(&target).unwrap();
    // Added in the seed, then 20 edits, one of them replaced by the delete at 155 (a
    // separate commit from edit 150) and the re-add at 160.
    assert_eq!(h.len(), 1 + 20 + 1);
    assert_eq!(h.last().unwrap().change, ChangeKind::Added);
    assert_eq!(summary(&h), naive_history(&repo, "main", &target));
}

/// Both sides changed the node; the merge resolved the conflict to one side's version.
/// Returns the repository and (base, ours, theirs, merge) commits.
fn resolved_conflict(resolution: Resolution) -> (Repo, [CommitId; 4]) {
    let repo = Repo::in_memory().unwrap();
    let a = id("a");
    let c1 = commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("base")).unwrap()
    });
    repo.create_branch("feature", None).unwrap();
    let f1 = commit(&repo, "feature", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("theirs")).unwrap()
    });
    let o1 = commit(&repo, "main", |tx| {
        tx.put_node(Node::new(a.clone()).with_text("ours")).unwrap()
    });
    let mut merge = repo.merge_with("main", "feature", MergeStrategy::Manual).unwrap();
    merge.resolve_node(&a, resolution).unwrap();
    let m = merge.commit("merge").unwrap();
    (repo, [c1, o1, f1, m])
}

#[test]
fn a_conflict_resolved_to_theirs_reports_the_merge_and_ours_own_change() {
    let (repo, [c1, o1, f1, m]) = resolved_conflict(Resolution::Theirs);
    let a = id("a");
    // The merge's node is theirs' (even its whole node tree is), but it replaced ours'
    // own version: the merge changed the node on main, and main's change stays listed.
    let h = repo.history(&a).unwrap();
    let got = summary(&h);
    assert_eq!(got[0], (m, ChangeKind::Changed), "{got:?}");
    let ours_entry = h.iter().find(|e| e.commit == o1).expect("ours' own change is listed");
    assert_eq!(h[0].previous, ours_entry.hash, "the merge is relative to ours");
    assert_eq!(ours_entry.change, ChangeKind::Changed);
    assert!(got.contains(&(f1, ChangeKind::Changed)), "{got:?}");
    assert_eq!(got.last(), Some(&(c1, ChangeKind::Added)));
    assert_eq!(got.len(), 4, "{got:?}");
    // Resolved to base: the same commits.
    let (repo, [c1, o1, f1, m]) = resolved_conflict(Resolution::Base);
    let got = summary(&repo.history(&a).unwrap());
    assert_eq!(got[0], (m, ChangeKind::Changed), "{got:?}");
    assert!(got.contains(&(o1, ChangeKind::Changed)), "{got:?}");
    assert!(got.contains(&(f1, ChangeKind::Changed)), "{got:?}");
    assert_eq!(got[3..], [(c1, ChangeKind::Added)]);
}

#[test]
fn a_conflict_resolved_to_ours_is_main_history_unchanged() {
    let (repo, [c1, o1, _f1, m]) = resolved_conflict(Resolution::Ours);
    // The merge left main's node as it was: not listed, and theirs' discarded version
    // was never main's.
    let got = summary(&repo.history(&id("a")).unwrap());
    assert_eq!(got, [(o1, ChangeKind::Changed), (c1, ChangeKind::Added)]);
    assert!(!got.iter().any(|(c, _)| *c == m));
}
