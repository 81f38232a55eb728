//! Dropping a repository's derived data: every stored index value, and this handle's
//! cache. Derived data is a cache of the objects, so nothing is lost: the next query (or
//! `Repo::build_indexes`) builds what it needs again.

use std::sync::atomic::Ordering;

use crate::derived::keys::SPACES;
use crate::derived::DerivedData;
use crate::error::Result;

/// Keys deleted per store call.
const DELETE_BATCH: usize = 4096;

impl DerivedData {
    /// Deletes every derived value the store holds and empties the caches and counters
    /// ([`Repo::drop_derived`](crate::Repo::drop_derived)); returns how many values were
    /// deleted.
    pub(crate) fn drop_all(&self) -> Result<u64> {
        let store = &self.store;
        let mut deleted = 0u64;
        // Builds are serialised on this lock: none stores values while they are dropped.
        let _build = self.cache.build.lock();
        for space in SPACES {
            let keys = store.derived_keys(space.prefix())?;
            for batch in keys.chunks(DELETE_BATCH) {
                store.delete_derived(batch)?;
            }
            deleted += keys.len() as u64;
        }
        self.cache.clear();
        *self.stored.lock() = (0, 0);
        self.parts_loaded.store(0, Ordering::Relaxed);
        self.chunks_built.store(0, Ordering::Relaxed);
        self.graphs_built.store(0, Ordering::Relaxed);
        Ok(deleted)
    }
}
