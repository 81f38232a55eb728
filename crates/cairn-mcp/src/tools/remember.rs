//! `remember`: put nodes and edges (and any other import-format operation) in one commit.

use cairn::{parse_import_line, ImportOp};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{begin, parse_args, present, schema, to_json, Context, Tool, ToolOutput};
use crate::error::ToolError;

pub(super) const TOOL: Tool = Tool {
    name: "remember",
    title: "Remember facts",
    description: "Store nodes (facts, documents, entities) and edges between them in the agent's memory, as ONE \
                  commit with a message. A node put replaces the node with the same id; give each fact a stable id. \
                  Nodes are applied first, then edges, then `ops` (any line of the import format: patch, \
                  delete_node, delete_edge, invalidate, invalidate_edge). All or nothing: one refused operation \
                  commits nothing. Operations that change nothing (facts already stored as given) make no commit: \
                  `changed` is false and `commit` is the unchanged head. Returns the commit id and counts.",
    read_only: false,
    input_schema,
    run,
};

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "message": {"type": "string", "minLength": 1, "description": "Commit message: why this is remembered."},
            "nodes": {"type": "array", "items": schema::node(), "description": "Nodes to put."},
            "edges": {"type": "array", "items": schema::edge(), "description": "Edges to put (their nodes must exist, or be put in the same call)."},
            "ops": {
                "type": "array",
                "description": "Other operations, each an object with one key as a line of `cairn import`: \
                                {\"patch\": {\"id\", \"labels_add\", \"props\", \"text\", ...}}, {\"delete_node\": \"id\"}, \
                                {\"delete_edge\": {\"source\", \"kind\", \"target\"}}, {\"invalidate\": {\"id\", \"valid_until\"}}, \
                                {\"invalidate_edge\": {\"source\", \"kind\", \"target\", \"valid_until\"}}.",
                "items": {"type": "object", "minProperties": 1, "maxProperties": 1},
            },
            "expected_head": schema::expected_head(),
            "author": {"type": "string", "description": "Author of the commit (default: the server's)."},
        },
        "required": ["message"],
        "additionalProperties": false,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    message: String,
    #[serde(default)]
    nodes: Vec<Value>,
    #[serde(default)]
    edges: Vec<Value>,
    #[serde(default)]
    ops: Vec<Value>,
    #[serde(default, deserialize_with = "present")]
    expected_head: Option<Option<String>>,
    author: Option<String>,
}

/// The structured result.
#[derive(Serialize)]
struct Remembered {
    commit: String,
    parent: Option<String>,
    branch: String,
    /// False when the operations left the graph as it was: no commit was made, and
    /// `commit` is the unchanged head (`parent` its parent).
    changed: bool,
    nodes: usize,
    edges: usize,
    ops: usize,
}

fn run(ctx: &Context<'_>, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(args)?;
    if args.message.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "`message` is empty: say why this is remembered".into(),
        ));
    }
    if args.nodes.is_empty() && args.edges.is_empty() && args.ops.is_empty() {
        return Err(ToolError::InvalidArguments(
            "nothing to remember: give `nodes`, `edges` or `ops`".into(),
        ));
    }
    // Parse everything before touching the transaction, so a bad object fails fast.
    let mut parsed = Vec::with_capacity(args.nodes.len() + args.edges.len() + args.ops.len());
    for (field, key, items) in [
        ("nodes", Some("node"), &args.nodes),
        ("edges", Some("edge"), &args.edges),
        ("ops", None, &args.ops),
    ] {
        for (i, item) in items.iter().enumerate() {
            let at = format!("{field}[{i}]");
            if key.is_some() && !item.is_object() {
                return Err(ToolError::InvalidArguments(format!("`{at}` must be an object")));
            }
            let line = match key {
                Some(key) => json!({ key: item }).to_string(),
                None => item.to_string(),
            };
            let op =
                parse_import_line(&line).map_err(|detail| ToolError::InvalidArguments(format!("`{at}`: {detail}")))?;
            parsed.push((at, op));
        }
    }

    let mut tx = begin(ctx, args.expected_head, args.author)?;
    let parent = tx.base();
    for (at, op) in parsed {
        let applied = match op {
            ImportOp::PutNode(n) => tx.put_node(n),
            ImportOp::PutEdge(e) => tx.put_edge(e),
            ImportOp::DeleteNode(id) => tx.delete_node(&id),
            ImportOp::DeleteEdge(k) => tx.delete_edge(&k),
            ImportOp::Invalidate(id, t) => tx.invalidate(&id, t),
            ImportOp::InvalidateEdge(k, t) => tx.invalidate_edge(&k, t),
            ImportOp::Patch(id, patch) => tx.patch_node(&id, patch),
        };
        applied.map_err(|source| ToolError::Operation { at, source })?;
    }
    // Operations that leave every node and edge as it is make no commit: re-remembering
    // known facts must not fill the log with empty commits. The head stays, and is returned.
    let unchanged = match parent {
        Some(head) if tx.changes_nothing()? => Some(head),
        _ => None,
    };
    let (commit, parent) = match unchanged {
        Some(head) => (head, ctx.repo.commit(&head)?.parents.first().copied()),
        None => (tx.commit(&args.message)?, parent),
    };
    let out = Remembered {
        commit: commit.to_hex(),
        parent: parent.map(|p| p.to_hex()),
        changed: unchanged.is_none(),
        branch: ctx.repo.current_branch()?.to_string(),
        nodes: args.nodes.len(),
        edges: args.edges.len(),
        ops: args.ops.len(),
    };
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let parts: Vec<String> = [
        (out.nodes, "node", "nodes"),
        (out.edges, "edge", "edges"),
        (out.ops, "other operation", "other operations"),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| plural(n, one, many))
    .collect();
    let text = if out.changed {
        format!(
            "remembered {} in commit {} on branch {}",
            parts.join(", "),
            out.commit,
            out.branch
        )
    } else {
        format!(
            "nothing changed: {} already as given; no commit made, branch {} stays at {}",
            parts.join(", "),
            out.branch,
            out.commit
        )
    };
    Ok(ToolOutput {
        text,
        structured: to_json(&out)?,
    })
}
