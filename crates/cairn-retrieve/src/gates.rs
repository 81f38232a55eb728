//! Gates: labels, property predicates and validity time, combined into one bitmap of
//! ordinals that every lane gets as its search filter — so a gate acts *before* any top-k
//! cut, and a selective gate never empties a result while matching nodes exist.

use cairn_index::{AdjacentEdge, CommitIndexes, Filter, Ordinal, PropertyPredicate};

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
    pub filter: Option<Filter>,
    /// Nodes valid at the validity time; `None` means every node. Graph expansion walks
    /// only through these (a node not valid at `t` does not exist at `t`).
    pub valid: Option<Filter>,
    /// The validity time, if the validity gate is on.
    pub valid_at_ms: Option<i64>,
}

impl Gate {
    /// Builds the gate filters from the commit's index view.
    pub fn build(indexes: &CommitIndexes, spec: &GateSpec) -> Gate {
        let valid = spec.valid_at_ms.and_then(|t| indexes.valid_at(t));
        let mut parts = other_parts(indexes, spec);
        if let Some(v) = &valid {
            parts.push(v.clone());
        }
        Gate {
            filter: intersect_all(parts),
            valid,
            valid_at_ms: spec.valid_at_ms,
        }
    }

    /// The filter of every gate but validity (`None`: every node), to tell a lane that
    /// validity emptied from one that matched nothing. Built only when a lane came back
    /// empty, never on the common path.
    pub fn without_validity(indexes: &CommitIndexes, spec: &GateSpec) -> Option<Filter> {
        intersect_all(other_parts(indexes, spec))
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

/// The label and property filters of `spec` (validity aside).
fn other_parts(indexes: &CommitIndexes, spec: &GateSpec) -> Vec<Filter> {
    let mut parts = Vec::new();
    if !spec.labels_all.is_empty() {
        parts.push(indexes.labels_all_of(&spec.labels_all));
    }
    if !spec.labels_any.is_empty() {
        parts.push(indexes.labels_any_of(&spec.labels_any));
    }
    for (key, pred) in &spec.predicates {
        parts.push(indexes.prop_filter(key, pred));
    }
    parts
}

/// The intersection of `parts`, or `None` (no restriction) if there are none.
fn intersect_all(parts: Vec<Filter>) -> Option<Filter> {
    let mut parts = parts.into_iter();
    let mut first = parts.next()?;
    for p in parts {
        first.intersect(&p);
    }
    Some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view of 200 nodes (several chunks) for filters over it.
    fn view() -> CommitIndexes {
        let nodes: Vec<(cairn_core::Hash, cairn_core::Node)> = (0..200)
            .map(|i| {
                let id = cairn_core::NodeId::new(format!("k{i:03}")).unwrap();
                (cairn_core::Hash::of(id.as_str().as_bytes()), cairn_core::Node::new(id))
            })
            .collect();
        CommitIndexes::build(
            cairn_core::Hash::ZERO,
            &cairn_index::IndexParams::default(),
            &nodes,
            &[],
        )
    }

    fn members(f: &Filter) -> Vec<u32> {
        f.iter().collect()
    }

    #[test]
    fn intersection_of_parts() {
        let v = view();
        assert!(v.chunks().len() > 1);
        let bm = |xs: &[u32]| v.filter_of(xs.iter().copied());
        assert_eq!(intersect_all(vec![]), None);
        assert_eq!(
            intersect_all(vec![bm(&[1, 2, 3])]).map(|f| members(&f)),
            Some(vec![1, 2, 3])
        );
        let got = intersect_all(vec![bm(&[1, 2, 3, 150]), bm(&[2, 3, 4, 150]), bm(&[3, 9, 150])]).unwrap();
        assert_eq!(members(&got), vec![3, 150]);
        assert_eq!(got.len(), 2);
        assert!(got.contains(150) && !got.contains(2) && !got.contains(500));
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
        let v = view();
        let gate = Gate {
            filter: Some(v.filter_of([2])),
            valid: Some(v.filter_of([1, 2])),
            valid_at_ms: Some(0),
        };
        assert!(gate.admits(2) && !gate.admits(1));
        assert!(gate.traversable(1) && !gate.traversable(3));
    }
}
