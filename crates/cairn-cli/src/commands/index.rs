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
    /// Build the index chunks of a revision (text, labels, properties, dense, sparse,
    /// edges) and store the missing ones; chunks shared with indexed commits are reused.
    Build {
        /// The revision [default: HEAD].
        #[arg(value_name = "REV")]
        rev: Option<String>,
        /// Also build the HNSW unit graphs of every dense model (for `retrieve --ann`).
        #[arg(long)]
        graphs: bool,
        /// Print the report as JSON (without the time taken).
        #[arg(long)]
        json: bool,
    },
    /// Delete every stored index value (chunks, unit graphs, manifests, time indexes):
    /// they are a cache of the objects, built again by the next query or `index build`.
    /// Objects, branches and history are untouched; `cairn gc` then gives the space back.
    Drop {
        /// Print `{"deleted": N}`.
        #[arg(long)]
        json: bool,
    },
}

/// Runs the index action.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    match args.action {
        Action::Build { rev, graphs, json } => {
            let started = Instant::now();
            let progress = crate::output::progress(&repo, "building indexes");
            let report = repo.build_indexes_with(rev.as_deref().unwrap_or("HEAD"), graphs);
            drop(progress);
            let report = report?;
            let elapsed = started.elapsed();
            if json {
                return write_json(ctx.out, &report);
            }
            let dense: Vec<String> = report
                .dense
                .iter()
                .map(|d| match d.unit_graphs {
                    0 => format!("{} ({}-d, {} vectors)", d.model, d.dim, d.vectors),
                    g => format!("{} ({}-d, {} vectors, {g} unit graphs)", d.model, d.dim, d.vectors),
                })
                .collect();
            let dense = if dense.is_empty() {
                "none".to_string()
            } else {
                dense.join(", ")
            };
            writeln!(
                ctx.out,
                "indexed commit {}: {} nodes in {} chunks, {} edges, dense {dense}; stored {} values ({:.1} MiB) ({:.2} s)",
                report.commit.short(),
                report.nodes,
                report.chunks,
                report.edges,
                report.stored_values,
                report.stored_bytes as f64 / f64::from(1 << 20),
                elapsed.as_secs_f64()
            )?;
            for r in &report.repaired {
                writeln!(ctx.out, "repaired: {r}")?;
            }
        }
        Action::Drop { json } => {
            let deleted = repo.drop_derived()?;
            if json {
                return write_json(ctx.out, &serde_json::json!({ "deleted": deleted }));
            }
            writeln!(ctx.out, "dropped {deleted} stored index values")?;
        }
    }
    Ok(())
}
