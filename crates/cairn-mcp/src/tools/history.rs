//! `history`: the versions of one node, newest first — each commit that added, changed or
//! removed it, with the commit's message and the node as that commit left it.

use cairn::NodeLine;
use cairn::{ChangeKind, HistoryLine, NodeId};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{parse_args, to_json, Context, Tool, ToolOutput};
use crate::error::ToolError;
use crate::time::{format_ms, format_validity};

pub(super) const TOOL: Tool = Tool {
    name: "history",
    title: "History of a fact",
    description: "How one node changed over time, newest first: every commit that added, changed or removed it, with \
                  the commit's time and message and the node as that commit left it (null once removed). A node no \
                  commit touched gives an empty list.",
    read_only: true,
    input_schema,
    run,
};

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The node's id."},
            "rev": {"type": "string", "description": "Walk back from this revision (a branch, a commit id, HEAD~N, BRANCH@{TIME}); default: the current branch's head."},
            "limit": {"type": "integer", "minimum": 1, "description": "At most this many versions."},
        },
        "required": ["id"],
        "additionalProperties": false,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: String,
    rev: Option<String>,
    limit: Option<usize>,
}

/// One version: the history line (the library's entry and the commit's message, as
/// `cairn history --json` prints it), then the node after the commit.
#[derive(Serialize)]
struct Version<'a> {
    #[serde(flatten)]
    line: &'a HistoryLine,
    node: Option<NodeLine<'a>>,
}

fn run(ctx: &Context<'_>, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(args)?;
    let id = NodeId::new(&args.id).map_err(|e| ToolError::InvalidArguments(format!("`id`: {e}")))?;
    if args.limit == Some(0) {
        return Err(ToolError::InvalidArguments("`limit` must be at least 1".into()));
    }
    let repo = ctx.repo;
    let lines = HistoryLine::list(repo, args.rev.as_deref(), &id, args.limit)?;
    let nodes = lines
        .iter()
        .map(|l| match l.entry.change {
            ChangeKind::Removed => Ok(None),
            _ => repo.node_at(&l.entry.commit, &id),
        })
        .collect::<cairn::Result<Vec<_>>>()?;
    let versions: Vec<Version<'_>> = lines
        .iter()
        .zip(&nodes)
        .map(|(line, node)| Version {
            line,
            node: node.as_ref().map(NodeLine::of),
        })
        .collect();

    let mut text = match versions.len() {
        0 => format!("no commit touched \"{id}\""),
        n => format!("\"{id}\": {n} version{}, newest first", if n == 1 { "" } else { "s" }),
    };
    for (v, node) in versions.iter().zip(&nodes) {
        let change = serde_json::to_value(v.line.entry.change)
            .ok()
            .and_then(|c| c.as_str().map(str::to_string))
            .unwrap_or_default();
        let subject = v.line.message.lines().next().unwrap_or("");
        text.push_str(&format!(
            "\n\n{}  {}  {change}  {subject}",
            v.line.entry.commit.short(),
            format_ms(v.line.entry.timestamp_ms)
        ));
        if let Some(n) = node {
            text.push_str(&format!(
                "\n  valid {}",
                format_validity(n.validity.valid_from_ms, n.validity.valid_until_ms)
            ));
            if !n.text.is_empty() {
                text.push_str(&format!("\n  text: {}", n.text));
            }
        }
    }
    let structured = to_json(&json!({ "id": id.as_str(), "versions": versions }))?;
    Ok(ToolOutput { text, structured })
}
