//! `cairn stats`: counts of one revision.

use crate::error::CliError;
use crate::output::{write_field, write_json};
use crate::Ctx;

/// Arguments of `cairn stats`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The revision [default: HEAD].
    #[arg(long, value_name = "REV")]
    at: Option<String>,
    /// Print the counts as JSON.
    #[arg(long)]
    json: bool,
}

/// Prints [`cairn::Stats`] of the revision.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let at = repo.resolve(args.at.as_deref().unwrap_or("HEAD"))?;
    let stats = repo.stats(&at)?;
    if args.json {
        return write_json(ctx.out, &stats);
    }
    let root = |h: Option<cairn::Hash>| h.map_or_else(|| "(empty)".to_string(), |h| h.to_hex());
    let out = &mut *ctx.out;
    write_field(out, "commit", [stats.commit.to_hex()])?;
    write_field(out, "nodes", [stats.nodes.to_string()])?;
    write_field(out, "edges", [stats.edges.to_string()])?;
    write_field(out, "generation", [stats.generation.to_string()])?;
    write_field(out, "node root", [root(stats.node_root)])?;
    write_field(out, "edge root", [root(stats.edge_root)])?;
    Ok(())
}
