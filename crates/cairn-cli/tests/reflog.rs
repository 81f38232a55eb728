//! `cairn reflog` end to end: a branch's moves, newest first, and a deleted branch's
//! head found again.

mod common;

use common::{Sandbox, CORPUS};

#[test]
fn reflog_shows_moves_and_finds_a_deleted_branch_again() {
    let s = Sandbox::init();
    s.ok(&["import", CORPUS]);
    let first = s.rev("HEAD");
    s.ok(&["branch", "create", "scratch"]);
    s.ok(&["branch", "switch", "scratch"]);
    let f = s.file(
        "scratch.jsonl",
        "{\"node\": {\"id\": \"tmp\", \"text\": \"throwaway\"}}\n",
    );
    s.ok(&["import", &f]);
    let lost = s.rev("HEAD");
    s.ok(&["branch", "switch", "main"]);
    s.ok(&["branch", "delete", "scratch"]);

    // Human output, like git's: the current branch by default.
    let main = s.ok(&["reflog"]);
    let lines: Vec<&str> = main.lines().collect();
    assert_eq!(lines.len(), 1, "{main}");
    assert!(
        lines[0].starts_with(&format!("{}  main@{{#0}}: commit: ", &first[..12])),
        "{main}"
    );

    let scratch = s.ok(&["reflog", "scratch"]);
    let lines: Vec<&str> = scratch.lines().collect();
    assert_eq!(lines.len(), 3, "{scratch}");
    assert!(
        lines[0].starts_with(&format!("{}  scratch@{{#0}}: delete: was ", &lost[..12])),
        "{scratch}"
    );
    assert!(lines[1].contains("scratch@{#1}: commit: "), "{scratch}");
    assert!(lines[2].contains("scratch@{#2}: create: from HEAD"), "{scratch}");
    assert_eq!(s.ok(&["reflog", "scratch", "--limit", "1"]).lines().count(), 1);
    assert_eq!(s.ok(&["reflog", "--all"]).lines().count(), 4);

    // JSON: the deleted head, to bring the branch back.
    let json = s.json(&["reflog", "scratch", "--json"]);
    let entries = json.as_array().unwrap();
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0]["action"], "delete");
    assert_eq!(entries[0]["old"], lost.as_str());
    assert!(entries[0]["new"].is_null());
    assert_eq!(entries[2]["action"], "create");
    assert_eq!(entries[2]["new"], first.as_str());
    // What a line shows is a revision: scratch@{#1} is the head the deleted branch had.
    assert_eq!(s.rev("scratch@{#1}"), lost);
    assert_eq!(s.rev("scratch@{#2}"), first);
    s.ok(&["branch", "create", "scratch", "--at", &lost]);
    assert_eq!(s.rev("scratch"), lost);

    // A bad branch name is refused.
    s.fails(&["reflog", "bad..name"], 1);
}
