//! [`SegmentStore`]: Cairn's own on-disk [`Store`] (documented on the type).

mod hint;
mod index;
mod log;
mod reader;
mod record;
mod reflog;
mod refs;
mod snapshot;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Hash;

use self::log::{io_error, sync_dir, Log};
use self::reflog::RefLogFile;
use self::refs::RefFiles;
use crate::backend::{bytes_under, CasOutcome, DerivedEntry, Store, StoreDamage, StoreStats};
use crate::error::StoreError;
use crate::range::{at_or_before_upper, prefix_end};

/// The marker file's name.
pub const MARKER: &str = "CAIRN-STORE";

/// A change a [`SegmentStore`]'s object or derived log just made to its files, as told
/// to the hook set by [`SegmentStore::on_file_step`]. The files as they are during the
/// call are what a `kill -9` at that point would leave (the operating system has every
/// byte written), so crash tests copy them there.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStep {
    /// The log: `"object"` or `"derived"`.
    pub space: &'static str,
    /// The file changed.
    pub path: PathBuf,
    /// What changed.
    pub change: FileChange,
}

/// What a [`FileStep`] changed.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileChange {
    /// Records written at bytes `from..to` of a segment, the index told; a kill during
    /// the write could leave any length in between.
    Appended {
        /// The segment's length before the write.
        from: u64,
        /// Its length after.
        to: u64,
    },
    /// A segment sealed: synced and its hint written.
    Sealed,
    /// A new, empty segment created (the directory synced).
    Created,
    /// A compacted segment's file removed (its live records were copied and synced).
    Removed,
    /// A compacted segment's hint removed.
    HintRemoved,
}

/// The hook of [`SegmentStore::on_file_step`].
#[doc(hidden)]
pub type FileStepHook = Arc<dyn Fn(&FileStep) + Send + Sync>;

/// How stale the ref log may get on the commit path ([`Store::flush_objects`]): a power
/// loss takes at most the moves of the last second (and of the time since the last
/// commit); a full [`Store::flush`], closing the store, and branch creation and deletion
/// sync it at once.
pub const REF_LOG_SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// The first line of the marker for this version of the layout; the second line is
/// `crc32 ` and the crc32 of the first line (with its newline) in 8 lowercase hex digits.
const MARKER_V1: &str = "cairn segment store 1\n";

/// The marker file's content.
fn marker_bytes() -> Vec<u8> {
    format!("{MARKER_V1}crc32 {:08x}\n", crc32fast::hash(MARKER_V1.as_bytes())).into_bytes()
}

/// What a marker file says: `Ok(())` for this version, `Err(Some(line))` for another
/// version, `Err(None)` if it is damaged (its checksum fails).
fn read_marker(bytes: &[u8]) -> Result<(), Option<String>> {
    let text = String::from_utf8_lossy(bytes);
    let Some((first, rest)) = text.split_once('\n') else {
        return Err(None);
    };
    let line = format!("{first}\n");
    let sound = rest.trim_end() == format!("crc32 {:08x}", crc32fast::hash(line.as_bytes()));
    match (sound, line == MARKER_V1) {
        (true, true) => Ok(()),
        (true, false) => Err(Some(first.to_owned())),
        (false, _) => Err(None),
    }
}

/// A [`Store`] kept on disk in segment files (see the *How it is laid out* below).
///
/// One process at a time may have a store open: a second [`SegmentStore::open`] of the
/// same directory, in this process or another, fails with [`StoreError::Locked`].
/// Share one store between threads (it is `Send + Sync`).
///
/// Writes go to the operating system when they return; [`Store::flush`] and a
/// successful [`Store::cas_ref`] make them durable.
///
/// ```
/// use cairn_core::Hash;
/// use cairn_store::{SegmentStore, Store};
///
/// let dir = tempfile::tempdir().unwrap();
/// let bytes = b"an object".to_vec();
/// let hash = Hash::of(&bytes);
/// {
///     let store = SegmentStore::open(dir.path())?;
///     store.put_batch(&[(hash, bytes.clone())])?;
///     store.flush()?;
/// }
/// let store = SegmentStore::open(dir.path())?;
/// assert_eq!(store.get(&hash)?.as_deref(), Some(&bytes[..]));
/// # Ok::<(), cairn_store::StoreError>(())
/// ```
///
/// # How it is laid out
///
/// Layout of a store directory (every byte is described in `storage-format.md` §6.4):
///
/// ```text
/// CAIRN-STORE        "cairn segment store 1\n": what this directory is
/// lock               locked (flock) by the process that has the store open
/// objects/           the object log: NNNNNNNN.seg segments, NNNNNNNN.hint hints,
///                    index.crx the index snapshot
/// derived/           the derived-data log, same format, separate files
/// refs/              one file per ref
/// reflog             the ref log: append-only checksummed records (absent: empty)
/// ```
///
/// Objects and derived data are two logs: append-only segment files of checksummed
/// records with an index, read at open from the log's index snapshot (one sorted,
/// checked file written at a clean close) and, for the records it does not cover, from
/// hint files or by scanning. A
/// damaged byte costs the record it is in — reported by [`Store::damage`] and `fsck`, the
/// rest readable — never the store. Derived data lives in its own files, so damage to it
/// can never reach the objects; a derived log that cannot be opened at all is set aside
/// and started empty (it is a cache). Refs are files replaced atomically. The ref log is
/// one file of its own, appended to without a sync and synced by [`Store::flush`].
pub struct SegmentStore {
    path: PathBuf,
    objects: Log<Hash>,
    derived: Log<DerivedKey>,
    refs: RefFiles,
    ref_log: RefLogFile,
    /// Damage to the store's own files found at open (the marker), one line each.
    notes: Vec<String>,
    /// Derived data set aside at open, one line each.
    derived_notes: Vec<String>,
    /// Holds the directory's lock while the store is open.
    _lock: File,
}

impl std::fmt::Debug for SegmentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SegmentStore {
    /// True if `path` holds a segment store: its marker file, or (if the marker was
    /// lost) its object and ref directories.
    pub fn is_store(path: &Path) -> bool {
        path.join(MARKER).is_file() || (path.join("objects").is_dir() && path.join("refs").is_dir())
    }

    /// Opens the store in directory `path`, creating the directory and an empty store if
    /// there is none. Opening reads each segment's hint (or scans segments without one)
    /// and writes nothing to the data, so it works on a full disk.
    ///
    /// Errors: [`StoreError::Locked`] if another handle has the store open;
    /// [`StoreError::Backend`] if `path` holds something else or cannot be read;
    /// [`StoreError::NoSpace`] if a new store cannot be created for lack of space.
    pub fn open(path: &Path) -> Result<SegmentStore, StoreError> {
        Self::open_with_segment_bytes(path, log::SEGMENT_BYTES)
    }

    /// [`SegmentStore::open`] with segments sealed at `segment_bytes` instead of 64 MiB
    /// (tests use small segments to exercise sealing and compaction).
    #[doc(hidden)]
    pub fn open_with_segment_bytes(path: &Path, segment_bytes: u64) -> Result<SegmentStore, StoreError> {
        let err = |what: &str, e: io::Error| io_error(path, what, e);
        if !Self::is_store(path) {
            Self::create(path)?;
        }
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path.join("lock"))
            .map_err(|e| err("opening the lock file", e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: path.display().to_string(),
                })
            }
            Err(fs::TryLockError::Error(e)) => return Err(err("locking the store", e)),
        }
        let mut notes = Vec::new();
        if !path.join(MARKER).is_file() {
            // The directories are there: only the marker is missing. Put it back.
            Self::write_marker(path)?;
            notes.push(format!("the store marker {MARKER} was missing and was written again"));
        }
        let marker = fs::read(path.join(MARKER)).map_err(|e| err("reading the store marker", e))?;
        match read_marker(&marker) {
            Ok(()) => {}
            Err(Some(other)) => {
                return Err(StoreError::Backend(format!(
                    "{} holds a store of another version ({other:?}); this build reads {:?}",
                    path.display(),
                    MARKER_V1.trim_end()
                )))
            }
            // Version 1 is the only version there has been: read the store as that, put
            // the marker right (best effort: on a full disk it stays as it is), say so.
            Err(None) => {
                let rewritten = Self::write_marker(path).is_ok();
                notes.push(format!(
                    "the store marker {MARKER} was damaged; read as {:?}, the only version there is{}",
                    MARKER_V1.trim_end(),
                    if rewritten { ", and written again" } else { "" }
                ));
            }
        }
        let objects = Log::open(&path.join("objects"), "object", segment_bytes)?;
        let (derived, derived_notes) = Self::open_derived(path, segment_bytes)?;
        Ok(SegmentStore {
            path: path.to_path_buf(),
            objects,
            derived,
            refs: RefFiles::new(&path.join("refs")),
            ref_log: RefLogFile::open(path)?,
            notes,
            derived_notes,
            _lock: lock,
        })
    }

    /// Creates an empty store in `path` (which may exist but must be empty of stores).
    fn create(path: &Path) -> Result<(), StoreError> {
        let err = |what: &str, e: io::Error| io_error(path, what, e);
        if path.join("conf").is_file() || path.join("db").is_file() {
            return Err(StoreError::Backend(format!(
                "{} holds a sled database, not a segment store",
                path.display()
            )));
        }
        for dir in ["objects", "derived", "refs"] {
            fs::create_dir_all(path.join(dir)).map_err(|e| err("creating the store's directories", e))?;
        }
        // The marker last: a directory with a marker is a whole store.
        Self::write_marker(path)
    }

    /// Writes the marker file atomically (temporary file, sync, rename, sync).
    fn write_marker(path: &Path) -> Result<(), StoreError> {
        let err = |e: io::Error| io_error(path, "writing the store marker", e);
        let mut tmp = tempfile::NamedTempFile::new_in(path).map_err(err)?;
        tmp.write_all(&marker_bytes())
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(err)?;
        tmp.persist(path.join(MARKER)).map_err(|e| err(e.error))?;
        sync_dir(path).map_err(err)
    }

    /// Opens the derived log; if it cannot be read at all, sets its directory aside and
    /// starts an empty one (derived data is rebuilt from the objects).
    fn open_derived(path: &Path, segment_bytes: u64) -> Result<(Log<DerivedKey>, Vec<String>), StoreError> {
        let dir = path.join("derived");
        if dir.is_dir() {
            if let Ok(log) = Log::open(&dir, "derived", segment_bytes) {
                return Ok((log, Vec::new()));
            }
        }
        let mut notes = Vec::new();
        if dir.exists() {
            let aside = (1..)
                .map(|n| path.join(format!("derived.damaged-{n}")))
                .find(|p| !p.exists())
                .expect("a free name");
            fs::rename(&dir, &aside).map_err(|e| io_error(path, "setting damaged derived data aside", e))?;
            notes.push(format!(
                "derived data in {} could not be read: moved to {} and started empty (it is rebuilt on use)",
                dir.display(),
                aside.display()
            ));
        }
        fs::create_dir_all(&dir).map_err(|e| io_error(path, "creating the derived directory", e))?;
        Ok((Log::open(&dir, "derived", segment_bytes)?, notes))
    }

    /// The directory the store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Calls `hook` after every change the object and derived logs make to their files
    /// (appends, seals, new segments, removals by compaction), with no lock held that a
    /// read of the store needs; `None` stops. For crash tests: see [`FileStep`].
    #[doc(hidden)]
    pub fn on_file_step(&self, hook: Option<FileStepHook>) {
        self.objects.set_hook(hook.clone());
        self.derived.set_hook(hook);
    }
}

/// A key of the derived log.
type DerivedKey = Box<[u8]>;

/// The range of derived keys starting with `prefix`.
fn prefix_range(prefix: &[u8]) -> (Bound<DerivedKey>, Bound<DerivedKey>) {
    let end = prefix_end(prefix).map_or(Bound::Unbounded, |e| Bound::Excluded(e.into_boxed_slice()));
    (Bound::Included(prefix.into()), end)
}

/// Closing the store syncs what the commit path left unsynced (the ref log, derived data);
/// an error here has nowhere to go, and loses nothing a commit acknowledged.
impl Drop for SegmentStore {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

impl Store for SegmentStore {
    fn get(&self, hash: &Hash) -> Result<Option<Arc<[u8]>>, StoreError> {
        // Read into the thread's buffer and copied once into the `Arc` (not read into a
        // fresh vector, trimmed to the value, then copied).
        let mut out = None;
        self.objects.with_value(hash, &mut |v| out = Some(Arc::from(v)))?;
        Ok(out)
    }

    /// Located under one read of the index; read into a per-thread buffer that the next
    /// read reuses.
    fn with_objects(&self, hashes: &[Hash], f: &mut dyn FnMut(usize, &[u8])) -> Result<(), StoreError> {
        self.objects.with_values(hashes, f)
    }

    /// Asks the kernel to read the objects' records into its page cache at once
    /// (`posix_fadvise(WILLNEED)` on Linux, records within 16 KiB as one range; elsewhere
    /// nothing): a chunk rebuilt from a cold cache then waits for its scattered objects
    /// together, not one read after another.
    fn prefetch(&self, hashes: &[Hash]) -> Result<(), StoreError> {
        self.objects.will_need(hashes)
    }

    /// One `pread` of the range, from the object's place in its segment.
    fn read_object_at(&self, hash: &Hash, offset: u64, out: &mut [u8]) -> Result<bool, StoreError> {
        self.objects.read_at(hash, offset, out)
    }

    fn contains(&self, hash: &Hash) -> Result<bool, StoreError> {
        self.objects.contains(hash)
    }

    fn put_batch(&self, objects: &[(Hash, Vec<u8>)]) -> Result<(), StoreError> {
        self.objects.put(objects.iter().map(|(h, b)| (*h, b.as_slice())), true)
    }

    fn object_hashes(&self) -> Result<Vec<Hash>, StoreError> {
        self.objects.keys(..)
    }

    fn delete_objects(&self, hashes: &[Hash]) -> Result<(), StoreError> {
        self.objects.delete(hashes.iter().copied())
    }

    fn get_ref(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.refs.get(name)
    }

    fn cas_ref(&self, name: &str, expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<CasOutcome, StoreError> {
        self.refs.cas(name, expected, new)
    }

    fn list_refs(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.refs.list(prefix)
    }

    fn remove_damaged_ref(&self, name: &str) -> Result<bool, StoreError> {
        self.refs.remove_damaged(name)
    }

    fn damaged_refs(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.refs.damaged(prefix)
    }

    fn get_derived(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.derived.get(&Box::from(key))
    }

    /// The record is read into a per-thread buffer that the next read reuses.
    fn with_derived(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool, StoreError> {
        self.derived.with_value(&Box::from(key), f)
    }

    /// A value in a sealed segment is checked and handed out where it lies in the
    /// segment's mapping; one in the segment being written to is read and copied.
    fn get_derived_shared(&self, key: &[u8]) -> Result<Option<bytes::Bytes>, StoreError> {
        Ok(self.derived.get_shared(&Box::from(key), true)?.map(|(v, _)| v))
    }

    /// A value in a sealed segment is handed out where it lies, its record's framing
    /// checked and its value checksum not computed; one in the segment being written to
    /// is read, checked and copied.
    fn get_derived_shared_unchecked(&self, key: &[u8]) -> Result<Option<(bytes::Bytes, bool)>, StoreError> {
        self.derived.get_shared(&Box::from(key), false)
    }

    fn read_derived_at(&self, key: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, StoreError> {
        self.derived.read_at(&Box::from(key), offset, out)
    }

    /// True: one `pread` of the range, from the value's place in its segment.
    fn reads_derived_ranges(&self) -> bool {
        true
    }

    /// Every record read checks its `value_crc` over the whole value (§6.7), the mapped
    /// read too.
    fn checks_derived_values(&self) -> bool {
        true
    }

    fn put_derived(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), StoreError> {
        self.derived
            .put(entries.iter().map(|(k, v)| (k.as_slice().into(), v.as_slice())), false)
    }

    fn delete_derived(&self, keys: &[Vec<u8>]) -> Result<(), StoreError> {
        self.derived.delete(keys.iter().map(|k| k.as_slice().into()))
    }

    fn scan_derived(&self, prefix: &[u8]) -> Result<Vec<DerivedEntry>, StoreError> {
        let mut out = Vec::new();
        for key in self.derived.keys(prefix_range(prefix))? {
            // A key deleted since the listing is skipped.
            if let Some(value) = self.derived.get(&key)? {
                out.push((key.into_vec(), value));
            }
        }
        Ok(out)
    }

    fn derived_keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self
            .derived
            .keys(prefix_range(prefix))?
            .into_iter()
            .map(<[u8]>::into_vec)
            .collect())
    }

    fn last_derived_at_or_before(&self, prefix: &[u8], upper: &[u8]) -> Result<Option<DerivedEntry>, StoreError> {
        let Some(end) = at_or_before_upper(prefix, upper) else {
            return Ok(None);
        };
        let end = end.map(Vec::into_boxed_slice);
        let Some(key) = self.derived.last_key((Bound::Included(Box::from(prefix)), end))? else {
            return Ok(None);
        };
        Ok(self.derived.get(&key)?.map(|value| (key.into_vec(), value)))
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.objects.sync()?;
        self.derived.sync()?;
        self.ref_log.sync()
    }

    /// Nothing: a put writes its values into the derived log's file before it returns, so
    /// the store holds none of them in memory. They reach the disk with the next
    /// [`Store::flush`] or the kernel's writeback: a 1-node commit's next query stores a
    /// few hundred KiB of index values, and an `fsync` there cost ~1 ms of its median at
    /// 1M nodes (README, session 24).
    fn flush_derived(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Syncs the object log, and the ref log if its last sync is [`REF_LOG_SYNC_INTERVAL`]
    /// or more ago; derived data waits for [`Store::flush`] (it is a cache). A commit
    /// costs one fsync of its own, not one per space it touched.
    fn flush_objects(&self) -> Result<(), StoreError> {
        self.objects.sync()?;
        self.ref_log.sync_unless_within(REF_LOG_SYNC_INTERVAL)
    }

    /// Compacts both logs fully (see `storage-format.md` §6.10): afterwards each segment,
    /// the newest included, holds at most as many bytes a compaction would drop as bytes
    /// it would keep.
    fn compact(&self) -> Result<(), StoreError> {
        self.objects.reclaim()?;
        self.derived.reclaim()
    }

    fn disk_bytes(&self) -> Result<Option<u64>, StoreError> {
        bytes_under(&self.path)
            .map(Some)
            .map_err(|e| io_error(&self.path, "measuring the store's files", e))
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        let (objects, object_bytes) = self.objects.count();
        let (derived, derived_bytes) = self.derived.count();
        Ok(StoreStats {
            objects,
            object_bytes,
            derived,
            derived_bytes,
        })
    }

    fn damage(&self) -> StoreDamage {
        StoreDamage {
            data: self.notes.iter().chain(self.objects.problems()).cloned().collect(),
            derived: self
                .derived_notes
                .iter()
                .chain(self.derived.problems())
                .cloned()
                .collect(),
            ref_log: self.ref_log.damage(),
        }
    }

    fn append_ref_log(&self, record: &[u8]) -> Result<(), StoreError> {
        self.ref_log.append(record)
    }

    fn ref_log(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        self.ref_log.read()
    }

    fn retain_ref_log(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<(), StoreError> {
        self.ref_log.retain(keep)
    }
}

/// The hint decoder, for `cairn_store::fuzzing`.
pub(crate) fn fuzz_hint(body: &[u8], segment_len: u64) -> bool {
    hint::fuzz(body, segment_len)
}

/// The snapshot decoder, for `cairn_store::fuzzing`.
pub(crate) fn fuzz_snapshot(body: &[u8]) -> bool {
    snapshot::Snapshot::fuzz(body)
}
