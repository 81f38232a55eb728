//! `cairn history`, `merge`, `gc` and `show --valid-at` end to end.

mod common;

use common::{Sandbox, CORPUS};

#[test]
fn history_lists_the_commits_that_touched_a_node() {
    let s = Sandbox::sample();
    let (head, first) = (s.rev("HEAD"), s.rev("HEAD~1"));
    let h = s.json(&["history", "doc-4", "--json"]);
    let h = h.as_array().unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(
        (h[0]["commit"].as_str(), h[0]["change"].as_str()),
        (Some(head.as_str()), Some("changed"))
    );
    assert_eq!(
        (h[1]["commit"].as_str(), h[1]["change"].as_str()),
        (Some(first.as_str()), Some("added"))
    );
    assert_eq!(h[0]["previous"], h[1]["hash"]);
    assert_eq!(h[0]["message"], "import update.jsonl");

    let human = s.ok(&["history", "doc-4"]);
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with(&head[..12]) && lines[0].contains("  changed  import update.jsonl"),
        "{human}"
    );
    assert!(lines[1].contains("  added    import corpus.jsonl"), "{human}");
    assert_eq!(s.ok(&["history", "doc-4", "-n", "1"]).lines().count(), 1);

    let removed = s.json(&["history", "doc-11", "--json"]);
    assert_eq!(removed[0]["change"], "removed");
    assert!(removed[0]["hash"].is_null());
    // Untouched by the update; unknown nodes have an empty history.
    assert_eq!(s.json(&["history", "doc-1", "--json"]).as_array().unwrap().len(), 1);
    assert_eq!(
        s.ok(&["history", "no-such-node"]),
        "no commit touched \"no-such-node\" among the ancestors of HEAD\n"
    );
    assert_eq!(s.json(&["history", "no-such-node", "--json"]), serde_json::json!([]));
    // Another branch's history.
    s.ok(&["branch", "create", "old", "--at", "HEAD~1"]);
    assert_eq!(
        s.json(&["history", "doc-4", "--branch", "old", "--json"])
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        s.ok(&["history", "no-such-node", "--branch", "old"]),
        "no commit touched \"no-such-node\" among the ancestors of old\n"
    );
    let (_, err) = s.fails(&["history", "doc-4", "--branch", "nope"], 1);
    assert!(err.contains("nope"), "{err}");
}

/// Two branches from the sample corpus: `topic` edits doc-4 (text `topic`) and adds
/// `topic-note`; main edits doc-5, and doc-4 too if `clash`.
fn diverged(clash: bool) -> Sandbox {
    let s = Sandbox::init();
    s.ok(&["import", CORPUS]);
    s.ok(&["branch", "create", "topic"]);
    s.ok(&["branch", "switch", "topic"]);
    let t = s.file(
        "topic.jsonl",
        "{\"node\": {\"id\": \"doc-4\", \"labels\": [\"Document\"], \"text\": \"topic\"}}\n\
         {\"node\": {\"id\": \"topic-note\", \"text\": \"added on topic\"}}\n",
    );
    s.ok(&["import", &t, "-m", "topic work"]);
    s.ok(&["branch", "switch", "main"]);
    let mut m = "{\"node\": {\"id\": \"doc-5\", \"text\": \"main\"}}\n".to_string();
    if clash {
        m.push_str("{\"node\": {\"id\": \"doc-4\", \"labels\": [\"Document\"], \"text\": \"main\"}}\n");
    }
    let m = s.file("main.jsonl", &m);
    s.ok(&["import", &m, "-m", "main work"]);
    s
}

#[test]
fn merge_a_branch_back() {
    let s = diverged(false);
    let (main, topic) = (s.rev("main"), s.rev("topic"));
    let out = s.ok(&["merge", "topic"]);
    assert!(out.starts_with("merged topic into main: commit "), "{out}");
    let log = s.json(&["log", "-n", "1", "--json"]);
    assert_eq!(log[0]["parents"], serde_json::json!([main, topic]));
    assert_eq!(log[0]["message"], "merge topic into main");
    assert_eq!(s.json(&["show", "doc-4", "--json"])["text"], "topic");
    assert_eq!(s.json(&["show", "doc-5", "--json"])["text"], "main");
    assert_eq!(s.json(&["show", "topic-note", "--json"])["text"], "added on topic");
    assert!(s.ok(&["merge", "topic"]).starts_with("already up to date"));

    // A branch behind main fast-forwards.
    s.ok(&["branch", "create", "behind", "--at", "HEAD~1"]);
    let ff = s.json(&["merge", "main", "--into", "behind", "--json"]);
    assert_eq!(ff["kind"], "fast_forward");
    assert_eq!(ff["commit"], s.rev("main").as_str());
    assert_eq!(s.rev("behind"), s.rev("main"));
    assert!(s.ok(&["fsck"]).ends_with(": ok\n"));
}

#[test]
fn merge_conflicts_stop_unless_a_strategy_settles_them() {
    let s = diverged(true);
    let head = s.rev("HEAD");
    let (out, err) = s.fails(&["merge", "topic"], 1);
    assert!(out.starts_with("conflict node doc-4\n"), "{out}");
    for side in ["  base  ", "  ours  ", "  theirs "] {
        assert!(out.contains(side), "{side:?} in {out}");
    }
    assert!(out.contains("\"main\"") && out.contains("\"topic\""), "{out}");
    // Each side's own change, as `cairn diff` prints fields; what both did alike, once.
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[2].starts_with("  ours    text: \"RANS") && lines[2].ends_with(" -> \"main\""),
        "{out}"
    );
    assert!(
        lines[3].starts_with("  theirs  text: \"RANS") && lines[3].ends_with(" -> \"topic\""),
        "{out}"
    );
    assert_eq!(
        lines[4], "  both    labels: [\"Document\",\"Report\"] -> [\"Document\"]",
        "{out}"
    );
    assert!(err.starts_with("error: merge has 1 conflict(s)"), "{err}");
    assert_eq!(s.rev("HEAD"), head, "nothing committed");

    let (json, _) = s.fails(&["merge", "topic", "--json"], 1);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(json["commit"].is_null());
    assert_eq!(json["conflicts"][0]["id"], "doc-4");
    assert_eq!(json["conflicts"][0]["theirs"]["text"], "topic");

    let out = s.ok(&["merge", "topic", "--strategy", "ours", "-m", "keep ours"]);
    assert!(out.contains("conflict on node doc-4 resolved: took ours"), "{out}");
    assert_eq!(s.json(&["show", "doc-4", "--json"])["text"], "main");
    assert_eq!(s.json(&["log", "-n", "1", "--json"])[0]["message"], "keep ours");
    assert_eq!(s.json(&["show", "topic-note", "--json"])["text"], "added on topic");
}

#[test]
fn gc_after_deleting_a_branch() {
    let s = Sandbox::init();
    s.ok(&["import", CORPUS]);
    s.ok(&["branch", "create", "scratch"]);
    s.ok(&["branch", "switch", "scratch"]);
    let f = s.file(
        "scratch.jsonl",
        "{\"node\": {\"id\": \"tmp\", \"text\": \"throwaway\"}}\n",
    );
    s.ok(&["import", &f]);
    s.ok(&["branch", "switch", "main"]);
    // Nothing unreachable yet.
    assert_eq!(s.json(&["gc", "--json"])["objects_removed"], 0);
    s.ok(&["branch", "delete", "scratch"]);
    // Within the grace period the deleted branch's commit stays, recoverable: fsck names
    // it as dangling.
    let report = s.json(&["gc", "--json"]);
    assert_eq!(report["commits_removed"], 0, "{report}");
    assert_eq!(report["commits_kept_recent"], 1, "{report}");
    let fsck = s.ok(&["fsck"]);
    assert!(fsck.contains("dangling: commit"), "{fsck}");
    // `--now` (or a grace the commit is older than) collects it.
    let report = s.json(&["gc", "--grace-days", "0", "--json"]);
    assert_eq!(report["commits_removed"], 1);
    assert_eq!(report["commits_live"], 1);
    assert!(report["objects_removed"].as_u64().unwrap() >= 2, "{report}");
    // It reports the repository's bytes before and after, and what it gave back.
    let (before, after) = (
        report["disk_bytes_before"].as_u64(),
        report["disk_bytes_after"].as_u64(),
    );
    assert!(before.unwrap() > 0 && after.unwrap() > 0, "{report}");
    assert_eq!(
        report["bytes_returned"].as_u64(),
        Some(before.unwrap().saturating_sub(after.unwrap())),
        "{report}"
    );
    assert!(s.ok(&["fsck"]).ends_with(": ok\n"));
    let text = s.ok(&["gc", "--now"]);
    assert!(text.starts_with("removed 0 of "), "{text}");
    assert!(
        text.contains(" bytes to the file system (") && text.contains(" bytes on disk now)"),
        "{text}"
    );
    assert!(s.ok(&["retrieve", "--text", "winglet"]).contains("doc-"));
}

#[test]
fn show_says_whether_a_node_is_valid_at_a_time() {
    let s = Sandbox::sample();
    let human = s.ok(&["show", "fact-team-lead", "--valid-at", "2025-01-01T00:00:00Z"]);
    assert!(human.contains("valid at   2025-01-01T00:00:00Z (not valid)"), "{human}");
    let json = s.json(&["show", "fact-team-lead", "--valid-at", "2020-01-01T00:00:00Z", "--json"]);
    assert_eq!(
        json["valid_at"],
        serde_json::json!({"time_ms": 1_577_836_800_000i64, "valid": true})
    );
    assert!(s.json(&["show", "fact-team-lead", "--json"]).get("valid_at").is_none());
    s.fails(&["show", "fact-team-lead", "--valid-at", "soon"], 2);
}

#[test]
fn merge_resolve_settles_conflicts_one_by_one() {
    let s = diverged(true);
    let head = s.rev("HEAD");
    // Resolving a node that has no conflict is refused, naming it; nothing is committed.
    let (_, err) = s.fails(&["merge", "topic", "--resolve", "doc-1=theirs"], 1);
    assert_eq!(
        err,
        "error: invalid argument: no conflict on node doc-1: the merge has 1 conflict(s), on node doc-4\n"
    );
    assert_eq!(s.rev("HEAD"), head);
    let (_, err) = s.fails(&["merge", "topic", "--resolve", "doc-4=sideways"], 2);
    assert!(err.contains("ours, theirs or base"), "{err}");
    // Settled one by one, overriding the strategy for that node.
    let out = s.ok(&["merge", "topic", "--strategy", "ours", "--resolve", "doc-4=theirs"]);
    assert!(out.contains("conflict on node doc-4 resolved: took theirs"), "{out}");
    assert_eq!(s.json(&["show", "doc-4", "--json"])["text"], "topic");
}

#[test]
fn merge_resolves_edge_conflicts_and_counts_changes_as_diff_does() {
    let s = diverged(true);
    // Both sides add the same edge with different weights: an edge conflict.
    s.ok(&["branch", "switch", "topic"]);
    let t = s.file(
        "topic-edge.jsonl",
        "{\"edge\": {\"source\": \"doc-1\", \"target\": \"doc-2\", \"kind\": \"cites\", \"weight\": 3.0}}\n",
    );
    s.ok(&["import", &t]);
    s.ok(&["branch", "switch", "main"]);
    let m = s.file(
        "main-edge.jsonl",
        "{\"edge\": {\"source\": \"doc-1\", \"target\": \"doc-2\", \"kind\": \"cites\", \"weight\": 2.0}}\n",
    );
    s.ok(&["import", &m]);
    let before = s.rev("HEAD");
    let (out, _) = s.fails(&["merge", "topic"], 1);
    assert!(out.contains("conflict edge (doc-1)-[cites]->(doc-2)"), "{out}");
    // A malformed edge form is a usage error; an edge without a conflict names it.
    let (_, err) = s.fails(
        &[
            "merge",
            "topic",
            "--resolve",
            "(doc-1)-[cites]->(doc-3)=theirs",
            "--resolve",
            "doc-4=ours",
        ],
        1,
    );
    assert!(err.contains("no conflict on edge (doc-1)-[cites]->(doc-3)"), "{err}");
    assert_eq!(s.rev("HEAD"), before);
    // Settling one of the two conflicts prints only the other, and counts the settled one.
    let (out, err) = s.fails(&["merge", "topic", "--resolve", "doc-4=theirs"], 1);
    assert!(!out.contains("doc-4"), "{out}");
    assert!(out.starts_with("conflict edge (doc-1)-[cites]->(doc-2)\n"), "{out}");
    assert!(
        out.contains("  ours    added: weight 2 0 props\n  theirs  added: weight 3 0 props\n")
            && out.contains("            weight: 2.0 -> 3.0\n"),
        "{out}"
    );
    assert!(out.ends_with("resolved 1 of 2 conflicts; 1 left\n"), "{out}");
    assert!(err.starts_with("error: merge has 1 conflict(s)"), "{err}");
    assert_eq!(s.rev("HEAD"), before);

    let json = s.json(&[
        "merge",
        "topic",
        "--resolve",
        "(doc-1)-[cites]->(doc-2)=theirs",
        "--resolve",
        "doc-4=theirs",
        "--json",
    ]);
    let commit = json["commit"].as_str().expect("committed").to_string();
    let export = s.ok(&["export"]);
    let edge = export
        .lines()
        .find(|l| l.contains("\"cites\"") && l.contains("\"doc-2\"") && l.contains("\"doc-1\""))
        .expect("the edge is exported");
    assert!(edge.contains("\"weight\":3.0"), "theirs' weight: {edge}");
    // The printed counts are the diff's: doc-4 (resolved to theirs), topic-note, and the
    // edge (resolved to theirs).
    let diff = s.json(&["diff", &before, &commit, "--json"]);
    let n = diff["nodes"].as_array().unwrap().len();
    let e = diff["edges"].as_array().unwrap().len();
    assert_eq!(
        (json["node_changes"].as_u64(), json["edge_changes"].as_u64()),
        (Some(n as u64), Some(e as u64))
    );
    assert_eq!((n, e), (2, 1));
}

#[test]
fn strategy_theirs_prints_the_diffs_change_count() {
    let s = diverged(true);
    let before = s.rev("HEAD");
    let out = s.ok(&["merge", "topic", "--strategy", "theirs"]);
    let commit = s.rev("HEAD");
    let diff = s.json(&["diff", &before, &commit, "--json"]);
    let n = diff["nodes"].as_array().unwrap().len();
    assert!(out.contains(&format!("({n} node and 0 edge changes)")), "{out}");
    assert_eq!(n, 2, "doc-4 taken from theirs and topic-note");
}

#[test]
fn history_after_a_conflict_resolved_to_theirs_keeps_ours_own_change() {
    let s = diverged(true);
    let main_work = s.rev("HEAD");
    let out = s.ok(&["merge", "topic", "--resolve", "doc-4=theirs", "-m", "take topic"]);
    assert!(out.contains("resolved: took theirs"), "{out}");
    let merge = s.rev("HEAD");
    let h = s.json(&["history", "doc-4", "--json"]);
    let mut got: Vec<(&str, &str)> = h
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["message"].as_str().unwrap(), e["change"].as_str().unwrap()))
        .collect();
    // The two sides' commits in either order (they have the same generation).
    got[1..3].sort();
    assert_eq!(
        got,
        [
            ("take topic", "changed"),
            ("main work", "changed"),
            ("topic work", "changed"),
            ("import corpus.jsonl", "added"),
        ]
    );
    assert_eq!(h[0]["commit"], merge.as_str());
    // The merge is relative to main's own version.
    let main_entry = h.as_array().unwrap().iter().find(|e| e["commit"] == main_work.as_str());
    assert_eq!(h[0]["previous"], main_entry.expect("main's change is listed")["hash"]);
}
