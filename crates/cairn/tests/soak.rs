//! A small soak in one process, on an in-memory repository and on each on-disk store: import
//! 3,000 nodes in three commits, run queries, one-node edits, as-of queries and a gc, and
//! check after each phase that the answers are still right (a query finds the node it was
//! built from; as-of sees the old text; after gc every reachable node reads and fsck is
//! clean). The resident set of the test process (both tests run at once) is printed per
//! phase (`--nocapture`), never asserted: the long-run measurement is `cargo bench --bench
//! soak`.

use cairn::{Node, NodeId, Repo, StoreKind};
use cairn_testkit::{rss_mib, Rng};

const NODES: usize = 3_000;
const BATCHES: usize = 3;
const DIM: usize = 32;
const QUERIES: usize = 50;
const EDITS: usize = 10;
const COMMON: &[&str] = &["wing", "stall", "lift", "drag", "flow", "shock", "layer", "nozzle"];

fn id(i: usize) -> NodeId {
    NodeId::new(format!("doc-{i:05}")).unwrap()
}

fn label(i: usize) -> &'static str {
    if i.is_multiple_of(2) {
        "Even"
    } else {
        "Odd"
    }
}

/// A unit vector, deterministic in (`i`, `version`).
fn vector(i: usize, version: usize) -> Vec<f32> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((i as u64) << 20) ^ version as u64);
    let v: Vec<f32> = (0..DIM).map(|_| (rng.next() % 2001) as f32 / 1000.0 - 1.0).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.into_iter().map(|x| x / n).collect()
}

/// The word only version `version` of node `i` carries.
fn marker(i: usize, version: usize) -> String {
    format!("mark{i}v{version}")
}

/// Node `i` at `version`: common words around a word of its own.
fn node(i: usize, version: usize) -> Node {
    let mut rng = Rng(0x5eed ^ ((i as u64) << 8) ^ version as u64);
    let mut words: Vec<String> = (0..12)
        .map(|_| COMMON[(rng.next() % COMMON.len() as u64) as usize].to_string())
        .collect();
    words.insert(6, marker(i, version));
    Node::new(id(i))
        .with_label(label(i))
        .with_text(words.join(" "))
        .with_embedding("m", vector(i, version))
}

/// Text + vector + label gate for node `i` at `version`, at `at` (default: the head).
fn query(repo: &Repo, i: usize, version: usize, at: Option<&str>) -> cairn::retrieve::RetrievalResult {
    let mut r = repo
        .retrieve()
        .label(label(i))
        .vector("m", &vector(i, version))
        .text(format!("{} wing", marker(i, version)))
        .limit(5)
        .exact();
    if let Some(at) = at {
        r = r.at(at);
    }
    r.execute().unwrap()
}

fn assert_top(r: &cairn::retrieve::RetrievalResult, i: usize, version: usize, what: &str) {
    let top = r.items.first().unwrap_or_else(|| panic!("{what}: no items"));
    assert_eq!(top.id, id(i), "{what}: top hit");
    assert!(
        top.text.contains(&marker(i, version)),
        "{what}: top hit's text {:?} is not version {version}",
        top.text
    );
}

fn phase(store: &str, name: &str, start: std::time::Instant) {
    let (rss, peak) = rss_mib();
    println!(
        "soak {store}: {:>6.2} s  {name:<28} RSS {rss:>6.0} MiB  peak {peak:>6.0} MiB",
        start.elapsed().as_secs_f64()
    );
}

fn soak(repo: &Repo, store: &str) {
    let start = std::time::Instant::now();
    phase(store, "open", start);

    let per = NODES / BATCHES;
    for b in 0..BATCHES {
        let mut tx = repo.transaction().unwrap();
        for i in b * per..(b + 1) * per {
            tx.put_node(node(i, 0)).unwrap();
        }
        tx.commit(&format!("batch {b}")).unwrap();
        phase(store, &format!("import batch {}", b + 1), start);
    }
    let imported = repo.head().unwrap().unwrap();
    assert_eq!(repo.stats(&imported).unwrap().nodes, NODES as u64);

    for q in 0..QUERIES {
        let i = (q * 61) % NODES;
        assert_top(&query(repo, i, 0, None), i, 0, &format!("query {q}"));
    }
    phase(store, "50 queries", start);

    // One-node edits, each followed by a query that must see it.
    let edited: Vec<usize> = (0..EDITS).map(|e| (e * 293 + 7) % NODES).collect();
    for &i in &edited {
        let mut tx = repo.transaction().unwrap();
        tx.put_node(node(i, 1)).unwrap();
        tx.commit(&format!("edit {i}")).unwrap();
        assert_top(&query(repo, i, 1, None), i, 1, &format!("after editing {i}"));
    }
    phase(store, "10 edits", start);

    // As-of: before the last three edits, those nodes still have their first text.
    for (back, &i) in edited.iter().rev().take(3).enumerate() {
        let rev = format!("HEAD~{}", back + 1);
        assert_top(&query(repo, i, 0, Some(&rev)), i, 0, &format!("as-of {rev}"));
        let then = repo.resolve(&rev).unwrap();
        assert!(repo
            .node_at(&then, &id(i))
            .unwrap()
            .unwrap()
            .text
            .contains(&marker(i, 0)));
    }
    // The import commit, before any edit.
    let i = edited[0];
    assert_top(&query(repo, i, 0, Some(&imported.to_hex())), i, 0, "as-of the import");
    phase(store, "as-of queries", start);

    // Garbage for gc: a branch with its own commits, deleted.
    repo.create_branch("scratch", None).unwrap();
    for k in 0..3 {
        let mut tx = repo.transaction_on("scratch").unwrap();
        tx.put_node(node(NODES + k, 0)).unwrap();
        tx.commit("scratch").unwrap();
    }
    repo.delete_branch("scratch").unwrap();
    let report = repo.gc_with(&cairn::GcOptions::now()).unwrap();
    assert_eq!(report.commits_removed, 3, "{report:?}");
    phase(store, "gc", start);

    // Everything reachable still reads: every node at the head and at the import commit,
    // with the right versions; queries still answer; fsck is clean.
    let head = repo.head().unwrap().unwrap();
    let nodes = repo.nodes_at(&head, None).unwrap();
    assert_eq!(nodes.len(), NODES);
    for n in &nodes {
        let i: usize = n.id.as_str()["doc-".len()..].parse().unwrap();
        let version = usize::from(edited.contains(&i));
        assert_eq!(*n, node(i, version));
    }
    assert_eq!(repo.nodes_at(&imported, None).unwrap().len(), NODES);
    assert!(repo.node(&id(NODES)).unwrap().is_none());
    for &i in &edited {
        assert_top(&query(repo, i, 1, None), i, 1, "after gc");
        assert_top(&query(repo, i, 0, Some(&imported.to_hex())), i, 0, "as-of after gc");
    }
    let fsck = repo.fsck().unwrap();
    assert!(fsck.is_ok(), "{:?}", fsck.problems);
    assert!(fsck.derived_ok(), "{:?}", fsck.derived_problems);
    phase(store, "reads, queries, fsck", start);
}

#[test]
fn soak_in_memory() {
    soak(&Repo::in_memory().unwrap(), "memory");
}

#[test]
fn soak_on_segment_store() {
    soak_on_disk(StoreKind::Segment, "segment");
}

#[test]
fn soak_on_sled() {
    soak_on_disk(StoreKind::Sled, "sled");
}

fn soak_on_disk(kind: StoreKind, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repo::init_with(dir.path().join("repo"), kind).unwrap();
    soak(&repo, name);
    // And once more after reopening: the same answers from what is on disk.
    drop(repo);
    let repo = Repo::open(dir.path().join("repo")).unwrap();
    let i = (3 * 293 + 7) % NODES;
    assert_top(&query(&repo, i, 1, None), i, 1, "after reopening");
    assert!(repo.fsck().unwrap().is_ok());
}
