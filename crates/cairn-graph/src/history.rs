//! Walking commit history.

use std::collections::{BTreeSet, BinaryHeap};

use cairn_core::{Commit, CommitId};

use crate::error::GraphError;
use crate::objects::Objects;

/// Commits reachable from `heads`, newest first: ordered by (timestamp desc, generation
/// desc, id desc), each once. Timestamps never go backwards along a chain, and a commit
/// made in the same millisecond as its first parent comes before it by generation.
/// Stops after `limit` commits if given.
pub fn log(objs: &Objects, heads: &[CommitId], limit: Option<usize>) -> Result<Vec<(CommitId, Commit)>, GraphError> {
    walk(objs, heads)?.take(limit.unwrap_or(usize::MAX)).collect()
}

/// The commits of [`log`] one at a time, newest first, read as they are reached: memory
/// holds the commits seen so far (ids) and the frontier, never the whole log. An error
/// (a missing or damaged commit) is the last item.
pub fn walk<'a>(objs: &'a Objects, heads: &[CommitId]) -> Result<LogWalk<'a>, GraphError> {
    let mut walk = LogWalk {
        objs,
        heap: BinaryHeap::new(),
        seen: BTreeSet::new(),
        failed: false,
    };
    for h in heads {
        if walk.seen.insert(*h) {
            let c = objs.commit(h)?;
            walk.heap.push((c.timestamp_ms, c.generation, *h));
        }
    }
    Ok(walk)
}

/// The iterator [`walk`] returns.
pub struct LogWalk<'a> {
    objs: &'a Objects,
    heap: BinaryHeap<(i64, u64, CommitId)>,
    seen: BTreeSet<CommitId>,
    failed: bool,
}

impl LogWalk<'_> {
    fn step(&mut self, id: CommitId) -> Result<(CommitId, Commit), GraphError> {
        let c = self.objs.commit(&id)?;
        for p in &c.parents {
            if self.seen.insert(*p) {
                let pc = self.objs.commit(p)?;
                self.heap.push((pc.timestamp_ms, pc.generation, *p));
            }
        }
        Ok((id, c))
    }
}

impl Iterator for LogWalk<'_> {
    type Item = Result<(CommitId, Commit), GraphError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let (_, _, id) = self.heap.pop()?;
        let item = self.step(id);
        self.failed = item.is_err();
        Some(item)
    }
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
