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
    let rows: Vec<Row> = lines
        .iter()
        .map(|e| {
            let change = serde_json::to_value(e.entry.change)?;
            Ok(Row {
                commit: e.entry.commit.to_hex(),
                timestamp_ms: e.entry.timestamp_ms,
                change: change.as_str().unwrap_or("?").to_string(),
                message: e.message.clone(),
            })
        })
        .collect::<Result<_, CliError>>()?;
    write_rows(ctx.out, args.id.as_str(), args.branch.as_deref(), args.max_count, &rows)
}

/// One line of the human output (from a [`HistoryLine`], or its JSON from a server).
pub struct Row {
    /// The commit, in hex.
    pub commit: String,
    /// The commit's time.
    pub timestamp_ms: i64,
    /// `added`, `changed` or `removed`.
    pub change: String,
    /// The commit's message (its first line is printed).
    pub message: String,
}

/// The human output, local or remote: a line per commit, or a sentence when no commit
/// touched the node (unless `-n 0` asked for nothing).
pub fn write_rows(
    out: &mut dyn std::io::Write,
    id: &str,
    rev: Option<&str>,
    max_count: Option<usize>,
    rows: &[Row],
) -> Result<(), CliError> {
    if rows.is_empty() && max_count != Some(0) {
        let rev = rev.unwrap_or("HEAD");
        writeln!(out, "no commit touched {id:?} among the ancestors of {rev}")?;
    }
    for r in rows {
        let subject = r.message.lines().next().unwrap_or("");
        writeln!(
            out,
            "{}  {}  {:<7}  {subject}",
            &r.commit[..r.commit.len().min(12)],
            format_time_s(r.timestamp_ms),
            r.change,
        )?;
    }
    Ok(())
}
