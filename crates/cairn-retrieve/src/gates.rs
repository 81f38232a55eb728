//! Gates: labels, property predicates and validity time, combined into one bitmap of
//! ordinals that every lane gets as its search filter — so a gate acts *before* any top-k
//! cut, and a selective gate never empties a result while matching nodes exist.

use cairn_index::{AdjacentEdge, CommitIndexes, Ordinal, PropertyPredicate};
use roaring::RoaringBitmap;

/// What to gate on.
#[derive(Debug, Clone, Default)]
pub(crate) struct GateSpec {
    /// Every label required.
    pub labels_all: Vec<String>,
    /// At least one label required (empty: no gate).
    pub labels_any: Vec<String>,
    /// Property predicates, all required.
    pub predicates: Vec<(String, PropertyPredicate)>,
    /// Validity time (`None`: no validity gate).
    pub valid_at_ms: Option<i64>,
}

/// The combined gates of one retrieval over one commit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Gate {
    /// Nodes passing every gate; `None` means every node (no gate at all).
    pub filter: Option<RoaringBitmap>,
    /// Nodes valid at the validity time; `None` means every node. Graph expansion walks
    /// only through these (a node not valid at `t` does not exist at `t`).
    pub valid: Option<RoaringBitmap>,
    /// The validity time, if the validity gate is on.
    pub valid_at_ms: Option<i64>,
}

impl Gate {
    /// Builds the gate bitmaps from the commit's indexes.
    pub fn build(indexes: &CommitIndexes, spec: &GateSpec) -> Gate {
        let n = u32::try_from(indexes.nodes.len()).unwrap_or(u32::MAX);
        let valid = spec
            .valid_at_ms
            .filter(|_| !indexes.validity.all_always_valid())
            .map(|t| indexes.validity.valid_at(t));
        let mut parts = Vec::new();
        if !spec.labels_all.is_empty() {
            parts.push(indexes.labels.all_of(&spec.labels_all, n));
        }
        if !spec.labels_any.is_empty() {
            parts.push(indexes.labels.any_of(&spec.labels_any));
        }
        for (key, pred) in &spec.predicates {
            parts.push(indexes.props.filter(key, pred));
        }
        if let Some(v) = &valid {
            parts.push(v.clone());
        }
        Gate {
            filter: intersect_all(parts),
            valid,
            valid_at_ms: spec.valid_at_ms,
        }
    }

    /// True if the node passes every gate.
    pub fn admits(&self, ordinal: Ordinal) -> bool {
        self.filter.as_ref().is_none_or(|f| f.contains(ordinal))
    }

    /// True if the node exists at the validity time (expansion may walk through it).
    pub fn traversable(&self, ordinal: Ordinal) -> bool {
        self.valid.as_ref().is_none_or(|v| v.contains(ordinal))
    }

    /// True if the edge holds at the validity time (always, with the gate off).
    pub fn edge_holds(&self, edge: &AdjacentEdge) -> bool {
        self.valid_at_ms
            .is_none_or(|t| edge.valid_from_ms <= t && t < edge.valid_until_ms)
    }
}

/// The intersection of `parts`, or `None` (no restriction) if there are none.
fn intersect_all(parts: Vec<RoaringBitmap>) -> Option<RoaringBitmap> {
    let mut parts = parts.into_iter();
    let first = parts.next()?;
    Some(parts.fold(first, |acc, p| acc & p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bm(xs: &[u32]) -> RoaringBitmap {
        xs.iter().copied().collect()
    }

    #[test]
    fn intersection_of_parts() {
        assert_eq!(intersect_all(vec![]), None);
        assert_eq!(intersect_all(vec![bm(&[1, 2, 3])]), Some(bm(&[1, 2, 3])));
        assert_eq!(
            intersect_all(vec![bm(&[1, 2, 3]), bm(&[2, 3, 4]), bm(&[3, 9])]),
            Some(bm(&[3]))
        );
    }

    #[test]
    fn edges_hold_on_half_open_intervals() {
        let gate = Gate {
            filter: None,
            valid: None,
            valid_at_ms: Some(100),
        };
        let edge = |from, until| AdjacentEdge {
            other: 0,
            kind: 0,
            weight: 1.0,
            valid_from_ms: from,
            valid_until_ms: until,
        };
        assert!(gate.edge_holds(&edge(i64::MIN, i64::MAX)));
        assert!(gate.edge_holds(&edge(100, 101)));
        assert!(!gate.edge_holds(&edge(101, i64::MAX)));
        assert!(!gate.edge_holds(&edge(i64::MIN, 100)));
        let all_time = Gate {
            valid_at_ms: None,
            ..gate
        };
        assert!(all_time.edge_holds(&edge(101, 102)));
    }

    #[test]
    fn admits_and_traversable() {
        let gate = Gate {
            filter: Some(bm(&[2])),
            valid: Some(bm(&[1, 2])),
            valid_at_ms: Some(0),
        };
        assert!(gate.admits(2) && !gate.admits(1));
        assert!(gate.traversable(1) && !gate.traversable(3));
    }
}
