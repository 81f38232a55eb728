//! The result JSON of several retrievals over the hand-written corpus, pinned.

mod common;

use cairn_retrieve::{Plugins, Retrieval, RetrievalResult, RetrieveSpec};
use common::*;

fn run(json: &str) -> RetrievalResult {
    let src = source();
    let spec = RetrieveSpec::from_json(json).expect("test specs parse");
    Retrieval::from_spec(&src, spec)
        .plugins(Plugins::default())
        .execute()
        .expect("test specs run")
}

#[test]
fn hybrid() {
    insta::assert_json_snapshot!(run(
        r#"{"text": "wing stall", "vector": {"model": "minilm", "embedding": [1, 0, 0, 0]}, "limit": 5}"#
    ));
}

#[test]
fn gated() {
    insta::assert_json_snapshot!(run(
        r#"{"text": "wing", "vector": {"model": "minilm", "embedding": [0.9, 0.2, 0.1, 0]},
            "labels_all": ["Document"],
            "where": [{"key": "lang", "op": "eq", "value": "en"}, {"key": "year", "op": "range", "min": 1955, "max": 1969}],
            "limit": 5}"#
    ));
}

#[test]
fn expanded() {
    insta::assert_json_snapshot!(run(r#"{"text": "pilots recovery", "labels_any": ["Document", "Topic"],
            "expand": {"hops": 2, "max_nodes": 5}, "limit": 8, "text_cap": 40}"#));
}

#[test]
fn hybrid_expanded() {
    insta::assert_json_snapshot!(run(
        r#"{"text": "wing stall", "vector": {"model": "minilm", "embedding": [1, 0, 0, 0]},
            "expand": {"hops": 1, "max_nodes": 3, "seeds": 3, "hop_decay": 1.0}, "limit": 14, "text_cap": 30}"#
    ));
}

#[test]
fn budgeted() {
    insta::assert_json_snapshot!(run(
        r#"{"vector": {"model": "minilm", "embedding": [1, 0, 0, 0]}, "token_budget": 100,
            "render_props": ["title", "year"], "limit": 10}"#
    ));
}

#[test]
fn sparse_weighted_at_old_commit_all_time() {
    insta::assert_json_snapshot!(run(
        r#"{"text": "stall", "sparse": {"model": "splade", "indices": [1, 4], "values": [1.0, 0.5]},
            "fusion": {"method": "weighted_rrf", "k": 10, "weights": {"sparse:splade": 2.0}},
            "at": "old", "valid_at": "all_time", "limit": 4, "text_cap": 30}"#
    ));
}
