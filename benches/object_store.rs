//! A repository in object storage, on moto's S3 server on loopback:
//! `cargo bench --bench object_store`.
//!
//! An upstream path repository of N nodes (the shared benchmark corpus, `common::node`, in
//! commits of 10,000) is pushed into an empty bucket repository; the bucket is then cloned
//! (measured as the init + fetch a clone does); a bucket repository opened afresh answers
//! its first query (cold: objects read from the bucket, indexes built and cached on local
//! disk) and a warm one; a second handle's first query (local derived cache warm, object
//! cache cold); with `remote_derived` the same first query on a machine whose local cache is
//! empty but whose bucket holds the index; a one-node commit pushed to the bucket and one
//! fetched from it. Each row gives the time, the objects moved, and the requests and bytes
//! the bucket served.
//!
//! Settings: `CAIRN_BENCH_NODES` (10,000: moto answers a few thousand requests a second,
//! and a cold query reads every node once). Skips, saying why, where moto cannot start.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::{Repo, TransferStats};
use cairn_store::{ObjectStoreBackend, ObjectStoreOptions, RequestCounts};

fn row(what: &str, took: Duration, moved: Option<TransferStats>, io: Option<(RequestCounts, RequestCounts)>) {
    let objects = moved.map_or("—".to_string(), |t| format!("{} ({} B)", t.objects, t.bytes));
    let io = io.map_or("—".to_string(), |(before, after)| {
        format!(
            "{} GET {} B / {} PUT {} B / {} other",
            after.gets - before.gets,
            after.bytes_read - before.bytes_read,
            after.puts - before.puts,
            after.bytes_written - before.bytes_written,
            after.other - before.other
        )
    });
    println!("| {what} | {:.1} ms | {objects} | {io} |", took.as_secs_f64() * 1e3);
}

/// A handle on the bucket repository at `url` with its own caches.
/// The bench's hybrid query on `repo`, timed, with the requests `store` served for it: one
/// row. Returns the result's JSON.
fn timed_query(repo: &Repo, store: &ObjectStoreBackend, what: &str) -> String {
    let before = store.requests();
    let t = Instant::now();
    let result = common::hybrid_query(repo, &mut common::Rng(7));
    row(what, t.elapsed(), None, Some((before, store.requests())));
    result
}

fn bucket_repo(url: &str, options: ObjectStoreOptions) -> (Repo, Arc<ObjectStoreBackend>) {
    let store = Arc::new(ObjectStoreBackend::open(url, options).expect("open bucket"));
    let repo = Repo::with_store(Arc::clone(&store) as _).expect("repo");
    (repo, store)
}

fn main() {
    let Some(moto) = cairn_testkit::moto() else { return };
    let n = common::env_usize("CAIRN_BENCH_NODES", 10_000).max(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let up_path = dir.path().join("up");
    let mut rng = common::Rng(0x5eed);
    let up = Repo::init(&up_path).expect("init");
    common::import_corpus(&up, n, &mut rng);
    let url = format!("{}/repo", moto.new_bucket("bench"));
    drop(Repo::init(&url).expect("init bucket"));
    println!("{n} nodes; moto {} on loopback; 2 cores\n", moto.endpoint);
    println!("| step | time | objects moved | bucket requests |");
    println!("|---|---:|---:|---|");

    up.remote_add("cloud", &url).expect("remote");
    let t = Instant::now();
    let pushed = up.push("cloud", None, false).expect("push");
    row(
        "push of the whole repository into the bucket",
        t.elapsed(),
        Some(pushed.transfer),
        None,
    );

    let (probe, took, moved) = common::timed_init_and_fetch(&dir.path().join("clone"), &url);
    row(
        "clone from the bucket (init + fetch of every branch)",
        took,
        Some(moved),
        None,
    );

    let cache = |name: &str| ObjectStoreOptions::default().cache_dir(dir.path().join(name));
    let (cold, store) = bucket_repo(&url, cache("cache-a"));
    let first = timed_query(
        &cold,
        &store,
        "first query on the bucket repository (builds its indexes)",
    );
    timed_query(&cold, &store, "warm query");
    drop(cold);
    drop(store);

    let (again, store) = bucket_repo(&url, cache("cache-a"));
    assert_eq!(
        timed_query(&again, &store, "first query of a new handle (local index cache warm)"),
        first
    );
    drop(again);
    drop(store);

    // Derived data kept in the bucket too: one machine builds and uploads, another reads.
    let (a, store) = bucket_repo(&url, cache("cache-b").remote_derived(true));
    timed_query(
        &a,
        &store,
        "remote_derived: first query, building and uploading the index",
    );
    drop(a);
    drop(store);
    let (b, store) = bucket_repo(&url, cache("cache-c").remote_derived(true));
    assert_eq!(
        timed_query(
            &b,
            &store,
            "remote_derived: first query on another machine (index read from the bucket)"
        ),
        first
    );
    drop(b);
    drop(store);

    common::commit_one_node(&up, "doc-pushed", &mut rng);
    let t = Instant::now();
    let pushed = up.push("cloud", None, false).expect("push");
    row(
        "push of a 1-node commit to the bucket",
        t.elapsed(),
        Some(pushed.transfer),
        None,
    );
    {
        let (writer, _) = bucket_repo(&url, cache("cache-d"));
        common::commit_one_node(&writer, "doc-fetched", &mut rng);
    }
    let t = Instant::now();
    let fetched = probe.fetch("origin").expect("fetch");
    row(
        "fetch of a 1-node commit from the bucket",
        t.elapsed(),
        Some(fetched.transfer),
        None,
    );
}
