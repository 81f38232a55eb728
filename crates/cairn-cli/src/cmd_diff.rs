//! `cairn diff [FROM] TO`: nodes and edges that differ between two revisions, and for a
//! changed one the fields that changed.

use cairn::diff::{edge_field_changes, node_field_changes, FieldChange};
use cairn::ChangeKind;

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Arguments of `cairn diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The old revision; alone, the new one, compared with its first parent.
    #[arg(value_name = "FROM")]
    from: String,
    /// The new revision.
    #[arg(value_name = "TO")]
    to: Option<String>,
    /// Print the diff as JSON (each change with its `fields`).
    #[arg(long)]
    json: bool,
}

/// Prints `+`/`-`/`~` lines, nodes first then edges, each in key order; under a `~`
/// line, one line per changed field (`field: before -> after`).
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let (from, to) = match &args.to {
        Some(to) => (repo.resolve(&args.from)?, repo.resolve(to)?),
        None => {
            let to = repo.resolve(&args.from)?;
            let parent = repo.commit(&to)?.parents.first().copied();
            match parent {
                Some(p) => (p, to),
                None => {
                    return Err(CliError::Refused(format!(
                        "{} is a root commit: it has no parent to compare with (give two revisions)",
                        to.short()
                    )))
                }
            }
        }
    };
    let diff = repo.diff(&from, &to)?;
    let mut node_fields = Vec::with_capacity(diff.nodes.len());
    for n in &diff.nodes {
        node_fields.push(match n.kind {
            ChangeKind::Changed => match (repo.node_at(&from, &n.id)?, repo.node_at(&to, &n.id)?) {
                (Some(b), Some(a)) => node_field_changes(&b, &a),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        });
    }
    let mut edge_fields = Vec::with_capacity(diff.edges.len());
    for e in &diff.edges {
        edge_fields.push(match e.kind {
            ChangeKind::Changed => match (repo.edge_at(&from, &e.key)?, repo.edge_at(&to, &e.key)?) {
                (Some(b), Some(a)) => edge_field_changes(&b, &a),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        });
    }
    if args.json {
        let with = |v: serde_json::Value, fields: &[FieldChange]| -> Result<serde_json::Value, CliError> {
            let mut v = v;
            v["fields"] = serde_json::to_value(fields)?;
            Ok(v)
        };
        let nodes = diff
            .nodes
            .iter()
            .zip(&node_fields)
            .map(|(n, f)| with(serde_json::to_value(n)?, f))
            .collect::<Result<Vec<_>, _>>()?;
        let edges = diff
            .edges
            .iter()
            .zip(&edge_fields)
            .map(|(e, f)| with(serde_json::to_value(e)?, f))
            .collect::<Result<Vec<_>, _>>()?;
        return write_json(
            ctx.out,
            &serde_json::json!({"from": diff.from, "to": diff.to, "nodes": nodes, "edges": edges}),
        );
    }
    if diff.is_empty() {
        writeln!(ctx.out, "no changes between {} and {}", from.short(), to.short())?;
        return Ok(());
    }
    for (n, fields) in diff.nodes.iter().zip(&node_fields) {
        writeln!(ctx.out, "{} node {}", sign(n.kind), n.id)?;
        write_fields(ctx, fields)?;
    }
    for (e, fields) in diff.edges.iter().zip(&edge_fields) {
        writeln!(ctx.out, "{} edge {}", sign(e.kind), e.key)?;
        write_fields(ctx, fields)?;
    }
    Ok(())
}

fn write_fields(ctx: &mut Ctx<'_>, fields: &[FieldChange]) -> Result<(), CliError> {
    for f in fields {
        writeln!(ctx.out, "    {}: {} -> {}", f.field, f.before, f.after)?;
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
