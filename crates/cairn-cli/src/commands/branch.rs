//! `cairn branch [list|create|delete|switch]`.

use cairn::BranchList;
use clap::Subcommand;

use crate::error::CliError;
use crate::Ctx;

/// Arguments of `cairn branch`; without an action it lists.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List branches; `*` marks the current one.
    List {
        /// Also list remote-tracking branches (`origin/main`: where a remote's branch was
        /// when last fetched or pushed).
        #[arg(short, long)]
        remotes: bool,
    },
    /// Create a branch.
    Create {
        /// The new branch's name.
        name: String,
        /// Where it starts [default: HEAD].
        #[arg(long, value_name = "REV")]
        at: Option<String>,
    },
    /// Delete a branch (not the current one); its commits stay until gc.
    Delete {
        /// The branch.
        name: String,
    },
    /// Make a branch the current one.
    Switch {
        /// The branch.
        name: String,
    },
}

/// Runs the branch action.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    match args.action.unwrap_or(Action::List { remotes: false }) {
        Action::List { remotes } => {
            // The current branch is listed even before its first commit.
            let list = BranchList::read(&repo)?;
            let width = list.branches.iter().map(|b| b.name.len()).max().unwrap_or(0);
            for b in &list.branches {
                let mark = if b.name == list.current { '*' } else { ' ' };
                let head = b.head.map_or_else(|| "(no commits)".into(), |h| h.short());
                writeln!(ctx.out, "{mark} {:<width$}  {head}", b.name)?;
            }
            if remotes {
                for r in repo.remotes()? {
                    for (branch, head) in repo.remote_branches(&r.name)? {
                        writeln!(ctx.out, "  {}/{branch}  {}", r.name, head.short())?;
                    }
                }
            }
        }
        Action::Create { name, at } => {
            let head = repo.create_branch(&name, at.as_deref())?;
            writeln!(ctx.out, "created branch {name} at {}", head.short())?;
        }
        Action::Delete { name } => {
            let head = repo.branch_head(&name)?;
            repo.delete_branch(&name)?;
            match head {
                Some(h) => writeln!(ctx.out, "deleted branch {name} (was {})", h.short())?,
                None => writeln!(ctx.out, "deleted branch {name}")?,
            }
        }
        Action::Switch { name } => {
            repo.switch_branch(&name)?;
            writeln!(ctx.out, "switched to branch {name}")?;
        }
    }
    Ok(())
}
