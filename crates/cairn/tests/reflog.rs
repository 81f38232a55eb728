//! The reflog: every branch move recorded (commit, merge, fast-forward, creation,
//! deletion), a deleted branch's moves still readable, gc keeping what recent entries
//! name, fsck naming damage, and the record's bytes pinned.

use cairn::{CommitId, GcOptions, Hash, Node, NodeId, Repo, StoreKind};
use cairn::{DecodeError, RefAction, RefLogEntry};

fn commit(repo: &Repo, branch: &str, node: &str, message: &str) -> CommitId {
    let mut tx = repo.transaction_on(branch).unwrap();
    tx.set_author("ann").unwrap();
    tx.put_node(Node::new(NodeId::new(node).unwrap()).with_text(node))
        .unwrap();
    tx.commit(message).unwrap()
}

/// (action, old, new) of each entry, newest first.
fn moves(repo: &Repo, branch: &str) -> Vec<(RefAction, Option<CommitId>, Option<CommitId>)> {
    repo.reflog(branch)
        .unwrap()
        .into_iter()
        .map(|e| (e.action, e.old, e.new))
        .collect()
}

#[test]
fn every_branch_move_is_recorded_newest_first() {
    let repo = Repo::in_memory().unwrap();
    let c1 = commit(&repo, "main", "a", "first\nbody not kept");
    repo.create_branch("feature", None).unwrap();
    let c2 = commit(&repo, "feature", "b", "on feature");
    // Fast-forward main to feature.
    let ff = repo.merge("main", "feature").unwrap();
    assert_eq!(ff.commit("unused").unwrap(), c2);
    let c3 = commit(&repo, "main", "c", "on main");
    let c4 = commit(&repo, "feature", "d", "more on feature");
    let merge = repo.merge("main", "feature").unwrap();
    let m = merge.commit("merge feature").unwrap();
    repo.delete_branch("feature").unwrap();

    use RefAction::*;
    assert_eq!(
        moves(&repo, "main"),
        [
            (Merge, Some(c3), Some(m)),
            (Commit, Some(c2), Some(c3)),
            (FastForward, Some(c1), Some(c2)),
            (Commit, None, Some(c1)),
        ]
    );
    // The deleted branch's moves stay readable: its last head is found again.
    assert_eq!(
        moves(&repo, "feature"),
        [
            (Delete, Some(c4), None),
            (Commit, Some(c2), Some(c4)),
            (Commit, Some(c1), Some(c2)),
            (Create, None, Some(c1)),
        ]
    );
    let main = repo.reflog("main").unwrap();
    assert_eq!(main[3].message, "first", "the message's first line");
    assert_eq!(main[3].author, "ann");
    assert_eq!(main[0].message, "merge feature");
    assert!(main[1].time_ms >= main[3].time_ms);
    assert_eq!(repo.reflog("feature").unwrap()[3].message, "from HEAD");
    assert_eq!(repo.reflog_all().unwrap().len(), 8);
    assert!(repo.reflog("never-existed").unwrap().is_empty());
    assert!(repo.reflog("bad..name").is_err(), "an invalid name is refused");
    // Recovery: the deleted head, from the reflog.
    let lost = repo.reflog("feature").unwrap()[0].old.unwrap();
    repo.create_branch("feature-again", Some(&lost.to_hex())).unwrap();
    assert_eq!(repo.resolve("feature-again").unwrap(), c4);
}

#[test]
fn a_lost_conflict_records_nothing() {
    let repo = Repo::in_memory().unwrap();
    commit(&repo, "main", "a", "first");
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new("late").unwrap())).unwrap();
    commit(&repo, "main", "b", "second");
    assert!(tx.commit("loses the race").is_err());
    assert!(repo.create_branch("main", None).is_err(), "exists");
    assert_eq!(repo.reflog("main").unwrap().len(), 2);
}

#[test]
fn the_reflog_survives_reopening_on_disk() {
    for kind in [StoreKind::Segment, StoreKind::Sled] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repo");
        let (c1, c2) = {
            let repo = Repo::init_with(&path, kind).unwrap();
            let c1 = commit(&repo, "main", "a", "first");
            repo.create_branch("scratch", None).unwrap();
            let c2 = commit(&repo, "scratch", "b", "scratch work");
            repo.delete_branch("scratch").unwrap();
            (c1, c2)
        };
        let repo = Repo::open(&path).unwrap();
        assert_eq!(
            moves(&repo, "scratch"),
            [
                (RefAction::Delete, Some(c2), None),
                (RefAction::Commit, Some(c1), Some(c2)),
                (RefAction::Create, None, Some(c1)),
            ],
            "{kind:?}"
        );
    }
}

#[test]
fn gc_keeps_what_recent_entries_name_and_now_collects_it() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new("base").unwrap())).unwrap();
    tx.commit_at("base", 1_000).unwrap();
    repo.create_branch("scratch", None).unwrap();
    let mut tx = repo.transaction_on("scratch").unwrap();
    tx.put_node(Node::new(NodeId::new("tmp").unwrap()).with_text("tmp"))
        .unwrap();
    // An ancient timestamp: only the reflog keeps it.
    let lost = tx.commit_at("scratch work", 2_000).unwrap();
    repo.delete_branch("scratch").unwrap();

    let report = repo.gc().unwrap();
    assert_eq!(report.commits_removed, 0, "{report:?}");
    assert_eq!(report.commits_kept_recent, 1, "{report:?}");
    assert_eq!(report.reflog_removed, 0);
    assert!(repo.node_at(&lost, &NodeId::new("tmp").unwrap()).unwrap().is_some());
    assert_eq!(repo.reflog("scratch").unwrap().len(), 3);

    let report = repo.gc_with(&GcOptions::now()).unwrap();
    assert_eq!(report.commits_removed, 1, "{report:?}");
    assert_eq!(report.reflog_removed, 4, "no grace: every entry goes");
    assert!(repo.reflog_all().unwrap().is_empty());
    let fsck = repo.fsck().unwrap();
    assert!(fsck.is_ok() && fsck.reflog_ok(), "{fsck:?}");
}

#[test]
fn gc_drops_entries_older_than_the_grace_period_and_what_only_they_named() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new("base").unwrap())).unwrap();
    tx.commit_at("base", 1_000).unwrap();
    repo.create_branch("old", None).unwrap();
    let mut tx = repo.transaction_on("old").unwrap();
    tx.put_node(Node::new(NodeId::new("tmp").unwrap())).unwrap();
    let ancient = tx.commit_at("ancient", 2_000).unwrap();
    // The branch goes, and with it every recent entry naming its head: only an entry
    // from long ago (time 3000 ms) names it now.
    repo.delete_branch("old").unwrap();
    repo.store()
        .retain_ref_log(&|r| RefLogEntry::decode(r).unwrap().branch != "old")
        .unwrap();
    repo.store().append_ref_log(&old_entry("old", ancient)).unwrap();
    assert_eq!(repo.reflog("old").unwrap()[0].time_ms, 3_000);

    let report = repo.gc().unwrap();
    assert_eq!(report.commits_removed, 1, "{report:?}");
    assert_eq!(report.reflog_removed, 1, "{report:?}");
    assert!(repo.reflog("old").unwrap().is_empty());
    assert_eq!(repo.reflog("main").unwrap().len(), 1, "the recent entry stays");
}

/// A delete entry of `branch` (last head `head`) made at time 3000 ms.
fn old_entry(branch: &str, head: CommitId) -> Vec<u8> {
    let mut b = vec![0x01];
    b.extend_from_slice(&(branch.len() as u64).to_le_bytes());
    b.extend_from_slice(branch.as_bytes());
    b.push(1);
    b.extend_from_slice(head.hash().as_bytes());
    b.push(0);
    b.extend_from_slice(&3_000i64.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.push(5);
    b.extend_from_slice(&0u64.to_le_bytes());
    RefLogEntry::decode(&b).expect("a sound record");
    b
}

#[test]
fn golden_record_bytes() {
    // storage-format.md §6.5: version, branch, old, new, time_ms, author, action, message.
    let hex = "01\
               0400000000000000 6d61696e\
               00\
               01 abababababababababababababababababababababababababababababababab\
               0068e5cf8b010000\
               0300000000000000 616e6e\
               01\
               0500000000000000 6669727374";
    let bytes: Vec<u8> = hex
        .split_whitespace()
        .collect::<String>()
        .as_bytes()
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect();
    let e = RefLogEntry::decode(&bytes).unwrap();
    assert_eq!(e.branch, "main");
    assert_eq!(e.old, None);
    assert_eq!(e.new, Some(CommitId(Hash::from_bytes([0xab; 32]))));
    assert_eq!(e.time_ms, 1_700_000_000_000);
    assert_eq!(e.author, "ann");
    assert_eq!(e.action, RefAction::Commit);
    assert_eq!(e.message, "first");
    assert_eq!(e.encode(), bytes, "encoding is the pinned bytes");
    // Strict: another version, trailing bytes, an unknown action, a bad option tag.
    let mut v2 = bytes.clone();
    v2[0] = 0x02;
    assert!(matches!(
        RefLogEntry::decode(&v2),
        Err(DecodeError::BadTag { found: 0x02, .. })
    ));
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(RefLogEntry::decode(&longer), Err(DecodeError::Invalid { .. })));
    let mut action = bytes.clone();
    let at = bytes.len() - 5 - 8 - 1;
    action[at] = 9;
    let e = RefLogEntry::decode(&action).unwrap_err();
    assert!(
        matches!(&e, DecodeError::Invalid { kind: "reflog record", detail } if detail.contains("action")),
        "{e}"
    );
    let mut tag = bytes.clone();
    tag[1 + 8 + 4] = 2;
    assert!(matches!(RefLogEntry::decode(&tag), Err(DecodeError::Malformed { .. })));
    assert!(matches!(RefLogEntry::decode(&[]), Err(DecodeError::Invalid { .. })));
}

#[test]
fn fsck_names_damaged_records_and_missing_commits_without_failing() {
    let repo = Repo::in_memory().unwrap();
    let c1 = commit(&repo, "main", "a", "first");
    repo.store().append_ref_log(b"\x01not a record").unwrap();
    let mut missing = old_entry("gone", c1);
    // Name a commit that was never stored (the 32 id bytes follow version, length,
    // name and the option tag).
    let at = 1 + 8 + "gone".len() + 1;
    missing[at..at + 32].copy_from_slice(&[7; 32]);
    repo.store().append_ref_log(&missing).unwrap();
    let fsck = repo.fsck().unwrap();
    assert!(fsck.is_ok(), "{:?}", fsck.problems);
    assert_eq!(fsck.reflog_problems.len(), 2, "{:?}", fsck.reflog_problems);
    assert!(fsck.reflog_problems[0].contains("does not decode"));
    assert!(fsck.reflog_problems[1].contains("not stored"));
    // The readable entries are still served.
    assert_eq!(repo.reflog("main").unwrap().len(), 1);
}

#[test]
fn fsck_names_a_damaged_record_in_a_segment_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    {
        let repo = Repo::init_with(&path, StoreKind::Segment).unwrap();
        commit(&repo, "main", "a", "first");
        commit(&repo, "main", "b", "second");
        repo.store().flush().unwrap();
    }
    // Flip a byte in the first record's payload.
    let file = path.join("reflog");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[12 + 3] ^= 0x40;
    std::fs::write(&file, bytes).unwrap();
    let repo = Repo::open(&path).unwrap();
    let fsck = repo.fsck().unwrap();
    assert!(fsck.is_ok(), "{:?}", fsck.problems);
    assert_eq!(fsck.reflog_problems.len(), 1, "{:?}", fsck.reflog_problems);
    assert_eq!(repo.reflog("main").unwrap().len(), 1, "the other record reads");
}

#[test]
fn branch_at_hash_n_is_the_head_n_moves_ago() {
    let repo = Repo::in_memory().unwrap();
    let c1 = commit(&repo, "main", "a", "first");
    let c2 = commit(&repo, "main", "b", "second");
    let c3 = commit(&repo, "main", "c", "third");
    assert_eq!(repo.resolve("main@{#0}").unwrap(), c3);
    assert_eq!(repo.resolve("main@{#1}").unwrap(), c2);
    assert_eq!(repo.resolve("main@{#2}").unwrap(), c1);
    assert_eq!(repo.resolve("HEAD@{#1}").unwrap(), c2);
    assert_eq!(repo.resolve("@{#2}").unwrap(), c1);
    assert_eq!(repo.resolve("main@{#1}~1").unwrap(), c1);
    // A bare number is still a time (ms since the epoch), as before.
    assert!(repo.resolve("main@{1}").is_err(), "no commit at or before 1 ms");
    // A deleted branch: its last head is one move back.
    repo.create_branch("scratch", None).unwrap();
    let s1 = commit(&repo, "scratch", "s", "scratch work");
    repo.delete_branch("scratch").unwrap();
    assert_eq!(repo.resolve("scratch@{#1}").unwrap(), s1);
    assert_eq!(repo.resolve("scratch@{#2}").unwrap(), c3);
    for bad in ["scratch@{#0}", "main@{#3}", "main@{#x}", "main@{#1", "nope@{#0}"] {
        let err = repo.resolve(bad).unwrap_err();
        assert!(matches!(err, cairn::Error::UnknownRevision { .. }), "{bad}: {err}");
    }
}
