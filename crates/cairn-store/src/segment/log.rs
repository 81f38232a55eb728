//! [`Log`]: an append-only key-value log in numbered segment files, with its whole index
//! in memory. The engine under both spaces of a [`SegmentStore`](super::SegmentStore):
//! objects (keys are hashes) and derived data (keys are byte strings).
//!
//! - **Writes** append records ([`record`](super::record)) to the newest segment at its
//!   known end, by positional writes; a write that fails (a full disk) is cut off again,
//!   so the file is as it was. The index learns of a record only after it is written.
//! - **Reads** look the key up in the index and read the one record with a positional
//!   read, checking both of its checksums and that it holds the key.
//! - **Open** reads each segment's hint file (the list of its records, written when the
//!   segment was sealed) or, without a sound hint, scans the segment. A damaged record
//!   header costs only that record: the scan skips to the next sound header and reports
//!   the skipped bytes, which [`Log::problems`] lists.
//! - **Deletes** append tombstones. A sealed segment that has become mostly dead is
//!   compacted: its live records are copied to the newest segment, made durable, and the
//!   old file removed.
//!
//! Nothing at open writes to a segment, so a store on a full disk opens and reads.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::ops::RangeBounds;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::hint;
use super::record::{self, Found, Kind, HEADER};
use crate::error::{hex, StoreError};

/// A segment is sealed, and a new one started, once it reaches this size (by default).
pub(super) const SEGMENT_BYTES: u64 = 64 << 20;
/// Bytes of records gathered before one positional write.
const WRITE_CHUNK: usize = 8 << 20;
/// A sealed segment is compacted when fewer than half of its bytes are live, and it is
/// at least this big or half a segment (smaller ones are not worth a rewrite).
const COMPACT_MIN_BYTES: u64 = 1 << 20;

/// A key type of a log.
pub(super) trait LogKey: Ord + Clone + Send + Sync + 'static {
    /// The key from its stored bytes (`None`: not a key of this log).
    fn from_bytes(bytes: &[u8]) -> Option<Self>;
    /// The key's stored bytes.
    fn bytes(&self) -> &[u8];
}

impl LogKey for cairn_core::Hash {
    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        Some(cairn_core::Hash::from_bytes(bytes.try_into().ok()?))
    }
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl LogKey for Box<[u8]> {
    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        Some(bytes.into())
    }
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Where a live record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Loc {
    segment: u32,
    /// The record's first byte.
    offset: u64,
    /// The record's length.
    len: u32,
    /// Its value's length.
    value_len: u32,
}

/// One segment file.
struct Segment {
    file: Arc<File>,
    /// Bytes of records in it (tombstones included).
    total: u64,
    /// Bytes of its records that the index still points to.
    live: u64,
}

/// What readers share.
struct State<K> {
    index: BTreeMap<K, Loc>,
    segments: BTreeMap<u32, Segment>,
}

/// The segment being appended to.
struct Active {
    id: u32,
    file: Arc<File>,
    /// Where the next record goes (the end of the last sound record).
    len: u64,
    /// Written since the last sync.
    dirty: bool,
    /// Its hint is missing or stale: written since open, or opened by a scan. Closing
    /// writes one, so the next open reads a few bytes per record instead of scanning.
    needs_hint: bool,
}

/// An append-only log of records in `dir/NNNNNNNN.seg` files.
pub(super) struct Log<K> {
    dir: PathBuf,
    /// What the log holds, for messages ("object", "derived").
    space: &'static str,
    state: RwLock<State<K>>,
    /// Held by every writer (appends, deletes, compaction, sync), in that order before
    /// `state`.
    active: Mutex<Option<Active>>,
    /// Damage found at open, one line each.
    problems: Vec<String>,
    /// Size at which a segment is sealed.
    segment_bytes: u64,
}

fn segment_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("{id:08}.seg"))
}

/// Makes a directory's entries (a new or removed file) durable.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Maps an I/O error of the log in `dir` to a store error.
pub(super) fn io_error(dir: &Path, what: &str, e: io::Error) -> StoreError {
    if StoreError::is_no_space(&e) {
        StoreError::NoSpace {
            path: dir.display().to_string(),
            detail: what.to_owned(),
        }
    } else {
        StoreError::Backend(format!("{what} in {}: {e}", dir.display()))
    }
}

impl<K: LogKey> Log<K> {
    /// Opens the log in `dir` (which must exist), reading every segment's hint or
    /// records. Writes nothing, except hint files for sealed segments that lack one
    /// (a cache: failing to write one is ignored).
    pub(super) fn open(dir: &Path, space: &'static str, segment_bytes: u64) -> Result<Log<K>, StoreError> {
        let err = |what: &str, e: io::Error| io_error(dir, what, e);
        let mut ids = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| err("listing segments", e))? {
            let name = entry.map_err(|e| err("listing segments", e))?.file_name();
            let name = name.to_string_lossy();
            if let Some(id) = name.strip_suffix(".seg").and_then(|n| n.parse::<u32>().ok()) {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        let mut index = BTreeMap::new();
        let mut segments: BTreeMap<u32, Segment> = BTreeMap::new();
        let mut problems = Vec::new();
        let mut active = None;
        let last = ids.last().copied();
        for id in ids {
            let path = segment_path(dir, id);
            let is_last = Some(id) == last;
            let file = OpenOptions::new()
                .read(true)
                .write(is_last)
                .open(&path)
                .or_else(|e| match e.kind() {
                    // A read-only file system or file: open for reading (writes will fail).
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem if is_last => File::open(&path),
                    _ => Err(e),
                })
                .map_err(|e| err(&format!("opening {}", path.display()), e))?;
            let file = Arc::new(file);
            let mut segment = Segment {
                file: Arc::clone(&file),
                total: 0,
                live: 0,
            };
            // A hint is used only if its length matches the segment's: for the active
            // segment that means nothing was appended since the hint was written (at the
            // last clean close).
            let entries = hint::read(dir, id, &file);
            let hinted = entries.is_some();
            let (entries, end) = match entries {
                Some(entries) => {
                    let len = file.metadata().map_err(|e| err("reading a segment's length", e))?.len();
                    (entries, len)
                }
                None => {
                    let mut entries = Vec::new();
                    let problems_before = problems.len();
                    let scanned = record::scan(&file, |found| match found {
                        Found::Record {
                            offset,
                            kind,
                            key,
                            value_len,
                        } => entries.push(hint::Entry {
                            kind,
                            key,
                            offset,
                            value_len: value_len as u32,
                        }),
                        Found::Damaged { start, end } => problems.push(format!(
                            "{space} segment {}: bytes {start}..{end} hold no readable record (skipped; \
                             whatever they held is lost)",
                            path.display()
                        )),
                    })
                    .map_err(|e| err(&format!("reading {}", path.display()), e))?;
                    if scanned.good_end < scanned.file_len && !is_last {
                        problems.push(format!(
                            "{space} segment {}: bytes {}..{} at its end hold no readable record (skipped)",
                            path.display(),
                            scanned.good_end,
                            scanned.file_len
                        ));
                    }
                    if !is_last && problems.len() == problems_before {
                        // A sound sealed segment: remember its records for next time.
                        let _ = hint::write(dir, id, scanned.file_len, &entries);
                    }
                    (entries, scanned.good_end)
                }
            };
            for e in entries {
                let len = record::record_len(e.key.len(), e.value_len as usize);
                segment.total += len;
                let Some(key) = K::from_bytes(&e.key) else {
                    problems.push(format!(
                        "{space} segment {}: a record at byte {} has key {}, which is not a {space} key",
                        path.display(),
                        e.offset,
                        hex(&e.key)
                    ));
                    continue;
                };
                let old = match e.kind {
                    Kind::Put => index.insert(
                        key,
                        Loc {
                            segment: id,
                            offset: e.offset,
                            len: len as u32,
                            value_len: e.value_len,
                        },
                    ),
                    Kind::Delete => index.remove(&key),
                };
                if e.kind == Kind::Put {
                    segment.live += len;
                }
                if let Some(old) = old {
                    if old.segment == id {
                        segment.live -= u64::from(old.len);
                    } else if let Some(s) = segments.get_mut(&old.segment) {
                        s.live -= u64::from(old.len);
                    }
                }
            }
            if is_last {
                active = Some(Active {
                    id,
                    file: Arc::clone(&file),
                    len: end,
                    dirty: false,
                    needs_hint: !hinted,
                });
            }
            segments.insert(id, segment);
        }
        Ok(Log {
            dir: dir.to_path_buf(),
            space,
            state: RwLock::new(State { index, segments }),
            active: Mutex::new(active),
            problems,
            segment_bytes,
        })
    }

    /// Damage found at open, one line each (empty: every record was readable).
    pub(super) fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The value stored under `key`, checked.
    pub(super) fn get(&self, key: &K) -> Result<Option<Vec<u8>>, StoreError> {
        let (loc, file) = {
            let state = self.state.read();
            let Some(loc) = state.index.get(key).copied() else {
                return Ok(None);
            };
            let file = Arc::clone(&state.segments[&loc.segment].file);
            (loc, file)
        };
        let mut bytes = vec![0u8; loc.len as usize];
        let corrupt = |detail: String| StoreError::Corrupt {
            space: self.space,
            key: hex(key.bytes()),
            detail,
        };
        file.read_exact_at(&mut bytes, loc.offset).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                corrupt(format!("segment {:08} ends inside the record", loc.segment))
            } else {
                io_error(&self.dir, "reading a record", e)
            }
        })?;
        let value = record::check(&bytes, key.bytes())
            .map_err(|detail| corrupt(format!("segment {:08} byte {}: {detail}", loc.segment, loc.offset)))?;
        let start = HEADER + key.bytes().len();
        bytes.truncate(start + value.len());
        bytes.drain(..start);
        Ok(Some(bytes))
    }

    /// True if `key` has a value (not checked).
    pub(super) fn contains(&self, key: &K) -> bool {
        self.state.read().index.contains_key(key)
    }

    /// Keys in `range`, in order.
    pub(super) fn keys(&self, range: impl RangeBounds<K>) -> Vec<K> {
        self.state.read().index.range(range).map(|(k, _)| k.clone()).collect()
    }

    /// The last key in `range`.
    pub(super) fn last_key(&self, range: impl RangeBounds<K>) -> Option<K> {
        self.state.read().index.range(range).next_back().map(|(k, _)| k.clone())
    }

    /// Number of keys and the sum of their value lengths.
    pub(super) fn count(&self) -> (u64, u64) {
        let state = self.state.read();
        let bytes = state.index.values().map(|l| u64::from(l.value_len)).sum();
        (state.index.len() as u64, bytes)
    }

    /// Stores values: `skip_present` leaves keys that have a value as they are (objects,
    /// which never change); otherwise a put replaces the value. On an error the record
    /// being written is cut off again; earlier chunks of the same call stay (they are
    /// sound records).
    pub(super) fn put<'a>(
        &self,
        entries: impl Iterator<Item = (K, &'a [u8])>,
        skip_present: bool,
    ) -> Result<(), StoreError> {
        let mut active = self.active.lock();
        let mut batch = Batch::default();
        for (key, value) in entries {
            if skip_present && (self.contains(&key) || batch.has(&key)) {
                continue;
            }
            if value.len() > record::MAX_VALUE {
                return Err(StoreError::Backend(format!(
                    "a {} value of {} bytes is over the {}-byte record limit",
                    self.space,
                    value.len(),
                    record::MAX_VALUE
                )));
            }
            self.append(&mut active, &mut batch, Kind::Put, key, value)?;
        }
        self.write_batch(&mut active, &mut batch)
    }

    /// Removes keys (absent ones are ignored), then compacts segments that became mostly
    /// dead.
    pub(super) fn delete(&self, keys: impl Iterator<Item = K>) -> Result<(), StoreError> {
        let mut active = self.active.lock();
        let mut batch = Batch::default();
        for key in keys {
            if self.contains(&key) || batch.has(&key) {
                self.append(&mut active, &mut batch, Kind::Delete, key, &[])?;
            }
        }
        self.write_batch(&mut active, &mut batch)?;
        self.compact(&mut active)
    }

    /// Makes every write so far durable.
    pub(super) fn sync(&self) -> Result<(), StoreError> {
        let mut active = self.active.lock();
        if let Some(a) = active.as_mut() {
            if a.dirty {
                a.file
                    .sync_data()
                    .map_err(|e| io_error(&self.dir, "syncing a segment", e))?;
                a.dirty = false;
            }
        }
        Ok(())
    }

    /// Adds one record to `batch`, writing the batch out first if it is full or the
    /// record belongs in a new segment.
    fn append(
        &self,
        active: &mut Option<Active>,
        batch: &mut Batch<K>,
        kind: Kind,
        key: K,
        value: &[u8],
    ) -> Result<(), StoreError> {
        let len = record::record_len(key.bytes().len(), value.len());
        let end = active.as_ref().map_or(0, |a| a.len) + batch.bytes.len() as u64;
        if active.is_none() || (end > 0 && end + len > self.segment_bytes) || batch.bytes.len() >= WRITE_CHUNK {
            self.write_batch(active, batch)?;
            let full = active
                .as_ref()
                .is_none_or(|a| a.len > 0 && a.len + len > self.segment_bytes);
            if full {
                self.roll(active)?;
            }
        }
        let a = active.as_ref().expect("a segment after rolling");
        let offset = a.len + batch.bytes.len() as u64;
        record::encode(kind, key.bytes(), value, &mut batch.bytes);
        batch.keys.insert(key.clone());
        batch.records.push((
            key,
            kind,
            Loc {
                segment: a.id,
                offset,
                len: len as u32,
                value_len: value.len() as u32,
            },
        ));
        Ok(())
    }

    /// Writes `batch` at the active segment's end and tells the index.
    fn write_batch(&self, active: &mut Option<Active>, batch: &mut Batch<K>) -> Result<(), StoreError> {
        if batch.bytes.is_empty() {
            return Ok(());
        }
        let a = active.as_mut().expect("a batch has a segment");
        if let Err(e) = a.file.write_all_at(&batch.bytes, a.len) {
            // Cut off what may have been written, so the file is as it was.
            let _ = a.file.set_len(a.len);
            batch.clear();
            return Err(io_error(
                &self.dir,
                &format!("appending to {} segment {:08}", self.space, a.id),
                e,
            ));
        }
        a.len += batch.bytes.len() as u64;
        a.dirty = true;
        a.needs_hint = true;
        let mut state = self.state.write();
        let State { index, segments } = &mut *state;
        for (key, kind, loc) in batch.records.drain(..) {
            let segment = segments.get_mut(&loc.segment).expect("the active segment is listed");
            segment.total += u64::from(loc.len);
            let old = match kind {
                Kind::Put => {
                    segment.live += u64::from(loc.len);
                    index.insert(key, loc)
                }
                Kind::Delete => index.remove(&key),
            };
            if let Some(old) = old {
                if let Some(s) = segments.get_mut(&old.segment) {
                    s.live -= u64::from(old.len);
                }
            }
        }
        batch.clear();
        Ok(())
    }

    /// Seals the active segment (synced, with a hint) and starts the next one.
    fn roll(&self, active: &mut Option<Active>) -> Result<(), StoreError> {
        let next = match active.as_ref() {
            Some(a) => {
                a.file
                    .sync_data()
                    .map_err(|e| io_error(&self.dir, "syncing a sealed segment", e))?;
                let _ = self.write_hint(a.id, a.len);
                a.id + 1
            }
            None => self.state.read().segments.keys().next_back().map_or(1, |id| id + 1),
        };
        let path = segment_path(&self.dir, next);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io_error(&self.dir, &format!("creating {}", path.display()), e))?;
        sync_dir(&self.dir).map_err(|e| io_error(&self.dir, "syncing the segment directory", e))?;
        let file = Arc::new(file);
        self.state.write().segments.insert(
            next,
            Segment {
                file: Arc::clone(&file),
                total: 0,
                live: 0,
            },
        );
        *active = Some(Active {
            id: next,
            file,
            len: 0,
            dirty: false,
            needs_hint: true,
        });
        Ok(())
    }

    /// Compacts every sealed segment that is mostly dead: copies its live records (and,
    /// unless it is the oldest segment, its tombstones) to the active segment, syncs,
    /// then removes the old file.
    fn compact(&self, active: &mut Option<Active>) -> Result<(), StoreError> {
        let active_id = active.as_ref().map(|a| a.id);
        let min_bytes = COMPACT_MIN_BYTES.min(self.segment_bytes / 2);
        let victims: Vec<u32> = {
            let state = self.state.read();
            state
                .segments
                .iter()
                .filter(|(id, s)| Some(**id) != active_id && s.total >= min_bytes && s.live * 2 < s.total)
                .map(|(id, _)| *id)
                .collect()
        };
        if victims.is_empty() {
            return Ok(());
        }
        let records = |id: u32| -> Result<Vec<(u64, Kind, Vec<u8>)>, StoreError> {
            let file = Arc::clone(&self.state.read().segments[&id].file);
            let mut out = Vec::new();
            record::scan(&file, |found| {
                if let Found::Record { offset, kind, key, .. } = found {
                    out.push((offset, kind, key));
                }
            })
            .map_err(|e| io_error(&self.dir, "reading a segment to compact", e))?;
            Ok(out)
        };
        // A tombstone must outlive every older put of its key; puts in victims go (oldest
        // victim first) before the tombstone does. So for the victims' tombstones, find the
        // oldest surviving segment holding a put of the key.
        let mut tombstones: BTreeMap<Vec<u8>, Option<u32>> = BTreeMap::new();
        for &id in &victims {
            for (_, kind, key) in records(id)? {
                if kind == Kind::Delete {
                    tombstones.insert(key, None);
                }
            }
        }
        if !tombstones.is_empty() {
            let newest_victim = *victims.last().expect("victims");
            let survivors: Vec<u32> = self
                .state
                .read()
                .segments
                .keys()
                .copied()
                .filter(|id| *id < newest_victim && !victims.contains(id))
                .collect();
            for id in survivors {
                for (_, kind, key) in records(id)? {
                    if kind == Kind::Put {
                        if let Some(oldest) = tombstones.get_mut(&key) {
                            oldest.get_or_insert(id);
                        }
                    }
                }
            }
        }
        for id in victims {
            let keep = records(id)?;
            let mut batch = Batch::default();
            for (offset, kind, key) in keep {
                let Some(k) = K::from_bytes(&key) else { continue };
                match kind {
                    Kind::Put => {
                        let live = self.state.read().index.get(&k).copied();
                        if live.is_some_and(|l| l.segment == id && l.offset == offset) {
                            let value = self.get(&k)?.expect("a live key has a value");
                            self.append(active, &mut batch, Kind::Put, k, &value)?;
                        }
                    }
                    // Kept while it hides a put in an older surviving segment, unless the key
                    // has been put again since (then the newer put is what counts).
                    Kind::Delete => {
                        let hides = tombstones.get(&key).copied().flatten().is_some_and(|s| s < id);
                        if hides && !self.contains(&k) && !batch.has(&k) {
                            self.append(active, &mut batch, Kind::Delete, k, &[])?;
                        }
                    }
                }
            }
            self.write_batch(active, &mut batch)?;
            if let Some(a) = active.as_mut() {
                a.file
                    .sync_data()
                    .map_err(|e| io_error(&self.dir, "syncing after compaction", e))?;
                a.dirty = false;
            }
            self.state.write().segments.remove(&id);
            let path = segment_path(&self.dir, id);
            fs::remove_file(&path).map_err(|e| io_error(&self.dir, &format!("removing {}", path.display()), e))?;
            hint::remove(&self.dir, id);
            sync_dir(&self.dir).map_err(|e| io_error(&self.dir, "syncing the segment directory", e))?;
        }
        Ok(())
    }
}

/// Records encoded but not yet written.
struct Batch<K> {
    bytes: Vec<u8>,
    records: Vec<(K, Kind, Loc)>,
    /// Keys with a record in `records`.
    keys: BTreeSet<K>,
}

impl<K> Default for Batch<K> {
    fn default() -> Self {
        Batch {
            bytes: Vec::new(),
            records: Vec::new(),
            keys: BTreeSet::new(),
        }
    }
}

impl<K: LogKey> Batch<K> {
    /// True if the batch holds a record of `key`.
    fn has(&self, key: &K) -> bool {
        self.keys.contains(key)
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.records.clear();
        self.keys.clear();
    }
}

impl<K> Log<K> {
    /// At close: syncs the active segment and writes its hint if it has none that holds,
    /// so the next open reads the hint instead of scanning the segment (a cache: any
    /// failure is ignored, and a later append makes the hint stale by its length).
    fn close(&self) {
        let mut active = self.active.lock();
        let Some(a) = active.as_mut() else { return };
        if !a.needs_hint || a.len == 0 {
            return;
        }
        if a.file.sync_data().is_ok() {
            a.dirty = false;
            if self.write_hint(a.id, a.len).is_ok() {
                a.needs_hint = false;
            }
        }
    }

    /// Writes the hint of segment `id` (of `len` bytes) from a scan of it: a sealed
    /// segment, or the active one at close.
    fn write_hint(&self, id: u32, len: u64) -> io::Result<()> {
        let file = File::open(segment_path(&self.dir, id))?;
        let mut entries = Vec::new();
        let end = record::scan(&file, |found| {
            if let Found::Record {
                offset,
                kind,
                key,
                value_len,
            } = found
            {
                entries.push(hint::Entry {
                    kind,
                    key,
                    offset,
                    value_len: value_len as u32,
                });
            }
        })?;
        if end.good_end != len || end.file_len != len {
            return Err(io::Error::other("segment changed while sealing"));
        }
        hint::write(&self.dir, id, len, &entries)
    }
}

impl<K> Drop for Log<K> {
    fn drop(&mut self) {
        self.close();
    }
}
