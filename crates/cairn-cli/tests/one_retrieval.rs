//! One retrieval entry point: the same spec gives the same result bytes from the library
//! (builder and spec), `cairn retrieve` (flags, `--spec`, `--batch`), `cairn serve`
//! (`POST /retrieve`, single and batch) and `cairn mcp` (`recall`) — with the
//! repository's query embedder, without one, and with `"embed": false`. (Python is held
//! to the same bytes in `crates/cairn-py/tests/test_cli_parity.py`.)

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;

use cairn::retrieve::{Retrieval, RetrieveSpec};
use cairn::Repo;
use cairn_testkit::embed_stub;
use common::{Sandbox, Served};
use serde_json::{json, Value};

const DOCS: &str = r#"{"node": {"id": "a", "labels": ["Doc"], "text": "how wings stall at high angles"}}
{"node": {"id": "b", "labels": ["Doc"], "text": "rocket nozzles and their flow"}}
{"node": {"id": "c", "labels": ["Doc"], "text": "nozzle flow past a wing"}}
{"node": {"id": "d", "labels": ["Doc"], "text": "stall of a compressor blade"}}
{"node": {"id": "e", "labels": ["Note"], "text": "wing tips and vortices"}}
"#;

/// A deterministic stub service: "wing" texts point one way, the rest another, and the
/// text's length tilts the third component (no drift between requests).
fn vector(text: &str, _request: usize) -> Vec<f32> {
    let wing = if text.contains("wing") { 1.0 } else { 0.0 };
    vec![wing, 1.0 - wing, (text.len() % 7) as f32 * 0.125]
}

/// A repository with the five documents; with `embedder`, an `oa` embedder on the stub
/// and every node embedded.
fn sandbox(embedder: bool) -> Sandbox {
    let s = Sandbox::init();
    let docs = s.file("docs.jsonl", DOCS);
    if embedder {
        let stub = embed_stub(vector);
        s.ok(&[
            "embedder",
            "set",
            "oa",
            "--openai",
            &stub.url,
            "stub-model",
            "--api-key-env",
            "CAIRN_TEST_NO_SUCH_KEY",
            "--retries",
            "0",
        ]);
        s.ok(&["import", &docs, "--embed", "oa"]);
    } else {
        s.ok(&["import", &docs]);
    }
    s
}

/// `cairn retrieve ARGS --json`, less its newline.
fn cli(s: &Sandbox, args: &[&str]) -> String {
    let mut all = vec!["retrieve"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = s.ok(&all);
    out.strip_suffix('\n').expect("one line").to_string()
}

/// The library's bytes for `spec` (a fresh handle, as another process would have).
fn library(s: &Sandbox, spec: &str) -> String {
    // The other tests of this binary spawn `cairn` processes meanwhile: a child between
    // its fork and its exec still holds a copy of every descriptor, the lock file's of a
    // handle this thread just dropped included, so an open can briefly find the store
    // locked. That window closes within milliseconds.
    let mut tries = 0;
    let repo = loop {
        match Repo::open(s.repo()) {
            Err(cairn::Error::Store(cairn::StoreError::Locked { .. })) if tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.unwrap(),
        }
    };
    let result = Retrieval::from_spec(&repo, RetrieveSpec::from_json(spec).unwrap())
        .execute()
        .unwrap();
    serde_json::to_string(&result).unwrap()
}

/// `POST /retrieve` to `served` with `body`: (status, body), over a plain HTTP/1.1
/// connection.
fn post_retrieve(served: &Served, body: &str) -> (u16, String) {
    let addr = served
        .url
        .strip_prefix("http://")
        .unwrap_or(&served.url)
        .trim_end_matches('/');
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /retrieve HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, rest) = raw.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    (status, if chunked { dechunk(rest) } else { rest.to_string() })
}

/// A chunked HTTP/1.1 body, joined.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

/// `recall` over a `cairn mcp` session: each response line, raw.
fn mcp_recall(s: &Sandbox, specs: &[&str]) -> Vec<String> {
    let mut child = s
        .command()
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cairn mcp");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    let mut send = |v: Value, answer: bool| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
        if answer {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            Some(line.trim_end().to_string())
        } else {
            None
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params":
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        true,
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), false);
    for (i, spec) in specs.iter().enumerate() {
        let args: Value = serde_json::from_str(spec).unwrap();
        let line = send(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "recall", "arguments": args}}),
            true,
        );
        lines.push(line.unwrap());
    }
    drop(stdin);
    let _ = child.wait();
    lines
}

fn lanes(result: &str) -> Vec<(String, bool)> {
    let v: Value = serde_json::from_str(result).unwrap();
    v["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["name"].as_str().unwrap().to_string(), l["embedded"] == true))
        .collect()
}

/// Every interface against `cairn retrieve --spec`, for each spec.
fn same_bytes_everywhere(s: &Sandbox, specs: &[&str]) -> Vec<String> {
    let expected: Vec<String> = specs.iter().map(|spec| cli(s, &["--spec", spec])).collect();
    for (spec, want) in specs.iter().zip(&expected) {
        assert_eq!(&library(s, spec), want, "library, spec {spec}");
    }
    // --batch: one line per spec, in order.
    let batch = s.file("batch.jsonl", &specs.join("\n"));
    let out = s.ok(&["retrieve", "--batch", &batch]);
    assert_eq!(out.lines().collect::<Vec<_>>(), expected, "--batch");

    let served = Served::start(s, &[]);
    for (spec, want) in specs.iter().zip(&expected) {
        assert_eq!(post_retrieve(&served, spec), (200, want.clone()), "server, spec {spec}");
    }
    let (status, body) = post_retrieve(&served, &format!("[{}]", specs.join(",")));
    assert_eq!(
        (status, body),
        (200, format!("[{}]", expected.join(","))),
        "server batch"
    );
    drop(served);

    for ((spec, want), line) in specs.iter().zip(&expected).zip(mcp_recall(s, specs)) {
        assert!(
            line.ends_with(&format!(r#""structuredContent":{want}}}}}"#)),
            "mcp, spec {spec}: {line}"
        );
    }
    expected
}

#[test]
fn with_an_embedder_every_interface_embeds_the_text_alike() {
    let s = sandbox(true);
    let specs = [
        r#"{"text": "why do wings stall", "limit": 3}"#,
        r#"{"text": "why do wings stall", "limit": 3, "embed": false}"#,
        r#"{"text": "nozzle flow", "labels_all": ["Doc"], "embedder": "oa", "explain": true}"#,
    ];
    let out = same_bytes_everywhere(&s, &specs);
    let embedded = vec![("dense:oa".to_string(), true), ("text".to_string(), false)];
    assert_eq!(lanes(&out[0]), embedded);
    assert_eq!(lanes(&out[1]), vec![("text".to_string(), false)]);
    assert_eq!(lanes(&out[2]), embedded);
    assert_ne!(out[0], out[1].replace(r#","embed":false"#, ""));

    // The flags say what the spec fields say.
    assert_eq!(cli(&s, &["--text", "why do wings stall", "--limit", "3"]), out[0]);
    assert_eq!(
        cli(&s, &["--text", "why do wings stall", "--limit", "3", "--no-embed"]),
        out[1]
    );
    // The builder too.
    let repo = Repo::open(s.repo()).unwrap();
    let built = repo.retrieve().text("why do wings stall").limit(3).execute().unwrap();
    assert_eq!(serde_json::to_string(&built).unwrap(), out[0]);
    let plain = repo
        .retrieve()
        .text("why do wings stall")
        .limit(3)
        .no_embed()
        .execute()
        .unwrap();
    assert_eq!(serde_json::to_string(&plain).unwrap(), out[1]);
}

#[test]
fn without_an_embedder_every_interface_runs_the_text_lane_alone() {
    let s = sandbox(false);
    let specs = [
        r#"{"text": "why do wings stall", "limit": 3}"#,
        r#"{"text": "why do wings stall", "limit": 3, "embed": false}"#,
    ];
    let out = same_bytes_everywhere(&s, &specs);
    assert_eq!(out[0], out[1]);
    assert_eq!(lanes(&out[0]), vec![("text".to_string(), false)]);
}

#[test]
fn a_named_embedder_that_is_missing_is_an_error_everywhere() {
    let s = sandbox(false);
    let spec = r#"{"text": "wing", "embedder": "nope"}"#;
    let (_, err) = s.fails(&["retrieve", "--spec", spec, "--json"], 1);
    assert!(err.contains("nope"), "{err}");
    let repo = Repo::open(s.repo()).unwrap();
    let e = Retrieval::from_spec(&repo, RetrieveSpec::from_json(spec).unwrap())
        .execute()
        .unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
    // One process at a time holds a repository.
    drop(repo);
    let served = Served::start(&s, &[]);
    let (status, body) = post_retrieve(&served, spec);
    assert!(status >= 400 && body.contains("nope"), "{status} {body}");
    // A named embedder with `"embed": false`, or with a vector, is refused as such.
    for bad in [
        r#"{"text": "wing", "embedder": "oa", "embed": false}"#,
        r#"{"text": "wing", "embedder": "oa", "vector": {"model": "oa", "embedding": [1, 0, 0]}}"#,
    ] {
        let (status, body) = post_retrieve(&served, bad);
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains("embedder"), "{bad}: {body}");
    }
}
