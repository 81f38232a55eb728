//! `cairn mcp`: serve the repository to an agent over the Model Context Protocol (JSON-RPC
//! on standard input and output; see the `cairn-mcp` crate). Standard output carries
//! protocol messages only; the few log lines go to standard error.

use std::io::{self, Write};

use crate::error::CliError;
use crate::Ctx;

/// Arguments of `cairn mcp`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Messages are JSON-RPC 2.0, one per line. Tools: remember, invalidate, recall, history, as_of \
    (`tools/list` gives their JSON Schemas). The repository is opened for each tool call and closed after it \
    (waiting --wait seconds, default 10, for another process that has it open), so other processes use it \
    between calls; --hold keeps it open for the whole session instead. The server exits at the end of \
    standard input."
)]
pub struct Args {
    /// Author of the commits the tools make when a call names none [default: `cairn`].
    #[arg(long, value_name = "NAME", env = "CAIRN_AUTHOR")]
    author: Option<String>,
    /// Create the repository first if there is none at --repo.
    #[arg(long)]
    init: bool,
    /// Keep the repository open (locked) for the whole session: recall keeps its index
    /// parts in memory between calls, but no other process can open the repository.
    #[arg(long)]
    hold: bool,
}

/// How long a tool call waits for a repository another process has open, when `--wait`
/// is not given.
const DEFAULT_CALL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves MCP on stdin/stdout until stdin ends.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let wait = if ctx.wait.is_zero() {
        DEFAULT_CALL_WAIT
    } else {
        ctx.wait
    };
    let held = match ctx.open() {
        Err(CliError::Cairn(cairn::Error::NotARepo { .. })) if args.init => Some(cairn::Repo::init(&ctx.repo_path)?),
        // Without a repository, still answer the host: `initialize` and `tools/list` work,
        // and each tool call says what to do (a host shows a process that exits at once
        // only as "connection closed").
        Err(CliError::Cairn(cairn::Error::NotARepo { path })) if !args.hold => {
            let _ = writeln!(
                io::stderr(),
                "cairn mcp: no cairn repository at {path}: every tool call will fail until one exists \
                 (cairn init --repo {path}, or start with --init)"
            );
            None
        }
        other => Some(other?),
    };
    let mut server = match held {
        Some(repo) if args.hold => cairn_mcp::Server::new(repo),
        // Checked (and created) above; from here on each tool call opens it.
        checked => {
            drop(checked);
            cairn_mcp::Server::open_per_call(&ctx.repo_path, wait)
        }
    };
    if let Some(author) = args.author {
        server = server.with_author(author);
    }
    let _ = writeln!(
        io::stderr(),
        "cairn mcp: serving {} over stdio (MCP {})",
        ctx.repo_path.display(),
        cairn_mcp::PROTOCOL_VERSION
    );
    server.serve(io::stdin().lock(), &mut *ctx.out)?;
    Ok(())
}
