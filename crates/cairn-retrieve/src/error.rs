//! Retrieval errors: one enum, each variant naming what was wrong and where.

use cairn_index::IndexError;

use crate::source::SourceError;

/// Why a retrieval could not run. Bad input is always one of these, never a panic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RetrieveError {
    /// A JSON retrieval spec that does not parse (syntax, unknown field, wrong type).
    #[error("malformed retrieval spec: {message}")]
    MalformedSpec {
        /// The parser's message (it names the field and the position).
        message: String,
    },
    /// The spec has no lane to rank with.
    #[error("a retrieval needs at least one lane: `text`, `vector` or `sparse` (or `list` mode, for the gates alone)")]
    NoLane,
    /// A setting outside its allowed range, or settings that contradict each other.
    #[error("invalid retrieval setting `{field}`: {reason}")]
    InvalidSetting {
        /// The setting, as a path into the spec (`limit`, `expand.tau`, `where[1].values`).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An index refused a lane's query (unknown model, wrong dimension, non-finite value).
    #[error("lane `{lane}`: {source}")]
    Index {
        /// The lane (`dense:<model>`, `sparse:<model>` or `text`).
        lane: String,
        /// The index's error.
        #[source]
        source: IndexError,
    },
    /// The source could not resolve the commit or load a node.
    #[error("retrieval source: {0}")]
    Source(#[from] SourceError),
    /// The embedder given for a dense model failed on the query text.
    #[error("embedder for dense model `{model}` failed: {message}")]
    Embedder {
        /// The dense model.
        model: String,
        /// The embedder's message.
        message: String,
    },
}

impl RetrieveError {
    /// An [`RetrieveError::InvalidSetting`] for `field`.
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> RetrieveError {
        RetrieveError::InvalidSetting {
            field: field.into(),
            reason: reason.into(),
        }
    }
}
