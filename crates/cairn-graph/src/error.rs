//! Errors of the graph layer.

use cairn_core::Hash;
use cairn_store::StoreError;

/// Errors from reading or writing the versioned graph.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// An object the graph refers to is absent from the store.
    #[error("object {hash} of type {kind} not found")]
    NotFound {
        /// Object kind.
        kind: &'static str,
        /// Its hash.
        hash: Hash,
    },
    /// A stored object failed its checksum, its hash, or decoding.
    #[error("object {hash} of type {kind} is corrupt: {detail}")]
    Corrupt {
        /// Expected object kind.
        kind: &'static str,
        /// Its hash (the key it was stored under).
        hash: Hash,
        /// What check failed.
        detail: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A ref holds bytes that are not a valid value.
    #[error("ref {name} holds an invalid value: {detail}")]
    BadRef {
        /// Ref name.
        name: String,
        /// What is wrong.
        detail: String,
    },
    /// A write would store an object over the decoder's limit, so it could never be read
    /// back. Only a tree node can get there: the keys of one level between two keys of a
    /// higher level share one tree node, and ids chosen to share a level can fill it.
    #[error(
        "a {kind} would be {bytes} bytes, over the {max}-byte object limit: too many keys share one \
         level of the tree between two keys of a higher level (ids chosen adversarially?); nothing was written"
    )]
    TooLarge {
        /// Object kind.
        kind: &'static str,
        /// Its encoded size.
        bytes: usize,
        /// The limit (`MAX_OBJECT_BYTES`).
        max: usize,
    },
    /// An invalid branch name.
    #[error("invalid branch name {name:?}: {detail}")]
    BadBranchName {
        /// The name given.
        name: String,
        /// Why it is refused.
        detail: &'static str,
    },
}

impl GraphError {
    /// Maps a store error on reading object `hash` of `kind` to the most precise error.
    pub(crate) fn from_store(err: StoreError, kind: &'static str, hash: Hash) -> GraphError {
        match err {
            StoreError::Corrupt { detail, .. } => GraphError::Corrupt { kind, hash, detail },
            other => GraphError::Store(other),
        }
    }
}
