//! `cairn gc`: delete what no branch or tag reaches.

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Arguments of `cairn gc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep commits no branch or tag reaches if their timestamp is within this many days
    /// (they stay recoverable: `fsck` names them as dangling) [default: 14].
    #[arg(long, value_name = "DAYS", conflicts_with = "now")]
    grace_days: Option<f64>,
    /// Collect everything no branch or tag reaches, however recent (no grace).
    #[arg(long)]
    now: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs gc and prints what it removed and the bytes it gave back to the file system.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let options = match (args.now, args.grace_days) {
        (true, _) => cairn::GcOptions::now(),
        (false, Some(days)) if days.is_finite() && days >= 0.0 => cairn::GcOptions {
            grace: std::time::Duration::from_secs_f64(days * 86_400.0),
        },
        (false, Some(days)) => {
            return Err(CliError::Refused(format!(
                "--grace-days {days}: expected a number of days >= 0"
            )))
        }
        (false, None) => cairn::GcOptions::default(),
    };
    let progress = crate::output::progress(&repo, "collecting garbage");
    let report = repo.gc_with(&options);
    drop(progress);
    let report = report?;
    if args.json {
        return write_json(ctx.out, &report);
    }
    write!(
        ctx.out,
        "removed {} of {} objects ({} commits, {} bytes), {} derived entries and {} reflog entries; {} live commits",
        report.objects_removed,
        report.objects_before,
        report.commits_removed,
        report.bytes_freed,
        report.derived_removed,
        report.reflog_removed,
        report.commits_live,
    )?;
    if report.commits_kept_recent > 0 {
        // Only a run with a grace period keeps any: `--now` keeps none.
        write!(
            ctx.out,
            ", {} of them unreachable but recent (kept for the grace period; `gc --now` collects them)",
            report.commits_kept_recent
        )?;
    }
    if report.disk_bytes_before > 0 {
        write!(
            ctx.out,
            "; returned {} bytes to the file system ({} bytes on disk now)",
            report.bytes_returned, report.disk_bytes_after
        )?;
    }
    writeln!(ctx.out)?;
    Ok(())
}
