//! [`CliError`]: every way a command can fail. Its `Display` is what the user reads after
//! `error: `, so each variant says what it is about.

use std::io;
use std::path::PathBuf;

/// A command's failure; `main` prints it and exits with code 1.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The library refused or failed (its message names the node, commit, line...).
    #[error(transparent)]
    Cairn(#[from] cairn::Error),
    /// An input file could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Writing to standard output failed.
    #[error("cannot write output: {0}")]
    Output(#[from] io::Error),
    /// Encoding `--json` output failed (or writing it did).
    #[error("cannot write JSON output: {0}")]
    Json(#[from] serde_json::Error),
    /// `fsck` found problems (already listed on standard output).
    #[error("fsck found {0} problem(s)")]
    FsckProblems(usize),
    /// A retrieval was refused or failed (its message names the setting, lane or revision).
    #[error(transparent)]
    Retrieve(#[from] cairn::retrieve::RetrieveError),
    /// An input file's content is not what the command expects.
    #[error("{}: {detail}", path.display())]
    BadInput {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// `retrieve --batch`: some lines failed (each already reported on standard error).
    #[error("{failed} of {total} batch line(s) failed")]
    BatchFailed {
        /// Lines that failed.
        failed: usize,
        /// Non-blank lines read.
        total: usize,
    },
    /// An evaluation collection could not be loaded (the message names the file).
    #[error(transparent)]
    EvalCollection(#[from] cairn_eval::EvalError),
    /// An evaluation query failed (the message names the query).
    #[error(transparent)]
    EvalQuery(#[from] cairn_eval::QueryFailed),
    /// A command-specific refusal that is not the library's (e.g. `eval --links` on a
    /// collection without links).
    #[error("{0}")]
    Refused(String),
}

impl CliError {
    /// What to do next, where the message alone does not say: printed after the error as
    /// `hint: …`.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            CliError::Cairn(cairn::Error::NotARepo { .. }) => Some(
                "create one with `cairn init` (or `cairn --repo PATH init`), or point at an existing one with `--repo PATH` or the CAIRN_REPO environment variable",
            ),
            _ => None,
        }
    }

    /// True if standard output was closed by its reader (`cairn log | head`).
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            CliError::Output(e) => e.kind() == io::ErrorKind::BrokenPipe,
            CliError::Json(e) => e.io_error_kind() == Some(io::ErrorKind::BrokenPipe),
            _ => false,
        }
    }
}
