//! The segment store's index snapshot (`index.crx`, storage-format §6.8): written at a
//! clean close once enough sealed bytes lie beyond the last one, read at open instead of
//! the covered segments' hints, and ignored — never trusted — when damaged, stale or
//! describing other files. Whatever the snapshot's state, a reopened store holds exactly
//! what the last one held.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use cairn_core::Hash;
use cairn_store::{SegmentStore, Store};
use cairn_testkit::{files, Rng};

/// Small segments: a few hundred records make dozens of sealed segments.
const SEGMENT: u64 = 4 << 10;

fn open(dir: &Path) -> SegmentStore {
    SegmentStore::open_with_segment_bytes(dir, SEGMENT).unwrap()
}

/// A store in `dir` with 600 objects put in batches of 20 (dozens of sealed segments and,
/// at the clean close, a snapshot); the objects.
fn filled(dir: &Path) -> Vec<(Hash, Vec<u8>)> {
    let store = open(dir);
    let objects: Vec<_> = (0..600).map(object).collect();
    for chunk in objects.chunks(20) {
        store.put_batch(chunk).unwrap();
    }
    objects
}

fn object(i: u64) -> (Hash, Vec<u8>) {
    let bytes = format!("object {i} {}", "y".repeat(40 + (i % 60) as usize)).into_bytes();
    (Hash::of(&bytes), bytes)
}

/// Everything a store answers: objects and their bytes, derived entries, counts, and the
/// derived range reads that merge the snapshot with later writes.
#[derive(Debug, PartialEq)]
struct Seen {
    objects: BTreeMap<Hash, Vec<u8>>,
    derived: Vec<(Vec<u8>, Vec<u8>)>,
    keys_b: Vec<Vec<u8>>,
    last_before: Option<Vec<u8>>,
    counts: (u64, u64, u64, u64),
}

fn seen(store: &SegmentStore) -> Seen {
    let objects = store
        .object_hashes()
        .unwrap()
        .into_iter()
        .map(|h| (h, store.get(&h).unwrap().expect("a listed object reads").to_vec()))
        .collect();
    let s = store.stats().unwrap();
    Seen {
        objects,
        derived: store.scan_derived(b"").unwrap(),
        keys_b: store.derived_keys(b"b/").unwrap(),
        last_before: store.last_derived_at_or_before(b"b/", b"b/0500").unwrap().map(|e| e.0),
        counts: (s.objects, s.object_bytes, s.derived, s.derived_bytes),
    }
}

/// A derived key in one of two spaces, `a/` or `b/`.
fn derived_key(rng: &mut Rng) -> Vec<u8> {
    let k = rng.next() % 1000;
    let space = if k.is_multiple_of(2) { "a" } else { "b" };
    format!("{space}/{k:04}").into_bytes()
}

/// Random puts and deletes of objects and derived entries over several sessions, each
/// ended by a clean close; returns what the last session saw.
fn history(dir: &Path, seed: u64, sessions: usize) -> Seen {
    let mut rng = Rng(seed);
    let mut last = None;
    for session in 0..sessions {
        let store = open(dir);
        if let Some(prev) = &last {
            assert_eq!(&seen(&store), prev, "session {session} reopened to other contents");
        }
        for _ in 0..40 {
            match rng.next() % 6 {
                0 | 1 => {
                    let batch: Vec<_> = (0..8).map(|_| object(rng.next() % 400)).collect();
                    store.put_batch(&batch).unwrap();
                }
                2 => {
                    let doomed: Vec<Hash> = (0..6).map(|_| object(rng.next() % 400).0).collect();
                    store.delete_objects(&doomed).unwrap();
                }
                3 | 4 => {
                    let entries: Vec<_> = (0..5)
                        .map(|_| {
                            let key = derived_key(&mut rng);
                            (key, vec![(rng.next() % 251) as u8; 30 + (rng.next() % 90) as usize])
                        })
                        .collect();
                    store.put_derived(&entries).unwrap();
                }
                _ => {
                    let keys: Vec<Vec<u8>> = (0..5).map(|_| derived_key(&mut rng)).collect();
                    store.delete_derived(&keys).unwrap();
                }
            }
        }
        store.flush().unwrap();
        last = Some(seen(&store));
    }
    last.unwrap()
}

fn snapshot_paths(dir: &Path) -> Vec<std::path::PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "index.crx"))
        .collect()
}

#[test]
fn reopening_through_a_snapshot_sees_exactly_what_was_written() {
    for seed in 1..=4 {
        let dir = tempfile::tempdir().unwrap();
        let want = history(dir.path(), seed, 6);
        assert_eq!(
            snapshot_paths(dir.path()).len(),
            2,
            "seed {seed}: both logs have a snapshot"
        );
        assert_eq!(seen(&open(dir.path())), want, "seed {seed}: through the snapshots");
        // Without them (the hints and scans decide), and with each damaged.
        for (what, change) in [("removed", 0u8), ("damaged", 1)] {
            let work = tempfile::tempdir().unwrap();
            for rel in files(dir.path()) {
                let to = work.path().join(&rel);
                fs::create_dir_all(to.parent().unwrap()).unwrap();
                fs::copy(dir.path().join(&rel), to).unwrap();
            }
            for rel in snapshot_paths(work.path()) {
                let p = work.path().join(rel);
                if change == 0 {
                    fs::remove_file(&p).unwrap();
                } else {
                    let mut b = fs::read(&p).unwrap();
                    let at = b.len() / 2;
                    b[at] ^= 0x10;
                    fs::write(&p, b).unwrap();
                }
            }
            assert_eq!(seen(&open(work.path())), want, "seed {seed}: snapshots {what}");
        }
    }
}

#[test]
fn a_sound_snapshot_spares_the_open_the_covered_segments() {
    let dir = tempfile::tempdir().unwrap();
    let want = history(dir.path(), 9, 3);
    assert_eq!(snapshot_paths(dir.path()).len(), 2);
    // Damage the first record header of the oldest object segment and remove its hint:
    // an open that read the segment would scan it and report the damage; through the
    // snapshot the open reads neither, and the damage is found only by a read of that
    // record (refused as corrupt, never returned).
    let seg = dir.path().join("objects/00000001.seg");
    let mut b = fs::read(&seg).unwrap();
    b[6] ^= 0x01;
    fs::write(&seg, b).unwrap();
    fs::remove_file(seg.with_extension("hint")).unwrap();
    let store = open(dir.path());
    assert!(store.damage().data.is_empty(), "{:?}", store.damage().data);
    let mut refused = 0;
    for (h, bytes) in &want.objects {
        match store.get(h) {
            Ok(Some(got)) => assert_eq!(&*got, &bytes[..]),
            Err(cairn_store::StoreError::Corrupt { .. }) => refused += 1,
            other => panic!("{h}: {other:?}"),
        }
    }
    assert!(refused <= 1, "{refused} refused");
    drop(store);
    // Without the snapshot the same open scans the segment and names the damage.
    fs::remove_file(dir.path().join("objects/index.crx")).unwrap();
    let store = open(dir.path());
    assert!(!store.damage().data.is_empty());
}

#[test]
fn a_snapshot_made_stale_by_compaction_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let objects = filled(dir.path());
    let old = fs::read(dir.path().join("objects/index.crx")).unwrap();
    // Deleting most objects compacts covered segments away.
    let store = open(dir.path());
    let doomed: Vec<Hash> = objects.iter().step_by(3).skip(1).map(|o| o.0).collect();
    store.delete_objects(&doomed).unwrap();
    let kept: Vec<_> = objects.iter().filter(|o| !doomed.contains(&o.0)).cloned().collect();
    let want = seen(&store);
    assert_eq!(want.objects.len(), kept.len());
    drop(store);
    // The close wrote a new snapshot; put the old one back, as if the close had crashed
    // before writing it: it names removed segments and must be ignored.
    fs::write(dir.path().join("objects/index.crx"), old).unwrap();
    assert_eq!(seen(&open(dir.path())), want);
}

#[test]
fn records_appended_after_the_snapshot_are_read_without_a_clean_close() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path(), 5, 2);
    let before = fs::read(dir.path().join("objects/index.crx")).unwrap();
    // Writes past the snapshot (into the segment it covers up to its old end, and new
    // ones), then a crash: the image is copied while the store is open, so no close
    // writes a hint or a snapshot.
    let store = open(dir.path());
    let more: Vec<_> = (1000..1040).map(object).collect();
    store.put_batch(&more).unwrap();
    store.delete_objects(&[object(1000).0]).unwrap();
    store
        .put_derived(&[(b"b/0001".to_vec(), vec![7; 50]), (b"b/9999".to_vec(), vec![8; 40])])
        .unwrap();
    store.delete_derived(&[b"a/0002".to_vec()]).unwrap();
    store.flush().unwrap();
    let want = seen(&store);
    let crashed = tempfile::tempdir().unwrap();
    for rel in files(dir.path()) {
        let to = crashed.path().join(&rel);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(dir.path().join(&rel), to).unwrap();
    }
    drop(store);
    assert_eq!(
        fs::read(crashed.path().join("objects/index.crx")).unwrap(),
        before,
        "the image holds the old snapshot"
    );
    assert_eq!(seen(&open(crashed.path())), want);
    assert_eq!(seen(&open(dir.path())), want, "after the clean close");
}

/// The fuzz target's entry points (`cairn_store::fuzzing`, `fuzz/fuzz_targets/
/// decode_store_files.rs`) reach the decoders: a real hint's body (checksum cut off; the
/// entry point appends it again) and a real snapshot (whole; its checksums are not
/// checked there) are accepted, one flipped byte in a hint's count is refused, and so is a
/// snapshot one byte short.
#[test]
fn the_fuzz_entry_points_accept_real_files_and_refuse_a_changed_one() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    let snapshot = fs::read(dir.path().join("objects/index.crx")).unwrap();
    assert!(cairn_store::fuzzing::snapshot(&snapshot));
    assert!(!cairn_store::fuzzing::snapshot(&snapshot[..snapshot.len() - 1]));
    let hint = fs::read(dir.path().join("objects/00000001.hint")).unwrap();
    let segment_len = fs::metadata(dir.path().join("objects/00000001.seg")).unwrap().len();
    let body = &hint[..hint.len() - 4];
    assert!(cairn_store::fuzzing::hint(body, segment_len));
    assert!(!cairn_store::fuzzing::hint(body, segment_len + 1));
    let mut changed = body.to_vec();
    changed[12] ^= 0x01; // the entry count's low byte
    assert!(!cairn_store::fuzzing::hint(&changed, segment_len));
}

#[test]
fn small_records_renew_the_snapshot_once_a_64th_of_its_keys_changed() {
    // Default (64 MiB) segments. Session 1: 20 records of 1 MiB and 5,000 small ones, so
    // the close writes a snapshot (a quarter segment written) of 5,020 entries.
    let dir = tempfile::tempdir().unwrap();
    let small = |from: u64, n: u64| (from..from + n).map(object).collect::<Vec<_>>();
    let mut all = Vec::new();
    {
        let store = SegmentStore::open(dir.path()).unwrap();
        let large: Vec<_> = (0..20u8)
            .map(|i| {
                let bytes = vec![i; 1 << 20];
                (Hash::of(&bytes), bytes)
            })
            .collect();
        store.put_batch(&large).unwrap();
        all.extend(large);
        let s = small(0, 5000);
        store.put_batch(&s).unwrap();
        all.extend(s);
    }
    let crx = dir.path().join("objects/index.crx");
    let first = fs::read(&crx).expect("a snapshot after session 1");
    // Session 2: 4,095 small records (400 KB: far from the bytes rule): one key short.
    {
        let store = SegmentStore::open(dir.path()).unwrap();
        let s = small(10_000, 4095);
        store.put_batch(&s).unwrap();
        all.extend(s);
    }
    assert_eq!(fs::read(&crx).unwrap(), first, "renewed for 4,095 changed keys");
    // Session 3: one more key: 4,096 changed, over a 64th of 5,020 entries.
    {
        let store = SegmentStore::open(dir.path()).unwrap();
        let s = small(20_000, 1);
        store.put_batch(&s).unwrap();
        all.extend(s);
    }
    let renewed = fs::read(&crx).unwrap();
    assert_ne!(renewed, first, "not renewed for 4,096 changed keys");
    assert!(renewed.len() > first.len());
    let store = SegmentStore::open(dir.path()).unwrap();
    for (h, bytes) in &all {
        assert_eq!(store.get(h).unwrap().as_deref(), Some(&bytes[..]), "{h}");
    }
}

#[test]
fn many_small_records_get_a_first_snapshot() {
    // Default (64 MiB) segments: 4,095 small records (~400 KB, far under the quarter
    // segment of the bytes rule) leave no snapshot; the 4,096th key makes one.
    let dir = tempfile::tempdir().unwrap();
    let crx = dir.path().join("objects/index.crx");
    let mut all: Vec<(Hash, Vec<u8>)> = (0..4095).map(object).collect();
    {
        let store = SegmentStore::open(dir.path()).unwrap();
        store.put_batch(&all).unwrap();
    }
    assert!(!crx.exists(), "a snapshot of 4,095 keys");
    {
        let store = SegmentStore::open(dir.path()).unwrap();
        let one = vec![object(10_000)];
        store.put_batch(&one).unwrap();
        all.extend(one);
    }
    assert!(crx.exists(), "no snapshot of 4,096 keys");
    let store = SegmentStore::open(dir.path()).unwrap();
    for (h, bytes) in &all {
        assert_eq!(store.get(h).unwrap().as_deref(), Some(&bytes[..]), "{h}");
    }
}

/// A flipped byte in a block of the snapshot (entries or key area) is found by the first
/// lookup that reads the block, not by the open (which reads only the head): the log then
/// rebuilds its index from the hints and segments, removes the damaged file, and answers
/// exactly as before — whether the first thing asked is a read or a write (a put of
/// present objects looks them up first) — and the next close writes a sound snapshot.
#[test]
fn a_damaged_snapshot_block_is_found_by_a_lookup_and_the_index_rebuilt() {
    let pristine = tempfile::tempdir().unwrap();
    let objects = filled(pristine.path());
    let expected = seen(&open(pristine.path()));
    let crx = |dir: &Path| dir.join("objects/index.crx");
    let len = fs::metadata(crx(pristine.path())).unwrap().len() as usize;
    for (n, at) in [len * 3 / 10, len / 2, len * 7 / 10, len * 9 / 10, len - 3]
        .into_iter()
        .enumerate()
    {
        let work = tempfile::tempdir().unwrap();
        for rel in files(pristine.path()) {
            let dest = work.path().join(&rel);
            fs::create_dir_all(dest.parent().unwrap()).unwrap();
            fs::copy(pristine.path().join(&rel), dest).unwrap();
        }
        let mut bytes = fs::read(crx(work.path())).unwrap();
        bytes[at] ^= 0x10;
        fs::write(crx(work.path()), &bytes).unwrap();
        let store = open(work.path());
        assert!(crx(work.path()).exists(), "byte {at}: the open read no block");
        if n % 2 == 1 {
            store.put_batch(&objects[..40]).unwrap();
        }
        assert_eq!(seen(&store), expected, "byte {at}");
        assert!(!crx(work.path()).exists(), "byte {at}: the damaged snapshot is removed");
        drop(store);
        let again = fs::read(crx(work.path())).unwrap();
        assert_ne!(again, bytes, "byte {at}: a new snapshot at the close");
        assert_eq!(seen(&open(work.path())), expected, "byte {at}: reopened");
    }
}

/// A write that meets a damaged block — a derived put looks up the place it replaces as it
/// records the new one, after its records are written — rebuilds the index there, its own
/// records included: every value reads as written then, and after a reopen.
#[test]
fn a_write_that_meets_a_damaged_block_rebuilds_the_index_with_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..400u32)
        .map(|i| (format!("d/{i:05}").into_bytes(), vec![i as u8; 40]))
        .collect();
    open(dir.path()).put_derived(&entries).unwrap();
    let crx = dir.path().join("derived/index.crx");
    let mut bytes = fs::read(&crx).unwrap();
    let at = bytes.len() * 3 / 4;
    bytes[at] ^= 0x04;
    fs::write(&crx, &bytes).unwrap();
    let updated: Vec<(Vec<u8>, Vec<u8>)> = entries
        .iter()
        .map(|(k, v)| (k.clone(), v.iter().map(|b| b ^ 0xff).collect()))
        .collect();
    let check = |store: &SegmentStore, what: &str| {
        for (k, v) in &updated {
            assert_eq!(store.get_derived(k).unwrap().as_deref(), Some(&v[..]), "{what}");
        }
        let s = store.stats().unwrap();
        assert_eq!((s.derived, s.derived_bytes), (400, 400 * 40), "{what}");
    };
    let store = open(dir.path());
    store.put_derived(&updated).unwrap();
    assert!(!crx.exists(), "the damaged snapshot is removed");
    check(&store, "after the write");
    drop(store);
    check(&open(dir.path()), "reopened");
}
