//! History benchmarks: transaction-time `as_of` over 100,000 commits, the history of one
//! node over 10,000 commits, a three-way merge of two branches that each change 1,000
//! nodes of a 100,000-node repository, `gc` over 10,000 small commits, and the bytes
//! stored per one-node commit at 100,000 nodes (printed, not timed).
//!
//! Repositories are in memory: building 100,000 commits on sled pays one fsync per commit
//! (minutes), and these benchmarks measure the graph layer, not the disk.
//!
//! `cargo bench --bench history`. Set `CAIRN_BENCH_1M=1` to also measure the bytes per
//! one-node commit at 1,000,000 nodes (a few minutes, a few GiB of memory).

use std::hint::black_box;
use std::time::{Duration, Instant};

use cairn::{MergeKind, Node, NodeId, Repo};
use cairn_testkit::Rng;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

fn id(s: String) -> NodeId {
    NodeId::new(s).expect("valid id")
}

/// A small text node (a label, a dozen words): the shape of a typical fact.
fn fact(i: u64, version: u64) -> Node {
    Node::new(id(format!("doc-{i:07}")))
        .with_label("Fact")
        .with_text(format!("fact {i} version {version} about wings lift drag and stall"))
}

/// Puts `n` nodes in chunks of 100,000 per commit.
fn ingest(repo: &Repo, n: u64) {
    for start in (0..n).step_by(100_000) {
        let mut tx = repo.transaction().expect("tx");
        for i in start..(start + 100_000).min(n) {
            tx.put_node(fact(i, 0)).expect("put");
        }
        tx.commit("bulk").expect("commit");
    }
}

/// A repository whose `main` has `commits` commits after a 64-node seed, each changing
/// one node, with timestamps 10 ms apart; node `doc-0000000` changes every 100th commit.
fn chain(commits: u64) -> Repo {
    let repo = Repo::in_memory().expect("repo");
    let mut tx = repo.transaction().expect("tx");
    for i in 0..64 {
        tx.put_node(fact(i, 0)).expect("put");
    }
    tx.commit_at("seed", 0).expect("commit");
    for k in 1..=commits {
        let node = if k % 100 == 0 { 0 } else { 1 + k % 63 };
        let mut tx = repo.transaction().expect("tx");
        tx.put_node(fact(node, k)).expect("put");
        tx.commit_at("edit", k as i64 * 10).expect("commit");
    }
    repo
}

fn bench_as_of(c: &mut Criterion) {
    let n = 100_000u64;
    let t = Instant::now();
    let repo = chain(n);
    let built = t.elapsed();
    println!(
        "as_of: built {n} commits in {built:.1?} ({:.0} commits/s)",
        n as f64 / built.as_secs_f64()
    );
    // The first lookup may build the time index; later ones are O(log n) point reads.
    repo.as_of("main", 5).expect("as_of");
    let mut rng = Rng(7);
    let mut g = c.benchmark_group("as_of_100k_commits");
    g.bench_function("random_time", |b| {
        b.iter(|| {
            let t = rng.below(n * 10) as i64;
            black_box(repo.as_of("main", t).expect("as_of"))
        })
    });
    g.bench_function("resolve_main@{t}", |b| {
        b.iter(|| {
            let t = rng.below(n * 10);
            black_box(repo.resolve(&format!("main@{{{t}}}")).expect("resolve"))
        })
    });
    g.finish();
}

fn bench_history_and_gc(c: &mut Criterion) {
    let n = 10_000u64;
    let repo = chain(n);
    let target = id(format!("doc-{:07}", 0));
    let h = repo.history(&target).expect("history");
    println!("history: {} entries for one node over {n} commits", h.len());
    let mut g = c.benchmark_group("history_10k_commits");
    g.bench_function("one_node", |b| {
        b.iter(|| black_box(repo.history(&target).expect("history")))
    });
    g.bench_function("one_node_limit_10", |b| {
        b.iter(|| black_box(repo.history_of("main", &target, Some(10)).expect("history")))
    });
    g.finish();

    // gc: each iteration first makes garbage (a branch of 10 commits, then deleted), so
    // every run marks the 10,000 live commits and sweeps 10 dead ones.
    let mut round = 0u64;
    let make_garbage = |round: &mut u64| {
        *round += 1;
        let name = format!("scratch-{round}");
        repo.create_branch(&name, None).expect("branch");
        for k in 0..10 {
            let mut tx = repo.transaction_on(&name).expect("tx");
            tx.put_node(fact(10_000 + k, *round)).expect("put");
            tx.commit("scratch").expect("commit");
        }
        repo.delete_branch(&name).expect("delete");
    };
    make_garbage(&mut round);
    let t = Instant::now();
    let report = repo.gc_with(&cairn::GcOptions::now()).expect("gc");
    println!("gc over {n} commits: {report:?} in {:.1?}", t.elapsed());
    let mut g = c.benchmark_group("gc_10k_commits");
    g.sample_size(10);
    g.bench_function("mark_and_sweep_10_dead_commits", |b| {
        b.iter_batched(
            || make_garbage(&mut round),
            |()| repo.gc_with(&cairn::GcOptions::now()).expect("gc"),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn bench_merge(c: &mut Criterion) {
    let n = 100_000u64;
    let repo = Repo::in_memory().expect("repo");
    ingest(&repo, n);
    repo.create_branch("feature", None).expect("branch");
    // Each side changes 1,000 distinct nodes (ours the even thousands, theirs the odd).
    for (branch, offset) in [("main", 0u64), ("feature", 50_000)] {
        let mut tx = repo.transaction_on(branch).expect("tx");
        for i in 0..1_000 {
            tx.put_node(fact(offset + i * 7, 1)).expect("put");
        }
        tx.commit(branch).expect("commit");
    }
    let main_head = repo.head().expect("head").expect("commit").to_hex();
    let m = repo.merge("main", "feature").expect("merge");
    assert_eq!(m.kind(), MergeKind::ThreeWay);
    assert!(m.conflicts().is_empty());
    assert_eq!(m.node_changes().len(), 1_000);
    let mut g = c.benchmark_group("merge_100k_nodes_1k_changes_each");
    g.sample_size(10);
    g.bench_function("compute", |b| {
        b.iter(|| black_box(repo.merge("main", "feature").expect("merge")))
    });
    let mut round = 0u64;
    g.bench_function("compute_and_commit", |b| {
        b.iter_batched(
            || {
                round += 1;
                let name = format!("ours-{round}");
                repo.create_branch(&name, Some(&main_head)).expect("branch");
                name
            },
            |name| {
                repo.merge(&name, "feature")
                    .expect("merge")
                    .commit("merge")
                    .expect("commit")
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// New object bytes per commit that edits one node of an `n`-node repository.
fn bytes_per_one_node_commit(n: u64) {
    let repo = Repo::in_memory().expect("repo");
    ingest(&repo, n);
    let mut rng = Rng(11);
    let edits = 100u64;
    let mut node_bytes = 0u64;
    let before = repo.store().stats().expect("stats").object_bytes;
    for k in 0..edits {
        let node = fact(rng.below(n), k + 1);
        node_bytes += cairn_core::codec::encode_node(&node).len() as u64;
        let mut tx = repo.transaction().expect("tx");
        tx.put_node(node).expect("put");
        tx.commit("edit").expect("commit");
    }
    let after = repo.store().stats().expect("stats").object_bytes;
    let per_commit = (after - before) as f64 / edits as f64;
    println!(
        "bytes per 1-node commit at {n} nodes: {:.2} KiB ({:.2} KiB trees + commit, {:.0} B node object)",
        per_commit / 1024.0,
        (per_commit - node_bytes as f64 / edits as f64) / 1024.0,
        node_bytes as f64 / edits as f64
    );
}

fn bench_bytes(_c: &mut Criterion) {
    bytes_per_one_node_commit(100_000);
    if std::env::var("CAIRN_BENCH_1M").is_ok() {
        bytes_per_one_node_commit(1_000_000);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = bench_bytes, bench_as_of, bench_history_and_gc, bench_merge
}
criterion_main!(benches);
