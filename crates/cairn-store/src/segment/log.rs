//! [`Log`]: an append-only key-value log in numbered segment files, with its index
//! ([`Index`]: the snapshot read at open under an in-memory map). The engine under both
//! spaces of a [`SegmentStore`](super::SegmentStore): objects (keys are hashes) and
//! derived data (keys are byte strings).
//!
//! - **Writes** append records ([`record`](super::record)) to the newest segment at its
//!   known end, by positional writes; a write that fails (a full disk) is cut off again,
//!   so the file is as it was. The index learns of a record only after it is written.
//! - **Reads** look the key up in the index and read the one record with a positional
//!   read, checking both of its checksums and that it holds the key.
//! - **Open** reads the log's index snapshot ([`snapshot`](super::snapshot): every live
//!   key's place, sorted, written at a clean close) if it describes the files, and for the
//!   records it does not cover each segment's hint file (the list of its records,
//!   written when the segment was sealed) or, without a sound hint, scans the segment. A damaged record
//!   header costs only that record: the scan skips to the next sound header and reports
//!   the skipped bytes, which [`Log::problems`] lists.
//! - **Deletes** append tombstones. A sealed segment that has become mostly dead is
//!   compacted: its live records are copied to the newest segment, made durable, and the
//!   old file removed. [`Log::reclaim`] (garbage collection's last step) compacts every
//!   mostly dead segment, the newest included: it is sealed first and a new one started.
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
use super::index::{Index, Loc};
use super::reader::read_range;
use super::record::{self, Found, Kind, HEADER};
use super::snapshot::{self, Damaged, Snapshot};
use super::{FileChange, FileStep, FileStepHook};
use crate::error::{hex, StoreError};

/// A segment is sealed, and a new one started, once it reaches this size (by default).
pub(super) const SEGMENT_BYTES: u64 = 64 << 20;
/// A thread's read buffer ([`Log::with_value`]) is kept between reads up to this size.
/// (1 MiB: a typical index part fits — a 64-row dense part of 1,536-d vectors is 480 KiB —
/// and a process keeps at most this per reading thread beyond its memory budget.)
const SCRATCH_KEEP: usize = 1 << 20;
/// Bytes of records gathered before one positional write.
const WRITE_CHUNK: usize = 8 << 20;
/// A snapshot is written once the log holds this many keys, and again once this many
/// (and a 64th of its entries) changed since it ([`Log::write_snapshot`]).
const SNAPSHOT_MIN_KEYS: u64 = 4096;
/// A value of at least this many bytes is not copied into a write batch: the batch before
/// it is written, then its record's head, the value from where it lies, and its trailer.
const WRITE_DIRECT: usize = 1 << 20;
/// After deletes, a sealed segment is compacted when fewer than half of its bytes are
/// live, and it is at least this big or half a segment (smaller ones are not worth a
/// rewrite on every delete; [`Log::reclaim`] takes them too).
const COMPACT_MIN_BYTES: u64 = 1 << 20;

/// Which segments a compaction looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sweep {
    /// After deletes: sealed segments of at least [`COMPACT_MIN_BYTES`] (or half a
    /// segment) fewer than half of whose bytes are live.
    AfterDelete,
    /// [`Log::reclaim`]: every sealed segment fewer than half of whose bytes are live,
    /// and the active one when its copy would keep fewer than half of its bytes.
    Full,
}

/// A record as a compaction reads it from a hint or a scan: its offset, kind and key.
type RecordRef = (u64, Kind, Vec<u8>);

/// A key type of a log.
pub(super) trait LogKey: Ord + std::hash::Hash + Clone + Send + Sync + 'static {
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

/// One segment file.
struct Segment {
    file: Arc<File>,
    /// Bytes of records in it (tombstones included).
    total: u64,
    /// Bytes of its records that the index still points to.
    live: u64,
}

impl Segment {
    fn new(file: Arc<File>) -> Segment {
        Segment {
            file,
            total: 0,
            live: 0,
        }
    }
}

/// What readers share.
struct State<K> {
    index: Index<K>,
    segments: BTreeMap<u32, Segment>,
    /// Bytes of the newest segment whose records the index has (a write under way may
    /// have put more in the file): where a rebuild of the index stops reading it.
    applied: u64,
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
pub(super) struct Log<K: LogKey> {
    dir: PathBuf,
    /// What the log holds, for messages ("object", "derived").
    space: &'static str,
    state: RwLock<State<K>>,
    /// Held by every writer (appends, deletes, compaction, sync), in that order before
    /// `state`.
    active: Mutex<Option<Active>>,
    /// The bytes of [`Log::put`]'s last batch, cleared: the next put encodes into them
    /// instead of growing a new buffer (taken only under `active`).
    put_bytes: Mutex<Vec<u8>>,
    /// Damage found at open, one line each.
    problems: Vec<String>,
    /// Size at which a segment is sealed.
    segment_bytes: u64,
    /// Told of every change to the files (tests: see [`FileStep`]).
    hook: RwLock<Option<FileStepHook>>,
    /// Sealed segments mapped by [`Log::get_shared`], made on first use (`None`: the
    /// mapping failed, and values of that segment are read and copied).
    maps: Mutex<BTreeMap<u32, Option<bytes::Bytes>>>,
}

/// Each key's last record among `records` (in log order; `None` a tombstone), in key
/// order. Sorted once — at a million records, a fraction of inserting them one by one
/// into a map.
fn latest_records<K: LogKey>(records: Vec<(K, Option<Loc>)>) -> Vec<(K, Option<Loc>)> {
    // Sort positions, not records: by the key's first 8 bytes (most keys differ there),
    // then the whole key, then log order, so the last record of each key's run wins.
    let mut order: Vec<(u64, u32)> = records
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (key_prefix(k.bytes()), i as u32))
        .collect();
    order.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| records[a.1 as usize].0.cmp(&records[b.1 as usize].0))
            .then(a.1.cmp(&b.1))
    });
    // Each key's run of positions, its last (the latest record) kept.
    let last: Vec<u32> = order
        .chunk_by(|a, b| a.0 == b.0 && records[a.1 as usize].0 == records[b.1 as usize].0)
        .map(|run| run[run.len() - 1].1)
        .collect();
    let mut records: Vec<Option<(K, Option<Loc>)>> = records.into_iter().map(Some).collect();
    last.into_iter().filter_map(|i| records[i as usize].take()).collect()
}

/// The index of the records read at open under `base`: each key's last record decides
/// (with no snapshot, a tombstone leaves no trace). Sets each segment's live bytes.
fn open_index<K: LogKey>(
    base: Option<Snapshot>,
    records: Vec<(K, Option<Loc>)>,
    segments: &mut BTreeMap<u32, Segment>,
) -> Result<Index<K>, Damaged> {
    let mut map = latest_records(records);
    match &base {
        Some(b) => {
            for c in b.covered().values() {
                if let Some(s) = segments.get_mut(&c.id) {
                    s.total += c.total;
                    s.live += c.live;
                }
            }
        }
        None => map.retain(|(_, l)| l.is_some()),
    }
    for loc in map.iter().filter_map(|(_, l)| l.as_ref()) {
        if let Some(s) = segments.get_mut(&loc.segment) {
            s.live += u64::from(loc.len);
        }
    }
    // A later record of a key the snapshot has supersedes its entry.
    Index::new(base, map, |old| {
        if let Some(s) = segments.get_mut(&old.segment) {
            s.live -= u64::from(old.len);
        }
    })
}

/// What reading a log's segments gives ([`read_index`]).
struct Read<K> {
    index: Index<K>,
    /// Every segment, with its records' total and live bytes.
    segments: BTreeMap<u32, Segment>,
    /// Where the newest segment's last sound record ends (0 without a segment).
    end: u64,
    /// The newest segment has no hint that holds (it was scanned, in part or whole).
    needs_hint: bool,
}

/// The index of the segments in `files` (id → the file and the bytes of it to read): the
/// snapshot `base`, which must match them, under every record it does not cover — read
/// from each segment's hint when that holds, otherwise by a scan whose damage goes to
/// `problems`. `Ok(Err(Damaged))`: a block of `base` that the merge read is damaged (an
/// open then reads again without it).
fn read_index<K: LogKey>(
    dir: &Path,
    space: &'static str,
    files: &BTreeMap<u32, (Arc<File>, u64)>,
    base: Option<Snapshot>,
    problems: &mut Vec<String>,
) -> Result<Result<Read<K>, Damaged>, StoreError> {
    let err = |what: &str, e: io::Error| io_error(dir, what, e);
    let last = files.keys().next_back().copied();
    // Every record in log order (segments, then offsets): `None` for a tombstone.
    let mut records: Vec<(K, Option<Loc>)> = Vec::new();
    let mut segments: BTreeMap<u32, Segment> = BTreeMap::new();
    let (mut end, mut needs_hint) = (0, false);
    for (&id, (file, len)) in files {
        let (file, len) = (file, *len);
        let path = segment_path(dir, id);
        let is_last = Some(id) == last;
        let mut segment = Segment::new(Arc::clone(file));
        // The bytes the snapshot covers (their totals come from it: `open_index`).
        let from = base.as_ref().and_then(|b| b.covered().get(&id)).map_or(0, |c| c.len);
        if from > 0 && from == len {
            if is_last {
                end = len;
            }
            segments.insert(id, segment);
            continue;
        }
        // A hint is used only if its length matches the segment's: for the active
        // segment that means nothing was appended since the hint was written (at the
        // last clean close).
        let entries = hint::read(dir, id, file);
        let hinted = entries.is_some();
        let (entries, good_end) = match entries {
            // A hint holds only for the file's length, which is `len` (at open) or
            // beyond it (a rebuild's newest segment, read up to `len`).
            Some(mut entries) => {
                entries.retain(|e| e.offset >= from);
                (entries, len)
            }
            None => {
                let mut entries = Vec::new();
                let problems_before = problems.len();
                let scanned = record::scan_from(file, from, |found| match found {
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
                if !is_last && from == 0 && problems.len() == problems_before {
                    // A sound sealed segment: remember its records for next time.
                    let _ = hint::write(dir, id, scanned.file_len, &entries);
                }
                (entries, scanned.good_end)
            }
        };
        // Only the records within the bytes asked for (a rebuild reads the newest
        // segment up to where the index had it: a write may be under way after that).
        for e in entries {
            let rec_len = record::record_len(e.key.len(), e.value_len as usize);
            if e.offset + rec_len > len {
                continue;
            }
            segment.total += rec_len;
            let Some(key) = K::from_bytes(&e.key) else {
                problems.push(format!(
                    "{space} segment {}: a record at byte {} has key {}, which is not a {space} key",
                    path.display(),
                    e.offset,
                    hex(&e.key)
                ));
                continue;
            };
            let loc = (e.kind == Kind::Put).then_some(Loc {
                segment: id,
                offset: e.offset,
                len: rec_len as u32,
                value_len: e.value_len,
            });
            records.push((key, loc));
        }
        if is_last {
            end = good_end.min(len);
            needs_hint = !hinted;
        }
        segments.insert(id, segment);
    }
    Ok(open_index(base, records, &mut segments).map(|index| Read {
        index,
        segments,
        end,
        needs_hint,
    }))
}

/// A key's first 8 bytes as a big-endian number (zero-padded): ordered as the keys are
/// wherever two prefixes differ (never decreasing in the key's byte order).
pub(super) fn key_prefix(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
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
        let last = ids.last().copied();
        let mut files: BTreeMap<u32, (Arc<File>, u64)> = BTreeMap::new();
        for &id in &ids {
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
            let len = file.metadata().map_err(|e| err("reading a segment's length", e))?.len();
            files.insert(id, (Arc::new(file), len));
        }
        let on_disk: BTreeMap<u32, u64> = files.iter().map(|(id, f)| (*id, f.1)).collect();
        // The snapshot, if it describes these files: its segments are not read. Should a
        // block of it that the open reads be damaged, the open starts over without it.
        let base = Snapshot::read(dir).filter(|s| s.matches(&on_disk));
        let mut problems = Vec::new();
        let read = match read_index(dir, space, &files, base, &mut problems)? {
            Ok(read) => read,
            Err(Damaged) => {
                snapshot::remove(dir);
                problems.clear();
                read_index(dir, space, &files, None, &mut problems)?.expect("no snapshot, no damage to it")
            }
        };
        let active = last.map(|id| Active {
            id,
            file: Arc::clone(&files[&id].0),
            len: read.end,
            dirty: false,
            needs_hint: read.needs_hint,
        });
        Ok(Log {
            dir: dir.to_path_buf(),
            space,
            state: RwLock::new(State {
                index: read.index,
                segments: read.segments,
                applied: read.end,
            }),
            active: Mutex::new(active),
            put_bytes: Mutex::new(Vec::new()),
            problems,
            segment_bytes,
            hook: RwLock::new(None),
            maps: Mutex::new(BTreeMap::new()),
        })
    }

    /// Sets (or, with `None`, clears) the hook told of every change to the files.
    pub(super) fn set_hook(&self, hook: Option<FileStepHook>) {
        *self.hook.write() = hook;
    }

    /// Tells the hook, if any, of a change to the file at `path()` (made only then: the
    /// commit path pays one uncontended lock). Called with no lock on `state` held, so the
    /// hook may read the log.
    fn step(&self, path: impl FnOnce() -> PathBuf, change: FileChange) {
        let hook = self.hook.read().clone();
        if let Some(hook) = hook {
            hook(&FileStep {
                space: self.space,
                path: path(),
                change,
            });
        }
    }

    /// Damage found at open, one line each (empty: every record was readable).
    pub(super) fn problems(&self) -> &[String] {
        &self.problems
    }

    /// `f` of the index and segments; if the index snapshot turns out damaged, the index
    /// is rebuilt without it ([`Log::recover`]) and `f` runs again (it then cannot meet
    /// damage: no snapshot is left to read).
    fn indexed<T>(&self, f: impl Fn(&State<K>) -> Result<T, Damaged>) -> Result<T, StoreError> {
        loop {
            let found = f(&self.state.read());
            match found {
                Ok(t) => return Ok(t),
                Err(Damaged) => self.recover()?,
            }
        }
    }

    /// Rebuilds the index if its snapshot is damaged (unless another thread just did).
    fn recover(&self) -> Result<(), StoreError> {
        let mut state = self.state.write();
        if state.index.base().is_some_and(Snapshot::is_damaged) {
            self.rebuild(&mut state)?;
        }
        Ok(())
    }

    /// The index rebuilt from every segment's records (hints where they hold, else scans)
    /// without the snapshot, which is removed (the next close writes another): what an
    /// open without a snapshot reads, the newest segment up to the bytes the index had.
    /// Each segment's totals are recounted with it.
    fn rebuild(&self, state: &mut State<K>) -> Result<(), StoreError> {
        let newest = state.segments.keys().next_back().copied();
        let mut files = BTreeMap::new();
        for (&id, s) in &state.segments {
            let len = match Some(id) == newest {
                true => state.applied,
                false => s
                    .file
                    .metadata()
                    .map_err(|e| io_error(&self.dir, "reading a segment's length", e))?
                    .len(),
            };
            files.insert(id, (Arc::clone(&s.file), len));
        }
        // Damage found in a segment here was there at open too (the snapshot spared it
        // the read); the next open, which has no snapshot, reports it.
        let mut problems = Vec::new();
        let read =
            read_index(&self.dir, self.space, &files, None, &mut problems)?.expect("no snapshot, no damage to it");
        state.index = read.index;
        state.segments = read.segments;
        snapshot::remove(&self.dir);
        Ok(())
    }

    /// Where `key`'s record is, and its segment's file (read outside the lock).
    fn locate(&self, key: &K) -> Result<Option<(Loc, Arc<File>)>, StoreError> {
        self.indexed(|state| {
            Ok(state
                .index
                .get(key)?
                .map(|loc| (loc, Arc::clone(&state.segments[&loc.segment].file))))
        })
    }

    /// The value stored under `key`, checked.
    pub(super) fn get(&self, key: &K) -> Result<Option<Vec<u8>>, StoreError> {
        let mut bytes = Vec::new();
        let Some(start) = self.read_record(key, &mut bytes)? else {
            return Ok(None);
        };
        bytes.truncate(start.end);
        bytes.drain(..start.start);
        Ok(Some(bytes))
    }

    /// The value under `key`, checked, passed to `f` ([`Log::with_values`] of one key).
    /// `Ok(false)`: no value.
    pub(super) fn with_value(&self, key: &K, f: &mut dyn FnMut(&[u8])) -> Result<bool, StoreError> {
        let mut found = false;
        self.with_values(std::slice::from_ref(key), &mut |_, v| {
            found = true;
            f(v)
        })?;
        Ok(found)
    }

    /// Each of `keys`' values, checked, passed to `f` with the key's place in `keys`, in
    /// that order (a key without a value is skipped); the first damaged value stops the
    /// call with its error. The records are located under one read of the index and read
    /// into a per-thread buffer that later reads reuse (kept up to [`SCRATCH_KEEP`] bytes).
    /// (Not through a segment's mapping: the pages a mapping touches stay in the process's
    /// resident set for the mapping's life — reading a 1M-node commit's nodes so kept
    /// 2.4 GiB of node objects in it.)
    pub(super) fn with_values(&self, keys: &[K], f: &mut dyn FnMut(usize, &[u8])) -> Result<(), StoreError> {
        let (located, files) = self.locate_many(keys)?;
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SCRATCH.with(|cell| {
            // A reentrant call (from `f`) reads into a buffer of its own.
            let mut own = Vec::new();
            let mut borrowed = cell.try_borrow_mut();
            let buf = match borrowed.as_mut() {
                Ok(b) => &mut **b,
                Err(_) => &mut own,
            };
            let read = || {
                for (i, loc, at) in located {
                    let value = self.read_record_at(&keys[i], loc, &files[at].1, buf)?;
                    f(i, &buf[value]);
                }
                Ok(())
            };
            let r = read();
            if buf.capacity() > SCRATCH_KEEP {
                *buf = Vec::new();
            }
            r
        })
    }

    /// Each of `keys`' records that has one (its place in `keys`, its location, its file's
    /// place in the list), and its segment's file (one handle a segment), located under one
    /// read of the index.
    fn locate_many(&self, keys: &[K]) -> Result<Located, StoreError> {
        self.indexed(|state| {
            let mut files: Vec<(u32, Arc<File>)> = Vec::new();
            let mut located = Vec::with_capacity(keys.len());
            for (i, key) in keys.iter().enumerate() {
                let Some(loc) = state.index.get(key)? else {
                    continue;
                };
                let at = match files.iter().position(|(id, _)| *id == loc.segment) {
                    Some(at) => at,
                    None => {
                        files.push((loc.segment, Arc::clone(&state.segments[&loc.segment].file)));
                        files.len() - 1
                    }
                };
                located.push((i, loc, at));
            }
            Ok((located, files))
        })
    }

    /// Asks the kernel to read the records of `keys` into its page cache now, all at once
    /// (`posix_fadvise(WILLNEED)`, Linux; elsewhere nothing): reads that follow find them
    /// there instead of waiting on the disk one after another — the nodes of a chunk that a
    /// commit changed lie scattered over the log (objects are written in hash order), so
    /// rebuilding it from a cold cache is ~100 random reads. Records closer than
    /// [`WILL_NEED_GAP`] are asked as one range. A hint: it reads and checks nothing, and
    /// an absent key, or advice the system refuses, is skipped.
    pub(super) fn will_need(&self, keys: &[K]) -> Result<(), StoreError> {
        if !cfg!(target_os = "linux") || keys.is_empty() {
            return Ok(());
        }
        let (located, files) = self.locate_many(keys)?;
        // (file's place, start, end), in file order, then merged where close.
        let mut spans: Vec<(usize, u64, u64)> = located
            .iter()
            .map(|(_, loc, at)| (*at, loc.offset, loc.offset + u64::from(loc.len)))
            .collect();
        spans.sort_unstable();
        let mut ranges: Vec<(usize, u64, u64)> = Vec::with_capacity(spans.len());
        for (at, start, end) in spans {
            match ranges.last_mut() {
                Some(last) if last.0 == at && start <= last.2 + WILL_NEED_GAP => last.2 = last.2.max(end),
                _ => ranges.push((at, start, end)),
            }
        }
        for (at, start, end) in ranges {
            advise_will_need(&files[at].1, start, end - start);
        }
        Ok(())
    }

    /// Reads and checks the record of `key` into `bytes` (resized to the record); the
    /// value's range in it, `None` if there is no value.
    fn read_record(&self, key: &K, bytes: &mut Vec<u8>) -> Result<Option<std::ops::Range<usize>>, StoreError> {
        let Some((loc, file)) = self.locate(key)? else {
            return Ok(None);
        };
        self.read_record_at(key, loc, &file, bytes).map(Some)
    }

    /// Reads `key`'s record, at `loc` in `file`, into `bytes` (resized to the record) and
    /// checks it: the value's range in it.
    fn read_record_at(
        &self,
        key: &K,
        loc: Loc,
        file: &File,
        bytes: &mut Vec<u8>,
    ) -> Result<std::ops::Range<usize>, StoreError> {
        bytes.resize(loc.len as usize, 0);
        file.read_exact_at(bytes, loc.offset).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                self.cut_short(key, loc)
            } else {
                io_error(&self.dir, "reading a record", e)
            }
        })?;
        self.check_record(key, loc, bytes)
    }

    /// Checks `record`, `key`'s record at `loc` (header crc, key, value crc): the value's
    /// range in it.
    fn check_record(&self, key: &K, loc: Loc, record: &[u8]) -> Result<std::ops::Range<usize>, StoreError> {
        let value = record::check(record, key.bytes())
            .map_err(|detail| self.corrupt(key, format!("segment {:08} byte {}: {detail}", loc.segment, loc.offset)))?;
        let start = HEADER + key.bytes().len();
        Ok(start..start + value.len())
    }

    /// `key`'s record at `loc` runs past the end of its segment.
    fn cut_short(&self, key: &K, loc: Loc) -> StoreError {
        self.corrupt(key, format!("segment {:08} ends inside the record", loc.segment))
    }

    fn corrupt(&self, key: &K, detail: String) -> StoreError {
        StoreError::Corrupt {
            space: self.space,
            key: hex(key.bytes()),
            detail,
        }
    }

    /// The value stored under `key`, checked, as a slice of its sealed segment's mapping
    /// (no copy, no fresh memory); a value in the active segment (still written to, and
    /// cut back if a write fails) or in a segment that cannot be mapped is read and copied
    /// as by [`Log::get`]. With `check_value` false a mapped value's checksum is not
    /// computed (its record's framing is checked): the flag returned says whether the
    /// value was checked.
    pub(super) fn get_shared(&self, key: &K, check_value: bool) -> Result<Option<(bytes::Bytes, bool)>, StoreError> {
        let found = self.indexed(|state| {
            let Some(loc) = state.index.get(key)? else {
                return Ok(None);
            };
            // The newest segment is the active one; an older one is never written again.
            let sealed = state
                .segments
                .keys()
                .next_back()
                .is_some_and(|&last| loc.segment < last);
            Ok(Some((loc, Arc::clone(&state.segments[&loc.segment].file), sealed)))
        })?;
        let Some((loc, file, sealed)) = found else {
            return Ok(None);
        };
        let map = if sealed { self.map_of(loc.segment, &file) } else { None };
        let Some(map) = map else {
            let mut bytes = Vec::new();
            let value = self.read_record_at(key, loc, &file, &mut bytes)?;
            return Ok(Some((bytes::Bytes::from(bytes).slice(value), true)));
        };
        let start = loc.offset as usize;
        let record = map
            .get(start..start + loc.len as usize)
            .ok_or_else(|| self.cut_short(key, loc))?;
        let value = if check_value {
            self.check_record(key, loc, record)?
        } else {
            let value = record::check_framing(record, key.bytes()).map_err(|detail| {
                self.corrupt(key, format!("segment {:08} byte {}: {detail}", loc.segment, loc.offset))
            })?;
            let start = HEADER + key.bytes().len();
            start..start + value.len()
        };
        Ok(Some((map.slice(start + value.start..start + value.end), check_value)))
    }

    /// Sealed segment `id`'s mapping, made on first use; `None` if it cannot be mapped.
    fn map_of(&self, id: u32, file: &File) -> Option<bytes::Bytes> {
        let mut maps = self.maps.lock();
        maps.entry(id)
            .or_insert_with(|| {
                // SAFETY: a sealed segment's bytes never change while this store has it:
                // records are only appended to the active (newest) segment, and only it is
                // ever cut back; compaction removes a sealed file, which unlinks it while
                // the mapping keeps its pages. Another program truncating the file under
                // a running process would fault the process on access, as with any mapped
                // store (`storage-format.md` §6.7).
                let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
                Some(bytes::Bytes::from_owner(map))
            })
            .clone()
    }

    /// Bytes `offset..offset + out.len()` of the value under `key`, not checked (the
    /// caller checks them: [`crate::Store::read_derived_at`]). `Ok(false)` if there is no
    /// value or it is shorter.
    pub(super) fn read_at(&self, key: &K, offset: u64, out: &mut [u8]) -> Result<bool, StoreError> {
        let Some((loc, file)) = self.locate(key)? else {
            return Ok(false);
        };
        let start = loc.offset + (HEADER + key.bytes().len()) as u64;
        read_range(&file, start, u64::from(loc.value_len), offset, out, &self.dir)
    }

    /// True if `key` has a value (not checked).
    pub(super) fn contains(&self, key: &K) -> Result<bool, StoreError> {
        self.indexed(|state| state.index.contains(key))
    }

    /// Keys in `range`, in order.
    pub(super) fn keys(&self, range: impl RangeBounds<K>) -> Result<Vec<K>, StoreError> {
        self.indexed(|state| state.index.keys((range.start_bound(), range.end_bound())))
    }

    /// The last key in `range`.
    pub(super) fn last_key(&self, range: impl RangeBounds<K>) -> Result<Option<K>, StoreError> {
        self.indexed(|state| state.index.last_key((range.start_bound(), range.end_bound())))
    }

    /// Number of keys and the sum of their value lengths.
    pub(super) fn count(&self) -> (u64, u64) {
        self.state.read().index.count()
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
        let mut batch = Batch {
            bytes: std::mem::take(&mut *self.put_bytes.lock()),
            ..Batch::default()
        };
        let written = || {
            for (key, value) in entries {
                if skip_present && (batch.has(&key) || self.contains(&key)?) {
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
        };
        let result = written();
        // Keep the buffer (up to a write chunk and a record) for the next put.
        batch.bytes.clear();
        if batch.bytes.capacity() <= 2 * WRITE_CHUNK {
            *self.put_bytes.lock() = batch.bytes;
        }
        result
    }

    /// Removes keys (absent ones are ignored), then compacts segments that became mostly
    /// dead.
    pub(super) fn delete(&self, keys: impl Iterator<Item = K>) -> Result<(), StoreError> {
        let mut active = self.active.lock();
        let mut batch = Batch::default();
        for key in keys {
            if batch.has(&key) || self.contains(&key)? {
                self.append(&mut active, &mut batch, Kind::Delete, key, &[])?;
            }
        }
        self.write_batch(&mut active, &mut batch)?;
        self.compact(&mut active, Sweep::AfterDelete)
    }

    /// Gives the space of dead records back to the file system: compacts every segment
    /// fewer than half of whose bytes are live, whatever its size, and the active one when
    /// its copy would keep fewer than half of its bytes — its live records and the
    /// tombstones an older segment still needs. The active one is then sealed (synced, its
    /// hint written), a new one started, and it is compacted like a sealed one. So when
    /// this returns (with no writes meanwhile) no segment holds more bytes that a
    /// compaction would drop than bytes it would keep, and a second call does nothing.
    pub(super) fn reclaim(&self) -> Result<(), StoreError> {
        let mut active = self.active.lock();
        self.compact(&mut active, Sweep::Full)
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
        let loc = Loc {
            segment: a.id,
            offset: a.len + batch.bytes.len() as u64,
            len: len as u32,
            value_len: value.len() as u32,
        };
        let direct = value.len() >= WRITE_DIRECT;
        if direct {
            record::encode_head(kind, key.bytes(), value.len(), &mut batch.bytes);
        } else {
            record::encode(kind, key.bytes(), value, &mut batch.bytes);
        }
        batch.keys.insert(key.clone());
        batch.records.push((key, kind, loc));
        if direct {
            // The value is written from where it lies, after the batch, instead of being
            // copied into it.
            return self.write_out(active, batch, &[value, &record::trailer(value)]);
        }
        Ok(())
    }

    /// Writes `batch` at the active segment's end and tells the index.
    fn write_batch(&self, active: &mut Option<Active>, batch: &mut Batch<K>) -> Result<(), StoreError> {
        self.write_out(active, batch, &[])
    }

    /// Writes `batch`'s bytes and then `tail` (the rest of its last record) at the active
    /// segment's end, and tells the index.
    fn write_out(&self, active: &mut Option<Active>, batch: &mut Batch<K>, tail: &[&[u8]]) -> Result<(), StoreError> {
        if batch.bytes.is_empty() {
            return Ok(());
        }
        let a = active.as_mut().expect("a batch has a segment");
        let mut at = a.len;
        let written = std::iter::once(&batch.bytes[..])
            .chain(tail.iter().copied())
            .try_for_each(|bytes| {
                a.file.write_all_at(bytes, at)?;
                at += bytes.len() as u64;
                Ok(())
            });
        if let Err(e) = written {
            // Cut off what may have been written, so the file is as it was.
            let _ = a.file.set_len(a.len);
            batch.clear();
            return Err(io_error(
                &self.dir,
                &format!("appending to {} segment {:08}", self.space, a.id),
                e,
            ));
        }
        let (id, from) = (a.id, a.len);
        a.len = at;
        a.dirty = true;
        a.needs_hint = true;
        let to = a.len;
        let mut state = self.state.write();
        let State {
            index,
            segments,
            applied,
        } = &mut *state;
        *applied = to;
        let mut damaged = false;
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
            match old {
                Ok(Some(old)) => {
                    if let Some(s) = segments.get_mut(&old.segment) {
                        s.live -= u64::from(old.len);
                    }
                }
                Ok(None) => {}
                Err(Damaged) => {
                    damaged = true;
                    break;
                }
            }
        }
        // The snapshot under the index is damaged: the index is rebuilt from the files,
        // these records (written) included.
        let rebuilt = if damaged { self.rebuild(&mut state) } else { Ok(()) };
        drop(state);
        batch.clear();
        self.step(|| segment_path(&self.dir, id), FileChange::Appended { from, to });
        rebuilt
    }

    /// Seals the active segment (synced, with a hint) and starts the next one.
    fn roll(&self, active: &mut Option<Active>) -> Result<(), StoreError> {
        let next = match active.as_ref() {
            Some(a) => {
                a.file
                    .sync_data()
                    .map_err(|e| io_error(&self.dir, "syncing a sealed segment", e))?;
                let _ = self.write_hint(a.id, a.len);
                self.step(|| segment_path(&self.dir, a.id), FileChange::Sealed);
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
        self.step(|| path.clone(), FileChange::Created);
        let file = Arc::new(file);
        let mut state = self.state.write();
        state.segments.insert(next, Segment::new(Arc::clone(&file)));
        state.applied = 0;
        drop(state);
        *active = Some(Active {
            id: next,
            file,
            len: 0,
            dirty: false,
            needs_hint: true,
        });
        Ok(())
    }

    /// Compacts the segments `sweep` takes (see [`Sweep`]): copies each one's live
    /// records (and the tombstones that must stay, below) to the active segment, syncs,
    /// then removes the old file and its hint, oldest segment first.
    ///
    /// Crash safety, at every point: a segment is removed only once the copies of its
    /// live records are durable (until then a key may be in two segments, with the same
    /// value), and a tombstone is dropped only when no older segment that survives holds a
    /// put of its key — puts in segments compacted in the same run go first, as those are
    /// older. A live record that cannot be read (damage) stops the compaction before its
    /// segment: that segment and the newer ones stay as they are.
    fn compact(&self, active: &mut Option<Active>, sweep: Sweep) -> Result<(), StoreError> {
        let active_id = active.as_ref().map(|a| a.id);
        let min_bytes = match sweep {
            Sweep::AfterDelete => COMPACT_MIN_BYTES.min(self.segment_bytes / 2),
            Sweep::Full => 0,
        };
        // (id, total, live) of the active segment when it is mostly dead and may be taken.
        let (mut victims, active_dead): (Vec<u32>, Option<(u32, u64, u64)>) = {
            let state = self.state.read();
            let victims = state
                .segments
                .iter()
                .filter(|(id, s)| Some(**id) != active_id && s.total >= min_bytes && s.live * 2 < s.total)
                .map(|(id, _)| *id)
                .collect();
            let active_dead = active_id
                .filter(|_| sweep == Sweep::Full)
                .and_then(|id| state.segments.get(&id).map(|s| (id, s.total, s.live)))
                .filter(|(_, total, live)| live * 2 < *total);
            (victims, active_dead)
        };
        if victims.is_empty() && active_dead.is_none() {
            return Ok(());
        }
        // The active segment's records are read once (it has no hint to read them from);
        // a sealed segment's are read again when it is copied, so that only one segment's
        // records are held at a time.
        let mut active_records = active_dead
            .map(|(id, ..)| self.records(id).map(|r| (id, r)))
            .transpose()?;
        let mut tombstones: BTreeMap<Vec<u8>, Option<u32>> = BTreeMap::new();
        let mut note_tombstones = |records: &[RecordRef]| {
            for (_, kind, key) in records {
                if *kind == Kind::Delete {
                    tombstones.insert(key.clone(), None);
                }
            }
        };
        for &id in &victims {
            note_tombstones(&self.records(id)?);
        }
        if let Some((_, records)) = &active_records {
            note_tombstones(records);
        }
        let newest = active_dead
            .map(|(id, ..)| id)
            .into_iter()
            .chain(victims.iter().copied())
            .max();
        let taken = |id: &u32| victims.contains(id) || active_dead.is_some_and(|(a, ..)| a == *id);
        if let Some(newest) = newest.filter(|_| !tombstones.is_empty()) {
            self.find_oldest_puts(&mut tombstones, |id| id < newest && !taken(&id))?;
        }
        // A tombstone of segment `id` is kept while it hides a put in an older surviving
        // segment, unless the key has been put again since (then the newer put counts).
        let hides = |key: &[u8], id: u32| tombstones.get(key).copied().flatten().is_some_and(|s| s < id);
        if let Some((id, total, live)) = active_dead {
            let mut kept_tombstones = 0u64;
            for (_, kind, key) in active_records.as_ref().map_or(&[][..], |(_, r)| r) {
                if *kind == Kind::Delete && hides(key, id) {
                    if let Some(k) = K::from_bytes(key) {
                        if !self.contains(&k)? {
                            kept_tombstones += record::record_len(key.len(), 0);
                        }
                    }
                }
            }
            // Worth it only if the copy drops more than it keeps; so a copy is never
            // compacted again until new dead records fill half of it.
            if (live + kept_tombstones) * 2 < total {
                self.roll(active)?;
                victims.push(id);
            }
        }
        for id in victims {
            let keep = match active_records.take_if(|(a, _)| *a == id) {
                Some((_, records)) => records,
                None => self.records(id)?,
            };
            let is_live = |k: &K, offset: u64| -> Result<bool, StoreError> {
                let live = self.indexed(|state| state.index.get(k))?;
                Ok(live.is_some_and(|l| l.segment == id && l.offset == offset))
            };
            // A damaged live record stops the compaction before anything of its segment is
            // copied: that segment and the newer ones stay as they are (their tombstones
            // may hide puts in it), and no later run copies its records over and over.
            for (offset, kind, key) in &keep {
                let Some(k) = K::from_bytes(key) else { continue };
                if *kind == Kind::Put && is_live(&k, *offset)? {
                    match self.get(&k) {
                        Ok(_) => {}
                        Err(StoreError::Corrupt { .. }) => return Ok(()),
                        Err(e) => return Err(e),
                    }
                }
            }
            let mut batch = Batch::default();
            for (offset, kind, key) in keep {
                let Some(k) = K::from_bytes(&key) else { continue };
                match kind {
                    Kind::Put => {
                        if is_live(&k, offset)? {
                            let value = self.get(&k)?.expect("a live key has a value");
                            self.append(active, &mut batch, Kind::Put, k, &value)?;
                        }
                    }
                    Kind::Delete => {
                        if hides(&key, id) && !batch.has(&k) && !self.contains(&k)? {
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
            // Values handed out keep the mapping (and the removed file's pages) alive.
            self.maps.lock().remove(&id);
            let path = segment_path(&self.dir, id);
            fs::remove_file(&path).map_err(|e| io_error(&self.dir, &format!("removing {}", path.display()), e))?;
            self.step(|| path, FileChange::Removed);
            if hint::remove(&self.dir, id) {
                self.step(|| hint::path(&self.dir, id), FileChange::HintRemoved);
            }
            sync_dir(&self.dir).map_err(|e| io_error(&self.dir, "syncing the segment directory", e))?;
        }
        Ok(())
    }

    /// The records of segment `id`: from its hint if it holds, else by a scan.
    fn records(&self, id: u32) -> Result<Vec<RecordRef>, StoreError> {
        let file = Arc::clone(&self.state.read().segments[&id].file);
        if let Some(entries) = hint::read(&self.dir, id, &file) {
            return Ok(entries.into_iter().map(|e| (e.offset, e.kind, e.key)).collect());
        }
        let mut out = Vec::new();
        record::scan(&file, |found| {
            if let Found::Record { offset, kind, key, .. } = found {
                out.push((offset, kind, key));
            }
        })
        .map_err(|e| io_error(&self.dir, "reading a segment to compact", e))?;
        Ok(out)
    }

    /// Fills in, for each key of `tombstones`, the oldest segment that `survives` and
    /// holds a put of the key (left `None` where there is none).
    fn find_oldest_puts(
        &self,
        tombstones: &mut BTreeMap<Vec<u8>, Option<u32>>,
        survives: impl Fn(u32) -> bool,
    ) -> Result<(), StoreError> {
        let survivors: Vec<u32> = self
            .state
            .read()
            .segments
            .keys()
            .copied()
            .filter(|id| survives(*id))
            .collect();
        for id in survivors {
            for (_, kind, key) in self.records(id)? {
                if kind == Kind::Put {
                    if let Some(oldest) = tombstones.get_mut(&key) {
                        oldest.get_or_insert(id);
                    }
                }
            }
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

impl<K: LogKey> Log<K> {
    /// At close: syncs the active segment and writes its hint if it has none that holds,
    /// so the next open reads the hint instead of scanning the segment (a cache: any
    /// failure is ignored, and a later append makes the hint stale by its length).
    fn close(&self) {
        let mut active = self.active.lock();
        let Some(a) = active.as_mut() else { return };
        if a.needs_hint && a.len > 0 && a.file.sync_data().is_ok() {
            a.dirty = false;
            if self.write_hint(a.id, a.len).is_ok() {
                a.needs_hint = false;
            }
        }
        let _ = self.write_snapshot(a.id, a.len);
    }

    /// Writes a snapshot of every segment (the active one, `active`, up to `active_len`)
    /// if the index's own is stale — it names a segment compaction removed — or at least
    /// a quarter segment and an eighth of what it covers was written since, or at least
    /// [`SNAPSHOT_MIN_KEYS`] keys and a 64th of its entries changed since (without a
    /// snapshot: the log holds that many keys): so each
    /// snapshot costs a constant share of the bytes or keys written since the last, and
    /// an open reads at most a 64th of the entries beyond it. A cache: the caller ignores
    /// a failure.
    fn write_snapshot(&self, active: u32, active_len: u64) -> io::Result<()> {
        // The decision, the covered segments and the entries, from one view of the index
        // (rebuilt first if its snapshot turns out damaged: then there is no snapshot and
        // every key counts as changed).
        let planned = self
            .indexed(|state| {
                let covered = state.index.base().map(Snapshot::covered);
                let stale = covered.is_some_and(|c| c.keys().any(|id| !state.segments.contains_key(id)));
                let inside: u64 = covered.map_or(0, |c| c.values().map(|c| c.total).sum());
                let outside = state
                    .segments
                    .values()
                    .map(|s| s.total)
                    .sum::<u64>()
                    .saturating_sub(inside);
                let many_bytes =
                    outside > 0 && outside >= self.segment_bytes / 4 && outside.saturating_mul(8) >= inside;
                // Small records (one-node commits) add little to the bytes but as much to an
                // open as large ones: one record to read and one entry to merge each.
                let (changed, entries) = state.index.beyond_snapshot();
                let many_keys = changed >= SNAPSHOT_MIN_KEYS && changed.saturating_mul(64) >= entries;
                if !(stale || many_bytes || many_keys) {
                    return Ok(None);
                }
                let segments: io::Result<Vec<(u32, u64, u64)>> = state
                    .segments
                    .iter()
                    .map(|(&id, s)| {
                        let len = if id == active {
                            active_len
                        } else {
                            s.file.metadata()?.len()
                        };
                        Ok((id, len, s.total))
                    })
                    .collect();
                let entries = match segments {
                    Ok(ref s) if !s.is_empty() => state.index.entries(..)?,
                    _ => Vec::new(),
                };
                Ok(Some((segments, entries)))
            })
            .map_err(|e| io::Error::other(e.to_string()))?;
        let Some((segments, entries)) = planned else {
            return Ok(());
        };
        let segments = segments?;
        if segments.is_empty() {
            snapshot::remove(&self.dir);
            return Ok(());
        }
        snapshot::write(&self.dir, &segments, entries.iter().map(|(k, l)| (k.bytes(), *l)))
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

impl<K: LogKey> Drop for Log<K> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Records located together ([`Log::locate_many`]): per key that has one, (its place in
/// the keys, its location, its file's place in the files); and the files, each segment's
/// once, as (segment id, file).
type Located = (Vec<(usize, Loc, usize)>, Vec<(u32, Arc<File>)>);

/// Records this close in one segment are asked of the kernel as one range
/// ([`Log::will_need`]): reading the gap costs less than another request.
const WILL_NEED_GAP: u64 = 16 << 10;

/// `posix_fadvise(WILLNEED)` of `len` bytes at `offset` of `file`; refused advice is
/// ignored (it is a hint).
#[cfg(target_os = "linux")]
fn advise_will_need(file: &File, offset: u64, len: u64) {
    let _ = rustix::fs::fadvise(
        file,
        offset,
        std::num::NonZeroU64::new(len),
        rustix::fs::Advice::WillNeed,
    );
}

#[cfg(not(target_os = "linux"))]
fn advise_will_need(_file: &File, _offset: u64, _len: u64) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_record_of_each_key_wins_and_counts_as_live() {
        let dir = tempfile::tempdir().unwrap();
        let file = Arc::new(File::create(dir.path().join("x")).unwrap());
        let mut segments: BTreeMap<u32, Segment> = (1..=2)
            .map(|id| {
                let s = Segment::new(Arc::clone(&file));
                (id, s)
            })
            .collect();
        let put = |segment: u32, offset: u64, len: u32| {
            Some(Loc {
                segment,
                offset,
                len,
                value_len: len / 2,
            })
        };
        // Keys sharing their first 8 bytes, and shorter than 8, are ordered in full.
        let k = |s: &str| -> Box<[u8]> { s.as_bytes().into() };
        let records = vec![
            (k("aaaaaaaa-1"), put(1, 0, 10)),
            (k("aaaaaaaa-2"), put(1, 10, 20)),
            (k("b"), put(1, 30, 5)),
            (k("aaaaaaaa-1"), put(2, 0, 7)), // replaced in a later segment
            (k("b"), None),                  // deleted
            (k("c"), None),                  // a tombstone with nothing before it
            (k("d"), None),
            (k("d"), put(2, 7, 3)), // put again after its tombstone
        ];
        let index: Index<Box<[u8]>> = open_index(None, records, &mut segments).unwrap();
        let entries = index.entries(..).unwrap();
        let got: Vec<(&[u8], u32, u64)> = entries.iter().map(|(k, l)| (&k[..], l.segment, l.offset)).collect();
        assert_eq!(
            got,
            vec![
                (&b"aaaaaaaa-1"[..], 2, 0),
                (&b"aaaaaaaa-2"[..], 1, 10),
                (&b"d"[..], 2, 7)
            ]
        );
        assert_eq!((segments[&1].live, segments[&2].live), (20, 10));
    }
}
