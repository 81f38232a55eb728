//! Transaction time: which commit was a branch's head at time T.
//!
//! Each branch has a derived index in the store: key `tl/<branch>\0` ‖ generation (u64
//! big-endian; [`time_index_key`]) → commit id (32 bytes) ‖ timestamp (i64 big-endian). Entry `g` is the commit
//! at first-parent depth `g` on the branch's chain. Invariant: entries `0..=g` form one
//! first-parent chain; a commit appends its entry only if entry `g-1` is its parent,
//! otherwise (the branch was moved elsewhere) the index is dropped and rebuilt on next
//! use by walking the chain once. Timestamps never go backwards along a chain (commits
//! refuse that), so "head as of T" is a binary search: O(log n) point reads.
//!
//! The value's bytes are [`cairn_graph::time_index`]'s (`encode`/`decode`); a value that
//! does not decode reads as a missing entry.

use cairn_core::{Commit, CommitId};
use cairn_graph::time_index;

use cairn_store::StoreError;

use crate::derived::keys::{time_index_key, time_index_prefix};
use crate::derived::DerivedData;
use crate::error::Result;

impl DerivedData {
    /// One entry; a damaged or malformed one reads as missing, so that the callers rebuild
    /// the index from the commits (it is a cache).
    fn time_entry(&self, branch: &str, generation: u64) -> Result<Option<(CommitId, i64)>> {
        match self.store.get_derived(&time_index_key(branch, generation)) {
            Ok(v) => Ok(v.and_then(|v| time_index::decode(&v).ok())),
            Err(StoreError::Corrupt { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Records a new head of `branch` in its time index (called after a commit moved the
    /// branch). Cheap: one read, one write.
    pub(crate) fn record_head(&self, branch: &str, id: &CommitId, c: &Commit) -> Result<()> {
        let consistent = match (c.generation, c.parents.first()) {
            (0, _) => true,
            (g, Some(parent)) => self.time_entry(branch, g - 1)?.is_some_and(|(p, _)| p == *parent),
            (_, None) => false,
        };
        if !consistent {
            self.drop_time_index(branch)?;
            return Ok(());
        }
        self.store.put_derived(&[(
            time_index_key(branch, c.generation),
            time_index::encode(id, c.timestamp_ms),
        )])?;
        Ok(())
    }

    fn drop_time_index(&self, branch: &str) -> Result<()> {
        // By key alone: a damaged value must not stop its own removal.
        let keys = self.store.derived_keys(&time_index_prefix(branch))?;
        self.store.delete_derived(&keys)?;
        Ok(())
    }

    fn rebuild_time_index(&self, branch: &str, head: CommitId) -> Result<()> {
        self.drop_time_index(branch)?;
        let mut entries = Vec::new();
        let mut cur = Some(head);
        while let Some(id) = cur {
            let c = self.commit(&id)?;
            entries.push((
                time_index_key(branch, c.generation),
                time_index::encode(&id, c.timestamp_ms),
            ));
            cur = c.parents.first().copied();
        }
        for chunk in entries.chunks(10_000) {
            self.store.put_derived(chunk)?;
        }
        Ok(())
    }

    /// The commit that was the head of `branch` (whose head is `head`) at transaction
    /// time `time_ms` ([`Repo::as_of`](crate::Repo::as_of)).
    pub(crate) fn head_as_of(&self, branch: &str, head: CommitId, time_ms: i64) -> Result<Option<CommitId>> {
        let hc = self.commit(&head)?;
        if hc.timestamp_ms <= time_ms {
            return Ok(Some(head));
        }
        if self.time_entry(branch, hc.generation)?.map(|(c, _)| c) != Some(head) {
            self.rebuild_time_index(branch, head)?;
        }
        // Binary search for the last generation with timestamp <= time_ms.
        let (mut lo, mut hi) = (0u64, hc.generation); // answer in [lo, hi); hi's ts > time
        let first = self.entry_or_rebuild(branch, head, 0)?;
        if first.1 > time_ms {
            return Ok(None);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.entry_or_rebuild(branch, head, mid)?.1 <= time_ms {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(Some(self.entry_or_rebuild(branch, head, lo)?.0))
    }

    fn entry_or_rebuild(&self, branch: &str, head: CommitId, g: u64) -> Result<(CommitId, i64)> {
        if let Some(e) = self.time_entry(branch, g)? {
            return Ok(e);
        }
        self.rebuild_time_index(branch, head)?;
        self.time_entry(branch, g)?
            .ok_or_else(|| crate::Error::UnknownRevision {
                rev: format!("{branch}@{{..}}"),
                detail: format!("the time index of `{branch}` has no generation {g}"),
            })
    }
}
