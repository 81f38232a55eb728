//! End-to-end tests of the `cairn` binary against temporary repositories.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Sandbox, CORPUS, UPDATE};
use serde_json::Value;

/// Lines of `path` that start with `{"<kind>"`.
fn count_lines(path: &str, kind: &str) -> u64 {
    let prefix = format!("{{\"{kind}\"");
    std::fs::read_to_string(Path::new(path))
        .expect("sample file")
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .count() as u64
}

#[test]
fn import_then_log_stats_show() {
    let s = Sandbox::init();
    assert_eq!(s.commit_count(), 0);
    let out = s.ok(&["import", CORPUS, "-m", "sample"]);
    assert!(out.starts_with("imported "), "{out}");

    let log = s.json(&["log", "--json"]);
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 1);
    let head = log[0]["commit"].as_str().unwrap().to_string();
    assert_eq!(head.len(), 64);
    assert_eq!(log[0]["message"], "sample");
    assert_eq!(log[0]["parents"], serde_json::json!([]));
    for key in ["timestamp_ms", "author", "node_count", "edge_count"] {
        assert!(log[0].get(key).is_some(), "log entry lacks {key}");
    }
    assert!(s.ok(&["log"]).contains("sample"));

    let nodes = count_lines(CORPUS, "node");
    let edges = count_lines(CORPUS, "edge");
    let stats = s.json(&["stats", "--json"]);
    assert_eq!(stats["commit"], head.as_str());
    assert!(stats["node_root"].is_string());
    assert_eq!(stats["nodes"], nodes);
    assert_eq!(stats["edges"], edges);
    assert_eq!(log[0]["node_count"], nodes);

    let node = s.json(&["show", "doc-4", "--json"]);
    assert_eq!(node["commit"], head.as_str());
    assert_eq!(node["id"], "doc-4");
    assert!(node["text"].as_str().unwrap().contains("1.45"));
    assert_eq!(node["embeddings"]["tiny"].as_array().unwrap().len(), 8);
    assert_eq!(node["props"]["year"], 2020);
    let human = s.ok(&["show", "fact-tunnel-speed-2019"]);
    assert!(human.contains("tiny: dim 8"), "{human}");
    assert!(
        human.contains("from 2019-01-01T00:00:00Z until 2023-03-01T00:00:00Z"),
        "{human}"
    );

    let err = s.fails_stderr(&["show", "doc-999"], 1);
    assert!(
        err.starts_with("error: ") && err.contains("doc-999") && err.contains("not found"),
        "{err}"
    );
}

#[test]
fn diff_between_two_imports() {
    let s = Sandbox::init();
    s.ok(&["import", CORPUS]);
    s.ok(&["import", UPDATE]);
    assert_eq!(s.commit_count(), 2);

    let diff = s.json(&["diff", "HEAD~1", "HEAD", "--json"]);
    let changes = |field: &str, id: fn(&Value) -> String| -> Vec<String> {
        diff[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| format!("{} {}", c["kind"].as_str().unwrap(), id(c)))
            .collect()
    };
    assert_eq!(
        changes("nodes", |c| c["id"].as_str().unwrap().to_string()),
        [
            "changed concept-stall",
            "removed doc-11",
            "changed doc-4",
            "changed fact-team-lead",
            "added fact-team-lead-2024",
        ]
    );
    let edge = |c: &Value| {
        let k = &c["key"];
        format!(
            "{}-{}-{}",
            k["source"].as_str().unwrap(),
            k["kind"].as_str().unwrap(),
            k["target"].as_str().unwrap()
        )
    };
    assert_eq!(
        changes("edges", edge),
        [
            "removed doc-11-authored_by-person-weber",
            "removed doc-14-cites-doc-11",
            "added fact-team-lead-2024-about-person-aoyama",
        ]
    );

    let human = s.ok(&["diff", "HEAD~1", "HEAD"]);
    for line in [
        "~ node doc-4",
        "- node doc-11",
        "+ node fact-team-lead-2024",
        "+ edge (fact-team-lead-2024)-[about]->(person-aoyama)",
    ] {
        assert!(human.lines().any(|l| l == line), "missing {line:?} in\n{human}");
    }
    // The fact's validity was closed; the old revision still shows it open.
    let now = s.json(&["show", "fact-team-lead", "--json"]);
    assert!(now["valid_until"].is_i64());
    let before = s.json(&["show", "fact-team-lead", "--at", "HEAD~1", "--json"]);
    assert!(before.get("valid_until").is_none());
    assert!(s.ok(&["diff", "HEAD", "HEAD"]).starts_with("no changes between"));
    // What changed, field by field: the fact's validity was closed.
    assert!(
        human.contains("~ node fact-team-lead\n    valid_until: null -> \"20"),
        "{human}"
    );
    let fields = &diff["nodes"][3]["fields"];
    assert_eq!(fields[0]["field"], "valid_until", "{fields}");
    assert_eq!(fields[0]["before"], "null");
    // One revision alone: compared with its first parent.
    assert_eq!(s.ok(&["diff", "HEAD"]), human);
    let err = s.fails_stderr(&["diff", "HEAD~1"], 1);
    assert!(err.contains("root commit"), "{err}");
}

#[test]
fn malformed_line_is_refused_and_nothing_is_committed() {
    let s = Sandbox::init();
    s.ok(&["import", CORPUS]);
    let bad = s.file(
        "bad.jsonl",
        "{\"node\": {\"id\": \"n1\"}}\n{\"node\": {\"id\": \"n2\"}}\n{\"node\": {\"id\": \"n3\"\n",
    );
    let err = s.fails_stderr(&["import", bad.as_str()], 1);
    assert!(err.starts_with("error: line 3:"), "{err}");
    assert_eq!(s.commit_count(), 1);
    s.fails_stderr(&["show", "n1"], 1);
}

#[test]
fn dimension_mismatch_is_refused_and_nothing_is_committed() {
    // Within one file, on an empty repository.
    let s = Sandbox::init();
    let bad = s.file(
        "dims.jsonl",
        "{\"node\": {\"id\": \"a\", \"embeddings\": {\"tiny\": [1, 0, 0]}}}\n\
         {\"node\": {\"id\": \"b\", \"embeddings\": {\"tiny\": [1, 0, 0, 0]}}}\n",
    );
    let err = s.fails_stderr(&["import", bad.as_str()], 1);
    assert!(err.contains("line 2") && err.contains("dimensions"), "{err}");
    assert_eq!(s.commit_count(), 0);

    // Against the dimension the repository already has for the model.
    s.ok(&["import", CORPUS]);
    let bad = s.file(
        "dims2.jsonl",
        "{\"node\": {\"id\": \"a\", \"embeddings\": {\"tiny\": [1, 0, 0, 0, 0, 0, 0, 0]}}}\n\
         {\"node\": {\"id\": \"b\", \"embeddings\": {\"tiny\": [1, 0, 0]}}}\n",
    );
    let err = s.fails_stderr(&["import", bad.as_str()], 1);
    assert!(err.contains("line 2"), "{err}");
    assert_eq!(s.commit_count(), 1);
}

#[test]
fn import_reads_standard_input() {
    let s = Sandbox::init();
    let mut child = s
        .command()
        .args(["import", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn cairn");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"node\": {\"id\": \"a\", \"text\": \"from stdin\"}}\n\n{\"patch\": {\"id\": \"a\", \"text\": \"patched\"}}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["operations"], 2);
    assert_eq!(s.json(&["log", "--json"])[0]["message"], "import standard input");
}

#[test]
fn unknown_revision_is_a_clear_error() {
    let s = Sandbox::init();
    let err = s.fails_stderr(&["stats"], 1);
    assert!(err.contains("no commits yet"), "{err}");
    s.ok(&["import", CORPUS]);
    for args in [
        &["log", "nope"][..],
        &["stats", "--at", "nope"],
        &["diff", "HEAD", "nope"],
        &["show", "doc-1", "--at", "nope"],
    ] {
        let err = s.fails_stderr(args, 1);
        assert!(err.starts_with("error: unknown revision `nope`"), "{args:?}: {err}");
    }
    let err = s.fails_stderr(&["log", "HEAD~3"], 1);
    assert!(err.contains("HEAD~3"), "{err}");
}

#[test]
fn branches_create_list_switch_delete() {
    let s = Sandbox::init();
    assert_eq!(s.ok(&["branch"]).trim(), "* main  (no commits)");
    s.ok(&["import", CORPUS]);
    let head = s.json(&["stats", "--json"])["commit"].as_str().unwrap().to_string();

    assert!(s.ok(&["branch", "create", "topic"]).contains(&head[..12]));
    s.ok(&["branch", "create", "old", "--at", &head[..8]]);
    let err = s.fails_stderr(&["branch", "create", "topic"], 1);
    assert!(err.contains("already exists"), "{err}");

    s.ok(&["branch", "switch", "topic"]);
    let list = s.ok(&["branch", "list"]);
    let marked: Vec<&str> = list.lines().filter(|l| l.starts_with('*')).collect();
    assert_eq!(marked.len(), 1);
    assert!(marked[0].starts_with("* topic"), "{list}");
    assert_eq!(list.lines().count(), 3);

    s.ok(&["import", UPDATE]);
    assert_eq!(s.commit_count(), 2);
    let err = s.fails_stderr(&["branch", "delete", "topic"], 1);
    assert!(err.contains("current branch"), "{err}");
    s.ok(&["branch", "switch", "main"]);
    assert_eq!(s.commit_count(), 1);
    assert!(s.ok(&["diff", "main", "topic"]).contains("+ node fact-team-lead-2024"));
    s.ok(&["branch", "delete", "topic"]);
    s.ok(&["branch", "delete", "old"]);
    assert_eq!(s.ok(&["branch"]).lines().count(), 1);
    let err = s.fails_stderr(&["branch", "switch", "topic"], 1);
    assert!(err.contains("unknown branch `topic`"), "{err}");
}

#[test]
fn fsck_passes_on_a_sound_repository() {
    let s = Sandbox::init();
    s.ok(&["import", CORPUS]);
    assert!(s.ok(&["fsck"]).ends_with(": ok\n"));
    let report = s.json(&["fsck", "--json"]);
    assert_eq!(report["problems"], serde_json::json!([]));
    assert_eq!(report["commits_checked"], 1);
}

#[test]
fn usage_and_repository_errors() {
    let s = Sandbox::new();
    let err = s.fails_stderr(&["log"], 1);
    assert!(err.contains("no cairn repository"), "{err}");
    assert!(
        err.contains("hint: create one with `cairn init`") && err.contains("CAIRN_REPO"),
        "{err}"
    );
    assert!(!s.repo().exists(), "a failed open must not create the repository");
    s.fails_stderr(&["frobnicate"], 2);
    s.fails_stderr(&["show"], 2);
    s.fails_stderr(&["show", ""], 2);

    s.ok(&["init"]);
    let err = s.fails_stderr(&["init"], 1);
    assert!(err.contains("already exists"), "{err}");

    // `--repo` falls back to $CAIRN_REPO, then to `.cairn` in the working directory.
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["log", "--json"])
        .env("CAIRN_REPO", s.repo())
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .arg("init")
        .current_dir(s.dir.path())
        .env_remove("CAIRN_REPO")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(s.dir.path().join(".cairn").is_dir());
}

/// `cairn log` on a new repository says there is nothing yet (on standard error) instead
/// of printing nothing; standard output and `--json` stay empty lists.
#[test]
fn log_of_a_new_repository_says_so() {
    let s = Sandbox::init();
    let out = s.run(&["log"]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "standard output stays the (empty) list");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no commits yet"), "{err}");
    assert_eq!(s.json(&["log", "--json"]), serde_json::json!([]));
}
