//! [`CommitCache`]: the commit objects a repository handle read last, decoded, shared by
//! the handle and its derived data (whose graph-base walk reads first-parent chains).
//!
//! A commit is immutable and named by its hash, so a decoded copy stays right for as long
//! as it is kept: a retrieval resolves its revision, reads the commit's timestamp and
//! trees, and assembles its view, and each of these asks for the same commit. The cache
//! holds the last [`COMMITS`] read (a commit object is a few hundred bytes) and only
//! ever returns what [`Objects::commit`](cairn_graph::Objects::commit) checked. `gc`
//! clears it once it has deleted objects; `fsck` reads commits from the store, not from here.

use std::collections::VecDeque;
use std::sync::Arc;

use cairn_core::{Commit, CommitId};
use cairn_graph::{GraphError, Objects};
use parking_lot::Mutex;

/// Commits kept.
const COMMITS: usize = 64;

/// Recently read commits, most recent last.
#[derive(Default)]
pub(crate) struct CommitCache {
    recent: Mutex<VecDeque<(CommitId, Arc<Commit>)>>,
}

impl CommitCache {
    /// The commit `id`, from the cache or read from `objects` (then kept).
    pub(crate) fn get(&self, objects: &Objects, id: &CommitId) -> Result<Arc<Commit>, GraphError> {
        if let Some((_, c)) = self.recent.lock().iter().rev().find(|(k, _)| k == id) {
            return Ok(Arc::clone(c));
        }
        let c = Arc::new(objects.commit(id)?);
        let mut recent = self.recent.lock();
        if !recent.iter().any(|(k, _)| k == id) {
            if recent.len() >= COMMITS {
                recent.pop_front();
            }
            recent.push_back((*id, Arc::clone(&c)));
        }
        Ok(c)
    }

    /// Forgets every commit (`gc` deleted some).
    pub(crate) fn clear(&self) {
        self.recent.lock().clear();
    }
}
