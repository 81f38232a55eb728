//! `cairn show NODE_ID`: one node as of a revision.

use cairn::export::{EdgeLine, NodeLine};
use cairn::{CommitId, Node, NodeId};
use serde::Serialize;

use crate::error::CliError;
use crate::output::{format_time_ms, format_validity, write_field, write_json};
use crate::Ctx;

/// Arguments of `cairn show`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node's id.
    #[arg(value_name = "NODE_ID", value_parser = |s: &str| NodeId::new(s))]
    id: NodeId,
    /// Read the node at this revision [default: HEAD].
    #[arg(long, value_name = "REV")]
    at: Option<String>,
    /// Also say whether the node is valid at this time (ms since the epoch or RFC 3339).
    #[arg(long, value_name = "T", value_parser = crate::output::parse_time)]
    valid_at: Option<i64>,
    /// List the node's edges (out and in), not just count them.
    #[arg(long)]
    edges: bool,
    /// Print the whole node as JSON, with the commit read.
    #[arg(long)]
    json: bool,
}

/// `show --json`: the node in the import format's field names (as `cairn export` writes
/// it: defaults left out) plus the commit it was read at. (Serialized
/// directly, not through `serde_json::Value`, which would widen f32 embeddings to f64
/// and print `0.1961` as `0.19609999656677246`.)
#[derive(Serialize)]
struct Shown<'a> {
    commit: CommitId,
    #[serde(flatten)]
    node: NodeLine<'a>,
    /// With `--valid-at`: the time asked about and whether the node is valid then.
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_at: Option<ValidAtCheck>,
    /// With `--edges`: the node's edges.
    #[serde(skip_serializing_if = "Option::is_none")]
    edges: Option<Edges<'a>>,
}

#[derive(Serialize)]
struct Edges<'a> {
    out: Vec<EdgeLine<'a>>,
    #[serde(rename = "in")]
    incoming: Vec<EdgeLine<'a>>,
}

#[derive(Serialize)]
struct ValidAtCheck {
    time_ms: i64,
    valid: bool,
}

/// Prints the node, or fails with [`cairn::Error::NodeNotFound`].
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let at = repo.resolve(args.at.as_deref().unwrap_or("HEAD"))?;
    let node = repo.node_at(&at, &args.id)?.ok_or_else(|| cairn::Error::NodeNotFound {
        id: args.id.clone(),
        at: Some(at),
    })?;
    let valid_at = match args.valid_at {
        Some(t) => Some(ValidAtCheck {
            time_ms: t,
            valid: repo.view_at(&at)?.valid_at(t).node(&node.id)?.is_some(),
        }),
        None => None,
    };

    let out_edges = repo.edges_from(&at, &node.id)?;
    let in_edges = repo.edges_to(&at, &node.id)?;
    if args.json {
        return write_json(
            ctx.out,
            &Shown {
                commit: at,
                node: NodeLine::of(&node),
                valid_at,
                edges: args.edges.then(|| Edges {
                    out: out_edges.iter().map(EdgeLine::of).collect(),
                    incoming: in_edges.iter().map(EdgeLine::of).collect(),
                }),
            },
        );
    }

    let out = &mut *ctx.out;
    write_field(out, "node", [node.id.as_str()])?;
    write_field(out, "commit", [at.short()])?;
    write_field(
        out,
        "labels",
        [or_none(node.labels.iter().cloned().collect::<Vec<_>>().join(", "))],
    )?;
    write_field(out, "validity", [format_validity(&node.validity)])?;
    if let Some(check) = &valid_at {
        let verdict = if check.valid { "valid" } else { "not valid" };
        write_field(
            out,
            "valid at",
            [format!("{} ({verdict})", format_time_ms(check.time_ms))],
        )?;
    }
    write_field(out, "props", or_none_lines(props_lines(&node)?))?;
    write_field(out, "text", [if node.text.is_empty() { "(empty)" } else { &node.text }])?;
    let dense = node.embeddings.iter().map(|(m, v)| format!("{m}: dim {}", v.len()));
    write_field(out, "embedding", or_none_lines(dense.collect()))?;
    let sparse = node.sparse.iter().map(|(m, s)| format!("{m}: nnz {}", s.indices.len()));
    write_field(out, "sparse", or_none_lines(sparse.collect()))?;
    write_field(
        out,
        "edges",
        [format!("{} out, {} in", out_edges.len(), in_edges.len())],
    )?;
    if args.edges {
        let line = |e: &cairn::Edge, other: &NodeId, arrow: &str| {
            let weight = if e.weight == 1.0 {
                String::new()
            } else {
                format!("  weight {}", e.weight)
            };
            format!("{arrow} [{}] {other}{weight}  {}", e.kind, format_validity(&e.validity))
        };
        let lines: Vec<String> = out_edges
            .iter()
            .map(|e| line(e, &e.target, "->"))
            .chain(in_edges.iter().map(|e| line(e, &e.source, "<-")))
            .collect();
        write_field(out, "", lines)?;
    }
    Ok(())
}

/// `key = <JSON value>` per property.
fn props_lines(node: &Node) -> Result<Vec<String>, CliError> {
    node.props
        .iter()
        .map(|(k, v)| Ok(format!("{k} = {}", serde_json::to_string(v)?)))
        .collect()
}

fn or_none(s: String) -> String {
    if s.is_empty() {
        "(none)".into()
    } else {
        s
    }
}

fn or_none_lines(lines: Vec<String>) -> Vec<String> {
    if lines.is_empty() {
        vec!["(none)".into()]
    } else {
        lines
    }
}
