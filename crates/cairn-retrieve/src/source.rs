//! The seam between the pipeline and the repository: where a commit's index view comes
//! from. `cairn::Repo` implements [`RetrievalSource`]; tests implement it over in-memory
//! views.

use std::sync::Arc;

use cairn_core::CommitId;
use cairn_index::{CommitIndexes, IndexNeeds};

use crate::embed::{EmbedError, ModelEmbedder};

/// Why the source could not serve a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The revision does not name a commit (unknown branch, commit, or time).
    #[error("unknown revision `{rev}`: {detail}")]
    UnknownRevision {
        /// The revision as given.
        rev: String,
        /// Why.
        detail: String,
    },
    /// Storage failed (I/O, or the source's own failure): the source's own typed error,
    /// kept as the [`std::error::Error::source`] (a `cairn::Error`, for a repository).
    #[error("storage error: {0}")]
    Storage(#[source] SourceCause),
    /// Stored data the retrieval needs is damaged (detected, never returned as data).
    /// The message names what.
    #[error("damaged data: {0}")]
    Corrupt(String),
    /// The current branch has no commits yet (a new repository, an agent's empty memory).
    /// A retrieval at the head answers it with no items and a
    /// [`WarningCode::EmptyRepository`](crate::WarningCode::EmptyRepository) warning
    /// instead of failing.
    #[error("the current branch `{branch}` has no commits yet")]
    NoCommits {
        /// The branch.
        branch: String,
    },
}

/// The error a [`RetrievalSource`] met, as that source's own type: shared (a
/// [`RetrieveError`](crate::RetrieveError) is `Clone`), compared by its message, and
/// reachable through [`SourceCause::get`] or `downcast_ref` on it.
///
/// ```
/// use cairn_retrieve::{SourceCause, SourceError};
///
/// let io = std::io::Error::other("disk gone");
/// let e = SourceError::Storage(SourceCause::new(io));
/// let cause = match &e { SourceError::Storage(c) => c, _ => unreachable!() };
/// assert!(cause.get().downcast_ref::<std::io::Error>().is_some());
/// assert_eq!(e.to_string(), "storage error: disk gone");
/// ```
#[derive(Debug, Clone)]
pub struct SourceCause(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl SourceCause {
    /// Wraps a source's error.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> SourceCause {
        SourceCause(Arc::new(e))
    }

    /// A cause that is only a message (the pipeline's own refusals).
    pub fn message(m: impl Into<String>) -> SourceCause {
        /// A message as an error.
        #[derive(Debug)]
        struct Message(String);
        impl std::fmt::Display for Message {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::error::Error for Message {}
        SourceCause(Arc::new(Message(m.into())))
    }

    /// The source's error.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl std::fmt::Display for SourceCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SourceCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for SourceCause {
    /// By message: two causes read alike compare equal.
    fn eq(&self, other: &SourceCause) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for SourceCause {}

/// A commit resolved for reading: its id, its timestamp (the default validity time of a
/// retrieval, so nothing reads the wall clock), and its index view with the parts the
/// query needs.
#[derive(Clone)]
pub struct ResolvedCommit {
    /// The commit.
    pub commit: CommitId,
    /// The commit's timestamp, ms since the epoch.
    pub timestamp_ms: i64,
    /// Its index view (every part the query's [`IndexNeeds`] named is loaded).
    pub indexes: Arc<CommitIndexes>,
    /// Derived data the source found damaged or missing and rebuilt on the way (each
    /// becomes a `derived_rebuilt` warning in the result).
    pub repairs: Vec<String>,
}

/// Where a retrieval reads from.
pub trait RetrievalSource {
    /// Resolves `at` (a revision string as the repo understands it: commit hex or unique
    /// prefix, branch, `HEAD`, `HEAD~N`, `BRANCH@{T}` for "head of BRANCH as of time T")
    /// — `None` means the current branch head — and returns the commit with an index view
    /// holding at least the parts `needs` names. Implementations load or build the parts
    /// and cache them.
    fn resolve(&self, at: Option<&str>, needs: &IndexNeeds) -> Result<ResolvedCommit, SourceError>;

    /// [`RetrievalSource::resolve`] for a commit already resolved (a retrieval that needs
    /// more parts of the same commit asks again by id, never by a revision that may have
    /// moved). The default spells the id as hex for `resolve`; a source that can look a
    /// commit up by id does so without parsing it again.
    fn resolve_commit(&self, commit: &CommitId, needs: &IndexNeeds) -> Result<ResolvedCommit, SourceError> {
        self.resolve(Some(&commit.to_hex()), needs)
    }

    /// The embedder that turns a retrieval's query `text` into a dense lane, as
    /// `(dense model, embedder)`: the one called `name` (the spec's `embedder`), or with
    /// `None` the source's default — `Ok(None)` when it has none. This is the one place
    /// an interface's query embedding is decided: every retrieval over the source asks it
    /// (unless the spec gives a `vector`, says `"embed": false`, or the builder was given
    /// an embedder with [`Retrieval::embed_text_with`](crate::Retrieval::embed_text_with)).
    ///
    /// A named embedder that cannot be had, or that fails on the text, fails the
    /// retrieval ([`RetrieveError::Embedder`](crate::RetrieveError::Embedder)); the default
    /// one failing leaves the query without its dense lane and says so in a
    /// [`WarningCode::QueryNotEmbedded`](crate::WarningCode::QueryNotEmbedded) warning.
    /// Should build nothing expensive yet (the embedder is called only when a text is
    /// embedded).
    ///
    /// The default: no default embedder, and no embedder by any name.
    fn query_embedder(&self, name: Option<&str>) -> Result<Option<ModelEmbedder>, EmbedError> {
        match name {
            None => Ok(None),
            Some(n) => Err(EmbedError::new(format!(
                "the retrieval source has no query embedder `{n}`"
            ))),
        }
    }
}

impl<S: RetrievalSource + ?Sized> RetrievalSource for &S {
    fn resolve(&self, at: Option<&str>, needs: &IndexNeeds) -> Result<ResolvedCommit, SourceError> {
        (**self).resolve(at, needs)
    }

    fn resolve_commit(&self, commit: &CommitId, needs: &IndexNeeds) -> Result<ResolvedCommit, SourceError> {
        (**self).resolve_commit(commit, needs)
    }

    fn query_embedder(&self, name: Option<&str>) -> Result<Option<ModelEmbedder>, EmbedError> {
        (**self).query_embedder(name)
    }
}

impl<S: RetrievalSource + ?Sized> RetrievalSource for Arc<S> {
    fn resolve(&self, at: Option<&str>, needs: &IndexNeeds) -> Result<ResolvedCommit, SourceError> {
        (**self).resolve(at, needs)
    }

    fn resolve_commit(&self, commit: &CommitId, needs: &IndexNeeds) -> Result<ResolvedCommit, SourceError> {
        (**self).resolve_commit(commit, needs)
    }

    fn query_embedder(&self, name: Option<&str>) -> Result<Option<ModelEmbedder>, EmbedError> {
        (**self).query_embedder(name)
    }
}
