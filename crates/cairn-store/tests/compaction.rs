//! Compaction of the segment store (`storage-format.md` §6.10): `Store::compact` gives a
//! log's dead bytes back whatever its size — the newest segment included, sealed and
//! copied when mostly dead — within the documented bound, does nothing the second time,
//! and a kill at any step of it (or of the deletes before it) loses nothing live and
//! brings back nothing deleted, in the object log and in the derived log.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cairn_core::Hash;
use cairn_store::{FileChange, FileStep, SegmentStore, Store};
use cairn_testkit::{copy_tree, files};

/// A record's bytes beside its key and value: header (15) and value crc (4), §6.7.
const RECORD_OVERHEAD: u64 = 15 + 4;
/// A tombstone of an object: the overhead and the 32-byte hash.
const OBJECT_TOMBSTONE: u64 = RECORD_OVERHEAD + 32;

fn object(i: usize) -> (Hash, Vec<u8>) {
    let bytes = format!("object {i} {}", "x".repeat(150 + i % 100)).into_bytes();
    (Hash::of(&bytes), bytes)
}

fn derived_key(i: usize) -> Vec<u8> {
    format!("ck/{i:04}").into_bytes()
}

fn derived_value(i: usize, round: usize) -> Vec<u8> {
    vec![(i + round) as u8; 120 + i % 40]
}

/// Bytes of a log's segment files (`objects` or `derived`).
fn segment_bytes(dir: &Path, log: &str) -> u64 {
    files(&dir.join(log))
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .map(|p| fs::metadata(dir.join(log).join(p)).unwrap().len())
        .sum()
}

/// Every file of the store's two logs with its length.
fn log_files(dir: &Path) -> Vec<(PathBuf, u64)> {
    files(dir)
        .into_iter()
        .filter(|p| p.starts_with("objects") || p.starts_with("derived"))
        .map(|p| {
            let len = fs::metadata(dir.join(&p)).unwrap().len();
            (p, len)
        })
        .collect()
}

/// What a store holds: every object and every derived entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Contents {
    objects: BTreeMap<Hash, Vec<u8>>,
    derived: BTreeMap<Vec<u8>, Vec<u8>>,
}

fn contents(store: &dyn Store) -> Contents {
    let objects = store
        .object_hashes()
        .unwrap()
        .into_iter()
        .map(|h| (h, store.get(&h).unwrap().expect("listed").to_vec()))
        .collect();
    let derived = store.scan_derived(b"").unwrap().into_iter().collect();
    Contents { objects, derived }
}

/// Live record bytes of each log: (objects, derived).
fn live_bytes(c: &Contents) -> (u64, u64) {
    let objects = c.objects.values().map(|v| RECORD_OVERHEAD + 32 + v.len() as u64).sum();
    let derived = c
        .derived
        .iter()
        .map(|(k, v)| RECORD_OVERHEAD + (k.len() + v.len()) as u64)
        .sum();
    (objects, derived)
}

/// A store in `dir` with `segment` bytes per segment: 600 objects, and 40 derived keys
/// written four times over.
fn filled(dir: &Path, segment: u64) -> SegmentStore {
    let store = SegmentStore::open_with_segment_bytes(dir, segment).unwrap();
    let objects: Vec<_> = (0..600).map(object).collect();
    for chunk in objects.chunks(50) {
        store.put_batch(chunk).unwrap();
    }
    for round in 0..4 {
        let entries: Vec<_> = (0..40).map(|i| (derived_key(i), derived_value(i, round))).collect();
        store.put_derived(&entries).unwrap();
    }
    store.flush().unwrap();
    store
}

/// The deletes of the tests: most of the first and last objects and some of the middle
/// ones (so some segments stay more than half live and keep needing tombstones), and
/// most derived keys.
fn delete_some(store: &SegmentStore) {
    let doomed: Vec<Hash> = (0..600)
        .filter(|i| match i {
            0..200 => i % 5 != 0,
            200..400 => i % 3 == 0,
            _ => i % 10 != 0,
        })
        .map(|i| object(i).0)
        .collect();
    store.delete_objects(&doomed).unwrap();
    let keys: Vec<Vec<u8>> = (0..40).filter(|i| i % 8 != 0).map(derived_key).collect();
    store.delete_derived(&keys).unwrap();
}

#[test]
fn a_log_within_one_segment_gets_its_dead_bytes_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = filled(dir.path(), 64 << 20);
    delete_some(&store);
    let want = contents(&store);
    let (live_objects, live_derived) = live_bytes(&want);
    // Before: one segment per log, never sealed, so never compacted on delete.
    assert!(segment_bytes(dir.path(), "objects") > 3 * live_objects);
    assert!(segment_bytes(dir.path(), "derived") > 3 * live_derived);
    let before = store.disk_bytes().unwrap().unwrap();

    store.compact().unwrap();
    // Each log was mostly dead, and has no older segment whose puts a tombstone must
    // hide: what is left is exactly its live records.
    assert_eq!(segment_bytes(dir.path(), "objects"), live_objects);
    assert_eq!(segment_bytes(dir.path(), "derived"), live_derived);
    let after = store.disk_bytes().unwrap().unwrap();
    assert!(after < before / 3, "{before} -> {after} bytes");
    assert_eq!(contents(&store), want);

    // A second run finds nothing to do.
    let files_then = log_files(dir.path());
    store.compact().unwrap();
    assert_eq!(log_files(dir.path()), files_then);
    drop(store);
    let store = SegmentStore::open(dir.path()).unwrap();
    assert_eq!(contents(&store), want);
    assert!(store.damage().data.is_empty() && store.damage().derived.is_empty());
}

#[test]
fn after_compact_a_log_holds_at_most_twice_its_live_bytes_and_needed_tombstones() {
    for segment in [8 << 10, 32 << 10] {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path(), segment);
        delete_some(&store);
        let want = contents(&store);
        store.compact().unwrap();
        let (live_objects, live_derived) = live_bytes(&want);
        // Tombstones still needed hide puts of the middle objects (200..400), in segments
        // that stay more than half live: at most one per deleted middle object.
        let needed = OBJECT_TOMBSTONE * (200..400).filter(|i| i % 3 == 0).count() as u64;
        let objects = segment_bytes(dir.path(), "objects");
        assert!(
            objects <= 2 * (live_objects + needed),
            "{segment}: {objects} bytes of object segments for {live_objects} live and {needed} of tombstones"
        );
        // Derived keys were overwritten and deleted as a whole: no segment keeps a put
        // a tombstone must hide.
        let derived = segment_bytes(dir.path(), "derived");
        assert!(
            derived <= 2 * live_derived,
            "{segment}: {derived} bytes of derived segments for {live_derived} live"
        );
        assert_eq!(contents(&store), want);
        let files_then = log_files(dir.path());
        store.compact().unwrap();
        assert_eq!(
            log_files(dir.path()),
            files_then,
            "{segment}: a second compact changed files"
        );
        drop(store);
        let store = SegmentStore::open_with_segment_bytes(dir.path(), segment).unwrap();
        assert_eq!(contents(&store), want, "{segment}: after reopening");
    }
}

/// One stop of the world: the store's files as a kill at that step leaves them.
struct Stop {
    step: FileStep,
    /// The changed file's path in the store's directory (and in the copy).
    rel: PathBuf,
    /// The phase of the test it came in.
    phase: &'static str,
    /// A copy of the store's directory.
    copy: tempfile::TempDir,
    /// What the store held then.
    contents: Contents,
}

/// A workload of the kill test.
struct Scenario {
    /// Bytes per segment.
    segment: u64,
    /// Makes the store.
    fill: fn(&Path, u64) -> SegmentStore,
    /// Then, with a copy of the files at every step, this runs, and `compact`.
    deletes: fn(&SegmentStore),
    /// The logs whose newest segment `compact` must seal and compact.
    rolled: &'static [&'static str],
}

/// Objects 0..60 over sealed segments, then a newest segment just started.
fn sealed_then_fresh(dir: &Path, segment: u64) -> SegmentStore {
    let store = SegmentStore::open_with_segment_bytes(dir, segment).unwrap();
    let objects: Vec<_> = (0..60).map(object).collect();
    for chunk in objects.chunks(5) {
        store.put_batch(chunk).unwrap();
    }
    let segments = || {
        files(&dir.join("objects"))
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "seg"))
            .count()
    };
    let before = segments();
    for i in 1000.. {
        if segments() > before {
            break;
        }
        store.put_batch(&[object(i)]).unwrap();
    }
    store
}

/// Objects put in the newest segment and most of them deleted, and a few older ones
/// deleted, whose tombstones the copy of the newest segment must keep.
fn dead_newest_and_needed_tombstones(store: &SegmentStore) {
    let late: Vec<_> = (2000..2010).map(object).collect();
    store.put_batch(&late).unwrap();
    let doomed: Vec<Hash> = late[1..]
        .iter()
        .map(|(h, _)| *h)
        .chain((0..60).step_by(10).map(|i| object(i).0))
        .collect();
    store.delete_objects(&doomed).unwrap();
}

/// Runs the scenario with a copy of the files at every step; returns the contents
/// before, the stops, and the contents after.
fn stops_during(scenario: &Scenario) -> (Contents, Vec<Stop>, Contents) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new((scenario.fill)(dir.path(), scenario.segment));
    let start = contents(store.as_ref());
    let stops: Arc<Mutex<Vec<Stop>>> = Arc::default();
    let phase: Arc<Mutex<&'static str>> = Arc::new(Mutex::new("deletes"));
    {
        let (weak, stops, phase, root) = (
            Arc::downgrade(&store),
            Arc::clone(&stops),
            Arc::clone(&phase),
            dir.path().to_path_buf(),
        );
        store.on_file_step(Some(Arc::new(move |step: &FileStep| {
            let store = weak.upgrade().expect("the store is open");
            let copy = tempfile::tempdir().unwrap();
            copy_tree(&root, copy.path());
            stops.lock().unwrap().push(Stop {
                step: step.clone(),
                rel: step.path.strip_prefix(&root).expect("in the store").to_path_buf(),
                phase: *phase.lock().unwrap(),
                copy,
                contents: contents(store.as_ref()),
            });
        })));
    }
    (scenario.deletes)(&store);
    *phase.lock().unwrap() = "compact";
    store.compact().unwrap();
    store.on_file_step(None);
    let end = contents(store.as_ref());
    let stops = std::mem::take(&mut *stops.lock().unwrap());
    (start, stops, end)
}

/// Opens a copy, checks it holds `want`, finishes the compaction and checks again.
fn check_copy(dir: &Path, want: &Contents, what: &str) {
    let store = SegmentStore::open(dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(store.damage().data.is_empty(), "{what}: {:?}", store.damage());
    assert_eq!(&contents(&store), want, "{what}: contents");
    store.compact().unwrap_or_else(|e| panic!("{what}: compact again: {e}"));
    assert_eq!(&contents(&store), want, "{what}: contents after compacting again");
    drop(store);
    let store = SegmentStore::open(dir).unwrap();
    assert_eq!(&contents(&store), want, "{what}: contents after reopening");
}

/// A kill in the middle of a write leaves part of it: the files are cut halfway
/// through the bytes it appended. Whatever the whole records before the cut say is
/// there, between the step before and this one: each key holds its value of one of the
/// two, or is absent where one of the two has it absent.
fn check_torn_copy(dir: &Path, before: &Contents, after: &Contents, what: &str) {
    let store = SegmentStore::open(dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = contents(&store);
    fn between<K: Ord + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
        got: &BTreeMap<K, V>,
        a: &BTreeMap<K, V>,
        b: &BTreeMap<K, V>,
        what: &str,
    ) {
        let keys: BTreeSet<&K> = a.keys().chain(b.keys()).collect();
        for k in keys {
            let options = [a.get(k), b.get(k)];
            assert!(
                options.contains(&got.get(k)),
                "{what}: {k:?} holds neither before's nor after's"
            );
        }
        for k in got.keys() {
            assert!(a.contains_key(k) || b.contains_key(k), "{what}: {k:?} came back");
        }
    }
    between(&got.objects, &before.objects, &after.objects, what);
    between(&got.derived, &before.derived, &after.derived, what);
}

#[test]
fn a_kill_at_any_step_of_deletes_and_compaction_loses_nothing_and_revives_nothing() {
    let scenarios = [
        // One segment per log: the newest is sealed and compacted in both.
        Scenario {
            segment: 64 << 20,
            fill: filled,
            deletes: delete_some,
            rolled: &["object", "derived"],
        },
        // Many small segments: compactions after the deletes and at the end.
        Scenario {
            segment: 8 << 10,
            fill: filled,
            deletes: delete_some,
            rolled: &["derived"],
        },
        // The newest segment's copy keeps tombstones hiding puts in older segments.
        Scenario {
            segment: 8 << 10,
            fill: sealed_then_fresh,
            deletes: dead_newest_and_needed_tombstones,
            rolled: &["object"],
        },
    ];
    for (n, scenario) in scenarios.iter().enumerate() {
        let (start, stops, end) = stops_during(scenario);
        for space in scenario.rolled {
            let changes: Vec<FileChange> = stops
                .iter()
                .filter(|s| s.phase == "compact" && s.step.space == *space)
                .map(|s| s.step.change)
                .collect();
            for change in [
                FileChange::Sealed,
                FileChange::Created,
                FileChange::Removed,
                FileChange::HintRemoved,
            ] {
                assert!(
                    changes.contains(&change),
                    "scenario {n}: {space}: no {change:?} in {changes:?}"
                );
            }
        }
        let mut before = &start;
        for (i, stop) in stops.iter().enumerate() {
            let what = format!("scenario {n}, kill {i} after {:?} ({})", stop.step, stop.phase);
            if let FileChange::Appended { from, to } = stop.step.change {
                let torn = tempfile::tempdir().unwrap();
                copy_tree(stop.copy.path(), torn.path());
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(torn.path().join(&stop.rel))
                    .unwrap();
                file.set_len(from + (to - from) / 2).unwrap();
                check_torn_copy(torn.path(), before, &stop.contents, &format!("{what}, torn"));
            }
            // After the torn copy, taken from the untouched files: this compacts them.
            check_copy(stop.copy.path(), &stop.contents, &what);
            before = &stop.contents;
        }
        assert_eq!(&stops.last().unwrap().contents, &end);
        eprintln!("scenario {n}: {} kill points", stops.len());
    }
}
