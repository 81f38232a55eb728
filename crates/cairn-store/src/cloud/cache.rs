//! [`ObjectCache`]: a bounded in-memory cache of objects read from (or known to be in) an
//! object store, so that walking a tree twice does not fetch its nodes twice.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use cairn_core::Hash;
use parking_lot::Mutex;

/// Verified object bytes, at most `capacity_bytes` of them, evicted oldest first; and the
/// set of hashes known to be stored (written or read by this process), which answers
/// `contains` without a request.
pub(super) struct ObjectCache {
    inner: Mutex<Inner>,
    capacity_bytes: usize,
}

#[derive(Default)]
struct Inner {
    bytes: HashMap<Hash, Arc<[u8]>>,
    /// Insertion order, for eviction.
    order: VecDeque<Hash>,
    held_bytes: usize,
    present: HashSet<Hash>,
}

impl ObjectCache {
    pub(super) fn new(capacity_bytes: usize) -> ObjectCache {
        ObjectCache {
            inner: Mutex::new(Inner::default()),
            capacity_bytes,
        }
    }

    /// The bytes of `hash`, if held.
    pub(super) fn get(&self, hash: &Hash) -> Option<Arc<[u8]>> {
        self.inner.lock().bytes.get(hash).cloned()
    }

    /// True if `hash` is known to be stored.
    pub(super) fn known(&self, hash: &Hash) -> bool {
        self.inner.lock().present.contains(hash)
    }

    /// Notes that `hash` is stored.
    pub(super) fn mark_present(&self, hashes: impl IntoIterator<Item = Hash>) {
        self.inner.lock().present.extend(hashes);
    }

    /// Keeps verified `bytes` of `hash` (a value larger than the whole cache is not kept).
    pub(super) fn insert(&self, hash: Hash, bytes: Arc<[u8]>) {
        let mut inner = self.inner.lock();
        inner.present.insert(hash);
        if bytes.len() > self.capacity_bytes || inner.bytes.contains_key(&hash) {
            return;
        }
        inner.held_bytes += bytes.len();
        inner.bytes.insert(hash, bytes);
        inner.order.push_back(hash);
        while inner.held_bytes > self.capacity_bytes {
            let Some(old) = inner.order.pop_front() else { break };
            if let Some(b) = inner.bytes.remove(&old) {
                inner.held_bytes -= b.len();
            }
        }
    }

    /// Forgets `hashes` (deleted).
    pub(super) fn remove(&self, hashes: &[Hash]) {
        let mut inner = self.inner.lock();
        for h in hashes {
            inner.present.remove(h);
            if let Some(b) = inner.bytes.remove(h) {
                inner.held_bytes -= b.len();
            }
        }
        let Inner { order, bytes, .. } = &mut *inner;
        order.retain(|h| bytes.contains_key(h));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_within_its_bound() {
        let cache = ObjectCache::new(10);
        let a = Hash::of(b"a");
        let b = Hash::of(b"b");
        cache.insert(a, Arc::from(&[0u8; 6][..]));
        cache.insert(b, Arc::from(&[0u8; 6][..]));
        assert!(cache.get(&a).is_none(), "the oldest goes");
        assert!(cache.get(&b).is_some());
        assert!(cache.known(&a), "still known to be stored");
        cache.remove(&[a, b]);
        assert!(!cache.known(&a) && cache.get(&b).is_none());
    }
}
