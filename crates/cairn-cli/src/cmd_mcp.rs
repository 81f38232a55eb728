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
    (`tools/list` gives their JSON Schemas). The repository stays open (locked) for the whole session; \
    the server exits at the end of standard input."
)]
pub struct Args {
    /// Author of the commits the tools make when a call names none [default: `cairn`].
    #[arg(long, value_name = "NAME", env = "CAIRN_AUTHOR")]
    author: Option<String>,
    /// Create the repository first if there is none at --repo.
    #[arg(long)]
    init: bool,
}

/// Serves MCP on stdin/stdout until stdin ends.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = match ctx.open() {
        Err(CliError::Cairn(cairn::Error::NotARepo { .. })) if args.init => cairn::Repo::init(&ctx.repo_path)?,
        other => other?,
    };
    let mut server = cairn_mcp::Server::new(repo);
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
