//! `cairn merge THEIRS`: three-way merge of a revision into a branch.

use cairn::{
    edge_field_changes, node_field_changes, Conflict, Edge, EdgeKey, FieldChange, MergeKind, MergeStrategy, Node,
    NodeId, Resolution,
};
use clap::ValueEnum;

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Characters of a node's text shown in a conflict summary.
const SUMMARY_TEXT_CHARS: usize = 60;

/// Arguments of `cairn merge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to merge: a branch, commit or any revision.
    #[arg(value_name = "THEIRS")]
    theirs: String,
    /// The branch to merge into [default: the current branch].
    #[arg(long, value_name = "OURS")]
    into: Option<String>,
    /// How conflicts are settled: `manual` lists them and commits nothing (exit code 1);
    /// `ours` / `theirs` take that side's version of every conflicting node and edge.
    #[arg(long, value_name = "S", default_value = "manual")]
    strategy: StrategyArg,
    /// Settle one conflict: `ID=ours`, `ID=theirs` or `ID=base` for a node, and
    /// `(SRC)-[KIND]->(DST)=SIDE` for an edge, as conflicts print it (repeatable; applied
    /// after `--strategy`, so `--strategy theirs --resolve x=ours` takes theirs except for
    /// `x`; a node or edge without a conflict is refused). Only the conflicts left unsettled
    /// are printed.
    #[arg(long, value_name = "ID=SIDE", value_parser = parse_resolve)]
    resolve: Vec<(Target, StrategySide)>,
    /// Merge commit message [default: "merge THEIRS into OURS"].
    #[arg(short, long, value_name = "MSG")]
    message: Option<String>,
    /// Print the outcome as JSON (conflicts in full).
    #[arg(long)]
    json: bool,
}

/// A side in `--resolve`.
#[derive(Debug, Clone, Copy)]
enum StrategySide {
    Ours,
    Theirs,
    Base,
}

/// What a `--resolve` names: a node, or an edge in the `(SRC)-[KIND]->(DST)` form.
#[derive(Debug, Clone)]
enum Target {
    Node(NodeId),
    Edge(EdgeKey),
}

fn parse_resolve(s: &str) -> Result<(Target, StrategySide), String> {
    let (id, side) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("expected ID=ours|theirs|base, got {s:?}"))?;
    let side = match side {
        "ours" => StrategySide::Ours,
        "theirs" => StrategySide::Theirs,
        "base" => StrategySide::Base,
        other => return Err(format!("`{other}`: the side is ours, theirs or base")),
    };
    if let Some(key) = parse_edge_key(id) {
        return Ok((Target::Edge(key?), side));
    }
    Ok((Target::Node(NodeId::new(id).map_err(|e| e.to_string())?), side))
}

/// `(SRC)-[KIND]->(DST)`, the form conflicts print; `None` if `s` does not have that shape.
fn parse_edge_key(s: &str) -> Option<Result<EdgeKey, String>> {
    let inner = s.strip_prefix('(')?.strip_suffix(')')?;
    let (source, rest) = inner.split_once(")-[")?;
    let (kind, target) = rest.rsplit_once("]->(")?;
    let parse = || -> Result<EdgeKey, String> {
        let source = NodeId::new(source).map_err(|e| e.to_string())?;
        let target = NodeId::new(target).map_err(|e| e.to_string())?;
        Ok(EdgeKey {
            source,
            kind: kind.to_string(),
            target,
        })
    };
    Some(parse())
}

/// `--strategy`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum StrategyArg {
    Manual,
    Ours,
    Theirs,
}

/// Merges; prints the new head, or the conflicts (and fails) under `manual`.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let ours = match args.into {
        Some(b) => b,
        None => repo.current_branch()?.to_string(),
    };
    let strategy = match args.strategy {
        StrategyArg::Manual => MergeStrategy::Manual,
        StrategyArg::Ours => MergeStrategy::Ours,
        StrategyArg::Theirs => MergeStrategy::Theirs,
    };
    let mut merge = repo.merge_with(&ours, &args.theirs, strategy)?;
    for (id, side) in &args.resolve {
        let resolution = match side {
            StrategySide::Ours => Resolution::Ours,
            StrategySide::Theirs => Resolution::Theirs,
            StrategySide::Base => Resolution::Base,
        };
        match id {
            Target::Node(id) => merge.resolve_node(id, resolution)?,
            Target::Edge(key) => merge.resolve_edge(key, resolution)?,
        }
    }
    let unresolved = merge.unresolved();
    let dropped = merge.dropped_edges()?;
    let commit = if unresolved == 0 {
        let message = args
            .message
            .unwrap_or_else(|| format!("merge {} into {ours}", args.theirs));
        Some(merge.commit(&message)?)
    } else {
        None
    };
    // The change counts are `cairn diff OURS MERGE`'s (resolved conflicts included).
    let summary = merge.summary(commit, dropped)?;

    if args.json {
        write_json(ctx.out, &summary)?;
    } else {
        let out = &mut *ctx.out;
        for (i, c) in merge.conflicts().iter().enumerate() {
            if unresolved > 0 {
                // Only what is left to settle; the settled ones are counted below.
                if merge.resolution(i).is_none() {
                    write_conflict(out, c)?;
                }
            } else if let Some(r) = merge.resolution(i) {
                let taken = match r {
                    Resolution::Ours => "ours",
                    Resolution::Theirs => "theirs",
                    Resolution::Base => "base",
                    Resolution::Node(_) | Resolution::Edge(_) => "a new value",
                };
                writeln!(out, "conflict on {} resolved: took {taken}", c.subject())?;
            }
        }
        let total = merge.conflicts().len();
        if unresolved > 0 && unresolved < total {
            writeln!(
                out,
                "resolved {} of {total} conflicts; {unresolved} left",
                total - unresolved
            )?;
        }
        for key in &summary.dropped_edges {
            writeln!(out, "dropped edge {key} (an endpoint is deleted)")?;
        }
        match (merge.kind(), commit) {
            (_, None) => {}
            (MergeKind::UpToDate, Some(_)) => {
                writeln!(out, "already up to date: {ours} contains {}", merge.theirs().short())?
            }
            (MergeKind::FastForward, Some(c)) => writeln!(out, "fast-forward {ours} to {}", c.short())?,
            (MergeKind::ThreeWay, Some(c)) => writeln!(
                out,
                "merged {} into {ours}: commit {} ({} node and {} edge changes)",
                args.theirs,
                c.short(),
                summary.node_changes,
                summary.edge_changes
            )?,
        }
    }
    if unresolved > 0 {
        return Err(cairn::Error::MergeConflicts(unresolved).into());
    }
    Ok(())
}

/// `conflict node ID`, the base's version in one line, then per side what it changed
/// against the base, one `field: before -> after` line per field as `cairn diff` prints them
/// (`deleted` if the side removed it; `added: ...` if the base lacked it, theirs then
/// compared with ours); changes both sides made alike are listed once, under `both`.
fn write_conflict(out: &mut dyn std::io::Write, c: &Conflict) -> Result<(), CliError> {
    writeln!(out, "conflict {}", c.subject())?;
    let sides = match c {
        Conflict::Node { base, ours, theirs, .. } => conflict_lines(
            base.as_ref(),
            ours.as_ref(),
            theirs.as_ref(),
            node_summary,
            node_field_changes,
        ),
        Conflict::Edge { base, ours, theirs, .. } => conflict_lines(
            base.as_ref(),
            ours.as_ref(),
            theirs.as_ref(),
            edge_summary,
            edge_field_changes,
        ),
    };
    for (side, lines) in sides {
        for (i, line) in lines.iter().enumerate() {
            let label = if i == 0 { side } else { "" };
            writeln!(out, "  {label:<7} {line}")?;
        }
    }
    Ok(())
}

/// The lines of [`write_conflict`] per side label (`base`, `ours`, `theirs`, then `both`
/// if the sides share changes).
fn conflict_lines<T>(
    base: Option<&T>,
    ours: Option<&T>,
    theirs: Option<&T>,
    summary: fn(Option<&T>) -> String,
    fields: fn(&T, &T) -> Vec<FieldChange>,
) -> Vec<(&'static str, Vec<String>)> {
    let line = |f: &FieldChange| format!("{}: {} -> {}", f.field, f.before, f.after);
    let mut out = vec![("base", vec![summary(base)])];
    match (base, ours, theirs) {
        (Some(b), Some(o), Some(t)) => {
            let (ours, theirs) = (fields(b, o), fields(b, t));
            let own = |mine: &[FieldChange], other: &[FieldChange]| -> Vec<String> {
                let lines: Vec<String> = mine.iter().filter(|f| !other.contains(f)).map(line).collect();
                if lines.is_empty() {
                    vec!["(only the changes under both)".into()]
                } else {
                    lines
                }
            };
            let both: Vec<String> = ours.iter().filter(|f| theirs.contains(f)).map(line).collect();
            out.push(("ours", own(&ours, &theirs)));
            out.push(("theirs", own(&theirs, &ours)));
            if !both.is_empty() {
                out.push(("both", both));
            }
        }
        _ => {
            for (label, side) in [("ours", ours), ("theirs", theirs)] {
                let lines = match (base, side) {
                    (_, None) => vec!["deleted".into()],
                    (Some(b), Some(s)) => fields(b, s).iter().map(line).collect(),
                    (None, Some(s)) => {
                        let mut lines = vec![format!("added: {}", summary(Some(s)))];
                        if let (Some(o), "theirs") = (ours, label) {
                            lines.push("unlike ours:".into());
                            lines.extend(fields(o, s).iter().map(|f| format!("  {}", line(f))));
                        }
                        lines
                    }
                };
                out.push((label, lines));
            }
        }
    }
    out
}

fn node_summary(n: Option<&Node>) -> String {
    let Some(n) = n else {
        return "(absent)".into();
    };
    let mut text: String = n.text.chars().take(SUMMARY_TEXT_CHARS).collect();
    if n.text.chars().count() > SUMMARY_TEXT_CHARS {
        text.push('…');
    }
    let labels: Vec<&str> = n.labels.iter().map(String::as_str).collect();
    format!("[{}] {} props: {text:?}", labels.join(", "), n.props.len())
}

fn edge_summary(e: Option<&Edge>) -> String {
    match e {
        Some(e) => format!("weight {} {} props", e.weight, e.props.len()),
        None => "(absent)".into(),
    }
}
