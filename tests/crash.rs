//! Crash safety: a child process commits in a loop and reports each commit id as soon as
//! `commit()` returns; the parent kills it with SIGKILL at random moments, reopens the
//! repository, and checks that every reported commit is there and `fsck` passes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cairn::{CommitId, Node, NodeId, Repo};

const CHILD_ENV: &str = "CAIRN_CRASH_CHILD_REPO";

/// The child's body: runs only when the parent re-executes this test binary with the
/// environment variable set.
#[test]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    let repo = Repo::open(&path).expect("child opens the repo");
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        let mut tx = repo.transaction().expect("tx");
        // A few nodes per commit, with vectors, so commits write real bytes.
        for j in 0..4 {
            let id = NodeId::new(format!("n-{i}-{j}")).expect("id");
            tx.put_node(
                Node::new(id)
                    .with_label("Crash")
                    .with_text(format!("commit {i} node {j}"))
                    .with_embedding("m", vec![i as f32, j as f32, 1.0, 0.5]),
            )
            .expect("put");
        }
        let id = tx.commit(&format!("commit {i}")).expect("commit");
        writeln!(out, "{id}").expect("report");
        out.flush().expect("flush");
    }
}

#[test]
fn commits_survive_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("repo");
    Repo::init(&path).expect("init");
    let exe = std::env::current_exe().expect("current exe");
    let mut reported: Vec<CommitId> = Vec::new();
    // Deterministic "random" kill delays (xorshift), 20..=220 ms.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let kills = 20;
    for round in 0..kills {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(20 + seed % 200);
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("stdout");
        let reader = std::thread::spawn(move || {
            let mut ids = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(id) = CommitId::from_hex(line.trim()) {
                    ids.push(id);
                }
            }
            ids
        });
        let start = Instant::now();
        while start.elapsed() < delay {
            std::thread::sleep(Duration::from_millis(5));
        }
        // SIGKILL: no destructors, no flush.
        child.kill().expect("kill");
        child.wait().expect("wait");
        let ids = reader.join().expect("reader");
        reported.extend(ids);

        let repo = Repo::open(&path).unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        let log: std::collections::BTreeSet<CommitId> = repo
            .log(None, None)
            .expect("log")
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        for id in &reported {
            assert!(log.contains(id), "round {round}: reported commit {id} lost");
        }
        drop(repo);
    }
    let repo = Repo::open(&path).expect("reopen");
    let report = repo.fsck().expect("fsck");
    assert!(report.is_ok(), "fsck problems: {:?}", report.problems);
    assert!(
        !reported.is_empty(),
        "the child never committed: the test proved nothing"
    );
    eprintln!("{kills} kills, {} commits reported and all present", reported.len());
}
