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
}

impl CliError {
    /// True if standard output was closed by its reader (`cairn log | head`).
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            CliError::Output(e) => e.kind() == io::ErrorKind::BrokenPipe,
            CliError::Json(e) => e.io_error_kind() == Some(io::ErrorKind::BrokenPipe),
            _ => false,
        }
    }
}
