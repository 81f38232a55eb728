//! `as_of`: read the memory as it was — one node, or a retrieval — at a revision, or at
//! "the head the branch had at time T" (transaction time).

use cairn::{CommitId, NodeId};
use cairn::{EdgeLine, NodeLine};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{parse_args, recall, schema, spec_from, to_json, Context, Tool, ToolOutput};
use crate::error::ToolError;
use crate::time::{format_ms, format_validity, time_ms};

pub(super) const TOOL: Tool = Tool {
    name: "as_of",
    title: "Read the past",
    description:
        "Read the memory as it was: one node (`id`, with its edges) or a retrieval (`query`, the arguments of \
                  `recall`) at a revision (`at`: a commit id, HEAD~N, a branch) or at a time (`time`: the head the \
                  branch had then — what the agent knew at T). Default: the current head. For facts that were *true* \
                  at a time, use recall's `valid_at` instead; as_of is about what had been *recorded* by then.",
    read_only: true,
    input_schema,
    run,
};

fn input_schema() -> Value {
    let query = json!({
        "type": "object",
        "properties": schema::spec_properties(),
        "description": "A retrieval, with recall's arguments (without `at`).",
    });
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "A node to read (give `id` or `query`)."},
            "query": query,
            "at": {"type": "string", "description": "A revision: commit id or prefix, branch, HEAD~N, BRANCH@{TIME}."},
            "time": schema::time("Transaction time: read the head the branch had at this time."),
            "branch": {"type": "string", "description": "With `time`: the branch (default: the current one)."},
        },
        "additionalProperties": false,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: Option<String>,
    query: Option<Map<String, Value>>,
    at: Option<String>,
    time: Option<Value>,
    branch: Option<String>,
}

#[derive(Serialize)]
struct NodeAsOf<'a> {
    commit: String,
    timestamp_ms: i64,
    node: NodeLine<'a>,
    edges_out: Vec<EdgeLine<'a>>,
    edges_in: Vec<EdgeLine<'a>>,
}

fn run(ctx: &Context<'_>, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(args)?;
    let commit = resolve(ctx, &args)?;
    match (args.id, args.query) {
        (Some(id), None) => read_node(ctx, commit, &id),
        (None, Some(query)) => {
            if query.contains_key("at") {
                return Err(ToolError::InvalidArguments(
                    "`query.at`: give the revision as as_of's own `at` or `time`".into(),
                ));
            }
            let mut spec = spec_from(query, "query.")?;
            spec.at = Some(commit.to_hex());
            recall::retrieve(ctx, spec)
        }
        _ => Err(ToolError::InvalidArguments(
            "give exactly one of `id` (a node) and `query` (a retrieval)".into(),
        )),
    }
}

/// The commit the arguments name: `at`, or the branch head as of `time`, or the head.
fn resolve(ctx: &Context<'_>, args: &Args) -> Result<CommitId, ToolError> {
    let repo = ctx.repo;
    match (&args.at, &args.time) {
        (Some(_), Some(_)) => Err(ToolError::InvalidArguments(
            "give at most one of `at` and `time`".into(),
        )),
        (Some(_), None) if args.branch.is_some() => Err(ToolError::InvalidArguments(
            "`branch` goes with `time`; put a branch in `at` instead".into(),
        )),
        (Some(rev), None) => Ok(repo.resolve(rev)?),
        (None, time) => {
            let branch = match &args.branch {
                Some(b) => b.clone(),
                None => repo.current_branch()?.to_string(),
            };
            let found = match time {
                Some(t) => {
                    let ms = time_ms("time", t)?;
                    repo.as_of(&branch, ms)?.ok_or_else(|| {
                        ToolError::NoCommit(format!(
                            "branch `{branch}` had no commit at {} (its first commit is later)",
                            format_ms(ms)
                        ))
                    })?
                }
                None => repo
                    .branch_head(&branch)?
                    .ok_or_else(|| ToolError::NoCommit(format!("branch `{branch}` has no commit yet")))?,
            };
            Ok(found)
        }
    }
}

fn read_node(ctx: &Context<'_>, commit: CommitId, id: &str) -> Result<ToolOutput, ToolError> {
    let repo = ctx.repo;
    let id = NodeId::new(id).map_err(|e| ToolError::InvalidArguments(format!("`id`: {e}")))?;
    let node = repo.node_at(&commit, &id)?.ok_or_else(|| cairn::Error::NodeNotFound {
        id: id.clone(),
        at: Some(commit),
    })?;
    let out_edges = repo.edges_from(&commit, &id)?;
    let in_edges = repo.edges_to(&commit, &id)?;
    let timestamp_ms = repo.commit(&commit)?.timestamp_ms;
    let out = NodeAsOf {
        commit: commit.to_hex(),
        timestamp_ms,
        node: NodeLine::of(&node),
        edges_out: out_edges.iter().map(EdgeLine::of).collect(),
        edges_in: in_edges.iter().map(EdgeLine::of).collect(),
    };
    let mut text = format!(
        "\"{id}\" at commit {} ({})\nlabels: {}\nvalid {}",
        commit.short(),
        format_ms(timestamp_ms),
        node.labels.iter().cloned().collect::<Vec<_>>().join(", "),
        format_validity(node.validity.valid_from_ms, node.validity.valid_until_ms)
    );
    if !node.props.is_empty() {
        text.push_str(&format!("\nprops: {}", json!(node.props)));
    }
    if !node.text.is_empty() {
        text.push_str(&format!("\ntext: {}", node.text));
    }
    for e in &out_edges {
        text.push_str(&format!("\n-[{}]-> {}", e.kind, e.target));
    }
    for e in &in_edges {
        text.push_str(&format!("\n<-[{}]- {}", e.kind, e.source));
    }
    Ok(ToolOutput {
        text,
        structured: to_json(&out)?,
    })
}
