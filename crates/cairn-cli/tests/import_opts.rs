//! `cairn import --author` / `$CAIRN_AUTHOR`, and an empty import (or one that changes
//! nothing) that makes no commit unless `--allow-empty`.

mod common;

use common::Sandbox;

#[test]
fn the_author_comes_from_the_flag_or_the_environment() {
    let s = Sandbox::init();
    let one = s.file("one.jsonl", "{\"node\": {\"id\": \"a\"}}\n");
    let two = s.file("two.jsonl", "{\"node\": {\"id\": \"b\"}}\n");
    let three = s.file("three.jsonl", "{\"node\": {\"id\": \"c\"}}\n");
    s.ok(&["import", &one]);
    s.ok(&["import", &two, "--author", "ada@example.org"]);
    let out = s
        .command()
        .args(["import", &three])
        .env("CAIRN_AUTHOR", "agent-7")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = s.json(&["log", "--json"]);
    let authors: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["author"].as_str().unwrap())
        .collect();
    assert_eq!(authors, ["agent-7", "ada@example.org", "cairn"]);
    // A bad author is refused and nothing is committed.
    let four = s.file("four.jsonl", "{\"node\": {\"id\": \"d\"}}\n");
    let long = "x".repeat(2000);
    let (_, err) = s.fails(&["import", &four, "--author", &long], 1);
    assert!(err.contains("author"), "{err}");
    assert_eq!(s.json(&["log", "--json"]).as_array().unwrap().len(), 3);
}

#[test]
fn an_empty_import_makes_no_commit_unless_allowed() {
    let s = Sandbox::init();
    let empty = s.file("empty.jsonl", "\n\n");
    let out = s.ok(&["import", &empty]);
    assert!(out.contains("no commit made"), "{out}");
    assert_eq!(s.json(&["import", &empty, "--json"])["commit"], serde_json::Value::Null);
    assert_eq!(s.ok(&["log"]), "");
    s.ok(&["import", &empty, "--allow-empty"]);
    assert_eq!(s.ok(&["log"]).lines().count(), 1);
}

#[test]
fn a_directory_or_a_line_of_the_wrong_shape_is_named() {
    let s = Sandbox::init();
    let dir = s.dir.path().to_str().unwrap().to_string();
    let out = s.run(&["import", &dir]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("cannot read {dir}: it is a directory")), "{err}");
    assert!(!err.contains("line 1"), "no line was read: {err}");
    let both = s.file("both.jsonl", "{\"node\": {\"id\": \"a\"}, \"edge\": {}}\n");
    let err = s.fails_stderr(&["import", &both], 1);
    assert!(
        err.contains("line 1: a line is an object with exactly one of node, edge,")
            && err.contains("(found `node` and `edge`)"),
        "{err}"
    );
    assert_eq!(s.ok(&["log"]), "");
}

#[test]
fn an_import_that_changes_nothing_makes_no_commit_unless_allowed() {
    let s = Sandbox::init();
    let file = s.file(
        "same.jsonl",
        "{\"node\": {\"id\": \"alice\", \"labels\": [\"Person\"]}}\n",
    );
    s.ok(&["import", &file]);
    let head = s.json(&["log", "--json"])[0]["commit"].as_str().unwrap().to_string();
    let out = s.ok(&["import", &file, "-m", "identical again"]);
    assert_eq!(
        out.trim(),
        format!(
            "no changes: 1 operation left the graph as it is, no commit made (HEAD stays at {head}) \
             (--allow-empty commits anyway)"
        )
    );
    for line in [
        "{\"patch\": {\"id\": \"alice\"}}",
        "{\"patch\": {\"id\": \"alice\", \"labels_remove\": [\"Robot\"]}}",
        // Put then delete in one file: the node ends as it started (absent).
        "{\"node\": {\"id\": \"tmp\"}}\n{\"delete_node\": \"tmp\"}",
    ] {
        let f = s.file("noop.jsonl", line);
        let v = s.json(&["import", &f, "--json"]);
        assert_eq!(v["commit"], serde_json::Value::Null, "{line}: {v}");
        assert_eq!(v["head"], head.as_str(), "{line}: {v}");
    }
    assert_eq!(s.ok(&["log"]).lines().count(), 1);
    // A real change still commits, and --allow-empty commits a no-op.
    let f = s.file(
        "change.jsonl",
        "{\"patch\": {\"id\": \"alice\", \"labels_add\": [\"Robot\"]}}\n",
    );
    assert!(s.json(&["import", &f, "--json"])["commit"].is_string());
    assert!(s.json(&["import", &f, "--json", "--allow-empty"])["commit"].is_string());
    assert_eq!(s.json(&["log", "--json"]).as_array().unwrap().len(), 3);
}
