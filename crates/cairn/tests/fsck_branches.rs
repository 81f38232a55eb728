//! A branch ref lost or damaged while the reflog holds its last move (issue 22, item 4):
//! `fsck` names it (and does not pass), `repair_branches` (`cairn fsck --repair`) sets it to
//! that commit again, and a branch deleted on purpose stays deleted.

use cairn::{CommitId, Node, NodeId, Repo, StoreKind};

const MAIN: &str = "refs/heads/main";

fn repo(dir: &tempfile::TempDir) -> (Repo, CommitId) {
    let repo = Repo::init_with(dir.path().join("repo"), StoreKind::Segment).unwrap();
    let mut head = None;
    for c in 0..3 {
        let mut tx = repo.transaction().unwrap();
        for i in 0..10 {
            tx.put_node(Node::new(NodeId::new(format!("n{c}-{i}")).unwrap()).with_text(format!("note {c} {i}")))
                .unwrap();
        }
        head = Some(tx.commit(&format!("commit {c}")).unwrap());
    }
    repo.store().flush().unwrap();
    (repo, head.unwrap())
}

fn restored(repo: &Repo, head: CommitId, word: &str) {
    let report = repo.fsck().unwrap();
    assert!(!report.is_ok());
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("branch main") && p.contains(word)),
        "{:?}",
        report.problems
    );
    let done = repo.repair_branches().unwrap();
    assert_eq!(done.len(), 1, "{done:?}");
    assert!(done[0].contains(&head.to_hex()), "{done:?}");
    assert_eq!(repo.head().unwrap(), Some(head));
    let report = repo.fsck().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(
        repo.node(&NodeId::new("n0-3").unwrap()).unwrap().unwrap().text,
        "note 0 3"
    );
}

#[test]
fn a_deleted_current_branch_ref_is_named_and_restored_from_the_reflog() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, head) = repo(&dir);
    let value = repo.store().get_ref(MAIN).unwrap().unwrap();
    repo.store().cas_ref(MAIN, Some(&value), None).unwrap();
    assert_eq!(repo.head().unwrap(), None);
    restored(&repo, head, "no ref");
}

#[test]
fn a_damaged_branch_ref_file_is_named_and_restored_from_the_reflog() {
    let dir = tempfile::tempdir().unwrap();
    let head = repo(&dir).1;
    let hex: String = MAIN.bytes().map(|b| format!("{b:02x}")).collect();
    let file = dir.path().join("repo").join("refs").join(hex);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[3] ^= 0x21;
    std::fs::write(&file, bytes).unwrap();
    let repo = Repo::open(dir.path().join("repo")).unwrap();
    restored(&repo, head, "damaged");
}

#[test]
fn a_branch_deleted_on_purpose_stays_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _) = repo(&dir);
    repo.create_branch("side", None).unwrap();
    repo.delete_branch("side").unwrap();
    let report = repo.fsck().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(repo.repair_branches().unwrap(), Vec::<String>::new());
    assert!(repo.branch_head("side").is_err(), "side came back");
}

/// One damaged branch ref costs that ref (issue 22, item 3): the others list, `fsck` checks
/// them and calls nothing intact dangling, and `gc` refuses (naming it) rather than collect
/// what only the damaged ref reaches; repaired from the reflog, all is as before.
#[test]
fn a_damaged_branch_ref_costs_that_ref_only() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, main_head) = repo(&dir);
    repo.create_branch("side", None).unwrap();
    let mut tx = repo.transaction_on("side").unwrap();
    tx.put_node(Node::new(NodeId::new("only-on-side").unwrap()).with_text("side note"))
        .unwrap();
    let side_head = tx.commit("side").unwrap();
    repo.store().flush().unwrap();
    drop(repo);
    let hex: String = "refs/heads/side".bytes().map(|b| format!("{b:02x}")).collect();
    let file = dir.path().join("repo").join("refs").join(hex);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[3] ^= 0x21;
    std::fs::write(&file, bytes).unwrap();

    let repo = Repo::open(dir.path().join("repo")).unwrap();
    let branches = repo.branches().unwrap();
    assert_eq!(branches, vec![("main".to_string(), main_head)]);
    let report = repo.fsck().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("refs/heads/side") && p.contains("damaged")),
        "{:?}",
        report.problems
    );
    assert!(report.commits_checked >= 3, "{report:?}");
    assert_eq!(report.dangling_commits, Vec::<CommitId>::new());
    let objects = repo.store().stats().unwrap().objects;
    assert!(repo.gc_with(&cairn::GcOptions::now()).is_err());
    assert_eq!(repo.store().stats().unwrap().objects, objects);

    let done = repo.repair_branches().unwrap();
    assert!(done.iter().any(|d| d.contains("side")), "{done:?}");
    assert_eq!(repo.branch_head("side").unwrap(), Some(side_head));
    assert!(repo.fsck().unwrap().is_ok());
    repo.gc_with(&cairn::GcOptions::now()).unwrap();
    let at_side = repo.view("side").unwrap();
    assert_eq!(
        at_side
            .node(&NodeId::new("only-on-side").unwrap())
            .unwrap()
            .unwrap()
            .text,
        "side note"
    );
}

/// With the current branch's ref gone and no reflog record to restore it from, every read
/// of HEAD fails: `fsck` does not pass (issue 22: never exit 0 while HEAD cannot be read).
#[test]
fn a_lost_current_branch_without_a_reflog_record_fails_fsck() {
    let store = std::sync::Arc::new(cairn_store::MemoryStore::new());
    let repo = Repo::with_store(store.clone()).unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new("a").unwrap())).unwrap();
    tx.commit("one").unwrap();
    // No reflog record left: nothing to restore main from.
    repo.store().retain_ref_log(&|_| false).unwrap();
    let value = repo.store().get_ref(MAIN).unwrap().unwrap();
    repo.store().cas_ref(MAIN, Some(&value), None).unwrap();
    let report = repo.fsck().unwrap();
    assert!(!report.is_ok());
    assert!(
        report.problems.iter().any(|p| p.contains("HEAD names branch main")),
        "{:?}",
        report.problems
    );
    // A new, empty repository is sound.
    assert!(Repo::in_memory().unwrap().fsck().unwrap().is_ok());
}
