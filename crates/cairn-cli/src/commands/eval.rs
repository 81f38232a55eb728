//! `cairn eval --collection DIR`: import a judged test collection and print nDCG@10 and
//! Recall@100 per lane (the mapping and the metrics are [`cairn_eval`]'s; this command
//! only times the steps and prints the table).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn::retrieve::{Fusion, GraphExpand, DEFAULT_RRF_K, DEFAULT_TEXT_WEIGHT, MIN_MAX_TEXT_WEIGHT};
use cairn::{CommitId, Repo};
use cairn_eval::{evaluate, import_collection_with_meta, Collection, DocMeta, EvalRun, EvalScores, LINK_KIND};
use clap::ValueEnum;
use serde::Serialize;

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Left at `--repo`'s default (and no $CAIRN_REPO), eval works in a temporary
/// repository instead of creating `.cairn` in the working directory.
use crate::DEFAULT_REPO;

/// Arguments of `cairn eval`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Repository: with --repo PATH (or $CAIRN_REPO) the collection is imported there \
    (the repository is created if PATH does not exist, and kept); without, a temporary repository is used \
    and removed afterwards. Ranked lists: 100 items per query, no validity gate."
)]
pub struct Args {
    /// The collection directory (`corpus.jsonl`, `queries.jsonl`, `qrels.tsv`, embeddings).
    #[arg(long, value_name = "DIR")]
    collection: PathBuf,
    /// Rows to evaluate, comma-separated [default: dense,text,hybrid,hybrid-rrf,hybrid-min-max, plus
    /// hybrid-expand with --links].
    #[arg(long, value_name = "LANES", value_delimiter = ',')]
    lanes: Vec<Lane>,
    /// Evaluate only the first N queries (file order).
    #[arg(long, value_name = "N")]
    limit_queries: Option<usize>,
    /// Import `links.tsv` as `cites` edges and add the `hybrid + expansion` row.
    #[arg(long)]
    links: bool,
    /// Evaluate the existing repository's HEAD without importing (needs --repo).
    #[arg(long)]
    no_import: bool,
    /// Print the results as JSON (with timings in ms).
    #[arg(long)]
    json: bool,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Lane {
    /// The dense lane alone.
    Dense,
    /// The BM25 lane alone.
    Text,
    /// Dense + BM25, the retrieval default (score fusion, text weight 0.4).
    Hybrid,
    /// Dense + BM25, RRF k = 60.
    HybridRrf,
    /// Dense + BM25, min-max on both lanes (text weight 0.8; the previous default).
    HybridMinMax,
    /// Dense + BM25, the default fusion, with graph expansion over the links (needs
    /// --links).
    HybridExpand,
}

impl Lane {
    fn run(self) -> EvalRun {
        match self {
            Lane::Dense => EvalRun::dense(),
            Lane::Text => EvalRun::text(),
            Lane::Hybrid => EvalRun::hybrid(),
            Lane::HybridRrf => EvalRun::hybrid().fusion(Fusion::rrf()),
            Lane::HybridMinMax => EvalRun::hybrid().fusion(Fusion::min_max()),
            Lane::HybridExpand => EvalRun::hybrid().expand(GraphExpand::hops(1).kind(LINK_KIND)),
        }
    }

    fn title(self, scores: &EvalScores) -> String {
        match self {
            Lane::Dense if scores.approximate => "dense (approximate)".into(),
            Lane::Dense => "dense (exact)".into(),
            Lane::Text => "text (BM25)".into(),
            Lane::Hybrid => format!("hybrid score fusion (text {DEFAULT_TEXT_WEIGHT}, default)"),
            Lane::HybridRrf => format!("hybrid rrf k={DEFAULT_RRF_K}"),
            Lane::HybridMinMax => format!("hybrid min-max (text {MIN_MAX_TEXT_WEIGHT})"),
            Lane::HybridExpand => "hybrid + expansion".into(),
        }
    }
}

/// A repository directory removed when dropped (declare it before the `Repo` so that the
/// repository is closed first).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `eval --json`.
#[derive(Serialize)]
struct Report {
    collection: String,
    documents: usize,
    queries: usize,
    links: usize,
    commit: CommitId,
    import_ms: Option<u128>,
    index_ms: u128,
    rows: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    lane: String,
    #[serde(flatten)]
    scores: EvalScores,
    query_ms: u128,
}

/// Loads, imports, evaluates, prints.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let c = Collection::load(&args.collection)?;
    let meta = DocMeta::load(&args.collection)?;
    if args.links && c.links.is_none() {
        return Err(CliError::Refused(format!(
            "--links: {} has no links.tsv",
            args.collection.display()
        )));
    }
    let mut lanes = args.lanes.clone();
    if lanes.is_empty() {
        lanes = vec![
            Lane::Dense,
            Lane::Text,
            Lane::Hybrid,
            Lane::HybridRrf,
            Lane::HybridMinMax,
        ];
        if args.links {
            lanes.push(Lane::HybridExpand);
        }
    }
    if lanes.contains(&Lane::HybridExpand) && !args.links {
        return Err(CliError::Refused("lane hybrid-expand needs --links".into()));
    }

    let named = ctx.repo_path != Path::new(DEFAULT_REPO) || std::env::var_os("CAIRN_REPO").is_some();
    if args.no_import && !named {
        return Err(CliError::Refused("--no-import needs --repo".into()));
    }
    // Dropped after `repo` (declared first): the temporary repository is closed, then removed.
    let mut _temp = None;
    let repo = if !named {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("cairn-eval-{}-{nanos}", std::process::id()));
        _temp = Some(TempDir(dir.clone()));
        Repo::init(&dir)?
    } else if ctx.repo_path.exists() {
        ctx.open()?
    } else {
        Repo::init(&ctx.repo_path)?
    };

    let (commit, import_time) = if args.no_import {
        let head = repo.head()?.ok_or_else(|| cairn::Error::UnknownRevision {
            rev: "HEAD".into(),
            detail: "the current branch has no commits yet".into(),
        })?;
        (head, None)
    } else {
        let started = Instant::now();
        let progress = crate::output::progress(&repo, "importing the collection");
        let commit = import_collection_with_meta(&repo, &c, &meta, args.links);
        drop(progress);
        (commit?, Some(started.elapsed()))
    };
    let started = Instant::now();
    let progress = crate::output::progress(&repo, "building indexes");
    let built = repo.build_indexes(&commit.to_hex());
    drop(progress);
    built?;
    let index_time = started.elapsed();

    let mut rows = Vec::new();
    for lane in &lanes {
        let mut run = lane.run().at(commit.to_hex());
        run.limit_queries = args.limit_queries;
        let started = Instant::now();
        let name = lane
            .to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_owned());
        let progress = crate::output::progress(&repo, &format!("evaluating {name}"));
        let scores = evaluate(&repo, &c, &run);
        drop(progress);
        let scores = scores?;
        rows.push((lane.title(&scores), scores, started.elapsed()));
    }

    let name = args
        .collection
        .file_name()
        .unwrap_or(args.collection.as_os_str())
        .to_string_lossy()
        .into_owned();
    let links = if args.links {
        c.links.as_ref().map_or(0, Vec::len)
    } else {
        0
    };
    if args.json {
        let report = Report {
            collection: name,
            documents: c.corpus.len(),
            queries: rows.first().map_or(0, |r| r.1.queries),
            links,
            commit,
            import_ms: import_time.map(|t| t.as_millis()),
            index_ms: index_time.as_millis(),
            rows: rows
                .into_iter()
                .map(|(lane, scores, t)| Row {
                    lane,
                    scores,
                    query_ms: t.as_millis(),
                })
                .collect(),
        };
        return write_json(ctx.out, &report);
    }

    let out = &mut *ctx.out;
    let queries = rows.first().map_or(0, |r| r.1.queries);
    let judged = rows.first().map_or(0, |r| r.1.judged);
    writeln!(
        out,
        "collection {name}: {} documents, {queries} queries ({judged} judged), {links} links",
        c.corpus.len()
    )?;
    match import_time {
        Some(t) => writeln!(out, "import   {}  commit {}", secs(t), commit.short())?,
        None => writeln!(out, "import   skipped  commit {}", commit.short())?,
    }
    writeln!(out, "indexes  {}", secs(index_time))?;
    writeln!(out)?;
    let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0).max(4);
    writeln!(out, "| {:<width$} | nDCG@10 | Recall@100 | query time |", "lane")?;
    writeln!(out, "|{:-<w$}|--------:|-----------:|-----------:|", "", w = width + 2)?;
    let mut total = Duration::ZERO;
    for (title, s, t) in &rows {
        total += *t;
        writeln!(
            out,
            "| {title:<width$} | {:>7.4} | {:>10.4} | {:>10} |",
            s.ndcg10,
            s.recall100,
            secs(*t)
        )?;
    }
    writeln!(out)?;
    writeln!(out, "query time {} for {} queries", secs(total), queries * rows.len())?;
    Ok(())
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}
