//! The [`Store`] trait: the contract every backend keeps.

use std::path::Path;
use std::sync::Arc;

use cairn_core::Hash;

use crate::error::StoreError;

/// The result of [`Store::cas_ref`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CasOutcome {
    /// The ref held the expected value and now holds the new one.
    Swapped,
    /// The ref did not hold the expected value; nothing changed. Carries what it held.
    Conflict {
        /// The ref's current value (`None`: absent).
        current: Option<Vec<u8>>,
    },
}

/// A derived-data entry as the scans return it: `(key, value)`. An alias, so a plain
/// tuple is the same type.
pub type DerivedEntry = (Vec<u8>, Vec<u8>);

/// Damage a backend found in its own files (at open), apart from any one key's read:
/// bytes that held no readable record, derived data set aside. One line each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreDamage {
    /// Damage that may have cost objects or refs (reported by `fsck` as a problem).
    pub data: Vec<String>,
    /// Damage to derived data only (a cache: rebuilt on use).
    pub derived: Vec<String>,
    /// Damage to the ref log ([`Store::ref_log`]): records that could not be read and
    /// were skipped. The refs themselves are unharmed; only the history of their moves
    /// lost those records.
    pub ref_log: Vec<String>,
}

/// Counts reported by [`Store::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Number of objects.
    pub objects: u64,
    /// Sum of the objects' encoded sizes (payload bytes, without framing).
    pub object_bytes: u64,
    /// Number of derived-data entries.
    pub derived: u64,
    /// Sum of derived-data value sizes.
    pub derived_bytes: u64,
}

/// Copies bytes `offset..offset + out.len()` of `value` into `out`; false (and `out`
/// untouched) if `value` is shorter.
pub(crate) fn copy_range(value: &[u8], offset: u64, out: &mut [u8]) -> bool {
    match usize::try_from(offset)
        .ok()
        .and_then(|o| value.get(o..o.checked_add(out.len())?))
    {
        Some(bytes) => {
            out.copy_from_slice(bytes);
            true
        }
        None => false,
    }
}

/// A backend for Cairn's objects, refs and derived data.
///
/// Contract, for every implementation:
/// - **Objects** are immutable and content-addressed: `hash` is the blake3 hash of
///   `bytes` as computed by `cairn_core::codec::hash_object`. `put_batch` is idempotent
///   (writing an object that exists is a no-op); objects are never modified, only removed
///   by [`Store::delete_objects`] (garbage collection).
/// - **Integrity**: a backend that persists bytes stores a crc32 with every value and
///   reports a mismatch as [`StoreError::Corrupt`] naming the key; it never returns
///   damaged bytes as data.
/// - **Refs** are small named values (branch heads, `HEAD`, repo metadata). They change
///   only through [`Store::cas_ref`], which is atomic with respect to all other callers,
///   in this process and (for backends that allow several) in others.
/// - **Durability**: after [`Store::flush`] returns, every write that returned before it
///   survives a crash (process kill or power loss, as far as the medium allows). Callers
///   order their writes — objects, flush, ref — so a crash never leaves a ref naming a
///   missing object.
/// - **Derived data** (index snapshots, time indexes) lives in its own key space; it may
///   be deleted at any time and rebuilt from objects.
/// - **The ref log** is an append-only sequence of opaque records (the caller's history
///   of ref moves), kept apart from objects, refs and derived data. A record is appended
///   without a sync of its own: it is durable once a later [`Store::flush`] returns. A
///   damaged record costs that record only: reading skips it and [`Store::damage`] names
///   it.
/// - All methods take `&self` and may be called from many threads at once.
pub trait Store: Send + Sync + 'static {
    /// Reads an object. `Ok(None)` if absent; [`StoreError::Corrupt`] if its checksum
    /// does not match.
    fn get(&self, hash: &Hash) -> Result<Option<Arc<[u8]>>, StoreError>;

    /// Reads objects, each checked as by [`Store::get`], and passes each to `f` with its
    /// place in `hashes`, in that order, without handing over allocations: for a caller
    /// that decodes them at once (the index build reads every node of a commit, a chunk's
    /// nodes at a time). An absent object is skipped (`f` is not called for it); the
    /// first error ends the call. The default reads them one by one with [`Store::get`];
    /// the segment store locates a batch under one read of its index.
    fn with_objects(&self, hashes: &[Hash], f: &mut dyn FnMut(usize, &[u8])) -> Result<(), StoreError> {
        for (i, h) in hashes.iter().enumerate() {
            if let Some(v) = self.get(h)? {
                f(i, &v);
            }
        }
        Ok(())
    }

    /// True if the object is present (does not verify its checksum).
    fn contains(&self, hash: &Hash) -> Result<bool, StoreError>;

    /// Which of `hashes` are present, in their order: [`Store::contains`] for many at once,
    /// for a backend whose every check is a round trip (an object store asks concurrently).
    /// The default asks one at a time.
    fn contains_many(&self, hashes: &[Hash]) -> Result<Vec<bool>, StoreError> {
        hashes.iter().map(|h| self.contains(h)).collect()
    }

    /// Reads `out.len()` bytes of object `hash`'s encoding, from byte `offset` on,
    /// **without checking the object**: for a caller that reads a slice of many objects
    /// (an index part's rows, storage-format §7.3.4) and checks each slice against a
    /// checksum of its own. `Ok(false)` if the object is absent or shorter. The default
    /// reads the object whole with [`Store::get`] (checked) and copies the range; the
    /// segment store reads the range alone.
    fn read_object_at(&self, hash: &Hash, offset: u64, out: &mut [u8]) -> Result<bool, StoreError> {
        let Some(value) = self.get(hash)? else {
            return Ok(false);
        };
        Ok(copy_range(&value, offset, out))
    }

    /// A hint that `hashes` will be read soon: a backend whose reads are round trips may
    /// fetch them at once into a cache of its own (an object store does, checking each one's
    /// hash; what fails to arrive is simply read later, and its error reported then); the
    /// segment store asks the kernel to read their records into the page cache at once.
    /// Reads nothing for the caller. The default does nothing.
    fn prefetch(&self, hashes: &[Hash]) -> Result<(), StoreError> {
        let _ = hashes;
        Ok(())
    }

    /// Writes objects in batches (a few backend writes, not one per object; not atomic as a
    /// whole: after a crash some may be stored and others not, which is harmless, as nothing
    /// names an object until a ref moves after a flush). Objects already present are left
    /// as they are. Not durable until [`Store::flush`].
    fn put_batch(&self, objects: &[(Hash, Vec<u8>)]) -> Result<(), StoreError>;

    /// [`Store::put_batch`] taking ownership of the bytes, so a store that keeps them in
    /// memory can release each buffer as it stores it (a bulk commit then never holds its
    /// objects twice). The default lends them to [`Store::put_batch`].
    fn put_batch_owned(&self, objects: Vec<(Hash, Vec<u8>)>) -> Result<(), StoreError> {
        self.put_batch(&objects)
    }

    /// Lists every object hash, in hash order (used by `fsck` and `gc`).
    fn object_hashes(&self) -> Result<Vec<Hash>, StoreError>;

    /// Removes objects (garbage collection). Absent hashes are ignored.
    fn delete_objects(&self, hashes: &[Hash]) -> Result<(), StoreError>;

    /// Reads a ref. `Ok(None)` if absent.
    fn get_ref(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Atomically sets ref `name` to `new` (`None` deletes it) if it currently holds
    /// `expected` (`None`: absent). Durable when it returns `Swapped` (backends flush).
    /// An empty value is a value, not absence. If the backend fails after the swap
    /// (say, while flushing), the error is returned and the swap may or may not last.
    fn cas_ref(&self, name: &str, expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<CasOutcome, StoreError>;

    /// Removes ref `name` if its stored bytes fail their checksum, so that it can be set
    /// again (`true`: it was damaged and is gone). A sound or absent ref is left alone.
    /// Used by repair: a damaged ref can never be moved by [`Store::cas_ref`], since its
    /// current value cannot be read.
    fn remove_damaged_ref(&self, name: &str) -> Result<bool, StoreError> {
        let _ = name;
        Ok(false)
    }

    /// Lists refs whose names start with `prefix`, in name order. A backend that can tell
    /// one damaged ref from the rest leaves it out (and names it in
    /// [`Store::damaged_refs`]); one that cannot fails the listing.
    fn list_refs(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError>;

    /// The refs starting with `prefix` that [`Store::list_refs`] left out because their
    /// bytes fail their checksum, in name order. Whoever must see every ref (garbage
    /// collection) refuses to go on while any is damaged. Default: none.
    fn damaged_refs(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let _ = prefix;
        Ok(Vec::new())
    }

    /// Reads a derived-data value.
    fn get_derived(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;

    /// Reads a derived-data value, checked as by [`Store::get_derived`], and passes it to
    /// `f` without handing over an allocation: for a caller that decodes the value at once
    /// (index parts), so that loading thousands of large values reuses one buffer instead
    /// of faulting in fresh memory for each. `Ok(false)` (and `f` not called) if there is
    /// no such value. The default reads it with [`Store::get_derived`].
    fn with_derived(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool, StoreError> {
        match self.get_derived(key)? {
            Some(v) => {
                f(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Reads a derived-data value, checked as by [`Store::get_derived`], as a shared slice
    /// that may lie where the value is stored rather than in fresh memory: for a caller
    /// that keeps a large part of a value as it is (the int8 codes of a dense index part).
    /// The default copies [`Store::get_derived`]'s bytes; the segment store maps a sealed
    /// segment (immutable until compaction removes it, which a mapping outlives) and
    /// checks the value there. A mapped value was checked when read: a byte the disk
    /// changes under the page cache later is not seen by this check.
    fn get_derived_shared(&self, key: &[u8]) -> Result<Option<bytes::Bytes>, StoreError> {
        Ok(self.get_derived(key)?.map(bytes::Bytes::from))
    }

    /// Reads a derived-data value as [`Store::get_derived_shared`] does, but a store may
    /// hand it out **without checking the value's checksum** (the record's framing and key
    /// are checked): for a caller that checks what it reads against checksums of its own,
    /// a piece at a time (a dense index part: its head at once, each row's int8 codes when
    /// the row is first scored), so that a cold load reads only what it uses. The flag
    /// says whether the store did check the whole value (the caller may then skip its own
    /// checks). The default is [`Store::get_derived_shared`], checked as
    /// [`Store::checks_derived_values`] says.
    fn get_derived_shared_unchecked(&self, key: &[u8]) -> Result<Option<(bytes::Bytes, bool)>, StoreError> {
        Ok(self.get_derived_shared(key)?.map(|v| (v, self.checks_derived_values())))
    }

    /// Reads `out.len()` bytes of derived value `key`, from byte `offset` of the value,
    /// **without checking the value's checksum**: for a caller that reads a few rows of a
    /// large value and checks each row against checksums of its own (index parts whose f32
    /// rows stay on disk). `Ok(false)` if there is no such value or it is shorter than
    /// `offset + out.len()` (`out` is then unspecified). The default reads the whole value
    /// (checked) and copies the range; a backend that can read only the range says so with
    /// [`Store::reads_derived_ranges`].
    fn read_derived_at(&self, key: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, StoreError> {
        let Some(value) = self.get_derived(key)? else {
            return Ok(false);
        };
        Ok(copy_range(&value, offset, out))
    }

    /// True if [`Store::read_derived_at`] reads only the bytes asked for (so a repository
    /// may leave large derived rows on disk and read them one at a time). Default: false.
    fn reads_derived_ranges(&self) -> bool {
        false
    }

    /// True if every derived value this store hands out ([`Store::get_derived`],
    /// [`Store::with_derived`], [`Store::get_derived_shared`]) was checked as it was read
    /// against a checksum the store wrote with exactly those bytes, so that damage to the
    /// stored bytes comes back as [`StoreError::Corrupt`], never as other bytes. A reader
    /// may then skip its own checksum over the same bytes (the index's dense parts leave
    /// their codes unread at load). Default: false.
    fn checks_derived_values(&self) -> bool {
        false
    }

    /// Writes derived-data values in one batch.
    fn put_derived(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), StoreError>;

    /// Deletes derived-data values.
    fn delete_derived(&self, keys: &[Vec<u8>]) -> Result<(), StoreError>;

    /// Lists derived-data entries whose key starts with `prefix`, in key order.
    fn scan_derived(&self, prefix: &[u8]) -> Result<Vec<DerivedEntry>, StoreError>;

    /// The entry with the greatest key that starts with `prefix` and is `<= upper`, if
    /// any (a point lookup in a sorted index, e.g. "last commit at or before time T").
    /// Keys of other prefixes are never returned, even when they lie between `prefix`
    /// and `upper`; an `upper` past every key of the prefix yields the prefix's last key.
    fn last_derived_at_or_before(&self, prefix: &[u8], upper: &[u8]) -> Result<Option<DerivedEntry>, StoreError>;

    /// Makes every write that has returned durable.
    fn flush(&self) -> Result<(), StoreError>;

    /// Writes out the derived values this backend still holds in its own memory, so a
    /// large index build does not pile them up there (sled held ~2 GiB beyond a 325 MiB
    /// build without it). **Not** a durability point: derived data is a cache, rebuilt
    /// when lost. Default: [`Store::flush`].
    fn flush_derived(&self) -> Result<(), StoreError> {
        self.flush()
    }

    /// Makes every object written so far durable: what a commit needs before its ref
    /// moves, on the path whose latency matters. Derived data (a cache) and the ref log may
    /// be synced later, by [`Store::flush`]. The default flushes everything.
    fn flush_objects(&self) -> Result<(), StoreError> {
        self.flush()
    }

    /// Object and derived-data counts and sizes (may scan; for `stats` and benchmarks).
    fn stats(&self) -> Result<StoreStats, StoreError>;

    /// Gives the disk space of deleted and replaced values back to the file system, as far
    /// as the backend can; garbage collection calls it last. Keeps the durability contract:
    /// a crash at any point loses nothing stored and brings back nothing deleted. The
    /// default does nothing (a store that keeps no files, or reclaims space by itself).
    fn compact(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Bytes of every file the store keeps (`None`: it keeps no files). Garbage
    /// collection reports the space it gave back from it.
    fn disk_bytes(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    /// Lists derived-data keys starting with `prefix`, in key order, without returning
    /// their values (for `gc`, which judges entries by key alone).
    fn derived_keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self.scan_derived(prefix)?.into_iter().map(|(k, _)| k).collect())
    }

    /// True if the store's contents outlive the process. A repository stores derived data
    /// (index chunks) only in such a store: in one that dies with the process, the
    /// in-memory cache is the only copy worth keeping.
    fn is_persistent(&self) -> bool {
        true
    }

    /// Damage the backend found in its own files, beyond what reading a key reports
    /// (default: none found).
    fn damage(&self) -> StoreDamage {
        StoreDamage::default()
    }

    /// Appends `record` (1..=[`MAX_REF_LOG_RECORD`] bytes, opaque to the store) to the ref
    /// log. Not durable until the next [`Store::flush`]: callers append after the ref
    /// moved, so a crash in between costs the record, never the move. Errors:
    /// [`StoreError::Backend`] for an empty or oversized record (nothing appended), or
    /// from the backend. The default keeps no log and refuses.
    fn append_ref_log(&self, record: &[u8]) -> Result<(), StoreError> {
        let _ = record;
        Err(StoreError::Backend("this store keeps no ref log".to_owned()))
    }

    /// Every readable ref-log record, in append order. A damaged record is skipped (and
    /// named by [`Store::damage`]), never returned. The default keeps no log: empty.
    fn ref_log(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(Vec::new())
    }

    /// Keeps the ref-log records for which `keep` returns true, in their order, and drops
    /// the rest (and any damaged record). Atomic: after a crash the log is the old one or
    /// the new one, and the new one is durable when this returns. Records appended
    /// concurrently are kept (they are judged by `keep` or left alone, never lost).
    fn retain_ref_log(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<(), StoreError> {
        let _ = keep;
        Ok(())
    }
}

/// The longest ref-log record a store accepts (64 KiB).
pub const MAX_REF_LOG_RECORD: usize = 64 * 1024;

/// Checks a record for [`Store::append_ref_log`].
pub(crate) fn check_ref_log_record(record: &[u8]) -> Result<(), StoreError> {
    if record.is_empty() || record.len() > MAX_REF_LOG_RECORD {
        return Err(StoreError::Backend(format!(
            "a ref-log record must be 1..={MAX_REF_LOG_RECORD} bytes, not {}",
            record.len()
        )));
    }
    Ok(())
}

/// The bytes of every file under `dir` (what [`Store::disk_bytes`] reports for a store
/// kept in a directory). A file removed during the walk counts as gone.
pub(crate) fn bytes_under(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(total)
}
