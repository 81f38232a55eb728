//! The result of [`Repo::diff`](crate::Repo::diff).

use cairn_core::{CommitId, EdgeKey, Hash, NodeId};
use serde::Serialize;

/// How one node or edge differs between two commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Present only in the second commit.
    Added,
    /// Present only in the first commit.
    Removed,
    /// Present in both with different content.
    Changed,
}

impl ChangeKind {
    fn of(before: Option<Hash>, after: Option<Hash>) -> ChangeKind {
        match (before, after) {
            (None, _) => ChangeKind::Added,
            (_, None) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        }
    }
}

/// A node that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeChange {
    /// The node.
    pub id: NodeId,
    /// How it differs.
    pub kind: ChangeKind,
    /// Its object hash in the first commit.
    pub before: Option<Hash>,
    /// Its object hash in the second commit.
    pub after: Option<Hash>,
}

impl NodeChange {
    pub(crate) fn new(id: NodeId, before: Option<Hash>, after: Option<Hash>) -> NodeChange {
        NodeChange {
            id,
            kind: ChangeKind::of(before, after),
            before,
            after,
        }
    }
}

/// An edge that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EdgeChange {
    /// The edge.
    pub key: EdgeKey,
    /// How it differs.
    pub kind: ChangeKind,
    /// Its object hash in the first commit.
    pub before: Option<Hash>,
    /// Its object hash in the second commit.
    pub after: Option<Hash>,
}

impl EdgeChange {
    pub(crate) fn new(key: EdgeKey, before: Option<Hash>, after: Option<Hash>) -> EdgeChange {
        EdgeChange {
            key,
            kind: ChangeKind::of(before, after),
            before,
            after,
        }
    }
}

/// Differences between two commits, in key order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// The first commit.
    pub from: CommitId,
    /// The second commit.
    pub to: CommitId,
    /// Nodes that differ, by id.
    pub nodes: Vec<NodeChange>,
    /// Edges that differ, by (source, kind, target).
    pub edges: Vec<EdgeChange>,
}

impl Diff {
    /// True if the commits hold the same graph.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.edges.is_empty()
    }
}
