//! Adjacency across edge chunks, resolved to ordinals at query time.

use std::cmp::Ordering;
use std::sync::Arc;

use cairn_core::NodeId;

use crate::chunk::edges::key_order;
use crate::chunk::{EdgeChunk, EdgeRec};
use crate::hit::Ordinal;
use crate::view::CommitIndexes;

/// One edge as seen from one endpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdjacentEdge {
    /// The other endpoint.
    pub other: Ordinal,
    /// Index of the edge kind in [`EdgeView::kinds`].
    pub kind: u32,
    /// Edge weight.
    pub weight: f64,
    /// Validity start (`i64::MIN` if open).
    pub valid_from_ms: i64,
    /// Validity end, exclusive (`i64::MAX` if open).
    pub valid_until_ms: i64,
}

/// A commit's edge chunks, both directions, with the commit's kinds.
#[derive(Debug, Clone, Default)]
pub struct EdgeView {
    out: Vec<Arc<EdgeChunk>>,
    inc: Vec<Arc<EdgeChunk>>,
    /// Every kind of the commit, sorted.
    kinds: Vec<String>,
    /// Per chunk (out chunks, then in chunks): chunk kind index → commit kind index.
    out_kinds: Vec<Vec<u32>>,
    in_kinds: Vec<Vec<u32>>,
}

impl EdgeView {
    pub(crate) fn new(out: Vec<Arc<EdgeChunk>>, inc: Vec<Arc<EdgeChunk>>) -> EdgeView {
        let mut kinds: Vec<String> = out.iter().chain(&inc).flat_map(|c| c.kinds().iter().cloned()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let map = |c: &Arc<EdgeChunk>| -> Vec<u32> {
            c.kinds()
                .iter()
                .map(|k| kinds.binary_search(k).unwrap_or(0) as u32)
                .collect()
        };
        let out_kinds = out.iter().map(map).collect();
        let in_kinds = inc.iter().map(map).collect();
        EdgeView {
            out,
            inc,
            kinds,
            out_kinds,
            in_kinds,
        }
    }

    /// Edge kinds of the commit, sorted; [`AdjacentEdge::kind`] indexes this.
    pub fn kinds(&self) -> &[String] {
        &self.kinds
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.out.iter().map(|c| c.len()).sum()
    }

    /// The out-edge chunks, in key order.
    pub fn out_chunks(&self) -> &[Arc<EdgeChunk>] {
        &self.out
    }

    /// The in-edge chunks, in key order.
    pub fn in_chunks(&self) -> &[Arc<EdgeChunk>] {
        &self.inc
    }
}

/// Calls `f` with every edge whose `near` end is `id` across `chunks` (in key order), with
/// its chunk's index.
fn each_edge_of<'a>(chunks: &'a [Arc<EdgeChunk>], id: &NodeId, mut f: impl FnMut(usize, &'a EdgeRec)) {
    let start = chunks.partition_point(|c| c.last_near().is_some_and(|l| key_order(l, id) == Ordering::Less));
    for (i, c) in chunks.iter().enumerate().skip(start) {
        if c.first_near().is_none_or(|fst| key_order(fst, id) == Ordering::Greater) {
            break;
        }
        for e in c.edges_of(id) {
            f(i, e);
        }
    }
}

impl CommitIndexes {
    fn adjacent(&self, ordinal: Ordinal, incoming: bool, out: &mut Vec<AdjacentEdge>) {
        let Some(view) = self.edges.as_ref() else { return };
        let id = self.node_id(ordinal);
        let (chunks, maps) = if incoming {
            (&view.inc, &view.in_kinds)
        } else {
            (&view.out, &view.out_kinds)
        };
        each_edge_of(chunks, &id, |i, e| {
            if let Some(other) = self.ordinal(&e.far) {
                out.push(AdjacentEdge {
                    other,
                    kind: maps[i].get(e.kind as usize).copied().unwrap_or(0),
                    weight: e.weight,
                    valid_from_ms: e.valid_from_ms,
                    valid_until_ms: e.valid_until_ms,
                });
            }
        });
    }

    /// Appends the edges leaving `ordinal` to `out`, in tree-key order (empty if the
    /// edges are not loaded).
    pub fn outgoing(&self, ordinal: Ordinal, out: &mut Vec<AdjacentEdge>) {
        self.adjacent(ordinal, false, out);
    }

    /// Appends the edges arriving at `ordinal` to `out`.
    pub fn incoming(&self, ordinal: Ordinal, out: &mut Vec<AdjacentEdge>) {
        self.adjacent(ordinal, true, out);
    }

    /// Edge kinds of the commit, sorted (empty if the edges are not loaded).
    pub fn edge_kinds(&self) -> &[String] {
        self.edges.as_ref().map_or(&[], |e| e.kinds())
    }
}
