//! # cairn-graph
//!
//! The versioned graph: a history-independent Merkle search tree ([`mst`]) holding nodes
//! and edges, seen through typed trees that encode and decode their keys in one place
//! ([`trees`]: [`NodeTree`], [`EdgeTree`], [`ReverseEdgeTree`]), typed access to stored
//! objects with integrity checks ([`objects`]), commits and their history ([`history`]),
//! branch refs moved by compare-and-swap ([`refs`]), the bytes of the records that
//! follow them (the reflog record, [`reflog_entry`]; the time index value,
//! [`time_index`]), and structural diffs that skip identical subtrees ([`mst::diff`]).

#![warn(missing_docs)]

pub mod error;
pub mod history;
pub mod mst;
pub mod objects;
pub mod reflog_entry;
pub mod refs;
pub mod time_index;
pub mod tree_keys;
pub mod trees;

pub use error::GraphError;
pub use mst::{Change, Mutation};
pub use objects::{Objects, PendingWrites};
pub use reflog_entry::{RefAction, RefLogEntry};
pub use refs::{BranchName, Refs};
pub use trees::{EdgeTree, NodeTree, ReverseEdgeTree, TreeChange};
