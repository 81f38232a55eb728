//! The dense lane on real judged collections (`../shared/eval`: Cranfield, CISI, Vaswani
//! with all-MiniLM-L6-v2 embeddings). Exact search must reproduce the reference nDCG@10 and
//! Recall@100 of `eval/README.md` to 3 decimals; search through an HNSW base must stay
//! within 0.01 nDCG@10. Skips with a message when the data is absent.
//!
//! Run the heavy parts with `cargo test --release -p cairn-index --test eval_dense --
//! --ignored --nocapture` (the Vaswani acceptance run and the parameter sweep).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cairn_core::NodeId;
use cairn_index::dense::INT8_RESCORE;
use cairn_index::hnsw::HnswParams;
use cairn_index::DenseIndex;

const DIM: usize = 384;

struct Collection {
    name: &'static str,
    /// Node ids in ordinal (string) order.
    ids: Vec<String>,
    index: DenseIndex,
    /// Query vectors, `DIM` each, in file order.
    queries: Vec<Vec<f32>>,
    query_ids: Vec<String>,
    /// query id → (doc id → gain), relevant docs only.
    qrels: HashMap<String, HashMap<String, f64>>,
}

/// CPU seconds this process has used (user + system, from `/proc/self/stat`; 10 ms ticks).
/// The machines these run on are shared, so CPU time is a steadier measure than wall time.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
    let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let f: Vec<&str> = after.split(' ').collect();
    let ticks: f64 =
        f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0.0) + f.get(12).and_then(|x| x.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn eval_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval")
}

fn read_ids(path: &PathBuf) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|line| {
            let rest = line.strip_prefix("{\"id\": \"").expect("jsonl line starts with the id");
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

fn read_f32(path: &PathBuf) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn load(name: &'static str) -> Option<Collection> {
    let dir = eval_dir().join(name);
    if !dir.join("corpus.emb.f32").exists() {
        eprintln!(
            "SKIP eval_dense/{name}: {} not found (the eval data lives outside the repo)",
            dir.display()
        );
        return None;
    }
    let doc_ids = read_ids(&dir.join("corpus.jsonl"));
    let doc_vecs = read_f32(&dir.join("corpus.emb.f32"));
    assert_eq!(doc_vecs.len(), doc_ids.len() * DIM);
    // Ordinals follow NodeId (byte string) order, not file order.
    let mut order: Vec<usize> = (0..doc_ids.len()).collect();
    order.sort_by(|&a, &b| doc_ids[a].cmp(&doc_ids[b]));
    let ids: Vec<String> = order.iter().map(|&i| doc_ids[i].clone()).collect();
    let index = DenseIndex::build(
        "minilm",
        DIM,
        ids.len() as u32,
        order
            .iter()
            .enumerate()
            .map(|(o, &i)| (o as u32, &doc_vecs[i * DIM..(i + 1) * DIM])),
    );
    let query_ids = read_ids(&dir.join("queries.jsonl"));
    let qv = read_f32(&dir.join("queries.emb.f32"));
    assert_eq!(qv.len(), query_ids.len() * DIM);
    let queries = qv.chunks_exact(DIM).map(|c| c.to_vec()).collect();
    let mut qrels: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for line in std::fs::read_to_string(dir.join("qrels.tsv")).unwrap().lines().skip(1) {
        let mut f = line.split('\t');
        let (q, d, s) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        let score: f64 = s.trim().parse().unwrap();
        if score > 0.0 {
            qrels.entry(q.to_string()).or_default().insert(d.to_string(), score);
        }
    }
    Some(Collection {
        name,
        ids,
        index,
        queries,
        query_ids,
        qrels,
    })
}

/// trec_eval's nDCG@10 and Recall@100 for one ranking (doc ids, best first).
fn metrics(ranking: &[&str], rel: &HashMap<String, f64>) -> (f64, f64) {
    let dcg: f64 = ranking
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, d)| rel.get(*d).copied().unwrap_or(0.0) / ((i + 2) as f64).log2())
        .sum();
    let mut gains: Vec<f64> = rel.values().copied().collect();
    gains.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = gains
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, g)| g / ((i + 2) as f64).log2())
        .sum();
    let found = ranking.iter().take(100).filter(|d| rel.contains_key(**d)).count();
    (dcg / idcg, found as f64 / rel.len() as f64)
}

struct Run {
    ndcg10: f64,
    recall100: f64,
    queries: usize,
}

/// Mean metrics over judged queries, ranking each with `search(query, k)` → ordinals.
fn evaluate(c: &Collection, k: usize, mut search: impl FnMut(&[f32], usize) -> Vec<u32>) -> Run {
    let (mut n, mut r, mut count) = (0.0, 0.0, 0);
    for (qid, q) in c.query_ids.iter().zip(&c.queries) {
        let Some(rel) = c.qrels.get(qid) else { continue };
        let ords = search(q, k);
        let ranking: Vec<&str> = ords.iter().map(|&o| c.ids[o as usize].as_str()).collect();
        let (a, b) = metrics(&ranking, rel);
        n += a;
        r += b;
        count += 1;
    }
    Run {
        ndcg10: n / count as f64,
        recall100: r / count as f64,
        queries: count,
    }
}

fn exact_ranking(index: &DenseIndex, q: &[f32], k: usize) -> Vec<u32> {
    let out = index.search(q, k, None).unwrap();
    assert!(!out.approximate || index.base().is_some());
    out.hits.iter().map(|h| h.ordinal).collect()
}

/// Mean overlap of the top-10 sets of `index` (through its base) and the exact scan.
fn recall_at_10(c: &Collection, index: &DenseIndex) -> f64 {
    let mut sum = 0.0;
    for q in &c.queries {
        let want = c.index.search(q, 10, None).unwrap().hits;
        let got = index.search(q, 10, None).unwrap();
        assert!(got.approximate);
        sum += got
            .hits
            .iter()
            .filter(|h| want.iter().any(|w| w.ordinal == h.ordinal))
            .count() as f64
            / 10.0;
    }
    sum / c.queries.len() as f64
}

fn node_ids(c: &Collection) -> Vec<NodeId> {
    c.ids.iter().map(|s| NodeId::new(s.clone()).unwrap()).collect()
}

fn check_exact(c: &Collection, want_ndcg: f64, want_recall: f64) {
    let run = evaluate(c, 100, |q, k| exact_ranking(&c.index, q, k));
    println!(
        "{} exact: nDCG@10 {:.4} (ref {want_ndcg}), Recall@100 {:.4} (ref {want_recall}), {} queries",
        c.name, run.ndcg10, run.recall100, run.queries
    );
    assert!(
        (run.ndcg10 - want_ndcg).abs() < 5e-4,
        "{} nDCG@10 {}",
        c.name,
        run.ndcg10
    );
    assert!(
        (run.recall100 - want_recall).abs() < 5e-4,
        "{} Recall@100 {}",
        c.name,
        run.recall100
    );
}

fn check_hnsw(c: &Collection, params: &HnswParams) -> (f64, f64, f64) {
    let exact = evaluate(c, 10, |q, k| exact_ranking(&c.index, q, k));
    let t = cpu_seconds();
    let base = Arc::new(c.index.build_base(&node_ids(c), params).unwrap());
    let build_s = cpu_seconds() - t;
    let index = c.index.with_base(base);
    let run = evaluate(c, 10, |q, k| {
        let out = index.search(q, k, None).unwrap();
        assert!(out.approximate);
        out.hits.iter().map(|h| h.ordinal).collect()
    });
    let recall = recall_at_10(c, &index);
    println!(
        "{} hnsw {params:?}: build {build_s:.2} CPU s, nDCG@10 {:.4} (exact {:.4}), recall@10 vs exact {recall:.4}",
        c.name, run.ndcg10, exact.ndcg10
    );
    assert!(
        (run.ndcg10 - exact.ndcg10).abs() <= 0.01,
        "{} hnsw nDCG@10 {}",
        c.name,
        run.ndcg10
    );
    (run.ndcg10, recall, build_s)
}

/// The int8 scan with exact rescoring: nDCG@10 and recall@10 against the exact scan, for a
/// few candidate counts; the default must keep recall@10 >= 0.99 and nDCG@10 within 0.01.
fn check_int8(c: &Collection) {
    let exact = evaluate(c, 10, |q, k| exact_ranking(&c.index, q, k));
    for rescore in [20, 50, INT8_RESCORE] {
        let run = evaluate(c, 10, |q, k| {
            c.index
                .search_int8(q, k, rescore, None)
                .unwrap()
                .hits
                .iter()
                .map(|h| h.ordinal)
                .collect()
        });
        let mut overlap = 0.0;
        for q in &c.queries {
            let want = c.index.search(q, 10, None).unwrap().hits;
            let got = c.index.search_int8(q, 10, rescore, None).unwrap().hits;
            overlap += got.iter().filter(|h| want.contains(h)).count() as f64 / 10.0;
        }
        let recall = overlap / c.queries.len() as f64;
        println!(
            "{} int8 scan, {rescore} rescored: nDCG@10 {:.4} (exact {:.4}), recall@10 vs exact {recall:.4}",
            c.name, run.ndcg10, exact.ndcg10
        );
        if rescore == INT8_RESCORE {
            assert!(recall >= 0.99, "{} int8 recall@10 {recall}", c.name);
            assert!((run.ndcg10 - exact.ndcg10).abs() <= 0.01);
        }
    }
}

#[test]
fn cranfield_and_cisi_int8_scan() {
    for name in ["cranfield", "cisi"] {
        if let Some(c) = load(name) {
            check_int8(&c);
        }
    }
}

#[test]
fn cranfield_exact_matches_reference() {
    if let Some(c) = load("cranfield") {
        check_exact(&c, 0.3998, 0.7724);
    }
}

#[test]
fn cisi_exact_matches_reference() {
    if let Some(c) = load("cisi") {
        check_exact(&c, 0.4192, 0.4720);
    }
}

#[test]
fn cranfield_and_cisi_through_hnsw() {
    for name in ["cranfield", "cisi"] {
        if let Some(c) = load(name) {
            let (_, recall, _) = check_hnsw(&c, &HnswParams::default());
            assert!(recall >= 0.99, "{name} recall@10 {recall}");
        }
    }
}

/// The acceptance set: reported, not tuned on.
#[test]
#[ignore = "builds an HNSW graph over 11,429 docs; run with --release --ignored"]
fn vaswani_acceptance() {
    let Some(c) = load("vaswani") else { return };
    check_exact(&c, 0.4335, 0.6074);
    check_int8(&c);
    let (ndcg, recall, build_s) = check_hnsw(&c, &HnswParams::default());
    let base = Arc::new(c.index.build_base(&node_ids(&c), &HnswParams::default()).unwrap());
    let index = c.index.with_base(base);
    // Median wall time per query, and mean CPU time over 5 rounds.
    let time = |f: &dyn Fn(&[f32])| {
        let mut per: Vec<f64> = c
            .queries
            .iter()
            .map(|q| {
                let t = Instant::now();
                f(q);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        per.sort_by(f64::total_cmp);
        let t = cpu_seconds();
        for _ in 0..5 {
            c.queries.iter().for_each(|q| f(q));
        }
        (
            per[per.len() / 2],
            (cpu_seconds() - t) * 1e3 / (5 * c.queries.len()) as f64,
        )
    };
    let exact_ms = time(&|q| {
        c.index.search(q, 10, None).unwrap();
    });
    let hnsw_ms = time(&|q| {
        index.search(q, 10, None).unwrap();
    });
    let int8_ms = time(&|q| {
        c.index.search_int8(q, 10, INT8_RESCORE, None).unwrap();
    });
    println!(
        "vaswani: hnsw build {build_s:.2} CPU s, nDCG@10 {ndcg:.4}, recall@10 {recall:.4}; query (p50 wall, mean CPU) \
         exact {exact_ms:.3?} ms, hnsw {hnsw_ms:.3?} ms, int8 scan {int8_ms:.3?} ms"
    );
}

/// How the default parameters were chosen (Cranfield and CISI only).
#[test]
#[ignore = "parameter sweep; run with --release --ignored --nocapture"]
fn hnsw_parameter_sweep() {
    let sets: Vec<Collection> = ["cranfield", "cisi"].into_iter().filter_map(load).collect();
    let d = HnswParams::default();
    let grid = [
        HnswParams { heuristic: true, ..d },
        HnswParams {
            ef_construction: 50,
            ..d
        },
        d,
        HnswParams {
            ef_construction: 200,
            ..d
        },
        HnswParams { ef_search: 64, ..d },
        HnswParams { ef_search: 40, ..d },
        HnswParams { ef_search: 256, ..d },
    ];
    let mut table = BTreeMap::new();
    for p in grid {
        for c in &sets {
            let (ndcg, recall, build_s) = check_hnsw(c, &p);
            let base = Arc::new(c.index.build_base(&node_ids(c), &p).unwrap());
            let index = c.index.with_base(base);
            let rounds = 20;
            let t = cpu_seconds();
            for _ in 0..rounds {
                for q in &c.queries {
                    index.search(q, 10, None).unwrap();
                }
            }
            let ms = (cpu_seconds() - t) * 1e3 / (rounds * c.queries.len()) as f64;
            table.insert(format!("{:?} {}", p, c.name), (build_s, ndcg, recall, ms));
        }
    }
    for (k, (b, n, r, ms)) in table {
        println!("{k}: build {b:.2} CPU s  nDCG@10 {n:.4}  recall@10 {r:.4}  {ms:.3} CPU ms/query");
    }
}
