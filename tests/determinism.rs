//! Determinism across processes: two processes build byte-identical indexes for one
//! commit, and a retrieval gives byte-identical JSON across processes, thread counts, a
//! reopen, and indexes built fresh vs loaded from the store.

use std::path::Path;
use std::process::Command;

use cairn::retrieve::expand::GraphExpand;
use cairn::{Edge, Node, NodeId, Repo, SparseVector, Validity};
use cairn_testkit::{normalise, Rng, WORDS};

const CHILD_ENV: &str = "CAIRN_DET_CHILD_REPO";
const DIM: usize = 16;

/// The first 20 words of the testkit's list (the snapshots were made with these).
fn words() -> &'static [&'static str] {
    &WORDS[..20]
}

fn vector(rng: &mut Rng) -> Vec<f32> {
    normalise((0..DIM).map(|_| rng.unit_steps(10_000)).collect())
}

/// A repository with two commits: 400 nodes and 600 edges, then 10 changed nodes.
fn make_repo(path: &Path) -> Repo {
    let repo = Repo::init(path).expect("init");
    let mut rng = Rng(42);
    let mut tx = repo.transaction().unwrap();
    for i in 0..400 {
        let text: Vec<&str> = (0..12)
            .map(|_| words()[(rng.next() % words().len() as u64) as usize])
            .collect();
        let mut node = Node::new(NodeId::new(format!("doc-{i:04}")).unwrap())
            .with_label(if i % 3 == 0 { "Paper" } else { "Note" })
            .with_text(text.join(" "))
            .with_prop("year", 1950 + (i % 40) as i64)
            .with_embedding("m", vector(&mut rng))
            .with_sparse("kw", SparseVector::new(vec![i % 7, 7 + i % 11], vec![1.0, 0.5]));
        if i % 10 == 0 {
            node = node.with_validity(Validity::new(Some(0), Some(1_000)));
        }
        tx.put_node(node).unwrap();
    }
    for _ in 0..600 {
        let (a, b) = (rng.next() % 400, rng.next() % 400);
        let e = Edge::new(
            NodeId::new(format!("doc-{a:04}")).unwrap(),
            "cites",
            NodeId::new(format!("doc-{b:04}")).unwrap(),
        )
        .with_weight(1.0 + (rng.next() % 3) as f64);
        tx.put_edge(e).unwrap();
    }
    tx.commit_at("import", 10_000).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in (0..400).step_by(40) {
        let node = Node::new(NodeId::new(format!("doc-{i:04}")).unwrap())
            .with_label("Paper")
            .with_text("wing stall revisited boundary layer")
            .with_embedding("m", vector(&mut rng));
        tx.put_node(node).unwrap();
    }
    tx.commit_at("edit ten", 20_000).unwrap();
    repo
}

fn query_vector() -> Vec<f32> {
    vector(&mut Rng(7))
}

fn retrieval_json(repo: &Repo) -> String {
    let result = repo
        .retrieve()
        .label("Paper")
        .vector("m", &query_vector())
        .text("wing stall boundary layer")
        .expand(GraphExpand::hops(2).max_nodes(20))
        .token_budget(400)
        .limit(8)
        .execute()
        .expect("retrieve");
    // And the approximate mode (unit graphs built in this process).
    let ann = repo
        .retrieve()
        .vector("m", &query_vector())
        .approximate(20)
        .limit(8)
        .execute()
        .expect("retrieve ann");
    // A tab never appears raw in JSON: it separates the two results.
    format!(
        "{}\t{}",
        serde_json::to_string(&result).expect("json"),
        serde_json::to_string(&ann).expect("json")
    )
}

fn index_digest(repo: &Repo) -> String {
    repo.indexes("HEAD").expect("indexes").digest().to_hex()
}

/// Child body: prints the index digest and the retrieval JSON of the repo it is given.
#[test]
fn determinism_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    let repo = Repo::open(&path).expect("open");
    println!("DIGEST {}", index_digest(&repo));
    println!("JSON {}", retrieval_json(&repo));
}

/// The tests here that start processes and the one that closes and reopens a store run one
/// at a time: a child shares its parent's open files between its fork and its exec, the
/// store's lock file among them, so a store closed and reopened in that window reads as
/// locked (seen once in CI-like runs).
static PROCESSES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_child(path: &Path, threads: &str) -> (String, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "determinism_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, path)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("child runs");
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let get = |tag: &str| {
        stdout
            .lines()
            .find_map(|l| l.split_once(tag).map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("no {tag} in child output: {stdout}"))
            .to_string()
    };
    (get("DIGEST "), get("JSON "))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn indexes_and_results_are_identical_across_processes() {
    let _one = PROCESSES.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("a");
    drop(make_repo(&original));
    // Two untouched copies: each process builds its indexes from scratch.
    let copy = dir.path().join("b");
    copy_dir(&original, &copy);
    let (d1, j1) = run_child(&original, "1");
    let (d2, j2) = run_child(&copy, "4");
    assert_eq!(d1, d2, "two processes built different index bytes");
    assert_eq!(j1, j2, "two processes returned different results");
    // Third process: reopen the first copy, which now has persisted indexes.
    let (d3, j3) = run_child(&original, "2");
    assert_eq!(d1, d3);
    assert_eq!(j1, j3, "loaded indexes answer differently from fresh ones");
    // And in this process, many threads at once.
    let repo = Repo::open(&original).unwrap();
    let results: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| retrieval_json(&repo))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results.iter().all(|r| *r == j1));
    // The result is not trivially empty.
    let first = j1.split_once('\t').map_or(j1.as_str(), |(a, _)| a);
    let v: serde_json::Value = serde_json::from_str(first).unwrap();
    assert!(!v["items"].as_array().unwrap().is_empty());
}

#[test]
fn an_index_does_not_depend_on_what_was_indexed_before_and_loads_identically() {
    let _one = PROCESSES.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r");
    let repo = make_repo(&path);
    // Index the parent first, so the head shares its unchanged chunks.
    repo.indexes("HEAD~1").unwrap();
    let shared = repo.indexes("HEAD").unwrap().digest();
    drop(repo);
    // A fresh copy with no derived data at all: the head's chunks are all built now.
    let fresh_dir = dir.path().join("fresh");
    drop(make_repo(&fresh_dir));
    let fresh = Repo::open(&fresh_dir).unwrap();
    let scratch = fresh.indexes("HEAD").unwrap().digest();
    assert_eq!(
        shared, scratch,
        "an index reached through its parent differs from a fresh build"
    );
    // Store, reopen, load: identical, and nothing left to store.
    fresh.build_indexes("HEAD").unwrap();
    drop(fresh);
    let reopened = Repo::open(&fresh_dir).unwrap();
    assert_eq!(reopened.indexes("HEAD").unwrap().digest(), scratch);
    let again = reopened.build_indexes("HEAD").unwrap();
    assert_eq!(again.stored_values, 0, "{again:?}");
    assert!(again.repaired.is_empty());
}
