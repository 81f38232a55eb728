//! `cairn index build [REV]`: build (or load) and persist a commit's indexes ahead of
//! queries, so that the first retrieval does not pay for the build.

use std::time::Instant;

use clap::Subcommand;

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Arguments of `cairn index`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Build the indexes of a revision (text, labels, properties, dense, sparse, edges)
    /// and persist them; a commit whose indexes exist is only loaded.
    Build {
        /// The revision [default: HEAD].
        #[arg(value_name = "REV")]
        rev: Option<String>,
        /// Print the report as JSON (without the time taken).
        #[arg(long)]
        json: bool,
    },
}

/// Runs the index action.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    match args.action {
        Action::Build { rev, json } => {
            let started = Instant::now();
            let report = repo.build_indexes(rev.as_deref().unwrap_or("HEAD"))?;
            let elapsed = started.elapsed();
            if json {
                return write_json(ctx.out, &report);
            }
            let dense: Vec<String> = report
                .dense
                .iter()
                .map(|(model, hnsw)| format!("{model} ({})", if *hnsw { "hnsw" } else { "exact" }))
                .collect();
            let dense = if dense.is_empty() {
                "none".to_string()
            } else {
                dense.join(", ")
            };
            writeln!(
                ctx.out,
                "indexed commit {}: {} nodes, dense {dense}; key {} ({:.2} s)",
                report.commit.short(),
                report.nodes,
                report.key.short(),
                elapsed.as_secs_f64()
            )?;
        }
    }
    Ok(())
}
