//! The ordinal ↔ node id table of a commit.

use cairn_core::{Hash, NodeId};
use roaring::RoaringBitmap;

use crate::error::IndexError;
use crate::hit::Ordinal;

/// The commit's nodes sorted by id: ordinal `i` is the `i`-th smallest [`NodeId`]. Also
/// holds each node's object hash (so "changed?" is a hash comparison).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeTable {
    ids: Vec<NodeId>,
    hashes: Vec<Hash>,
}

impl NodeTable {
    /// Builds from `(id, hash)` pairs already sorted by id (strictly increasing).
    pub fn from_sorted(ids: Vec<NodeId>, hashes: Vec<Hash>) -> NodeTable {
        debug_assert_eq!(ids.len(), hashes.len());
        debug_assert!(ids.windows(2).all(|w| w[0] < w[1]));
        NodeTable { ids, hashes }
    }
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    /// True if the commit has no nodes.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    /// The id at `ordinal`. Panics if out of range (ordinals come from this table).
    pub fn id(&self, ordinal: Ordinal) -> &NodeId {
        &self.ids[ordinal as usize]
    }
    /// The object hash of the node at `ordinal`.
    pub fn hash(&self, ordinal: Ordinal) -> &Hash {
        &self.hashes[ordinal as usize]
    }
    /// The ordinal of `id`, if the commit has that node (binary search).
    pub fn ordinal(&self, id: &NodeId) -> Option<Ordinal> {
        self.ids.binary_search(id).ok().map(|i| i as Ordinal)
    }
    /// All ids in ordinal order.
    pub fn ids(&self) -> &[NodeId] {
        &self.ids
    }
    /// All hashes in ordinal order.
    pub fn hashes(&self) -> &[Hash] {
        &self.hashes
    }
}

/// How ordinals move from a parent commit's [`NodeTable`] to a child's: `old_to_new[o]`
/// is the child ordinal of the parent's node `o` if that node is in the child *unchanged*
/// (same object hash), `None` if it was removed or changed. Nodes added or changed in the
/// child are listed separately (as upserts) by whoever derives an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrdinalRemap {
    /// Parent ordinal → child ordinal, for unchanged nodes.
    pub old_to_new: Vec<Option<Ordinal>>,
    /// Number of nodes in the child.
    pub new_len: u32,
}

impl OrdinalRemap {
    /// The remap that keeps every one of `n` nodes where it is (nothing changed).
    pub fn identity(n: u32) -> OrdinalRemap {
        OrdinalRemap {
            old_to_new: (0..n).map(Some).collect(),
            new_len: n,
        }
    }

    /// The child ordinal of the parent's (unchanged) node `old`, if it kept one.
    pub fn map(&self, old: Ordinal) -> Option<Ordinal> {
        self.old_to_new.get(old as usize).copied().flatten()
    }

    /// Moves the ordinals of a parent bitmap to the child, dropping changed and removed
    /// nodes. Refuses a remap that does not keep order (every remap [`NodeTable::derive`]
    /// makes keeps it).
    pub fn remap_bitmap(&self, parent: &RoaringBitmap) -> Result<RoaringBitmap, IndexError> {
        RoaringBitmap::from_sorted_iter(parent.iter().filter_map(|o| self.map(o)))
            .map_err(|_| IndexError::Inconsistent("ordinal remap does not keep order".to_string()))
    }

    /// Moves a parent posting list (ordinal order) to the child, dropping changed and
    /// removed nodes. The result is in ordinal order because the remap keeps order.
    pub fn remap_postings<T: Clone>(&self, parent: &[(Ordinal, T)]) -> Vec<(Ordinal, T)> {
        parent
            .iter()
            .filter_map(|(o, v)| self.map(*o).map(|n| (n, v.clone())))
            .collect()
    }
}

/// Merges two posting lists in ordinal order into one (`added` wins on an equal ordinal,
/// which a consistent derivation never produces).
pub(crate) fn merge_postings<T>(kept: Vec<(Ordinal, T)>, added: Vec<(Ordinal, T)>) -> Vec<(Ordinal, T)> {
    if added.is_empty() {
        return kept;
    }
    if kept.is_empty() {
        return added;
    }
    let mut out = Vec::with_capacity(kept.len() + added.len());
    let mut a = kept.into_iter().peekable();
    let mut b = added.into_iter().peekable();
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(x), Some(y)) => {
                if x.0 == y.0 {
                    a.next();
                    continue;
                }
                x.0 < y.0
            }
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        let next = if take_a { a.next() } else { b.next() };
        out.extend(next);
    }
    out
}

/// A child [`NodeTable`] computed from a parent's table and a node diff, with the ways
/// ordinals move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDerivation {
    /// The child's table.
    pub table: NodeTable,
    /// Parent → child ordinals of the *unchanged* nodes (what content indexes keep).
    pub remap: OrdinalRemap,
    /// Parent → child ordinals of every surviving node, changed or not (what edge
    /// endpoints follow: an edge outlives a change of its endpoints' content).
    pub id_remap: Vec<Option<Ordinal>>,
    /// The added or changed nodes: `(child ordinal, index into the diff's upsert list)`,
    /// in increasing child ordinal.
    pub upserted: Vec<(Ordinal, usize)>,
}

impl NodeTable {
    /// Builds from `(id, hash)` pairs in any order; a repeated id keeps its last pair.
    pub fn from_unsorted(mut pairs: Vec<(NodeId, Hash)>) -> NodeTable {
        pairs.reverse();
        // Stable sort of the reversed list, then dedup keeping the first: the last wins.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        pairs.dedup_by(|later, first| later.0 == first.0);
        let (ids, hashes) = pairs.into_iter().unzip();
        NodeTable { ids, hashes }
    }

    /// Applies a node diff in one merge pass (`O(n + d log d)`, no store reads).
    ///
    /// `removed` must name nodes of this table; `upserted` gives each added or changed
    /// node's id and object hash. An id may appear at most once across both lists.
    /// Breaking either rule returns [`IndexError::Inconsistent`] (the caller then builds
    /// from scratch).
    pub fn derive(&self, removed: &[NodeId], upserted: &[(&NodeId, Hash)]) -> Result<TableDerivation, IndexError> {
        let mut removed_sorted: Vec<&NodeId> = removed.iter().collect();
        removed_sorted.sort_unstable();
        if let Some(w) = removed_sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(IndexError::Inconsistent(format!(
                "node {:?} removed twice",
                w[0].as_str()
            )));
        }
        let mut ups: Vec<usize> = (0..upserted.len()).collect();
        ups.sort_unstable_by(|&a, &b| upserted[a].0.cmp(upserted[b].0));
        if let Some(w) = ups.windows(2).find(|w| upserted[w[0]].0 == upserted[w[1]].0) {
            return Err(IndexError::Inconsistent(format!(
                "node {:?} upserted twice",
                upserted[w[0]].0.as_str()
            )));
        }

        let n_old = self.ids.len();
        let capacity = (n_old + upserted.len()).saturating_sub(removed.len());
        let mut ids = Vec::with_capacity(capacity);
        let mut hashes = Vec::with_capacity(capacity);
        let mut old_to_new = vec![None; n_old];
        let mut id_remap = vec![None; n_old];
        let mut upserted_out = Vec::with_capacity(upserted.len());
        let (mut i, mut j, mut r) = (0usize, 0usize, 0usize);
        loop {
            let old = self.ids.get(i);
            let up = ups.get(j).map(|&u| upserted[u].0);
            let next = ids.len() as Ordinal;
            let take_old = match (old, up) {
                (None, None) => break,
                (Some(o), Some(u)) => o < u,
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            if let (true, Some(o)) = (take_old, old) {
                if removed_sorted.get(r) == Some(&o) {
                    r += 1;
                } else {
                    ids.push(o.clone());
                    hashes.push(self.hashes[i]);
                    old_to_new[i] = Some(next);
                    id_remap[i] = Some(next);
                }
                i += 1;
            } else if let Some(u) = up {
                if old == Some(u) {
                    if removed_sorted.get(r) == Some(&u) {
                        return Err(IndexError::Inconsistent(format!(
                            "node {:?} both removed and upserted",
                            u.as_str()
                        )));
                    }
                    id_remap[i] = Some(next);
                    i += 1;
                }
                let u_idx = ups[j];
                ids.push(u.clone());
                hashes.push(upserted[u_idx].1);
                upserted_out.push((next, u_idx));
                j += 1;
            }
            // A removed id smaller than the current parent id was never in the parent.
            if let Some(&rm) = removed_sorted.get(r) {
                if self.ids.get(i).is_none_or(|o| rm < o) {
                    return Err(IndexError::Inconsistent(format!(
                        "removed node {:?} is not in the parent",
                        rm.as_str()
                    )));
                }
            }
        }
        let new_len =
            u32::try_from(ids.len()).map_err(|_| IndexError::Inconsistent("more than 2^32 nodes".to_string()))?;
        Ok(TableDerivation {
            table: NodeTable { ids, hashes },
            remap: OrdinalRemap { old_to_new, new_len },
            id_remap,
            upserted: upserted_out,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> NodeId {
        NodeId::new(s).unwrap()
    }

    fn table(ids: &[&str]) -> NodeTable {
        NodeTable::from_unsorted(ids.iter().map(|s| (id(s), Hash::of(s.as_bytes()))).collect())
    }

    #[test]
    fn derive_merges_and_remaps() {
        let parent = table(&["b", "d", "f", "h"]);
        let c = id("c");
        let f = id("f");
        let up = [(&c, Hash::of(b"c")), (&f, Hash::of(b"f2"))];
        let d = parent.derive(&[id("d")], &up).unwrap();
        assert_eq!(d.table.ids(), &[id("b"), id("c"), id("f"), id("h")]);
        assert_eq!(d.remap.old_to_new, vec![Some(0), None, None, Some(3)]);
        assert_eq!(d.id_remap, vec![Some(0), None, Some(2), Some(3)]);
        assert_eq!(d.upserted, vec![(1, 0), (2, 1)]);
        assert_eq!(d.remap.new_len, 4);
        assert_eq!(d.table.hash(2), &Hash::of(b"f2"));
    }

    #[test]
    fn derive_refuses_inconsistent_input() {
        let parent = table(&["b", "d"]);
        let b = id("b");
        assert!(parent.derive(&[id("a")], &[]).is_err());
        assert!(parent.derive(&[id("z")], &[]).is_err());
        assert!(parent.derive(&[id("b"), id("b")], &[]).is_err());
        assert!(parent.derive(&[id("b")], &[(&b, Hash::ZERO)]).is_err());
        assert!(parent.derive(&[], &[(&b, Hash::ZERO), (&b, Hash::ZERO)]).is_err());
        assert!(parent.derive(&[id("d")], &[]).is_ok());
    }

    #[test]
    fn from_unsorted_keeps_last() {
        let t = NodeTable::from_unsorted(vec![
            (id("b"), Hash::of(b"1")),
            (id("a"), Hash::ZERO),
            (id("b"), Hash::of(b"2")),
        ]);
        assert_eq!(t.ids(), &[id("a"), id("b")]);
        assert_eq!(t.hash(1), &Hash::of(b"2"));
    }
}
