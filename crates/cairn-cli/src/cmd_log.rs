//! `cairn log`: commits reachable from a revision, newest first.

use cairn::CommitId;
use serde::Serialize;

use crate::error::CliError;
use crate::output::{format_time_s, write_json};
use crate::Ctx;

/// Arguments of `cairn log`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Start from this revision [default: HEAD].
    #[arg(value_name = "REV")]
    rev: Option<String>,
    /// Show at most N commits.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
    /// Print a JSON array of commits.
    #[arg(long)]
    json: bool,
}

/// One commit in `log --json`.
#[derive(Serialize)]
struct Entry<'a> {
    commit: CommitId,
    parents: &'a [CommitId],
    timestamp_ms: i64,
    author: &'a str,
    message: &'a str,
    node_count: u64,
    edge_count: u64,
}

/// Prints the log: one line per commit (`short-id  time  author  first line of message`),
/// or a JSON array.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let commits = repo.log(args.rev.as_deref(), args.max_count)?;
    if args.json {
        let entries: Vec<Entry<'_>> = commits
            .iter()
            .map(|(id, c)| Entry {
                commit: *id,
                parents: &c.parents,
                timestamp_ms: c.timestamp_ms,
                author: &c.author,
                message: &c.message,
                node_count: c.node_count,
                edge_count: c.edge_count,
            })
            .collect();
        return write_json(ctx.out, &entries);
    }
    for (id, c) in &commits {
        let subject = c.message.lines().next().unwrap_or("");
        writeln!(
            ctx.out,
            "{}  {}  {}  {subject}",
            id.short(),
            format_time_s(c.timestamp_ms),
            c.author
        )?;
    }
    Ok(())
}
