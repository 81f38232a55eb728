//! [`SledStore`]: the on-disk [`Store`], over sled 0.34.7.
//!
//! Layout (described in prose in `store-format.md`): three sled trees in one database,
//! - `objects`: key = the object's 32 raw hash bytes, value = [`frame`]`(encoded object)`;
//! - `refs`: key = the ref name's UTF-8 bytes, value = [`frame`]`(ref value)`;
//! - `derived`: key = the caller's raw key, value = [`frame`]`(value)`.
//!
//! Every value is framed (crc32 + payload) because sled checksums its log records but a
//! damaged page that escapes that check, or a bug above sled, would otherwise come back
//! as plausible bytes; the frame makes every read verify what it returns.

use std::fmt;
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Hash;

use crate::backend::{CasOutcome, DerivedEntry, Store, StoreStats};
use crate::error::{hex, StoreError};
use crate::frame::{frame, unframe, CRC_LEN};
use crate::range::at_or_before_upper;

/// Name of the sled tree holding objects.
const OBJECTS_TREE: &str = "objects";
/// Name of the sled tree holding refs.
const REFS_TREE: &str = "refs";
/// Name of the sled tree holding derived data.
const DERIVED_TREE: &str = "derived";

/// sled's page cache limit. sled's default (1 GiB) is more than an embedded library
/// should take by default, and was no faster: writing 1M objects of 90 B took 35 s with
/// 256 MiB against 91 s with 1 GiB (tests/measure.rs, one run on a shared 2-core machine).
const CACHE_CAPACITY_BYTES: u64 = 256 * 1024 * 1024;

/// The text sled 0.34.7 puts in the `io::Error` it returns when another handle holds the
/// database's file lock (see `Config::try_lock` in sled's `config.rs`). sled has no
/// dedicated error variant for it; the version is pinned (`=0.34.7`), and a test checks
/// that a second open is still reported as [`StoreError::Locked`].
const SLED_LOCK_MESSAGE: &str = "could not acquire lock";

/// Bytes of objects per sled batch in a bulk write (bounds the framed copies held at once).
const SUB_BATCH_BYTES: usize = 8 << 20;

/// How long [`SledStore::open`] waits for a lock held by this process's last close.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// A [`Store`] kept on disk in a sled database.
///
/// One process, and within it one `SledStore`, may have a database open at a time: a
/// second [`SledStore::open`] of the same path fails with [`StoreError::Locked`], so
/// share one store between threads (it is `Send + Sync`; wrap it in an `Arc`).
///
/// Writes reach the disk in the background (sled flushes every 500 ms); only
/// [`Store::flush`] and a successful [`Store::cas_ref`] promise durability.
///
/// ```
/// use cairn_core::Hash;
/// use cairn_store::{SledStore, Store};
///
/// let dir = tempfile::tempdir().unwrap();
/// let bytes = b"an object".to_vec();
/// let hash = Hash::of(&bytes);
/// {
///     let store = SledStore::open(dir.path())?;
///     store.put_batch(&[(hash, bytes.clone())])?;
///     store.flush()?;
/// }
/// let store = SledStore::open(dir.path())?;
/// assert_eq!(store.get(&hash)?.as_deref(), Some(&bytes[..]));
/// # Ok::<(), cairn_store::StoreError>(())
/// ```
pub struct SledStore {
    path: PathBuf,
    db: sled::Db,
    objects: sled::Tree,
    refs: sled::Tree,
    derived: sled::Tree,
}

impl fmt::Debug for SledStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SledStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SledStore {
    /// Opens the database in directory `path`, creating the directory and an empty
    /// database if absent.
    ///
    /// Opening counts and scans nothing. sled's own recovery replays the log written
    /// since the previous open (sled 0.34 writes its page-table snapshot only when it
    /// opens), so the time depends on the writes of the last session, not on the size
    /// of the store: reopening a store of 1M objects takes about 0.1 s, but the first
    /// open after writing those 1M objects took about 5 s (tests/measure.rs).
    ///
    /// Errors: [`StoreError::Locked`] if another process (or another `SledStore` in
    /// this one) has the database open — after retrying for a second, since a database
    /// this process has just closed is released a moment later, when sled's flush thread
    /// exits; [`StoreError::Backend`] for any other failure.
    pub fn open(path: &Path) -> Result<SledStore, StoreError> {
        // A database this process has just closed stays locked until sled's flush thread
        // has exited, a moment later: retry for up to `LOCK_WAIT` before reporting it.
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(5);
        let db = loop {
            let opened = sled::Config::new()
                .path(path)
                // HighThroughput: 1M objects of 90 B written in 35 s against 41 s in
                // LowSpace, with the same space on disk (about 400 MB either way).
                .mode(sled::Mode::HighThroughput)
                .cache_capacity(CACHE_CAPACITY_BYTES)
                .open()
                .map_err(|e| open_error(path, e));
            match opened {
                Err(StoreError::Locked { .. }) if started.elapsed() < LOCK_WAIT => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(100));
                }
                other => break other?,
            }
        };
        let open_tree = |name: &str| {
            db.open_tree(name)
                .map_err(|e| StoreError::Backend(format!("opening tree `{name}` of {}: {e}", path.display())))
        };
        Ok(SledStore {
            path: path.to_path_buf(),
            objects: open_tree(OBJECTS_TREE)?,
            refs: open_tree(REFS_TREE)?,
            derived: open_tree(DERIVED_TREE)?,
            db,
        })
    }

    /// The directory the database lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The underlying sled database, so tests can damage stored bytes on purpose.
    /// Writing through it bypasses framing and every invariant of the store.
    #[doc(hidden)]
    pub fn raw_db(&self) -> &sled::Db {
        &self.db
    }
}

/// Maps a failure to open the database, recognising sled's "locked" error.
fn open_error(path: &Path, e: sled::Error) -> StoreError {
    match e {
        sled::Error::Io(ref io) if io.kind() == io::ErrorKind::Other && io.to_string().contains(SLED_LOCK_MESSAGE) => {
            StoreError::Locked {
                path: path.display().to_string(),
            }
        }
        other => StoreError::Backend(format!("opening sled database at {}: {other}", path.display())),
    }
}

/// Maps a sled error met while touching one key. sled's own checksum failure on that
/// key is reported as corruption of the key, the rest as backend failures.
fn keyed_error(e: sled::Error, space: &'static str, key: String) -> StoreError {
    match e {
        sled::Error::Corruption { at, .. } => StoreError::Corrupt {
            space,
            key,
            detail: format!("sled found a damaged log record (at {at:?})"),
        },
        other => StoreError::Backend(format!("sled, {space} {key}: {other}")),
    }
}

/// Maps a sled error met in an operation over many keys (batch, scan, flush).
fn bulk_error(e: sled::Error, what: &str) -> StoreError {
    StoreError::Backend(format!("sled, {what}: {e}"))
}

/// The hash a key of the `objects` tree names; a key that is not 32 bytes long is
/// corruption (the store only ever writes 32-byte keys).
fn object_key(key: &[u8]) -> Result<Hash, StoreError> {
    let bytes: [u8; 32] = key.try_into().map_err(|_| StoreError::Corrupt {
        space: "object",
        key: hex(key),
        detail: format!("object key is {} bytes, expected 32", key.len()),
    })?;
    Ok(Hash::from_bytes(bytes))
}

/// Unframes a derived-data value read under `key`.
fn unframe_derived(key: &[u8], value: &[u8]) -> Result<Vec<u8>, StoreError> {
    unframe(value)
        .map(<[u8]>::to_vec)
        .map_err(|detail| StoreError::corrupt_derived(key, detail))
}

/// Unframes a ref value read under `name`.
fn unframe_ref(name: &str, value: &[u8]) -> Result<Vec<u8>, StoreError> {
    unframe(value)
        .map(<[u8]>::to_vec)
        .map_err(|detail| StoreError::corrupt_ref(name, detail))
}

impl SledStore {
    /// Writes objects in sled batches of at most [`SUB_BATCH_BYTES`], skipping present ones.
    /// Objects need no atomicity among themselves (nothing names them until a ref moves,
    /// after a flush), so a bulk write never holds more than one sub-batch of framed copies.
    fn put_objects<'a>(&self, objects: impl Iterator<Item = (Hash, &'a [u8])>) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        let mut pending = 0usize;
        let mut pending_bytes = 0usize;
        for (hash, bytes) in objects {
            // Rewriting a present object would be harmless (same bytes), but every sled
            // write appends to its log. Measured (tests/measure.rs, 100k objects of 90 B):
            // the lookups add nothing visible to a batch of new objects (1.4-1.5 s either
            // way), and a re-put of present objects costs 0.3 s of lookups instead of
            // 0.3-0.7 s of writes that also leave pages for sled to consolidate later.
            if self
                .objects
                .contains_key(hash.as_bytes())
                .map_err(|e| keyed_error(e, "object", hash.to_hex()))?
            {
                continue;
            }
            batch.insert(&hash.as_bytes()[..], frame(bytes));
            pending += 1;
            pending_bytes += bytes.len();
            if pending_bytes >= SUB_BATCH_BYTES {
                self.objects
                    .apply_batch(std::mem::take(&mut batch))
                    .map_err(|e| bulk_error(e, &format!("writing a batch of {pending} objects")))?;
                pending = 0;
                pending_bytes = 0;
            }
        }
        if pending == 0 {
            return Ok(());
        }
        self.objects
            .apply_batch(batch)
            .map_err(|e| bulk_error(e, &format!("writing a batch of {pending} objects")))
    }
}

impl Store for SledStore {
    fn get(&self, hash: &Hash) -> Result<Option<Arc<[u8]>>, StoreError> {
        let Some(value) = self
            .objects
            .get(hash.as_bytes())
            .map_err(|e| keyed_error(e, "object", hash.to_hex()))?
        else {
            return Ok(None);
        };
        let payload = unframe(&value).map_err(|detail| StoreError::corrupt_object(hash, detail))?;
        Ok(Some(Arc::from(payload)))
    }

    fn contains(&self, hash: &Hash) -> Result<bool, StoreError> {
        self.objects
            .contains_key(hash.as_bytes())
            .map_err(|e| keyed_error(e, "object", hash.to_hex()))
    }

    fn put_batch(&self, objects: &[(Hash, Vec<u8>)]) -> Result<(), StoreError> {
        self.put_objects(objects.iter().map(|(h, b)| (*h, b.as_slice())))
    }

    fn put_batch_owned(&self, objects: Vec<(Hash, Vec<u8>)>) -> Result<(), StoreError> {
        // Each buffer is dropped once framed into the current sub-batch.
        let mut batch = Vec::new();
        let mut bytes = 0usize;
        for (hash, body) in objects {
            bytes += body.len();
            batch.push((hash, body));
            if bytes >= SUB_BATCH_BYTES {
                self.put_objects(batch.iter().map(|(h, b)| (*h, b.as_slice())))?;
                batch.clear();
                bytes = 0;
            }
        }
        self.put_objects(batch.iter().map(|(h, b)| (*h, b.as_slice())))
    }
    fn object_hashes(&self) -> Result<Vec<Hash>, StoreError> {
        self.objects
            .iter()
            .keys()
            .map(|key| object_key(&key.map_err(|e| bulk_error(e, "listing objects"))?))
            .collect()
    }

    fn delete_objects(&self, hashes: &[Hash]) -> Result<(), StoreError> {
        if hashes.is_empty() {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for hash in hashes {
            batch.remove(&hash.as_bytes()[..]);
        }
        self.objects
            .apply_batch(batch)
            .map_err(|e| bulk_error(e, &format!("deleting a batch of {} objects", hashes.len())))
    }

    fn get_ref(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let value = self
            .refs
            .get(name.as_bytes())
            .map_err(|e| keyed_error(e, "ref", name.to_owned()))?;
        value.map(|v| unframe_ref(name, &v)).transpose()
    }

    fn cas_ref(&self, name: &str, expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<CasOutcome, StoreError> {
        // Framing is deterministic, so comparing framed bytes compares the values; a
        // damaged stored frame never equals a well-formed expected one, so it lands in
        // the conflict branch, where unframing reports it.
        let outcome = self
            .refs
            .compare_and_swap(name.as_bytes(), expected.map(frame), new.map(frame))
            .map_err(|e| keyed_error(e, "ref", name.to_owned()))?;
        match outcome {
            Ok(()) => {
                // The contract makes a moved ref durable on return: flush now.
                self.db
                    .flush()
                    .map_err(|e| bulk_error(e, &format!("flushing after moving ref `{name}`")))?;
                Ok(CasOutcome::Swapped)
            }
            Err(conflict) => Ok(CasOutcome::Conflict {
                current: conflict.current.map(|v| unframe_ref(name, &v)).transpose()?,
            }),
        }
    }

    fn list_refs(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.refs
            .scan_prefix(prefix.as_bytes())
            .map(|entry| {
                let (key, value) = entry.map_err(|e| bulk_error(e, &format!("listing refs under `{prefix}`")))?;
                let name = std::str::from_utf8(&key).map_err(|_| StoreError::Corrupt {
                    space: "ref",
                    key: hex(&key),
                    detail: "ref name is not UTF-8".to_owned(),
                })?;
                Ok((name.to_owned(), unframe_ref(name, &value)?))
            })
            .collect()
    }

    fn get_derived(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let value = self.derived.get(key).map_err(|e| keyed_error(e, "derived", hex(key)))?;
        value.map(|v| unframe_derived(key, &v)).transpose()
    }

    fn put_derived(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for (key, value) in entries {
            batch.insert(key.as_slice(), frame(value));
        }
        self.derived
            .apply_batch(batch)
            .map_err(|e| bulk_error(e, &format!("writing a batch of {} derived entries", entries.len())))
    }

    fn delete_derived(&self, keys: &[Vec<u8>]) -> Result<(), StoreError> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for key in keys {
            batch.remove(key.as_slice());
        }
        self.derived
            .apply_batch(batch)
            .map_err(|e| bulk_error(e, &format!("deleting a batch of {} derived entries", keys.len())))
    }

    fn scan_derived(&self, prefix: &[u8]) -> Result<Vec<DerivedEntry>, StoreError> {
        self.derived
            .scan_prefix(prefix)
            .map(|entry| {
                let (key, value) =
                    entry.map_err(|e| bulk_error(e, &format!("scanning derived data under {}", hex(prefix))))?;
                let value = unframe_derived(&key, &value)?;
                Ok((key.to_vec(), value))
            })
            .collect()
    }

    fn derived_keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>, StoreError> {
        // sled's iterator hands out values as shared buffers: no value is copied or checked.
        self.derived
            .scan_prefix(prefix)
            .keys()
            .map(|k| {
                k.map(|k| k.to_vec())
                    .map_err(|e| bulk_error(e, &format!("listing derived keys under {}", hex(prefix))))
            })
            .collect()
    }

    fn last_derived_at_or_before(&self, prefix: &[u8], upper: &[u8]) -> Result<Option<DerivedEntry>, StoreError> {
        let Some(end) = at_or_before_upper(prefix, upper) else {
            return Ok(None);
        };
        let last = self
            .derived
            .range::<Vec<u8>, _>((Bound::Included(prefix.to_vec()), end))
            .next_back();
        let Some(entry) = last else {
            return Ok(None);
        };
        let (key, value) =
            entry.map_err(|e| bulk_error(e, &format!("searching derived data under {}", hex(prefix))))?;
        let value = unframe_derived(&key, &value)?;
        Ok(Some((key.to_vec(), value)))
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.db
            .flush()
            .map(drop)
            .map_err(|e| bulk_error(e, &format!("flushing {}", self.path.display())))
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        let mut stats = StoreStats::default();
        // Sizes are payload sizes, so the 4-byte frame is subtracted; a value too short to
        // hold one is corrupt, but stats is a count, not a check (that is fsck's job).
        for entry in self.objects.iter().values() {
            let value = entry.map_err(|e| bulk_error(e, "counting objects"))?;
            stats.objects += 1;
            stats.object_bytes += value.len().saturating_sub(CRC_LEN) as u64;
        }
        for entry in self.derived.iter().values() {
            let value = entry.map_err(|e| bulk_error(e, "counting derived data"))?;
            stats.derived += 1;
            stats.derived_bytes += value.len().saturating_sub(CRC_LEN) as u64;
        }
        Ok(stats)
    }
}
