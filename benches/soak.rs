//! Long-lived writer soak: one process imports a corpus in batches, then runs rounds of
//! multi-lane queries, one-node edits, an as-of query and a gc, printing the elapsed time
//! and the process's resident set (current `VmRSS` and peak `VmHWM`) after every phase.
//! `cargo bench --bench soak`.
//!
//! Corpus: the shared benchmark corpus (`common::node`: `Document`, or `Rare` on 0.1 %;
//! 50 words; a 384-d vector), imported in 10 commits. Each query is built from a corpus
//! node (six of its words, its vector, its label as the gate), so that node should come
//! back, first in the dense lane; the table counts the queries where it does not.
//!
//! Settings (environment): `CAIRN_SOAK_NODES` (100,000), `CAIRN_SOAK_ROUNDS` (8),
//! `CAIRN_SOAK_QUERIES` per round (100), `CAIRN_SOAK_EDITS` per round (10),
//! `CAIRN_BENCH_STORE` (`segment`, default, or `sled`, on a temporary directory; or
//! `memory`),
//! `CAIRN_SOAK_ANN=1` (the dense lane in ANN mode; default exact, as below 2M vectors).

mod common;

use std::time::{Duration, Instant};

use cairn::{Node, NodeId, Repo};
use cairn_testkit::rss_mib;

const BATCHES: usize = 10;
const DIM: usize = 384;

/// Bytes under `path` (the on-disk repository), in MiB.
fn disk_mib(path: &std::path::Path) -> f64 {
    fn walk(p: &std::path::Path) -> u64 {
        let Ok(entries) = std::fs::read_dir(p) else { return 0 };
        entries
            .flatten()
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => walk(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    }
    walk(path) as f64 / 1048576.0
}

/// Returns freed heap to the system, so a following RSS row tells memory held by live
/// structures from memory malloc keeps free (glibc only).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_heap() -> bool {
    extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: malloc_trim only releases free memory of glibc's own arenas.
    unsafe { malloc_trim(0) };
    true
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_heap() -> bool {
    false
}

/// What a query is built from: a corpus node's id, label, words and vector.
struct Probe {
    id: NodeId,
    label: String,
    words: String,
    vector: Vec<f32>,
}

impl Probe {
    fn of(node: &Node) -> Probe {
        Probe {
            id: node.id.clone(),
            label: node.labels.iter().next().expect("a label").to_string(),
            words: node.text.split(' ').take(6).collect::<Vec<_>>().join(" "),
            vector: node.embeddings.get("minilm").expect("vector").clone(),
        }
    }
}

struct Table {
    start: Instant,
    kind: String,
    path: Option<std::path::PathBuf>,
}

impl Table {
    fn header(&self) {
        println!("| elapsed s | phase | phase s | RSS MiB | peak RSS MiB | index cache MiB | disk MiB | notes |");
        println!("|---:|---|---:|---:|---:|---:|---:|---|");
    }

    fn row(&self, repo: Option<&Repo>, phase: &str, took: Duration, notes: &str) {
        let (rss, peak) = rss_mib();
        let cache = repo.map_or("—".to_string(), |r| {
            format!("{:.0}", r.index_stats().cached_bytes as f64 / 1048576.0)
        });
        let disk = match (&self.path, self.kind.as_str()) {
            (Some(p), "sled" | "segment") => format!("{:.0}", disk_mib(p)),
            _ => "—".into(),
        };
        println!(
            "| {:.1} | {phase} | {:.2} | {rss:.0} | {peak:.0} | {cache} | {disk} | {notes} |",
            self.start.elapsed().as_secs_f64(),
            took.as_secs_f64(),
        );
    }
}

/// `CAIRN_SOAK_ANN=1`: the dense lane searches the HNSW unit graphs instead of exactly.
fn ann() -> bool {
    std::env::var("CAIRN_SOAK_ANN").is_ok_and(|v| v == "1")
}

fn query(repo: &Repo, p: &Probe, at: Option<&str>) -> cairn::retrieve::RetrievalResult {
    let mut r = repo
        .retrieve()
        .label(p.label.clone())
        .vector("minilm", &p.vector)
        .text(p.words.clone())
        .token_budget(2000)
        .limit(100);
    r = if ann() { r.approximate(100) } else { r.exact() };
    if let Some(at) = at {
        r = r.at(at);
    }
    r.execute().expect("retrieve")
}

/// True if the probe's node is among the packed items, first in the dense lane. (Its fused
/// rank varies: the corpus's texts draw on 32 words, so the text lane barely tells nodes
/// apart.)
fn found(r: &cairn::retrieve::RetrievalResult, p: &Probe) -> bool {
    r.items
        .iter()
        .any(|i| i.id == p.id && i.lanes.get("dense:minilm").is_some_and(|l| l.rank == 1))
}

fn main() {
    let n = common::env_usize("CAIRN_SOAK_NODES", 100_000).max(BATCHES);
    let rounds = common::env_usize("CAIRN_SOAK_ROUNDS", 8);
    let per_round = common::env_usize("CAIRN_SOAK_QUERIES", 100);
    let edits = common::env_usize("CAIRN_SOAK_EDITS", 10);
    let kind = std::env::var("CAIRN_BENCH_STORE").unwrap_or_else(|_| "segment".into());
    let dir = tempfile::tempdir().expect("tempdir");
    let table = Table {
        start: Instant::now(),
        kind: kind.clone(),
        path: Some(dir.path().join("repo")),
    };
    println!(
        "\n### soak: {kind} store, {n} nodes in {BATCHES} commits, {rounds} rounds of {per_round} queries, \
         {edits} one-node edits, as-of HEAD~3, gc{}\n",
        if ann() { "; ANN dense lane" } else { "" }
    );
    table.header();
    table.row(None, "start", Duration::ZERO, "");
    let t = Instant::now();
    let repo = common::open_store(&kind, dir.path());
    table.row(Some(&repo), "open", t.elapsed(), "");

    // Probes: every `stride`-th node, one per query of the whole run (queries differ
    // across rounds, as an agent's do). Edits touch other nodes (offset by half a stride).
    let total_queries = (rounds * per_round).max(1);
    let stride = (n / total_queries).max(2);
    let mut probes = Vec::with_capacity(total_queries);
    let mut rng = common::Rng(0x5eed);
    let per_batch = n.div_ceil(BATCHES);
    for b in 0..BATCHES {
        let range = b * per_batch..((b + 1) * per_batch).min(n);
        let mut put = Duration::ZERO;
        let mut tx = repo.transaction().expect("tx");
        for i in range.clone() {
            let node = common::node(&mut rng, i);
            if i % stride == 0 && probes.len() < total_queries {
                probes.push(Probe::of(&node));
            }
            let t = Instant::now();
            tx.put_node(node).expect("put");
            put += t.elapsed();
        }
        let t = Instant::now();
        tx.commit(&format!("import batch {b}")).expect("commit");
        table.row(
            Some(&repo),
            &format!("import batch {}/{BATCHES} ({} nodes)", b + 1, range.len()),
            put + t.elapsed(),
            "",
        );
    }

    let mut edit_rng = common::Rng(0xed17);
    let mut next_probe = 0usize;
    for round in 1..=rounds {
        let t = Instant::now();
        let mut missed = 0usize;
        let mut lat = Vec::with_capacity(per_round);
        for _ in 0..per_round {
            let p = &probes[next_probe % probes.len()];
            next_probe += 1;
            let q = Instant::now();
            let r = query(&repo, p, None);
            lat.push(q.elapsed().as_secs_f64() * 1e3);
            if !found(&r, p) {
                missed += 1;
            }
        }
        lat.sort_by(f64::total_cmp);
        let p50 = lat.get(lat.len() / 2).copied().unwrap_or(0.0);
        table.row(
            Some(&repo),
            &format!("round {round}: {per_round} queries"),
            t.elapsed(),
            &format!("p50 {p50:.1} ms, probe not found: {missed}"),
        );

        let t = Instant::now();
        for e in 0..edits {
            let i = ((round * edits + e) * 7919) % (n / stride) * stride + stride / 2;
            let node = Node::new(NodeId::new(format!("doc-{i:07}")).expect("id"))
                .with_label(if i.is_multiple_of(1000) { "Rare" } else { "Document" })
                .with_text(common::text(&mut edit_rng, 50))
                .with_embedding("minilm", common::unit_vector(&mut edit_rng, DIM));
            let mut tx = repo.transaction().expect("tx");
            tx.put_node(node).expect("put");
            tx.commit(&format!("round {round} edit {e}")).expect("commit");
        }
        table.row(
            Some(&repo),
            &format!("round {round}: {edits} one-node edits"),
            t.elapsed(),
            "",
        );

        let t = Instant::now();
        let p = &probes[(round * 31) % probes.len()];
        let r = query(&repo, p, Some("HEAD~3"));
        let hit = found(&r, p);
        table.row(
            Some(&repo),
            &format!("round {round}: as-of HEAD~3 query"),
            t.elapsed(),
            if hit { "" } else { "probe not found" },
        );

        let t = Instant::now();
        let gc = repo.gc().expect("gc");
        table.row(
            Some(&repo),
            &format!("round {round}: gc"),
            t.elapsed(),
            &format!(
                "{} objects removed, {} derived removed",
                gc.objects_removed, gc.derived_removed
            ),
        );
    }

    if trim_heap() {
        table.row(
            Some(&repo),
            "malloc_trim(0)",
            Duration::ZERO,
            "free heap returned to the system",
        );
    }
    let t = Instant::now();
    drop(repo);
    table.row(None, "repository dropped", t.elapsed(), "");
    if trim_heap() {
        table.row(None, "malloc_trim(0)", Duration::ZERO, "");
    }
}
