//! `cairn history NODE_ID`: the commits that added, changed or removed one node.

use cairn::{NodeHistoryEntry, NodeId};
use serde::Serialize;

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

/// One entry of `history --json`: the library's entry plus the commit's message.
#[derive(Serialize)]
struct Entry<'a> {
    #[serde(flatten)]
    entry: &'a NodeHistoryEntry,
    message: String,
}

/// Prints the node's history, newest first: one line per commit
/// (`short-id  time  added|changed|removed  first line of message`), or a JSON array.
/// A node no commit touched gives an empty list, not an error.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let entries = match &args.branch {
        Some(rev) => repo.history_of(rev, &args.id, args.max_count)?,
        // The current branch; before its first commit there is no history to walk.
        None => match repo.head()? {
            Some(head) => repo.history_of(&head.to_hex(), &args.id, args.max_count)?,
            None => Vec::new(),
        },
    };
    let with_messages = entries
        .iter()
        .map(|e| {
            Ok(Entry {
                entry: e,
                message: repo.commit(&e.commit)?.message,
            })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    if args.json {
        return write_json(ctx.out, &with_messages);
    }
    for e in &with_messages {
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
