//! `cairn history NODE_ID`: the commits that added, changed or removed one node.

use cairn::{HistoryLine, NodeId};

use crate::error::CliError;
use crate::output::{format_time_s, write_json};
use crate::Ctx;

/// Arguments of `cairn history`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node's id.
    #[arg(value_name = "NODE_ID", value_parser = |s: &str| NodeId::new(s))]
    id: NodeId,
    /// Walk this branch (or any revision) [default: the current branch].
    #[arg(long, value_name = "B")]
    branch: Option<String>,
    /// Show at most N entries.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
    /// Print a JSON array of entries.
    #[arg(long)]
    json: bool,
}

/// Prints the node's history, newest first: one line per commit
/// (`short-id  time  added|changed|removed  first line of message`), or a JSON array of
/// [`HistoryLine`]s. A node no commit touched is not an error: `--json` prints `[]`, the
/// human output says `no commit touched "ID" among the ancestors of REV`.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let lines = HistoryLine::list(&repo, args.branch.as_deref(), &args.id, args.max_count)?;
    if args.json {
        return write_json(ctx.out, &lines);
    }
    if lines.is_empty() && args.max_count != Some(0) {
        let rev = args.branch.as_deref().unwrap_or("HEAD");
        writeln!(
            ctx.out,
            "no commit touched {:?} among the ancestors of {rev}",
            args.id.as_str()
        )?;
    }
    for e in &lines {
        let change = serde_json::to_value(e.entry.change)?;
        let subject = e.message.lines().next().unwrap_or("");
        writeln!(
            ctx.out,
            "{}  {}  {:<7}  {subject}",
            e.entry.commit.short(),
            format_time_s(e.entry.timestamp_ms),
            change.as_str().unwrap_or("?"),
        )?;
    }
    Ok(())
}
