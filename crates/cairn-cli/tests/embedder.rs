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
    set_stub(&s, &url);
    let list = s.ok(&["embedder", "list"]);
    assert!(
        list.contains("oa") && list.contains("stub-model") && list.contains("no vectors yet"),
        "{list}"
    );

    // Imported without embedding on write, there is no vector: --text runs BM25 alone
    // and asks the service nothing.
    let docs = s.file("docs.jsonl", DOCS);
    s.ok(&["import", &docs, "--no-embed-on-write"]);
    let r = s.json(&["retrieve", "--text", "wing", "--json"]);
    assert_eq!(r["lanes"].as_array().unwrap().len(), 1);
    assert_eq!(requests.load(Ordering::SeqCst), 0);

    // import --embed: the three nodes with text get vectors (batches of 2), one commit.
    let more = s.file(
        "more.jsonl",
        r#"{"node": {"id": "e", "labels": ["Doc"], "text": "wing tips"}}"#,
    );
    let out = s.json(&[
        "import",
        &more,
        "--no-embed-on-write",
        "--embed",
        "oa",
        "--embed-batch",
        "2",
        "--json",
    ]);
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

/// A deterministic stub: "wing" texts one way, the rest another, the length tilting the
/// third component.
fn fixed(text: &str, _request: usize) -> Vec<f32> {
    let wing = if text.contains("wing") { 1.0 } else { 0.0 };
    vec![wing, 1.0 - wing, (text.len() % 7) as f32 * 0.125 + 0.125]
}

/// `cairn embedder set oa` on the OpenAI-compatible service at `url`: no key, no retry,
/// 2 s per request.
fn set_stub(s: &Sandbox, url: &str) {
    s.ok(&[
        "embedder",
        "set",
        "oa",
        "--openai",
        url,
        "stub-model",
        "--api-key-env",
        "CAIRN_TEST_NO_SUCH_KEY",
        "--retries",
        "0",
        "--timeout-ms",
        "2000",
    ]);
}

/// The `oa` vector of node `id` at the head (`null` if none).
fn vector_of(s: &Sandbox, id: &str) -> serde_json::Value {
    s.json(&["show", id, "--json"])["embeddings"]["oa"].clone()
}

#[test]
fn every_writer_embeds_on_write_in_the_same_commit() {
    let stub = embed_stub(fixed);
    let s = Sandbox::init();
    set_stub(&s, &stub.url);

    // cairn import: the nodes with text get their vectors in the import's one commit.
    let docs = s.file("docs.jsonl", DOCS);
    let out = s.json(&["import", &docs, "--json"]);
    assert_eq!(s.commit_count(), 1, "{out}");
    assert_eq!(vector_of(&s, "a"), serde_json::json!(fixed("how wings stall", 0)));
    assert_eq!(vector_of(&s, "b"), serde_json::json!(fixed("rocket nozzles", 0)));
    assert!(vector_of(&s, "d").is_null(), "no text, no vector");
    let requests = stub.request_count();
    assert!(requests >= 1);

    // Re-importing the same facts changes nothing: no commit, no request (the base's
    // vectors stand for the unchanged texts).
    s.ok(&["import", &docs]);
    assert_eq!(s.commit_count(), 1);
    assert_eq!(stub.request_count(), requests);

    // A patch of the text re-embeds; a patch that sets the vector keeps it.
    let patch = s.file(
        "patch.jsonl",
        r#"{"patch": {"id": "b", "text": "a wing of a rocket"}}
{"patch": {"id": "c", "text": "nozzle flow only", "embeddings": {"oa": [0.0, 0.0, 1.0]}}}"#,
    );
    s.ok(&["import", &patch]);
    assert_eq!(s.commit_count(), 2);
    assert_eq!(vector_of(&s, "b"), serde_json::json!(fixed("a wing of a rocket", 0)));
    assert_eq!(vector_of(&s, "c"), serde_json::json!([0.0, 0.0, 1.0]));

    // MCP remember embeds too.
    let mut mcp = s
        .command()
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::{BufRead, Write};
        let mut stdin = mcp.stdin.take().unwrap();
        let mut stdout = std::io::BufReader::new(mcp.stdout.take().unwrap());
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"message":"m","nodes":[{"id":"m1","text":"the wing flutters"}]}}}"#,
        ] {
            writeln!(stdin, "{line}").unwrap();
            let mut answer = String::new();
            stdout.read_line(&mut answer).unwrap();
            assert!(!answer.contains("\"isError\":true"), "{answer}");
        }
        drop(stdin);
        mcp.wait().unwrap();
    }
    assert_eq!(vector_of(&s, "m1"), serde_json::json!(fixed("the wing flutters", 0)));
    assert_eq!(s.commit_count(), 3);

    // POST /import (through `cairn --remote`) embeds too.
    {
        use std::io::BufRead;
        let mut served = s
            .command()
            .env_remove("CAIRN_REMOTE")
            .args(["serve", "--bind", "127.0.0.1:0"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(served.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().strip_prefix("listening on ").unwrap().to_string();
        let more = s.file("remote.jsonl", r#"{"node": {"id": "r1", "text": "wing root"}}"#);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(["--remote", &url, "import", &more])
            .env_remove("CAIRN_REPO")
            .env_remove("CAIRN_TOKEN")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let _ = served.kill();
        let _ = served.wait();
    }
    assert_eq!(vector_of(&s, "r1"), serde_json::json!(fixed("wing root", 0)));
    assert_eq!(s.commit_count(), 4);

    // The vectors equal what `import --embed` (a second commit) would have given.
    let t = Sandbox::init();
    let docs_t = t.file("docs.jsonl", DOCS);
    t.ok(&["import", &docs_t, "--no-embed-on-write"]);
    set_stub(&t, &stub.url);
    t.ok(&["import", &t.file("none.jsonl", ""), "--embed", "oa", "--allow-empty"]);
    assert_eq!(vector_of(&t, "a"), vector_of(&s, "a"));
}

#[test]
fn a_failing_embedder_commits_nothing() {
    let s = Sandbox::init();
    // Nothing listens on port 9: every request fails.
    set_stub(&s, "http://127.0.0.1:9");
    let docs = s.file("docs.jsonl", DOCS);
    let err = s.fails_stderr(&["import", &docs], 1);
    assert!(err.contains("embedder `oa`"), "{err}");
    assert!(!err.contains("line "), "not the line's fault: {err}");
    assert_eq!(s.commit_count(), 0);
    // Without embedding on write the same import lands.
    s.ok(&["import", &docs, "--no-embed-on-write"]);
    assert_eq!(s.commit_count(), 1);
}
