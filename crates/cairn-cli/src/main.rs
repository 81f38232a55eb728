//! `cairn`: the command-line face of a Cairn repository.
//!
//! This binary only parses arguments, calls the `cairn` library and formats what it
//! returns; every rule about storage, history and retrieval lives in the library.
//!
//! Adding a command: write a `commands/<name>.rs` module (named in `commands/mod.rs`)
//! with an `Args` struct (clap derive) and a `run(ctx, args)` function, add a variant to
//! [`Command`] and one arm to [`dispatch`].

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc, not the system allocator: glibc's per-thread arenas kept ~40 % more memory
/// than the index needs after a parallel build (README, "Memory").
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod commands;
mod error;
mod output;
mod remote;
mod remote_mcp;

use error::CliError;

/// Cairn: a versioned, content-addressed graph database for AI agents.
#[derive(Debug, Parser)]
#[command(name = "cairn", version, propagate_version = true)]
struct Cli {
    /// The repository directory.
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        env = "CAIRN_REPO",
        default_value = DEFAULT_REPO
    )]
    repo: PathBuf,
    /// If another process has the repository open, wait up to this many seconds for it
    /// (Cairn keeps one process per repository at a time; 0 fails at once).
    #[arg(
        long,
        global = true,
        value_name = "SECONDS",
        env = "CAIRN_WAIT",
        default_value_t = 0.0,
        value_parser = parse_seconds
    )]
    wait: f64,
    /// Send the command to a `cairn serve` server at URL instead of opening the repository
    /// (retrieve, ls, import, log, show, stats, history, diff, fsck, mcp; bearer token from
    /// $CAIRN_TOKEN).
    #[arg(long, global = true, value_name = "URL", env = "CAIRN_REMOTE")]
    remote: Option<String>,
    /// Memory budget of the repository's index data, in MiB (default 1024): the index part
    /// cache, and a quarter of it for each dense model's exact rows (beyond it they are
    /// read from the store). Results are the same under every budget.
    #[arg(long, global = true, value_name = "MIB", env = "CAIRN_MEMORY_MIB")]
    memory_mib: Option<u64>,
    #[command(subcommand)]
    command: Command,
}

/// `--repo`'s default.
pub(crate) const DEFAULT_REPO: &str = ".cairn";

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a new, empty repository (on branch `main`).
    Init(commands::init::Args),
    /// Import a JSON Lines file as one commit on the current branch.
    Import(commands::import::Args),
    /// Write a revision as JSON Lines in the import format (re-importable).
    Export(commands::export::Args),
    /// Show commits, newest first.
    Log(commands::log::Args),
    /// Show a branch's moves, newest first (commits, merges, creation, deletion): how a
    /// lost head is found again.
    Reflog(commands::reflog::Args),
    /// Show one node as of a revision.
    Show(commands::show::Args),
    /// Show the nodes and edges that differ between two revisions.
    Diff(commands::diff::Args),
    /// List, create, delete or switch branches.
    Branch(commands::branch::Args),
    /// List, create or delete tags (names fixed on one commit; kept from gc).
    Tag(commands::tag::Args),
    /// Verify every stored object and reference; exit code 1 if anything is wrong.
    Fsck(commands::fsck::Args),
    /// Show node and edge counts of a revision.
    Stats(commands::stats::Args),
    /// Retrieve context for a query (text, vector, sparse; gates, fusion, expansion, budget).
    // Boxed: its many flags make it far larger than the other variants.
    Retrieve(Box<commands::retrieve::Args>),
    /// List the nodes that pass the gates, in id order, a page at a time (`retrieve --list`):
    /// `cairn ls --label Fact --where topic=residence --valid-at 2024-06-01 --after ID`.
    Ls(Box<commands::retrieve::LsArgs>),
    /// Build and persist a revision's indexes ahead of queries.
    Index(commands::index::Args),
    /// Evaluate retrieval on a judged test collection (nDCG@10, Recall@100 per lane).
    Eval(commands::eval::Args),
    /// Show the commits that added, changed or removed one node.
    History(commands::history::Args),
    /// Merge a branch or revision into a branch (three-way, node and edge granularity).
    Merge(commands::merge::Args),
    /// Delete objects and derived data no branch or tag reaches.
    Gc(commands::gc::Args),
    /// List, set or remove the embedders of dense model names (query text → vector).
    Embedder(commands::embedder::Args),
    /// Serve the repository to an AI agent over the Model Context Protocol (JSON-RPC on
    /// stdin/stdout): tools remember, invalidate, recall, history, as_of.
    Mcp(commands::mcp::Args),
    /// Serve the repository over HTTP so that many processes share it (`cairn serve token
    /// add` makes bearer tokens).
    Serve(commands::serve::Args),
    /// List, add or remove remotes (other repositories to fetch from and push to).
    Remote(commands::remote::Args),
    /// Copy a repository: every branch fetched, its current branch checked out.
    Clone(commands::sync::CloneArgs),
    /// Fetch a remote's branches into remote-tracking branches (`origin/main`).
    Fetch(commands::sync::FetchArgs),
    /// Fetch, then merge the remote's branch into the current branch.
    Pull(commands::sync::PullArgs),
    /// Push a branch to a remote (fast-forward only unless --force).
    Push(commands::sync::PushArgs),
}

/// What every command gets: where the repository is, and where to write its output.
pub struct Ctx<'a> {
    /// The `--repo` path.
    pub repo_path: PathBuf,
    /// How long to wait for a repository another process has open (`--wait`).
    pub wait: std::time::Duration,
    /// The memory budget of an opened repository (`--memory-mib`), in bytes.
    pub memory_budget: Option<usize>,
    /// Standard output (buffered); diagnostics go to stderr directly.
    pub out: &'a mut dyn Write,
}

impl Ctx<'_> {
    /// Opens the repository at `--repo`, waiting `--wait` for another process to let go.
    pub fn open(&self) -> Result<cairn::Repo, CliError> {
        match cairn::Repo::open_waiting(&self.repo_path, self.wait) {
            Err(cairn::Error::Store(cairn::StoreError::Locked { path })) => {
                Err(CliError::Refused(if self.wait.is_zero() {
                    format!("repository at {path} is in use by another process (give --wait SECONDS to wait for it)")
                } else {
                    format!(
                        "repository at {path} is still in use by another process after waiting {:.1} s (--wait)",
                        self.wait.as_secs_f64()
                    )
                }))
            }
            other => {
                let repo = other?;
                if let Some(bytes) = self.memory_budget {
                    repo.set_memory_budget(bytes);
                }
                Ok(repo)
            }
        }
    }
}

/// `--wait`'s value: seconds, a finite number >= 0.
fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("expected a number of seconds >= 0 (e.g. 2 or 0.5), got {s:?}")),
    }
}

fn dispatch(command: Command, ctx: &mut Ctx<'_>) -> Result<(), CliError> {
    match command {
        Command::Init(args) => commands::init::run(ctx, args),
        Command::Import(args) => commands::import::run(ctx, args),
        Command::Export(args) => commands::export::run(ctx, args),
        Command::Log(args) => commands::log::run(ctx, args),
        Command::Reflog(args) => commands::reflog::run(ctx, args),
        Command::Show(args) => commands::show::run(ctx, args),
        Command::Diff(args) => commands::diff::run(ctx, args),
        Command::Branch(args) => commands::branch::run(ctx, args),
        Command::Tag(args) => commands::tag::run(ctx, args),
        Command::Fsck(args) => commands::fsck::run(ctx, args),
        Command::Stats(args) => commands::stats::run(ctx, args),
        Command::Retrieve(args) => commands::retrieve::run(ctx, *args),
        Command::Ls(args) => commands::retrieve::run_ls(ctx, *args),
        Command::Index(args) => commands::index::run(ctx, args),
        Command::Eval(args) => commands::eval::run(ctx, args),
        Command::History(args) => commands::history::run(ctx, args),
        Command::Merge(args) => commands::merge::run(ctx, args),
        Command::Gc(args) => commands::gc::run(ctx, args),
        Command::Embedder(args) => commands::embedder::run(ctx, args),
        Command::Mcp(args) => commands::mcp::run(ctx, args),
        Command::Serve(args) => commands::serve::run(ctx, args),
        Command::Remote(args) => commands::remote::run(ctx, args),
        Command::Clone(args) => commands::sync::run_clone(ctx, args),
        Command::Fetch(args) => commands::sync::run_fetch(ctx, args),
        Command::Pull(args) => commands::sync::run_pull(ctx, args),
        Command::Push(args) => commands::sync::run_push(ctx, args),
    }
}

fn main() -> ExitCode {
    // Usage errors exit with clap's code 2 inside `parse`.
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut ctx = Ctx {
        repo_path: cli.repo,
        wait: std::time::Duration::try_from_secs_f64(cli.wait.max(0.0)).unwrap_or(std::time::Duration::MAX),
        memory_budget: cli
            .memory_mib
            .map(|mib| usize::try_from(mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX)),
        out: &mut out,
    };
    let result = match &cli.remote {
        Some(url) => remote::run(url, &matches, &mut *ctx.out),
        None => dispatch(cli.command, &mut ctx),
    }
    .and_then(|()| out.flush().map_err(CliError::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // `cairn log | head`: the reader left; that is not a failure of ours.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            // Output written before the failure (e.g. fsck's problem list) comes first.
            let _ = out.flush();
            let _ = writeln!(io::stderr(), "error: {e}");
            if let Some(hint) = e.hint() {
                let _ = writeln!(io::stderr(), "hint: {hint}");
            }
            ExitCode::FAILURE
        }
    }
}
