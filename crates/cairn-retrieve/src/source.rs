//! The seam between the pipeline and the repository: where a commit's indexes and nodes
//! come from. `cairn::Repo` implements [`RetrievalSource`]; tests implement it over
//! in-memory indexes.

use std::sync::Arc;

use cairn_core::{CommitId, Node, NodeId};
use cairn_index::CommitIndexes;

/// Why the source could not serve a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The revision does not name a commit (unknown branch, commit, or time).
    #[error("unknown revision `{rev}`: {detail}")]
    UnknownRevision {
        /// The revision as given.
        rev: String,
        /// Why.
        detail: String,
    },
    /// The node is not in the commit.
    #[error("node {0:?} not found in the commit")]
    NodeNotFound(NodeId),
    /// Storage failed (I/O, corruption). The message names the object.
    #[error("storage error: {0}")]
    Storage(String),
}

/// Loads full nodes of one commit (for rendering the packed items).
pub trait NodeLoader: Send + Sync {
    /// The node with `id` in this commit.
    fn load(&self, id: &NodeId) -> Result<Node, SourceError>;
}

/// A commit resolved for reading: its id, its timestamp (the default validity time of a
/// retrieval, so nothing reads the wall clock), its indexes, and its nodes.
#[derive(Clone)]
pub struct ResolvedCommit {
    /// The commit.
    pub commit: CommitId,
    /// The commit's timestamp, ms since the epoch.
    pub timestamp_ms: i64,
    /// Its indexes (built or loaded by the source).
    pub indexes: Arc<CommitIndexes>,
    /// Its nodes.
    pub nodes: Arc<dyn NodeLoader>,
}

/// Where a retrieval reads from.
pub trait RetrievalSource {
    /// Resolves `at` (a revision string as the repo understands it: commit hex or unique
    /// prefix, branch, `HEAD`, `HEAD~N`, `BRANCH@{T_MS}` for "head of BRANCH as of time
    /// T") — `None` means the current branch head — and returns the commit with its
    /// indexes. Implementations build indexes on first use and cache them.
    fn resolve(&self, at: Option<&str>) -> Result<ResolvedCommit, SourceError>;
}

impl<S: RetrievalSource + ?Sized> RetrievalSource for &S {
    fn resolve(&self, at: Option<&str>) -> Result<ResolvedCommit, SourceError> {
        (**self).resolve(at)
    }
}

impl<S: RetrievalSource + ?Sized> RetrievalSource for Arc<S> {
    fn resolve(&self, at: Option<&str>) -> Result<ResolvedCommit, SourceError> {
        (**self).resolve(at)
    }
}
