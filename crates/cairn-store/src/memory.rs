//! [`MemoryStore`]: a [`Store`] held in memory, for tests and short-lived repositories.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use cairn_core::Hash;
use parking_lot::RwLock;

use crate::backend::{check_ref_log_record, CasOutcome, DerivedEntry, Store, StoreStats};
use crate::error::StoreError;
use crate::range::{at_or_before_upper, prefix_end};

/// A [`Store`] that keeps everything in ordered maps in memory.
///
/// Nothing is persisted, so values carry no checksum and [`Store::flush`] does nothing;
/// no method fails (but for a ref-log record of a refused size). Each key space has its
/// own lock, so object reads do not wait for ref writes. Creating one allocates nothing,
/// so tests may make as many as they like.
///
/// ```
/// use cairn_core::Hash;
/// use cairn_store::{CasOutcome, MemoryStore, Store};
///
/// let store = MemoryStore::new();
/// let bytes = b"an object".to_vec();
/// let hash = Hash::of(&bytes);
/// store.put_batch(&[(hash, bytes.clone())])?;
/// assert_eq!(store.get(&hash)?.as_deref(), Some(&bytes[..]));
/// assert_eq!(store.cas_ref("HEAD", None, Some(b"main"))?, CasOutcome::Swapped);
/// # Ok::<(), cairn_store::StoreError>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    objects: RwLock<BTreeMap<Hash, Arc<[u8]>>>,
    refs: RwLock<BTreeMap<String, Vec<u8>>>,
    derived: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
    /// The ref log, in append order.
    ref_log: RwLock<Vec<Vec<u8>>>,
    /// Report itself persistent (see [`MemoryStore::keeping_derived`]).
    keeps_derived: bool,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// An empty store that reports itself persistent ([`Store::is_persistent`]), so a
    /// repository over it stores derived data as it would on disk. For tests of derived
    /// data (storage, damage, garbage collection) without a disk.
    pub fn keeping_derived() -> MemoryStore {
        MemoryStore {
            keeps_derived: true,
            ..MemoryStore::default()
        }
    }
}

/// Lower and upper bounds of a prefix scan over byte-string keys.
fn prefix_bounds(prefix: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let end = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
    (Bound::Included(prefix.to_vec()), end)
}

impl Store for MemoryStore {
    fn get(&self, hash: &Hash) -> Result<Option<Arc<[u8]>>, StoreError> {
        Ok(self.objects.read().get(hash).cloned())
    }

    fn contains(&self, hash: &Hash) -> Result<bool, StoreError> {
        Ok(self.objects.read().contains_key(hash))
    }

    fn put_batch(&self, objects: &[(Hash, Vec<u8>)]) -> Result<(), StoreError> {
        let mut map = self.objects.write();
        for (hash, bytes) in objects {
            // Objects are immutable: a present one is kept, not replaced.
            map.entry(*hash).or_insert_with(|| Arc::from(bytes.as_slice()));
        }
        Ok(())
    }

    fn put_batch_owned(&self, objects: Vec<(Hash, Vec<u8>)>) -> Result<(), StoreError> {
        let mut map = self.objects.write();
        for (hash, bytes) in objects {
            // Each buffer is freed as soon as its copy is stored.
            map.entry(hash).or_insert_with(|| Arc::from(bytes.as_slice()));
        }
        Ok(())
    }

    fn object_hashes(&self) -> Result<Vec<Hash>, StoreError> {
        Ok(self.objects.read().keys().copied().collect())
    }

    fn delete_objects(&self, hashes: &[Hash]) -> Result<(), StoreError> {
        let mut map = self.objects.write();
        for hash in hashes {
            map.remove(hash);
        }
        Ok(())
    }

    fn get_ref(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.refs.read().get(name).cloned())
    }

    fn cas_ref(&self, name: &str, expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<CasOutcome, StoreError> {
        // One write lock covers the comparison and the change, which makes them atomic.
        let mut refs = self.refs.write();
        let current = refs.get(name).map(Vec::as_slice);
        if current != expected {
            return Ok(CasOutcome::Conflict {
                current: current.map(<[u8]>::to_vec),
            });
        }
        match new {
            Some(value) => {
                refs.insert(name.to_owned(), value.to_vec());
            }
            None => {
                refs.remove(name);
            }
        }
        Ok(CasOutcome::Swapped)
    }

    fn list_refs(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let refs = self.refs.read();
        let range = refs.range::<str, _>((Bound::Included(prefix), Bound::Unbounded));
        Ok(range
            .take_while(|(name, _)| name.starts_with(prefix))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect())
    }

    fn get_derived(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.derived.read().get(key).cloned())
    }

    fn read_derived_at(&self, key: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, StoreError> {
        let map = self.derived.read();
        let Some(value) = map.get(key) else {
            return Ok(false);
        };
        Ok(crate::backend::copy_range(value, offset, out))
    }

    /// True when it keeps derived data ([`MemoryStore::keeping_derived`]): a range is
    /// copied out of the map without copying the rest.
    fn reads_derived_ranges(&self) -> bool {
        self.keeps_derived
    }

    fn put_derived(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), StoreError> {
        let mut map = self.derived.write();
        for (key, value) in entries {
            map.insert(key.clone(), value.clone());
        }
        Ok(())
    }

    fn delete_derived(&self, keys: &[Vec<u8>]) -> Result<(), StoreError> {
        let mut map = self.derived.write();
        for key in keys {
            map.remove(key);
        }
        Ok(())
    }

    fn scan_derived(&self, prefix: &[u8]) -> Result<Vec<DerivedEntry>, StoreError> {
        let map = self.derived.read();
        Ok(map
            .range(prefix_bounds(prefix))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect())
    }

    fn last_derived_at_or_before(&self, prefix: &[u8], upper: &[u8]) -> Result<Option<DerivedEntry>, StoreError> {
        let Some(end) = at_or_before_upper(prefix, upper) else {
            return Ok(None);
        };
        let map = self.derived.read();
        // `at_or_before_upper` never yields an end below `prefix`, so the range is valid.
        let last = map.range((Bound::Included(prefix.to_vec()), end)).next_back();
        Ok(last.map(|(key, value)| (key.clone(), value.clone())))
    }

    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn is_persistent(&self) -> bool {
        self.keeps_derived
    }

    fn append_ref_log(&self, record: &[u8]) -> Result<(), StoreError> {
        check_ref_log_record(record)?;
        self.ref_log.write().push(record.to_vec());
        Ok(())
    }

    fn ref_log(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self.ref_log.read().clone())
    }

    fn retain_ref_log(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<(), StoreError> {
        self.ref_log.write().retain(|r| keep(r));
        Ok(())
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        let objects = self.objects.read();
        let derived = self.derived.read();
        Ok(StoreStats {
            objects: objects.len() as u64,
            object_bytes: objects.values().map(|v| v.len() as u64).sum(),
            derived: derived.len() as u64,
            derived_bytes: derived.values().map(|v| v.len() as u64).sum(),
        })
    }
}
