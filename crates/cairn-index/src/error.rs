//! Index errors.

/// Errors from building, loading or querying an index.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// A query vector's dimension differs from the model's.
    #[error("query vector for model `{model}` has {got} dimensions, the index has {expected}")]
    DimensionMismatch {
        /// Model name.
        model: String,
        /// The model's dimension.
        expected: usize,
        /// The query's dimension.
        got: usize,
    },
    /// A NaN or infinite query component.
    #[error("query vector for model `{model}` has a non-finite value at position {position}")]
    NonFiniteQuery {
        /// Model name.
        model: String,
        /// Position of the first bad value.
        position: usize,
    },
    /// No node of the commit has a vector of this model.
    #[error("unknown {kind} model `{model}` (the commit has no vectors for it)")]
    UnknownModel {
        /// "dense" or "sparse".
        kind: &'static str,
        /// Model name.
        model: String,
    },
    /// A sparse query breaking the sparse-vector rules.
    #[error("sparse query for model `{model}`: {detail}")]
    BadSparseQuery {
        /// Model name.
        model: String,
        /// What is wrong.
        detail: String,
    },
    /// Stored derived bytes that do not decode, or carry another key. The repository
    /// rebuilds the entry from the data.
    #[error("stored index data is invalid: {0}")]
    BadStoredIndex(String),
    /// A dense row left on disk could neither be read from its stored part nor from its
    /// node object (the data itself is damaged or missing).
    #[error("a dense row cannot be read: {0}")]
    UnreadableRow(String),
    /// A node text left on disk could neither be read from its stored core part nor
    /// from its node object (the data itself is damaged or missing).
    #[error("a node text cannot be read: {0}")]
    UnreadableText(String),
    /// Parts that do not fit together (a bug in the caller).
    #[error("index parts are inconsistent: {0}")]
    Inconsistent(String),
    /// A query needed a part the view was assembled without (a bug in the caller: the
    /// retrieval asks its source for every part its lanes read).
    #[error("index part `{0}` is not loaded in this view")]
    NotLoaded(String),
}
