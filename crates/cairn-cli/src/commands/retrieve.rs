//! `cairn retrieve`: run one retrieval (from flags or `--spec JSON`), or a batch of JSON
//! specs (`--batch FILE`), and print the result.
//!
//! The flags only fill a [`RetrieveSpec`]; the library validates it and runs it, so every
//! check on settings (ranges, lanes, weights) and its message are the library's.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use cairn::retrieve::{
    Direction, Fusion, FusionMethod, GraphExpand, Retrieval, RetrievalResult, RetrieveSpec, SparseQuery, ValidAt,
    VectorQuery, WhereClause,
};
use cairn::{Repo, Value};
use clap::ValueEnum;
use serde::Deserialize;

use crate::error::CliError;
use crate::output::format_time_ms;
use crate::Ctx;

/// Arguments of `cairn retrieve`.
///
/// The query flags fill a spec; `--spec` gives a whole spec instead and cannot be combined
/// with them (nor can `--batch`).
#[derive(Debug, Default, clap::Args)]
#[command(group(clap::ArgGroup::new("query").multiple(true).conflicts_with_all(["spec", "batch"])))]
#[command(
    after_help = "Batch mode (--batch FILE, `-` for standard input): one JSON retrieval spec per line \
    (blank lines skipped), one result JSON per line on standard output, in input order. A line that fails \
    (malformed spec, unknown model, bad revision...) is reported as `error: line N: ...` on standard error \
    and the batch goes on; the command exits with code 1 at the end if any line failed."
)]
pub struct Args {
    /// BM25 query text (lane `text`). If the repository has an embedder for a dense model
    /// it holds vectors of (`cairn embedder`), the text is also embedded for that lane
    /// `dense:<name>` (see --no-embed, --embedder).
    #[arg(long, value_name = "Q", group = "query")]
    text: Option<String>,
    /// Do not embed the query text (BM25 alone, unless a vector is given).
    #[arg(long, conflicts_with = "embedder")]
    no_embed: bool,
    /// Embed the query text with this configured embedder [default: the first one, in name
    /// order, whose model has vectors].
    #[arg(long, value_name = "NAME", conflicts_with = "vector_model")]
    embedder: Option<String>,
    /// Dense model of the query vector (lane `dense:<M>`); needs --vector-file.
    #[arg(long, value_name = "M", group = "query", requires = "vector_file")]
    vector_model: Option<String>,
    /// Query vector: a JSON array of numbers, or raw little-endian f32 if the name ends in `.f32`.
    #[arg(long, value_name = "F", group = "query", requires = "vector_model")]
    vector_file: Option<PathBuf>,
    /// Sparse model of the sparse query (lane `sparse:<M>`); needs --sparse.
    #[arg(long, value_name = "M", group = "query", requires = "sparse")]
    sparse_model: Option<String>,
    /// Sparse query vector: `{"indices": [...], "values": [...]}`.
    #[arg(long, value_name = "JSON", group = "query", requires = "sparse_model", value_parser = parse_sparse)]
    sparse: Option<SparseArg>,
    // The gates and the revision (shared with `cairn ls`).
    #[command(flatten)]
    gates: GateArgs,
    /// Graph expansion: most edges from a seed [default with any --expand-* flag: 1].
    #[arg(long, value_name = "N", group = "query")]
    expand_hops: Option<u32>,
    /// Graph expansion: most nodes added [default: 50].
    #[arg(long, value_name = "N", group = "query")]
    expand_max_nodes: Option<usize>,
    /// Graph expansion: edge direction [default: both].
    #[arg(long, value_name = "DIR", group = "query")]
    expand_direction: Option<ExpandDirection>,
    /// Graph expansion: follow only edges of this kind (repeatable; default all kinds).
    #[arg(long, value_name = "K", group = "query")]
    expand_kind: Vec<String>,
    /// Fusion method: `score` (weighted mean of lane scores on [0, 1]: dense lanes as
    /// cosines, text and sparse lanes min-max), `min_max` (every lane min-max: for dense
    /// vectors that are not unit length), `dbsf` (the same over mean ± 3σ), `rrf`,
    /// `weighted_rrf` [default: score].
    #[arg(long, value_name = "METHOD", group = "query")]
    fusion: Option<FusionArg>,
    /// RRF constant k, for --fusion rrf or weighted_rrf [default: 60].
    #[arg(long, value_name = "K", group = "query")]
    rrf_k: Option<f64>,
    /// Weight of a lane (`text`, `dense:<model>`, `sparse:<model>`; repeatable) in the
    /// fusion method, which stays as chosen (every method but `rrf` takes weights)
    /// [default: 1; `text` 0.4 under score, 0.8 under min_max and dbsf].
    #[arg(long, value_name = "LANE=W", group = "query", value_parser = parse_weight)]
    weight: Vec<(String, f64)>,
    // Paging, rendering and output (shared with `cairn ls`).
    #[command(flatten)]
    output: OutputArgs,
    /// Candidates each lane fetches.
    #[arg(long, value_name = "N", group = "query")]
    depth: Option<usize>,
    /// Search the dense lane approximately, through HNSW unit graphs (built on first use,
    /// then stored); every candidate is rescored exactly.
    #[arg(long, group = "query", conflicts_with = "exact")]
    ann: bool,
    /// Search the dense lane exactly (the default below two million vectors of the model).
    #[arg(long, group = "query")]
    exact: bool,
    /// List mode: no lane; the nodes that pass the gates (--label, --where, --valid-at...)
    /// in id order, --limit at a time (`cairn ls` is `cairn retrieve --list`).
    #[arg(long, group = "query")]
    list: bool,
    /// Search the query as written: no query planning (by default time expressions such
    /// as "in July 2023" give items valid then a small, soft boost).
    #[arg(long, group = "query")]
    no_planner: bool,
    /// A whole retrieval spec as JSON (the `--batch` line format); excludes the query flags.
    #[arg(long, value_name = "JSON")]
    spec: Option<String>,
    /// Run one JSON spec per line of FILE (`-`: standard input); see below.
    #[arg(long, value_name = "FILE", conflicts_with = "spec")]
    batch: Option<PathBuf>,
}

/// The options `cairn retrieve` and `cairn ls` share: the gates (labels, properties,
/// validity time) and the revision.
#[derive(Debug, Default, clap::Args)]
pub struct GateArgs {
    /// Keep only nodes with this label (repeat: all of them).
    #[arg(long, value_name = "L", group = "query")]
    pub(crate) label: Vec<String>,
    /// Keep only nodes with at least one of these labels (repeatable).
    #[arg(long, value_name = "L", group = "query")]
    pub(crate) any_label: Vec<String>,
    /// Keep only nodes whose property KEY equals VALUE (VALUE is JSON if it parses as
    /// JSON, else a string; repeatable, all must hold).
    #[arg(long = "where", value_name = "KEY=VALUE", group = "query", value_parser = parse_where_eq)]
    pub(crate) where_eq: Vec<WhereClause>,
    /// Keep only nodes whose numeric property KEY is in [MIN, MAX] (either end may be
    /// omitted: `year=2020..`, `year=..2021`; repeatable).
    #[arg(long, value_name = "KEY=MIN..MAX", group = "query", value_parser = parse_where_range)]
    pub(crate) where_range: Vec<WhereClause>,
    /// Validity time: ms since the epoch, RFC 3339 (2024-06-01T09:30:00+02:00), a date and
    /// time without an offset (2024-06-01T09:30:00, 2024-06-01 09:30; read as UTC) or a
    /// date (2024-06-01; midnight UTC) [default: the commit's timestamp].
    #[arg(long, value_name = "T", group = "query", value_parser = crate::output::parse_time)]
    pub(crate) valid_at: Option<i64>,
    /// Switch the validity gate off (facts of every time).
    #[arg(long, group = "query", conflicts_with = "valid_at")]
    pub(crate) all_time: bool,
    /// Read this revision [default: HEAD].
    #[arg(long, value_name = "REV", group = "query")]
    pub(crate) at: Option<String>,
}

/// The options `cairn retrieve` and `cairn ls` share: paging, rendering and output.
#[derive(Debug, Default, clap::Args)]
pub struct OutputArgs {
    /// Token budget for the packed items [default: unlimited].
    #[arg(long, value_name = "N", group = "query")]
    pub(crate) token_budget: Option<usize>,
    /// Most items returned [default: 10].
    #[arg(long, value_name = "K", group = "query")]
    pub(crate) limit: Option<usize>,
    /// Characters of node text rendered per item [default: 1000].
    #[arg(long, value_name = "N", group = "query")]
    pub(crate) text_cap: Option<usize>,
    /// List mode: start after this node id (the last id of the previous page).
    #[arg(long, value_name = "ID", group = "query")]
    pub(crate) after: Option<String>,
    /// Explain every item: each lane's rank and score and what it added to the fused
    /// score, the gates, and an expanded item's path with edge kinds.
    #[arg(long, group = "query")]
    pub(crate) explain: bool,
    /// Render this property into each item (repeatable, in this order).
    #[arg(long, value_name = "KEY", group = "query")]
    pub(crate) render_prop: Vec<String>,
    /// Print the result as one line of JSON (`retrieve --batch` always does).
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `cairn ls` (`cairn retrieve --list`): only the options a listing honours.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("query").multiple(true)))]
pub struct LsArgs {
    // The gates and the revision.
    #[command(flatten)]
    gates: GateArgs,
    // Paging, rendering and output.
    #[command(flatten)]
    output: OutputArgs,
}

/// `--expand-direction`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ExpandDirection {
    Out,
    In,
    Both,
}

/// `--fusion`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum FusionArg {
    Rrf,
    #[value(name = "weighted_rrf", alias = "weighted-rrf")]
    WeightedRrf,
    Score,
    #[value(name = "min_max", alias = "min-max")]
    MinMax,
    Dbsf,
}

/// `--sparse`, as typed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SparseArg {
    indices: Vec<u32>,
    values: Vec<f32>,
}

fn parse_sparse(s: &str) -> Result<SparseArg, String> {
    serde_json::from_str(s).map_err(|e| format!("expected {{\"indices\": [...], \"values\": [...]}}: {e}"))
}

fn split_key(s: &str, form: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected {form}")),
    }
}

fn parse_where_eq(s: &str) -> Result<WhereClause, String> {
    let (key, raw) = split_key(s, "KEY=VALUE")?;
    let value = serde_json::from_str::<Value>(&raw).unwrap_or(Value::String(raw));
    Ok(WhereClause::eq(key, value))
}

fn parse_where_range(s: &str) -> Result<WhereClause, String> {
    let (key, range) = split_key(s, "KEY=MIN..MAX")?;
    let (lo, hi) = range
        .split_once("..")
        .ok_or_else(|| format!("expected KEY=MIN..MAX, got range {range:?}"))?;
    let bound = |b: &str| -> Result<Option<f64>, String> {
        let b = b.trim();
        if b.is_empty() {
            return Ok(None);
        }
        b.parse::<f64>().map(Some).map_err(|_| format!("{b:?} is not a number"))
    };
    Ok(WhereClause::range(key, bound(lo)?, bound(hi)?))
}

fn parse_weight(s: &str) -> Result<(String, f64), String> {
    let (lane, w) = split_key(s, "LANE=WEIGHT")?;
    let w = w.parse::<f64>().map_err(|_| format!("weight {w:?} is not a number"))?;
    Ok((lane, w))
}

/// Reads a query vector: raw little-endian f32 for `*.f32`, else a JSON array.
fn read_vector(path: &Path) -> Result<Vec<f32>, CliError> {
    let bytes = std::fs::read(path).map_err(|source| CliError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |detail: String| CliError::BadInput {
        path: path.to_path_buf(),
        detail,
    };
    if path.extension().is_some_and(|e| e == "f32") {
        if bytes.len() % 4 != 0 {
            return Err(bad(format!(
                "{} bytes is not a whole number of f32 values",
                bytes.len()
            )));
        }
        return Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect());
    }
    serde_json::from_slice(&bytes).map_err(|e| bad(format!("expected a JSON array of numbers: {e}")))
}

impl Args {
    /// `--no-embed` and `--embedder NAME` as the spec's `embed` and `embedder`, where the
    /// spec (a `--spec` or a `--batch` line) does not say itself.
    fn embed_flags(&self, spec: &mut RetrieveSpec) {
        if self.no_embed && spec.embed.is_none() {
            spec.embed = Some(false);
        }
        // A line that gives its own vector embeds nothing.
        if spec.embedder.is_none() && spec.embed != Some(false) && spec.vector.is_none() {
            spec.embedder.clone_from(&self.embedder);
        }
    }

    /// The spec the query flags describe (`--spec` excludes them, so this is only called
    /// without it).
    fn to_spec(&self) -> Result<RetrieveSpec, CliError> {
        let vector = match (&self.vector_model, &self.vector_file) {
            (Some(model), Some(file)) => Some(VectorQuery {
                model: model.clone(),
                embedding: read_vector(file)?,
            }),
            _ => None,
        };
        let sparse = match (&self.sparse_model, &self.sparse) {
            (Some(model), Some(s)) => Some(SparseQuery {
                model: model.clone(),
                indices: s.indices.clone(),
                values: s.values.clone(),
            }),
            _ => None,
        };
        let valid_at = match (self.gates.valid_at, self.gates.all_time) {
            (_, true) => Some(ValidAt::AllTime),
            (Some(t), false) => Some(ValidAt::At(t)),
            (None, false) => None,
        };
        let expand_set = self.expand_hops.is_some()
            || self.expand_max_nodes.is_some()
            || self.expand_direction.is_some()
            || !self.expand_kind.is_empty();
        let expand = expand_set.then(|| {
            let defaults = GraphExpand::default();
            GraphExpand {
                hops: self.expand_hops.unwrap_or(defaults.hops),
                max_nodes: self.expand_max_nodes.unwrap_or(defaults.max_nodes),
                direction: match self.expand_direction {
                    Some(ExpandDirection::Out) => Direction::Out,
                    Some(ExpandDirection::In) => Direction::In,
                    Some(ExpandDirection::Both) | None => Direction::Both,
                },
                kinds: self.expand_kind.clone(),
                ..defaults
            }
        });
        let fusion_set = self.fusion.is_some() || self.rrf_k.is_some() || !self.weight.is_empty();
        let fusion = fusion_set.then(|| Fusion {
            method: match self.fusion {
                Some(FusionArg::Rrf) => FusionMethod::Rrf,
                Some(FusionArg::WeightedRrf) => FusionMethod::WeightedRrf,
                Some(FusionArg::Dbsf) => FusionMethod::Dbsf,
                Some(FusionArg::MinMax) => FusionMethod::MinMax,
                // The library's default: weights weigh it, and `--rrf-k` without an RRF
                // method is refused by the library rather than switching the method.
                Some(FusionArg::Score) | None => FusionMethod::Score,
            },
            k: self.rrf_k,
            weights: self.weight.iter().cloned().collect::<BTreeMap<_, _>>(),
        });
        let mut where_clauses = self.gates.where_eq.clone();
        where_clauses.extend(self.gates.where_range.iter().cloned());
        Ok(RetrieveSpec {
            text: self.text.clone(),
            vector,
            sparse,
            labels_all: self.gates.label.clone(),
            labels_any: self.gates.any_label.clone(),
            where_clauses,
            valid_at,
            at: self.gates.at.clone(),
            expand,
            fusion,
            token_budget: self.output.token_budget,
            limit: self.output.limit,
            text_cap: self.output.text_cap,
            depth: self.depth,
            render_props: self.output.render_prop.clone(),
            rerank_top_n: None,
            ann: match (self.ann, self.exact) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            list: self.list,
            after: self.output.after.clone(),
            explain: self.output.explain,
            planner: self.no_planner.then_some(cairn::retrieve::PlannerMode::None),
            // Set from --no-embed / --embedder by `embed_flags`, as for --spec and --batch.
            embed: None,
            embedder: None,
        })
    }
}

/// Runs the retrieval (or the batch) and prints the result(s).
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    if let Some(file) = &args.batch {
        return run_batch(ctx, &repo, file, &args);
    }
    let mut spec = match &args.spec {
        Some(json) => RetrieveSpec::from_json(json)?,
        None => args.to_spec()?,
    };
    args.embed_flags(&mut spec);
    // The first query of a commit builds (or loads) its indexes: show how far on a terminal.
    let progress = crate::output::progress(&repo, "retrieving");
    let result = Retrieval::from_spec(&repo, spec).execute();
    drop(progress);
    let result = result?;
    if args.output.json {
        serde_json::to_writer(&mut *ctx.out, &result)?;
        writeln!(ctx.out)?;
        return Ok(());
    }
    write_human(ctx.out, &result)
}

/// Runs `cairn ls`: `cairn retrieve --list` with the options a listing honours.
pub fn run_ls(ctx: &mut Ctx<'_>, args: LsArgs) -> Result<(), CliError> {
    let args = Args {
        gates: args.gates,
        output: args.output,
        list: true,
        ..Args::default()
    };
    run(ctx, args)
}

/// One result JSON line per spec line; failures reported per line, counted at the end.
fn run_batch(ctx: &mut Ctx<'_>, repo: &Repo, file: &Path, args: &Args) -> Result<(), CliError> {
    let read_error = |source| CliError::Read {
        path: file.to_path_buf(),
        source,
    };
    let reader: Box<dyn BufRead> = if file.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        Box::new(BufReader::new(File::open(file).map_err(read_error)?))
    };
    let (mut total, mut failed) = (0usize, 0usize);
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(read_error)?;
        if line.trim().is_empty() {
            continue;
        }
        total += 1;
        let progress = crate::output::progress(repo, "retrieving");
        let result = RetrieveSpec::from_json(&line).and_then(|mut spec| {
            args.embed_flags(&mut spec);
            Retrieval::from_spec(repo, spec).execute()
        });
        drop(progress);
        match result {
            Ok(r) => {
                serde_json::to_writer(&mut *ctx.out, &r)?;
                writeln!(ctx.out)?;
                // A consumer reading results as they come should not wait for the batch.
                ctx.out.flush()?;
            }
            Err(e) => {
                failed += 1;
                // Results before this line are already out, so the order on a terminal is right.
                ctx.out.flush()?;
                let _ = writeln!(io::stderr(), "error: line {}: {e}", i + 1);
            }
        }
    }
    if failed > 0 {
        return Err(CliError::BatchFailed { failed, total });
    }
    Ok(())
}

/// The human-readable form: a header, the items, the warnings.
pub(crate) fn write_human(out: &mut dyn Write, r: &RetrievalResult) -> Result<(), CliError> {
    let valid_at = r.valid_at.map_or_else(|| "all time".to_string(), format_time_ms);
    let budget = r
        .token_budget
        .map_or_else(|| "unlimited".to_string(), |b| b.to_string());
    // A listing: no lane ranked; the items come in id order.
    let listing = r.lanes.is_empty();
    let candidates = if listing { "pass the gates" } else { "candidates" };
    writeln!(
        out,
        "commit {}  valid at {valid_at}  tokens {}/{budget}  {candidates} {}  dropped {}",
        r.commit.map_or_else(|| "(none yet)".to_string(), |c| c.short()),
        r.tokens_used,
        r.candidates_seen,
        r.dropped
    )?;
    let lanes: Vec<String> = r
        .lanes
        .iter()
        .map(|l| {
            let approx = if l.approximate { ", approximate" } else { "" };
            let embedded = if l.embedded { ", query embedded" } else { "" };
            let hits = if l.hits == 1 { "hit" } else { "hits" };
            format!("{} ({} {hits}{approx}{embedded})", l.name, l.hits)
        })
        .collect();
    if !listing {
        writeln!(out, "lanes  {}", lanes.join(", "))?;
    }
    if r.items.is_empty() {
        writeln!(out, "(no items)")?;
    }
    for item in &r.items {
        writeln!(out)?;
        // Each lane's own rank and raw score (BM25, dot product) beside the fused score.
        let ranks: Vec<String> = item
            .lanes
            .iter()
            .map(|(l, s)| format!("{l} #{} {:.4}", s.rank, s.score))
            .collect();
        let ranks = if ranks.is_empty() {
            "expanded".to_string()
        } else {
            ranks.join(", ")
        };
        let rerank = item
            .rerank_score
            .map(|s| format!("  rerank {s:.4}"))
            .unwrap_or_default();
        if listing {
            writeln!(out, "{:>3}. {}", item.rank, item.id)?;
        } else {
            writeln!(
                out,
                "{:>3}. {:.4}  {}  [{ranks}]{rerank}",
                item.rank, item.score, item.id
            )?;
        }
        if let Some(path) = &item.source_path {
            let path: Vec<&str> = path.iter().map(|n| n.as_str()).collect();
            writeln!(out, "     via {}", path.join(" -> "))?;
        }
        if let Some(x) = &item.explain {
            let mut terms: Vec<String> = x
                .terms
                .iter()
                .map(|t| format!("{} #{} ({:.4}) +{:.4}", t.lane, t.rank, t.lane_score, t.contribution))
                .collect();
            // Graph expansion puts the fused score on its own scale (or scores the item by
            // its path from a seed): its term is what that step added, so the terms sum to
            // the item's score.
            if let Some(e) = &x.expansion {
                let fused: f64 = x.terms.iter().map(|t| t.contribution).sum();
                let added = item.score - fused;
                let sign = if added < 0.0 { "-" } else { "+" };
                let from = match e.distance {
                    0 => format!("normalised {:.4}, no edge", e.normalised),
                    1 => format!("seed normalised {:.4}, 1 edge", e.normalised),
                    d => format!("seed normalised {:.4}, {d} edges", e.normalised),
                };
                terms.push(format!("expansion ({from}) {sign}{:.4}", added.abs()));
            }
            if x.terms.is_empty() {
                writeln!(out, "     why: no lane found it: {}", terms.join(", "))?;
            } else {
                writeln!(out, "     why: {}: {}", x.fusion, terms.join(", "))?;
            }
            writeln!(out, "     gates: {}", x.gates.join("; "))?;
            if let Some(path) = &x.path {
                let mut line = path.first().map(|s| s.from.clone()).unwrap_or_default();
                for s in path {
                    let edge = if s.direction == "in" {
                        format!(" <-[{}]- ", s.kind)
                    } else {
                        format!(" -[{}]-> ", s.kind)
                    };
                    line.push_str(&edge);
                    line.push_str(&s.to);
                }
                writeln!(out, "     path: {line}")?;
            }
        }
        for line in item.text.lines() {
            writeln!(out, "     {line}")?;
        }
    }
    if !r.warnings.is_empty() {
        writeln!(out)?;
    }
    for w in &r.warnings {
        // The code's JSON form is its snake_case name.
        let code = serde_json::to_value(w.code)?;
        writeln!(out, "warning[{}]: {}", code.as_str().unwrap_or("?"), w.message)?;
    }
    Ok(())
}
