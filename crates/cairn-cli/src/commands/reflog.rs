//! `cairn reflog`: the moves of a branch, newest first (commits, merges, creation,
//! deletion), so a head a branch no longer has can be found again.

use cairn::RefLogEntry;

use crate::error::CliError;
use crate::output::{format_time_s, write_json};
use crate::Ctx;

/// Arguments of `cairn reflog`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The branch whose moves to show (it may have been deleted) [default: the current
    /// branch].
    #[arg(value_name = "BRANCH")]
    branch: Option<String>,
    /// Show every branch's moves, newest first.
    #[arg(long, conflicts_with = "branch")]
    all: bool,
    /// Show at most N entries.
    #[arg(short = 'n', long, value_name = "N")]
    limit: Option<usize>,
    /// Print a JSON array of entries.
    #[arg(long)]
    json: bool,
}

/// Prints the entries, one line each, like git's reflog:
/// `<short id>  <branch>@{#N}: <action>: <message>` (the id is the head after the move,
/// or before it for a deletion; `<branch>@{#N}` is the revision that names it — git writes
/// `@{N}`, which Cairn reads as a time), or a JSON array.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let mut entries = if args.all {
        repo.reflog_all()?
    } else {
        let branch = match args.branch {
            Some(b) => b,
            None => repo.current_branch()?.to_string(),
        };
        repo.reflog(&branch)?
    };
    if let Some(n) = args.limit {
        entries.truncate(n);
    }
    if args.json {
        return write_json(ctx.out, &entries);
    }
    // Per branch, N counts that branch's entries from the newest (0).
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for e in &entries {
        let n = seen.entry(e.branch.as_str()).or_insert(0);
        writeln!(ctx.out, "{}", line(e, *n))?;
        *n += 1;
    }
    Ok(())
}

/// One entry as a line.
fn line(e: &RefLogEntry, n: usize) -> String {
    let id = e.new.or(e.old).map_or_else(|| "-".repeat(12), |c| c.short());
    let message = if e.message.is_empty() {
        String::new()
    } else {
        format!(": {}", e.message)
    };
    format!(
        "{id}  {}@{{#{n}}}: {}{message}  ({}{})",
        e.branch,
        e.action.as_str(),
        format_time_s(e.time_ms),
        if e.author.is_empty() {
            String::new()
        } else {
            format!(", {}", e.author)
        }
    )
}
