//! Moving commits between repositories on one machine: `cargo bench --bench remotes`.
//!
//! An upstream repository of N nodes (the shared benchmark corpus, `common::node`,
//! imported in commits of 10,000; segment store) is cloned, then: the clone's first query
//! (cold: it builds the indexes) and a warm one; a one-node commit in the clone pushed;
//! a one-node commit upstream fetched. Then the same through a `cairn serve` server on
//! loopback (`http://` remotes, the sync protocol): a clone, a one-node push from a second
//! clone, and the first clone's fetch of it. Each row gives the time, the objects and bytes
//! that moved, and the process's peak RSS so far.
//!
//! Settings: `CAIRN_BENCH_NODES` (100,000). Repositories live in a temporary directory.

mod common;

use std::time::{Duration, Instant};

use cairn::{Repo, TransferStats};

fn row(what: &str, took: Duration, moved: Option<TransferStats>) {
    let (objects, bytes) = moved.map_or(("—".to_string(), "—".to_string()), |t| {
        (t.objects.to_string(), t.bytes.to_string())
    });
    let (_, peak) = cairn_testkit::rss_mib();
    println!(
        "| {what} | {:.1} ms | {objects} | {bytes} | {peak:.0} MiB |",
        took.as_secs_f64() * 1e3
    );
}

fn main() {
    let n = common::env_usize("CAIRN_BENCH_NODES", 100_000).max(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let up_path = dir.path().join("up");
    let mut rng = common::Rng(0x5eed);
    {
        let up = Repo::init(&up_path).expect("init");
        common::import_corpus(&up, n, &mut rng);
    }
    let url = up_path.to_str().expect("utf-8 path").to_string();
    println!("{n} nodes, segment store, paths on one disk\n");
    println!("| step | time | objects moved | bytes moved | peak RSS |");
    println!("|---|---:|---:|---:|---:|");
    // A clone's transfer, measured as the fetch it is (init + remote + fetch).
    let (probe, took, moved) = common::timed_init_and_fetch(&dir.path().join("probe"), &url);
    row("init + fetch of every branch (what a clone moves)", took, Some(moved));
    drop(probe);
    let t = Instant::now();
    let clone = Repo::clone_from(&url, dir.path().join("clone")).expect("clone");
    row("clone_from", t.elapsed(), None);
    let t = Instant::now();
    common::hybrid_query(&clone, &mut rng);
    row("first query on the clone (builds its indexes)", t.elapsed(), None);
    let t = Instant::now();
    common::hybrid_query(&clone, &mut rng);
    row("warm query on the clone", t.elapsed(), None);
    common::commit_one_node(&clone, "doc-pushed", &mut rng);
    let t = Instant::now();
    let pushed = clone.push("origin", None, false).expect("push");
    row("push of a 1-node commit", t.elapsed(), Some(pushed.transfer));
    {
        let up = Repo::open(&up_path).expect("open");
        common::commit_one_node(&up, "doc-fetched", &mut rng);
    }
    let t = Instant::now();
    let fetched = clone.fetch("origin").expect("fetch");
    row("fetch of a 1-node commit", t.elapsed(), Some(fetched.transfer));
    let t = Instant::now();
    let (_, merge) = clone.pull("origin", None).expect("pull");
    merge.commit("pull").expect("fast-forward");
    row("pull (nothing new to fetch; fast-forward)", t.elapsed(), None);
    drop(clone);

    // The same through a server on loopback.
    let served = Repo::open(&up_path).expect("open");
    let server = cairn_server::RunningServer::start(
        cairn_server::Server::new(
            cairn_server::Repos::Single(served),
            cairn_server::ServerOptions::default(),
        ),
        "127.0.0.1:0".parse().expect("addr"),
    )
    .expect("serve");
    let http = server.url();
    let (probe, took, moved) = common::timed_init_and_fetch(&dir.path().join("http-probe"), &http);
    row(
        "server: init + fetch of every branch (what a clone moves)",
        took,
        Some(moved),
    );
    drop(probe);
    let t = Instant::now();
    let a = Repo::clone_from(&http, dir.path().join("http-a")).expect("clone");
    row("server: clone_from", t.elapsed(), None);
    let b = Repo::clone_from(&http, dir.path().join("http-b")).expect("clone");
    common::commit_one_node(&b, "doc-http", &mut rng);
    let t = Instant::now();
    let pushed = b.push("origin", None, false).expect("push");
    row("server: push of a 1-node commit", t.elapsed(), Some(pushed.transfer));
    let t = Instant::now();
    let fetched = a.fetch("origin").expect("fetch");
    row("server: fetch of a 1-node commit", t.elapsed(), Some(fetched.transfer));
    server.shutdown().expect("shutdown");
}
