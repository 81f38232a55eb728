//! Same commit + same spec ⇒ byte-identical result JSON: across threads, across
//! independently built sources, and with indexes decoded from their persisted bytes.

mod common;

use std::sync::Arc;

use cairn_index::persist::{decode_indexes, encode_indexes};
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
    let bytes = encode_indexes(&fresh.indexes);
    let loaded = ResolvedCommit {
        indexes: Arc::new(decode_indexes(&bytes, &fresh.indexes.key).unwrap()),
        ..fresh.clone()
    };
    for spec in SPECS {
        let a = json(&fresh, spec);
        assert_eq!(a, json(&rebuilt, spec));
        assert_eq!(a, json(&loaded, spec));
    }
}
