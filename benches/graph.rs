//! Store benchmarks (issue "foundation"): bulk ingest, one-node edits (time and new
//! bytes), reopen, diff and bytes on disk, for the in-memory store and both on-disk stores
//! (segment, sled).
//!
//! `cargo bench --bench graph`. Set `CAIRN_BENCH_1M=1` to add the 1,000,000-node cases
//! (several minutes and a few GiB of disk).

mod common;

use std::time::{Duration, Instant};

use cairn::{Node, NodeId, Repo, StoreKind};
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
    for (name, kind) in DISK {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let repo = Repo::init_with(dir.path().join("r"), kind).expect("init");
                    let t = Instant::now();
                    ingest(&repo, &nodes);
                    total += t.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

/// The on-disk stores.
const DISK: [(&str, StoreKind); 2] = [("segment", StoreKind::Segment), ("sled", StoreKind::Sled)];

/// Bytes of the files under `path`.
fn disk_bytes(path: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Edits one node per commit in a repo of `n` nodes; prints the new stored bytes per commit.
fn bench_edit(c: &mut Criterion, n: usize, label: &str) {
    bench_edit_on(c, n, label, None);
    for (name, kind) in DISK {
        bench_edit_on(c, n, label, Some((name, kind)));
    }
}

/// [`bench_edit`] on one store (`None`: in memory); on disk, also diff, reopen and size.
fn bench_edit_on(c: &mut Criterion, n: usize, label: &str, disk: Option<(&str, StoreKind)>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("r");
    let nodes = common::corpus(n);
    let (name, repo) = match disk {
        Some((name, kind)) => (name, Repo::init_with(&path, kind).expect("init")),
        None => ("memory", Repo::in_memory().expect("repo")),
    };
    for chunk in nodes.chunks(100_000) {
        ingest(&repo, chunk);
    }
    drop(nodes);
    if disk.is_some() {
        println!(
            "disk/{label}/{name}: {:.1} MiB after the import",
            disk_bytes(&path) as f64 / 1048576.0
        );
    }
    let mut rng = common::Rng(99);
    {
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
    if disk.is_none() {
        return;
    }
    // Diff of two commits ten edits apart.
    let a = repo.head().expect("head").expect("commit");
    for _ in 0..10 {
        let i = (rng.next() % n as u64) as usize;
        let mut tx = repo.transaction().expect("tx");
        tx.put_node(common::node(&mut rng, i)).expect("put");
        tx.commit("edit").expect("commit");
    }
    let b2 = repo.head().expect("head").expect("commit");
    let mut g = c.benchmark_group(format!("diff_10_nodes_{label}"));
    g.sample_size(30);
    g.bench_function(name, |b| b.iter(|| repo.diff(&a, &b2).expect("diff")));
    g.finish();
    // Reopen.
    drop(repo);
    println!(
        "disk/{label}/{name}: {:.1} MiB after the edits",
        disk_bytes(&path) as f64 / 1048576.0
    );
    drop(Repo::open(&path).expect("open")); // the first open replays sled's log
    let mut g = c.benchmark_group(format!("reopen_{label}"));
    g.sample_size(10);
    g.bench_function(name, |b| b.iter(|| Repo::open(&path).expect("open")));
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
