//! Walking commit history.

use std::collections::{BTreeSet, BinaryHeap};

use cairn_core::{Commit, CommitId};

use crate::error::GraphError;
use crate::objects::Objects;

/// Commits reachable from `heads`, newest first: ordered by (timestamp desc, id desc),
/// each once. Stops after `limit` commits if given.
pub fn log(objs: &Objects, heads: &[CommitId], limit: Option<usize>) -> Result<Vec<(CommitId, Commit)>, GraphError> {
    let mut heap: BinaryHeap<(i64, CommitId)> = BinaryHeap::new();
    let mut seen: BTreeSet<CommitId> = BTreeSet::new();
    for h in heads {
        if seen.insert(*h) {
            heap.push((objs.commit(h)?.timestamp_ms, *h));
        }
    }
    let mut out = Vec::new();
    while let Some((_, id)) = heap.pop() {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        let c = objs.commit(&id)?;
        for p in &c.parents {
            if seen.insert(*p) {
                heap.push((objs.commit(p)?.timestamp_ms, *p));
            }
        }
        out.push((id, c));
    }
    Ok(out)
}

/// The `n`-th first-parent ancestor of `id` (`n = 0`: `id` itself); `None` if the chain is
/// shorter.
pub fn nth_first_parent(objs: &Objects, id: CommitId, n: usize) -> Result<Option<CommitId>, GraphError> {
    let mut cur = id;
    for _ in 0..n {
        match objs.commit(&cur)?.parents.first() {
            Some(p) => cur = *p,
            None => return Ok(None),
        }
    }
    Ok(Some(cur))
}

/// The merge base of two commits: the newest commit reachable from both (by timestamp,
/// then id), or `None` if their histories are disjoint.
pub fn merge_base(objs: &Objects, a: CommitId, b: CommitId) -> Result<Option<CommitId>, GraphError> {
    let from_a: BTreeSet<CommitId> = log(objs, &[a], None)?.into_iter().map(|(id, _)| id).collect();
    for (id, _) in log(objs, &[b], None)? {
        if from_a.contains(&id) {
            return Ok(Some(id));
        }
    }
    Ok(None)
}
