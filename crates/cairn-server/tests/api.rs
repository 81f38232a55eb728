//! The endpoints over a real HTTP connection on loopback: each answers what the library
//! (and the CLI's `--json`) gives, and bad requests get typed errors that change nothing.

mod common;

use cairn::retrieve::{Retrieval, RetrieveSpec};
use cairn_server::{Repos, ServerOptions};
use common::{code, sample_repo, start, start_single, Client};

const SPECS: &[&str] = &[
    r#"{"text": "wing stall", "limit": 5}"#,
    r#"{"text": "drag", "labels_all": ["Concept"], "explain": true}"#,
    r#"{"vector": {"model": "tiny", "embedding": [0.9, 0.2, 0.3, 0.1, 0.1, 0.0, 0.0, 0.0]}, "text": "lift", "limit": 3}"#,
];

fn library_json(repo: &cairn::Repo, spec: &str) -> Vec<u8> {
    let spec = RetrieveSpec::from_json(spec).unwrap();
    serde_json::to_vec(&Retrieval::from_spec(repo, spec).execute().unwrap()).unwrap()
}

#[test]
fn retrieve_is_byte_identical_to_the_library() {
    let repo = sample_repo();
    let server = start_single(repo.clone());
    let client = Client::new(&server);
    for spec in SPECS {
        let (status, body) = client.post("/retrieve", spec);
        assert_eq!(status, 200, "{spec}: {body}");
        assert_eq!(body.as_bytes(), &library_json(&repo, spec)[..], "{spec}");
    }

    // A batch: results in order, a bad spec answered in its place.
    let batch = format!("[{}, {{\"text\": \"x\", \"colour\": 1}}, {}]", SPECS[0], SPECS[1]);
    let (status, body) = client.post("/retrieve", &batch);
    assert_eq!(status, 200, "{body}");
    let expected = format!(
        "[{},{},{}]",
        String::from_utf8(library_json(&repo, SPECS[0])).unwrap(),
        r#"{"error":{"code":"bad_request","message":"PLACEHOLDER"}}"#,
        String::from_utf8(library_json(&repo, SPECS[1])).unwrap()
    );
    let got: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
    let want: Vec<serde_json::Value> = serde_json::from_str(&expected).unwrap();
    assert_eq!(got[0], want[0]);
    assert_eq!(got[2], want[2]);
    assert_eq!(got[1]["error"]["code"], "bad_request");
    assert!(got[1]["error"]["message"].as_str().unwrap().contains("colour"));
}

#[test]
fn reads_answer_what_the_library_holds() {
    let repo = sample_repo();
    let head = repo.head().unwrap().unwrap();
    let first = repo.log(None, None).unwrap()[1].0;
    let server = start_single(repo.clone());
    let c = Client::new(&server);

    let log = c.json("/log");
    assert_eq!(log.as_array().unwrap().len(), 2);
    assert_eq!(log[0]["commit"], head.to_hex());
    assert_eq!(c.json("/log?limit=1").as_array().unwrap().len(), 1);
    assert_eq!(
        c.json(&format!("/log?rev={}", first.to_hex()))[0]["commit"],
        first.to_hex()
    );

    let stats = c.json("/stats");
    let lib = repo.stats(&head).unwrap();
    assert_eq!(stats["nodes"], lib.nodes);
    assert_eq!(stats["edges"], lib.edges);
    assert_eq!(
        c.json(&format!("/stats?at={}", first.to_hex()))["commit"],
        first.to_hex()
    );

    let node = c.json("/nodes/concept-lift?edges=true&valid_at=2024-01-01");
    assert_eq!(node["id"], "concept-lift");
    assert_eq!(node["commit"], head.to_hex());
    assert_eq!(node["valid_at"]["valid"], true);
    let id = cairn::NodeId::new("concept-lift").unwrap();
    let out = repo.edges_from(&head, &id).unwrap();
    assert_eq!(node["edges"]["out"].as_array().unwrap().len(), out.len());
    let edges = c.json("/nodes/concept-lift/edges");
    assert_eq!(edges["out"], node["edges"]["out"]);
    assert_eq!(edges["in"], node["edges"]["in"]);

    let history = c.json("/nodes/concept-lift/history");
    assert!(!history.as_array().unwrap().is_empty());
    assert!(history[0]["change"].as_str().is_some());

    let diff = c.json(&format!("/diff?from={}&to={}", first.to_hex(), head.to_hex()));
    let lib = repo.diff(&first, &head).unwrap();
    assert_eq!(diff["nodes"].as_array().unwrap().len(), lib.nodes.len());
    assert_eq!(diff["edges"].as_array().unwrap().len(), lib.edges.len());
    assert_eq!(c.json("/diff?from=HEAD")["to"], head.to_hex());

    let fsck = c.json("/fsck");
    assert_eq!(fsck["problems"], serde_json::json!([]));

    let index = c.post_json("/index", "");
    assert_eq!(index["commit"], head.to_hex());
    let index = c.post_json("/index", r#"{"at": "HEAD~1"}"#);
    assert_eq!(index["commit"], first.to_hex());

    assert_eq!(c.json("/health")["status"], "ok");
}

#[test]
fn branches_and_merge() {
    let repo = sample_repo();
    let server = start_single(repo.clone());
    let c = Client::new(&server);
    let created = c.post_json("/branches", r#"{"name": "side", "at": "HEAD~1"}"#);
    assert_eq!(created["name"], "side");
    let (status, body) = c.post("/branches", r#"{"name": "side"}"#);
    assert_eq!((status, code(&body).as_str()), (409, "already_exists"), "{body}");
    // A name that is not a branch name is bad input, not a server failure.
    let (status, body) = c.post("/branches", r#"{"name": "a b"}"#);
    assert_eq!((status, code(&body).as_str()), (400, "bad_request"), "{body}");
    // A misspelt branch is refused; it does not start a new, unrelated history.
    let (status, body) = c.post("/import?branch=sdie", r#"{"node": {"id": "lost"}}"#);
    assert_eq!((status, code(&body).as_str()), (404, "not_found"), "{body}");
    assert_eq!(c.json("/branches")["branches"].as_array().unwrap().len(), 2);
    let branches = c.json("/branches");
    assert_eq!(branches["current"], "main");
    assert_eq!(branches["branches"].as_array().unwrap().len(), 2);

    // A change on `side`, merged into main.
    let line = r#"{"node": {"id": "side-note", "text": "from the side branch"}}"#;
    let imported = c.post_json("/import?branch=side&message=side", line);
    assert_eq!(imported["operations"], 1);
    let merged = c.post_json("/merge", r#"{"theirs": "side", "message": "merge side"}"#);
    assert_eq!(merged["kind"], "three_way", "{merged}");
    assert_eq!(merged["branch"], "main");
    let commit = merged["commit"].as_str().unwrap();
    assert_eq!(repo.head().unwrap().unwrap().to_hex(), commit);
    assert!(c.json("/nodes/side-note")["text"] == "from the side branch");

    // Both sides change one node differently: manual merge → 409 with the conflicts.
    c.post_json(
        "/import?branch=side",
        r#"{"node": {"id": "side-note", "text": "side again"}}"#,
    );
    c.post_json("/import", r#"{"node": {"id": "side-note", "text": "main again"}}"#);
    let head = repo.head().unwrap();
    let (status, body) = c.post("/merge", r#"{"theirs": "side"}"#);
    assert_eq!((status, code(&body).as_str()), (409, "merge_conflicts"), "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["details"]["conflicts"].as_array().unwrap().len(), 1);
    assert_eq!(repo.head().unwrap(), head, "nothing committed");
    let merged = c.post_json("/merge", r#"{"theirs": "side", "strategy": "theirs"}"#);
    assert!(merged["commit"].is_string());
    assert_eq!(c.json("/nodes/side-note")["text"], "side again");
}

#[test]
fn import_with_expected_head_is_compare_and_swap() {
    let repo = cairn::Repo::in_memory().unwrap();
    let server = start_single(repo.clone());
    let c = Client::new(&server);
    let line = |i: u32| format!("{{\"node\": {{\"id\": \"n{i}\", \"text\": \"node {i}\"}}}}\n");

    let first = c.post_json("/import?expected_head=none&message=first", &line(1));
    let first = first["commit"].as_str().unwrap().to_string();
    assert_eq!(repo.head().unwrap().unwrap().to_hex(), first);

    // A second client that still believes the branch is empty loses.
    let (status, body) = c.post("/import?expected_head=none", &line(2));
    assert_eq!((status, code(&body).as_str()), (409, "conflict"), "{body}");
    assert_eq!(repo.log(None, None).unwrap().len(), 1, "nothing committed");

    let second = c.post_json(&format!("/import?expected_head={first}&author=agent-7"), &line(2));
    let (status, body) = c.post(&format!("/import?expected_head={first}"), &line(3));
    assert_eq!((status, code(&body).as_str()), (409, "conflict"), "{body}");
    let log = c.json("/log");
    assert_eq!(log.as_array().unwrap().len(), 2);
    assert_eq!(log[0]["commit"], second["commit"]);
    assert_eq!(log[0]["author"], "agent-7");

    // An empty import makes no commit unless asked to.
    assert_eq!(c.post_json("/import", "\n")["commit"], serde_json::Value::Null);
    assert!(c.post_json("/import?allow_empty=true", "")["commit"].is_string());

    // Nor does one whose operations change nothing: the head stays, and is returned.
    let head = repo.head().unwrap().unwrap().to_hex();
    let same = c.post_json("/import", &line(2));
    assert_eq!(same["commit"], serde_json::Value::Null, "{same}");
    assert_eq!(
        (same["head"].as_str(), same["operations"].as_u64()),
        (Some(head.as_str()), Some(1))
    );
    assert_eq!(repo.head().unwrap().unwrap().to_hex(), head);
    assert!(c.post_json("/import?allow_empty=true", &line(2))["commit"].is_string());
}

#[test]
fn bad_requests_get_typed_errors_and_change_nothing() {
    let repo = sample_repo();
    let before = repo.head().unwrap();
    let options = ServerOptions {
        max_body_bytes: 4096,
        ..ServerOptions::default()
    };
    let server = start(Repos::Single(repo.clone()), options);
    let c = Client::new(&server);
    let cases: &[(&str, &str, Option<&str>, u16, &str)] = &[
        ("POST", "/retrieve", Some("{\"text\": "), 400, "bad_request"),
        (
            "POST",
            "/retrieve",
            Some(r#"{"text": "x", "colour": "red"}"#),
            400,
            "bad_request",
        ),
        ("POST", "/retrieve", Some(r#"{"limit": 3}"#), 400, "bad_request"),
        (
            "POST",
            "/retrieve",
            Some(r#"{"text": "x", "at": "no-such-branch"}"#),
            404,
            "not_found",
        ),
        ("POST", "/retrieve", Some("[1, 2"), 400, "bad_request"),
        (
            "POST",
            "/branches",
            Some(r#"{"name": "b", "colour": "red"}"#),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/merge",
            Some(r#"{"theirs": "main", "strategy": "mine"}"#),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/import",
            Some("{\"node\": {\"id\": \"ok\"}}\n{\"nod\": {}}\n"),
            400,
            "bad_request",
        ),
        ("POST", "/import?colour=red", Some(""), 400, "bad_request"),
        ("POST", "/import?expected_head=abc", Some(""), 400, "bad_request"),
        ("GET", "/log?limit=many", None, 400, "bad_request"),
        ("GET", "/log?rev=nowhere", None, 404, "not_found"),
        ("GET", "/nodes/no-such-node", None, 404, "not_found"),
        ("GET", "/nodes/no-such-node/edges", None, 404, "not_found"),
        ("GET", "/stats?at=nowhere", None, 404, "not_found"),
        ("GET", "/no/such/route", None, 404, "not_found"),
        ("DELETE", "/log", None, 405, "method_not_allowed"),
    ];
    for (method, path, body, status, want) in cases {
        let (got, text) = c.call(method, path, *body);
        assert_eq!(
            (got, code(&text)),
            (*status, want.to_string()),
            "{method} {path}: {text}"
        );
    }
    // The import error names the line.
    let (_, text) = c.post("/import", "{\"node\": {\"id\": \"ok\"}}\n{\"nod\": {}}\n");
    assert!(text.contains("line 2"), "{text}");

    // Over the body limit: 413, for a retrieval and for an import.
    let big = format!("{{\"text\": \"{}\"}}", "x".repeat(8000));
    let (status, text) = c.post("/retrieve", &big);
    assert_eq!((status, code(&text).as_str()), (413, "payload_too_large"));
    let lines = "{\"node\": {\"id\": \"big\"}}\n".repeat(400);
    let (status, text) = c.post("/import", &lines);
    assert_eq!((status, code(&text).as_str()), (413, "payload_too_large"));

    assert_eq!(repo.head().unwrap(), before, "no bad request committed anything");
    assert_eq!(repo.branches().unwrap().len(), 1);
}

#[test]
fn node_ids_are_percent_decoded_from_the_path() {
    let server = start_single(cairn::Repo::in_memory().unwrap());
    let c = Client::new(&server);
    c.post_json("/import", r#"{"node": {"id": "a b/c?d", "text": "odd id"}}"#);
    let node = c.json("/nodes/a%20b%2Fc%3Fd");
    assert_eq!(node["id"], "a b/c?d");
    assert_eq!(c.json("/nodes/a%20b%2Fc%3Fd/history").as_array().unwrap().len(), 1);
}

#[test]
fn metrics_count_requests_and_commits() {
    let server = start_single(cairn::Repo::in_memory().unwrap());
    let c = Client::new(&server);
    c.post_json("/import", "{\"node\": {\"id\": \"a\"}}");
    c.get("/nodes/zz");
    let (status, text) = c.get("/metrics");
    assert_eq!(status, 200);
    assert!(
        text.contains(r#"cairn_http_requests_total{route="/import",method="POST",status="200"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"cairn_http_requests_total{route="/nodes/{id}",method="GET",status="404"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"cairn_http_request_duration_seconds_count{route="/import"} 1"#),
        "{text}"
    );
    assert!(text.contains("cairn_commits_total 1"), "{text}");
}

#[test]
fn without_a_config_only_loopback_is_served() {
    let server = cairn_server::Server::new(
        Repos::Single(cairn::Repo::in_memory().unwrap()),
        ServerOptions::default(),
    );
    let err = cairn_server::RunningServer::start(server, "0.0.0.0:0".parse().unwrap()).err();
    assert!(
        matches!(err, Some(cairn_server::ServerError::Unauthenticated { .. })),
        "{err:?}"
    );
}

#[test]
fn a_request_past_the_timeout_is_answered_503_timeout() {
    let options = ServerOptions {
        request_timeout: std::time::Duration::from_millis(1),
        ..ServerOptions::default()
    };
    let server = start(Repos::Single(sample_repo()), options);
    let c = Client::new(&server);
    // A thousand retrievals take far longer than a millisecond.
    let batch = format!("[{}]", vec![SPECS[1]; 1000].join(","));
    let (status, body) = c.post("/retrieve", &batch);
    assert_eq!((status, code(&body).as_str()), (503, "timeout"), "{body}");
    assert_eq!(c.get("/health").0, 200, "the server still answers");
}

/// An empty memory's first recall is the normal start of an agent: `POST /retrieve` on a
/// repository with no commits answers 200 with no items and an `empty_repository`
/// warning, byte for byte what the library gives; a malformed spec is still refused.
#[test]
fn an_empty_repository_answers_with_no_items() {
    let repo = cairn::Repo::in_memory().unwrap();
    let server = start_single(repo.clone());
    let client = Client::new(&server);
    let spec = r#"{"text": "what do I know about the user", "limit": 5}"#;
    let (status, body) = client.post("/retrieve", spec);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body.as_bytes(), &library_json(&repo, spec)[..]);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        v["commit"].is_null() && v["items"].as_array().unwrap().is_empty(),
        "{v}"
    );
    assert_eq!(v["warnings"][0]["code"], "empty_repository", "{v}");
    let (status, _) = client.post("/retrieve", r#"{"text": "x", "limit": 0}"#);
    assert_eq!(status, 400);
    // A GET where POST is meant says which method to use.
    let (status, body) = client.get("/retrieve");
    assert_eq!(status, 405, "{body}");
    assert!(body.contains("use POST"), "{body}");
}

#[test]
fn mcp_over_http_answers_each_message_and_signs_commits() {
    let repo = common::sample_repo();
    let server = start_single(repo.clone());
    let agent = ureq::AgentBuilder::new().build();
    let post = |path: &str, version: Option<&str>, body: &str| -> (u16, String) {
        let mut req = agent.post(&format!("{}{path}", server.url()));
        if let Some(v) = version {
            req = req.set("MCP-Protocol-Version", v);
        }
        match req.send_string(body) {
            Ok(r) => (r.status(), r.into_string().unwrap()),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap()),
            Err(e) => panic!("{e}"),
        }
    };
    let (status, body) = post(
        "/mcp",
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""protocolVersion":"2025-06-18""#), "{body}");
    // A notification: 202, nothing to read.
    let (status, body) = post(
        "/mcp",
        None,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!((status, body.as_str()), (202, ""));
    // The version agreed earlier decides a tool result's shape: before 2025-06-18 the
    // structured content is also a second text block.
    let recall = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall","arguments":{"text":"wing","limit":3}}}"#;
    let content_blocks = |version: Option<&str>| {
        let (status, body) = post("/mcp", version, recall);
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["result"]["isError"], false, "{v}");
        v["result"]["content"].as_array().unwrap().len()
    };
    assert_eq!(content_blocks(Some("2025-06-18")), 1);
    assert_eq!(content_blocks(Some("2024-11-05")), 2);
    // A write through MCP, signed by `?author=`, seen by the other routes.
    let (status, body) = post(
        "/mcp?author=agent-3",
        None,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"remember","arguments":{"message":"from mcp","nodes":[{"id":"m-1","text":"remembered over http"}]}}}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""isError":false"#), "{body}");
    let log = Client::new(&server).json("/log");
    assert_eq!(log[0]["message"], "from mcp", "{log}");
    assert_eq!(log[0]["author"], "agent-3", "{log}");
    assert!(repo.node(&cairn::NodeId::new("m-1").unwrap()).unwrap().is_some());
    // Not JSON: a JSON-RPC parse error, as on stdio.
    let (status, body) = post("/mcp", None, "{nope");
    assert_eq!(status, 200);
    assert!(body.contains("-32700"), "{body}");
}
