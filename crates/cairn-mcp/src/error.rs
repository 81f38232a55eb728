//! [`ToolError`]: why a tool call failed. A client receives it as a tool result with
//! `isError: true`, the message as text, and `{"error": {"code", "message"}}` as structured
//! content; the code is stable (it names the kind of failure, not its wording).

use cairn::retrieve::{RetrieveError, SourceError};
use cairn::ErrorKind;

/// A tool call that failed: bad argument values, or a refusal or failure of the library.
/// Nothing was committed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// An argument is missing, of the wrong type, unknown, or out of its domain (a time
    /// that does not parse, two arguments that exclude each other). Code
    /// `invalid_arguments`.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// One of the operations of a `remember` call was refused; `at` names it
    /// (`nodes[2]`, `edges[0]`, `ops[1]`). The code is the library error's.
    #[error("{at}: {source}")]
    Operation {
        /// Which operation.
        at: String,
        /// Why.
        #[source]
        source: cairn::Error,
    },
    /// `expected_head` is not the branch's head: another write came first. Nothing was
    /// committed; read again and retry. Code `conflict`.
    #[error("branch `{branch}` is at {actual}, not at the expected head {expected}: nothing was committed")]
    HeadMoved {
        /// The branch written to.
        branch: String,
        /// The head the caller expected (`none`: an empty branch).
        expected: String,
        /// The head it has (`none`: no commit yet).
        actual: String,
    },
    /// No commit to read: the branch is empty, or its first commit is later than the time
    /// asked for. Code `no_commit`.
    #[error("{0}")]
    NoCommit(String),
    /// The library refused or failed; the code follows its variant.
    #[error(transparent)]
    Repo(#[from] cairn::Error),
    /// A retrieval was refused or failed; the code follows its variant.
    #[error(transparent)]
    Retrieve(#[from] RetrieveError),
}

impl ToolError {
    /// The stable, machine-readable code of this error (snake case), e.g.
    /// `invalid_arguments`, `node_not_found`, `validation`, `conflict`,
    /// `unknown_revision`, `malformed_spec`, `invalid_setting`, `no_lane`.
    ///
    /// ```
    /// use cairn_mcp::ToolError;
    /// assert_eq!(ToolError::InvalidArguments("`id` is missing".into()).code(), "invalid_arguments");
    /// ```
    pub fn code(&self) -> &'static str {
        match self {
            ToolError::InvalidArguments(_) => "invalid_arguments",
            ToolError::Operation { source, .. } => repo_code(source),
            ToolError::HeadMoved { .. } => "conflict",
            ToolError::NoCommit(_) => "no_commit",
            ToolError::Repo(e) => repo_code(e),
            ToolError::Retrieve(e) => retrieve_code(e),
        }
    }
}

fn repo_code(e: &cairn::Error) -> &'static str {
    use cairn::Error as E;
    match e {
        E::Validation(_) => "validation",
        E::NotARepo { .. } => "not_a_repository",
        E::UnknownRevision { .. } => "unknown_revision",
        E::AmbiguousRevision { .. } => "ambiguous_revision",
        E::UnknownBranch(_) => "unknown_branch",
        E::UnknownTag(_) => "unknown_tag",
        E::Conflict { .. } => "conflict",
        E::TimestampBeforeParent { .. } => "timestamp_before_parent",
        E::NodeNotFound { .. } => "node_not_found",
        E::EdgeNotFound { .. } => "edge_not_found",
        E::Import { .. } => "invalid_operation",
        E::InvalidArgument(_) => "invalid_arguments",
        E::InvalidId(_) => "invalid_id",
        E::Retrieve(e) => retrieve_code(e),
        // The rest by the library's one classification: `corrupt`, `storage`, `locked`,
        // `no_space`, `embedder`, `invalid_input`, ...
        _ => e.kind().as_str(),
    }
}

fn retrieve_code(e: &RetrieveError) -> &'static str {
    match e {
        RetrieveError::MalformedSpec { .. } => "malformed_spec",
        RetrieveError::NoLane => "no_lane",
        RetrieveError::InvalidSetting { .. } => "invalid_setting",
        RetrieveError::Index { .. } if ErrorKind::of_retrieve(e) == ErrorKind::InvalidInput => "lane_refused",
        RetrieveError::Source(SourceError::UnknownRevision { .. }) => "unknown_revision",
        _ => ErrorKind::of_retrieve(e).as_str(),
    }
}
