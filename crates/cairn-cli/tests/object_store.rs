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
