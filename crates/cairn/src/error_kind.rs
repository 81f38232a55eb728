//! [`ErrorKind`]: what a caller can do about an error — the one classification the
//! server, MCP and Python map their codes and exceptions from.

use cairn_graph::GraphError;
use cairn_index::IndexError;
use cairn_retrieve::{RetrieveError, SourceError};
use cairn_store::StoreError;

use crate::embedders::EmbedderError;
use crate::error::Error;

/// The kind of an [`Error`] (or a [`RetrieveError`]): what went wrong, as a caller acts
/// on it. Corruption is never bad input, and bad input never corruption.
///
/// ```
/// use cairn::{ErrorKind, NodeId, Repo};
///
/// let repo = Repo::in_memory()?;
/// let err = repo.resolve("no-such-branch").unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::NotFound);
/// assert_eq!(err.kind().as_str(), "not_found");
/// # Ok::<(), cairn::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request was refused as given (validation, an argument, an import line, a
    /// retrieval spec, a query vector of the wrong shape): fix it; nothing changed.
    InvalidInput,
    /// Something named does not exist: the repository, a revision, branch, tag, node or
    /// edge, an embedder.
    NotFound,
    /// A name is taken: a repository, branch or tag.
    AlreadyExists,
    /// Another writer came first (the branch moved), or a merge has conflicts: read
    /// again and retry, or resolve.
    Conflict,
    /// Stored data is damaged (a checksum, a decode, a missing object): detected, named,
    /// never returned as data. `cairn fsck` says more.
    Corrupt,
    /// The repository is held by another process.
    Locked,
    /// The disk is full: nothing was changed.
    NoSpace,
    /// An embedder (a local model or a service) failed.
    Embedder,
    /// Any other storage or I/O failure.
    Storage,
}

impl ErrorKind {
    /// The kind as a short snake_case code (`invalid_input`, `not_found`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::NotFound => "not_found",
            ErrorKind::AlreadyExists => "already_exists",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Locked => "locked",
            ErrorKind::NoSpace => "no_space",
            ErrorKind::Embedder => "embedder",
            ErrorKind::Storage => "storage",
        }
    }

    /// The kind of a retrieval's error (as [`Retrieval::execute`](cairn_retrieve::Retrieval::execute)
    /// returns it).
    pub fn of_retrieve(e: &RetrieveError) -> ErrorKind {
        match e {
            RetrieveError::Index { source, .. } => of_index(source),
            RetrieveError::Source(s) => match s {
                SourceError::UnknownRevision { .. } | SourceError::NoCommits { .. } => ErrorKind::NotFound,
                SourceError::Corrupt(_) => ErrorKind::Corrupt,
                // A repository's own error keeps its kind (a held lock, a full disk).
                SourceError::Storage(cause) => cause
                    .get()
                    .downcast_ref::<Error>()
                    .map_or(ErrorKind::Storage, Error::kind),
                _ => ErrorKind::Storage,
            },
            RetrieveError::Embedder { .. } => ErrorKind::Embedder,
            _ => ErrorKind::InvalidInput,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// What kind of failure this is (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Validation(_)
            | Error::InvalidArgument(_)
            | Error::InvalidId(_)
            | Error::Import { .. }
            | Error::AmbiguousRevision { .. }
            | Error::TimestampBeforeParent { .. }
            | Error::DeleteCurrentBranch(_) => ErrorKind::InvalidInput,
            Error::NotARepo { .. }
            | Error::UnknownRevision { .. }
            | Error::UnknownBranch(_)
            | Error::UnknownTag(_)
            | Error::UnknownRemote(_)
            | Error::NodeNotFound { .. }
            | Error::EdgeNotFound { .. } => ErrorKind::NotFound,
            Error::AlreadyExists { .. } | Error::BranchExists(_) | Error::TagExists(_) | Error::RemoteExists(_) => {
                ErrorKind::AlreadyExists
            }
            Error::Conflict { .. } | Error::MergeConflicts(_) | Error::NotFastForward { .. } => ErrorKind::Conflict,
            Error::Graph(g) => of_graph(g),
            Error::Store(s) => of_store(s),
            Error::Index(i) => of_index(i),
            Error::Retrieve(r) => ErrorKind::of_retrieve(r),
            Error::Write { .. } | Error::Remote { .. } => ErrorKind::Storage,
            Error::Embedder(e) => of_embedder(e),
        }
    }
}

impl EmbedderError {
    /// What kind of failure this is (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        of_embedder(self)
    }
}

fn of_store(e: &StoreError) -> ErrorKind {
    match e {
        StoreError::Corrupt { .. } => ErrorKind::Corrupt,
        StoreError::NoSpace { .. } => ErrorKind::NoSpace,
        StoreError::Locked { .. } => ErrorKind::Locked,
        StoreError::BadLocation { .. } => ErrorKind::InvalidInput,
        _ => ErrorKind::Storage,
    }
}

fn of_graph(e: &GraphError) -> ErrorKind {
    match e {
        // An object a tree or commit names is gone: damage, not a missing user item.
        GraphError::NotFound { .. } | GraphError::Corrupt { .. } | GraphError::BadRef { .. } => ErrorKind::Corrupt,
        GraphError::TooLarge { .. } | GraphError::BadBranchName { .. } => ErrorKind::InvalidInput,
        GraphError::Store(s) => of_store(s),
        _ => ErrorKind::Storage,
    }
}

fn of_index(e: &IndexError) -> ErrorKind {
    match e {
        IndexError::DimensionMismatch { .. }
        | IndexError::NonFiniteQuery { .. }
        | IndexError::UnknownModel { .. }
        | IndexError::BadSparseQuery { .. } => ErrorKind::InvalidInput,
        IndexError::BadStoredIndex(_)
        | IndexError::UnreadableRow(_)
        | IndexError::UnreadableText(_)
        | IndexError::Inconsistent(_) => ErrorKind::Corrupt,
        _ => ErrorKind::Storage,
    }
}

fn of_embedder(e: &EmbedderError) -> ErrorKind {
    match e {
        EmbedderError::InvalidName { .. } | EmbedderError::Config { .. } | EmbedderError::DimensionMismatch { .. } => {
            ErrorKind::InvalidInput
        }
        EmbedderError::Unknown(_) => ErrorKind::NotFound,
        EmbedderError::Damaged { .. } => ErrorKind::Corrupt,
        EmbedderError::Repo(e) => e.kind(),
        _ => ErrorKind::Embedder,
    }
}
