//! Label → roaring bitmap of ordinals.

use std::collections::BTreeMap;

use cairn_core::Node;
use roaring::RoaringBitmap;

use crate::error::IndexError;
use crate::hit::Ordinal;
use crate::node_table::OrdinalRemap;

/// For each label, the bitmap of ordinals of the nodes carrying it. Bitmaps are
/// `optimize()`d before they are serialized (their bytes otherwise depend on how they
/// were built). With roaring 0.10 (no run containers) a bitmap's container kinds — and so
/// its bytes and its `==` — are already a function of its members alone.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LabelIndex {
    /// Label → ordinals.
    pub(crate) labels: BTreeMap<String, RoaringBitmap>,
}

impl LabelIndex {
    /// Builds from the commit's nodes in ordinal order (`nodes[i]` has ordinal `i`).
    pub fn build(nodes: &[&Node]) -> LabelIndex {
        let mut labels: BTreeMap<String, RoaringBitmap> = BTreeMap::new();
        for (o, node) in nodes.iter().enumerate() {
            add_labels(&mut labels, o as Ordinal, node);
        }
        LabelIndex { labels }
    }

    /// Derives a child's index: the parent's bitmaps moved by `remap`, plus the labels of
    /// `upserted` (child ordinals, increasing). Equal to [`LabelIndex::build`] over the
    /// child's nodes.
    pub fn derive(
        parent: &LabelIndex,
        remap: &OrdinalRemap,
        upserted: &[(Ordinal, &Node)],
    ) -> Result<LabelIndex, IndexError> {
        let mut labels = BTreeMap::new();
        for (label, bitmap) in &parent.labels {
            let moved = remap.remap_bitmap(bitmap)?;
            if !moved.is_empty() {
                labels.insert(label.clone(), moved);
            }
        }
        for (o, node) in upserted {
            add_labels(&mut labels, *o, node);
        }
        Ok(LabelIndex { labels })
    }

    /// The nodes with `label` (empty bitmap if none).
    pub fn get(&self, label: &str) -> RoaringBitmap {
        self.labels.get(label).cloned().unwrap_or_default()
    }
    /// Nodes carrying every label of `labels` (all nodes `0..n` if `labels` is empty).
    pub fn all_of(&self, labels: &[String], n: u32) -> RoaringBitmap {
        let Some((first, rest)) = labels.split_first() else {
            let mut all = RoaringBitmap::new();
            all.insert_range(0..n);
            return all;
        };
        let mut acc = self.get(first);
        for label in rest {
            if acc.is_empty() {
                break;
            }
            match self.labels.get(label.as_str()) {
                Some(b) => acc &= b,
                None => acc.clear(),
            }
        }
        acc
    }
    /// Nodes carrying at least one label of `labels` (empty if `labels` is empty).
    pub fn any_of(&self, labels: &[String]) -> RoaringBitmap {
        let mut acc = RoaringBitmap::new();
        for label in labels {
            if let Some(b) = self.labels.get(label.as_str()) {
                acc |= b;
            }
        }
        acc
    }
    /// Labels in order with their node counts.
    pub fn counts(&self) -> Vec<(String, u64)> {
        self.labels.iter().map(|(l, b)| (l.clone(), b.len())).collect()
    }
}

fn add_labels(labels: &mut BTreeMap<String, RoaringBitmap>, o: Ordinal, node: &Node) {
    for label in &node.labels {
        match labels.get_mut(label.as_str()) {
            Some(b) => {
                b.insert(o);
            }
            None => {
                let mut b = RoaringBitmap::new();
                b.insert(o);
                labels.insert(label.clone(), b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::NodeId;

    fn node(id: &str, labels: &[&str]) -> Node {
        let mut n = Node::new(NodeId::new(id).unwrap());
        for l in labels {
            n = n.with_label(*l);
        }
        n
    }

    #[test]
    fn all_of_and_any_of() {
        let nodes = [node("a", &["X", "Y"]), node("b", &["X"]), node("c", &["Z"])];
        let refs: Vec<&Node> = nodes.iter().collect();
        let idx = LabelIndex::build(&refs);
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(idx.all_of(&s(&["X", "Y"]), 3).iter().collect::<Vec<_>>(), vec![0]);
        assert_eq!(idx.all_of(&[], 3).iter().collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!(idx.all_of(&s(&["X", "nope"]), 3).is_empty());
        assert_eq!(
            idx.any_of(&s(&["Y", "Z", "nope"])).iter().collect::<Vec<_>>(),
            vec![0, 2]
        );
        assert!(idx.any_of(&[]).is_empty());
        assert_eq!(idx.counts(), vec![("X".into(), 2), ("Y".into(), 1), ("Z".into(), 1)]);
        assert!(idx.get("nope").is_empty());
    }
}
