//! Timings behind the backend's choices. Not run by default: they write hundreds of MB.
//! `cargo test -p cairn-store --test measure -- --ignored --nocapture --test-threads=1`

use std::time::Instant;

use cairn_core::Hash;
use cairn_store::{SledStore, Store};

fn small_objects(n: usize, salt: &str) -> Vec<(Hash, Vec<u8>)> {
    (0..n)
        .map(|i| {
            // ~100 bytes, about the size of a small node object.
            let bytes = format!("{salt} object {i:>10} {}", "x".repeat(70)).into_bytes();
            (Hash::of(&bytes), bytes)
        })
        .collect()
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                dir_bytes(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

#[test]
#[ignore = "measurement"]
fn measure_batch_put_and_reput() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let batch = small_objects(100_000, "a");
    let payload: usize = batch.iter().map(|(_, b)| b.len()).sum();
    let t = Instant::now();
    store.put_batch(&batch).unwrap();
    let put = t.elapsed();
    let t = Instant::now();
    store.flush().unwrap();
    println!(
        "put 100k objects ({payload} payload bytes) in one batch: {put:?}, flush {:?}",
        t.elapsed()
    );
    println!("disk after first put: {} bytes", dir_bytes(dir.path()));
    for pass in 1..=2 {
        let t = Instant::now();
        for (hash, _) in &batch {
            assert!(store.contains(hash).unwrap());
        }
        println!("100k contains, pass {pass}: {:?}", t.elapsed());
    }
    let t = Instant::now();
    store.put_batch(&batch).unwrap();
    let reput = t.elapsed();
    let t = Instant::now();
    store.flush().unwrap();
    println!("re-put of the same 100k: {reput:?}, flush {:?}", t.elapsed());
    println!("disk after re-put: {} bytes", dir_bytes(dir.path()));
    let t = Instant::now();
    for (hash, _) in &batch {
        assert!(store.get(hash).unwrap().is_some());
    }
    println!("100k gets: {:?}", t.elapsed());
}

#[test]
#[ignore = "measurement"]
fn measure_open_of_a_million_objects() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        let t = Instant::now();
        for chunk in 0..10 {
            store
                .put_batch(&small_objects(100_000, &format!("chunk {chunk}")))
                .unwrap();
        }
        store.flush().unwrap();
        println!("wrote 1M objects in 10 batches + flush: {:?}", t.elapsed());
    }
    println!("disk: {} bytes", dir_bytes(dir.path()));
    let t = Instant::now();
    let store = SledStore::open(dir.path()).unwrap();
    println!("open of a 1M-object store: {:?}", t.elapsed());
    drop(store);
    let t = Instant::now();
    let store = SledStore::open(dir.path()).unwrap();
    println!("second open: {:?}", t.elapsed());
    let t = Instant::now();
    let stats = store.stats().unwrap();
    println!("stats ({} objects): {:?}", stats.objects, t.elapsed());
}
