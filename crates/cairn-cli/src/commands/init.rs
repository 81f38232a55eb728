//! `cairn init`: create a repository.

use crate::error::CliError;
use crate::Ctx;

/// Arguments of `cairn init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The on-disk store: `segment` (the default: checksummed segment files, damage
    /// confined to the record hit) or `sled` (the earlier default). sled keeps the
    /// derived index data in the same database as the data: one damaged byte in its files,
    /// even in derived data, can make the whole repository unopenable, also after
    /// `cairn fsck --repair` (README, "Storage and faults"). Prefer `segment`.
    #[arg(long, value_enum, default_value_t = StoreArg::Segment)]
    store: StoreArg,
    /// Where to create it, instead of `--repo`: a directory, or an object-store URL
    /// (`s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix`; credentials
    /// from the provider's environment variables, README "Repositories in object storage").
    path: Option<std::path::PathBuf>,
}

/// The stores `--store` names.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum StoreArg {
    /// Cairn's segment store.
    Segment,
    /// A sled database (one damaged byte can make it unopenable).
    Sled,
}

/// Creates an empty repository at `PATH` (default `--repo`); fails if one is already there.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let kind = match args.store {
        StoreArg::Segment => cairn::StoreKind::Segment,
        StoreArg::Sled => cairn::StoreKind::Sled,
    };
    let path = args.path.unwrap_or_else(|| ctx.repo_path.clone());
    let repo = cairn::Repo::init_with(&path, kind)?;
    let branch = repo.current_branch()?;
    writeln!(
        ctx.out,
        "initialized empty cairn repository in {} (branch {branch})",
        path.display()
    )?;
    Ok(())
}
