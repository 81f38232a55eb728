//! `cairn import FILE`: one JSON Lines file (format: [`cairn::Repo::import_jsonl`]) becomes one commit.

use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal};
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Files at least this large get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 1 << 20;

/// Arguments of `cairn import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// JSON Lines file to import (`-` reads standard input).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Commit message [default: "import <file name>"].
    #[arg(short, long, value_name = "MSG")]
    message: Option<String>,
    /// Author of the commit [default: `cairn`].
    #[arg(long, value_name = "NAME", env = "CAIRN_AUTHOR")]
    author: Option<String>,
    /// Commit even if the file holds no operation, or only operations that leave every node
    /// and edge as it is (by default such an import makes no commit).
    #[arg(long)]
    allow_empty: bool,
    /// Print the result as JSON ({"commit", "operations"}; when the import made no commit,
    /// `commit` is null and "head" is the unchanged head; with --embed also "embed":
    /// {"commit", "embedded"}).
    #[arg(long)]
    json: bool,
    /// Then give every node with text but no vector of this embedder's model one (see
    /// `cairn embedder`), in a second commit.
    #[arg(long, value_name = "NAME")]
    embed: Option<String>,
    /// Do not embed on write: the imported nodes keep the vectors the file gives them
    /// (by default the repository's embedders give every imported node with text its
    /// vectors in the import's own commit; see `cairn embedder`).
    #[arg(long)]
    no_embed_on_write: bool,
    /// Texts per embedding call with --embed.
    #[arg(long, value_name = "N", default_value_t = cairn::DEFAULT_EMBED_BATCH, requires = "embed")]
    embed_batch: usize,
}

/// Imports the file as one commit; on a bad line nothing is committed and the error
/// names the line.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    let from_stdin = args.file.as_os_str() == "-";
    let message = args.message.unwrap_or_else(|| {
        let name = if from_stdin {
            "standard input".to_string()
        } else {
            args.file
                .file_name()
                .unwrap_or(args.file.as_os_str())
                .to_string_lossy()
                .into_owned()
        };
        format!("import {name}")
    });

    let (reader, len): (Box<dyn BufRead>, Option<u64>) = if from_stdin {
        (Box::new(io::stdin().lock()), None)
    } else {
        let read_error = |source| CliError::Read {
            path: args.file.clone(),
            source,
        };
        let file = File::open(&args.file).map_err(read_error)?;
        let meta = file.metadata().map_err(read_error)?;
        if meta.is_dir() {
            return Err(read_error(io::Error::other("it is a directory, not a JSON Lines file")));
        }
        let len = meta.len();
        (Box::new(BufReader::with_capacity(1 << 16, file)), Some(len))
    };

    let bar = len
        .filter(|&l| l >= PROGRESS_MIN_BYTES && io::stderr().is_terminal())
        .map(progress_bar);
    let mut tx = repo.transaction()?;
    if let Some(author) = args.author {
        tx.set_author(author)?;
    }
    tx.embed_on_write(!args.no_embed_on_write);
    let result = tx.import_jsonl(reader, &mut |bytes| {
        if let Some(bar) = &bar {
            bar.set_position(bytes);
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let operations = result?;
    // No operation, or none that changes a node or an edge: no commit (an agent
    // re-importing the facts it has must not fill the log with empty commits).
    let summary = tx.commit_import(&message, operations, args.allow_empty)?;
    let embed = match &args.embed {
        Some(name) => Some((name, embed_nodes(&repo, name, args.embed_batch)?)),
        None => None,
    };
    write_summary(ctx, &summary, embed, args.json)
}

/// Prints what the import (and the embedding) did.
fn write_summary(
    ctx: &mut Ctx<'_>,
    summary: &cairn::ImportSummary,
    embed: Option<(&String, cairn::EmbedNodesReport)>,
    json: bool,
) -> Result<(), CliError> {
    if json {
        let mut v = serde_json::to_value(summary)?;
        if let Some((_, report)) = &embed {
            v["embed"] = serde_json::to_value(report)?;
        }
        return write_json(ctx.out, &v);
    }
    let operations = summary.operations;
    match summary.commit {
        Some(commit) => {
            let plural = if operations == 1 { "" } else { "s" };
            writeln!(ctx.out, "imported {operations} operation{plural}: commit {commit}")?;
        }
        None => writeln!(
            ctx.out,
            "{} (--allow-empty commits anyway)",
            no_commit(operations, summary.head)
        )?,
    }
    if let Some((name, report)) = embed {
        write_embed(ctx, name, report)?;
    }
    Ok(())
}

/// Why an import made no commit: no operation, or operations that changed nothing.
fn no_commit(operations: u64, head: Option<cairn::CommitId>) -> String {
    if operations == 0 {
        return "nothing to import: no operation, no commit made".to_string();
    }
    let plural = if operations == 1 { " left" } else { "s left" };
    let head = head.map_or_else(|| "no commit yet".to_string(), |h| h.to_string());
    format!("no changes: {operations} operation{plural} the graph as it is, no commit made (HEAD stays at {head})")
}

/// The `--embed` line of the summary.
fn write_embed(ctx: &mut Ctx<'_>, name: &str, report: cairn::EmbedNodesReport) -> Result<(), CliError> {
    match report.commit {
        Some(c) => writeln!(ctx.out, "embedded {} node(s) with {name}: commit {c}", report.embedded)?,
        None => writeln!(ctx.out, "no node needed a vector of {name}")?,
    }
    Ok(())
}

/// `--embed NAME`: embeds the nodes missing a vector of NAME, with a progress bar on a
/// terminal.
fn embed_nodes(repo: &cairn::Repo, name: &str, batch: usize) -> Result<cairn::EmbedNodesReport, CliError> {
    let progress = crate::output::progress(repo, &format!("embedding with {name}"));
    let result = repo.embed_nodes(name, batch, &format!("embed with {name}"), &mut |_, _| {});
    drop(progress);
    result.map_err(crate::commands::embedder::embedder_error)
}

fn progress_bar(len: u64) -> ProgressBar {
    let style = ProgressStyle::with_template("importing [{bar:40}] {bytes}/{total_bytes} ({eta})")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    ProgressBar::new(len).with_style(style)
}
