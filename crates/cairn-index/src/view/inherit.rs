//! What a view assembled from a donor takes over from the donor's memos.
//!
//! A view remembers its recent label gates ([`CommitIndexes::labels_all_of`]) and, per
//! dense model, the row lists of recent filters (`DenseView::rows_for`). Both are
//! functions of the chunks: a gate's part for a chunk depends on that chunk's core columns
//! alone, and a row list's rows for a chunk on that chunk's gate part and dense part. So a
//! view whose chunk `i` is its donor's chunk `from_donor[i]` (the same chunk key, hence the
//! same content) can take a remembered gate's parts and rows for the chunks the two share
//! and compute only its new chunks' — a one-node commit's next gated query costs its new
//! chunks, not a walk of every chunk's labels and every admitted row.
//!
//! What a view can take over is a list of **pending** entries: each names an older view's
//! gate (its key and parts) or row list, with a map from this view's chunks to that view's.
//! A view's pending list is its donor's remembered entries (mapped by `from_donor`)
//! followed by the donor's own pending entries (their maps composed with `from_donor`),
//! without repeats, at most as many as a memo holds ([`LABEL_MEMO`] gates; [`ROWS_MEMO`]
//! lists and [`ROWS_MEMO_ROWS`] rows). So gates used in turn (a query per commit, each with
//! another of a few labels) stay derivable across commits, a view holds no older view —
//! only the parts and rows its pending entries name, as a memo would — and a commit costs
//! one pass over the chunks per distinct map.
//!
//! A derived gate or row list equals the one built from scratch, part for part and row for
//! row (`tests/inherit_memos.rs`, against fresh views over random edits).

use std::sync::Arc;

use super::dense::{push_rows, DenseView, Row, ROWS_MEMO, ROWS_MEMO_ROWS};
use super::filter::{BitsDonor, Filter, FilterPart, NEW};
use super::{CommitIndexes, LABEL_MEMO};
use crate::chunk::NodeChunk;
use crate::hit::Ordinal;

/// `to_older[to_mid[i]]` for each chunk `i` (a chunk new at either step is new).
fn compose(to_mid: &[u32], to_older: &[u32]) -> Arc<[u32]> {
    to_mid
        .iter()
        .map(|&m| {
            if m == NEW {
                NEW
            } else {
                to_older.get(m as usize).copied().unwrap_or(NEW)
            }
        })
        .collect()
}

/// An older map and its composition with this view's.
type Composed = (Arc<[u32]>, Arc<[u32]>);

/// Composes each distinct map (by pointer) once.
#[derive(Default)]
struct Composer {
    done: Vec<Composed>,
}

impl Composer {
    fn map(&mut self, direct: &[u32], older: &Arc<[u32]>) -> Arc<[u32]> {
        if let Some((_, m)) = self.done.iter().find(|(o, _)| Arc::ptr_eq(o, older)) {
            return Arc::clone(m);
        }
        let m = compose(direct, older);
        self.done.push((Arc::clone(older), Arc::clone(&m)));
        m
    }
}

/// A label gate of an older view this view can derive.
#[derive(Debug, Clone)]
struct PendingGate {
    all: bool,
    labels: Vec<String>,
    /// The older view's parts.
    parts: Arc<Vec<FilterPart>>,
    /// The older view's chunk offsets and the gate's bits there (when made).
    offsets: Arc<[Ordinal]>,
    bits: Arc<std::sync::OnceLock<Vec<u64>>>,
    /// This view's chunk `i` is the older view's chunk `map[i]` ([`NEW`]: none).
    map: Arc<[u32]>,
}

/// A view's label gates to derive, most recent first.
#[derive(Debug, Clone, Default)]
pub(crate) struct InheritedGates {
    pending: Vec<PendingGate>,
}

impl InheritedGates {
    pub(crate) fn new(donor: &CommitIndexes, from_donor: &[Option<usize>]) -> InheritedGates {
        let direct: Arc<[u32]> = from_donor.iter().map(|d| d.map_or(NEW, |j| j as u32)).collect();
        let mut pending: Vec<PendingGate> = donor
            .label_memo
            .lock()
            .iter()
            .rev()
            .map(|(all, labels, f)| PendingGate {
                all: *all,
                labels: labels.clone(),
                parts: Arc::clone(&f.parts),
                offsets: Arc::clone(&f.offsets),
                bits: Arc::clone(&f.bits),
                map: Arc::clone(&direct),
            })
            .collect();
        if let Some(older) = &donor.inherited {
            let mut composer = Composer::default();
            for p in &older.pending {
                if pending.len() >= LABEL_MEMO {
                    break;
                }
                if pending.iter().any(|q| q.all == p.all && q.labels == p.labels) {
                    continue;
                }
                let map = composer.map(&direct, &p.map);
                pending.push(PendingGate { map, ..p.clone() });
            }
        }
        pending.truncate(LABEL_MEMO);
        InheritedGates { pending }
    }

    /// The gate `(all, labels)` over `view`'s chunks from a pending entry, if one has it:
    /// shared chunks' parts are the older view's, new chunks' come from `part_of`.
    pub(crate) fn gate(
        &self,
        view: &CommitIndexes,
        all: bool,
        labels: &[String],
        part_of: &(dyn Fn(&NodeChunk) -> FilterPart + Sync),
    ) -> Option<Filter> {
        let p = self
            .pending
            .iter()
            .find(|p| p.all == all && p.labels.as_slice() == labels)?;
        let parts = p
            .map
            .iter()
            .zip(view.chunks())
            .map(|(&j, c)| match p.parts.get(j as usize) {
                Some(part) if j != NEW => part.clone(),
                _ => part_of(c),
            })
            .collect();
        let mut f = Filter::from_parts(Arc::clone(&view.offsets), parts);
        f.origin = Some(Arc::clone(&p.parts));
        f.bits_donor = Some(BitsDonor {
            offsets: Arc::clone(&p.offsets),
            bits: Arc::clone(&p.bits),
            map: Arc::clone(&p.map),
        });
        Some(f)
    }
}

/// A row list of an older dense view this one can derive.
#[derive(Debug, Clone)]
struct PendingRows {
    /// The filter parts the list was made for (a derived gate names them as its origin).
    origin: Arc<Vec<FilterPart>>,
    rows: Arc<[Row]>,
    /// This view's chunk `i` has the older view's rows of chunk `same[i]`: the same chunk
    /// with the same dense part (or none in both); [`NEW`] otherwise.
    same: Arc<[u32]>,
}

/// A dense view's row lists to derive, most recent first.
#[derive(Debug, Clone, Default)]
pub(crate) struct InheritedRows {
    pending: Vec<PendingRows>,
}

impl InheritedRows {
    /// The list for `view` (the new view's parts of one model) from `donor`'s, whose chunk
    /// `from_donor[i]` is the view's chunk `i`.
    pub(crate) fn new(view: &DenseView, donor: &DenseView, from_donor: &[Option<usize>]) -> InheritedRows {
        let direct: Arc<[u32]> = from_donor
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let Some(j) = *d else { return NEW };
                let same = match (view.part(i), donor.part(j)) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (None, None) => true,
                    _ => false,
                };
                if same {
                    j as u32
                } else {
                    NEW
                }
            })
            .collect();
        let mut pending: Vec<PendingRows> = donor
            .rows_memo()
            .lock()
            .iter()
            .rev()
            .filter_map(|(parts, rows)| {
                Some(PendingRows {
                    origin: Arc::clone(parts.as_ref()?),
                    rows: Arc::clone(rows),
                    same: Arc::clone(&direct),
                })
            })
            .collect();
        if let Some(older) = donor.inherited() {
            let mut composer = Composer::default();
            for p in &older.pending {
                if pending.iter().any(|q| Arc::ptr_eq(&q.origin, &p.origin)) {
                    continue;
                }
                let same = composer.map(&direct, &p.same);
                pending.push(PendingRows { same, ..p.clone() });
            }
        }
        // As a memo would hold: the most recent lists, within both bounds.
        let mut rows = 0;
        let keep = pending
            .iter()
            .take(ROWS_MEMO)
            .take_while(|p| {
                rows += p.rows.len();
                rows <= ROWS_MEMO_ROWS
            })
            .count();
        pending.truncate(keep);
        InheritedRows { pending }
    }

    /// The rows of `view` admitted by `filter` from a pending list for the filter's
    /// origin, if one has it: shared chunks' rows are the older view's (renumbered), new
    /// chunks' are read from their parts.
    pub(crate) fn rows(&self, view: &DenseView, filter: &Filter) -> Option<Vec<Row>> {
        let origin = filter.origin.as_ref()?;
        let p = self.pending.iter().find(|p| Arc::ptr_eq(&p.origin, origin))?;
        let older = &p.rows;
        // Where each older chunk's rows start (rows are in chunk order): one pass.
        let chunks = older.last().map_or(0, |r| r.0 as usize + 1);
        let mut starts = vec![0u32; chunks + 1];
        for r in older.iter() {
            starts[r.0 as usize + 1] += 1;
        }
        for c in 0..chunks {
            starts[c + 1] += starts[c];
        }
        let mut out = Vec::with_capacity(older.len());
        for (i, &j) in p.same.iter().enumerate() {
            if j != NEW {
                if let (Some(&lo), Some(&hi)) = (starts.get(j as usize), starts.get(j as usize + 1)) {
                    out.extend(older[lo as usize..hi as usize].iter().map(|r| (i as u32, r.1)));
                }
            } else if let Some(part) = view.part(i) {
                push_rows(i, part, Some(filter.part(i)), &mut out);
            }
        }
        Some(out)
    }
}
