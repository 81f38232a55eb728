//! `POST /mcp?author=`: the Model Context Protocol over HTTP, so that agents share the server's
//! repository with every other client (`cairn --remote URL mcp` bridges a stdio MCP
//! client to it; an MCP client that speaks HTTP can post here itself).
//!
//! Each request carries one JSON-RPC message, or a batch, as `cairn mcp` reads one line;
//! the answer is the reply as JSON (200), or 202 with no body when nothing is to be sent
//! (a notification). The server keeps no session: the protocol version agreed at
//! `initialize` comes back with every later request in the `MCP-Protocol-Version` header
//! (as MCP's HTTP transport asks), and decides the shape of tool results. A request's
//! tool call runs under the repository's write lock, so a `remember` never races the
//! server's other writes; MCP requests to one repository are answered one at a time.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::{blocking, JsonBytes};
use crate::error::ApiError;
use crate::extract::{Body, Params, TenantRepo};

/// `POST /mcp` parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpParams {
    /// Author of the commits tool calls make when a call names none [default: `cairn`].
    author: Option<String>,
}

/// The header carrying the protocol version agreed at `initialize`.
pub(crate) const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// `POST /mcp`, body one JSON-RPC message or batch (module docs).
pub(crate) async fn mcp(
    TenantRepo(t): TenantRepo,
    Params(p): Params<McpParams>,
    headers: HeaderMap,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let version = headers
        .get(PROTOCOL_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let line = String::from_utf8(body.to_vec())
        .map_err(|_| ApiError::bad_request("the body is not UTF-8 (one JSON-RPC message, as JSON)"))?;
    let reply = blocking(move || {
        let _write = t.write_lock();
        let mut server = cairn_mcp::Server::new(t.repo.clone());
        if let Some(v) = &version {
            server = server.with_protocol_version(v);
        }
        if let Some(a) = p.author {
            server = server.with_author(a);
        }
        Ok(server.handle(line.trim()))
    })
    .await?;
    Ok(match reply {
        Some(r) => JsonBytes(r.into_bytes()).into_response(),
        None => StatusCode::ACCEPTED.into_response(),
    })
}
