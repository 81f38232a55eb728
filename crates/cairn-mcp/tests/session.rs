//! A scripted JSON-RPC client driving `Server` in-process over an in-memory repository:
//! the handshake, the tool list, each tool, and every kind of protocol error.

use cairn::Repo;
use cairn_mcp::{Server, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use serde_json::{json, Value};

/// A client that numbers its requests.
struct Client {
    server: Server,
    next_id: i64,
}

impl Client {
    fn new() -> Client {
        Client {
            server: Server::new(Repo::in_memory().expect("in-memory repo")),
            next_id: 1,
        }
    }

    /// A client that has done the handshake.
    fn initialized() -> Client {
        let mut c = Client::new();
        c.request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}));
        assert_eq!(
            c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()),
            None
        );
        c
    }

    /// Sends a raw line; the raw reply.
    fn send(&mut self, line: &str) -> Option<String> {
        let reply = self.server.handle(line);
        if let Some(r) = &reply {
            assert!(!r.contains('\n'), "a reply is one line: {r}");
        }
        reply
    }

    /// Sends a request; the whole response, checked to carry the request's id.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let reply: Value = serde_json::from_str(&self.send(&line).expect("a request gets a reply")).unwrap();
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    /// Calls a tool; its result (asserted to be a result, not a protocol error).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(reply.get("error").is_none(), "{tool}: protocol error {reply}");
        let result = reply["result"].clone();
        assert_eq!(result["content"][0]["type"], "text");
        assert!(result["content"][0]["text"].is_string());
        assert!(result["structuredContent"].is_object(), "{result}");
        result
    }

    /// Calls a tool that must succeed; its structured content.
    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        result["structuredContent"].clone()
    }

    /// Calls a tool that must fail; its error code.
    fn tool_error(&mut self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], true, "{tool} should fail: {result}");
        let code = result["structuredContent"]["error"]["code"]
            .as_str()
            .unwrap()
            .to_string();
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with(&format!("error[{code}]: ")), "{text}");
        code
    }

    fn ids(result: &Value) -> Vec<String> {
        result["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_string())
            .collect()
    }
}

fn rpc_error_code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

fn alice_facts() -> Value {
    json!({
        "message": "what I learned about Alice",
        "nodes": [
            {"id": "alice", "labels": ["Person"], "text": "Alice, a search engineer"},
            {"id": "alice-lives-in-paris", "labels": ["Fact"], "text": "Alice lives in Paris", "props": {"topic": "residence"}},
            {"id": "alice-likes-tea", "labels": ["Fact"], "text": "Alice likes green tea", "props": {"topic": "taste"}}
        ],
        "edges": [
            {"source": "alice", "kind": "about", "target": "alice-lives-in-paris"},
            {"source": "alice", "kind": "about", "target": "alice-likes-tea"}
        ]
    })
}

#[test]
fn initialize_handshake() {
    let mut c = Client::new();
    let reply = c.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let r = &reply["result"];
    assert_eq!(r["protocolVersion"], "2025-06-18");
    assert_eq!(r["serverInfo"]["name"], "cairn");
    assert!(r["serverInfo"]["version"].is_string());
    assert!(r["capabilities"]["tools"].is_object());
    assert!(r["instructions"].is_string());
    assert_eq!(c.server.protocol_version(), Some("2025-06-18"));
    assert_eq!(
        c.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        None
    );
    assert_eq!(c.request("ping", json!({}))["result"], json!({}));

    // An older version the server speaks is agreed; an unknown one gets the newest.
    let mut old = Client::new();
    let r = old.request(
        "initialize",
        json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(r["result"]["protocolVersion"], "2024-11-05");
    let mut future = Client::new();
    let r = future.request(
        "initialize",
        json!({"protocolVersion": "2099-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(r["result"]["protocolVersion"], cairn_mcp::PROTOCOL_VERSION);
    let r = future.request("initialize", json!({"capabilities": {}}));
    assert_eq!(rpc_error_code(&r), INVALID_PARAMS);
}

#[test]
fn tools_list_has_a_schema_for_every_tool() {
    let mut c = Client::initialized();
    let reply = c.request("tools/list", json!({}));
    let tools = reply["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["remember", "invalidate", "recall", "history", "as_of"]);
    for t in tools {
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{t}");
        assert!(schema["properties"].is_object(), "{t}");
        assert!(t["description"].as_str().unwrap().len() > 40, "{t}");
        // Every required field is a declared property.
        for r in schema["required"].as_array().into_iter().flatten() {
            assert!(schema["properties"].get(r.as_str().unwrap()).is_some(), "{t}: {r}");
        }
    }
    let remember = &tools[0]["inputSchema"];
    assert_eq!(remember["required"], json!(["message"]));
    assert_eq!(remember["properties"]["nodes"]["items"]["required"], json!(["id"]));
    assert_eq!(tools[2]["annotations"]["readOnlyHint"], true);
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], false);
    // The same list every time (deterministic).
    assert_eq!(c.request("tools/list", json!({}))["result"], reply["result"]);
}

/// An empty memory's first recall (the normal start of every agent) answers with nothing
/// and an `empty_repository` warning, not a tool error.
#[test]
fn recall_on_an_empty_memory_is_not_an_error() {
    let mut c = Client::initialized();
    let result = c.call("recall", json!({"text": "what do I know about the user"}));
    assert_eq!(result["isError"], false, "{result}");
    let structured = &result["structuredContent"];
    assert!(structured["commit"].is_null(), "{structured}");
    assert_eq!(structured["items"], json!([]));
    assert_eq!(structured["warnings"][0]["code"], "empty_repository", "{structured}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("(nothing recalled)") && text.contains("warning[empty_repository]"),
        "{text}"
    );
}

#[test]
fn remember_then_recall_finds_it() {
    let mut c = Client::initialized();
    let stored = c.ok("remember", alice_facts());
    assert_eq!(stored["nodes"], 3);
    assert_eq!(stored["edges"], 2);
    assert!(stored["parent"].is_null());
    let commit = stored["commit"].as_str().unwrap().to_string();
    assert_eq!(commit.len(), 64);
    assert_eq!(c.server.repo().unwrap().head().unwrap().unwrap().to_hex(), commit);
    assert_eq!(
        c.server.repo().unwrap().log(None, None).unwrap().len(),
        1,
        "one call, one commit"
    );

    let args = json!({"text": "where does Alice live", "labels_all": ["Fact"], "limit": 5});
    let result = c.call("recall", args.clone());
    assert_eq!(result["isError"], false);
    let found = &result["structuredContent"];
    assert_eq!(Client::ids(found)[0], "alice-lives-in-paris");
    assert_eq!(found["commit"], commit.as_str());
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Alice lives in Paris"), "{text}");
    assert!(!text.contains("a search engineer"), "the label gate holds: {text}");

    // Deterministic: the same call gives the same bytes.
    let line =
        json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "recall", "arguments": args}})
            .to_string();
    assert_eq!(c.send(&line), c.send(&line));

    // Property gates and expansion, as in a retrieve spec.
    let topic = c.ok(
        "recall",
        json!({"text": "Alice", "where": [{"key": "topic", "op": "eq", "value": "taste"}]}),
    );
    assert_eq!(Client::ids(&topic), ["alice-likes-tea"]);
    let expanded = c.ok(
        "recall",
        json!({"text": "search engineer", "labels_any": ["Person", "Fact"], "expand": {"hops": 1, "max_nodes": 5}}),
    );
    let ids = Client::ids(&expanded);
    assert_eq!(ids[0], "alice");
    assert!(ids.contains(&"alice-lives-in-paris".to_string()), "{ids:?}");

    // Compare-and-swap: the right head commits, a stale one commits nothing.
    let next = c.ok(
        "remember",
        json!({"message": "tea detail", "expected_head": commit, "nodes": [{"id": "tea", "text": "green tea"}]}),
    );
    assert_eq!(next["parent"], commit.as_str());
    let stale = c.tool_error(
        "remember",
        json!({"message": "late", "expected_head": commit, "nodes": [{"id": "late", "text": "x"}]}),
    );
    assert_eq!(stale, "conflict");
    assert_eq!(
        c.tool_error(
            "remember",
            json!({"message": "first?", "expected_head": null, "nodes": [{"id": "y"}]})
        ),
        "conflict"
    );
    assert_eq!(c.server.repo().unwrap().log(None, None).unwrap().len(), 2);
}

#[test]
fn remembering_what_is_already_stored_makes_no_commit() {
    let mut c = Client::initialized();
    let first = c.ok("remember", alice_facts());
    assert_eq!(first["changed"], true);
    let again = c.call("remember", alice_facts());
    assert_eq!(again["isError"], false, "{again}");
    let same = &again["structuredContent"];
    assert_eq!(same["changed"], false);
    assert_eq!(same["commit"], first["commit"], "the unchanged head");
    assert!(same["parent"].is_null());
    assert!(again["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("nothing changed: "));
    // A patch that sets what is already there changes nothing either.
    let patch = json!({"message": "m", "ops": [{"patch": {"id": "alice-lives-in-paris", "labels_add": ["Fact"]}}]});
    assert_eq!(c.ok("remember", patch)["changed"], false);
    assert_eq!(c.server.repo().unwrap().log(None, None).unwrap().len(), 1, "one commit");
}

#[test]
fn invalidate_then_recall_and_as_of() {
    let mut c = Client::initialized();
    let first = c.ok("remember", alice_facts())["commit"].as_str().unwrap().to_string();
    // Commit times are transaction times (the wall clock): keep the two commits apart.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let inv = c.ok(
        "invalidate",
        json!({"id": "alice-lives-in-paris", "valid_until": "2024-06-01", "message": "Alice moved to Lyon"}),
    );
    assert_eq!(inv["valid_until"], 1_717_200_000_000i64);
    assert_eq!(inv["parent"], first.as_str());

    let query = json!({"text": "Paris", "labels_all": ["Fact"]});
    // Now (the head's time) the fact has ended: not recalled, and a warning says why.
    let now = c.call("recall", query.clone());
    assert!(!Client::ids(&now["structuredContent"]).contains(&"alice-lives-in-paris".to_string()));
    let warnings = now["structuredContent"]["warnings"].to_string();
    assert!(warnings.contains("validity_excluded"), "{warnings}");
    assert!(now["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("warning[validity_excluded]"));
    // A later validity time (any of the CLI's forms) does not return it either.
    let mut later = query.clone();
    later["valid_at"] = json!("2025-01-01T00:00");
    assert!(!Client::ids(&c.ok("recall", later)).contains(&"alice-lives-in-paris".to_string()));
    // While it held, it is recalled.
    let mut before = query.clone();
    before["valid_at"] = json!("2024-01-01");
    assert_eq!(Client::ids(&c.ok("recall", before))[0], "alice-lives-in-paris");

    // as_of the first commit: the node had no end yet, and a retrieval there finds it.
    let node = c.ok("as_of", json!({"id": "alice-lives-in-paris", "at": first}));
    assert_eq!(node["commit"], first.as_str());
    assert_eq!(node["node"]["text"], "Alice lives in Paris");
    assert!(node["node"].get("valid_until").is_none(), "{node}");
    assert_eq!(node["edges_in"][0]["source"], "alice");
    let then = c.ok("as_of", json!({"query": query, "at": "HEAD~1"}));
    assert_eq!(then["commit"], first.as_str());
    assert_eq!(Client::ids(&then)[0], "alice-lives-in-paris");
    // "The head as of T": T the first commit's time is before the invalidation.
    let t_first = c
        .server
        .repo()
        .unwrap()
        .commit(&cairn::CommitId::from_hex(&first).unwrap())
        .unwrap()
        .timestamp_ms;
    let at_t = c.ok("as_of", json!({"id": "alice-lives-in-paris", "time": t_first}));
    assert_eq!(at_t["commit"], first.as_str());
    let head_now = c.ok("as_of", json!({"id": "alice-lives-in-paris"}));
    assert_eq!(head_now["node"]["valid_until"], 1_717_200_000_000i64);
    // Before the first commit there is nothing to read.
    assert_eq!(
        c.tool_error("as_of", json!({"id": "alice", "time": t_first - 1})),
        "no_commit"
    );

    // Unknown node: a tool error naming it; nothing committed.
    let commits = c.server.repo().unwrap().log(None, None).unwrap().len();
    let r = c.call("invalidate", json!({"id": "bob-lives-in-rome", "valid_until": 0}));
    assert_eq!(r["isError"], true);
    assert_eq!(r["structuredContent"]["error"]["code"], "node_not_found");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("bob-lives-in-rome"));
    assert_eq!(c.server.repo().unwrap().log(None, None).unwrap().len(), commits);
    assert_eq!(
        c.tool_error("as_of", json!({"id": "nobody", "at": first})),
        "node_not_found"
    );
}

#[test]
fn history_lists_versions() {
    let mut c = Client::initialized();
    c.ok("remember", alice_facts());
    c.ok(
        "remember",
        json!({"message": "unrelated", "nodes": [{"id": "bob", "text": "Bob"}]}),
    );
    c.ok(
        "remember",
        json!({"message": "more precise", "nodes": [{"id": "alice-lives-in-paris", "labels": ["Fact"], "text": "Alice lives in Paris, 11th arrondissement"}]}),
    );
    c.ok(
        "invalidate",
        json!({"id": "alice-lives-in-paris", "valid_until": 1_717_200_000_000i64}),
    );
    c.ok(
        "remember",
        json!({"message": "forget", "ops": [{"delete_node": "alice-lives-in-paris"}]}),
    );

    let h = c.call("history", json!({"id": "alice-lives-in-paris"}));
    let versions = h["structuredContent"]["versions"].as_array().unwrap().clone();
    let changes: Vec<&str> = versions.iter().map(|v| v["change"].as_str().unwrap()).collect();
    assert_eq!(changes, ["removed", "changed", "changed", "added"]);
    let messages: Vec<&str> = versions.iter().map(|v| v["message"].as_str().unwrap()).collect();
    assert_eq!(
        messages,
        [
            "forget",
            "invalidate alice-lives-in-paris",
            "more precise",
            "what I learned about Alice"
        ]
    );
    assert!(versions[0]["node"].is_null());
    assert_eq!(versions[1]["node"]["valid_until"], 1_717_200_000_000i64);
    assert_eq!(versions[3]["node"]["text"], "Alice lives in Paris");
    let text = h["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("4 versions") && text.contains("more precise"), "{text}");

    let limited = c.ok("history", json!({"id": "alice-lives-in-paris", "limit": 1}));
    assert_eq!(limited["versions"].as_array().unwrap().len(), 1);
    let none = c.ok("history", json!({"id": "never-seen"}));
    assert_eq!(none["versions"], json!([]));
}

#[test]
fn bad_tool_arguments_are_tool_errors() {
    let mut c = Client::initialized();
    c.ok("remember", alice_facts());
    let commits = c.server.repo().unwrap().log(None, None).unwrap().len();
    for (tool, args, code) in [
        ("remember", json!({"nodes": [{"id": "a"}]}), "invalid_arguments"), // no message
        ("remember", json!({"message": "m"}), "invalid_arguments"),         // nothing to remember
        (
            "remember",
            json!({"message": "m", "nodes": [{"id": "a", "colour": 1}]}),
            "invalid_arguments",
        ),
        ("remember", json!({"message": "m", "nodes": ["a"]}), "invalid_arguments"),
        (
            "remember",
            json!({"message": "m", "nodes": [{"id": "a", "valid_from": 5, "valid_until": 1}]}),
            "validation",
        ),
        (
            "remember",
            json!({"message": "m", "expected_head": "abc", "nodes": [{"id": "a"}]}),
            "invalid_arguments",
        ),
        (
            "remember",
            json!({"message": "m", "ops": [{"patch": {"id": "missing", "text": "x"}}]}),
            "node_not_found",
        ),
        (
            "remember",
            json!({"message": "m", "nodes": [{"id": "v", "embeddings": {"e": [1.0, 2.0]}}, {"id": "w", "embeddings": {"e": [1.0]}}]}),
            "validation",
        ),
        (
            "invalidate",
            json!({"id": "alice", "valid_until": "next tuesday"}),
            "invalid_arguments",
        ),
        ("invalidate", json!({"id": "alice"}), "invalid_arguments"),
        ("recall", json!({"labels_all": ["Fact"]}), "no_lane"),
        ("recall", json!({"text": "x", "colour": "red"}), "malformed_spec"),
        ("recall", json!({"text": "x", "limit": 0}), "invalid_setting"),
        (
            "recall",
            json!({"text": "x", "at": "no-such-branch"}),
            "unknown_revision",
        ),
        ("recall", json!({"text": "x", "valid_at": "soon"}), "invalid_arguments"),
        ("history", json!({}), "invalid_arguments"),
        ("history", json!({"id": "alice", "rev": "nope~3"}), "unknown_revision"),
        (
            "as_of",
            json!({"id": "alice", "query": {"text": "x"}}),
            "invalid_arguments",
        ),
        (
            "as_of",
            json!({"id": "alice", "at": "HEAD", "time": 0}),
            "invalid_arguments",
        ),
        (
            "as_of",
            json!({"query": {"text": "x", "at": "HEAD"}}),
            "invalid_arguments",
        ),
    ] {
        assert_eq!(c.tool_error(tool, args.clone()), code, "{tool} {args}");
    }
    assert_eq!(
        c.server.repo().unwrap().log(None, None).unwrap().len(),
        commits,
        "nothing committed"
    );
    // A refused operation names where it is.
    let r = c.call("remember", json!({"message": "m", "nodes": [{"id": "ok"}, {"id": ""}]}));
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("nodes[1]"), "{text}");
}

#[test]
fn protocol_errors_are_json_rpc_errors() {
    let mut c = Client::initialized();
    // Malformed JSON: parse error, id null.
    let r: Value = serde_json::from_str(&c.send(r#"{"jsonrpc":"2.0","id":1,"method":"#).unwrap()).unwrap();
    assert_eq!(rpc_error_code(&r), PARSE_ERROR);
    assert!(r["id"].is_null());
    // Not a request.
    for bad in [
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        r#""ping""#,
        "[]",
    ] {
        let r: Value = serde_json::from_str(&c.send(bad).unwrap()).unwrap();
        assert_eq!(rpc_error_code(&r), INVALID_REQUEST, "{bad}");
    }
    // Unknown method.
    let r = c.request("resources/list", json!({}));
    assert_eq!(rpc_error_code(&r), METHOD_NOT_FOUND);
    assert!(r["error"]["message"].as_str().unwrap().contains("resources/list"));
    // Invalid params of tools/call: the envelope, not the tool's arguments.
    let r = c.request("tools/call", json!({"name": "forget_everything", "arguments": {}}));
    assert_eq!(rpc_error_code(&r), INVALID_PARAMS);
    assert!(r["error"]["message"].as_str().unwrap().contains("forget_everything"));
    assert_eq!(
        rpc_error_code(&c.request("tools/call", json!({"arguments": {}}))),
        INVALID_PARAMS
    );
    assert_eq!(
        rpc_error_code(&c.request("tools/call", json!({"name": "recall", "arguments": [1]}))),
        INVALID_PARAMS
    );
    assert_eq!(
        rpc_error_code(&c.request("tools/call", json!(["recall"]))),
        INVALID_PARAMS
    );
    // The session goes on.
    assert_eq!(c.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn notifications_get_no_response() {
    let mut c = Client::initialized();
    for n in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
        r#"{"jsonrpc":"2.0","method":"no/such/method"}"#,
        // A tool call sent as a notification runs nowhere visible and answers nothing.
        r#"{"jsonrpc":"2.0","method":"ping"}"#,
        // A client's response to a request of ours.
        r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
        "",
        "   ",
    ] {
        assert_eq!(c.send(n), None, "{n}");
    }
    // A batch answers its requests only, in order.
    let batch = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":"b","method":"nope"}]"#;
    let r: Value = serde_json::from_str(&c.send(batch).unwrap()).unwrap();
    let r = r.as_array().unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0]["id"], "a");
    assert_eq!(rpc_error_code(&r[1]), METHOD_NOT_FOUND);
    assert_eq!(
        c.send(r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#),
        None
    );
}

#[test]
fn older_protocol_versions_get_the_json_as_text_too() {
    let mut c = Client::new();
    c.request(
        "initialize",
        json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    c.ok("remember", alice_facts());
    let r = c.call("recall", json!({"text": "tea"}));
    let json_text = r["content"][1]["text"].as_str().expect("a second text block");
    let parsed: Value = serde_json::from_str(json_text).unwrap();
    assert_eq!(parsed, r["structuredContent"]);
}

#[test]
fn serve_reads_lines_and_writes_only_responses() {
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        "this is not json".to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", "arguments": alice_facts()}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall", "arguments": {"text": "green tea"}}}).to_string(),
    ]
    .join("\n");
    let mut bytes = input.into_bytes();
    bytes.extend_from_slice(b"\n\xff\xfe\n"); // not UTF-8
    let mut server = Server::new(Repo::in_memory().unwrap());
    let mut out = Vec::new();
    server.serve(&bytes[..], &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    let replies: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(replies.len(), 5, "{out}");
    assert_eq!(replies[0]["id"], 1);
    assert_eq!(rpc_error_code(&replies[1]), PARSE_ERROR);
    assert_eq!(replies[2]["result"]["isError"], false);
    assert_eq!(
        replies[3]["result"]["structuredContent"]["items"][0]["id"],
        "alice-likes-tea"
    );
    assert_eq!(rpc_error_code(&replies[4]), PARSE_ERROR);
}

/// `recall` takes the query text as `text` or as `query` (the name `as_of` uses), with
/// the same answer; both at once, or a `query` that is not a string, is refused.
#[test]
fn recall_takes_query_as_another_name_for_text() {
    let mut c = Client::initialized();
    c.ok("remember", alice_facts());
    let by_text = c.ok("recall", json!({"text": "alice", "limit": 3}));
    let by_query = c.ok("recall", json!({"query": "alice", "limit": 3}));
    assert_eq!(by_text, by_query);
    assert!(!Client::ids(&by_text).is_empty());
    assert_eq!(
        c.tool_error("recall", json!({"query": "alice", "text": "alice"})),
        "invalid_arguments"
    );
    assert_eq!(c.tool_error("recall", json!({"query": 3})), "invalid_arguments");
}
