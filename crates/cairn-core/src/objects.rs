//! The stored object types besides nodes and edges: [`TreeNode`] (a node of the Merkle
//! search tree that indexes nodes and edges) and [`Commit`].
//!
//! These are plain data; the tree algorithms live in `cairn-graph`, the bytes in
//! [`codec`](crate::codec).

use serde::{Deserialize, Serialize};

use crate::ids::{CommitId, Hash};

/// One key of a [`TreeNode`]: the key, the hash of the object it maps to, and the subtree
/// of keys between this key and the next one (if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// The key (a node id's bytes, or an encoded edge key).
    pub key: Vec<u8>,
    /// Hash of the node or edge object stored under the key.
    pub value: Hash,
    /// Subtree holding the keys greater than `key` and less than the next entry's key.
    pub right: Option<Hash>,
}

/// A node of a Merkle search tree.
///
/// Every key has a level derived from the hash of the key alone (see `storage-format.md`);
/// a tree node holds the keys of one level in its range, in increasing order, and links to
/// subtrees holding the keys of lower levels between them. The shape is therefore a
/// function of the key set, never of the order of writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// The level shared by all keys of this node.
    pub level: u8,
    /// Subtree holding the keys less than the first entry's key.
    pub left: Option<Hash>,
    /// At least one entry, strictly increasing by key.
    pub entries: Vec<TreeEntry>,
}

/// A commit: a snapshot of the graph (the roots of its node and edge trees) with its
/// parents and metadata. Its [`CommitId`] is the hash of its encoding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// Parent commits: none for a root commit, one usually, two or more for a merge.
    pub parents: Vec<CommitId>,
    /// Root of the node tree (`None`: no nodes).
    pub node_root: Option<Hash>,
    /// Root of the edge tree, keyed by (source, kind, target) (`None`: no edges).
    pub edge_root: Option<Hash>,
    /// Root of the reverse edge tree, keyed by (target, kind, source), mapping to the same
    /// edge objects: finds a node's incoming edges without a scan.
    pub edge_in_root: Option<Hash>,
    /// Number of nodes in the node tree.
    pub node_count: u64,
    /// Number of edges in the edge tree.
    pub edge_count: u64,
    /// Who made the commit.
    pub author: String,
    /// Why.
    pub message: String,
    /// When, in milliseconds since the Unix epoch (transaction time).
    pub timestamp_ms: i64,
    /// Number of first-parent ancestors (0 for a root commit): the commit's position on
    /// its branch's first-parent chain.
    pub generation: u64,
    /// Retired with index format 2 (storage-format §3.4, §7.5): written `None` and never
    /// read. Older commits may hold the commit an HNSW base was built over (`Some(0³²)`
    /// meaning the commit itself); the field stays so their bytes, and so their ids,
    /// still decode.
    pub index_base: Option<CommitId>,
    /// Retired with `index_base`: written 0 and never read.
    pub changes_since_base: u64,
}
