//! `cairn diff [FROM] TO`: nodes and edges that differ between two revisions, and for a
//! changed one the fields that changed.

use std::io::Write;

use cairn::FieldChange;
use cairn::{ChangeKind, DiffReport};

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Arguments of `cairn diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The old revision; alone, the new one, compared with its first parent.
    #[arg(value_name = "FROM")]
    from: String,
    /// The new revision.
    #[arg(value_name = "TO")]
    to: Option<String>,
    /// Print the diff as JSON (each change with its `fields`).
    #[arg(long)]
    json: bool,
}

/// Prints `+`/`-`/`~` lines, nodes first then edges, each in key order; under a `~`
/// line, one line per changed field (`field: before -> after`). `--json` prints the
/// [`DiffReport`] (what the server's `GET /diff` answers).
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let report = DiffReport::for_revisions(&repo, &args.from, args.to.as_deref())?;
    if args.json {
        return write_json(ctx.out, &report);
    }
    write_human(ctx.out, &report)
}

/// The text form of a diff: the local command's, and `cairn --remote`'s from the
/// server's answer.
pub(crate) fn write_human(out: &mut dyn Write, report: &DiffReport) -> Result<(), CliError> {
    let (from, to) = (report.from, report.to);
    if report.is_empty() {
        writeln!(out, "no changes between {} and {}", from.short(), to.short())?;
        return Ok(());
    }
    for n in &report.nodes {
        writeln!(out, "{} node {}", sign(n.change.kind), n.change.id)?;
        write_fields(out, &n.fields)?;
    }
    for e in &report.edges {
        writeln!(out, "{} edge {}", sign(e.change.kind), e.change.key)?;
        write_fields(out, &e.fields)?;
    }
    Ok(())
}

fn write_fields(out: &mut dyn Write, fields: &[FieldChange]) -> Result<(), CliError> {
    for f in fields {
        writeln!(out, "    {}: {} -> {}", f.field, f.before, f.after)?;
    }
    Ok(())
}

fn sign(kind: ChangeKind) -> char {
    match kind {
        ChangeKind::Added => '+',
        ChangeKind::Removed => '-',
        ChangeKind::Changed => '~',
    }
}
