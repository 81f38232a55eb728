//! Per-ordinal validity intervals, for `valid_at(t)` gates inside the indexes.

use cairn_core::{Node, Validity};
use roaring::RoaringBitmap;

use crate::error::IndexError;
use crate::hit::Ordinal;
use crate::node_table::OrdinalRemap;

/// Each node's validity as `[from, until)` with open ends stored as `i64::MIN` / `i64::MAX`.
///
/// A node whose interval is empty at every instant is still indexed everywhere; gates
/// like this one are applied at query time.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ValidityColumn {
    pub(crate) from_ms: Vec<i64>,
    pub(crate) until_ms: Vec<i64>,
}

/// The stored `(from, until)` of a validity: open ends become `i64::MIN` / `i64::MAX`.
pub fn validity_bounds(v: &Validity) -> (i64, i64) {
    (
        v.valid_from_ms.unwrap_or(i64::MIN),
        v.valid_until_ms.unwrap_or(i64::MAX),
    )
}

/// `from <= t < until`, where `until == i64::MAX` means open (so it also holds at
/// `t = i64::MAX`, as [`Validity::contains`] does for an open end).
pub fn bounds_contain(from_ms: i64, until_ms: i64, t_ms: i64) -> bool {
    from_ms <= t_ms && (t_ms < until_ms || until_ms == i64::MAX)
}

impl ValidityColumn {
    /// Builds from the commit's nodes in ordinal order.
    pub fn build(nodes: &[&Node]) -> ValidityColumn {
        let (from_ms, until_ms) = nodes.iter().map(|n| validity_bounds(&n.validity)).unzip();
        ValidityColumn { from_ms, until_ms }
    }

    /// Derives a child's column: unchanged nodes keep their interval (moved by `remap`),
    /// `upserted` (child ordinals) bring theirs. Equal to [`ValidityColumn::build`] over
    /// the child's nodes.
    pub fn derive(
        parent: &ValidityColumn,
        remap: &OrdinalRemap,
        upserted: &[(Ordinal, &Node)],
    ) -> Result<ValidityColumn, IndexError> {
        let n = remap.new_len as usize;
        let mut from_ms = vec![i64::MIN; n];
        let mut until_ms = vec![i64::MAX; n];
        let mut filled = 0usize;
        for (old, new) in remap.old_to_new.iter().enumerate() {
            if let Some(new) = new {
                let (Some(f), Some(u), Some(df), Some(du)) = (
                    parent.from_ms.get(old),
                    parent.until_ms.get(old),
                    from_ms.get_mut(*new as usize),
                    until_ms.get_mut(*new as usize),
                ) else {
                    return Err(IndexError::Inconsistent("ordinal remap out of range".to_string()));
                };
                (*df, *du) = (*f, *u);
                filled += 1;
            }
        }
        for (o, node) in upserted {
            let (Some(df), Some(du)) = (from_ms.get_mut(*o as usize), until_ms.get_mut(*o as usize)) else {
                return Err(IndexError::Inconsistent("upserted ordinal out of range".to_string()));
            };
            (*df, *du) = validity_bounds(&node.validity);
            filled += 1;
        }
        if filled != n {
            return Err(IndexError::Inconsistent(format!(
                "validity derivation filled {filled} of {n} nodes"
            )));
        }
        Ok(ValidityColumn { from_ms, until_ms })
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.from_ms.len()
    }

    /// True if the column has no nodes.
    pub fn is_empty(&self) -> bool {
        self.from_ms.is_empty()
    }

    /// The `(from, until)` bounds of the node at `ordinal`, if in range.
    pub fn bounds(&self, ordinal: Ordinal) -> Option<(i64, i64)> {
        Some((
            *self.from_ms.get(ordinal as usize)?,
            *self.until_ms.get(ordinal as usize)?,
        ))
    }

    /// Ordinals of the nodes valid at `t_ms` (`from <= t < until`; an open end is
    /// unbounded).
    pub fn valid_at(&self, t_ms: i64) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        for (o, (f, u)) in self.from_ms.iter().zip(&self.until_ms).enumerate() {
            if bounds_contain(*f, *u, t_ms) {
                out.push(o as Ordinal);
            }
        }
        out
    }
    /// True if every node is always valid (lets callers skip the gate).
    pub fn all_always_valid(&self) -> bool {
        self.from_ms.iter().all(|&f| f == i64::MIN) && self.until_ms.iter().all(|&u| u == i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::NodeId;

    #[test]
    fn valid_at_is_half_open() {
        let nodes = [
            Node::new(NodeId::new("a").unwrap()),
            Node::new(NodeId::new("b").unwrap()).with_validity(Validity::new(Some(10), Some(20))),
            Node::new(NodeId::new("c").unwrap()).with_validity(Validity::new(None, Some(15))),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let col = ValidityColumn::build(&refs);
        let at = |t| col.valid_at(t).iter().collect::<Vec<_>>();
        assert_eq!(at(9), vec![0, 2]);
        assert_eq!(at(10), vec![0, 1, 2]);
        assert_eq!(at(15), vec![0, 1]);
        assert_eq!(at(20), vec![0]);
        assert_eq!(at(i64::MAX), vec![0]);
        assert!(!col.all_always_valid());
        assert!(ValidityColumn::build(&refs[..1]).all_always_valid());
        for t in [i64::MIN, 9, 10, 14, 15, 19, 20, i64::MAX] {
            for (o, n) in nodes.iter().enumerate() {
                assert_eq!(col.valid_at(t).contains(o as u32), n.validity.contains(t));
            }
        }
    }
}
