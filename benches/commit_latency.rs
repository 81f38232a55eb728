//! The latency tail of one-node commits: `cargo bench --bench commit_latency`.
//!
//! A repository of N nodes (the shared benchmark corpus, `common::node`; imported in
//! commits of 10,000) takes 1,000 commits that each replace one node, back to back; then
//! one query builds its indexes and it takes 1,000 more, each followed by a multi-lane
//! query (text + vector + label gate; not timed), as an agent interleaves them: queries
//! store derived data that the next commit's flush writes. Each commit is timed from
//! `transaction()` to the return of `commit()`. A row gives p50, p90, p99, p99.9, max,
//! mean, the first commit, the commits over 10 ms, and the slowest five with their start
//! time since the row's first commit (a regular spacing points at a periodic task).
//!
//! Settings (environment): `CAIRN_BENCH_NODES` (100,000), `CAIRN_BENCH_COMMITS` (1,000),
//! `CAIRN_BENCH_STORE` (one store kind; by default `memory`, `segment` and `sled`, each in
//! a child process of its own). On-disk repositories live in a temporary directory.

mod common;

use std::time::{Duration, Instant};

use cairn::{Node, NodeId, Repo};

const IMPORT_BATCH: usize = 10_000;
const DIM: usize = 384;
const SLOW: Duration = Duration::from_millis(10);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `q`-quantile of sorted latencies (nearest rank).
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// A multi-lane query (text + vector + label gate), as an agent runs between commits.
fn query(repo: &Repo, rng: &mut common::Rng) {
    repo.retrieve()
        .label("Document")
        .vector("minilm", &common::unit_vector(rng, DIM))
        .text(common::text(rng, 4))
        .token_budget(2000)
        .limit(100)
        .exact()
        .execute()
        .expect("retrieve");
}

/// `commits` one-node commits on `repo` (of `n` nodes), each followed by a query if
/// `queries`; prints one table row of their latencies.
fn commits_row(repo: &Repo, kind: &str, n: usize, commits: usize, queries: bool, import: Duration, salt: u64) {
    let mut edit_rng = common::Rng(0xc0ffee ^ salt);
    let mut lat = Vec::with_capacity(commits);
    let mut starts = Vec::with_capacity(commits);
    let first = Instant::now();
    for c in 0..commits {
        let i = (c * 7919 + salt as usize) % n;
        let node = Node::new(NodeId::new(format!("doc-{i:07}")).expect("id"))
            .with_label(if i.is_multiple_of(1000) { "Rare" } else { "Document" })
            .with_text(common::text(&mut edit_rng, 50))
            .with_embedding("minilm", common::unit_vector(&mut edit_rng, DIM));
        let t = Instant::now();
        starts.push(t - first);
        let mut tx = repo.transaction().expect("tx");
        tx.put_node(node).expect("put");
        tx.commit("edit").expect("commit");
        lat.push(t.elapsed());
        if queries {
            query(repo, &mut edit_rng);
        }
    }
    let mut order: Vec<usize> = (0..commits).collect();
    order.sort_by_key(|&c| std::cmp::Reverse(lat[c]));
    let slowest: Vec<String> = order
        .iter()
        .take(5)
        .map(|&c| format!("{:.0} ms @ {:.2} s", ms(lat[c]), starts[c].as_secs_f64()))
        .collect();
    let slow = lat.iter().filter(|&&d| d > SLOW).count();
    let mean = ms(lat.iter().sum::<Duration>()) / commits as f64;
    let first_ms = ms(lat[0]);
    let mut sorted = lat;
    sorted.sort();
    println!(
        "| {kind} | {} | {n} | {:.1} s | {commits} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {mean:.2} | {first_ms:.2} | {slow} | {} |",
        if queries { "a query after each" } else { "back to back" },
        import.as_secs_f64(),
        ms(quantile(&sorted, 0.5)),
        ms(quantile(&sorted, 0.9)),
        ms(quantile(&sorted, 0.99)),
        ms(quantile(&sorted, 0.999)),
        ms(sorted[sorted.len() - 1]),
        slowest.join(", "),
    );
}

fn run_store(kind: &str, n: usize, commits: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = common::open_store(kind, dir.path());
    let mut rng = common::Rng(0x5eed);
    let t = Instant::now();
    for start in (0..n).step_by(IMPORT_BATCH) {
        let mut tx = repo.transaction().expect("tx");
        for i in start..(start + IMPORT_BATCH).min(n) {
            tx.put_node(common::node(&mut rng, i)).expect("put");
        }
        tx.commit("import").expect("commit");
    }
    let import = t.elapsed();
    commits_row(&repo, kind, n, commits, false, import, 0);
    // The first query builds (and stores) the indexes; the next commit flushes after it.
    query(&repo, &mut rng);
    commits_row(&repo, kind, n, commits, true, import, 1);
}

fn main() {
    let n = common::env_usize("CAIRN_BENCH_NODES", 100_000).max(1);
    let commits = common::env_usize("CAIRN_BENCH_COMMITS", 1_000).max(1);
    let child = std::env::var("CAIRN_BENCH_CHILD").is_ok();
    if !child {
        println!("\n### one-node commits, latency in ms (transaction to commit return)\n");
        println!(
            "| store | commits | nodes | import | commits | p50 | p90 | p99 | p99.9 | max | mean | first | > 10 ms | slowest five (at s since the first) |"
        );
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    }
    if let Ok(kind) = std::env::var("CAIRN_BENCH_STORE") {
        run_store(&kind, n, commits);
        return;
    }
    // Each store in a process of its own (`cargo bench` passes `--bench`).
    for kind in ["memory", "segment", "sled"] {
        let status = std::process::Command::new(std::env::current_exe().expect("exe"))
            .env("CAIRN_BENCH_STORE", kind)
            .env("CAIRN_BENCH_CHILD", "1")
            .env("CAIRN_BENCH_NODES", n.to_string())
            .env("CAIRN_BENCH_COMMITS", commits.to_string())
            .status()
            .expect("child");
        assert!(status.success());
    }
}
