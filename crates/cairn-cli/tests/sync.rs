//! `cairn remote`, `clone`, `fetch`, `pull` and `push` between two repositories on disk.

mod common;

use std::path::Path;
use std::process::Command;

use common::Sandbox;

/// Runs cairn on the repository at `repo`; returns (exit code, stdout, stderr).
fn on(repo: &Path, args: &[&str]) -> (i32, String, String) {
    at(&["--repo", repo.to_str().unwrap()], args)
}

/// Runs cairn with `place` (`--repo PATH` or `--remote URL`); returns (exit code, stdout,
/// stderr).
fn at(place: &[&str], args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(place)
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

/// [`ok`] on the repository a `cairn serve` at `url` serves.
fn remote_ok(url: &str, args: &[&str]) -> String {
    let (code, out, err) = at(&["--remote", url], args);
    assert_eq!(code, 0, "cairn --remote {url} {args:?}: {err}");
    out
}

/// The head commit a `cairn log -n 1 --json` printed.
fn logged_head(log: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(log).unwrap();
    v[0]["commit"].as_str().unwrap().to_string()
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
    let branches = ok(&copy, &["branch", "list", "--remotes"]);
    assert!(
        branches.contains(&format!("  origin/main  {}", &head[..12])),
        "{branches}"
    );
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
    let (code, _, err) = on(&copy, &["remote", "add", "web", "https://localhost:7700"]);
    assert_ne!(code, 0);
    assert!(err.contains("not supported yet"), "{err}");
}

/// JSON Lines of `n` nodes with text, from id `prefix-0`.
fn nodes(s: &Sandbox, prefix: &str, n: usize) -> String {
    let mut lines = String::new();
    for i in 0..n {
        lines.push_str(&format!(
            "{{\"node\": {{\"id\": \"{prefix}-{i:05}\", \"text\": \"note {i} about {prefix}\", \"embeddings\": {{\"m\": [{}, 1.0]}}}}}}\n",
            (i % 17) as f32 / 17.0
        ));
    }
    s.file(&format!("{prefix}.jsonl"), &lines)
}

fn head_of(repo: &Path) -> String {
    logged_head(&ok(repo, &["log", "-n", "1", "--json"]))
}

/// `cairn push` and `cairn clone` killed (SIGKILL) at a spread of moments: the remote's
/// branch is at the old head or the new one and fsck passes, and pushing again completes;
/// a killed clone leaves no target directory, or a complete one.
#[test]
fn killed_push_and_clone_leave_the_target_as_before_or_complete() {
    let s = Sandbox::init();
    let up = s.repo();
    ok(&up, &["import", &nodes(&s, "base", 3000)]);
    let old = head_of(&up);
    let work = s.dir.path().join("work");
    ok(&up, &["clone", up.to_str().unwrap(), work.to_str().unwrap()]);
    ok(&work, &["import", &nodes(&s, "new", 3000)]);
    let new = head_of(&work);
    // Undisturbed, on copies.
    let time = |k: &str| {
        let (u, w) = (s.dir.path().join(format!("u{k}")), s.dir.path().join(format!("w{k}")));
        common::copy_tree(&up, &u);
        common::copy_tree(&work, &w);
        ok(&w, &["remote", "remove", "origin"]);
        ok(&w, &["remote", "add", "origin", u.to_str().unwrap()]);
        (u, w)
    };
    let (u, w) = time("-timed");
    let t = std::time::Instant::now();
    ok(&w, &["push"]);
    let push_time = t.elapsed();
    assert_eq!(head_of(&u), new);
    for k in 0..6u32 {
        let (u, w) = time(&k.to_string());
        common::run_killed_after(
            &["--repo", w.to_str().unwrap(), "push"],
            push_time.mul_f64(f64::from(k) / 6.0),
        );
        let now = head_of(&u);
        assert!(now == old || now == new, "kill {k}: upstream at {now}");
        ok(&u, &["fsck"]);
        ok(&w, &["push"]);
        assert_eq!(head_of(&u), new, "kill {k}: pushing again completes");
        ok(&u, &["fsck"]);
    }
    // Clone.
    let t = std::time::Instant::now();
    ok(
        &up,
        &[
            "clone",
            work.to_str().unwrap(),
            s.dir.path().join("c-timed").to_str().unwrap(),
        ],
    );
    let clone_time = t.elapsed();
    for k in 0..6u32 {
        let target = s.dir.path().join(format!("c{k}"));
        common::run_killed_after(
            &["clone", work.to_str().unwrap(), target.to_str().unwrap()],
            clone_time.mul_f64(f64::from(k) / 6.0),
        );
        if target.exists() {
            ok(&target, &["fsck"]);
            assert_eq!(head_of(&target), new, "kill {k}: a clone that exists is complete");
        } else {
            ok(&up, &["clone", work.to_str().unwrap(), target.to_str().unwrap()]);
            assert_eq!(head_of(&target), new);
        }
    }
    // The clones that completed removed what the killed ones left beside their targets.
    let staging: Vec<String> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".cloning-"))
        .collect();
    assert!(staging.is_empty(), "{staging:?}");
}

/// The head of the served repository, through `cairn --remote URL log`.
fn served_head(url: &str) -> String {
    logged_head(&remote_ok(url, &["log", "-n", "1", "--json"]))
}

/// Clone, push and pull through `cairn serve`; a push to the server killed (SIGKILL) at a
/// spread of moments leaves the served branch at the old head or the new one, `fsck`
/// passes, and pushing again completes.
#[test]
fn clone_push_and_killed_pushes_through_a_server() {
    let s = Sandbox::init();
    let up = s.repo();
    ok(&up, &["import", &nodes(&s, "base", 2000)]);
    let server = common::Served::start(&s, &[]);
    let url = server.url.clone();
    let work = s.dir.path().join("work");
    ok(&up, &["clone", &url, work.to_str().unwrap()]);
    assert_eq!(head_of(&work), served_head(&url));
    let mut push_time = std::time::Duration::ZERO;
    for k in 0..5u32 {
        let old = served_head(&url);
        ok(&work, &["import", &nodes(&s, &format!("round{k}"), 2000)]);
        let new = head_of(&work);
        if k > 0 {
            common::run_killed_after(&["--repo", work.to_str().unwrap(), "push"], push_time * k / 5);
            let now = served_head(&url);
            assert!(now == old || now == new, "kill {k}: served branch at {now}");
        }
        let t = std::time::Instant::now();
        ok(&work, &["push"]);
        if k == 0 {
            push_time = t.elapsed();
        }
        assert_eq!(served_head(&url), new, "round {k}: pushing again completes");
        remote_ok(&url, &["fsck"]);
    }
    // A second clone sees the pushed head.
    let new = head_of(&work);
    let other = s.dir.path().join("other");
    ok(&up, &["clone", &url, other.to_str().unwrap()]);
    assert_eq!(head_of(&other), new);
    drop(server); // killed (SIGKILL)
    ok(&up, &["fsck"]);
    assert_eq!(head_of(&up), new);
}
