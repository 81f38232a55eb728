//! `cairn gc`: delete what no branch or tag reaches.

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Arguments of `cairn gc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs gc and prints what it removed.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let report = repo.gc()?;
    if args.json {
        return write_json(ctx.out, &report);
    }
    writeln!(
        ctx.out,
        "removed {} of {} objects ({} commits, {} bytes) and {} derived entries; {} live commits",
        report.objects_removed,
        report.objects_before,
        report.commits_removed,
        report.bytes_freed,
        report.derived_removed,
        report.commits_live
    )?;
    Ok(())
}
