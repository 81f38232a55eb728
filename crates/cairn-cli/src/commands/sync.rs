//! `cairn clone`, `cairn fetch`, `cairn pull` and `cairn push`: moving commits between
//! repositories (only the objects the other side lacks).

use std::path::PathBuf;

use cairn::{CommitId, MergeKind, TransferStats};

use crate::error::CliError;
use crate::Ctx;

/// Arguments of `cairn clone`.
#[derive(Debug, clap::Args)]
pub struct CloneArgs {
    /// The repository to clone: a path (or `file://PATH`), a `cairn serve` URL
    /// (`http://HOST:PORT`, `http://HOST:PORT/t/TENANT`; token: $CAIRN_TOKEN), or an
    /// object-store URL (`s3://bucket/prefix`, `gs://…`, `az://…`).
    url: String,
    /// Where the clone goes (must not exist).
    dir: PathBuf,
}

/// Arguments of `cairn fetch`.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// The remote [default: origin].
    #[arg(default_value = "origin", value_name = "REMOTE")]
    name: String,
}

/// Arguments of `cairn pull`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The remote [default: origin].
    #[arg(default_value = "origin", value_name = "REMOTE")]
    name: String,
    /// The remote's branch to merge [default: the current branch's name].
    branch: Option<String>,
    /// Merge commit message [default: "merge REMOTE/BRANCH"].
    #[arg(short, long, value_name = "MSG")]
    message: Option<String>,
}

/// Arguments of `cairn push`.
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The remote [default: origin].
    #[arg(default_value = "origin", value_name = "REMOTE")]
    name: String,
    /// The branch to push [default: the current branch].
    branch: Option<String>,
    /// Replace the remote's branch even if that drops commits it holds.
    #[arg(long)]
    force: bool,
}

fn moved(t: &TransferStats) -> String {
    format!("{} objects ({} bytes, {} commits)", t.objects, t.bytes, t.commits)
}

fn short(c: Option<CommitId>) -> String {
    c.map_or_else(|| "(none)".to_string(), |c| c.short())
}

/// Clones `url` into `dir`.
pub fn run_clone(ctx: &mut Ctx<'_>, args: CloneArgs) -> Result<(), CliError> {
    let repo = cairn::Repo::clone_from(&args.url, &args.dir)?;
    let branch = repo.current_branch()?;
    writeln!(
        ctx.out,
        "cloned {} into {} (branch {branch} at {})",
        args.url,
        args.dir.display(),
        short(repo.head()?)
    )?;
    Ok(())
}

/// Fetches a remote's branches into its tracking refs.
pub fn run_fetch(ctx: &mut Ctx<'_>, args: FetchArgs) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let report = repo.fetch(&args.name)?;
    for u in &report.updates {
        writeln!(
            ctx.out,
            "{}/{}  {} -> {}",
            report.remote,
            u.branch,
            short(u.old),
            short(u.new)
        )?;
    }
    writeln!(ctx.out, "fetched {}", moved(&report.transfer))?;
    Ok(())
}

/// Fetches, then merges the remote's branch into the current one.
pub fn run_pull(ctx: &mut Ctx<'_>, args: PullArgs) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let (report, merge) = repo.pull(&args.name, args.branch.as_deref())?;
    writeln!(ctx.out, "fetched {}", moved(&report.transfer))?;
    let theirs = format!(
        "{}/{}",
        args.name,
        args.branch.clone().unwrap_or_else(|| merge.branch().to_string())
    );
    if merge.unresolved() > 0 {
        return Err(CliError::Refused(format!(
            "pull: merging {theirs} into {} has {} conflict(s); nothing was committed — run `cairn merge {theirs}` to see and settle them",
            merge.branch(),
            merge.unresolved()
        )));
    }
    let message = args.message.unwrap_or_else(|| format!("merge {theirs}"));
    let head = merge.commit(&message)?;
    let what = match merge.kind() {
        MergeKind::UpToDate => "already up to date",
        MergeKind::FastForward => "fast-forward",
        MergeKind::ThreeWay => "merged",
    };
    writeln!(ctx.out, "{what}: {} at {}", merge.branch(), head.short())?;
    Ok(())
}

/// Pushes a branch to a remote.
pub fn run_push(ctx: &mut Ctx<'_>, args: PushArgs) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let report = repo.push(&args.name, args.branch.as_deref(), args.force)?;
    writeln!(
        ctx.out,
        "{}/{}  {} -> {} (pushed {})",
        report.remote,
        report.branch,
        short(report.old),
        report.new.short(),
        moved(&report.transfer)
    )?;
    Ok(())
}
