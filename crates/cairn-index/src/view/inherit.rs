//! What a view assembled from a donor takes over from the donor's memos.
//!
//! A view remembers its recent label gates ([`CommitIndexes::labels_all_of`]) and, per
//! dense model, the row lists of recent filters (`DenseView::rows_for`). Both are
//! functions of the chunks: a gate's part for a chunk depends on that chunk's core columns
//! alone, and a row list's rows for a chunk on that chunk's gate part and dense part. So a
//! view whose chunk `i` is its donor's chunk `from_donor[i]` (the same chunk key, hence the
//! same content) takes the donor's gate parts and rows for the chunks the two share and
//! computes only its new chunks' — a one-node commit's next gated query costs its new
//! chunks, not a walk of every chunk's labels and every admitted row.
//!
//! A derived gate or row list equals the one built from scratch, part for part and row for
//! row (tested against a fresh view); a view holds its donor's memos (not the donor view),
//! and a donor's own inheritance is never followed, so no chain of views is kept alive.

use std::sync::Arc;

use parking_lot::Mutex;

use super::dense::{push_rows, DenseView, Row, RowsMemo};
use super::filter::{Filter, FilterPart};
use super::{CommitIndexes, LabelGate};
use crate::chunk::NodeChunk;

/// A view's link to its donor's label gates.
#[derive(Debug, Clone)]
pub(crate) struct InheritedGates {
    /// The donor's label memo.
    memo: Arc<Mutex<Vec<LabelGate>>>,
    /// This view's chunk `i` is the donor's chunk `from_donor[i]`, if the donor has it.
    from_donor: Arc<[Option<usize>]>,
}

/// A dense view's link to its donor's row lists.
#[derive(Debug, Clone)]
pub(crate) struct InheritedRows {
    /// The donor dense view's row memo.
    memo: Arc<Mutex<Vec<RowsMemo>>>,
    /// This view's chunk `i` has the donor's rows of chunk `same[i]`: the same chunk with
    /// the same dense part (or none in both).
    same: Arc<[Option<u32>]>,
}

impl InheritedGates {
    pub(crate) fn new(donor: &CommitIndexes, from_donor: &[Option<usize>]) -> InheritedGates {
        InheritedGates {
            memo: Arc::clone(&donor.label_memo),
            from_donor: from_donor.into(),
        }
    }

    /// The gate `(all, labels)` over `view`'s chunks from the donor's, if the donor
    /// remembers it: shared chunks' parts are the donor's, new chunks' come from `part_of`.
    pub(crate) fn gate(
        &self,
        view: &CommitIndexes,
        all: bool,
        labels: &[String],
        part_of: &dyn Fn(&NodeChunk) -> FilterPart,
    ) -> Option<Filter> {
        let donor = {
            let memo = self.memo.lock();
            let (_, _, f) = memo.iter().find(|(a, l, _)| *a == all && l.as_slice() == labels)?;
            Arc::clone(&f.parts)
        };
        let parts = self
            .from_donor
            .iter()
            .zip(view.chunks())
            .map(|(d, c)| match d.and_then(|j| donor.get(j)) {
                Some(p) => p.clone(),
                None => part_of(c),
            })
            .collect();
        let mut f = Filter::from_parts(Arc::clone(&view.offsets), parts);
        f.origin = Some(donor);
        Some(f)
    }
}

impl InheritedRows {
    /// The link for `view` (the new view's dense parts of one model) to `donor`'s, whose
    /// chunk `from_donor[i]` is the view's chunk `i`.
    pub(crate) fn new(view: &DenseView, donor: &DenseView, from_donor: &[Option<usize>]) -> InheritedRows {
        let same = from_donor
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let j = (*d)?;
                let same = match (view.part(i), donor.part(j)) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (None, None) => true,
                    _ => false,
                };
                same.then_some(j as u32)
            })
            .collect();
        InheritedRows {
            memo: donor.rows_memo(),
            same,
        }
    }

    /// The rows of `view` admitted by `filter` from the donor's row list for the filter's
    /// origin, if the donor remembers it: shared chunks' rows are the donor's (renumbered),
    /// new chunks' are read from their parts.
    pub(crate) fn rows(&self, view: &DenseView, filter: &Filter) -> Option<Vec<Row>> {
        let origin = filter.origin.as_ref()?;
        let donor: Arc<[Row]> = {
            let memo = self.memo.lock();
            let m = memo
                .iter()
                .find(|m| m.0.as_ref().is_some_and(|p| Arc::ptr_eq(p, origin)))?;
            Arc::clone(&m.1)
        };
        let mut out = Vec::with_capacity(donor.len());
        for (i, same) in self.same.iter().enumerate() {
            match same {
                Some(j) => {
                    let lo = donor.partition_point(|r| r.0 < *j);
                    let hi = lo + donor[lo..].partition_point(|r| r.0 == *j);
                    out.extend(donor[lo..hi].iter().map(|r| (i as u32, r.1)));
                }
                None => {
                    if let Some(p) = view.part(i) {
                        push_rows(i, p, Some(filter.part(i)), &mut out);
                    }
                }
            }
        }
        Some(out)
    }
}
