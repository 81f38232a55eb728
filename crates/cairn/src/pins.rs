//! Objects written ahead of their commit. A transaction holding many nodes writes them to
//! the store as it goes (so a bulk import never holds its whole input), before any ref
//! names them; until its commit has moved the branch, or it is dropped, `gc` must not
//! collect them. Each such transaction pins what it wrote here; `gc` keeps every pinned
//! object as if a ref reached it (`gc.rs`, phase 2). A dropped transaction's objects are
//! unpinned and, unreachable, collected by the next `gc`.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_core::Hash;
use parking_lot::Mutex;

/// The pinned objects of a repository handle, per open transaction.
#[derive(Default)]
pub(crate) struct Pins {
    next: AtomicU64,
    sets: Mutex<BTreeMap<u64, Vec<Hash>>>,
}

impl Pins {
    /// A new, empty pin set for one transaction.
    pub(crate) fn open(&self) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.sets.lock().insert(id, Vec::new());
        id
    }

    /// Pins `hashes` under `set` (before they are written).
    pub(crate) fn add(&self, set: u64, hashes: impl IntoIterator<Item = Hash>) {
        self.sets.lock().entry(set).or_default().extend(hashes);
    }

    /// Unpins everything under `set`.
    pub(crate) fn release(&self, set: u64) {
        self.sets.lock().remove(&set);
    }

    /// Every pinned object.
    pub(crate) fn all(&self) -> HashSet<Hash> {
        self.sets.lock().values().flatten().copied().collect()
    }
}
