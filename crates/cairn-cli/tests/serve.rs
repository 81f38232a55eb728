//! `cairn serve` as a process: `cairn --remote` prints what the local commands print,
//! tokens made by `cairn serve token add` work, and `kill -9` of the server in the middle
//! of imports loses no acknowledged import and leaves a repository `fsck` passes.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{Sandbox, Served, CORPUS};

/// `cairn --remote URL args` with an optional token; (status ok, stdout, stderr).
fn remote(s: &Sandbox, url: &str, token: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cairn"));
    c.arg("--remote")
        .arg(url)
        .args(args)
        .env_remove("CAIRN_REPO")
        .env_remove("CAIRN_TOKEN");
    c.current_dir(s.dir.path());
    if let Some(t) = token {
        c.env("CAIRN_TOKEN", t);
    }
    let out = c.output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const LOCAL_AND_REMOTE: &[&[&str]] = &[
    &["log", "--json"],
    &["log", "-n", "1", "--json"],
    &["stats", "--json"],
    &["stats", "--at", "HEAD~1", "--json"],
    &["show", "concept-lift", "--json"],
    &["show", "concept-lift", "--edges", "--valid-at", "2024-01-01", "--json"],
    &["history", "concept-lift", "--json"],
    &["history", "concept-lift"],
    &["history", "no-such-node"],
    &["retrieve", "--text", "wing stall", "--limit", "5", "--json"],
    &[
        "retrieve",
        "--spec",
        r#"{"text": "drag", "labels_all": ["Concept"], "explain": true}"#,
        "--json",
    ],
    &["ls", "--label", "Concept", "--limit", "3", "--json"],
    &["retrieve", "--text", "wing stall", "--limit", "5"],
    &["show", "concept-lift"],
    &["diff", "HEAD~1", "HEAD"],
    &["diff", "HEAD~1", "HEAD", "--json"],
    &["show", "concept-lift", "--edges", "--valid-at", "2024-01-01"],
    &["ls", "--label", "Concept", "--limit", "3"],
    &["log"],
    &["stats"],
];

#[test]
fn remote_commands_print_what_local_ones_print() {
    let s = Sandbox::sample();
    let local: Vec<String> = LOCAL_AND_REMOTE.iter().map(|args| s.ok(args)).collect();
    let served = Served::start(&s, &[]);
    for (args, want) in LOCAL_AND_REMOTE.iter().zip(&local) {
        let (ok, got, err) = remote(&s, &served.url, None, args);
        assert!(ok, "--remote {args:?}: {err}");
        assert_eq!(&got, want, "--remote {args:?}");
    }

    // A batch: one result line per spec, a bad line reported and counted.
    let batch = s.file(
        "batch.jsonl",
        "{\"text\": \"lift\"}\n{\"text\": \"x\", \"colour\": 1}\n\n{\"text\": \"drag\"}\n",
    );
    let (ok, out, err) = remote(&s, &served.url, None, &["retrieve", "--batch", &batch]);
    assert!(!ok);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(err.contains("line 2") && err.contains("colour"), "{err}");

    // An import through the server is one commit.
    let file = s.file(
        "one.jsonl",
        "{\"node\": {\"id\": \"remote-1\", \"text\": \"sent over HTTP\"}}\n",
    );
    let (ok, out, err) = remote(&s, &served.url, None, &["import", &file, "-m", "over http", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["operations"], 1);
    let (_, log, _) = remote(&s, &served.url, None, &["log", "-n", "1", "--json"]);
    assert!(log.contains("over http"));

    // Unsupported commands and flags say so.
    let (ok, _, err) = remote(&s, &served.url, None, &["gc"]);
    assert!(!ok && err.contains("not supported with --remote"), "{err}");
    let (ok, _, err) = remote(
        &s,
        &served.url,
        None,
        &["retrieve", "--text", "x", "--expand-hops", "2"],
    );
    assert!(!ok && err.contains("expand-hops"), "{err}");
    // A server error carries its code.
    let (ok, _, err) = remote(&s, &served.url, None, &["show", "no-such-node"]);
    assert!(!ok && err.contains("[not_found]"), "{err}");

    served.stop();
    // The server is gone: the repository opens locally again and holds the import.
    assert_eq!(s.commit_count(), 3);
    assert!(s.ok(&["fsck"]).contains(": ok"));
}

#[test]
fn tokens_from_token_add_open_the_server() {
    let s = Sandbox::sample();
    let config = s.dir.path().join("serve.json");
    let config = config.to_str().unwrap();
    let token = s.ok(&["serve", "token", "add", "default", "--config", config]);
    let token = token.trim();
    assert!(token.starts_with("cairn_"));
    assert!(
        !std::fs::read_to_string(config).unwrap().contains(token),
        "only the hash is stored"
    );
    let hashed = s.run_with_stdin(&["serve", "token", "hash"], token);
    assert!(std::fs::read_to_string(config)
        .unwrap()
        .contains(String::from_utf8(hashed.stdout).unwrap().trim()));

    let served = Served::start(&s, &["--config", config]);
    let (ok, out, err) = remote(&s, &served.url, Some(token), &["stats", "--json"]);
    assert!(ok, "{err}");
    assert!(out.contains("\"nodes\""));
    let (ok, _, err) = remote(&s, &served.url, None, &["stats"]);
    assert!(!ok && err.contains("[unauthorized]"), "{err}");
    assert!(err.contains("set CAIRN_TOKEN"), "{err}");
    let (ok, _, err) = remote(&s, &served.url, Some("cairn_wrong"), &["log"]);
    assert!(!ok && err.contains("[unauthorized]"), "{err}");
    assert!(err.contains("does not accept"), "{err}");
    served.stop();
}

#[test]
fn serve_refuses_a_public_address_without_a_config() {
    let s = Sandbox::init();
    let err = s.fails_stderr(&["serve", "--bind", "0.0.0.0:0"], 1);
    assert!(err.contains("without authentication"), "{err}");
}

/// Lines of one import: `per` nodes of round `round`, import `i`.
fn import_body(round: usize, i: usize, per: usize) -> String {
    (0..per)
        .map(|j| {
            format!(
                "{{\"node\": {{\"id\": \"r{round}-i{i}-n{j}\", \"labels\": [\"Doc\"], \"text\": \"wing stall vortex {round} {i} {j} lift drag boundary layer\"}}}}\n"
            )
        })
        .collect()
}

#[test]
fn kill_9_during_imports_keeps_every_acknowledged_import() {
    let s = Sandbox::init();
    s.ok(&["import", CORPUS]);
    let base_nodes = s.json(&["stats", "--json"])["nodes"].as_u64().unwrap();
    let mut acknowledged: Vec<String> = Vec::new();
    const ROUNDS: usize = 6;
    const PER_IMPORT: usize = 300;
    for round in 0..ROUNDS {
        let served = Served::start(&s, &[]);
        let url = served.url.clone();
        // Two writers import back to back until the connection dies.
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let url = url.clone();
                std::thread::spawn(move || {
                    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();
                    let mut acked = Vec::new();
                    for i in 0.. {
                        let body = import_body(round, w * 10_000 + i, PER_IMPORT);
                        match agent.post(&format!("{url}/import")).send_string(&body) {
                            Ok(r) => {
                                let v: serde_json::Value = serde_json::from_str(&r.into_string().unwrap()).unwrap();
                                acked.push(v["commit"].as_str().unwrap().to_string());
                            }
                            Err(ureq::Error::Status(code, r)) => {
                                panic!("import answered {code}: {}", r.into_string().unwrap())
                            }
                            Err(_) => break, // the server died
                        }
                    }
                    acked
                })
            })
            .collect();
        // Kill at a spread of moments (some imports done, some in flight).
        let delay = Duration::from_millis(150 + 90 * round as u64);
        let start = Instant::now();
        while start.elapsed() < delay {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut served = served;
        served.child.kill().unwrap(); // SIGKILL
        served.child.wait().unwrap();
        for w in writers {
            acknowledged.extend(w.join().unwrap());
        }

        // After the kill: the repository is sound and holds every acknowledged import.
        let fsck = s.json(&["fsck", "--json"]);
        assert_eq!(fsck["problems"], serde_json::json!([]), "round {round}: {fsck}");
        let log: Vec<String> = s
            .json(&["log", "--json"])
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["commit"].as_str().unwrap().to_string())
            .collect();
        for a in &acknowledged {
            assert!(log.contains(a), "round {round}: acknowledged import {a} is lost");
        }
        let stats = s.json(&["stats", "--json"]);
        assert!(stats["nodes"].as_u64().unwrap() >= base_nodes + (acknowledged.len() * PER_IMPORT) as u64);
    }
    assert!(!acknowledged.is_empty(), "no import was acknowledged before the kills");
}

/// `cairn clone` and `push` with an `http://` remote go through the same tokens: none or a
/// wrong one is refused (401, nothing made), the tenant's token clones, and pushes back.
#[test]
fn sync_routes_take_the_same_tokens() {
    let s = Sandbox::sample();
    let config = s.dir.path().join("serve.json");
    let config = config.to_str().unwrap();
    let token = s.ok(&["serve", "token", "add", "default", "--config", config]);
    let token = token.trim().to_string();
    let served = Served::start(&s, &["--config", config]);
    // `cairn ARGS` in the sandbox with `CAIRN_TOKEN` set to `token` (or unset).
    let cairn = |args: &[&std::ffi::OsStr], token: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cairn"));
        c.args(args)
            .current_dir(s.dir.path())
            .env_remove("CAIRN_REPO")
            .env_remove("CAIRN_REMOTE")
            .env_remove("CAIRN_TOKEN");
        if let Some(t) = token {
            c.env("CAIRN_TOKEN", t);
        }
        let out = c.output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let clone = |dir: &str, token: Option<&str>| cairn(&["clone".as_ref(), served.url.as_ref(), dir.as_ref()], token);
    let (ok, err) = clone("no-token", None);
    assert!(!ok && err.contains("401"), "{err}");
    assert!(!s.dir.path().join("no-token").exists());
    let (ok, err) = clone("wrong-token", Some("cairn_wrong"));
    assert!(!ok && err.contains("401"), "{err}");
    let (ok, err) = clone("copy", Some(&token));
    assert!(ok, "{err}");
    let copy = s.dir.path().join("copy");
    let push = |token: Option<&str>| cairn(&["--repo".as_ref(), copy.as_os_str(), "push".as_ref()], token);
    let note = s.dir.path().join("note.jsonl");
    std::fs::write(
        &note,
        "{\"node\": {\"id\": \"pushed-with-a-token\", \"text\": \"hi\"}}\n",
    )
    .unwrap();
    let (ok, err) = cairn(
        &["--repo".as_ref(), copy.as_os_str(), "import".as_ref(), note.as_os_str()],
        None,
    );
    assert!(ok, "{err}");
    let (ok, err) = push(None);
    assert!(!ok && err.contains("401"), "{err}");
    let (ok, err) = push(Some(&token));
    assert!(ok, "{err}");
    let (ok, out, err) = remote(&s, &served.url, Some(&token), &["show", "pushed-with-a-token"]);
    assert!(ok && out.contains("hi"), "{err}");
    served.stop();
}
