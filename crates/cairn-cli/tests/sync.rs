//! `cairn remote`, `clone`, `fetch`, `pull` and `push` between two repositories on disk.

mod common;

use std::path::Path;
use std::process::Command;

use common::Sandbox;

/// Runs cairn on the repository at `repo`; returns (exit code, stdout, stderr).
fn on(repo: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .arg("--repo")
        .arg(repo)
        .env_remove("CAIRN_REPO")
        .env_remove("CAIRN_REMOTE")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn ok(repo: &Path, args: &[&str]) -> String {
    let (code, out, err) = on(repo, args);
    assert_eq!(code, 0, "cairn {args:?}: {err}");
    out
}

#[test]
fn clone_push_fetch_pull_round_trip() {
    let up = Sandbox::sample();
    let upstream = up.repo();
    let head = up.rev("HEAD");
    let copy = up.dir.path().join("copy");
    let out = ok(
        &upstream,
        &["clone", upstream.to_str().unwrap(), copy.to_str().unwrap()],
    );
    assert!(out.contains(&format!("(branch main at {})", &head[..12])), "{out}");
    assert!(ok(&copy, &["remote"]).starts_with("origin  "));
    assert_eq!(
        ok(&copy, &["log", "origin/main", "-n", "1", "--json"]),
        ok(&upstream, &["log", "HEAD", "-n", "1", "--json"])
    );
    // A commit in the clone, pushed.
    let note = up.file(
        "note.jsonl",
        "{\"node\": {\"id\": \"from-the-clone\", \"text\": \"pushed\"}}\n",
    );
    ok(&copy, &["import", &note]);
    let out = ok(&copy, &["push"]);
    assert!(out.starts_with("origin/main  "), "{out}");
    assert!(ok(&upstream, &["show", "from-the-clone"]).contains("pushed"));
    // The upstream moves on; the clone's next push is refused until it pulls.
    let other = up.file(
        "other.jsonl",
        "{\"node\": {\"id\": \"upstream-only\", \"text\": \"elsewhere\"}}\n",
    );
    ok(&upstream, &["import", &other]);
    let third = up.file("third.jsonl", "{\"node\": {\"id\": \"clone-again\"}}\n");
    ok(&copy, &["import", &third]);
    let (code, _, err) = on(&copy, &["push"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("refused") && err.contains("fetch and merge first"),
        "{err}"
    );
    let out = ok(&copy, &["fetch"]);
    assert!(out.contains("origin/main  ") && out.contains("fetched "), "{out}");
    let out = ok(&copy, &["pull"]);
    assert!(out.contains("merged: main at "), "{out}");
    ok(&copy, &["push"]);
    assert!(ok(&upstream, &["show", "clone-again"]).contains("clone-again"));
    assert!(ok(&copy, &["show", "upstream-only"]).contains("elsewhere"));
    ok(&copy, &["fsck"]);
    ok(&upstream, &["fsck"]);
    // Unknown remotes and unsupported URLs are refused, naming them.
    let (code, _, err) = on(&copy, &["fetch", "nowhere"]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown remote `nowhere`"), "{err}");
    let (code, _, err) = on(&copy, &["remote", "add", "bucket", "s3://bucket/prefix"]);
    assert_ne!(code, 0);
    assert!(err.contains("not supported yet"), "{err}");
}
