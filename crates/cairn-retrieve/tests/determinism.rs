//! Same commit + same spec ⇒ byte-identical result JSON: across threads, across
//! independently built sources, and with indexes decoded from their persisted bytes.

mod common;

use std::sync::Arc;

use cairn_index::{persist, CommitIndexes};
use cairn_retrieve::{execute_spec, Plugins, ResolvedCommit, RetrieveSpec};
use common::*;

const SPECS: &[&str] = &[
    r#"{"text": "wing stall", "vector": {"model": "minilm", "embedding": [1, 0, 0, 0]}}"#,
    r#"{"text": "stall drag boundary", "vector": {"model": "minilm", "embedding": [0.5, 0.5, 0.1, 0]},
        "expand": {"hops": 2, "max_nodes": 10}, "token_budget": 90, "limit": 6}"#,
    r#"{"sparse": {"model": "splade", "indices": [1, 2, 3], "values": [1, 1, 1]}, "text": "wings",
        "fusion": {"method": "score"}, "valid_at": "all_time"}"#,
];

fn json(commit: &ResolvedCommit, spec: &str) -> String {
    let spec = RetrieveSpec::from_json(spec).unwrap();
    serde_json::to_string(&execute_spec(commit, &spec, &Plugins::default()).unwrap()).unwrap()
}

#[test]
fn one_thread_and_many_threads_agree() {
    let src = source();
    let commit = src.commits["main"].clone();
    let expected: Vec<String> = SPECS.iter().map(|s| json(&commit, s)).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let commit = commit.clone();
                scope.spawn(move || {
                    (0..5)
                        .flat_map(|_| SPECS.iter().map(|s| json(&commit, s)).collect::<Vec<_>>())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            let got = h.join().unwrap();
            for (i, g) in got.iter().enumerate() {
                assert_eq!(g, &expected[i % SPECS.len()]);
            }
        }
    });
}

#[test]
fn rebuilt_and_reloaded_indexes_agree() {
    let fresh = source().commits["main"].clone();
    let rebuilt = source().commits["main"].clone();
    let loaded = ResolvedCommit {
        indexes: Arc::new(through_storage(&fresh.indexes)),
        ..fresh.clone()
    };
    assert_eq!(loaded.indexes.digest(), fresh.indexes.digest());
    for spec in SPECS {
        let a = json(&fresh, spec);
        assert_eq!(a, json(&rebuilt, spec));
        assert_eq!(a, json(&loaded, spec));
    }
}

/// The view rebuilt from its parts' stored encodings, each decoded by the bounded reader.
fn through_storage(view: &CommitIndexes) -> CommitIndexes {
    let k = cairn_core::Hash::of(b"chunk");
    // A core part stores no text: each is read back from where the part says its node
    // object holds it (here, the built parts' own texts).
    let mut texts = Rows::default();
    for c in view.chunks() {
        for l in 0..c.len() as u32 {
            let (node, offset) = c.text_place(l);
            texts.0.insert((node, offset), c.text(l).unwrap().as_bytes().to_vec());
        }
    }
    let texts: Arc<dyn cairn_index::RowSource> = Arc::new(texts);
    let cores = view
        .chunks()
        .iter()
        .map(|c| {
            let bytes = persist::encode_node_core(&k, c);
            Arc::new(persist::decode_node_core(&bytes, &k, Arc::clone(&texts), b"ck").unwrap())
        })
        .collect();
    let mut out = CommitIndexes::assemble(view.key, view.params().clone(), cores).unwrap();
    let texts = (0..view.chunks().len())
        .map(|c| {
            let t = view.text_part(c).unwrap();
            Arc::new(persist::decode_text(&persist::encode_text(&k, t), &k).unwrap())
        })
        .collect();
    out.set_text(texts).unwrap();
    for model in view.sparse_models() {
        let parts = (0..view.chunks().len())
            .map(|c| {
                view.sparse_part(&model, c).map(|p| {
                    let n = view.chunks()[c].len() as u32;
                    Arc::new(
                        persist::decode_sparse(&persist::encode_sparse(&k, &model, n, p), &k)
                            .unwrap()
                            .1,
                    )
                })
            })
            .collect();
        out.set_sparse(&model, parts).unwrap();
    }
    for model in view.dense_models().into_keys() {
        let d = view.dense(&model).unwrap();
        // A dense part stores no vectors: they are read back from where the parts say
        // their node objects hold them (here, the built parts' own rows).
        let mut rows = Rows::default();
        for p in (0..view.chunks().len()).filter_map(|c| d.part(c)) {
            for r in 0..p.len() {
                let (node, offset) = p.row_place(r).unwrap();
                let bytes = p.vector(r).unwrap().iter().flat_map(|x| x.to_le_bytes()).collect();
                rows.0.insert((node, offset), bytes);
            }
        }
        let rows: Arc<dyn cairn_index::RowSource> = Arc::new(rows);
        let parts = (0..view.chunks().len())
            .map(|c| {
                d.part(c).map(|p| {
                    let n = view.chunks()[c].len() as u32;
                    let head = persist::decode_dense(&persist::encode_dense(&k, &model, n, p), &k)
                        .unwrap()
                        .2;
                    Arc::new(head.into_rows_held(Arc::clone(&rows), b"ck"))
                })
            })
            .collect();
        out.set_dense(&model, parts).unwrap();
    }
    let edges = view.edges().unwrap();
    let dec = |dir, cs: &[Arc<cairn_index::EdgeChunk>]| -> Vec<Arc<cairn_index::EdgeChunk>> {
        cs.iter()
            .map(|c| Arc::new(persist::decode_edges(&persist::encode_edges(&k, dir, c), &k).unwrap().1))
            .collect()
    };
    out.set_edges(
        dec(cairn_index::EdgeDirection::Out, edges.out_chunks()),
        dec(cairn_index::EdgeDirection::In, edges.in_chunks()),
    );
    out
}

/// Paragraphs that name years in their text, and a question about a range of years: the
/// text-date boost takes part, and the bytes are the same across threads, through storage
/// and in another process.
#[test]
fn text_date_boost_gives_the_same_bytes_everywhere() {
    let nodes: Vec<cairn_core::Node> = (0..40)
        .map(|i| {
            cairn_core::Node::new(id(&format!("p{i:02}")))
                .with_label("Page")
                .with_text(format!(
                    "The house was owned by owner {i} from {} to {}, then sold.",
                    1900 + i,
                    1903 + i
                ))
                .with_embedding("minilm", vec![1.0, (i % 7) as f32 * 0.01, 0.0, 0.0])
        })
        .collect();
    let commit = resolved("dated", 0, nodes, &[]);
    let spec = r#"{"text": "who owned the house from 1916 to 1920?",
        "vector": {"model": "minilm", "embedding": [1, 0.02, 0, 0]}, "explain": true, "limit": 8}"#;
    let a = json(&commit, spec);
    if std::env::var_os("CAIRN_DETERMINISM_CHILD").is_some() {
        println!("<<{a}>>");
        return;
    }
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["plan"]["boosts"][1]["kind"], "text_dates", "{a}");
    assert!(v["plan"]["boosted"].as_u64().unwrap() > 0);
    let top = &v["items"][0];
    assert!(
        top["explain"]["terms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["lane"] == "boost:text_date"),
        "{top}"
    );
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| json(&commit, spec))).collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), a);
        }
    });
    let loaded = ResolvedCommit {
        indexes: Arc::new(through_storage(&commit.indexes)),
        ..commit.clone()
    };
    assert_eq!(json(&loaded, spec), a);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "text_date_boost_gives_the_same_bytes_everywhere",
            "--exact",
            "--nocapture",
        ])
        .env("CAIRN_DETERMINISM_CHILD", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains(&format!("<<{a}>>")));
}

/// Vectors and texts by the node object and offset a part reads them at.
#[derive(Default)]
struct Rows(std::collections::HashMap<(cairn_core::Hash, u32), Vec<u8>>);

impl cairn_index::RowSource for Rows {
    fn read_at(&self, _: &[u8], _: u64, _: &mut [u8]) -> Result<bool, String> {
        Ok(false)
    }
    fn read_object_at(&self, node: &cairn_core::Hash, offset: u64, out: &mut [u8]) -> Result<bool, String> {
        let Some(bytes) = u32::try_from(offset).ok().and_then(|o| self.0.get(&(*node, o))) else {
            return Ok(false);
        };
        let found = bytes.len() == out.len();
        if found {
            out.copy_from_slice(bytes);
        }
        Ok(found)
    }
    fn node_vector(&self, _: &cairn_core::Hash, _: &str) -> Result<Vec<f32>, String> {
        Err("no objects here".into())
    }
    fn node_text(&self, _: &cairn_core::Hash) -> Result<String, String> {
        Err("no objects here".into())
    }
    fn damaged(&self, _: &[u8], _: String) {}
}
