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
    /// Delete damaged derived entries (index chunks, unit graphs, manifests), which are
    /// rebuilt from the data on next use; write a missing or damaged `HEAD` or format
    /// marker again; set a branch whose ref is missing or damaged to the commit the reflog
    /// last moved it to; write a missing, damaged or malformed dense-dimension record again
    /// from the stored vectors, and remove one no stored node needs. Never touches the
    /// data itself.
    #[arg(long)]
    repair: bool,
}

/// Prints the report; problems with the data make the command fail (exit code 1).
/// Damaged derived entries are reported apart and do not: they are a cache, rebuilt from
/// the data on use (or deleted now with `--repair`).
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let progress = crate::output::progress(&repo, "checking every object and reference");
    let report = repo.fsck();
    drop(progress);
    let mut report = report?;
    let mut repaired = Vec::new();
    if args.repair {
        let mut written = repo.repair_refs()?;
        written.extend(repo.repair_branches()?);
        written.extend(repo.repair_dims()?);
        if !written.is_empty() {
            repaired.extend(written);
            report = repo.fsck()?;
        }
        if !report.derived_ok() {
            repaired.extend(repo.repair_derived()?.into_iter().map(|p| format!("deleted {p}")));
            report.derived_problems.clear();
        }
    }
    if args.json {
        write_json(ctx.out, &report)?;
    } else {
        for p in &report.problems {
            writeln!(ctx.out, "problem: {p}")?;
        }
        for p in &report.derived_problems {
            writeln!(
                ctx.out,
                "derived: {p} (rebuilt on use; `cairn fsck --repair` deletes it now)"
            )?;
        }
        for p in &report.reflog_problems {
            writeln!(ctx.out, "reflog: {p} (the branches are unharmed)")?;
        }
        for c in &report.dangling_commits {
            writeln!(
                ctx.out,
                "dangling: commit {c} is reachable from no branch or tag (`cairn branch create <name> --at {c}` keeps it; `cairn gc` collects it)"
            )?;
        }
        for p in &repaired {
            writeln!(ctx.out, "repaired: {p}")?;
        }
        let verdict = if report.is_ok() { "ok" } else { "damaged" };
        let derived = if report.derived_ok() {
            String::new()
        } else {
            format!(", {} damaged (derived data only)", report.derived_problems.len())
        };
        writeln!(
            ctx.out,
            "checked {} objects, {} commits, {} derived entries: {verdict}{derived}",
            report.objects_checked, report.commits_checked, report.derived_checked
        )?;
    }
    if report.is_ok() {
        Ok(())
    } else {
        Err(CliError::FsckProblems(report.problems.len()))
    }
}
