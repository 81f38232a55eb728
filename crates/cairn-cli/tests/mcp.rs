//! `cairn mcp`: a whole MCP session with the binary over its standard input and output,
//! and its results against `cairn retrieve --json`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use common::{Sandbox, Served};
use serde_json::{json, Value};

/// A running `cairn mcp`, talked to one line at a time.
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
}

impl Session {
    fn start(s: &Sandbox, extra: &[&str]) -> Session {
        let mut c = s.command();
        c.arg("mcp").args(extra);
        Session::spawn(c)
    }

    /// `cairn --remote URL mcp`, bridged to a server (`token`: `CAIRN_TOKEN`).
    fn start_remote(s: &Sandbox, url: &str, token: Option<&str>, extra: &[&str]) -> Session {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"));
        c.arg("--remote")
            .arg(url)
            .arg("mcp")
            .args(extra)
            .env_remove("CAIRN_REPO")
            .env_remove("CAIRN_TOKEN")
            .current_dir(s.dir.path());
        if let Some(t) = token {
            c.env("CAIRN_TOKEN", t);
        }
        Session::spawn(c)
    }

    fn spawn(mut c: std::process::Command) -> Session {
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn cairn mcp");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Session {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line the server writes (it must answer before its input ends).
    fn read_line(&mut self) -> String {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the server closed its output");
        line.trim_end_matches('\n').to_string()
    }

    /// Sends a request; its response line, raw.
    fn request_raw(&mut self, method: &str, params: Value) -> String {
        let id = self.next_id;
        self.next_id += 1;
        self.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        let line = self.read_line();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["id"], id, "{line}");
        line
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        serde_json::from_str(&self.request_raw(method, params)).unwrap()
    }

    /// A tool call that must succeed: its structured content.
    fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert_eq!(r["result"]["isError"], false, "{name}: {r}");
        r["result"]["structuredContent"].clone()
    }

    /// Closes standard input; the exit status and standard error.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        assert_eq!(rest, "", "nothing but answers on standard output");
        let out = self.child.wait_with_output().unwrap();
        (out.status, String::from_utf8(out.stderr).unwrap())
    }
}

/// One agent's session: initialize, list, remember, invalidate, a malformed line, as_of,
/// history, recall. Returns the recall's spec and its answer line.
fn session_script(m: &mut Session) -> (Value, String) {
    let init = m.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "1"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "cairn");
    m.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let tools = m.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 5);

    let first = m.tool(
        "remember",
        json!({"message": "facts about Alice", "nodes": [
            {"id": "alice-lives-in-paris", "labels": ["Fact"], "text": "Alice lives in Paris"},
            {"id": "alice-likes-tea", "labels": ["Fact"], "text": "Alice likes green tea"}
        ]}),
    );
    let first = first["commit"].as_str().unwrap().to_string();
    let inv = m.tool(
        "invalidate",
        json!({"id": "alice-lives-in-paris", "valid_until": "2024-06-01T00:00:00Z", "expected_head": first}),
    );
    assert_eq!(inv["parent"], first.as_str());

    // Malformed JSON mid-session: a parse error, and the session goes on.
    m.send_line("{not json");
    let err: Value = serde_json::from_str(&m.read_line()).unwrap();
    assert_eq!(err["error"]["code"], -32700);

    let then = m.tool("as_of", json!({"id": "alice-lives-in-paris", "at": first}));
    assert!(then["node"].get("valid_until").is_none());
    let history = m.tool("history", json!({"id": "alice-lives-in-paris"}));
    assert_eq!(history["versions"].as_array().unwrap().len(), 2);

    let spec =
        json!({"text": "where does Alice live", "labels_all": ["Fact"], "valid_at": 1_700_000_000_000i64, "limit": 5});
    let recall_line = m.request_raw("tools/call", json!({"name": "recall", "arguments": spec}));
    let recall: Value = serde_json::from_str(&recall_line).unwrap();
    assert_eq!(
        recall["result"]["structuredContent"]["items"][0]["id"],
        "alice-lives-in-paris"
    );
    (spec, recall_line)
}

/// After [`session_script`] on an empty repository: its two commits, authored `agent-7`,
/// and the recall's structured result byte for byte `cairn retrieve --json`.
fn check_session(s: &Sandbox, spec: &Value, recall_line: &str) {
    let log = s.json(&["log", "--json"]);
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[1]["message"], "facts about Alice");
    assert_eq!(log[0]["author"], "agent-7", "{}", log[0]);
    let cli = s.ok(&["retrieve", "--json", "--spec", &spec.to_string()]);
    let cli = cli.trim_end_matches('\n');
    assert!(
        recall_line.ends_with(&format!(r#""structuredContent":{cli}}}}}"#)),
        "mcp: {recall_line}\ncli: {cli}"
    );
}

#[test]
fn a_full_session_over_stdio() {
    let s = Sandbox::init();
    let mut m = Session::start(&s, &["--author", "agent-7"]);
    let (spec, recall_line) = session_script(&mut m);
    let (status, stderr) = m.finish();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("cairn mcp: serving"), "logs go to stderr: {stderr}");
    check_session(&s, &spec, &recall_line);
}

#[test]
fn the_same_session_through_a_server_while_the_user_runs_commands() {
    let s = Sandbox::init();
    let served = Served::start(&s, &[]);
    let mut m = Session::start_remote(&s, &served.url, None, &["--author", "agent-7"]);
    let (spec, recall_line) = session_script(&mut m);
    // The user's own commands share the memory meanwhile.
    let log = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["--remote", &served.url, "log", "--json"])
        .env_remove("CAIRN_REPO")
        .env_remove("CAIRN_TOKEN")
        .output()
        .unwrap();
    assert!(log.status.success());
    assert!(String::from_utf8(log.stdout).unwrap().contains("facts about Alice"));
    // A ping after a notification: answered in order, nothing for the notification.
    m.send_line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    let ping = m.request("ping", json!({}));
    assert_eq!(ping["result"], json!({}));
    let (status, stderr) = m.finish();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("through http://"), "{stderr}");
    served.stop();
    check_session(&s, &spec, &recall_line);
}

#[test]
fn through_a_server_that_wants_a_token_a_request_gets_an_error_that_says_so() {
    let s = Sandbox::init();
    let config = s.dir.path().join("serve.json");
    let config = config.to_str().unwrap();
    let token = s.ok(&["serve", "token", "add", "default", "--config", config]);
    let served = Served::start(&s, &["--config", config]);
    let mut m = Session::start_remote(&s, &served.url, None, &[]);
    let r = m.request("tools/list", json!({}));
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("CAIRN_TOKEN"), "{r}");
    m.finish();
    let mut m = Session::start_remote(&s, &served.url, Some(token.trim()), &[]);
    let r = m.request("tools/list", json!({}));
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 5, "{r}");
    m.finish();
    // --init and --hold are for a local repository.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["--remote", &served.url, "mcp", "--hold"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the server holds it"));
}

#[test]
fn without_a_repository_it_fails_unless_asked_to_create_one() {
    let s = Sandbox::new();
    // Without one, the host still gets answers: the handshake works, and a tool call
    // fails with what to do.
    let mut m = Session::start(&s, &[]);
    let init = m.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "cairn");
    let r = m.request("tools/call", json!({"name": "recall", "arguments": {"text": "x"}}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    let error = &r["result"]["structuredContent"]["error"];
    assert_eq!(error["code"], "not_a_repository", "{r}");
    assert!(error["message"].as_str().unwrap().contains("--init"), "{r}");
    let (status, stderr) = m.finish();
    assert!(status.success());
    assert!(stderr.contains("no cairn repository"), "{stderr}");
    // --hold needs it at the start.
    let err = s.fails_stderr(&["mcp", "--hold"], 1);
    assert!(err.contains("no cairn repository"), "{err}");

    let m = Session::start(&s, &["--init"]);
    let (status, stderr) = m.finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(s.commit_count(), 0);
}

#[test]
fn other_processes_use_the_repository_between_tool_calls() {
    let s = Sandbox::init();
    let mut m = Session::start(&s, &[]);
    m.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let first = m.tool(
        "remember",
        json!({"message": "a fact", "nodes": [{"id": "f1", "labels": ["Fact"], "text": "the sky is blue"}]}),
    );
    // The session is running; the user's own commands open the repository meanwhile.
    let log = s.json(&["log", "--json"]);
    assert_eq!(log[0]["commit"], first["commit"]);
    let docs = s.file(
        "more.jsonl",
        r#"{"node": {"id": "f2", "labels": ["Fact"], "text": "grass is green"}}"#,
    );
    s.ok(&["import", &docs]);
    // ... and the agent's next call sees what they wrote.
    let recall = m.tool("recall", json!({"text": "grass", "labels_all": ["Fact"]}));
    assert_eq!(recall["items"][0]["id"], "f2");
    let (status, _) = m.finish();
    assert!(status.success());

    // --hold keeps it for the session: another process is refused meanwhile.
    let mut held = Session::start(&s, &["--hold"]);
    held.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let err = s.fails_stderr(&["log"], 1);
    assert!(err.contains("in use by another process"), "{err}");
    let (status, _) = held.finish();
    assert!(status.success());
}
