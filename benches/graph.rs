//! Store benchmarks (issue "foundation"): bulk ingest, one-node edits (time and new
//! bytes), reopen, and diff.
//!
//! `cargo bench --bench graph`. Set `CAIRN_BENCH_1M=1` to add the 1,000,000-node cases
//! (several minutes and a few GiB of disk).

mod common;

use std::time::{Duration, Instant};

use cairn::{Node, NodeId, Repo};
use criterion::{criterion_group, criterion_main, Criterion};

fn ingest(repo: &Repo, nodes: &[Node]) {
    let mut tx = repo.transaction().expect("tx");
    for n in nodes {
        tx.put_node(n.clone()).expect("put");
    }
    tx.commit("bulk").expect("commit");
}

fn bench_ingest(c: &mut Criterion) {
    let nodes = common::corpus(100_000);
    let mut g = c.benchmark_group("ingest_100k");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("memory", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let repo = Repo::in_memory().expect("repo");
                let t = Instant::now();
                ingest(&repo, &nodes);
                total += t.elapsed();
            }
            total
        })
    });
    g.bench_function("sled", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = tempfile::tempdir().expect("tempdir");
                let repo = Repo::init(dir.path().join("r")).expect("init");
                let t = Instant::now();
                ingest(&repo, &nodes);
                total += t.elapsed();
            }
            total
        })
    });
    g.finish();
}

/// Edits one node per commit in a repo of `n` nodes; prints the new stored bytes per commit.
fn bench_edit(c: &mut Criterion, n: usize, label: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let nodes = common::corpus(n);
    let sled_repo = Repo::init(dir.path().join("r")).expect("init");
    let mem_repo = Repo::in_memory().expect("repo");
    for chunk in nodes.chunks(100_000) {
        ingest(&sled_repo, chunk);
        ingest(&mem_repo, chunk);
    }
    drop(nodes);
    let mut rng = common::Rng(99);
    for (name, repo) in [("memory", &mem_repo), ("sled", &sled_repo)] {
        let before = repo.store().stats().expect("stats").object_bytes;
        let edits = 200u64;
        for _ in 0..edits {
            let i = (rng.next() % n as u64) as usize;
            let mut tx = repo.transaction().expect("tx");
            tx.put_node(common::node(&mut rng, i)).expect("put");
            tx.commit("edit").expect("commit");
        }
        let after = repo.store().stats().expect("stats").object_bytes;
        println!(
            "edit_1_node/{label}/{name}: {:.1} KiB of new objects per commit (node object included)",
            (after - before) as f64 / edits as f64 / 1024.0
        );
        let mut g = c.benchmark_group(format!("edit_1_node_{label}"));
        g.sample_size(30);
        g.bench_function(name, |b| {
            b.iter(|| {
                let i = (rng.next() % n as u64) as usize;
                let mut tx = repo.transaction().expect("tx");
                tx.put_node(
                    Node::new(NodeId::new(format!("doc-{i:07}")).expect("id"))
                        .with_label("Document")
                        .with_text(common::text(&mut rng, 50))
                        .with_embedding("minilm", common::unit_vector(&mut rng, 384)),
                )
                .expect("put");
                tx.commit("edit").expect("commit")
            })
        });
        g.finish();
    }
    // Diff of two commits ten edits apart.
    let a = sled_repo.head().expect("head").expect("commit");
    for _ in 0..10 {
        let i = (rng.next() % n as u64) as usize;
        let mut tx = sled_repo.transaction().expect("tx");
        tx.put_node(common::node(&mut rng, i)).expect("put");
        tx.commit("edit").expect("commit");
    }
    let b2 = sled_repo.head().expect("head").expect("commit");
    let mut g = c.benchmark_group(format!("diff_10_nodes_{label}"));
    g.sample_size(30);
    g.bench_function("sled", |b| b.iter(|| sled_repo.diff(&a, &b2).expect("diff")));
    g.finish();
    // Reopen.
    let path = dir.path().join("r");
    drop(sled_repo);
    drop(Repo::open(&path).expect("open")); // first open replays sled's log
    let mut g = c.benchmark_group(format!("reopen_{label}"));
    g.sample_size(10);
    g.bench_function("sled", |b| b.iter(|| Repo::open(&path).expect("open")));
    g.finish();
}

fn bench_edits(c: &mut Criterion) {
    bench_edit(c, 100_000, "100k");
    if std::env::var("CAIRN_BENCH_1M").is_ok() {
        bench_edit(c, 1_000_000, "1m");
    }
}

criterion_group!(benches, bench_ingest, bench_edits);
criterion_main!(benches);
