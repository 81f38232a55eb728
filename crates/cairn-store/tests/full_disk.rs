//! Both on-disk stores on a full disk (sled: see "Full disks" in `sled_store.rs`; the
//! segment store: storage-format §6.10): writes that do
//! not fit fail with `StoreError::NoSpace` and leave the store as it was, nothing hangs,
//! an open on a full disk never leaves the store unopenable, and everything works again
//! once space is freed, with no manual step.
//!
//! The disk is a small tmpfs mounted for each test (this needs root, as in CI's container);
//! where it cannot be mounted, a test prints "skipped: …" and passes. Every step that
//! could hang runs on a thread with a time limit, so a hang fails the test instead of
//! blocking the run.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use cairn_core::Hash;
use cairn_store::{CasOutcome, SegmentStore, SledStore, Store, StoreError};

/// How long any one step may take before the test calls it a hang. Generous: a step
/// that works takes milliseconds, and one that hangs never ends.
const STEP_LIMIT: Duration = Duration::from_secs(60);

/// How long closing a store may take once it has met a full disk (the store waits about
/// a second for sled's shutdown, then abandons it).
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// A tmpfs mounted on a temporary directory for the life of the value.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it), or says why it cannot.
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(stderr
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("; "));
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Bytes free on the tmpfs.
    fn available(&self) -> u64 {
        fs2::available_space(self.path()).unwrap()
    }

    /// Fills the tmpfs with a new file `name` until only about `bytes` stay free.
    fn leave_free(&self, name: &str, bytes: u64) -> PathBuf {
        let path = self.path().join(name);
        let available = self.available();
        fill(&path, available.saturating_sub(bytes));
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(self.path())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            // A failed test may have left a thread holding files open: detach anyway.
            let _ = Command::new("umount").arg("-l").arg(self.path()).status();
        }
    }
}

/// A tmpfs of `size`, or `None` after printing why the test is skipped.
fn tmpfs(size: &str) -> Option<Tmpfs> {
    match Tmpfs::mount(size) {
        Ok(fs) => Some(fs),
        Err(why) => {
            println!("skipped: cannot mount a tmpfs here ({why})");
            None
        }
    }
}

/// Writes up to `bytes` bytes to a new file at `path`, stopping early if the device is
/// full (tmpfs allocates as it is written, so the space is really taken).
fn fill(path: &Path, bytes: u64) {
    let mut file = fs::File::create(path).unwrap();
    let chunk = [0xa5u8; 4096];
    let mut written = 0u64;
    while written < bytes {
        let n = chunk.len().min((bytes - written) as usize);
        if file.write_all(&chunk[..n]).is_err() {
            break;
        }
        written += n as u64;
    }
}

/// Runs `f` on a thread and returns its result, failing the test if it takes longer
/// than `limit` (the thread is then left behind: the test has failed anyway).
fn within<T: Send + 'static>(what: &str, limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(f());
    });
    match result.recv_timeout(limit) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not finish within {limit:?}: it hangs"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

/// `count` distinct objects of 1 KiB, numbered from `first`.
fn objects(first: u64, count: u64) -> Vec<(Hash, Vec<u8>)> {
    (first..first + count)
        .map(|i| {
            let bytes: Vec<u8> = i.to_le_bytes().iter().copied().cycle().take(1024).collect();
            (Hash::of(&bytes), bytes)
        })
        .collect()
}

fn open(dir: &Path) -> Result<Arc<SledStore>, StoreError> {
    let dir = dir.to_path_buf();
    within("opening the store", STEP_LIMIT, move || {
        SledStore::open(&dir).map(Arc::new)
    })
}

/// Closes `store` (which must be the last handle), failing the test past `limit`.
fn close(store: Arc<SledStore>, limit: Duration) {
    assert_eq!(
        Arc::strong_count(&store),
        1,
        "another handle to the store is still alive"
    );
    within("closing the store", limit, move || drop(store));
}

/// Writes `batch` and flushes it.
fn put_and_flush(store: &Arc<SledStore>, batch: Vec<(Hash, Vec<u8>)>) -> Result<(), StoreError> {
    let store = Arc::clone(store);
    within("writing and flushing", STEP_LIMIT, move || {
        store.put_batch(&batch)?;
        store.flush()
    })
}

/// Moves `name` from `expected` to `new`.
fn cas(store: &Arc<SledStore>, name: &str, expected: Option<&[u8]>, new: &[u8]) -> Result<CasOutcome, StoreError> {
    let (store, name, expected, new) = (
        Arc::clone(store),
        name.to_owned(),
        expected.map(<[u8]>::to_vec),
        new.to_vec(),
    );
    within("moving a ref", STEP_LIMIT, move || {
        store.cas_ref(&name, expected.as_deref(), Some(&new))
    })
}

/// Asserts that every object of `kept` reads back, and the ref `main` holds `head`.
fn assert_holds(store: &SledStore, kept: &[(Hash, Vec<u8>)], head: &[u8]) {
    for (hash, bytes) in kept {
        assert_eq!(store.get(hash).unwrap().as_deref(), Some(&bytes[..]), "object {hash:?}");
    }
    assert_eq!(store.get_ref("main").unwrap().as_deref(), Some(head));
}

fn assert_no_space(result: Result<impl std::fmt::Debug, StoreError>, what: &str) -> String {
    match result {
        Err(e @ StoreError::NoSpace { .. }) => {
            let message = e.to_string();
            assert!(message.contains("no space left"), "{what}: {message}");
            message
        }
        other => panic!("{what}: expected NoSpace, got {other:?}"),
    }
}

#[test]
fn a_full_disk_refuses_writes_with_no_space_and_they_work_again_once_space_is_freed() {
    let Some(fs) = tmpfs("4m") else { return };
    let dir = fs.path().join("store");
    // Space to give back later, taken before the store fills the rest.
    let spare = fs.path().join("spare");
    fill(&spare, 1 << 20);

    let store = open(&dir).unwrap();
    let kept = objects(0, 32);
    put_and_flush(&store, kept.clone()).unwrap();
    assert_eq!(cas(&store, "main", None, b"v1").unwrap(), CasOutcome::Swapped);

    // Write until a write fails: it fails as NoSpace, not as a hang or another error.
    let mut next = 32;
    let error = loop {
        assert!(next < 100_000, "4 MiB never filled up");
        match put_and_flush(&store, objects(next, 64)) {
            Ok(()) => next += 64,
            Err(e) => break e,
        }
    };
    println!("after {next} objects: {error}");
    assert_no_space(Err::<(), _>(error), "the write that did not fit");

    // What was flushed before reads back, in this session and after reopening.
    assert_holds(&store, &kept, b"v1");
    close(store, STEP_LIMIT);
    let store = open(&dir).unwrap();
    assert_holds(&store, &kept, b"v1");

    // With the disk quite full, even a ref move is refused, and the ref stays as it was.
    let rest = fs.leave_free("rest", 0);
    assert_no_space(cas(&store, "main", Some(b"v1"), b"v2"), "moving a ref on a full disk");
    assert_holds(&store, &kept, b"v1");

    // Space back: the same session writes again, and what it writes lasts.
    fs::remove_file(&spare).unwrap();
    fs::remove_file(&rest).unwrap();
    let more = objects(1_000_000, 64);
    put_and_flush(&store, more.clone()).unwrap();
    assert_eq!(cas(&store, "main", Some(b"v1"), b"v2").unwrap(), CasOutcome::Swapped);
    close(store, STEP_LIMIT);
    let store = open(&dir).unwrap();
    assert_holds(&store, &kept, b"v2");
    assert_holds(&store, &more, b"v2");
}

#[test]
fn sled_meeting_a_full_disk_itself_is_no_space_and_the_store_opens_again() {
    let Some(fs) = tmpfs("4m") else { return };
    let dir = fs.path().join("store");
    let spare = fs.path().join("spare");
    // More than the free-space check wants for a batch, once given back.
    fill(&spare, 2 << 20);

    let store = open(&dir).unwrap();
    // Without the free-space check, the full disk is met by sled's own writes.
    store.set_free_space_check(false);
    let kept = objects(0, 32);
    put_and_flush(&store, kept.clone()).unwrap();
    assert_eq!(cas(&store, "main", None, b"v1").unwrap(), CasOutcome::Swapped);
    let mut next = 32;
    let error = loop {
        assert!(next < 100_000, "4 MiB never filled up");
        match put_and_flush(&store, objects(next, 64)) {
            Ok(()) => next += 64,
            Err(e) => break e,
        }
    };
    println!("after {next} objects: {error}");
    assert_no_space(Err::<(), _>(error), "sled's failed write");

    // sled may fail or block any call after a failed write: later calls are refused at
    // once, with the same kind of error.
    let started = Instant::now();
    let refused = assert_no_space(put_and_flush(&store, objects(2_000_000, 1)), "a write after it");
    assert!(refused.contains("reopened"), "{refused}");
    assert_no_space(cas(&store, "main", Some(b"v1"), b"v2"), "a ref move after it");
    assert_no_space(store.get(&kept[0].0), "a read after it");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refusals took {:?}",
        started.elapsed()
    );
    close(store, CLOSE_LIMIT);

    // Space back: the store opens (in this process, as nothing was left blocked) and holds
    // what was flushed.
    fs::remove_file(&spare).unwrap();
    let store = open(&dir).unwrap();
    assert_holds(&store, &kept, b"v1");
    let more = objects(3_000_000, 16);
    put_and_flush(&store, more.clone()).unwrap();
    assert_eq!(cas(&store, "main", Some(b"v1"), b"v2").unwrap(), CasOutcome::Swapped);
    assert_holds(&store, &more, b"v2");
}

#[test]
fn opening_on_a_full_disk_never_leaves_the_store_unopenable() {
    // A read-only command opens the store, reads, and closes it. sled writes a snapshot
    // when it opens after writes; on a full disk that fails half-way, which left a
    // `snap.*.generating` file that made every later open fail ("Read corrupted data").
    let Some(fs) = tmpfs("4m") else { return };
    let dir = fs.path().join("store");
    let kept = objects(0, 8);
    let mut failed_opens = 0;
    for (round, free_kib) in [0u64, 4, 8, 12, 16, 32, 64, 256].into_iter().enumerate() {
        // Move the log past the last snapshot, so that the next open writes one.
        let store = open(&dir).unwrap();
        put_and_flush(&store, objects(10 * round as u64 + 100, 8)).unwrap();
        if round == 0 {
            put_and_flush(&store, kept.clone()).unwrap();
            assert_eq!(cas(&store, "main", None, b"v1").unwrap(), CasOutcome::Swapped);
        }
        close(store, STEP_LIMIT);

        let filler = fs.leave_free("filler", free_kib << 10);
        let reading = dir.clone();
        let read = within("a read-only session", STEP_LIMIT, move || {
            let store = SledStore::open(&reading)?;
            store.get(&Hash::of(b"absent"))?;
            store.list_refs("")
        });
        match read {
            Ok(refs) => assert_eq!(refs, vec![("main".to_owned(), b"v1".to_vec())]),
            Err(StoreError::NoSpace { .. }) => failed_opens += 1,
            Err(other) => panic!("{free_kib} KiB free: expected success or NoSpace, got {other}"),
        }
        let leftovers: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".generating"))
            .collect();
        assert!(leftovers.is_empty(), "{free_kib} KiB free: left {leftovers:?}");

        // Space back: the store opens without any manual step.
        fs::remove_file(filler).unwrap();
        let store = open(&dir).unwrap_or_else(|e| panic!("{free_kib} KiB free, then freed: {e}"));
        assert_holds(&store, &kept, b"v1");
        close(store, STEP_LIMIT);
    }
    assert!(
        failed_opens > 0,
        "no open ran out of space: the case this test is for was not reached"
    );
}

/// Set in the child processes of [`a_write_sled_loses_on_a_full_disk_hangs_nothing`]:
/// the store's directory and which way to lose the write.
const LOST_WRITE_CHILD: &str = "CAIRN_STORE_TEST_LOST_WRITE_CHILD";

/// A value big enough for sled to write it to a file of its own under `blobs/`, and
/// bigger than the space left for it.
const BLOB_BYTES: usize = 2 << 20;

/// The space left free for the child: enough for sled to open (which may write a
/// 512 KiB log segment), not for [`BLOB_BYTES`].
const CHILD_FREE_BYTES: u64 = 1 << 20;

#[test]
fn a_write_sled_loses_on_a_full_disk_hangs_nothing() {
    // sled 0.34.7 loses a failed blob write: every later flush, including the one in its
    // own close, waits forever. The store must return errors and close anyway, and the
    // process must exit; a new process then opens the store.
    if let Ok(spec) = std::env::var(LOST_WRITE_CHILD) {
        let (mode, dir) = spec.split_once(':').expect("mode:dir");
        lose_a_write(mode, Path::new(dir));
        return;
    }
    let Some(fs) = tmpfs("8m") else { return };
    let dir = fs.path().join("store");
    let kept = objects(0, 32);
    let store = open(&dir).unwrap();
    put_and_flush(&store, kept.clone()).unwrap();
    assert_eq!(cas(&store, "main", None, b"v1").unwrap(), CasOutcome::Swapped);
    close(store, STEP_LIMIT);

    for mode in ["through-the-store", "behind-its-back"] {
        let filler = fs.leave_free("filler", CHILD_FREE_BYTES);
        let started = Instant::now();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_write_sled_loses_on_a_full_disk_hangs_nothing",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(LOST_WRITE_CHILD, format!("{mode}:{}", dir.display()))
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > STEP_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{mode}: the child process did not exit within {STEP_LIMIT:?}: it hangs");
            }
            thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "{mode}: the child failed ({status})");
        println!("{mode}: the child exited after {:?}", started.elapsed());

        // Space back: a new process (this one) opens the store, which holds what was
        // flushed before, and writes again.
        fs::remove_file(filler).unwrap();
        let store = open(&dir).unwrap_or_else(|e| panic!("{mode}: reopening: {e}"));
        assert_holds(&store, &kept, b"v1");
        put_and_flush(&store, objects(5_000_000, 16)).unwrap();
        close(store, STEP_LIMIT);
    }
}

/// The child of [`a_write_sled_loses_on_a_full_disk_hangs_nothing`]: on a nearly full
/// disk, makes sled lose a blob write, then checks that the store's flush, writes and
/// close return in bounded time.
fn lose_a_write(mode: &str, dir: &Path) {
    let store = open(dir).unwrap();
    let big = vec![7u8; BLOB_BYTES];
    match mode {
        "through-the-store" => {
            // With the check on, the store refuses the write before sled sees it...
            let refused = store.put_derived(&[(b"big".to_vec(), big.clone())]);
            assert_no_space(refused, "a write bigger than the free space");
            // ...without it, sled fails the write, and the store refuses what follows.
            store.set_free_space_check(false);
            let lost = store.put_derived(&[(b"big".to_vec(), big)]);
            assert_no_space(lost, "the write sled loses");
            let started = Instant::now();
            assert_no_space(store.flush(), "the flush after it");
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "flush took {:?}",
                started.elapsed()
            );
        }
        "behind-its-back" => {
            // The store does not see the failure (as when sled's own background work
            // loses a write): its flush gives up after the flush timeout.
            store.set_flush_timeout(Duration::from_secs(1));
            let derived = store.raw_db().open_tree("derived").unwrap();
            assert!(
                derived.insert(b"big", big).is_err(),
                "sled found room for {BLOB_BYTES} bytes"
            );
            drop(derived);
            let started = Instant::now();
            let flushed = within("a flush of a blocked log", STEP_LIMIT, {
                let store = Arc::clone(&store);
                move || store.flush()
            });
            println!("flush gave up after {:?}: {flushed:?}", started.elapsed());
            assert_no_space(flushed, "the flush of a blocked log");
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "flush took {:?}",
                started.elapsed()
            );
            assert_no_space(put_and_flush(&store, objects(4_000_000, 1)), "a write after it");
        }
        other => panic!("unknown mode {other}"),
    }
    // Reads are refused too (sled may block one).
    assert_no_space(store.get(&objects(0, 1)[0].0), "a read after it");
    let started = Instant::now();
    close(store, CLOSE_LIMIT);
    println!("{mode}: closed in {:?}", started.elapsed());
}

#[test]
fn a_stale_snapshot_temp_file_does_not_prevent_opening() {
    let dir = tempfile::tempdir().unwrap();
    let kept = objects(0, 4);
    {
        let store = SledStore::open(dir.path()).unwrap();
        store.put_batch(&kept).unwrap();
        assert_eq!(store.cas_ref("main", None, Some(b"v1")).unwrap(), CasOutcome::Swapped);
    }
    // What a snapshot write cut short by a full disk leaves: a truncated file whose name
    // sorts after every complete snapshot.
    let stale = dir.path().join("snap.7FFFFFFFFFFFFFFF.generating");
    fs::write(&stale, b"cut short").unwrap();

    // sled alone reads it as its newest snapshot and gives up (once the store's close has
    // released its lock, a moment after the close returns).
    let started = Instant::now();
    loop {
        match sled::Config::new().path(dir.path()).open() {
            Err(sled::Error::Corruption { .. }) => break,
            Err(sled::Error::Io(e)) if e.to_string().contains("lock") && started.elapsed() < STEP_LIMIT => {
                thread::sleep(Duration::from_millis(10));
            }
            other => panic!("expected sled to report corruption, got {:?}", other.map(|_| ())),
        }
    }
    assert!(stale.exists());

    // The store removes it before opening.
    let store = SledStore::open(dir.path()).unwrap();
    assert!(!stale.exists(), "the stale file is still there");
    assert_holds(&store, &kept, b"v1");

    // But never while another handle has the database open (it may be writing one).
    fs::write(&stale, b"cut short").unwrap();
    match SledStore::open(dir.path()) {
        Err(StoreError::Locked { .. }) => {}
        other => panic!("expected Locked, got {other:?}"),
    }
    assert!(
        stale.exists(),
        "a file in a database another handle has open was removed"
    );
    drop(store);
    let store = SledStore::open(dir.path()).unwrap();
    assert!(!stale.exists());
    assert_holds(&store, &kept, b"v1");
}

/// Asserts that every object of `kept` reads back from `store` and ref `main` holds `head`.
fn assert_segment_holds(store: &SegmentStore, kept: &[(Hash, Vec<u8>)], head: &[u8]) {
    for (hash, bytes) in kept {
        assert_eq!(store.get(hash).unwrap().as_deref(), Some(&bytes[..]), "object {hash:?}");
    }
    assert_eq!(store.get_ref("main").unwrap().as_deref(), Some(head));
    let damage = store.damage();
    assert!(damage.data.is_empty() && damage.derived.is_empty(), "{damage:?}");
}

#[test]
fn the_segment_store_on_a_full_disk_refuses_writes_opens_reads_and_recovers() {
    let Some(fs) = tmpfs("4m") else { return };
    let dir = fs.path().join("store");
    let spare = fs.path().join("spare");
    fill(&spare, 1 << 20);

    let store = SegmentStore::open(&dir).unwrap();
    let kept = objects(0, 32);
    store.put_batch(&kept).unwrap();
    store.flush().unwrap();
    assert_eq!(store.cas_ref("main", None, Some(b"v1")).unwrap(), CasOutcome::Swapped);

    // Write until a write fails: as NoSpace, and cut off again (no torn record left).
    let mut next = 32;
    let error = loop {
        assert!(next < 100_000, "4 MiB never filled up");
        match store.put_batch(&objects(next, 64)).and_then(|()| store.flush()) {
            Ok(()) => next += 64,
            Err(e) => break e,
        }
    };
    println!("segment store: after {next} objects: {error}");
    assert_no_space(Err::<(), _>(error), "the write that did not fit");
    assert_segment_holds(&store, &kept, b"v1");
    // Derived data too.
    assert_no_space(store.put_derived(&[(b"k".to_vec(), vec![7; 1 << 20])]), "derived write");
    assert_segment_holds(&store, &kept, b"v1");

    // Reopening on the full disk works and reads everything, damage-free.
    drop(store);
    let rest = fs.leave_free("rest", 0);
    let store = SegmentStore::open(&dir).unwrap();
    assert_segment_holds(&store, &kept, b"v1");
    assert_no_space(
        store.cas_ref("main", Some(b"v1"), Some(b"v2")),
        "moving a ref on a full disk",
    );
    assert_segment_holds(&store, &kept, b"v1");

    // Space back: writes work in the same session, and last.
    fs::remove_file(&spare).unwrap();
    fs::remove_file(&rest).unwrap();
    let more = objects(1_000_000, 64);
    store.put_batch(&more).unwrap();
    store.flush().unwrap();
    assert_eq!(
        store.cas_ref("main", Some(b"v1"), Some(b"v2")).unwrap(),
        CasOutcome::Swapped
    );
    drop(store);
    let store = SegmentStore::open(&dir).unwrap();
    assert_segment_holds(&store, &kept, b"v2");
    assert_segment_holds(&store, &more, b"v2");
}
