//! Dropping a repository's derived data: every stored index value, and this handle's
//! cache. Derived data is a cache of the objects, so nothing is lost: the next query (or
//! `Repo::build_indexes`) builds what it needs again.

use std::sync::atomic::Ordering;

use crate::derived::keys::SPACES;
use crate::error::Result;
use crate::repo::Repo;

/// Keys deleted per store call.
const DELETE_BATCH: usize = 4096;

impl Repo {
    /// Deletes every derived value the store holds — index chunks, unit graphs, manifests,
    /// time indexes, and those of retired formats — and empties this handle's index
    /// cache; returns how many values were deleted. Objects, refs and the reflog are not
    /// touched, and every query answers as before (after building its indexes again).
    /// For benchmarks of cold builds, and to give back the disk they take (`cairn gc`
    /// then compacts the segments); `cairn index drop` on the command line.
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?).with_text("how wings stall"))?;
    /// tx.commit("a")?;
    /// let before = repo.retrieve().text("stall").execute()?;
    /// assert!(repo.drop_derived()? > 0);
    /// let after = repo.retrieve().text("stall").execute()?;
    /// assert_eq!(before, after);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn drop_derived(&self) -> Result<u64> {
        let store = self.store();
        let mut deleted = 0u64;
        // Builds are serialised on this lock: none stores values while they are dropped.
        let _build = self.inner.derived.cache.build.lock();
        for space in SPACES {
            let keys = store.derived_keys(space.prefix())?;
            for batch in keys.chunks(DELETE_BATCH) {
                store.delete_derived(batch)?;
            }
            deleted += keys.len() as u64;
        }
        self.inner.derived.cache.clear();
        *self.inner.derived.stored.lock() = (0, 0);
        self.inner.derived.parts_loaded.store(0, Ordering::Relaxed);
        self.inner.derived.chunks_built.store(0, Ordering::Relaxed);
        self.inner.derived.graphs_built.store(0, Ordering::Relaxed);
        Ok(deleted)
    }
}
