//! The tools an agent calls: one file per tool, each with its argument type, its JSON
//! Schema and its run function. [`TOOLS`] lists them in the order `tools/list` gives.
//!
//! Shared here: how arguments are read (an object, unknown fields refused), the
//! compare-and-swap check of `expected_head`, and how a retrieval spec is read from
//! arguments (times in any form).

mod as_of;
mod history;
mod invalidate;
mod recall;
mod remember;
mod schema;

use cairn::retrieve::RetrieveSpec;
use cairn::{CommitId, Repo, Transaction};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// What a tool sees besides its arguments.
pub(crate) struct Context<'a> {
    /// The repository.
    pub repo: &'a Repo,
    /// The author of the commits tools make.
    pub author: &'a str,
}

/// What a successful tool returns: text for the model, and a JSON object (already
/// serialized) for programs.
pub(crate) struct ToolOutput {
    /// `content[0].text`.
    pub text: String,
    /// `structuredContent`: one JSON object, compact.
    pub structured: String,
}

/// One tool.
pub(crate) struct Tool {
    /// Its name in `tools/call`.
    pub name: &'static str,
    /// A short human title.
    pub title: &'static str,
    /// What it does, for the model choosing tools.
    pub description: &'static str,
    /// True if it never writes.
    pub read_only: bool,
    /// The JSON Schema of its arguments.
    pub input_schema: fn() -> Value,
    /// Runs it.
    pub run: fn(&Context<'_>, Map<String, Value>) -> Result<ToolOutput, ToolError>,
}

/// Every tool, in `tools/list` order.
pub(crate) const TOOLS: &[Tool] = &[
    remember::TOOL,
    invalidate::TOOL,
    recall::TOOL,
    history::TOOL,
    as_of::TOOL,
];

/// The tool named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The `tools/list` entry of a tool.
pub(crate) fn describe(tool: &Tool) -> Value {
    serde_json::json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": (tool.input_schema)(),
        "annotations": {
            "title": tool.title,
            "readOnlyHint": tool.read_only,
            // Writes add versions; nothing is ever lost from history.
            "destructiveHint": false,
            "idempotentHint": tool.read_only,
            "openWorldHint": false,
        },
    })
}

/// Reads a tool's arguments into its argument type (unknown fields refused by the type).
fn parse_args<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// Serializes a structured result (a `Serialize` that is a JSON object).
fn to_json(value: &impl serde::Serialize) -> Result<String, ToolError> {
    serde_json::to_string(value).map_err(|e| ToolError::InvalidArguments(format!("cannot encode the result: {e}")))
}

/// Absent: `None`; `null`: `Some(None)`.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A new transaction on the current branch, authored as the server says, checked against
/// `expected_head` (absent: no check; `null`: the branch must have no commit yet; else a
/// full commit id). The commit itself then moves the branch by compare-and-swap from the
/// same head, so a write between this check and the commit fails too.
fn begin<'r>(
    ctx: &Context<'r>,
    expected_head: Option<Option<String>>,
    author: Option<String>,
) -> Result<Transaction<'r>, ToolError> {
    let expected = match &expected_head {
        None => None,
        Some(None) => Some(None),
        Some(Some(hex)) => Some(Some(CommitId::from_hex(hex).map_err(|e| {
            ToolError::InvalidArguments(format!(
                "`expected_head`: {e} (give the full 64-digit commit id a previous call returned)"
            ))
        })?)),
    };
    let mut tx = ctx.repo.transaction()?;
    let author = author.unwrap_or_else(|| ctx.author.to_string());
    tx.set_author(author)?;
    if let Some(expected) = expected {
        let actual = tx.base();
        if actual != expected {
            let name = |c: Option<CommitId>| c.map_or_else(|| "none".to_string(), |c| c.to_hex());
            return Err(ToolError::HeadMoved {
                branch: ctx.repo.current_branch()?.to_string(),
                expected: name(expected),
                actual: name(actual),
            });
        }
    }
    Ok(tx)
}

/// A retrieval spec from arguments (the `cairn retrieve --spec` JSON), with one
/// convenience: `valid_at` may also be a time string in any form Cairn accepts.
fn spec_from(mut args: Map<String, Value>, field: &str) -> Result<RetrieveSpec, ToolError> {
    if let Some(v) = args.get_mut("valid_at") {
        if let Value::String(s) = v {
            if s != "all_time" {
                let ms = crate::time::time_ms(&format!("{field}valid_at"), v)?;
                *v = Value::from(ms);
            }
        }
    }
    // Through the spec's own parser, so its checks and messages are the CLI's.
    let json = Value::Object(args).to_string();
    let spec = RetrieveSpec::from_json(&json)?;
    Ok(spec)
}
