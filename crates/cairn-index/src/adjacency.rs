//! Edges by ordinal, both directions, for graph expansion.

use std::collections::BTreeSet;

use cairn_core::{Edge, EdgeKey, NodeId};

use crate::error::IndexError;
use crate::fast_hash::FastMap;
use crate::hit::Ordinal;
use crate::node_table::NodeTable;
use crate::validity::validity_bounds;

/// One edge as seen from one endpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdjacentEdge {
    /// The other endpoint.
    pub other: Ordinal,
    /// Index of the edge kind in [`Adjacency::kinds`].
    pub kind: u32,
    /// Edge weight.
    pub weight: f64,
    /// Validity start (`i64::MIN` if open).
    pub valid_from_ms: i64,
    /// Validity end, exclusive (`i64::MAX` if open).
    pub valid_until_ms: i64,
}

/// One edge with both endpoints, in the order edges are kept: `(source, target, kind)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FlatEdge {
    pub(crate) source: Ordinal,
    pub(crate) target: Ordinal,
    pub(crate) kind: u32,
    pub(crate) weight: f64,
    pub(crate) valid_from_ms: i64,
    pub(crate) valid_until_ms: i64,
}

impl FlatEdge {
    fn key(&self) -> (Ordinal, Ordinal, u32) {
        (self.source, self.target, self.kind)
    }
}

/// Out- and in-edges per ordinal (compressed sparse rows), sorted by (other, kind).
///
/// The edge set itself is the out-rows read in order (`source`, then `target`, then
/// kind): with the [`NodeTable`] and [`Adjacency::kinds`] that is every edge's key, which
/// is what [`Adjacency::derive`] needs to apply an edge diff.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Adjacency {
    pub(crate) kinds: Vec<String>,
    /// `out_edges[out_offsets[o]..out_offsets[o + 1]]` leave ordinal `o`.
    out_offsets: Vec<usize>,
    out_edges: Vec<AdjacentEdge>,
    /// `in_edges[in_offsets[o]..in_offsets[o + 1]]` arrive at ordinal `o`.
    in_offsets: Vec<usize>,
    in_edges: Vec<AdjacentEdge>,
}

impl Adjacency {
    /// Builds from the commit's edges; `nodes` is the commit's table. An edge whose source
    /// or target is not a node of the commit is left out (a commit never holds one: the
    /// transaction refuses it). If a key appears twice, the later edge wins.
    pub fn build(nodes: &NodeTable, edges: &[Edge]) -> Adjacency {
        // A lookup-only id → ordinal map beats two binary searches over strings per edge.
        let by_id: FastMap<&str, Ordinal> = if edges.len() > 64 {
            nodes
                .ids()
                .iter()
                .enumerate()
                .map(|(o, id)| (id.as_str(), o as Ordinal))
                .collect()
        } else {
            FastMap::default()
        };
        let ordinal = |id: &NodeId| match by_id.is_empty() {
            true => nodes.ordinal(id),
            false => by_id.get(id.as_str()).copied(),
        };
        let resolved: Vec<(Ordinal, Ordinal, &Edge)> = edges
            .iter()
            .filter_map(|e| Some((ordinal(&e.source)?, ordinal(&e.target)?, e)))
            .collect();
        let kinds: Vec<String> = resolved
            .iter()
            .map(|(_, _, e)| e.kind.as_str())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(str::to_string)
            .collect();
        let mut flat: Vec<FlatEdge> = resolved
            .iter()
            .rev()
            .map(|&(source, target, e)| flat_edge(source, target, kind_index(&kinds, &e.kind), e))
            .collect();
        // Reversed then stably sorted: the first of equal keys is the input's last.
        flat.sort_by_key(FlatEdge::key);
        flat.dedup_by_key(|e| e.key());
        Adjacency::from_sorted(nodes.len(), kinds, &flat)
    }

    /// Builds the rows from edges sorted by `(source, target, kind)`, keys unique, every
    /// ordinal `< n`.
    pub(crate) fn from_sorted(n: usize, kinds: Vec<String>, flat: &[FlatEdge]) -> Adjacency {
        let mut out_offsets = vec![0usize; n + 1];
        let mut in_offsets = vec![0usize; n + 1];
        for e in flat {
            out_offsets[e.source as usize + 1] += 1;
            in_offsets[e.target as usize + 1] += 1;
        }
        for i in 0..n {
            out_offsets[i + 1] += out_offsets[i];
            in_offsets[i + 1] += in_offsets[i];
        }
        let adj = |e: &FlatEdge, other| AdjacentEdge {
            other,
            kind: e.kind,
            weight: e.weight,
            valid_from_ms: e.valid_from_ms,
            valid_until_ms: e.valid_until_ms,
        };
        let out_edges: Vec<AdjacentEdge> = flat.iter().map(|e| adj(e, e.target)).collect();
        // A stable counting sort by target of a list sorted by (source, target, kind)
        // leaves each target's row sorted by (source, kind).
        let mut next = in_offsets.clone();
        let placeholder = AdjacentEdge {
            other: 0,
            kind: 0,
            weight: 0.0,
            valid_from_ms: 0,
            valid_until_ms: 0,
        };
        let mut in_edges = vec![placeholder; flat.len()];
        for e in flat {
            let slot = &mut next[e.target as usize];
            in_edges[*slot] = adj(e, e.source);
            *slot += 1;
        }
        Adjacency {
            kinds,
            out_offsets,
            out_edges,
            in_offsets,
            in_edges,
        }
    }

    /// Every edge as `(source, target, kind)`-sorted flat records.
    pub(crate) fn flat_edges(&self) -> impl Iterator<Item = FlatEdge> + '_ {
        (0..self.out_offsets.len().saturating_sub(1)).flat_map(move |s| {
            self.outgoing(s as Ordinal).iter().map(move |e| FlatEdge {
                source: s as Ordinal,
                target: e.other,
                kind: e.kind,
                weight: e.weight,
                valid_from_ms: e.valid_from_ms,
                valid_until_ms: e.valid_until_ms,
            })
        })
    }

    /// Number of nodes the rows cover.
    pub fn node_count(&self) -> usize {
        self.out_offsets.len().saturating_sub(1)
    }

    /// Derives a child's adjacency from the parent's and an edge diff.
    ///
    /// `id_remap` moves every surviving node (changed or not) from its parent ordinal to
    /// its child ordinal (see [`crate::node_table::TableDerivation::id_remap`]). `removed`
    /// must name edges of the parent; `upserted` edges replace or add edges and must have
    /// both endpoints in `child_nodes`; no parent edge may keep a removed endpoint. Any of
    /// these broken gives [`IndexError::Inconsistent`]. The result equals
    /// [`Adjacency::build`] over the child's edges.
    pub fn derive(
        parent: &Adjacency,
        parent_nodes: &NodeTable,
        child_nodes: &NodeTable,
        id_remap: &[Option<Ordinal>],
        removed: &[EdgeKey],
        upserted: &[Edge],
    ) -> Result<Adjacency, IndexError> {
        let inconsistent = |what: String| IndexError::Inconsistent(what);
        // Removed keys, in parent coordinates, sorted like the flat edges.
        let mut gone: Vec<(Ordinal, Ordinal, u32)> = Vec::with_capacity(removed.len());
        for key in removed {
            let found = (|| {
                let s = parent_nodes.ordinal(&key.source)?;
                let t = parent_nodes.ordinal(&key.target)?;
                let k = parent.kinds.binary_search(&key.kind).ok()? as u32;
                parent
                    .outgoing(s)
                    .binary_search_by(|e| (e.other, e.kind).cmp(&(t, k)))
                    .ok()
                    .map(|_| (s, t, k))
            })();
            gone.push(found.ok_or_else(|| inconsistent(format!("removed edge {key} is not in the parent")))?);
        }
        gone.sort_unstable();
        if gone.windows(2).any(|w| w[0] == w[1]) {
            return Err(inconsistent("an edge is removed twice".to_string()));
        }
        // Surviving parent edges, moved to child ordinals (still sorted: the maps keep order).
        let mut kept: Vec<FlatEdge> = Vec::with_capacity(parent.out_edges.len());
        let mut kind_used = vec![false; parent.kinds.len()];
        let mut g = gone.iter().peekable();
        for e in parent.flat_edges() {
            if g.peek() == Some(&&e.key()) {
                g.next();
                continue;
            }
            let n_child = child_nodes.len();
            let map = |o: Ordinal| {
                id_remap
                    .get(o as usize)
                    .copied()
                    .flatten()
                    .filter(|&c| (c as usize) < n_child)
            };
            let (Some(source), Some(target)) = (map(e.source), map(e.target)) else {
                return Err(inconsistent(format!(
                    "edge ({})-[{}]->({}) lost an endpoint but is not removed",
                    parent_nodes.ids().get(e.source as usize).map_or("?", |i| i.as_str()),
                    parent.kinds.get(e.kind as usize).map_or("?", |k| k.as_str()),
                    parent_nodes.ids().get(e.target as usize).map_or("?", |i| i.as_str()),
                )));
            };
            if let Some(u) = kind_used.get_mut(e.kind as usize) {
                *u = true;
            }
            kept.push(FlatEdge { source, target, ..e });
        }
        // Kinds of the child: the parent's still in use and the upserts'.
        let mut kinds: BTreeSet<&str> = parent
            .kinds
            .iter()
            .zip(&kind_used)
            .filter(|(_, used)| **used)
            .map(|(k, _)| k.as_str())
            .collect();
        kinds.extend(upserted.iter().map(|e| e.kind.as_str()));
        let kinds: Vec<String> = kinds.into_iter().map(str::to_string).collect();
        let kind_map: Vec<u32> = parent.kinds.iter().map(|k| kind_index(&kinds, k)).collect();
        for e in &mut kept {
            e.kind = kind_map.get(e.kind as usize).copied().unwrap_or(u32::MAX);
        }
        let mut added: Vec<FlatEdge> = Vec::with_capacity(upserted.len());
        for e in upserted {
            let (Some(s), Some(t)) = (child_nodes.ordinal(&e.source), child_nodes.ordinal(&e.target)) else {
                return Err(inconsistent(format!(
                    "upserted edge {} has an endpoint not in the commit",
                    e.key()
                )));
            };
            added.push(flat_edge(s, t, kind_index(&kinds, &e.kind), e));
        }
        added.sort_unstable_by_key(FlatEdge::key);
        if added.windows(2).any(|w| w[0].key() == w[1].key()) {
            return Err(inconsistent("an edge is upserted twice".to_string()));
        }
        // Merge; an upsert replaces a kept edge with the same key.
        let mut flat = Vec::with_capacity(kept.len() + added.len());
        let mut a = kept.into_iter().peekable();
        let mut b = added.into_iter().peekable();
        loop {
            let take_kept = match (a.peek(), b.peek()) {
                (None, None) => break,
                (Some(x), Some(y)) => {
                    if x.key() == y.key() {
                        a.next();
                        continue;
                    }
                    x.key() < y.key()
                }
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            flat.extend(if take_kept { a.next() } else { b.next() });
        }
        Ok(Adjacency::from_sorted(child_nodes.len(), kinds, &flat))
    }

    /// Edge kinds, sorted; [`AdjacentEdge::kind`] indexes this.
    pub fn kinds(&self) -> &[String] {
        &self.kinds
    }
    /// Edges leaving `ordinal`, sorted by (target, kind); empty if out of range.
    pub fn outgoing(&self, ordinal: Ordinal) -> &[AdjacentEdge] {
        row(&self.out_offsets, &self.out_edges, ordinal)
    }
    /// Edges arriving at `ordinal`, sorted by (source, kind); empty if out of range.
    pub fn incoming(&self, ordinal: Ordinal) -> &[AdjacentEdge] {
        row(&self.in_offsets, &self.in_edges, ordinal)
    }
    /// Total number of edges.
    pub fn edge_count(&self) -> usize {
        self.out_edges.len()
    }
}

fn row<'a>(offsets: &[usize], edges: &'a [AdjacentEdge], ordinal: Ordinal) -> &'a [AdjacentEdge] {
    let o = ordinal as usize;
    match (offsets.get(o), offsets.get(o + 1)) {
        (Some(&start), Some(&end)) => edges.get(start..end).unwrap_or_default(),
        _ => &[],
    }
}

/// The index of `kind` in the sorted `kinds` (present by construction).
fn kind_index(kinds: &[String], kind: &str) -> u32 {
    kinds.binary_search_by(|k| k.as_str().cmp(kind)).unwrap_or_else(|i| i) as u32
}

fn flat_edge(source: Ordinal, target: Ordinal, kind: u32, e: &Edge) -> FlatEdge {
    let (valid_from_ms, valid_until_ms) = validity_bounds(&e.validity);
    FlatEdge {
        source,
        target,
        kind,
        weight: e.weight,
        valid_from_ms,
        valid_until_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::{Hash, NodeId};

    fn id(s: &str) -> NodeId {
        NodeId::new(s).unwrap()
    }

    fn table(ids: &[&str]) -> NodeTable {
        NodeTable::from_unsorted(ids.iter().map(|s| (id(s), Hash::ZERO)).collect())
    }

    #[test]
    fn rows_sorted_both_ways() {
        let t = table(&["a", "b", "c"]);
        let edges = [
            Edge::new(id("c"), "x", id("a")),
            Edge::new(id("a"), "y", id("b")),
            Edge::new(id("a"), "x", id("b")).with_weight(2.0),
            Edge::new(id("b"), "x", id("a")),
            Edge::new(id("a"), "x", id("zzz")),
            Edge::new(id("a"), "x", id("b")).with_weight(3.0),
        ];
        let adj = Adjacency::build(&t, &edges);
        assert_eq!(adj.kinds(), &["x".to_string(), "y".to_string()]);
        assert_eq!(adj.edge_count(), 4);
        let out: Vec<_> = adj.outgoing(0).iter().map(|e| (e.other, e.kind, e.weight)).collect();
        assert_eq!(out, vec![(1, 0, 3.0), (1, 1, 1.0)]);
        let inc: Vec<_> = adj.incoming(0).iter().map(|e| (e.other, e.kind)).collect();
        assert_eq!(inc, vec![(1, 0), (2, 0)]);
        assert!(adj.outgoing(99).is_empty());
        assert_eq!(adj.incoming(1).len(), 2);
        assert_eq!(adj.outgoing(0)[0].valid_until_ms, i64::MAX);
    }

    #[test]
    fn derive_refuses_inconsistent_diffs() {
        let t = table(&["a", "b"]);
        let adj = Adjacency::build(&t, &[Edge::new(id("a"), "x", id("b"))]);
        let same = [Some(0), Some(1)];
        let missing = EdgeKey {
            source: id("a"),
            kind: "y".into(),
            target: id("b"),
        };
        assert!(Adjacency::derive(&adj, &t, &t, &same, &[missing], &[]).is_err());
        let dangling = Edge::new(id("a"), "x", id("q"));
        assert!(Adjacency::derive(&adj, &t, &t, &same, &[], &[dangling]).is_err());
        // node b removed but its edge kept
        let t2 = table(&["a"]);
        assert!(Adjacency::derive(&adj, &t, &t2, &[Some(0), None], &[], &[]).is_err());
        let key = Edge::new(id("a"), "x", id("b")).key();
        let d = Adjacency::derive(&adj, &t, &t2, &[Some(0), None], &[key], &[]).unwrap();
        assert_eq!(d, Adjacency::build(&t2, &[]));
    }
}
