//! `cairn --remote URL mcp`: the Model Context Protocol on standard input and output,
//! answered by a `cairn serve` server (its `POST /mcp`), so that agents and the user's
//! own commands share one memory while the server holds the repository.
//!
//! Each line read is posted as it is; the server's answer is written as one line, and a
//! notification's empty answer (202) writes nothing. The server keeps no session: the
//! protocol version it agreed at `initialize` is sent back with every later message
//! (`MCP-Protocol-Version`). A message the server cannot answer — it is unreachable, or
//! refuses the token — gets a JSON-RPC error with the reason when it is a request (a
//! notification's is logged to standard error), and the session goes on.

use std::io::{BufRead, Write};

use clap::ArgMatches;
use serde_json::Value;

use crate::error::CliError;
use crate::remote::Remote;

/// Bridges `input` (one message per line) to the server until the end of input.
pub(crate) fn bridge(
    remote: &Remote,
    m: &ArgMatches,
    input: impl BufRead,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    for flag in ["init", "hold"] {
        if m.get_flag(flag) {
            return Err(CliError::Refused(format!(
                "`cairn mcp --{flag}` is for a local repository; with --remote the server holds it"
            )));
        }
    }
    let author = m.get_one::<String>("author").cloned();
    let _ = writeln!(
        std::io::stderr(),
        "cairn mcp: serving over stdio through {}/mcp",
        remote.base()
    );
    let mut version: Option<String> = None;
    for line in input.lines() {
        let line = line?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let reply = match remote.post_mcp(line, version.as_deref(), author.as_deref()) {
            Ok(Some(reply)) => reply,
            Ok(None) => continue,
            Err(e) => match request_id(line) {
                Some(id) => serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": cairn_mcp::INTERNAL_ERROR, "message": e.to_string()},
                })
                .to_string(),
                None => {
                    let _ = writeln!(std::io::stderr(), "cairn mcp: {e}");
                    continue;
                }
            },
        };
        if version.is_none() {
            version = agreed_version(&reply);
        }
        writeln!(out, "{}", reply.trim_end())?;
        out.flush()?;
    }
    Ok(())
}

/// The id of a single request (`None`: a notification, a batch, or not JSON).
fn request_id(line: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(line).ok()?;
    v.get("method")?;
    v.get("id").cloned().filter(|id| !id.is_null())
}

/// The protocol version an `initialize` answer agreed.
fn agreed_version(reply: &str) -> Option<String> {
    let v: Value = serde_json::from_str(reply).ok()?;
    v["result"]["protocolVersion"].as_str().map(str::to_string)
}
