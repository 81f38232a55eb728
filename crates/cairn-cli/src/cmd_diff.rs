//! `cairn diff A B`: nodes and edges that differ between two revisions.

use cairn::ChangeKind;

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Arguments of `cairn diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The old revision.
    #[arg(value_name = "FROM")]
    from: String,
    /// The new revision.
    #[arg(value_name = "TO")]
    to: String,
    /// Print the diff as JSON.
    #[arg(long)]
    json: bool,
}

/// Prints `+`/`-`/`~` lines, nodes first then edges, each in key order.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let from = repo.resolve(&args.from)?;
    let to = repo.resolve(&args.to)?;
    let diff = repo.diff(&from, &to)?;
    if args.json {
        return write_json(ctx.out, &diff);
    }
    for n in &diff.nodes {
        writeln!(ctx.out, "{} node {}", sign(n.kind), n.id)?;
    }
    for e in &diff.edges {
        writeln!(ctx.out, "{} edge {}", sign(e.kind), e.key)?;
    }
    Ok(())
}

fn sign(kind: ChangeKind) -> char {
    match kind {
        ChangeKind::Added => '+',
        ChangeKind::Removed => '-',
        ChangeKind::Changed => '~',
    }
}
