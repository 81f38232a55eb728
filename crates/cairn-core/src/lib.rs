//! # cairn-core
//!
//! The bottom layer of Cairn: typed ids ([`Hash`](struct@Hash), [`NodeId`], [`CommitId`]), the data
//! model ([`Node`], [`Edge`], [`Value`], [`Validity`], [`SparseVector`]), its validation
//! rules and limits, the stored object types ([`Commit`], [`TreeNode`]) and the one module
//! ([`codec`]) that defines every hashed byte.
//!
//! Nothing here does I/O. Every other Cairn crate builds on these types.

#![warn(missing_docs)]

pub mod codec;
pub mod ids;
pub mod level;
pub mod limits;
pub mod model;
pub mod objects;
pub mod value;

pub use codec::DecodeError;
pub use ids::{CommitId, Hash, NodeId, ParseIdError};
pub use model::{Edge, EdgeKey, Node, SparseVector, Subject, ValidationError, Validity};
pub use objects::{Commit, TreeEntry, TreeNode};
pub use value::Value;
