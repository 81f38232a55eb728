//! `cairn init`: create a repository.

use crate::error::CliError;
use crate::Ctx;

/// Creates an empty repository at `--repo`; fails if one is already there.
pub fn run(ctx: &mut Ctx<'_>) -> Result<(), CliError> {
    let repo = cairn::Repo::init(&ctx.repo_path)?;
    let branch = repo.current_branch()?;
    writeln!(
        ctx.out,
        "initialized empty cairn repository in {} (branch {branch})",
        ctx.repo_path.display()
    )?;
    Ok(())
}
