//! [`Server`]: one MCP session over one repository — the lifecycle (`initialize`,
//! `notifications/initialized`, `ping`), `tools/list` and `tools/call`, one message at a
//! time.

use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use cairn::Repo;
use serde_json::{json, Map, Value};

use crate::jsonrpc::{self, Message, RpcError, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use crate::tools::{self, Context, ToolOutput};
use crate::ToolError;

/// The newest MCP protocol version this server speaks, offered when a client asks for one
/// it does not know.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// Every MCP protocol version this server speaks, newest first. A client asking for one of
/// these gets it; structured tool results (`structuredContent`) are new in `2025-06-18`,
/// so with an older version each tool result also carries its JSON as a second text
/// block.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

/// The longest message [`Server::serve`] reads (64 MiB, the import format's line cap);
/// a longer line is answered with an "Invalid Request" error and skipped.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// Told to the client at `initialize`, for the model: how to use this memory.
const INSTRUCTIONS: &str = "Cairn is a versioned graph memory. Store facts as nodes with stable ids and a `text` \
    (`remember`, one commit per call), end facts that stop being true with `invalidate` (they stay in history), \
    find what is known with `recall` (BM25 text search, label/property gates, validity time, graph expansion, \
    token budget), see how a fact changed with `history`, and read what was known at a past time with `as_of`.";

/// An MCP server over one repository: feed it JSON-RPC messages, one per line, and it
/// answers each request with one line.
///
/// It keeps the protocol version agreed at `initialize`; everything else lives in the
/// repository, so a tool call is answered from the branch head at that moment. Requests
/// are handled in order, one at a time. Before `initialize` every method still works
/// (a lenient server is easier to script), but a client should initialize first.
///
/// ```
/// use cairn_mcp::Server;
///
/// let mut server = Server::new(cairn::Repo::in_memory()?);
/// let reply = server.handle(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
/// assert_eq!(reply.as_deref(), Some(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
/// # Ok::<(), cairn::Error>(())
/// ```
pub struct Server {
    repo: Backing,
    author: String,
    protocol_version: Option<String>,
}

/// Where the repository comes from.
enum Backing {
    /// Open for the whole session (other processes cannot open it meanwhile).
    Held(Repo),
    /// Opened for each tool call and closed after it, waiting up to `wait` for another
    /// process that has it open: other processes (the user's `cairn log`, a second agent)
    /// use it between calls.
    PerCall { path: PathBuf, wait: Duration },
}

impl Server {
    /// A server over `repo`, held for the whole session; its commits are authored
    /// `cairn` (see [`Server::with_author`]).
    pub fn new(repo: Repo) -> Server {
        Server {
            repo: Backing::Held(repo),
            author: "cairn".into(),
            protocol_version: None,
        }
    }

    /// A server over the repository at `path`, opened for each tool call and closed after
    /// it (waiting up to `wait` while another process has it open), so other processes
    /// share it between calls. The protocol messages that are not tool calls never open
    /// it. A call that cannot open it answers a tool error (`not_a_repository`, `locked`).
    /// Each call loads the index parts it needs from the repository's store, where a held
    /// repository ([`Server::new`]) keeps them in memory between calls.
    ///
    /// ```
    /// use cairn_mcp::Server;
    ///
    /// let dir = tempfile::tempdir()?;
    /// drop(cairn::Repo::init(dir.path().join("memory"))?);
    /// let mut server = Server::open_per_call(dir.path().join("memory"), std::time::Duration::from_secs(5));
    /// let reply = server.handle(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall","arguments":{"text":"x"}}}"#).unwrap();
    /// assert!(reply.contains(r#""isError":false"#));
    /// // Between calls the repository is free.
    /// drop(cairn::Repo::open(dir.path().join("memory"))?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_per_call(path: impl Into<PathBuf>, wait: Duration) -> Server {
        Server {
            repo: Backing::PerCall {
                path: path.into(),
                wait,
            },
            author: "cairn".into(),
            protocol_version: None,
        }
    }

    /// Sets the author of the commits the tools make when a call names none.
    pub fn with_author(mut self, author: impl Into<String>) -> Server {
        self.author = author.into();
        self
    }

    /// Takes `version` as the protocol version agreed at an earlier `initialize` (a
    /// server that keeps no session, such as `cairn serve`'s `POST /mcp`, learns it from
    /// each request); a version not in [`SUPPORTED_PROTOCOL_VERSIONS`] is ignored.
    ///
    /// ```
    /// let server = cairn_mcp::Server::new(cairn::Repo::in_memory()?).with_protocol_version("2025-03-26");
    /// assert_eq!(server.protocol_version(), Some("2025-03-26"));
    /// # Ok::<(), cairn::Error>(())
    /// ```
    pub fn with_protocol_version(mut self, version: &str) -> Server {
        if SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            self.protocol_version = Some(version.to_string());
        }
        self
    }

    /// The repository served, when it is held for the session ([`Server::new`]).
    pub fn repo(&self) -> Option<&Repo> {
        match &self.repo {
            Backing::Held(r) => Some(r),
            Backing::PerCall { .. } => None,
        }
    }

    /// The protocol version agreed at `initialize` (`None` before it).
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_deref()
    }

    /// Handles one message (a line without its newline): a request, a notification, or a
    /// batch (a JSON array of them). Returns the response line, without a newline, or
    /// `None` when nothing is to be sent (a notification, a client's response, a batch of
    /// notifications, a blank line).
    ///
    /// Protocol errors are JSON-RPC errors: invalid JSON ([`PARSE_ERROR`](crate::PARSE_ERROR)),
    /// a message that is not a request ([`INVALID_REQUEST`](crate::INVALID_REQUEST)), an
    /// unknown method ([`METHOD_NOT_FOUND`](crate::METHOD_NOT_FOUND)), bad params of
    /// `initialize` or `tools/call` such as an unknown tool
    /// ([`INVALID_PARAMS`](crate::INVALID_PARAMS)). A tool that fails — bad argument
    /// values, an unknown node, a refused write — answers normally, with a result whose
    /// `isError` is true (see [`ToolError`]).
    pub fn handle(&mut self, line: &str) -> Option<String> {
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        let message: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                let error = RpcError::new(PARSE_ERROR, format!("parse error: {e}"));
                return Some(jsonrpc::failure(&Value::Null, &error));
            }
        };
        match message {
            Value::Array(batch) => {
                if batch.is_empty() {
                    let error = RpcError::new(INVALID_REQUEST, "an empty batch");
                    return Some(jsonrpc::failure(&Value::Null, &error));
                }
                let replies: Vec<String> = batch.into_iter().filter_map(|m| self.handle_one(m)).collect();
                (!replies.is_empty()).then(|| format!("[{}]", replies.join(",")))
            }
            single => self.handle_one(single),
        }
    }

    /// Reads messages from `reader`, one per line, and writes each response to `writer`
    /// followed by a newline, flushing after each, until the end of input. Only protocol
    /// messages are written; nothing goes to standard error. A line that is not UTF-8 is
    /// answered with a parse error, one over [`MAX_MESSAGE_BYTES`] with an invalid-request
    /// error; either way the session goes on.
    ///
    /// ```
    /// use cairn_mcp::Server;
    ///
    /// let input = concat!(
    ///     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#, "\n",
    ///     r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, "\n",
    ///     r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, "\n",
    /// );
    /// let mut out = Vec::new();
    /// Server::new(cairn::Repo::in_memory()?).serve(input.as_bytes(), &mut out)?;
    /// let lines: Vec<&str> = std::str::from_utf8(&out).unwrap().lines().collect();
    /// assert_eq!(lines.len(), 2); // the notification gets no answer
    /// assert!(lines[1].contains(r#""name":"recall""#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn serve(&mut self, mut reader: impl BufRead, mut writer: impl Write) -> io::Result<()> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let read = Read::take(&mut reader, MAX_MESSAGE_BYTES as u64 + 1).read_until(b'\n', &mut buf)?;
            if read == 0 {
                return Ok(());
            }
            let reply = if buf.last() != Some(&b'\n') && read > MAX_MESSAGE_BYTES {
                skip_line(&mut reader)?;
                let error = RpcError::new(
                    INVALID_REQUEST,
                    format!("message longer than {MAX_MESSAGE_BYTES} bytes"),
                );
                Some(jsonrpc::failure(&Value::Null, &error))
            } else {
                match std::str::from_utf8(&buf) {
                    Ok(line) => self.handle(line),
                    Err(e) => {
                        let error = RpcError::new(PARSE_ERROR, format!("parse error: the message is not UTF-8 ({e})"));
                        Some(jsonrpc::failure(&Value::Null, &error))
                    }
                }
            };
            if let Some(reply) = reply {
                writer.write_all(reply.as_bytes())?;
                writer.write_all(b"\n")?;
                writer.flush()?;
            }
        }
    }

    fn handle_one(&mut self, message: Value) -> Option<String> {
        match jsonrpc::classify(message) {
            Err((id, error)) => Some(jsonrpc::failure(&id, &error)),
            Ok(Message::Response) => None,
            Ok(Message::Notification { method, params }) => {
                self.notify(&method, params);
                None
            }
            Ok(Message::Request { id, method, params }) => Some(match self.call(&method, params) {
                Ok(result) => jsonrpc::success(&id, &result),
                Err(error) => jsonrpc::failure(&id, &error),
            }),
        }
    }

    /// A notification: nothing to answer. `notifications/initialized` ends the handshake;
    /// `notifications/cancelled` has nothing to cancel (requests are answered in order);
    /// others are ignored, as JSON-RPC asks.
    fn notify(&mut self, _method: &str, _params: Option<Value>) {}

    /// A request's result, serialized, or its protocol error.
    fn call(&mut self, method: &str, params: Option<Value>) -> Result<String, RpcError> {
        match method {
            "initialize" => self.initialize(jsonrpc::params_object(params)?),
            "ping" => Ok("{}".into()),
            "tools/list" => {
                jsonrpc::params_object(params)?;
                let tools: Vec<Value> = tools::TOOLS.iter().map(tools::describe).collect();
                Ok(json!({ "tools": tools }).to_string())
            }
            "tools/call" => self.call_tool(jsonrpc::params_object(params)?),
            other => Err(RpcError::new(METHOD_NOT_FOUND, format!("method not found: `{other}`"))),
        }
    }

    fn initialize(&mut self, params: Map<String, Value>) -> Result<String, RpcError> {
        let asked = match params.get("protocolVersion") {
            Some(Value::String(v)) => v.as_str(),
            Some(_) => return Err(RpcError::invalid_params("`protocolVersion` must be a string")),
            None => return Err(RpcError::invalid_params("`initialize` needs a `protocolVersion`")),
        };
        let version = SUPPORTED_PROTOCOL_VERSIONS
            .iter()
            .find(|v| **v == asked)
            .copied()
            .unwrap_or(PROTOCOL_VERSION);
        self.protocol_version = Some(version.to_string());
        Ok(json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "cairn", "title": "Cairn memory", "version": env!("CARGO_PKG_VERSION")},
            "instructions": INSTRUCTIONS,
        })
        .to_string())
    }

    fn call_tool(&mut self, mut params: Map<String, Value>) -> Result<String, RpcError> {
        let name = match params.remove("name") {
            Some(Value::String(n)) => n,
            Some(_) => return Err(RpcError::invalid_params("`name` must be a string")),
            None => return Err(RpcError::invalid_params("`tools/call` needs the tool's `name`")),
        };
        let Some(tool) = tools::find(&name) else {
            let known: Vec<&str> = tools::TOOLS.iter().map(|t| t.name).collect();
            return Err(RpcError::invalid_params(format!(
                "unknown tool `{name}` (tools: {})",
                known.join(", ")
            )));
        };
        let args = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a,
            Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
        };
        let opened;
        let repo = match &self.repo {
            Backing::Held(r) => r,
            Backing::PerCall { path, wait } => match Repo::open_waiting(path, *wait) {
                Ok(r) => {
                    opened = r;
                    &opened
                }
                Err(e) => return Ok(self.tool_result(&error_output(&ToolError::Repo(e)), true)),
            },
        };
        let ctx = Context {
            repo,
            author: &self.author,
        };
        Ok(match (tool.run)(&ctx, args) {
            Ok(output) => self.tool_result(&output, false),
            Err(e) => self.tool_result(&error_output(&e), true),
        })
    }

    /// A `tools/call` result: the text, then (before `2025-06-18`) the structured content
    /// as a second text block, `isError`, and `structuredContent` byte for byte.
    fn tool_result(&self, output: &ToolOutput, is_error: bool) -> String {
        let text = |t: &str| json!({"type": "text", "text": t}).to_string();
        let mut content = text(&output.text);
        let structured_era = self.protocol_version.as_deref().is_none_or(|v| v >= "2025-06-18");
        if !structured_era {
            content.push(',');
            content.push_str(&text(&output.structured));
        }
        format!(
            r#"{{"content":[{content}],"isError":{is_error},"structuredContent":{}}}"#,
            output.structured
        )
    }
}

/// A failed tool call as output: `error[code]: message`, and `{"error": {"code", "message"}}`.
fn error_output(e: &ToolError) -> ToolOutput {
    let mut message = e.to_string();
    if e.code() == "not_a_repository" {
        // What to do next: the host's configuration starts the server.
        message.push_str(" (create it with `cairn init --repo PATH`, or add `--init` to the `cairn mcp` command)");
    }
    ToolOutput {
        text: format!("error[{}]: {message}", e.code()),
        structured: json!({"error": {"code": e.code(), "message": message}}).to_string(),
    }
}

/// Discards the rest of a line that was too long.
fn skip_line(reader: &mut impl BufRead) -> io::Result<()> {
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(());
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = available.len();
                reader.consume(n);
            }
        }
    }
}
