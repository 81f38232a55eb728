//! `invalidate`: end a fact's validity at a time, in one commit. The fact stays in the
//! graph: `recall` at an earlier `valid_at`, and `as_of` an earlier commit, still see it.

use cairn::NodeId;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{begin, parse_args, present, schema, to_json, Context, Tool, ToolOutput};
use crate::error::ToolError;
use crate::time::{format_ms, time_ms};

pub(super) const TOOL: Tool = Tool {
    name: "invalidate",
    title: "End a fact",
    description: "Mark a remembered fact (a node) as no longer true from a time on: sets its `valid_until`, in one \
                  commit. The fact is kept: recall at an earlier valid_at, and as_of an earlier commit, still find \
                  it; recall at a later time does not. Fails with `node_not_found` if there is no such node.",
    read_only: false,
    input_schema,
    run,
};

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The node's id."},
            "valid_until": schema::time("When the fact stopped being true (exclusive)."),
            "message": {"type": "string", "description": "Commit message (default: `invalidate <id>`)."},
            "expected_head": schema::expected_head(),
            "author": {"type": "string", "description": "Author of the commit (default: the server's)."},
        },
        "required": ["id", "valid_until"],
        "additionalProperties": false,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: String,
    valid_until: Value,
    message: Option<String>,
    #[serde(default, deserialize_with = "present")]
    expected_head: Option<Option<String>>,
    author: Option<String>,
}

#[derive(Serialize)]
struct Invalidated {
    commit: String,
    parent: Option<String>,
    id: String,
    valid_until: i64,
}

fn run(ctx: &Context<'_>, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(args)?;
    let id = NodeId::new(&args.id).map_err(|e| ToolError::InvalidArguments(format!("`id`: {e}")))?;
    let until = time_ms("valid_until", &args.valid_until)?;
    let message = match args.message {
        Some(m) if !m.trim().is_empty() => m,
        Some(_) => return Err(ToolError::InvalidArguments("`message` is empty".into())),
        None => format!("invalidate {id}"),
    };
    let mut tx = begin(ctx, args.expected_head, args.author)?;
    let parent = tx.base();
    tx.invalidate(&id, until)?;
    let commit = tx.commit(&message)?;
    let out = Invalidated {
        commit: commit.to_hex(),
        parent: parent.map(|p| p.to_hex()),
        id: id.to_string(),
        valid_until: until,
    };
    let text = format!(
        "\"{}\" is valid until {} (commit {})",
        out.id,
        format_ms(until),
        out.commit
    );
    Ok(ToolOutput {
        text,
        structured: to_json(&out)?,
    })
}
