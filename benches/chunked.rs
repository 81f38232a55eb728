//! The shared-index targets (issue "indexes that share structure across commits"), as a
//! table: `cargo bench --bench chunked`.
//!
//! Corpus: N nodes (100,000; `CAIRN_BENCH_1M=1` for 1,000,000, `CAIRN_BENCH_10M=1` for
//! 10,000,000; `CAIRN_BENCH_N` for any),
//! 10 labels plus `Rare` on 0.1 %, ~50-word texts, one 384-d vector and one hashed sparse
//! vector each. Vectors are clustered the way text embeddings are (200 topics: a topic
//! centre plus noise, L2-normalised) and each text draws most words from its topic's
//! vocabulary; `CAIRN_BENCH_UNIFORM=1` uses uniformly random unit vectors instead. 200
//! queries (a topic's centre plus noise, four topic words, one of the 10 labels).
//!
//! Each store (memory, segment, then sled; `CAIRN_BENCH_STORE` for one) runs in a child process of its own, so its peak RSS is
//! its own: import (one commit), first query (index build included), 1,000 queries exact
//! (hybrid; vector + label and sparse + label, limit 10)
//! and ANN (the dense lane alone: exact and ANN each in a pass of its own, recall from the
//! two passes' answers), 100 one-node edits each followed by a query, as-of HEAD~1 in the process that
//! has HEAD's index; then, for the on-disk stores, a fresh process opens the repository and times the
//! cold as-of query. `CAIRN_BENCH_ROUNDS` sets the warm queries per row (1,000; at least
//! the 200 queries); `CAIRN_BENCH_CHILD_EDITS=N` (and `CAIRN_BENCH_CHILD_SETTLE=1`: then the wait for its
//! background threads) has that fresh process also time N one-node
//! commits, each with its next query, and its close (which stores the unit texts it owes
//! later processes), `CAIRN_BENCH_CHILD_ANN=1` ANN queries without a gate
//! (`CAIRN_BENCH_CHILD_ANN_LOOP=N`: then N more, alone, for `perf record`),
//! `CAIRN_BENCH_CHILD_SPARSE=1` sparse + label queries, `CAIRN_BENCH_ASOF_REPEAT=N` (instead of
//! all that) N cold as-of queries, each through a fresh handle in the one process, and `CAIRN_BENCH_CHILD_TRACE=1` prints its RSS
//! after the open and after the as-of query (anonymous and file-backed, with the index cache's bytes and parts loaded). For runs at 10M: `CAIRN_BENCH_QUERIES=Q` uses the
//! first Q of the 200 queries in every row (recall included), `CAIRN_BENCH_EDITS=E` times E
//! one-node edits instead of 100, and `CAIRN_BENCH_DIR=PATH` makes the repository under
//! PATH instead of the system's temporary directory (a file system with room for it).
//! Each row is also written to stderr with the seconds since the start and the process's
//! resident and peak memory and its user and system CPU time at that moment. Tests never
//! assert times; this prints them.

mod common;

use std::time::{Duration, Instant};

use cairn::{Node, NodeId, Repo, SparseVector, StoreKind};

const DIM: usize = 384;
const TOPICS: usize = 200;
const LABELS: usize = 10;
const QUERIES: usize = 200;
const ROUNDS: usize = 1000;

/// Warm queries per row: [`ROUNDS`], or `CAIRN_BENCH_ROUNDS` (shorter runs at large `N`).
fn rounds() -> usize {
    std::env::var("CAIRN_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ROUNDS)
        .max(queries_n())
}

/// The queries each row uses: the first `CAIRN_BENCH_QUERIES` (1 to [`QUERIES`]) or all.
fn queries_n() -> usize {
    std::env::var("CAIRN_BENCH_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(QUERIES)
        .clamp(1, QUERIES)
}

/// One-node edits, each followed by a query: enough for a p50 that the VM's noise does
/// not move by half.
const EDITS: usize = 100;

/// [`EDITS`], or `CAIRN_BENCH_EDITS` (at least 1).
fn edits_n() -> usize {
    std::env::var("CAIRN_BENCH_EDITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(EDITS)
        .max(1)
}

/// When the process started, for the progress lines on stderr.
static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

struct Corpus {
    centres: Vec<Vec<f32>>,
    topic_words: Vec<Vec<String>>,
    uniform: bool,
}

impl Corpus {
    fn new(uniform: bool) -> Corpus {
        let mut rng = common::Rng(0x5eed);
        let centres = (0..TOPICS).map(|_| common::unit_vector(&mut rng, DIM)).collect();
        let topic_words = (0..TOPICS)
            .map(|t| {
                (0..40)
                    .map(|w| format!("{}{t}x{w}", common::WORDS[w % common::WORDS.len()]))
                    .collect()
            })
            .collect();
        Corpus {
            centres,
            topic_words,
            uniform,
        }
    }

    fn vector(&self, rng: &mut common::Rng, topic: usize, noise: f32) -> Vec<f32> {
        if self.uniform {
            return common::unit_vector(rng, DIM);
        }
        let mut v: Vec<f32> = self.centres[topic].iter().map(|c| c + noise * rng.unit()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    fn text(&self, rng: &mut common::Rng, topic: usize, words: usize) -> String {
        (0..words)
            .map(|_| {
                if rng.next().is_multiple_of(4) {
                    common::WORDS[(rng.next() % common::WORDS.len() as u64) as usize].to_string()
                } else {
                    self.topic_words[topic][(rng.next() % 40) as usize].clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn node(&self, i: usize, salt: u64) -> Node {
        let mut rng = common::Rng(0x9e37_79b9 ^ (i as u64).wrapping_mul(0x1000_0001) ^ salt);
        let topic = (rng.next() % TOPICS as u64) as usize;
        let text = self.text(&mut rng, topic, 50);
        let sparse = hashed_sparse(&text);
        let mut node = Node::new(NodeId::new(format!("doc-{i:07}")).expect("id"))
            .with_label(format!("L{}", i % LABELS))
            .with_text(text)
            .with_embedding("minilm", self.vector(&mut rng, topic, 0.08))
            .with_sparse("kw", sparse)
            .with_prop("topic", topic as i64);
        if i.is_multiple_of(1000) {
            node = node.with_label("Rare");
        }
        node
    }

    fn queries(&self) -> Vec<(Vec<f32>, String, String)> {
        let mut rng = common::Rng(q_seed());
        (0..QUERIES)
            .map(|q| {
                let topic = (rng.next() % TOPICS as u64) as usize;
                (
                    self.vector(&mut rng, topic, 0.12),
                    self.text(&mut rng, topic, 4),
                    format!("L{}", q % LABELS),
                )
            })
            .collect()
    }
}

/// A text's words hashed into 65,536 dimensions, each word's count its weight.
fn hashed_sparse(text: &str) -> SparseVector {
    let mut sparse: Vec<(u32, f32)> = text.split(' ').map(|w| (fnv(w) % 65_536, 1.0)).collect();
    sparse.sort_by_key(|p| p.0);
    let mut merged: Vec<(u32, f32)> = Vec::new();
    for (d, w) in sparse {
        match merged.last_mut() {
            Some(l) if l.0 == d => l.1 += w,
            _ => merged.push((d, w)),
        }
    }
    SparseVector::new(
        merged.iter().map(|p| p.0).collect(),
        merged.iter().map(|p| p.1).collect(),
    )
}

/// FNV-1a of a word, for the hashed sparse vectors.
fn fnv(w: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in w.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

const fn q_seed() -> u64 {
    0x51ee_d00d
}

fn peak_rss_mib() -> f64 {
    rss_mib("VmHWM:")
}

/// A `/proc/self/status` memory line (`VmRSS:` now, `VmHWM:` the peak) in MiB.
fn rss_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn query(repo: &Repo, q: &(Vec<f32>, String, String), ann: bool, at: Option<&str>) -> cairn::retrieve::RetrievalResult {
    let mut r = repo
        .retrieve()
        .label(q.2.clone())
        .vector("minilm", &q.0)
        .text(q.1.clone())
        .token_budget(2000)
        .limit(100);
    r = if ann { r.approximate(100) } else { r.exact() };
    if let Some(at) = at {
        r = r.at(at);
    }
    r.execute().expect("retrieve")
}

/// The share of `exact`'s items (top 10) that `got` has too.
fn recall_at_10(got: &cairn::retrieve::RetrievalResult, exact: &cairn::retrieve::RetrievalResult) -> f64 {
    got.items
        .iter()
        .filter(|a| exact.items.iter().any(|e| e.id == a.id))
        .count() as f64
        / 10.0
}

/// One-node edit number `e`: a commit that replaces one node (a different one each time)
/// with new content.
fn edit(repo: &Repo, corpus: &Corpus, n: usize, e: usize) {
    let mut tx = repo.transaction().expect("tx");
    tx.put_node(corpus.node((e * 7919) % n, 1 + e as u64)).expect("put");
    tx.commit("edit").expect("commit");
}

fn row(name: &str, value: String) {
    println!("| {name} | {value} |");
    let start = START.get_or_init(Instant::now);
    let (user, sys) = cpu_seconds();
    eprintln!(
        "[{:7.1} s, RSS {:.0} / peak {:.0} MiB, CPU user {user:.2} / sys {sys:.2} s] {name}: {value}",
        start.elapsed().as_secs_f64(),
        rss_mib("VmRSS:"),
        rss_mib("VmHWM:")
    );
}

/// The process's CPU time so far, user and system, from `/proc/self/stat` (clock ticks of
/// 1/100 s); zeros where it cannot be read.
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) and its closing parenthesis:
    // state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    match (f.get(11), f.get(12)) {
        (Some(u), Some(s)) => (u / 100.0, s / 100.0),
        _ => (0.0, 0.0),
    }
}

fn run_store(kind: &str, n: usize) {
    let corpus = Corpus::new(std::env::var("CAIRN_BENCH_UNIFORM").is_ok());
    let dir = match std::env::var("CAIRN_BENCH_DIR") {
        Ok(parent) => tempfile::tempdir_in(parent),
        Err(_) => tempfile::tempdir(),
    }
    .expect("tempdir");
    // `CAIRN_BENCH_KEEP=DIR`: the repository is made in DIR and left there (for profiling
    // a query process with `CAIRN_BENCH_CHILD=asof CAIRN_BENCH_REPO=DIR`).
    // An empty value is no directory (it would make the repository in the working
    // directory).
    let path = match std::env::var("CAIRN_BENCH_KEEP") {
        Ok(keep) if !keep.is_empty() => std::path::PathBuf::from(keep),
        _ => dir.path().join("repo"),
    };
    let repo = match kind {
        "segment" => Repo::init_with(&path, StoreKind::Segment).expect("init"),
        "sled" => Repo::init_with(&path, StoreKind::Sled).expect("init"),
        "memory" => Repo::in_memory().expect("repo"),
        other => panic!("CAIRN_BENCH_STORE={other}: expected `memory`, `segment` or `sled`"),
    };
    // `CAIRN_BENCH_CACHE_MIB`: the index cache's budget (a quarter of it bounds the f32
    // rows held in memory; beyond, they are read from the store).
    if let Some(mib) = std::env::var("CAIRN_BENCH_CACHE_MIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        repo.set_memory_budget(mib << 20);
    }
    println!("\n### {kind} store, {n} nodes\n");
    println!("| measurement | value |");
    println!("|---|---|");
    // Import time: the puts and the commit (not the corpus generator's own time).
    let mut import = Duration::ZERO;
    let mut tx = repo.transaction().expect("tx");
    for i in 0..n {
        let node = corpus.node(i, 0);
        let t = Instant::now();
        tx.put_node(node).expect("put");
        import += t.elapsed();
    }
    let t = Instant::now();
    tx.commit("bulk").expect("commit");
    import += t.elapsed();
    row("bulk import (one commit)", format!("{:.2} s", import.as_secs_f64()));
    row("peak RSS after the import", format!("{:.0} MiB", peak_rss_mib()));

    let queries = corpus.queries();
    // `CAIRN_BENCH_STEPS=1`: the first retrieve's index steps, each run's start and end
    // (seconds since the query began), on stderr.
    steps_trace(&repo);
    let t = Instant::now();
    query(&repo, &queries[0], false, None);
    let first = t.elapsed();
    repo.set_progress(None);
    row(
        "first retrieve after the bulk commit, index build included (alone / with the commit)",
        format!("{:.2} s / {:.2} s", first.as_secs_f64(), (first + import).as_secs_f64()),
    );
    let stats = repo.index_stats();
    let (stored_values, stored_bytes) = (stats.stored_values, stats.stored_bytes);
    row(
        "peak RSS after the first query / index cache",
        format!(
            "{:.0} MiB / {:.0} MiB",
            peak_rss_mib(),
            stats.cached_bytes as f64 / 1048576.0
        ),
    );
    row(
        "index values stored by the build",
        format!("{stored_values} ({:.1} MiB)", stored_bytes as f64 / 1048576.0),
    );

    // Exact, warm.
    let mut lat = Vec::with_capacity(rounds());
    let mut rescored_sample = None;
    for i in 0..rounds() {
        let t = Instant::now();
        let r = query(&repo, &queries[i % queries_n()], false, None);
        lat.push(ms(t.elapsed()));
        if i == 0 {
            rescored_sample = Some(r.items.len());
        }
    }
    row(
        "vector + text + label, budget 2000, limit 100, p50, exact dense",
        format!("{:.2} ms ({} items)", p50(lat), rescored_sample.unwrap_or(0)),
    );

    // One lane with the label gate, limit 10 (the issue's "vector + label" and "sparse +
    // label" rows): the query's vector, or its four words as the corpus hashes them.
    let (mut vec_lat, mut sparse_lat) = (Vec::with_capacity(rounds()), Vec::with_capacity(rounds()));
    for i in 0..rounds() {
        let q = &queries[i % queries_n()];
        let t = Instant::now();
        repo.retrieve()
            .label(q.2.clone())
            .vector("minilm", &q.0)
            .limit(10)
            .exact()
            .execute()
            .expect("retrieve");
        vec_lat.push(ms(t.elapsed()));
        let t = Instant::now();
        repo.retrieve()
            .label(q.2.clone())
            .sparse("kw", hashed_sparse(&q.1))
            .limit(10)
            .execute()
            .expect("retrieve");
        sparse_lat.push(ms(t.elapsed()));
    }
    row(
        "vector + label, limit 10, exact p50 / sparse + label, limit 10, p50",
        format!("{:.2} ms / {:.2} ms", p50(vec_lat), p50(sparse_lat)),
    );

    // ANN: first query builds the unit graphs.
    let t = Instant::now();
    query(&repo, &queries[0], true, None);
    row(
        "first ANN query (unit graphs built)",
        format!("{:.2} s", t.elapsed().as_secs_f64()),
    );
    let mut lat = Vec::with_capacity(rounds());
    for i in 0..rounds() {
        let t = Instant::now();
        query(&repo, &queries[i % queries_n()], true, None);
        lat.push(ms(t.elapsed()));
    }
    // recall@10 of the dense lane in ANN mode against exact, over the queries.
    let mut overlap = 0.0;
    for q in &queries[..queries_n()] {
        let exact = repo
            .retrieve()
            .label(q.2.clone())
            .vector("minilm", &q.0)
            .limit(10)
            .exact()
            .execute()
            .expect("r");
        let ann = repo
            .retrieve()
            .label(q.2.clone())
            .vector("minilm", &q.0)
            .limit(10)
            .approximate(100)
            .execute()
            .expect("r");
        overlap += recall_at_10(&ann, &exact);
    }
    row(
        "the same in ANN mode, p50 / dense recall@10 vs exact",
        format!("{:.2} ms / {:.4}", p50(lat), overlap / queries_n() as f64),
    );

    // The dense lane alone, no gate, limit 10: exact, then ANN at the default depth; recall@10
    // of ANN against exact over the queries.
    let dense_only = |q: &(Vec<f32>, String, String), ann: bool| {
        let r = repo.retrieve().vector("minilm", &q.0).limit(10);
        let r = if ann { r.approximate_default() } else { r.exact() };
        r.execute().expect("retrieve")
    };
    // Each mode in its own pass (an exact 1M scan between two ANN queries would evict what
    // the walks keep in cache; a workload of ANN queries does not interleave them), then
    // recall from the two passes' answers.
    let timed = |ann: bool| {
        let (mut lat, mut answers) = (Vec::with_capacity(rounds()), Vec::with_capacity(queries_n()));
        for i in 0..rounds() {
            let t = Instant::now();
            let r = dense_only(&queries[i % queries_n()], ann);
            lat.push(ms(t.elapsed()));
            if i < queries_n() {
                answers.push(r);
            }
        }
        (lat, answers)
    };
    let (exact_lat, exact) = timed(false);
    let (ann_lat, ann) = timed(true);
    let overlap: f64 = ann.iter().zip(&exact).map(|(a, e)| recall_at_10(a, e)).sum();
    row(
        "vector, no gate, limit 10 (each mode its own pass): exact p50 / ANN (default depth) p50 / ANN recall@10 vs exact",
        format!(
            "{:.2} ms / {:.2} ms / {:.4}",
            p50(exact_lat),
            p50(ann_lat),
            overlap / queries_n() as f64
        ),
    );

    // One-node edits, each followed by a query.
    let mut work = Vec::new();
    let mut bytes = Vec::new();
    let edits = edits_n();
    for e in 0..edits {
        let before = repo.index_stats().stored_bytes;
        edit(&repo, &corpus, n, e);
        let t = Instant::now();
        query(&repo, &queries[e % queries_n()], false, None);
        work.push(ms(t.elapsed()));
        let after = repo.index_stats().stored_bytes;
        bytes.push((after - before) as f64 / 1024.0);
    }
    row(
        &format!("index work for a 1-node commit + the next query (p50 / max of {edits})"),
        format!(
            "{:.2} ms / {:.2} ms",
            p50(work.clone()),
            work.iter().cloned().fold(0.0, f64::max)
        ),
    );
    if kind != "memory" {
        row(
            "new stored index bytes per 1-node commit (p50 / max)",
            format!(
                "{:.0} KiB / {:.0} KiB",
                p50(bytes.clone()),
                bytes.iter().cloned().fold(0.0, f64::max)
            ),
        );
    }
    // One-node edits, each followed by an ANN query (no gate, default depth): the query
    // walks a base commit's unit graphs (`derived/graph_base.rs`), so graphs are built
    // only when the base moves.
    let mut ann_work = Vec::new();
    let graphs_before = repo.index_stats().graphs_built;
    let ann_edits = (edits / 2).max(1);
    for e in 0..ann_edits {
        edit(&repo, &corpus, n, edits + e);
        let t = Instant::now();
        dense_only(&queries[e % queries_n()], true);
        ann_work.push(ms(t.elapsed()));
    }
    row(
        &format!("1-node commit + the next ANN query, no gate (p50 / max of {ann_edits}; graphs built)"),
        format!(
            "{:.2} ms / {:.2} ms; {}",
            p50(ann_work.clone()),
            ann_work.iter().cloned().fold(0.0, f64::max),
            repo.index_stats().graphs_built - graphs_before
        ),
    );
    // As-of HEAD~1 in a process that has HEAD's index: reset HEAD~1's view by editing.
    let t = Instant::now();
    query(&repo, &queries[1], false, Some("HEAD~1"));
    row(
        "cold as-of HEAD~1 in a process that has HEAD's index",
        format!("{:.2} ms", ms(t.elapsed())),
    );
    row("peak RSS of the whole run", format!("{:.0} MiB", peak_rss_mib()));
    // `CAIRN_BENCH_NO_CHILD=1`: no fresh process after the run (with `CAIRN_BENCH_KEEP`, the
    // repository is left as the run's close left it, for a first fresh process to be timed
    // by hand).
    if kind != "memory" && std::env::var("CAIRN_BENCH_NO_CHILD").is_err() {
        drop(repo);
        let out = std::process::Command::new(std::env::current_exe().expect("exe"))
            .env("CAIRN_BENCH_CHILD", "asof")
            .env("CAIRN_BENCH_REPO", &path)
            .output()
            .expect("child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The first of `queries` answered by `run` (timed alone: what it loads), then the p50 of
/// [`rounds`] more.
fn first_and_p50<R>(
    queries: &[(Vec<f32>, String, String)],
    run: impl Fn(&(Vec<f32>, String, String)) -> R,
) -> (Duration, f64) {
    let t = Instant::now();
    run(&queries[0]);
    let first = t.elapsed();
    let mut lat = Vec::with_capacity(rounds());
    for i in 0..rounds() {
        let t = Instant::now();
        run(&queries[i % queries_n()]);
        lat.push(ms(t.elapsed()));
    }
    (first, p50(lat))
}

/// `CAIRN_BENCH_STEPS=1`: the index steps of the next queries, each run's start and end
/// (seconds since this call, RSS, and the monotonic clock, to cut a
/// `perf record -k CLOCK_MONOTONIC` profile at the steps), on stderr.
fn steps_trace(repo: &Repo) {
    if std::env::var("CAIRN_BENCH_STEPS").is_ok() {
        let t0 = Instant::now();
        repo.set_progress(Some(std::sync::Arc::new(move |p: &cairn::Progress| {
            if p.done == 0 || Some(p.done) == p.total {
                eprintln!(
                    "  step {:6.3} s, RSS {:.0} MiB (anonymous {:.0}): {:?} {}/{:?}",
                    t0.elapsed().as_secs_f64(),
                    rss_mib("VmRSS:"),
                    rss_mib("RssAnon:"),
                    p.step,
                    p.done,
                    p.total,
                );
            }
        })));
    }
}

fn child_asof() {
    let path = std::env::var("CAIRN_BENCH_REPO").expect("repo");
    let corpus = Corpus::new(std::env::var("CAIRN_BENCH_UNIFORM").is_ok());
    let queries = corpus.queries();
    // `CAIRN_BENCH_ASOF_REV=REV` queries REV instead of HEAD~1 (a kept repository of one
    // commit: `HEAD`).
    let rev = std::env::var("CAIRN_BENCH_ASOF_REV").unwrap_or_else(|_| "HEAD~1".into());
    // `CAIRN_BENCH_ASOF_REPEAT=N`: open the repository N times in this process, each handle
    // answering one cold as-of query (its parts loaded from the store, the page cache and
    // the allocator warm): the CPU cost of a view's load, for A/B comparisons.
    if let Some(n) = std::env::var("CAIRN_BENCH_ASOF_REPEAT")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n {
            let repo = Repo::open(&path).expect("open");
            let t = Instant::now();
            query(&repo, &queries[1], false, Some(&rev));
            lat.push(ms(t.elapsed()));
        }
        let all: Vec<String> = lat.iter().map(|l| format!("{l:.0}")).collect();
        row(
            &format!("cold as-of in a fresh handle, {n} in one process: p50 (each, ms)"),
            format!("{:.1} ms ({})", p50(lat), all.join(", ")),
        );
        return;
    }
    let t = Instant::now();
    let repo = Repo::open(&path).expect("open");
    let open = t.elapsed();
    steps_trace(&repo);
    if std::env::var("CAIRN_BENCH_CHILD_TRACE").is_ok() {
        eprintln!("after open: RSS {:.0} MiB", rss_mib("VmRSS:"));
    }
    if let Some(mib) = std::env::var("CAIRN_BENCH_CACHE_MIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        repo.set_memory_budget(mib << 20);
    }
    let t = Instant::now();
    let r = query(&repo, &queries[1], false, Some(&rev));
    let asof = t.elapsed();
    row(
        "cold as-of HEAD~1 in a fresh process (open / query)",
        format!("{:.0} ms / {:.0} ms", ms(open), ms(asof)),
    );
    if std::env::var("CAIRN_BENCH_CHILD_TRACE").is_ok() {
        let st = repo.index_stats();
        eprintln!(
            "after as-of: RSS {:.0} MiB (anonymous {:.0}, file {:.0}), cached {} MiB, parts loaded {}",
            rss_mib("VmRSS:"),
            rss_mib("RssAnon:"),
            rss_mib("RssFile:"),
            st.cached_bytes >> 20,
            st.parts_loaded
        );
    }
    for w in &r.warnings {
        eprintln!("as-of warning: {:?} {}", w.code, w.message);
    }
    // The same process then answers the bench query at HEAD (its index loaded from the
    // store, not built): a query process's latency and memory.
    let t = Instant::now();
    query(&repo, &queries[0], false, None);
    let first = t.elapsed();
    let mut lat = Vec::with_capacity(rounds());
    for i in 0..rounds() {
        let t = Instant::now();
        query(&repo, &queries[i % queries_n()], false, None);
        lat.push(ms(t.elapsed()));
    }
    row(
        "that process at HEAD: first query (index loaded) / p50, exact / its peak RSS",
        format!("{:.0} ms / {:.2} ms / {:.0} MiB", ms(first), p50(lat), peak_rss_mib()),
    );
    // `CAIRN_BENCH_CHILD_ANN=1`: then the dense lane alone, no gate, limit 10, at the
    // default ANN depth (unit graphs loaded from the store on the first query).
    if std::env::var("CAIRN_BENCH_CHILD_ANN").is_ok() {
        // `CAIRN_BENCH_CHILD_ANN_REV=REV` asks at REV (`root`: the first commit, whose units
        // are its own: no overlay scanned exactly); the exact queries of the recall too.
        let at = match std::env::var("CAIRN_BENCH_CHILD_ANN_REV").as_deref() {
            Ok("root") => {
                let log = repo.log(None, None).expect("log");
                log.last().map(|(id, _)| id.to_string()).expect("a commit")
            }
            Ok(rev) => rev.to_string(),
            Err(_) => "HEAD".to_string(),
        };
        let ann = |q: &(Vec<f32>, String, String)| {
            repo.retrieve()
                .at(&at)
                .vector("minilm", &q.0)
                .limit(10)
                .approximate_default()
                .execute()
                .expect("retrieve")
        };
        let (first, p50) = first_and_p50(&queries, ann);
        // `CAIRN_BENCH_CHILD_ANN_LOOP=N`: then N more of them alone (for `perf record`).
        if let Some(n) = std::env::var("CAIRN_BENCH_CHILD_ANN_LOOP")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
        {
            let t = Instant::now();
            for i in 0..n {
                ann(&queries[i % queries_n()]);
            }
            eprintln!("{n} ANN queries: {:.2} ms each", ms(t.elapsed()) / n.max(1) as f64);
        }
        // Recall@10 against the exact lane over the queries, after the timed rounds.
        let mut overlap = 0.0;
        for q in &queries[..queries_n()] {
            let exact = repo
                .retrieve()
                .at(&at)
                .vector("minilm", &q.0)
                .limit(10)
                .execute()
                .expect("retrieve");
            overlap += recall_at_10(&ann(q), &exact);
        }
        row(
            "that process: vector, no gate, limit 10, ANN: first query (graphs loaded) / p50 / recall@10",
            format!(
                "{:.0} ms / {:.2} ms / {:.4}",
                ms(first),
                p50,
                overlap / queries_n() as f64
            ),
        );
    }
    // `CAIRN_BENCH_CHILD_SPARSE=1`: then the sparse lane with the label gate, limit 10 (its
    // parts and directory loaded from the store on the first query).
    if std::env::var("CAIRN_BENCH_CHILD_SPARSE").is_ok() {
        let sparse = |q: &(Vec<f32>, String, String)| {
            repo.retrieve()
                .label(q.2.clone())
                .sparse("kw", hashed_sparse(&q.1))
                .limit(10)
                .execute()
                .expect("retrieve")
        };
        let (first, p50) = first_and_p50(&queries, sparse);
        row(
            "that process: sparse + label, limit 10: first query (parts loaded) / p50",
            format!("{:.0} ms / {:.2} ms", ms(first), p50),
        );
    }
    // `CAIRN_BENCH_CHILD_EDITS=N`: then N one-node commits, each timed with its next query
    // (for profiling the commit path in a process whose index was loaded, not built).
    if let Some(edits) = std::env::var("CAIRN_BENCH_CHILD_EDITS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let n = repo.indexes("HEAD").expect("index").node_count() as usize;
        let (mut commit, mut next, mut again) = (Vec::new(), Vec::new(), Vec::new());
        // Edits this repository has not seen yet (a rerun on a kept repository too).
        let base = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1000, |d| d.as_secs() as usize % 1_000_000 * 1000);
        for e in 0..edits {
            let t = Instant::now();
            edit(&repo, &corpus, n, base + e);
            commit.push(ms(t.elapsed()));
            let t = Instant::now();
            query(&repo, &queries[e % queries_n()], false, None);
            next.push(ms(t.elapsed()));
            // The same query again on the same view: what the next query pays once per
            // view (its assembly, first touches) against what any query on it pays.
            let t = Instant::now();
            query(&repo, &queries[e % queries_n()], false, None);
            again.push(ms(t.elapsed()));
        }
        let total: f64 = next.iter().sum();
        let max = next.iter().copied().fold(0.0, f64::max);
        row(
            &format!(
                "that process: 1-node commit / next query / the same query again, p50 of {edits}; next query: max / total"
            ),
            format!(
                "{:.2} ms / {:.2} ms / {:.2} ms; {max:.0} ms / {total:.0} ms",
                p50(commit),
                p50(next),
                p50(again)
            ),
        );
        // `CAIRN_BENCH_CHILD_SETTLE=1`: then how long the handle's background threads take to
        // finish what the edits queued (the unit texts of a base the views moved to,
        // stored for a later fresh process).
        if std::env::var("CAIRN_BENCH_CHILD_SETTLE").is_ok() {
            let t = Instant::now();
            while repo.index_stats().background_busy {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            row(
                "that process: background work left after the edits",
                format!("{:.0} ms", ms(t.elapsed())),
            );
        }
        // Closing stores what the background still owes later processes (the unit texts
        // of the latest base, `derived/base_texts.rs`).
        let t = Instant::now();
        drop(repo);
        row(
            "that process: close after the edits",
            format!("{:.0} ms", ms(t.elapsed())),
        );
    }
}

/// `CAIRN_BENCH_PROFILE=1`: import, then loop the exact query (for `perf record`);
/// `=build` stops after the first query, `=stages` prints where a warm query's time goes,
/// `=edits` loops one-node commits each followed by the query.
fn profile(n: usize) {
    let corpus = Corpus::new(false);
    let repo = Repo::in_memory().expect("repo");
    let t = Instant::now();
    let nodes: Vec<Node> = (0..n).map(|i| corpus.node(i, 0)).collect();
    eprintln!("generate {:?}", t.elapsed());
    let t = Instant::now();
    let mut tx = repo.transaction().expect("tx");
    for node in nodes {
        tx.put_node(node).expect("put");
    }
    eprintln!("put {:?}", t.elapsed());
    let t = Instant::now();
    tx.commit("bulk").expect("commit");
    eprintln!("commit {:?}", t.elapsed());
    let queries = corpus.queries();
    let t = Instant::now();
    query(&repo, &queries[0], false, None);
    eprintln!("first query {:?}", t.elapsed());
    match std::env::var("CAIRN_BENCH_PROFILE").as_deref() {
        Ok("build") => return,
        Ok("stages") => return stages(&repo, &queries),
        Ok("edits") => {
            // One-node commits, each followed by the query: for `perf record -D` past the
            // build.
            for round in 0..3 {
                let t = Instant::now();
                for e in round * 300..(round + 1) * 300 {
                    edit(&repo, &corpus, n, e);
                    query(&repo, &queries[e % queries_n()], false, None);
                }
                eprintln!("300 edits + queries, round {round}: {:?}", t.elapsed());
            }
            return;
        }
        _ => {}
    }
    let t = Instant::now();
    for i in 0..300 {
        query(&repo, &queries[i % queries_n()], false, None);
    }
    eprintln!("300 queries {:?}", t.elapsed());
}

/// `CAIRN_BENCH_PROFILE=stages`: p50 of the hybrid query's parts, each run alone through
/// the public API (a part's time includes the gates and packing it needs): where the
/// milliseconds of the warm hybrid query go.
fn stages(repo: &Repo, queries: &[(Vec<f32>, String, String)]) {
    type R<'a> = cairn::retrieve::Retrieval<&'a Repo>;
    type Shape = for<'a> fn(R<'a>, &(Vec<f32>, String, String)) -> R<'a>;
    let shapes: [(&str, Shape); 7] = [
        ("label gate only (list, limit 1)", |r, q| {
            r.label(q.2.clone()).list().limit(1)
        }),
        ("text lane, no gate, limit 1", |r, q| r.text(q.1.clone()).limit(1)),
        ("text lane + label, limit 1", |r, q| {
            r.label(q.2.clone()).text(q.1.clone()).limit(1)
        }),
        ("dense lane + label, depth 1000, limit 1", |r, q| {
            r.label(q.2.clone()).vector("minilm", &q.0).exact().depth(1000).limit(1)
        }),
        ("dense lane + label, depth 100, limit 1", |r, q| {
            r.label(q.2.clone()).vector("minilm", &q.0).exact().depth(100).limit(1)
        }),
        ("hybrid + label, limit 1 (fusion, no packing)", |r, q| {
            r.label(q.2.clone())
                .vector("minilm", &q.0)
                .text(q.1.clone())
                .exact()
                .limit(1)
        }),
        ("hybrid + label, budget 2000, limit 100 (the bench query)", |r, q| {
            r.label(q.2.clone())
                .vector("minilm", &q.0)
                .text(q.1.clone())
                .exact()
                .token_budget(2000)
                .limit(100)
        }),
    ];
    // Three rounds over the shapes, each shape's p50 the lowest of its rounds: the VM's
    // noise moves single rounds by up to ~30 %.
    // `CAIRN_BENCH_STAGE=N` runs only the N-th shape (from 1), for `perf record`.
    let only: Option<usize> = std::env::var("CAIRN_BENCH_STAGE").ok().and_then(|v| v.parse().ok());
    // `CAIRN_BENCH_STAGE_QUERIES` / `CAIRN_BENCH_STAGE_ROUNDS` shorten a run at 1M.
    let per_round: usize = std::env::var("CAIRN_BENCH_STAGE_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let rounds: usize = std::env::var("CAIRN_BENCH_STAGE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut best = vec![f64::INFINITY; shapes.len()];
    for _ in 0..rounds {
        for (n, ((_, shape), best)) in shapes.iter().zip(&mut best).enumerate() {
            if only.is_some_and(|o| o != n + 1) {
                continue;
            }
            let mut lat = Vec::new();
            for i in 0..per_round {
                let q = &queries[i % queries_n()];
                let t = Instant::now();
                shape(repo.retrieve(), q).execute().expect("retrieve");
                lat.push(ms(t.elapsed()));
            }
            *best = best.min(p50(lat));
        }
    }
    println!("| stage | p50 ms (best of 3 rounds) |");
    println!("|---|---:|");
    // Shapes left out by `CAIRN_BENCH_STAGE` did not run: no row.
    for ((name, _), best) in shapes.iter().zip(best).filter(|(_, b)| b.is_finite()) {
        println!("| {name} | {best:.2} |");
    }
}

fn main() {
    START.get_or_init(Instant::now);
    if std::env::var("CAIRN_BENCH_PROFILE").is_ok() {
        profile(
            std::env::var("CAIRN_BENCH_N")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(100_000),
        );
        return;
    }
    if std::env::var("CAIRN_BENCH_CHILD").as_deref() == Ok("asof") {
        child_asof();
        return;
    }
    let n: usize = std::env::var("CAIRN_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if std::env::var("CAIRN_BENCH_10M").is_ok() {
            10_000_000
        } else if std::env::var("CAIRN_BENCH_1M").is_ok() {
            1_000_000
        } else {
            100_000
        });
    if let Ok(kind) = std::env::var("CAIRN_BENCH_STORE") {
        run_store(&kind, n);
        return;
    }
    // `cargo bench` passes `--bench`; each store runs in a process of its own.
    for kind in ["memory", "segment", "sled"] {
        let status = std::process::Command::new(std::env::current_exe().expect("exe"))
            .env("CAIRN_BENCH_STORE", kind)
            .env("CAIRN_BENCH_N", n.to_string())
            .status()
            .expect("child");
        assert!(status.success());
    }
}
