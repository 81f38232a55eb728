//! `cairn` on a repository in object storage (moto's S3 server on loopback; skipped, with
//! a message, where it cannot start): `init URL`, `--repo URL` for every command, and
//! `clone`, `push`, `fetch` with an `s3://` remote.

mod common;

use std::process::Command;

use common::{Sandbox, CORPUS, UPDATE};

/// `cairn --repo <repo> ARGS`, which must succeed; its stdout.
fn cairn(repo: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .arg("--repo")
        .arg(repo)
        .args(args)
        .env_remove("CAIRN_REPO")
        .output()
        .expect("run cairn");
    assert!(
        out.status.success(),
        "cairn {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_bucket_repository_through_the_cli() {
    // Sets the AWS_* variables the `cairn` processes inherit.
    let Some(moto) = cairn_testkit::moto() else { return };
    let url = format!("{}/memory", moto.new_bucket("cli"));
    let s = Sandbox::new();
    let made = s.ok(&["init", &url]);
    assert!(made.contains(&url), "{made}");
    cairn(&url, &["import", CORPUS]);
    let query = ["retrieve", "--text", "wing", "--json"];
    let in_bucket = cairn(&url, &query);
    assert!(cairn(&url, &["fsck"]).contains("ok"), "fsck on the bucket");

    // Clone to a path: the same answer; a change pushed back; the bucket answers alike.
    let copy = s.dir.path().join("copy");
    let copy = copy.to_str().unwrap();
    cairn(copy, &["clone", &url, copy]);
    assert_eq!(cairn(copy, &query), in_bucket, "byte-identical in the clone");
    cairn(copy, &["import", UPDATE]);
    cairn(copy, &["push"]);
    assert_eq!(cairn(&url, &query), cairn(copy, &query));
    let commits = |repo: &str| {
        let log: serde_json::Value = serde_json::from_str(&cairn(repo, &["log", "--json"])).unwrap();
        log.as_array().unwrap().len()
    };
    assert_eq!(commits(&url), 2);
    assert_eq!(commits(copy), 2);
    // A second path repository fetches from the bucket as a named remote.
    let other = s.dir.path().join("other");
    let other = other.to_str().unwrap();
    cairn(other, &["init"]);
    cairn(other, &["remote", "add", "cloud", &url]);
    cairn(other, &["fetch", "cloud"]);
    cairn(other, &["pull", "cloud"]);
    assert_eq!(cairn(other, &query), cairn(&url, &query));
}

/// The head of `repo` (`cairn log -n 1 --json`).
fn head(repo: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(&cairn(repo, &["log", "-n", "1", "--json"])).unwrap();
    v[0]["commit"].as_str().unwrap().to_string()
}

/// A push to a bucket killed (SIGKILL) at a spread of moments leaves the bucket's branch
/// at the old head or the new one, `fsck` on the bucket passes, and pushing again
/// completes; a clone from the bucket killed part-way leaves no target or a complete one.
#[test]
fn killed_pushes_to_a_bucket_and_clones_from_it_leave_it_sound() {
    let Some(moto) = cairn_testkit::moto() else { return };
    let url = format!("{}/memory", moto.new_bucket("cli-kill"));
    let s = Sandbox::new();
    s.ok(&["init", &url]);
    cairn(&url, &["import", CORPUS]);
    let work = s.dir.path().join("work");
    let work = work.to_str().unwrap();
    cairn(work, &["clone", &url, work]);
    let mut push_time = std::time::Duration::ZERO;
    for k in 0..4u32 {
        let old = head(&url);
        let lines: String = (0..300)
            .map(|i| format!("{{\"node\": {{\"id\": \"k{k}-{i:04}\", \"text\": \"note {i} of round {k}\"}}}}\n"))
            .collect();
        let file = s.dir.path().join(format!("round{k}.jsonl"));
        std::fs::write(&file, lines).unwrap();
        cairn(work, &["import", file.to_str().unwrap()]);
        let new = head(work);
        if k > 0 {
            common::run_killed_after(&["--repo", work, "push"], push_time * k / 4);
            let now = head(&url);
            assert!(now == old || now == new, "kill {k}: the bucket's branch at {now}");
            assert!(cairn(&url, &["fsck"]).contains("ok"), "kill {k}: fsck on the bucket");
        }
        let t = std::time::Instant::now();
        cairn(work, &["push"]);
        if k == 0 {
            push_time = t.elapsed();
        }
        assert_eq!(head(&url), new, "round {k}: pushing again completes");
    }
    let want = head(&url);
    for k in 1..4u32 {
        let target = s.dir.path().join(format!("clone{k}"));
        let target = target.to_str().unwrap();
        common::run_killed_after(&["clone", &url, target], push_time * k / 4);
        if std::path::Path::new(target).exists() {
            assert!(cairn(target, &["fsck"]).contains("ok"));
            assert_eq!(head(target), want, "kill {k}: a clone that exists is complete");
        }
    }
}
