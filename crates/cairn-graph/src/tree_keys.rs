//! The keys of the node and edge trees, decoded in one place.
//!
//! A node-tree key is a node id's UTF-8 bytes; an edge-tree key is
//! `u16 len ‖ first id ‖ u16 len ‖ kind ‖ second id` (storage-format §4), with the source
//! first in the forward tree and the target first in the reverse tree. Keys are validated
//! before they are written, so a key that does not decode was damaged in storage: it is a
//! [`GraphError::Corrupt`] naming the tree it was read from, never an invalid-argument
//! error and never skipped.

use cairn_core::codec::split_edge_tree_key;
use cairn_core::{EdgeKey, Hash, NodeId};

use crate::GraphError;

/// Which tree a key was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// The node tree (node id → node object).
    Nodes,
    /// The forward edge tree (source first).
    Edges,
    /// The reverse edge tree (target first).
    EdgesIn,
}

impl Tree {
    /// The tree's name in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Tree::Nodes => "node tree",
            Tree::Edges => "edge tree",
            Tree::EdgesIn => "reverse edge tree",
        }
    }
}

fn corrupt(tree: Tree, root: Option<Hash>, key: &[u8], what: &str) -> GraphError {
    let shown: String = key.iter().take(48).map(|b| format!("{b:02x}")).collect();
    GraphError::Corrupt {
        kind: tree.name(),
        hash: root.unwrap_or(Hash::ZERO),
        detail: format!(
            "it holds a key that is not {what} (bytes {shown}{})",
            if key.len() > 48 { "…" } else { "" }
        ),
    }
}

/// The node id a node-tree key holds; `root` is the tree the key was read from.
pub fn node_id(root: Option<Hash>, key: &[u8]) -> Result<NodeId, GraphError> {
    std::str::from_utf8(key)
        .ok()
        .and_then(|s| NodeId::new(s).ok())
        .ok_or_else(|| corrupt(Tree::Nodes, root, key, "a node id"))
}

/// The edge an edge-tree key names, source and target in place whichever `tree`
/// ([`Tree::Edges`] or [`Tree::EdgesIn`]) it was read from.
pub fn edge_key(tree: Tree, root: Option<Hash>, key: &[u8]) -> Result<EdgeKey, GraphError> {
    let (a, kind, b) = split_edge_tree_key(key).ok_or_else(|| corrupt(tree, root, key, "an edge key"))?;
    let (source, target) = if tree == Tree::EdgesIn { (b, a) } else { (a, b) };
    Ok(EdgeKey { source, kind, target })
}
