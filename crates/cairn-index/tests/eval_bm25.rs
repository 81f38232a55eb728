//! BM25 quality against the reference implementation (`shared/eval/baselines.py`) on real
//! judged collections: Cranfield and CISI must match the reference nDCG@10 and Recall@100
//! within 0.01 for both analyzers and both parameter sets. Vaswani (NPL), the acceptance
//! set, is only reported, by an ignored test. Skipped, with a message, where
//! `../shared/eval` is absent.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cairn_core::{Hash, Node, NodeId};
use cairn_index::{Analyzer, Bm25Params, CommitIndexes, IndexParams};

struct Collection {
    /// Document ids in ordinal (id byte) order.
    doc_ids: Vec<String>,
    /// Document texts, same order.
    texts: Vec<String>,
    /// `(query id, text)` in file order.
    queries: Vec<(String, String)>,
    /// query id → doc id → grade (> 0 only).
    relevant: HashMap<String, HashMap<String, u32>>,
}

fn eval_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval")
}

fn str_field(v: &serde_json::Value, k: &str) -> String {
    v.get(k).and_then(|x| x.as_str()).unwrap_or_default().to_string()
}

fn load(dir: &Path) -> Collection {
    let read = |f: &str| fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(f).display()));
    let mut docs: Vec<(String, String)> = read("corpus.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let text = format!("{} {}", str_field(&v, "title"), str_field(&v, "text"))
                .trim()
                .to_string();
            (str_field(&v, "id"), text)
        })
        .collect();
    // Ordinals follow NodeId byte order, which is the reference's tie-break (string order).
    docs.sort_by(|a, b| {
        NodeId::new(a.0.clone())
            .unwrap()
            .cmp(&NodeId::new(b.0.clone()).unwrap())
    });
    let queries = read("queries.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (str_field(&v, "id"), str_field(&v, "text"))
        })
        .collect();
    let mut relevant: HashMap<String, HashMap<String, u32>> = HashMap::new();
    for line in read("qrels.tsv").lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() == 3 {
            let grade: i64 = f[2].trim().parse().unwrap();
            if grade > 0 {
                relevant
                    .entry(f[0].to_string())
                    .or_default()
                    .insert(f[1].to_string(), grade as u32);
            }
        }
    }
    let (doc_ids, texts) = docs.into_iter().unzip();
    Collection {
        doc_ids,
        texts,
        queries,
        relevant,
    }
}

/// (nDCG@10, Recall@100, judged queries), trec_eval conventions as in baselines.py.
/// The collection as an in-memory index view (chunked as a repository would chunk it).
fn index(c: &Collection, bm25: Bm25Params) -> CommitIndexes {
    let nodes: Vec<(Hash, Node)> = c
        .doc_ids
        .iter()
        .zip(&c.texts)
        .map(|(id, t)| {
            (
                Hash::of(id.as_bytes()),
                Node::new(NodeId::new(id.clone()).unwrap()).with_text(t.clone()),
            )
        })
        .collect();
    let params = IndexParams {
        bm25,
        ..IndexParams::default()
    };
    CommitIndexes::build(Hash::ZERO, &params, &nodes, &[])
}

fn evaluate(c: &Collection, index: &CommitIndexes) -> (f64, f64, usize) {
    let (mut ndcg, mut recall, mut n) = (0.0, 0.0, 0usize);
    for (qid, text) in &c.queries {
        let Some(rel) = c.relevant.get(qid) else { continue };
        let hits = index.text_search(text, 100, None).unwrap();
        let ranked: Vec<&str> = hits.iter().map(|h| index.id(h.ordinal)).collect();
        let dcg: f64 = ranked
            .iter()
            .take(10)
            .enumerate()
            .map(|(r, d)| f64::from(rel.get(*d).copied().unwrap_or(0)) / ((r + 2) as f64).log2())
            .sum();
        let mut ideal: Vec<u32> = rel.values().copied().collect();
        ideal.sort_unstable_by(|a, b| b.cmp(a));
        let idcg: f64 = ideal
            .iter()
            .take(10)
            .enumerate()
            .map(|(r, g)| f64::from(*g) / ((r + 2) as f64).log2())
            .sum();
        ndcg += dcg / idcg;
        recall += ranked.iter().filter(|d| rel.contains_key(**d)).count() as f64 / rel.len() as f64;
        n += 1;
    }
    (ndcg / n as f64, recall / n as f64, n)
}

/// Reference rows of `shared/eval/README.md`: (collection, stem, k1, b) → (nDCG@10, R@100).
#[allow(clippy::approx_constant)] // 0.4342 is a measured nDCG, not log10(e)
fn reference() -> BTreeMap<(&'static str, bool, u32, u32), (f64, f64)> {
    let k = |k1: f32, b: f32| (k1.to_bits(), b.to_bits());
    let mut m = BTreeMap::new();
    let mut add = |c, stem, (k1, b): (u32, u32), ndcg, r| {
        m.insert((c, stem, k1, b), (ndcg, r));
    };
    add("cranfield", false, k(0.9, 0.4), 0.3478, 0.6874);
    add("cranfield", false, k(1.2, 0.75), 0.3640, 0.7036);
    add("cranfield", true, k(0.9, 0.4), 0.3660, 0.7209);
    add("cranfield", true, k(1.2, 0.75), 0.3845, 0.7350);
    add("cisi", false, k(0.9, 0.4), 0.3113, 0.4066);
    add("cisi", false, k(1.2, 0.75), 0.3423, 0.4106);
    add("cisi", true, k(0.9, 0.4), 0.3568, 0.4194);
    add("cisi", true, k(1.2, 0.75), 0.3721, 0.4330);
    add("vaswani", false, k(0.9, 0.4), 0.3807, 0.4917);
    add("vaswani", false, k(1.2, 0.75), 0.3572, 0.4758);
    add("vaswani", true, k(0.9, 0.4), 0.4412, 0.6226);
    add("vaswani", true, k(1.2, 0.75), 0.4342, 0.6038);
    m
}

/// Evaluates every analyzer and parameter set on `names`; returns the rows off the
/// reference by more than 0.01 (empty if the data is absent).
fn run(names: &[&str]) -> Vec<String> {
    let root = eval_root();
    if !root.is_dir() {
        println!("skipping: ../shared/eval not found (looked in {})", root.display());
        return Vec::new();
    }
    let refs = reference();
    let mut off = Vec::new();
    println!("| collection | method | nDCG@10 | ref | R@100 | ref | queries | build |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for &name in names {
        let dir = root.join(name);
        if !dir.is_dir() {
            println!("skipping {name}: {} not found", dir.display());
            continue;
        }
        let c = load(&dir);
        for stem in [false, true] {
            for (k1, b) in [(0.9f32, 0.4f32), (1.2, 0.75)] {
                let params = Bm25Params {
                    k1,
                    b,
                    analyzer: Analyzer { stem },
                };
                let t = Instant::now();
                let index = index(&c, params);
                let build = t.elapsed();
                let (ndcg, recall, n) = evaluate(&c, &index);
                let (rn, rr) = refs[&(name, stem, k1.to_bits(), b.to_bits())];
                let method = format!("bm25-{}(k1={k1},b={b})", if stem { "stem" } else { "plain" });
                println!(
                    "| {name} | {method} | {ndcg:.4} | {rn:.4} | {recall:.4} | {rr:.4} | {n} | {:.0} ms |",
                    build.as_secs_f64() * 1e3
                );
                if (ndcg - rn).abs() > 0.01 || (recall - rr).abs() > 0.01 {
                    off.push(format!(
                        "{name} {method}: nDCG@10 {ndcg:.4} vs {rn}, R@100 {recall:.4} vs {rr}"
                    ));
                }
            }
        }
    }
    off
}

#[test]
fn bm25_matches_reference_numbers() {
    let off = run(&["cranfield", "cisi"]);
    assert!(
        off.is_empty(),
        "off the reference by more than 0.01:\n{}",
        off.join("\n")
    );
}

/// Vaswani (NPL) is the acceptance set: reported, never asserted or tuned on.
/// `cargo test -p cairn-index --test eval_bm25 -- --ignored --nocapture`
#[test]
#[ignore]
fn bm25_vaswani_report() {
    for line in run(&["vaswani"]) {
        println!("note: {line}");
    }
}
