//! # cairn-mcp
//!
//! The [Model Context Protocol](https://modelcontextprotocol.io) over stdio for a Cairn
//! repository: an agent's host (Claude Desktop, an IDE, any MCP client) starts
//! `cairn mcp --repo PATH` and the model gets tools for its memory.
//!
//! - Transport: JSON-RPC 2.0, one message per line (stdio). Protocol versions
//!   [`SUPPORTED_PROTOCOL_VERSIONS`] (`2025-06-18` preferred); methods `initialize`,
//!   `notifications/initialized`, `ping`, `tools/list`, `tools/call`.
//! - Tools:
//!   - `remember` — put nodes and edges (objects of the import format, as `cairn import`
//!     reads them) and other import operations in **one** commit with a message; optional
//!     `expected_head` for compare-and-swap. Returns the commit id and counts.
//!   - `invalidate` — end a fact's validity at a time (the time forms of the CLI), one commit.
//!   - `recall` — a retrieval from the arguments of a `cairn retrieve` JSON spec; the text
//!     is the packed context, `structuredContent` the result exactly as
//!     `cairn retrieve --json` prints it.
//!   - `history` — a node's versions across commits, with messages.
//!   - `as_of` — a node or a retrieval at a revision or at "the head as of time T".
//! - Errors: a protocol error is a JSON-RPC error (codes [`PARSE_ERROR`],
//!   [`INVALID_REQUEST`], [`METHOD_NOT_FOUND`], [`INVALID_PARAMS`]); a tool that fails
//!   returns `isError: true` with `{"error": {"code", "message"}}`, the code stable
//!   ([`ToolError::code`]).
//!
//! The library part is a plain value with no I/O of its own, [`Server`]: feed it lines
//! ([`Server::handle`]) or a reader and a writer ([`Server::serve`]).
//!
//! ```
//! use cairn_mcp::Server;
//! use serde_json::Value;
//!
//! let mut server = Server::new(cairn::Repo::in_memory()?);
//! let mut call = |line: &str| -> Value { serde_json::from_str(&server.handle(line).unwrap()).unwrap() };
//!
//! let init = call(r#"{"jsonrpc":"2.0","id":1,"method":"initialize",
//!     "params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#);
//! assert_eq!(init["result"]["serverInfo"]["name"], "cairn");
//!
//! let stored = call(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember",
//!     "arguments":{"message":"met Alice","nodes":[{"id":"alice-city","labels":["Fact"],"text":"Alice lives in Paris"}]}}}"#);
//! assert_eq!(stored["result"]["isError"], false);
//!
//! let found = call(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recall",
//!     "arguments":{"text":"where does Alice live","labels_all":["Fact"],"limit":3}}}"#);
//! assert_eq!(found["result"]["structuredContent"]["items"][0]["id"], "alice-city");
//! assert!(found["result"]["content"][0]["text"].as_str().unwrap().contains("Alice lives in Paris"));
//! # Ok::<(), cairn::Error>(())
//! ```

#![warn(missing_docs)]

mod error;
mod jsonrpc;
mod server;
mod time;
mod tools;

pub use error::ToolError;
pub use jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
pub use server::{Server, MAX_MESSAGE_BYTES, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
