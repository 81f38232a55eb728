//! `cairn log`: commits reachable from a revision, newest first.

use cairn::LogEntry;

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

/// Prints the log: one line per commit (`short-id  time  author  first line of message`),
/// written as the walk reaches it (a long history starts printing at once), or a JSON
/// array.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let commits = repo
        .iter_log(args.rev.as_deref())?
        .take(args.max_count.unwrap_or(usize::MAX));
    if args.json {
        let entries: Vec<LogEntry> = commits
            .map(|c| c.map(|(id, c)| LogEntry::new(id, &c)))
            .collect::<cairn::Result<_>>()?;
        return write_json(ctx.out, &entries);
    }
    let mut shown = 0usize;
    for commit in commits {
        let (id, c) = commit?;
        let subject = c.message.lines().next().unwrap_or("");
        writeln!(
            ctx.out,
            "{}  {}  {}  {subject}",
            id.short(),
            format_time_s(c.timestamp_ms),
            c.author
        )?;
        shown += 1;
    }
    if shown == 0 && args.rev.is_none() && args.max_count != Some(0) {
        // A new repository (or a branch whose ref was lost): say so on standard error, so
        // that standard output stays the (empty) list a script reads.
        eprintln!("(no commits yet on this branch: `cairn import FILE` makes the first)");
    }
    Ok(())
}
