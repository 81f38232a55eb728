//! Approximate search walks a base commit's unit graphs (`derived/graph_base.rs`): a
//! small commit builds no graph, its changed and deleted nodes are never returned from
//! the base's graphs, its new rows are found by the exact overlay, recall holds, and the
//! result is the same bytes in another process and in a repository that rebuilt its
//! derived data; a commit that changes much walks its own units, and the commits after
//! it share them.

use std::collections::HashSet;

use cairn::retrieve::{RetrievalResult, WarningCode};
use cairn::{Node, NodeId, Repo};

const N: usize = 10_000;
const DIM: usize = 16;
const T: i64 = 1_700_000_000_000;

/// A deterministic vector: `cairn_testkit`'s generator seeded by `i` and `salt`.
fn vector(i: usize, salt: u64) -> Vec<f32> {
    let mut rng = cairn_testkit::Rng((i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt);
    (0..DIM).map(|_| rng.unit()).collect()
}

fn nid(i: usize) -> NodeId {
    NodeId::new(format!("n{i:05}")).unwrap()
}

fn node(i: usize, salt: u64) -> Node {
    Node::new(nid(i)).with_label("Doc").with_embedding("m", vector(i, salt))
}

/// The history every test replays: 0. `N` nodes; 1. node 17 moved onto the first query,
/// node 5 deleted, node `N` added onto the second query.
fn fill(repo: &Repo) {
    let mut tx = repo.transaction().unwrap();
    for i in 0..N {
        tx.put_node(node(i, 7)).unwrap();
    }
    tx.commit_at("nodes", T).unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(nid(17)).with_label("Doc").with_embedding("m", query(0)))
        .unwrap();
    tx.delete_node(&nid(5)).unwrap();
    tx.put_node(Node::new(nid(N)).with_label("Doc").with_embedding("m", query(1)))
        .unwrap();
    tx.commit_at("three edits", T + 1).unwrap();
}

fn query(q: usize) -> Vec<f32> {
    vector(50_000 + q, 3)
}

fn ann(repo: &Repo, rev: &str, q: usize) -> RetrievalResult {
    repo.retrieve()
        .at(rev)
        .vector("m", &query(q))
        .limit(10)
        .approximate(10)
        .execute()
        .unwrap()
}

fn exact(repo: &Repo, rev: &str, q: usize) -> RetrievalResult {
    repo.retrieve()
        .at(rev)
        .vector("m", &query(q))
        .limit(10)
        .execute()
        .unwrap()
}

fn ids(r: &RetrievalResult) -> Vec<String> {
    r.items.iter().map(|i| i.id.to_string()).collect()
}

fn json(r: &RetrievalResult) -> String {
    serde_json::to_string(r).unwrap()
}

#[test]
fn a_small_commit_walks_its_parents_graphs_and_finds_its_own_rows_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repo::init(dir.path().join("r")).unwrap();
    fill(&repo);
    let first = ann(&repo, "HEAD~1", 2);
    assert!(first.lanes.iter().any(|l| l.approximate), "{:?}", first.lanes);
    let built = repo.index_stats().graphs_built;
    assert!(built >= 1, "the root commit builds its units' graphs");

    let head: Vec<RetrievalResult> = (0..12).map(|q| ann(&repo, "HEAD", q)).collect();
    assert_eq!(
        repo.index_stats().graphs_built,
        built,
        "a 3-node commit builds no graph"
    );
    assert!(head[0].lanes.iter().any(|l| l.approximate));
    // The moved node is the best match of query 0, the added node of query 1: both are
    // found although the base's graphs hold neither vector.
    assert_eq!(ids(&head[0])[0], nid(17).to_string());
    assert_eq!(ids(&head[1])[0], nid(N).to_string());
    for r in &head {
        assert!(
            !ids(r).contains(&nid(5).to_string()),
            "a deleted node is never returned"
        );
    }
    // Recall against the exact lane at the head.
    let mut found = 0;
    for (q, r) in head.iter().enumerate() {
        let truth: HashSet<String> = ids(&exact(&repo, "HEAD", q)).into_iter().collect();
        found += ids(r).iter().filter(|i| truth.contains(*i)).count();
    }
    let recall = found as f64 / (head.len() * 10) as f64;
    assert!(recall >= 0.95, "recall@10 {recall}");

    // Another handle (another process's view of the same store) gives the same bytes.
    let expected: Vec<String> = head.iter().map(json).collect();
    drop(repo);
    let again = Repo::open(dir.path().join("r")).unwrap();
    let got: Vec<String> = (0..12).map(|q| json(&ann(&again, "HEAD", q))).collect();
    assert_eq!(got, expected);
    assert_eq!(again.index_stats().graphs_built, 0, "the base's graphs were stored");

    // A repository with the same history and no derived data builds the base's graphs,
    // not the head's, and answers the same bytes.
    let other_dir = tempfile::tempdir().unwrap();
    let other = Repo::init(other_dir.path().join("r")).unwrap();
    fill(&other);
    // An exact query first stores the head's parts and its manifest (which makes a missing
    // part of the head's tree damage); the base's chunks were never stored there, and
    // loading them is no damage to report.
    let _ = exact(&other, "HEAD", 0);
    let results: Vec<RetrievalResult> = (0..12).map(|q| ann(&other, "HEAD", q)).collect();
    let rebuilt = |r: &RetrievalResult| r.warnings.iter().any(|w| w.code == WarningCode::DerivedRebuilt);
    assert!(!results.iter().any(rebuilt));
    let got: Vec<String> = results.iter().map(json).collect();
    assert_eq!(got, expected);
    assert_eq!(other.index_stats().graphs_built, built);
}

#[test]
fn a_commit_that_changes_much_walks_its_own_units_and_the_next_commits_share_them() {
    let repo = Repo::in_memory().unwrap();
    fill(&repo);
    let _ = ann(&repo, "HEAD", 0);
    let built = repo.index_stats().graphs_built;
    // Every vector changes: too far from the root commit to share its graphs.
    let mut tx = repo.transaction().unwrap();
    for i in 0..N {
        if i != 5 {
            tx.put_node(node(i, 11)).unwrap();
        }
    }
    tx.commit_at("every vector", T + 2).unwrap();
    let _ = ann(&repo, "HEAD", 0);
    let rebuilt = repo.index_stats().graphs_built;
    assert!(
        rebuilt > built,
        "a commit that changes every chunk builds its own graphs"
    );
    // Two small commits after it walk its graphs.
    for k in 0..2 {
        let mut tx = repo.transaction().unwrap();
        tx.put_node(node(100 + k, 13)).unwrap();
        tx.commit_at("one node", T + 3 + k as i64).unwrap();
        let r = ann(&repo, "HEAD", 3);
        assert!(r.lanes.iter().any(|l| l.approximate));
        assert_eq!(repo.index_stats().graphs_built, rebuilt, "commit {k} after the big one");
    }
    // And the result at each commit is what a fresh handle over the same history gives.
    let fresh = Repo::in_memory().unwrap();
    fill(&fresh);
    let mut tx = fresh.transaction().unwrap();
    for i in 0..N {
        if i != 5 {
            tx.put_node(node(i, 11)).unwrap();
        }
    }
    tx.commit_at("every vector", T + 2).unwrap();
    for k in 0..2 {
        let mut tx = fresh.transaction().unwrap();
        tx.put_node(node(100 + k, 13)).unwrap();
        tx.commit_at("one node", T + 3 + k as i64).unwrap();
    }
    for q in 0..4 {
        assert_eq!(json(&ann(&fresh, "HEAD", q)), json(&ann(&repo, "HEAD", q)));
    }
}

#[test]
fn seventy_small_commits_keep_walking_the_root_commits_graphs_in_any_handle() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repo::init(dir.path().join("r")).unwrap();
    fill(&repo);
    let _ = ann(&repo, "HEAD", 0);
    let built = repo.index_stats().graphs_built;
    // 70 one-node commits past generation 64, each queried: the handle derives each
    // commit's candidates from its parent's; the chunks drift by ~2 per commit, within the
    // bound, so the root commit (a multiple of every stride) stays the base.
    for k in 0..70 {
        let mut tx = repo.transaction().unwrap();
        tx.put_node(node(1000 + 37 * k, 17)).unwrap();
        tx.commit_at("one node", T + 10 + k as i64).unwrap();
        let _ = ann(&repo, "HEAD", k % 4);
    }
    assert_eq!(repo.index_stats().graphs_built, built, "no commit built a graph");
    let expected: Vec<String> = (0..4).map(|q| json(&ann(&repo, "HEAD", q))).collect();
    let older: Vec<String> = (0..4).map(|q| json(&ann(&repo, "HEAD~9", q))).collect();
    drop(repo);
    // A fresh handle walks the chain instead of deriving it, and answers the same bytes.
    let fresh = Repo::open(dir.path().join("r")).unwrap();
    let got: Vec<String> = (0..4).map(|q| json(&ann(&fresh, "HEAD~9", q))).collect();
    assert_eq!(got, older);
    let got: Vec<String> = (0..4).map(|q| json(&ann(&fresh, "HEAD", q))).collect();
    assert_eq!(got, expected);
    assert_eq!(fresh.index_stats().graphs_built, 0);
}
