//! Edge chunks: one span of the edge tree (out-edges, keyed by source) or of the reverse
//! edge tree (in-edges, keyed by target). They hold ids, not ordinals, so a commit that
//! changes only nodes changes no edge chunk; ids are resolved to ordinals at query time.

use std::cmp::Ordering;

use cairn_core::{Edge, NodeId};

use crate::validity::validity_bounds;

/// Which tree an edge chunk covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeDirection {
    /// The edge tree: edges by source (`near` = source, `far` = target).
    Out,
    /// The reverse edge tree: edges by target (`near` = target, `far` = source).
    In,
}

/// One edge as seen from its `near` end.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeRec {
    /// The endpoint the tree key starts with.
    pub near: NodeId,
    /// Index into the chunk's kinds.
    pub kind: u32,
    /// The other endpoint.
    pub far: NodeId,
    /// Weight.
    pub weight: f64,
    /// Validity start (`i64::MIN` if open).
    pub valid_from_ms: i64,
    /// Validity end, exclusive (`i64::MAX` if open).
    pub valid_until_ms: i64,
}

/// The edges of one span of an edge tree, in tree-key order (by `near`'s length, `near`,
/// kind's length, kind, `far`: the length-prefixed key layout of `storage-format.md` §4.3).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EdgeChunk {
    /// Kinds used in this chunk, in byte order.
    pub(crate) kinds: Vec<String>,
    pub(crate) edges: Vec<EdgeRec>,
}

/// Orders ids as the length-prefixed tree keys do: by byte length, then bytes.
pub(crate) fn key_order(a: &NodeId, b: &NodeId) -> Ordering {
    a.as_str()
        .len()
        .cmp(&b.as_str().len())
        .then_with(|| a.as_str().cmp(b.as_str()))
}

impl EdgeChunk {
    /// Builds from the span's edges in tree-key order.
    pub fn build(direction: EdgeDirection, edges: &[Edge]) -> EdgeChunk {
        let mut kinds: Vec<String> = edges.iter().map(|e| e.kind.clone()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let edges = edges
            .iter()
            .map(|e| {
                let (near, far) = match direction {
                    EdgeDirection::Out => (e.source.clone(), e.target.clone()),
                    EdgeDirection::In => (e.target.clone(), e.source.clone()),
                };
                let (valid_from_ms, valid_until_ms) = validity_bounds(&e.validity);
                EdgeRec {
                    near,
                    kind: kinds.binary_search(&e.kind).unwrap_or(0) as u32,
                    far,
                    weight: e.weight,
                    valid_from_ms,
                    valid_until_ms,
                }
            })
            .collect();
        EdgeChunk { kinds, edges }
    }

    /// The edges whose `near` end is `id`.
    pub fn edges_of(&self, id: &NodeId) -> &[EdgeRec] {
        let start = self.edges.partition_point(|e| key_order(&e.near, id) == Ordering::Less);
        let end = start + self.edges[start..].partition_point(|e| e.near == *id);
        &self.edges[start..end]
    }

    /// The first edge's `near` id (chunks are searched by it).
    pub fn first_near(&self) -> Option<&NodeId> {
        self.edges.first().map(|e| &e.near)
    }

    /// The last edge's `near` id.
    pub fn last_near(&self) -> Option<&NodeId> {
        self.edges.last().map(|e| &e.near)
    }

    /// Kinds used in this chunk, in byte order.
    pub fn kinds(&self) -> &[String] {
        &self.kinds
    }

    /// The edges, in tree-key order.
    pub fn edges(&self) -> &[EdgeRec] {
        &self.edges
    }

    /// Number of edges.
    pub fn len(&self) -> usize {
        self.edges.len()
    }

    /// True if the chunk has no edges (never stored).
    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.kinds.iter().map(|k| k.len() + 24).sum::<usize>()
            + self
                .edges
                .iter()
                .map(|e| e.near.as_str().len() + e.far.as_str().len() + 88)
                .sum::<usize>()
            + 64
    }
}
