//! The error type of the `cairn` API.

use cairn_core::{CommitId, EdgeKey, NodeId, ParseIdError, ValidationError};
use cairn_graph::GraphError;
use cairn_index::IndexError;
use cairn_retrieve::RetrieveError;
use cairn_store::StoreError;

/// Everything that can go wrong in a [`Repo`](crate::Repo) call. Every variant says what
/// it is about (node, edge, commit, branch, file line), so a message alone is actionable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Input refused by validation; nothing was changed.
    #[error("invalid input: {0}")]
    Validation(#[from] ValidationError),
    /// No repository at the path.
    #[error("no cairn repository at {path}")]
    NotARepo {
        /// The path.
        path: String,
    },
    /// `init` on a path that already holds a repository.
    #[error("a cairn repository already exists at {path}")]
    AlreadyExists {
        /// The path.
        path: String,
    },
    /// A revision that names no commit.
    #[error("unknown revision `{rev}`: {detail}")]
    UnknownRevision {
        /// The revision as given.
        rev: String,
        /// Why it did not resolve.
        detail: String,
    },
    /// A hex prefix that matches several commits.
    #[error("ambiguous revision `{prefix}`: matches {count} commits")]
    AmbiguousRevision {
        /// The prefix.
        prefix: String,
        /// How many commits match.
        count: usize,
    },
    /// A branch that does not exist.
    #[error("unknown branch `{0}`")]
    UnknownBranch(String),
    /// Creating a branch that exists.
    #[error("branch `{0}` already exists")]
    BranchExists(String),
    /// A tag that does not exist.
    #[error("unknown tag `{0}`")]
    UnknownTag(String),
    /// Creating a tag that exists (tags never move: delete it first).
    #[error("tag `{0}` already exists (tags never move: delete it first)")]
    TagExists(String),
    /// A remote that is not configured ([`Repo::remote_add`](crate::Repo::remote_add)).
    #[error("unknown remote `{0}`")]
    UnknownRemote(String),
    /// Adding a remote whose name is taken.
    #[error("remote `{0}` already exists")]
    RemoteExists(String),
    /// A push refused: the remote's branch holds a commit the pushed head does not
    /// descend from (or one never fetched here), or it moved during the push. Nothing
    /// changed on the remote's refs; fetch, merge, push again.
    #[error("push to `{remote}` refused: its branch `{branch}` is at {remote_head}, which the pushed head does not contain (fetch and merge first, or force)")]
    NotFastForward {
        /// The remote.
        remote: String,
        /// The branch.
        branch: String,
        /// The remote branch's head (hex).
        remote_head: String,
    },
    /// A `cairn serve` remote could not be reached, or answered with an error (other
    /// than a branch that moved under a push: [`Error::NotFastForward`]), or sent
    /// something malformed or damaged (an object that does not match its name).
    #[error("remote {url}: {detail}{}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Remote {
        /// The remote's URL.
        url: String,
        /// The HTTP status of an error answer.
        status: Option<u16>,
        /// What happened.
        detail: String,
    },
    /// Deleting the current branch.
    #[error("cannot delete the current branch `{0}`; switch to another branch first")]
    DeleteCurrentBranch(String),
    /// The branch moved since the transaction started (another writer committed first):
    /// nothing was changed; retry on the new head.
    #[error("branch `{branch}` moved: the transaction started at {expected}, the branch is now at {actual}")]
    Conflict {
        /// The branch.
        branch: String,
        /// Head when the transaction started (`none` for an empty branch).
        expected: String,
        /// Head now.
        actual: String,
    },
    /// A commit whose timestamp is earlier than its parent's.
    #[error("commit timestamp {timestamp_ms} is earlier than its parent's {parent_ms}; timestamps on a branch never go backwards")]
    TimestampBeforeParent {
        /// The timestamp asked for.
        timestamp_ms: i64,
        /// The parent's.
        parent_ms: i64,
    },
    /// A node that does not exist where it was expected.
    #[error("node \"{id}\" not found{}", at.map(|c| format!(" at commit {}", c.short())).unwrap_or_default())]
    NodeNotFound {
        /// The node.
        id: NodeId,
        /// The commit read, if any.
        at: Option<CommitId>,
    },
    /// An edge that does not exist where it was expected.
    #[error("edge {key} not found")]
    EdgeNotFound {
        /// The edge.
        key: EdgeKey,
    },
    /// A bad line in an import file; nothing was imported.
    #[error("line {line}: {detail}")]
    Import {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        detail: String,
        /// The typed error behind `detail` when the line parsed but the operation it
        /// names was refused (a validation error, a node that does not exist, …); `None`
        /// for a line that does not read or parse.
        #[source]
        source: Option<Box<Error>>,
    },
    /// A bad argument (e.g. an empty commit message where one is required).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A graph-layer failure (missing or corrupt object, bad ref). A store failure under
    /// it is [`Error::Store`], never this.
    #[error(transparent)]
    Graph(GraphError),
    /// A store failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An index failure (bad query, bad stored index).
    #[error(transparent)]
    Index(#[from] IndexError),
    /// An id that does not parse: a node id out of bounds, a hash or commit id that is not
    /// 64 hex digits.
    #[error("invalid id: {0}")]
    InvalidId(#[from] ParseIdError),
    /// A retrieval that could not run (a malformed spec, a setting out of range, a lane
    /// an index refused, a revision that does not resolve).
    #[error(transparent)]
    Retrieve(#[from] RetrieveError),
    /// Writing output the caller gave (an export's writer) failed.
    #[error("cannot write {what}: {source}")]
    Write {
        /// What was being written.
        what: &'static str,
        /// The writer's error.
        #[source]
        source: std::io::Error,
    },
    /// A merge whose conflicts were not resolved.
    #[error("merge has {0} conflict(s); resolve them or choose a strategy")]
    MergeConflicts(usize),
    /// Embedding on write failed (the embedder could not be built, failed on a text, or
    /// made vectors of another dimension than the repository's): nothing was committed.
    #[error(transparent)]
    Embedder(Box<crate::embedders::EmbedderError>),
}

impl From<GraphError> for Error {
    /// A store failure is reported as one ([`Error::Store`]), whichever layer met it, so
    /// that `NoSpace`, `Locked` or `Corrupt` from the store match in one place.
    fn from(e: GraphError) -> Error {
        match e {
            GraphError::Store(e) => Error::Store(e),
            other => Error::Graph(other),
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
