//! Retrieval benchmarks (issues "indexes" and "retrieve"): per-lane p50 latency at
//! 100,000 nodes, unfiltered and with a 0.1 % label gate; the hybrid query (vector + text +
//! label gate + budget 2000) with and without a 2-hop expansion; index build, the index of a
//! 10-node commit, and load times.
//!
//! `cargo bench --bench retrieve`. `CAIRN_BENCH_N` sets the node count (default 100,000).

mod common;

use std::time::{Duration, Instant};

use cairn::retrieve::GraphExpand;
use cairn::{Edge, NodeId, Repo};
use criterion::{criterion_group, criterion_main, Criterion};

fn setup(n: usize) -> (tempfile::TempDir, Repo) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repo::init(dir.path().join("r")).expect("init");
    let nodes = common::corpus(n);
    let mut rng = common::Rng(7);
    let mut tx = repo.transaction().expect("tx");
    for node in nodes {
        tx.put_node(node).expect("put");
    }
    for i in 0..n {
        for _ in 0..3 {
            let j = (rng.next() % n as u64) as usize;
            let e = Edge::new(
                NodeId::new(format!("doc-{i:07}")).expect("id"),
                "cites",
                NodeId::new(format!("doc-{j:07}")).expect("id"),
            );
            tx.put_edge(e).expect("edge");
        }
    }
    tx.commit("bench corpus").expect("commit");
    (dir, repo)
}

fn bench_retrieve(c: &mut Criterion) {
    let n: usize = std::env::var("CAIRN_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let t = Instant::now();
    let (_dir, repo) = setup(n);
    println!("setup: {n} nodes, {} edges committed in {:?}", 3 * n, t.elapsed());
    let t = Instant::now();
    let report = repo.build_indexes("HEAD").expect("build indexes");
    println!(
        "index build (all parts, {} chunks, {} values / {:.0} MiB stored): {:?}",
        report.chunks,
        report.stored_values,
        report.stored_bytes as f64 / 1048576.0,
        t.elapsed()
    );

    // Load time: a fresh handle reads the persisted index.
    let path = repo.path().expect("on disk").to_path_buf();
    drop(repo);
    let t = Instant::now();
    let repo = Repo::open(&path).expect("open");
    repo.indexes("HEAD").expect("load");
    println!("reopen + index load: {:?}", t.elapsed());

    // Derive: a commit changing 10 nodes, indexed from its parent's index.
    let mut rng = common::Rng(11);
    let mut tx = repo.transaction().expect("tx");
    for _ in 0..10 {
        let i = (rng.next() % n as u64) as usize;
        tx.put_node(common::node(&mut rng, i)).expect("put");
    }
    tx.commit("ten").expect("commit");
    let t = Instant::now();
    repo.indexes("HEAD").expect("chunks");
    println!(
        "index of a 10-node commit (changed chunks built, the rest shared): {:?}",
        t.elapsed()
    );

    let q = common::unit_vector(&mut common::Rng(3), 384);
    let text = "boundary layer separation on a swept wing at high mach number";
    let mut g = c.benchmark_group(format!("retrieve_{n}"));
    g.sample_size(50).measurement_time(Duration::from_secs(8));
    g.bench_function("text", |b| b.iter(|| repo.retrieve().text(text).execute().expect("r")));
    g.bench_function("text_rare_label", |b| {
        b.iter(|| repo.retrieve().label("Rare").text(text).execute().expect("r"))
    });
    g.bench_function("dense", |b| {
        b.iter(|| repo.retrieve().vector("minilm", &q).execute().expect("r"))
    });
    g.bench_function("dense_rare_label", |b| {
        b.iter(|| repo.retrieve().label("Rare").vector("minilm", &q).execute().expect("r"))
    });
    g.bench_function("hybrid_label_budget", |b| {
        b.iter(|| {
            repo.retrieve()
                .label("Document")
                .vector("minilm", &q)
                .text(text)
                .token_budget(2000)
                .execute()
                .expect("r")
        })
    });
    g.bench_function("hybrid_label_budget_expand2", |b| {
        b.iter(|| {
            repo.retrieve()
                .label("Document")
                .vector("minilm", &q)
                .text(text)
                .expand(GraphExpand::hops(2).max_nodes(50))
                .token_budget(2000)
                .execute()
                .expect("r")
        })
    });
    g.finish();
}

criterion_group!(benches, bench_retrieve);
criterion_main!(benches);
