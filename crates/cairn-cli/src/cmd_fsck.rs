//! `cairn fsck`: verify the repository.

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Arguments of `cairn fsck`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Prints the report; problems make the command fail (exit code 1).
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let report = repo.fsck()?;
    if args.json {
        write_json(ctx.out, &report)?;
    } else {
        for p in &report.problems {
            writeln!(ctx.out, "problem: {p}")?;
        }
        let verdict = if report.is_ok() { "ok" } else { "damaged" };
        writeln!(
            ctx.out,
            "checked {} objects, {} commits: {verdict}",
            report.objects_checked, report.commits_checked
        )?;
    }
    if report.is_ok() {
        Ok(())
    } else {
        Err(CliError::FsckProblems(report.problems.len()))
    }
}
