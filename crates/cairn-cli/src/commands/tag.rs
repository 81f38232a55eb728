//! `cairn tag [list|create|delete]`: names fixed on one commit each.

use clap::Subcommand;

use crate::error::CliError;
use crate::Ctx;

/// Arguments of `cairn tag`; without an action it lists.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List tags with their commits.
    List,
    /// Tag a commit (tags never move).
    Create {
        /// The tag's name.
        name: String,
        /// The commit [default: HEAD].
        #[arg(long, value_name = "REV")]
        at: Option<String>,
    },
    /// Delete a tag; its commits stay until gc if nothing else reaches them.
    Delete {
        /// The tag.
        name: String,
    },
}

/// Runs the tag action.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    match args.action.unwrap_or(Action::List) {
        Action::List => {
            let tags = repo.tags()?;
            let width = tags.iter().map(|(t, _)| t.len()).max().unwrap_or(0);
            for (t, c) in tags {
                writeln!(ctx.out, "{t:<width$}  {}", c.short())?;
            }
        }
        Action::Create { name, at } => {
            let c = repo.create_tag(&name, at.as_deref())?;
            writeln!(ctx.out, "tagged {} as {name}", c.short())?;
        }
        Action::Delete { name } => {
            repo.delete_tag(&name)?;
            writeln!(ctx.out, "deleted tag {name}")?;
        }
    }
    Ok(())
}
