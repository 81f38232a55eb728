//! `cairn show NODE_ID`: one node as of a revision.

use cairn::{Node, NodeEdges, NodeId, ShownNode};

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

/// Prints the node, or fails with [`cairn::Error::NodeNotFound`]. `--json` prints
/// [`ShownNode`] (the server's `GET /nodes/{id}` answers the same bytes).
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let rev = args.at.as_deref().unwrap_or("HEAD");
    let mut shown = ShownNode::read(&repo, rev, &args.id, args.valid_at, args.edges)?;
    if args.json {
        return write_json(ctx.out, &shown);
    }
    // The text form counts the edges even without --edges.
    let edges = match shown.edges.take() {
        Some(edges) => edges,
        None => NodeEdges::read(&repo, &shown.commit, &shown.node.id)?,
    };
    write_human(ctx.out, shown, edges, args.edges)
}

/// The text form of a shown node with its edges (listed with `list_edges`, counted
/// always): the local command's, and `cairn --remote`'s from the server's answer.
pub(crate) fn write_human(
    out: &mut dyn std::io::Write,
    shown: ShownNode,
    edges: NodeEdges,
    list_edges: bool,
) -> Result<(), CliError> {
    let ShownNode {
        commit: at,
        node,
        valid_at,
        ..
    } = shown;
    let NodeEdges {
        out: out_edges,
        incoming: in_edges,
        ..
    } = edges;

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
    if list_edges {
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
