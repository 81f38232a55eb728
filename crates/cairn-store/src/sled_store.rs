//! [`SledStore`]: the on-disk [`Store`], over sled 0.34.7.
//!
//! Layout (described in prose in `store-format.md`): four sled trees in one database,
//! - `objects`: key = the object's 32 raw hash bytes, value = [`frame`]`(encoded object)`;
//! - `refs`: key = the ref name's UTF-8 bytes, value = [`frame`]`(ref value)`;
//! - `derived`: key = the caller's raw key, value = [`frame`]`(value)`;
//! - `reflog`: key = the record's sequence number (u64 big-endian, so key order is
//!   append order), value = [`frame`]`(record)`.
//!
//! Every value is framed (crc32 + payload) because sled checksums its log records but a
//! damaged page that escapes that check, or a bug above sled, would otherwise come back
//! as plausible bytes; the frame makes every read verify what it returns.
//!
//! # Full disks
//!
//! sled 0.34.7 (pinned) has three behaviours on a full disk (or quota) that this module
//! works around; all were reproduced on a small tmpfs (`tests/full_disk.rs`).
//!
//! - **A failed open leaves a file that breaks every later open.** sled writes a snapshot
//!   of its page table when it opens (if the log moved since the last one), as
//!   `snap.<lsn>.generating`, renamed to `snap.<lsn>` once complete (`write_snapshot` in
//!   sled's `pagecache/snapshot.rs`). When that write fails, the `.generating` file stays,
//!   and sled's snapshot lookup does not skip such files (`get_snapshot_files` in its
//!   `config.rs` skips only `.in___motion`): it reads the greatest `snap.*` name, finds
//!   the truncated one, and fails with "Read corrupted data" from then on. So
//!   even a read-only command that happened to open on a full disk made the repository
//!   unopenable. [`SledStore::open`] removes `snap.*.generating` files before opening (and
//!   after a failed open), holding sled's own lock on `db` meanwhile, so a process that has
//!   the database open and may be writing one right now is never disturbed. Removing one is
//!   safe: a snapshot only counts once renamed, and until then the log still holds
//!   everything since the previous snapshot.
//! - **A lost blob write blocks every later flush.** sled writes a page over about 128 KiB
//!   (a quarter of its 512 KiB log segment: a large value, or a leaf of 17 values of 8 KiB)
//!   to a file under `blobs/` while reserving its log space. When that file write fails
//!   (`encapsulate`, called from `reserve_inner` in sled's `pagecache/logger.rs` after
//!   the reservation counted itself as a writer of the log buffer), sled returns the
//!   error but leaves the buffer counting a writer that never finishes: the buffer is never written, no error is recorded, and every later flush —
//!   including the ones sled runs when its handles are dropped — waits on a condition
//!   variable forever, with no CPU (this was `cairn index build` hanging with 0.3–0.7 MiB
//!   free). So every write first checks the free space on the device (twice the bytes
//!   written plus [`FREE_SPACE_HEADROOM_BYTES`]; refused with [`StoreError::NoSpace`]
//!   before sled sees it, the store unchanged and still usable); every flush runs on a
//!   helper thread and gives up after [`FLUSH_TIMEOUT`]; and closing runs sled's own
//!   shutdown on a helper thread too, abandoned after a bounded wait. An abandoned thread
//!   keeps its handle, hence sled's file lock, until the process exits: reopening the same
//!   store then needs a new process (which is what each `cairn` command is).
//! - **An I/O error is final for the handle.** After a failed write, sled fails (or, as
//!   above, blocks) every later write and flush until the database is reopened, and
//!   also every read of a page written since (a read waits for the page to be on disk).
//!   The store therefore remembers the first failure and refuses every later call at
//!   once, reads included, with the same kind of error ([`StoreError::NoSpace`] when the
//!   device was full). A ref moved in memory by [`Store::cas_ref`] whose flush then fails
//!   is moved back, so that if sled ever writes the move, it writes the move back too.
//!
//! Every `ENOSPC` or `EDQUOT` from sled is reported as [`StoreError::NoSpace`]. Space
//! freed, the next open (in a new process if a thread was abandoned) works without any
//! manual step.

use std::fmt;
use std::fs;
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use fs2::FileExt;

use cairn_core::Hash;

use crate::backend::{check_ref_log_record, CasOutcome, DerivedEntry, Store, StoreDamage, StoreStats};
use crate::error::{hex, StoreError};
use crate::frame::{frame, unframe, CRC_LEN};
use crate::range::at_or_before_upper;

/// Name of the sled tree holding objects.
const OBJECTS_TREE: &str = "objects";
/// Name of the sled tree holding refs.
const REFS_TREE: &str = "refs";
/// Name of the sled tree holding derived data.
const DERIVED_TREE: &str = "derived";
/// Name of the sled tree holding the ref log.
const REFLOG_TREE: &str = "reflog";

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
const LOCK_WAIT: Duration = Duration::from_secs(1);

/// How long a flush (and the flush sled runs when a store is closed) may take before the
/// store gives up on it (see "Full disks" above). A healthy flush takes milliseconds:
/// sled writes its log in the background, so a flush waits only for the last 500 ms of
/// writes; on a full tmpfs, sled's flush either failed at once or never returned.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(30);

/// How long closing a store waits for sled's shutdown once a write or flush has failed.
/// sled then either returns at once (it recorded the error) or never (a lost blob write).
const FAILED_CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Free space a write leaves on the device beyond twice its own bytes: room for sled's
/// bookkeeping around it (two 512 KiB log segments, which also covers a page rewritten
/// to `blobs/`). A write that would leave less is refused with [`StoreError::NoSpace`].
const FREE_SPACE_HEADROOM_BYTES: u64 = 1 << 20;

/// The suffix sled 0.34.7 gives a snapshot while writing it (`snap.<lsn>.generating`).
const SNAPSHOT_TEMP_SUFFIX: &str = ".generating";

/// A [`Store`] kept on disk in a sled database.
///
/// One process, and within it one `SledStore`, may have a database open at a time: a
/// second [`SledStore::open`] of the same path fails with [`StoreError::Locked`], so
/// share one store between threads (it is `Send + Sync`; wrap it in an `Arc`).
///
/// Writes reach the disk in the background (sled flushes every 500 ms); only
/// [`Store::flush`] and a successful [`Store::cas_ref`] promise durability.
///
/// On a full disk (or quota), a write fails with [`StoreError::NoSpace`] and changes
/// nothing; a write that would leave less than 1 MiB beyond twice its size free is
/// refused before it starts, and the store goes on working once space is freed. If sled
/// itself meets the full disk, the store refuses every later call (reads included) with
/// the same error until it is reopened. No call blocks for long: a flush gives up after
/// 30 s, and closing the store waits for sled's shutdown for at most 30 s (1 s after a
/// failure), abandoning it after that, so that reopening the same store may then need a
/// new process. A temporary snapshot file left by an open that failed for lack of space
/// is removed at the next open. The module source explains each of sled 0.34.7's
/// behaviours behind this.
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
    /// The sled handles; `None` only once [`Drop`] has taken them.
    sled: Option<Handles>,
    /// The first failure sled keeps (a failed write or flush, or a full device met by
    /// any call); every later call is refused with it.
    failure: OnceLock<Failure>,
    /// [`FLUSH_TIMEOUT`] unless a test shortened it, in milliseconds.
    flush_timeout_ms: AtomicU64,
    /// Whether writes check the free space first (tests turn it off to reach sled's errors).
    check_free_space: AtomicBool,
    /// The ref log's next sequence number; its lock orders appends.
    ref_log_next: parking_lot::Mutex<u64>,
}

/// The sled database and its three trees.
struct Handles {
    db: sled::Db,
    objects: sled::Tree,
    refs: sled::Tree,
    derived: sled::Tree,
    reflog: sled::Tree,
}

/// A failure sled keeps until the database is reopened (see "Full disks" above).
#[derive(Debug)]
struct Failure {
    /// The device (or quota) was full, or the flush that never finished met a full device.
    no_space: bool,
    /// What failed, and how.
    what: String,
}

impl fmt::Debug for SledStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SledStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SledStore {
    /// Visits every ref under `prefix` in name order with its name (`None`: not UTF-8) and
    /// its unframed value (`Err`: the bytes fail their checksum). A failure of sled itself
    /// fails the scan.
    fn scan_refs(
        &self,
        prefix: &str,
        mut visit: impl FnMut(Option<&str>, Result<Vec<u8>, StoreError>),
    ) -> Result<(), StoreError> {
        self.check_usable(|| format!("listing refs under `{prefix}`"))?;
        for entry in self.sled().refs.scan_prefix(prefix.as_bytes()) {
            let (key, value) = entry.map_err(|e| self.bulk_error(e, &format!("listing refs under `{prefix}`")))?;
            match std::str::from_utf8(&key) {
                Ok(name) => visit(Some(name), unframe_ref(name, &value)),
                Err(_) => visit(None, Err(StoreError::Backend("ref name is not UTF-8".into()))),
            }
        }
        Ok(())
    }
    /// Opens the database in directory `path`, creating the directory and an empty
    /// database if absent.
    ///
    /// Opening counts and scans nothing. sled's own recovery replays the log written
    /// since the previous open (sled 0.34 writes its page-table snapshot only when it
    /// opens), so the time depends on the writes of the last session, not on the size
    /// of the store: reopening a store of 1M objects takes about 0.1 s, but the first
    /// open after writing those 1M objects took about 5 s (tests/measure.rs).
    ///
    /// Before sled opens, temporary snapshot files (`snap.*.generating`) that a failed
    /// open left behind are removed; sled would otherwise read one as its latest snapshot
    /// and report corruption (see "Full disks" in the module docs).
    ///
    /// Errors: [`StoreError::Locked`] if another process (or another `SledStore` in
    /// this one) has the database open — after retrying for a second, since a database
    /// this process has just closed is released a moment later, when sled's flush thread
    /// exits; [`StoreError::NoSpace`] if the device is too full for sled to open (sled
    /// writes a snapshot when it opens; the store is left openable once space is freed);
    /// [`StoreError::Backend`] for any other failure.
    pub fn open(path: &Path) -> Result<SledStore, StoreError> {
        // A database this process has just closed stays locked until sled's flush thread
        // has exited, a moment later: retry for up to `LOCK_WAIT` before reporting it.
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        let db = loop {
            remove_stale_snapshots(path);
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
                    thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(e) => {
                    // Leave nothing behind that an older reader (or sled alone) would
                    // take for a damaged snapshot.
                    remove_stale_snapshots(path);
                    return Err(e);
                }
                Ok(db) => break db,
            }
        };
        let open_tree = |name: &str| {
            db.open_tree(name)
                .map_err(|e| StoreError::Backend(format!("opening tree `{name}` of {}: {e}", path.display())))
        };
        let handles = Handles {
            objects: open_tree(OBJECTS_TREE)?,
            refs: open_tree(REFS_TREE)?,
            derived: open_tree(DERIVED_TREE)?,
            reflog: open_tree(REFLOG_TREE)?,
            db,
        };
        let store = SledStore {
            path: path.to_path_buf(),
            sled: Some(handles),
            failure: OnceLock::new(),
            flush_timeout_ms: AtomicU64::new(FLUSH_TIMEOUT.as_millis() as u64),
            check_free_space: AtomicBool::new(true),
            ref_log_next: parking_lot::Mutex::new(0),
        };
        // One point read finds the next sequence number (damage is found when the log is
        // read: `ref_log`, `damage`). It never fails the open: the ref log is a history of
        // moves, not data.
        let next = match store.sled().reflog.last() {
            Ok(None) => Some(0),
            Ok(Some((key, _))) => ref_log_seq(&key).map(|n| n.saturating_add(1)),
            Err(_) => None,
        };
        // Without a readable last key, number from the clock (ns since the epoch): past
        // every number counted from 0, so no record is overwritten.
        let next = next.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(u64::MAX / 2, |d| d.as_nanos() as u64)
        });
        *store.ref_log_next.lock() = next;
        Ok(store)
    }

    /// The ref log's sound records in append order, and one line per record that is not.
    fn scan_ref_log(&self) -> Result<(Vec<Vec<u8>>, Vec<String>), StoreError> {
        let what = "reading the ref log";
        self.check_usable(|| what.to_owned())?;
        let mut records = Vec::new();
        let mut damage = Vec::new();
        for entry in self.sled().reflog.iter() {
            let (key, value) = entry.map_err(|e| self.bulk_error(e, what))?;
            match (ref_log_seq(&key), unframe(&value)) {
                (Some(_), Ok(record)) => records.push(record.to_vec()),
                (Some(seq), Err(detail)) => {
                    damage.push(format!("ref log: record {seq} is damaged (skipped): {detail}"))
                }
                (None, _) => damage.push(format!(
                    "ref log: key {} is not an 8-byte sequence number (skipped)",
                    hex(&key)
                )),
            }
        }
        Ok((records, damage))
    }

    /// The directory the database lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The underlying sled database, so tests can damage stored bytes on purpose.
    /// Writing through it bypasses framing and every invariant of the store.
    #[doc(hidden)]
    pub fn raw_db(&self) -> &sled::Db {
        &self.sled().db
    }

    /// Shortens [`FLUSH_TIMEOUT`] for this store, so tests of a blocked flush finish fast.
    #[doc(hidden)]
    pub fn set_flush_timeout(&self, timeout: Duration) {
        self.flush_timeout_ms
            .store(timeout.as_millis().min(u128::from(u64::MAX)) as u64, Ordering::Relaxed);
    }

    /// Turns the free-space check before writes off (or back on), so tests can make
    /// sled itself meet a full disk.
    #[doc(hidden)]
    pub fn set_free_space_check(&self, on: bool) {
        self.check_free_space.store(on, Ordering::Relaxed);
    }

    /// The sled handles, present from open until drop.
    fn sled(&self) -> &Handles {
        self.sled.as_ref().expect("sled handles are taken only by Drop")
    }

    fn flush_timeout(&self) -> Duration {
        Duration::from_millis(self.flush_timeout_ms.load(Ordering::Relaxed))
    }

    /// Checks that a write of about `bytes` bytes (`what`) may go to sled: no earlier
    /// write failed, and the device keeps [`FREE_SPACE_HEADROOM_BYTES`] free beyond twice
    /// `bytes` (sled's log record and a possible page rewrite). If the free space cannot
    /// be read, the write goes ahead and sled's own error, if any, is reported.
    fn check_writable(&self, what: &str, bytes: u64) -> Result<(), StoreError> {
        self.check_usable(|| what.to_owned())?;
        if !self.check_free_space.load(Ordering::Relaxed) {
            return Ok(());
        }
        let Ok(available) = fs2::available_space(&self.path) else {
            return Ok(());
        };
        let needed = bytes.saturating_mul(2).saturating_add(FREE_SPACE_HEADROOM_BYTES);
        if available < needed {
            return Err(StoreError::NoSpace {
                path: self.path.display().to_string(),
                detail: format!("{what} needs about {needed} bytes free, {available} are"),
            });
        }
        Ok(())
    }

    /// Refuses any call once sled has failed a write or flush: after one, sled fails
    /// (or, after a lost blob write, blocks) later writes, flushes, and reads of pages
    /// written since, until the database is reopened. `what` names the call.
    fn check_usable(&self, what: impl FnOnce() -> String) -> Result<(), StoreError> {
        match self.failure.get() {
            None => Ok(()),
            Some(failure) => Err(self.refused(failure, &what())),
        }
    }

    /// The error for a call refused because of an earlier `failure`.
    fn refused(&self, failure: &Failure, what: &str) -> StoreError {
        let detail = format!(
            "{what}: refused, as {} failed earlier in this session, and sled may fail or \
             block any call after that until the store is reopened",
            failure.what
        );
        if failure.no_space {
            StoreError::NoSpace {
                path: self.path.display().to_string(),
                detail,
            }
        } else {
            StoreError::Backend(detail)
        }
    }

    /// Records that sled failed a write or flush; the first failure is the one kept.
    fn record_failure(&self, no_space: bool, what: String) {
        // Only the first is kept: a later one may be an effect of it.
        let _ = self.failure.set(Failure { no_space, what });
    }

    /// Maps a sled error met in an operation over many keys (batch, scan), or in one
    /// (`what` naming it): a full device is [`StoreError::NoSpace`], the rest
    /// [`StoreError::Backend`]. A full device met even by a read is recorded as the
    /// store's failure: a read only meets one through the error sled kept from a failed
    /// write (of its background flusher, say), which fails every later call too.
    fn bulk_error(&self, e: sled::Error, what: &str) -> StoreError {
        match e {
            sled::Error::Io(ref io) if StoreError::is_no_space(io) => {
                self.record_failure(true, format!("{what} ({io})"));
                StoreError::NoSpace {
                    path: self.path.display().to_string(),
                    detail: what.to_owned(),
                }
            }
            other => StoreError::Backend(format!("sled, {what}: {other}")),
        }
    }

    /// Maps a sled error met while touching one key. sled's own checksum failure on that
    /// key is reported as corruption of the key, the rest as by [`SledStore::bulk_error`].
    fn keyed_error(&self, e: sled::Error, space: &'static str, key: String) -> StoreError {
        match e {
            sled::Error::Corruption { at, .. } => StoreError::Corrupt {
                space,
                key,
                detail: format!("sled found a damaged log record (at {at:?})"),
            },
            other => self.bulk_error(other, &format!("{space} {key}")),
        }
    }

    /// Records an I/O error from a write or flush as the store's failure: sled takes no
    /// more writes after one (see "Full disks" above).
    fn note_write_failure(&self, e: &sled::Error, what: &str) {
        if let sled::Error::Io(io) = e {
            self.record_failure(StoreError::is_no_space(io), format!("{what} ({io})"));
        }
    }

    /// Flushes sled's log, giving up after the flush timeout (see "Full disks" above).
    /// On timeout the helper thread is left waiting, holding a handle to the database,
    /// and the store refuses later writes: a flush that never returns means sled's log is
    /// blocked for good.
    fn flush_bounded(&self, what: &str) -> Result<(), StoreError> {
        self.check_usable(|| what.to_owned())?;
        let db = self.sled().db.clone();
        let (done, outcome) = mpsc::sync_channel(1);
        thread::Builder::new()
            .name("cairn-sled-flush".to_owned())
            .spawn(move || {
                // The receiver may have given up waiting; nothing to do then.
                let _ = done.send(db.flush());
            })
            .map_err(|e| StoreError::Backend(format!("{what}: starting a flush thread: {e}")))?;
        let timeout = self.flush_timeout();
        match outcome.recv_timeout(timeout) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => {
                self.note_write_failure(&e, what);
                Err(self.bulk_error(e, what))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let detail = format!(
                    "{what}: sled did not finish within {} ms (a write it lost blocks its log; \
                     the store takes no more calls, and reopening it needs a new process)",
                    timeout.as_millis()
                );
                // The one known cause is a write lost on a full device; say "no space"
                // when the device is (nearly) full, as it will be then.
                let no_space = fs2::available_space(&self.path).is_ok_and(|free| free < FREE_SPACE_HEADROOM_BYTES);
                self.record_failure(no_space, format!("{what} (did not finish)"));
                Err(if no_space {
                    StoreError::NoSpace {
                        path: self.path.display().to_string(),
                        detail,
                    }
                } else {
                    StoreError::Backend(detail)
                })
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.record_failure(false, format!("{what} (sled's flush panicked)"));
                Err(StoreError::Backend(format!("sled, {what}: the flush panicked")))
            }
        }
    }
}

impl Drop for SledStore {
    /// Closes the database: sled flushes what is still buffered and stops its threads.
    /// Never blocks for more than 30 s (1 s once a write or flush has failed); see
    /// [`SledStore`] on full disks.
    fn drop(&mut self) {
        // sled's own shutdown (the flushes in `Drop for TreeInner` and `Drop for Log`, the
        // join of its flusher thread) waits with no time limit, and forever once a lost
        // blob write has blocked its log (see "Full disks" above). So it runs on a helper
        // thread, and the close waits for it for at most the flush timeout
        // (`FAILED_CLOSE_WAIT` once a write or flush has failed: sled then returns at once
        // or never). A thread still waiting then is abandoned with its handles: leaking
        // them (memory, file descriptors and sled's lock, until the process exits) is the
        // price of never hanging. `mem::forget` would leak the same, but also where sled
        // would have closed cleanly a moment later.
        let Some(handles) = self.sled.take() else {
            return;
        };
        let wait = if self.failure.get().is_some() {
            FAILED_CLOSE_WAIT
        } else {
            self.flush_timeout()
        };
        let (done, closed) = mpsc::sync_channel(1);
        let spawned = thread::Builder::new()
            .name("cairn-sled-close".to_owned())
            .spawn(move || {
                drop(handles);
                let _ = done.send(());
            });
        // If no thread could be started, the closure (and the handles) were dropped on
        // this one, as sled would have done without this wrapper.
        if spawned.is_ok() {
            let _ = closed.recv_timeout(wait);
        }
    }
}

/// True for a file name sled 0.34.7 gives a snapshot while writing it.
fn is_snapshot_temp(name: &str) -> bool {
    name.starts_with("snap.") && name.ends_with(SNAPSHOT_TEMP_SUFFIX)
}

/// Removes the temporary snapshot files (`snap.*.generating`) in the database directory
/// `dir`, best effort (see "Full disks" in the module docs). Done only while holding
/// sled's lock on `dir/db`, the same `flock` sled takes (through `fs2`), so that a
/// process that has the database open, and may be writing its snapshot right now, is
/// never disturbed; if the lock is held, nothing is removed (and sled's open then reports
/// [`StoreError::Locked`]). Without a `db` file no sled has the database open, as sled
/// creates and locks `db` before it touches snapshots.
fn remove_stale_snapshots(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let stale: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_str().is_some_and(is_snapshot_temp))
        .map(|entry| entry.path())
        .collect();
    if stale.is_empty() {
        return;
    }
    let lock = match fs::File::open(dir.join("db")) {
        Ok(file) => match file.try_lock_exclusive() {
            Ok(()) => Some(file),
            Err(_) => return,
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(_) => return,
    };
    for path in stale {
        // A file that cannot be removed is left to sled, which then reports it.
        let _ = fs::remove_file(path);
    }
    // Closing the file releases the lock.
    drop(lock);
}

/// Maps a failure to open the database, recognising sled's "locked" error and a full
/// device.
fn open_error(path: &Path, e: sled::Error) -> StoreError {
    match e {
        sled::Error::Io(ref io) if io.kind() == io::ErrorKind::Other && io.to_string().contains(SLED_LOCK_MESSAGE) => {
            StoreError::Locked {
                path: path.display().to_string(),
            }
        }
        sled::Error::Io(ref io) if StoreError::is_no_space(io) => StoreError::NoSpace {
            path: path.display().to_string(),
            detail: "opening the database (sled writes a snapshot when it opens)".to_owned(),
        },
        other => StoreError::Backend(format!("opening sled database at {}: {other}", path.display())),
    }
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
        self.check_usable(|| "writing objects".to_owned())?;
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
                .sled()
                .objects
                .contains_key(hash.as_bytes())
                .map_err(|e| self.keyed_error(e, "object", hash.to_hex()))?
            {
                continue;
            }
            batch.insert(&hash.as_bytes()[..], frame(bytes));
            pending += 1;
            pending_bytes += bytes.len() + 32 + CRC_LEN;
            if pending_bytes >= SUB_BATCH_BYTES {
                self.apply_objects(std::mem::take(&mut batch), pending, pending_bytes)?;
                pending = 0;
                pending_bytes = 0;
            }
        }
        if pending == 0 {
            return Ok(());
        }
        self.apply_objects(batch, pending, pending_bytes)
    }

    /// Applies one sub-batch of `count` objects, `bytes` long with keys and frames.
    fn apply_objects(&self, batch: sled::Batch, count: usize, bytes: usize) -> Result<(), StoreError> {
        let what = format!("writing a batch of {count} objects");
        self.check_writable(&what, bytes as u64)?;
        self.sled().objects.apply_batch(batch).map_err(|e| {
            self.note_write_failure(&e, &what);
            self.bulk_error(e, &what)
        })
    }

    /// Applies a batch to the `derived` tree (`bytes` long, keys and frames included).
    fn apply_derived(&self, batch: sled::Batch, bytes: u64, what: &str) -> Result<(), StoreError> {
        self.check_writable(what, bytes)?;
        self.sled().derived.apply_batch(batch).map_err(|e| {
            self.note_write_failure(&e, what);
            self.bulk_error(e, what)
        })
    }
}

impl Store for SledStore {
    fn get(&self, hash: &Hash) -> Result<Option<Arc<[u8]>>, StoreError> {
        self.check_usable(|| format!("reading object {}", hash.to_hex()))?;
        let Some(value) = self
            .sled()
            .objects
            .get(hash.as_bytes())
            .map_err(|e| self.keyed_error(e, "object", hash.to_hex()))?
        else {
            return Ok(None);
        };
        let payload = unframe(&value).map_err(|detail| StoreError::corrupt_object(hash, detail))?;
        Ok(Some(Arc::from(payload)))
    }

    fn contains(&self, hash: &Hash) -> Result<bool, StoreError> {
        self.check_usable(|| format!("looking up object {}", hash.to_hex()))?;
        self.sled()
            .objects
            .contains_key(hash.as_bytes())
            .map_err(|e| self.keyed_error(e, "object", hash.to_hex()))
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
        self.check_usable(|| "listing objects".to_owned())?;
        self.sled()
            .objects
            .iter()
            .keys()
            .map(|key| object_key(&key.map_err(|e| self.bulk_error(e, "listing objects"))?))
            .collect()
    }

    fn delete_objects(&self, hashes: &[Hash]) -> Result<(), StoreError> {
        if hashes.is_empty() {
            return Ok(());
        }
        let what = format!("deleting a batch of {} objects", hashes.len());
        // A removal appends a record to sled's log like any write.
        self.check_writable(&what, hashes.len() as u64 * 32)?;
        let mut batch = sled::Batch::default();
        for hash in hashes {
            batch.remove(&hash.as_bytes()[..]);
        }
        self.sled().objects.apply_batch(batch).map_err(|e| {
            self.note_write_failure(&e, &what);
            self.bulk_error(e, &what)
        })
    }

    fn get_ref(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.check_usable(|| format!("reading ref `{name}`"))?;
        let value = self
            .sled()
            .refs
            .get(name.as_bytes())
            .map_err(|e| self.keyed_error(e, "ref", name.to_owned()))?;
        value.map(|v| unframe_ref(name, &v)).transpose()
    }

    fn cas_ref(&self, name: &str, expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<CasOutcome, StoreError> {
        let what = format!("moving ref `{name}`");
        let bytes = name.len() + new.map_or(0, <[u8]>::len) + CRC_LEN;
        self.check_writable(&what, bytes as u64)?;
        let refs = &self.sled().refs;
        // Framing is deterministic, so comparing framed bytes compares the values; a
        // damaged stored frame never equals a well-formed expected one, so it lands in
        // the conflict branch, where unframing reports it.
        let outcome = refs
            .compare_and_swap(name.as_bytes(), expected.map(frame), new.map(frame))
            .map_err(|e| {
                self.note_write_failure(&e, &what);
                self.keyed_error(e, "ref", name.to_owned())
            })?;
        match outcome {
            Ok(()) => {
                // The contract makes a moved ref durable on return: flush now.
                if let Err(e) = self.flush_bounded(&format!("flushing after {what}")) {
                    // sled will never write the swap now (see "Full disks" above): move
                    // the ref back in memory too, unless another caller moved it since.
                    let _ = refs.compare_and_swap(name.as_bytes(), new.map(frame), expected.map(frame));
                    return Err(e);
                }
                Ok(CasOutcome::Swapped)
            }
            Err(conflict) => Ok(CasOutcome::Conflict {
                current: conflict.current.map(|v| unframe_ref(name, &v)).transpose()?,
            }),
        }
    }

    fn remove_damaged_ref(&self, name: &str) -> Result<bool, StoreError> {
        let what = format!("removing damaged ref `{name}`");
        self.check_writable(&what, 0)?;
        let refs = &self.sled().refs;
        let stored = refs
            .get(name.as_bytes())
            .map_err(|e| self.keyed_error(e, "ref", name.to_owned()))?;
        let Some(stored) = stored else { return Ok(false) };
        if unframe(&stored).is_ok() {
            return Ok(false);
        }
        // Only the damaged bytes just read are removed, never a value written since.
        let outcome = refs
            .compare_and_swap(name.as_bytes(), Some(stored), None::<&[u8]>)
            .map_err(|e| self.keyed_error(e, "ref", name.to_owned()))?;
        if outcome.is_err() {
            return Ok(false);
        }
        self.flush_bounded(&what)?;
        Ok(true)
    }

    /// A ref whose bytes fail their checksum (or whose name is not UTF-8) is left out and
    /// named by [`Store::damaged_refs`]: one damaged ref costs that ref, not the listing.
    fn list_refs(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let mut out = Vec::new();
        self.scan_refs(prefix, |name, value| {
            if let (Some(name), Ok(value)) = (name, value) {
                out.push((name.to_owned(), value));
            }
        })?;
        Ok(out)
    }

    fn damaged_refs(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        self.scan_refs(prefix, |name, value| match (name, value) {
            (Some(_), Ok(_)) => {}
            (Some(name), Err(_)) => out.push(name.to_owned()),
            (None, _) => out.push("(a ref whose name is not UTF-8)".to_owned()),
        })?;
        Ok(out)
    }

    fn get_derived(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.check_usable(|| format!("reading derived entry {}", hex(key)))?;
        let value = self
            .sled()
            .derived
            .get(key)
            .map_err(|e| self.keyed_error(e, "derived", hex(key)))?;
        value.map(|v| unframe_derived(key, &v)).transpose()
    }

    fn put_derived(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        let mut bytes = 0u64;
        for (key, value) in entries {
            batch.insert(key.as_slice(), frame(value));
            bytes += (key.len() + value.len() + CRC_LEN) as u64;
        }
        self.apply_derived(
            batch,
            bytes,
            &format!("writing a batch of {} derived entries", entries.len()),
        )
    }

    fn delete_derived(&self, keys: &[Vec<u8>]) -> Result<(), StoreError> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        let mut bytes = 0u64;
        for key in keys {
            batch.remove(key.as_slice());
            bytes += key.len() as u64;
        }
        self.apply_derived(
            batch,
            bytes,
            &format!("deleting a batch of {} derived entries", keys.len()),
        )
    }

    fn scan_derived(&self, prefix: &[u8]) -> Result<Vec<DerivedEntry>, StoreError> {
        self.check_usable(|| format!("scanning derived data under {}", hex(prefix)))?;
        self.sled()
            .derived
            .scan_prefix(prefix)
            .map(|entry| {
                let (key, value) =
                    entry.map_err(|e| self.bulk_error(e, &format!("scanning derived data under {}", hex(prefix))))?;
                let value = unframe_derived(&key, &value)?;
                Ok((key.to_vec(), value))
            })
            .collect()
    }

    fn derived_keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>, StoreError> {
        self.check_usable(|| format!("listing derived keys under {}", hex(prefix)))?;
        // sled's iterator hands out values as shared buffers: no value is copied or checked.
        self.sled()
            .derived
            .scan_prefix(prefix)
            .keys()
            .map(|k| {
                k.map(|k| k.to_vec())
                    .map_err(|e| self.bulk_error(e, &format!("listing derived keys under {}", hex(prefix))))
            })
            .collect()
    }

    fn last_derived_at_or_before(&self, prefix: &[u8], upper: &[u8]) -> Result<Option<DerivedEntry>, StoreError> {
        self.check_usable(|| format!("searching derived data under {}", hex(prefix)))?;
        let Some(end) = at_or_before_upper(prefix, upper) else {
            return Ok(None);
        };
        let last = self
            .sled()
            .derived
            .range::<Vec<u8>, _>((Bound::Included(prefix.to_vec()), end))
            .next_back();
        let Some(entry) = last else {
            return Ok(None);
        };
        let (key, value) =
            entry.map_err(|e| self.bulk_error(e, &format!("searching derived data under {}", hex(prefix))))?;
        let value = unframe_derived(&key, &value)?;
        Ok(Some((key.to_vec(), value)))
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.flush_bounded(&format!("flushing {}", self.path.display()))
    }

    /// Reads the ref log to name its damage (nothing else is found damaged outside a
    /// read: sled checks its own pages, and framed values are checked where read).
    fn damage(&self) -> StoreDamage {
        let ref_log = match self.scan_ref_log() {
            Ok((_, damage)) => damage,
            Err(e) => vec![format!("ref log: could not be read: {e}")],
        };
        StoreDamage {
            ref_log,
            ..StoreDamage::default()
        }
    }

    fn append_ref_log(&self, record: &[u8]) -> Result<(), StoreError> {
        check_ref_log_record(record)?;
        let what = "appending to the ref log";
        self.check_writable(what, (8 + CRC_LEN + record.len()) as u64)?;
        let mut next = self.ref_log_next.lock();
        self.sled()
            .reflog
            .insert(next.to_be_bytes(), frame(record))
            .map_err(|e| {
                self.note_write_failure(&e, what);
                self.bulk_error(e, what)
            })?;
        *next += 1;
        Ok(())
    }

    fn ref_log(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self.scan_ref_log()?.0)
    }

    fn retain_ref_log(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<(), StoreError> {
        let what = "rewriting the ref log";
        self.check_writable(what, 0)?;
        let mut batch = sled::Batch::default();
        let mut removed = 0u64;
        for entry in self.sled().reflog.iter() {
            let (key, value) = entry.map_err(|e| self.bulk_error(e, what))?;
            let sound = ref_log_seq(&key).is_some() && unframe(&value).is_ok_and(keep);
            if !sound {
                batch.remove(key);
                removed += 1;
            }
        }
        if removed > 0 {
            // One batch: atomic in sled, so a crash leaves the old log or the new one.
            self.sled().reflog.apply_batch(batch).map_err(|e| {
                self.note_write_failure(&e, what);
                self.bulk_error(e, what)
            })?;
            self.flush_bounded(what)?;
        }
        Ok(())
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        self.check_usable(|| "counting objects".to_owned())?;
        let mut stats = StoreStats::default();
        // Sizes are payload sizes, so the 4-byte frame is subtracted; a value too short to
        // hold one is corrupt, but stats is a count, not a check (that is fsck's job).
        for entry in self.sled().objects.iter().values() {
            let value = entry.map_err(|e| self.bulk_error(e, "counting objects"))?;
            stats.objects += 1;
            stats.object_bytes += value.len().saturating_sub(CRC_LEN) as u64;
        }
        for entry in self.sled().derived.iter().values() {
            let value = entry.map_err(|e| self.bulk_error(e, "counting derived data"))?;
            stats.derived += 1;
            stats.derived_bytes += value.len().saturating_sub(CRC_LEN) as u64;
        }
        Ok(stats)
    }

    /// sled gives space back by itself, as it rewrites its log: what gc reports is what
    /// it did meanwhile.
    fn disk_bytes(&self) -> Result<Option<u64>, StoreError> {
        crate::backend::bytes_under(&self.path)
            .map(Some)
            .map_err(|e| StoreError::Backend(format!("measuring the files of {}: {e}", self.path.display())))
    }
}

/// The sequence number a ref-log key holds (`None`: not 8 bytes).
fn ref_log_seq(key: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(key).ok().map(u64::from_be_bytes)
}
