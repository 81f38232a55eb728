//! `cairn tag`: a tag names one commit, resolves as a revision, never moves, and keeps its
//! commits from gc after the branch that made them is gone.

mod common;

use common::Sandbox;

#[test]
fn tags_name_a_commit_and_keep_it_from_gc() {
    let s = Sandbox::sample();
    let first = s.rev("HEAD~1");
    s.ok(&["tag", "create", "before-update", "--at", "HEAD~1"]);
    assert_eq!(s.rev("before-update"), first);
    assert!(s.ok(&["tag"]).starts_with("before-update  "));
    let err = s.fails(&["tag", "create", "before-update"], 1).1;
    assert!(err.contains("already exists"), "{err}");
    // Branches and tags share one namespace: neither may hide the other.
    let err = s.fails(&["tag", "create", "main", "--at", "HEAD~1"], 1).1;
    assert!(err.contains("`main` is a branch"), "{err}");
    let err = s.fails(&["branch", "create", "before-update"], 1).1;
    assert!(err.contains("`before-update` is a tag"), "{err}");
    assert_eq!(s.rev("before-update"), first, "the refusals changed nothing");
    assert!(!s.ok(&["tag"]).contains("main"));
    // A branch's commits, tagged, survive the branch's deletion and gc.
    s.ok(&["branch", "create", "side"]);
    s.ok(&["branch", "switch", "side"]);
    let extra = s.file("extra.jsonl", "{\"node\": {\"id\": \"only-on-side\"}}\n");
    s.ok(&["import", &extra]);
    let side = s.rev("side");
    s.ok(&["tag", "create", "side-work"]);
    s.ok(&["branch", "switch", "main"]);
    s.ok(&["branch", "delete", "side"]);
    let report = s.ok(&["gc", "--now"]);
    // `--now` also empties the reflog, and says so; it keeps nothing for a grace period.
    assert!(report.contains(" reflog entries; "), "{report}");
    assert!(
        !report.contains(" and 0 reflog entries") && !report.contains("grace"),
        "{report}"
    );
    assert_eq!(s.rev("side-work"), side);
    assert!(s
        .ok(&["show", "only-on-side", "--at", "side-work"])
        .contains("only-on-side"));
    s.ok(&["fsck"]);
    // Deleted, the tag's commit goes with the next gc.
    s.ok(&["tag", "delete", "side-work"]);
    let err = s.fails(&["tag", "delete", "side-work"], 1).1;
    assert!(err.contains("unknown tag"), "{err}");
    s.ok(&["gc", "--now"]);
    let err = s.fails(&["show", "only-on-side", "--at", &side], 1).1;
    assert!(err.contains("unknown revision") || err.contains("not found"), "{err}");
}
