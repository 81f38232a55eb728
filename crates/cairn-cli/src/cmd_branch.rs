//! `cairn branch [list|create|delete|switch]`.

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
    List,
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
    match args.action.unwrap_or(Action::List) {
        Action::List => {
            let current = repo.current_branch()?.to_string();
            let mut rows: Vec<(String, Option<String>)> = repo
                .branches()?
                .into_iter()
                .map(|(b, c)| (b, Some(c.short())))
                .collect();
            // The current branch has no ref until its first commit; list it anyway.
            if !rows.iter().any(|(b, _)| *b == current) {
                rows.push((current.clone(), None));
                rows.sort();
            }
            let width = rows.iter().map(|(b, _)| b.len()).max().unwrap_or(0);
            for (b, head) in rows {
                let mark = if b == current { '*' } else { ' ' };
                let head = head.unwrap_or_else(|| "(no commits)".into());
                writeln!(ctx.out, "{mark} {b:<width$}  {head}")?;
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
