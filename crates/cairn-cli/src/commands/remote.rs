//! `cairn remote [list|add|remove]`: the repositories this one fetches from and pushes to.

use clap::Subcommand;

use crate::error::CliError;
use crate::Ctx;

/// Arguments of `cairn remote`; without an action it lists.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List remotes with their URLs.
    List,
    /// Add a remote: a name and a repository path on this machine, a `cairn serve` URL, or
    /// an object-store URL.
    Add {
        /// The remote's name (e.g. `origin`).
        name: String,
        /// Where it is: a repository path (or `file://PATH`), a server's
        /// `http://HOST:PORT` (`http://HOST:PORT/t/TENANT` for a tenant; the bearer token
        /// is $CAIRN_TOKEN), or an object-store URL (`s3://bucket/prefix`, `gs://…`, `az://…`).
        url: String,
    },
    /// Remove a remote and its remote-tracking branches.
    Remove {
        /// The remote.
        name: String,
    },
}

/// Runs the remote action.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    match args.action.unwrap_or(Action::List) {
        Action::List => {
            let remotes = repo.remotes()?;
            let width = remotes.iter().map(|r| r.name.len()).max().unwrap_or(0);
            for r in remotes {
                writeln!(ctx.out, "{:<width$}  {}", r.name, r.url)?;
            }
        }
        Action::Add { name, url } => {
            let r = repo.remote_add(&name, &url)?;
            writeln!(ctx.out, "added remote {} at {}", r.name, r.url)?;
        }
        Action::Remove { name } => {
            repo.remote_remove(&name)?;
            writeln!(ctx.out, "removed remote {name}")?;
        }
    }
    Ok(())
}
