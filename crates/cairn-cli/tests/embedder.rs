//! `cairn embedder`, `cairn import --embed` and `cairn retrieve --text` with an embedder,
//! end to end against a stub OpenAI-compatible service on loopback.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cairn_testkit::embed_stub;
use common::Sandbox;

/// A stub embeddings service: "wing" texts point one way, the rest another; the third
/// component is the request number (a drifting service). Returns its URL and request count.
fn stub() -> (String, Arc<AtomicUsize>) {
    let s = embed_stub(|text, n| {
        let wing = if text.contains("wing") { 1.0 } else { 0.0 };
        vec![wing, 1.0 - wing, n as f32 * 0.125]
    });
    (s.url, s.requests)
}

const DOCS: &str = r#"{"node": {"id": "a", "labels": ["Doc"], "text": "how wings stall"}}
{"node": {"id": "b", "labels": ["Doc"], "text": "rocket nozzles"}}
{"node": {"id": "c", "labels": ["Doc"], "text": "nozzle flow and a wing"}}
{"node": {"id": "d", "labels": ["Doc"], "text": ""}}
"#;

#[test]
fn set_import_embed_then_retrieve_text_uses_the_dense_lane() {
    let (url, requests) = stub();
    let s = Sandbox::init();
    s.ok(&[
        "embedder",
        "set",
        "oa",
        "--openai",
        &url,
        "stub-model",
        "--api-key-env",
        "CAIRN_TEST_NO_SUCH_KEY",
        "--retries",
        "0",
    ]);
    let list = s.ok(&["embedder", "list"]);
    assert!(
        list.contains("oa") && list.contains("stub-model") && list.contains("no vectors yet"),
        "{list}"
    );

    // Before any vector: --text runs BM25 alone and asks the service nothing.
    let docs = s.file("docs.jsonl", DOCS);
    s.ok(&["import", &docs]);
    let r = s.json(&["retrieve", "--text", "wing", "--json"]);
    assert_eq!(r["lanes"].as_array().unwrap().len(), 1);
    assert_eq!(requests.load(Ordering::SeqCst), 0);

    // import --embed: the three nodes with text get vectors (batches of 2), one commit.
    let more = s.file(
        "more.jsonl",
        r#"{"node": {"id": "e", "labels": ["Doc"], "text": "wing tips"}}"#,
    );
    let out = s.json(&["import", &more, "--embed", "oa", "--embed-batch", "2", "--json"]);
    assert_eq!(out["operations"], 1);
    assert_eq!(out["embed"]["embedded"], 4);
    assert!(out["embed"]["commit"].is_string());
    assert_eq!(requests.load(Ordering::SeqCst), 2);
    let list = s.json(&["embedder", "list", "--json"]);
    assert_eq!(list[0]["dim"], 3);
    assert_eq!(list[0]["config"]["kind"], "openai");

    // retrieve --text now adds dense:oa and says so.
    let r = s.json(&["retrieve", "--text", "wing", "--json"]);
    let lanes = r["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 2);
    assert_eq!(lanes[0]["name"], "dense:oa");
    assert_eq!(lanes[0]["embedded"], true);
    assert!(lanes[1].get("embedded").is_none());
    assert_eq!(requests.load(Ordering::SeqCst), 3);
    let human = s.ok(&["retrieve", "--text", "wing"]);
    assert!(
        human.contains("dense:oa") && human.contains("query embedded"),
        "{human}"
    );

    // Replayed: the cached vector, byte-identical output, no new request.
    let again = s.json(&["retrieve", "--text", "wing", "--json"]);
    assert_eq!(r, again);
    assert_eq!(requests.load(Ordering::SeqCst), 3);

    // --no-embed: BM25 alone.
    let plain = s.json(&["retrieve", "--text", "wing", "--json", "--no-embed"]);
    assert_eq!(plain["lanes"].as_array().unwrap().len(), 1);

    // Remove: retrieval falls back to BM25; removing twice fails.
    s.ok(&["embedder", "remove", "oa"]);
    let r = s.json(&["retrieve", "--text", "wing", "--json"]);
    assert_eq!(r["lanes"].as_array().unwrap().len(), 1);
    let err = s.fails_stderr(&["embedder", "remove", "oa"], 1);
    assert!(err.contains("no embedder named"), "{err}");
}

#[test]
fn a_dimension_other_than_the_repositorys_is_refused() {
    let s = Sandbox::init();
    let docs = s.file(
        "v.jsonl",
        r#"{"node": {"id": "a", "text": "x", "embeddings": {"oa": [1.0, 0.0, 0.0]}}}"#,
    );
    s.ok(&["import", &docs]);
    let err = s.fails_stderr(
        &[
            "embedder",
            "set",
            "oa",
            "--openai",
            "http://127.0.0.1:9",
            "m",
            "--dim",
            "4",
        ],
        1,
    );
    assert!(err.contains("4-dimensional") && err.contains("have 3"), "{err}");
    assert_eq!(s.ok(&["embedder", "list"]), "");
    let err = s.fails_stderr(
        &["embedder", "set", "bad/name", "--openai", "http://127.0.0.1:9", "m"],
        1,
    );
    assert!(err.contains("invalid embedder name"), "{err}");
}
