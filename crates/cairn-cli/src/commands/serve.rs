//! `cairn serve`: an HTTP server over the repository (or one repository per tenant), so
//! that many processes share it; `cairn serve token add|hash` manages bearer tokens.
//! The server itself is the `cairn-server` crate.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use cairn_server::{Config, Repos, Server, ServerOptions};
use clap::Subcommand;

use crate::error::CliError;
use crate::Ctx;

/// Arguments of `cairn serve`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
#[command(
    after_help = "Without --config there is no authentication, and the server only binds to a loopback \
    address. With --config FILE, every repository route needs `Authorization: Bearer <token>` of its \
    tenant (`cairn serve token add TENANT --config FILE` makes one). The one repository of --repo is \
    tenant `default`; with --root DIR, tenant T is the repository DIR/T at /t/T/... \
    SIGTERM or ctrl-c stops accepting, finishes requests and commits in flight, and exits."
)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// Serve one repository per tenant: DIR/<tenant>, at /t/<tenant>/... (instead of --repo).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    bind: SocketAddr,
    /// Configuration file: tenants and their token hashes (JSON).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Largest request body, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    max_body_mib: usize,
    /// Longest time a request may take, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    timeout: f64,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Manage bearer tokens.
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
}

#[derive(Debug, Subcommand)]
enum TokenAction {
    /// Make a new token for TENANT, store its hash in the config file (created if
    /// missing) and print the token: it is shown this once.
    Add {
        /// The tenant (1 to 64 of A-Z a-z 0-9 _ -).
        tenant: String,
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Print the hash of a token read from standard input (for a config file written by
    /// hand).
    Hash,
}

/// Runs the server, or the token action.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    match args.action {
        Some(Action::Token {
            action: TokenAction::Add { tenant, config },
        }) => {
            let mut c = Config::load_or_default(&config).map_err(refused)?;
            let token = c.add_token(&tenant).map_err(refused)?;
            c.save(&config).map_err(refused)?;
            writeln!(ctx.out, "{token}")?;
            let _ = writeln!(
                std::io::stderr(),
                "added a token for tenant `{tenant}` to {} (only its hash is stored: keep the token now)",
                config.display()
            );
            Ok(())
        }
        Some(Action::Token {
            action: TokenAction::Hash,
        }) => {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            writeln!(ctx.out, "{}", cairn_server::hash_token(line.trim()))?;
            Ok(())
        }
        None => serve(ctx, args),
    }
}

fn refused(e: impl std::fmt::Display) -> CliError {
    CliError::Refused(e.to_string())
}

fn serve(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let config = args.config.as_deref().map(Config::load).transpose().map_err(refused)?;
    let options = ServerOptions {
        max_body_bytes: args.max_body_mib.saturating_mul(1 << 20),
        request_timeout: Duration::try_from_secs_f64(args.timeout.max(0.001)).unwrap_or(Duration::MAX),
        config,
    };
    let repos = match args.root {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(CliError::Refused(format!("--root {}: not a directory", dir.display())));
            }
            Repos::Root(dir)
        }
        None => Repos::Single(ctx.open()?),
    };
    let out = &mut *ctx.out;
    let mut listening_error = None;
    cairn_server::serve_until_signal(Server::new(repos, options), args.bind, |addr| {
        // The first line of output: scripts (and tests) read the port from it.
        let r = writeln!(out, "listening on http://{addr}").and_then(|()| out.flush());
        listening_error = r.err();
    })
    .map_err(refused)?;
    match listening_error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
