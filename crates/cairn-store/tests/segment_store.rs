//! The segment store under damage: every single-byte flip, truncation and deletion of
//! each of its files leaves it openable, with at most the record (or ref) hit lost or
//! refused — named, never returned as data — and everything else readable. Also
//! sealing, hints, compaction and reopen.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use cairn_core::Hash;
use cairn_store::{CasOutcome, SegmentStore, Store, StoreError};

/// Small segments, so a few dozen objects make several sealed segments with hints.
const SEGMENT: u64 = 4 << 10;

fn object(i: usize) -> (Hash, Vec<u8>) {
    let bytes = format!("object {i} {}", "x".repeat(100 + i % 50)).into_bytes();
    (Hash::of(&bytes), bytes)
}

/// A store with 60 objects over several segments, two refs and some derived entries.
fn populated(dir: &Path) -> BTreeMap<Hash, Vec<u8>> {
    let store = SegmentStore::open_with_segment_bytes(dir, SEGMENT).unwrap();
    let objects: Vec<_> = (0..60).map(object).collect();
    for chunk in objects.chunks(7) {
        store.put_batch(chunk).unwrap();
    }
    assert_eq!(
        store.cas_ref("heads/main", None, Some(b"head-1")).unwrap(),
        CasOutcome::Swapped
    );
    assert_eq!(store.cas_ref("HEAD", None, Some(b"main")).unwrap(), CasOutcome::Swapped);
    store
        .put_derived(&[(b"ck/1".to_vec(), vec![1; 300]), (b"ck/2".to_vec(), vec![2; 300])])
        .unwrap();
    store.flush().unwrap();
    objects.into_iter().collect()
}

use cairn_testkit::files;

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for rel in files(from) {
        let dest = to.join(&rel);
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::copy(from.join(&rel), dest).unwrap();
    }
    for d in ["objects", "derived", "refs"] {
        fs::create_dir_all(to.join(d)).unwrap();
    }
}

/// What a damaged store still gives: each object is its true bytes, absent, or refused
/// as corrupt — never other bytes. Returns how many objects were lost or refused.
fn check_objects(store: &SegmentStore, expected: &BTreeMap<Hash, Vec<u8>>, what: &str) -> usize {
    let mut lost = 0;
    for (hash, bytes) in expected {
        match store.get(hash) {
            Ok(Some(got)) => assert_eq!(&*got, &bytes[..], "{what}: wrong bytes returned for {hash}"),
            Ok(None) | Err(StoreError::Corrupt { .. }) => lost += 1,
            Err(e) => panic!("{what}: {hash}: {e}"),
        }
    }
    // Read together, in the order they were put: each value passed on is its true bytes,
    // and damage stops the call as corrupt, never passed on.
    let asked: Vec<Hash> = (0..expected.len()).map(|i| object(i).0).collect();
    let mut passed = 0;
    let together = store.with_objects(&asked, &mut |i, bytes| {
        assert_eq!(
            bytes,
            &expected[&asked[i]][..],
            "{what}: wrong bytes passed for {}",
            asked[i]
        );
        passed += 1;
    });
    match together {
        Ok(()) => assert_eq!(passed, expected.len() - lost, "{what}: read together"),
        Err(StoreError::Corrupt { .. }) => assert!(lost > 0, "{what}: refused together, not alone"),
        Err(e) => panic!("{what}: read together: {e}"),
    }
    lost
}

#[test]
fn every_single_byte_flip_costs_at_most_what_it_hits() {
    let pristine = tempfile::tempdir().unwrap();
    let expected = populated(pristine.path());
    let all = files(pristine.path());
    assert!(
        all.iter().filter(|p| p.extension().is_some_and(|e| e == "seg")).count() >= 4,
        "{all:?}"
    );
    assert!(
        all.iter().any(|p| p.extension().is_some_and(|e| e == "hint")),
        "{all:?}"
    );
    let mut flips = 0;
    for rel in &all {
        let len = fs::metadata(pristine.path().join(rel)).unwrap().len() as usize;
        // Every byte of small files; a spread of offsets in segments.
        let step = if len > 2048 { len / 97 + 1 } else { 1 };
        for pos in (0..len).step_by(step) {
            let work = tempfile::tempdir().unwrap();
            copy_dir(pristine.path(), work.path());
            let path = work.path().join(rel);
            let mut bytes = fs::read(&path).unwrap();
            bytes[pos] ^= 0x20;
            fs::write(&path, &bytes).unwrap();
            let what = format!("{} byte {pos}", rel.display());
            let store = SegmentStore::open_with_segment_bytes(work.path(), SEGMENT)
                .unwrap_or_else(|e| panic!("{what}: the store does not open: {e}"));
            let lost = check_objects(&store, &expected, &what);
            assert!(lost <= 1, "{what}: {lost} objects lost");
            let in_objects = rel.starts_with("objects");
            if !in_objects {
                assert_eq!(lost, 0, "{what}: an object lost to damage elsewhere");
            }
            // Refs: the one hit is refused as corrupt; the other reads.
            for (name, value) in [("heads/main", &b"head-1"[..]), ("HEAD", b"main")] {
                match store.get_ref(name) {
                    Ok(Some(v)) => assert_eq!(v, value, "{what}: ref {name}"),
                    Err(StoreError::Corrupt { space: "ref", .. }) => {
                        assert!(rel.starts_with("refs"), "{what}: ref {name} refused")
                    }
                    other => panic!("{what}: ref {name}: {other:?}"),
                }
            }
            // Derived entries: true value, absent or corrupt.
            for (key, byte) in [(&b"ck/1"[..], 1u8), (b"ck/2", 2)] {
                match store.get_derived(key) {
                    Ok(Some(v)) => assert_eq!(v, vec![byte; 300], "{what}"),
                    Ok(None) | Err(StoreError::Corrupt { .. }) => assert!(rel.starts_with("derived"), "{what}"),
                    Err(e) => panic!("{what}: {e}"),
                }
                // Lent from the read buffer: the same answer, damage never passed to `f`.
                let mut lent = None;
                match store.with_derived(key, &mut |v| lent = Some(v.to_vec())) {
                    Ok(true) => assert_eq!(lent, Some(vec![byte; 300]), "{what}"),
                    Ok(false) | Err(StoreError::Corrupt { .. }) => {
                        assert!(lent.is_none() && rel.starts_with("derived"), "{what}")
                    }
                    Err(e) => panic!("{what}: {e}"),
                }
            }
            // The store takes writes and reads them back after a reopen.
            let (h, b) = object(1000);
            store.put_batch(&[(h, b.clone())]).unwrap();
            store.flush().unwrap();
            drop(store);
            let store = SegmentStore::open_with_segment_bytes(work.path(), SEGMENT).unwrap();
            assert_eq!(
                store.get(&h).unwrap().as_deref(),
                Some(&b[..]),
                "{what}: a write after damage"
            );
            flips += 1;
        }
    }
    assert!(flips > 300, "only {flips} flips");
}

#[test]
fn a_damaged_record_header_is_reported_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let expected = populated(dir.path());
    // Flip a byte of the first record's header in the newest object segment, and remove
    // its hint and the index snapshot (written at close) so the open scans it. (With a
    // hint or a snapshot, the open takes the record list from it, and the damage is named
    // by the read of that record: `check_objects` below, the byte-flip test and
    // `index_snapshot.rs` cover that path.)
    let newest = files(dir.path())
        .into_iter()
        .rfind(|p| p.starts_with("objects") && p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    let path = dir.path().join(&newest);
    fs::remove_file(path.with_extension("hint")).unwrap();
    let _ = fs::remove_file(dir.path().join("objects/index.crx"));
    let mut bytes = fs::read(&path).unwrap();
    bytes[6] ^= 0x01;
    fs::write(&path, bytes).unwrap();
    let store = SegmentStore::open_with_segment_bytes(dir.path(), SEGMENT).unwrap();
    assert_eq!(check_objects(&store, &expected, "header flip"), 1);
    let damage = store.damage();
    assert_eq!(damage.data.len(), 1, "{damage:?}");
    assert!(damage.data[0].contains("hold no readable record"), "{damage:?}");
    assert!(damage.derived.is_empty());
}

#[test]
fn a_cut_segment_keeps_every_whole_record() {
    let pristine = tempfile::tempdir().unwrap();
    let expected = populated(pristine.path());
    let newest = files(pristine.path())
        .into_iter()
        .rfind(|p| p.starts_with("objects") && p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    let len = fs::metadata(pristine.path().join(&newest)).unwrap().len();
    let mut previous = usize::MAX;
    for cut in (0..len).step_by(37) {
        let work = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), work.path());
        let file = fs::OpenOptions::new()
            .write(true)
            .open(work.path().join(&newest))
            .unwrap();
        file.set_len(cut).unwrap();
        drop(file);
        let store = SegmentStore::open_with_segment_bytes(work.path(), SEGMENT).unwrap();
        let lost = check_objects(&store, &expected, &format!("cut at {cut}"));
        // Only records past the cut are lost: fewer as the cut moves on.
        assert!(
            lost <= previous && lost < expected.len() / 2,
            "cut at {cut}: {lost} lost"
        );
        previous = lost;
        // A cut tail of the newest segment is a write cut short, not damage.
        assert!(store.damage().data.is_empty(), "{:?}", store.damage());
        let (h, b) = object(2000);
        store.put_batch(&[(h, b.clone())]).unwrap();
        store.flush().unwrap();
        drop(store);
        let store = SegmentStore::open_with_segment_bytes(work.path(), SEGMENT).unwrap();
        assert_eq!(store.get(&h).unwrap().as_deref(), Some(&b[..]));
        assert_eq!(check_objects(&store, &expected, "after append"), lost);
    }
}

#[test]
fn deleting_any_one_file_leaves_the_store_openable() {
    let pristine = tempfile::tempdir().unwrap();
    let expected = populated(pristine.path());
    for rel in files(pristine.path()) {
        let work = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), work.path());
        fs::remove_file(work.path().join(&rel)).unwrap();
        let what = format!("without {}", rel.display());
        let store =
            SegmentStore::open_with_segment_bytes(work.path(), SEGMENT).unwrap_or_else(|e| panic!("{what}: {e}"));
        let lost = check_objects(&store, &expected, &what);
        if rel.extension().is_some_and(|e| e == "seg") && rel.starts_with("objects") {
            assert!(lost > 0 && lost < expected.len(), "{what}: {lost}");
        } else {
            assert_eq!(lost, 0, "{what}");
        }
    }
}

#[test]
fn sealed_segments_get_hints_and_reopen_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let expected = populated(dir.path());
    let hints = files(dir.path())
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "hint"))
        .count();
    assert!(hints >= 2, "{hints} hints");
    let store = SegmentStore::open_with_segment_bytes(dir.path(), SEGMENT).unwrap();
    assert_eq!(check_objects(&store, &expected, "reopen"), 0);
    assert_eq!(
        store.object_hashes().unwrap(),
        expected.keys().copied().collect::<Vec<_>>()
    );
    // A damaged hint is ignored: the segment is scanned instead.
    drop(store);
    let hint = files(dir.path())
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "hint"))
        .unwrap();
    let mut bytes = fs::read(dir.path().join(&hint)).unwrap();
    bytes[20] ^= 0xff;
    fs::write(dir.path().join(&hint), bytes).unwrap();
    let store = SegmentStore::open_with_segment_bytes(dir.path(), SEGMENT).unwrap();
    assert_eq!(check_objects(&store, &expected, "bad hint"), 0);
    assert!(store.damage().data.is_empty());
}

/// `prefetch` (the kernel asked to read records in) is a hint: over present, absent and
/// damaged records it succeeds and changes nothing that reads return.
#[test]
fn prefetch_is_a_hint_and_changes_no_read() {
    let dir = tempfile::tempdir().unwrap();
    let expected = populated(dir.path());
    let mut asked: Vec<Hash> = expected.keys().rev().copied().collect();
    asked.extend((0..5).map(|i| Hash::of(format!("absent {i}").as_bytes())));
    let store = SegmentStore::open_with_segment_bytes(dir.path(), SEGMENT).unwrap();
    store.prefetch(&asked).unwrap();
    store.prefetch(&[]).unwrap();
    assert_eq!(check_objects(&store, &expected, "prefetched"), 0);
    drop(store);
    // A byte flipped inside a sealed segment's record: the reads after a prefetch lose
    // what the reads without one lose, and return nothing else.
    let seg = files(dir.path())
        .into_iter()
        .find(|p| p.starts_with("objects") && p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    let mut bytes = fs::read(dir.path().join(&seg)).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x5a;
    fs::write(dir.path().join(&seg), bytes).unwrap();
    let plain = {
        let store = SegmentStore::open_with_segment_bytes(dir.path(), SEGMENT).unwrap();
        check_objects(&store, &expected, "damaged")
    };
    assert!(plain > 0, "the flip hit no object record");
    let store = SegmentStore::open_with_segment_bytes(dir.path(), SEGMENT).unwrap();
    store.prefetch(&asked).unwrap();
    assert_eq!(check_objects(&store, &expected, "damaged, prefetched"), plain);
}

#[test]
fn deletes_compact_dead_segments_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = SegmentStore::open_with_segment_bytes(dir.path(), 64 << 10).unwrap();
    let objects: Vec<_> = (0..2000).map(object).collect();
    for chunk in objects.chunks(100) {
        store.put_batch(chunk).unwrap();
    }
    let segments = |d: &Path| {
        files(d)
            .iter()
            .filter(|p| p.starts_with("objects") && p.extension().is_some_and(|e| e == "seg"))
            .count()
    };
    let before = segments(dir.path());
    // Delete 90%: sealed segments become mostly dead and are compacted.
    let doomed: Vec<Hash> = objects
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 != 0)
        .map(|(_, o)| o.0)
        .collect();
    store.delete_objects(&doomed).unwrap();
    let after = segments(dir.path());
    assert!(after < before / 2, "{before} segments before, {after} after");
    // Put some deleted objects back; then reopen.
    store.put_batch(&objects[1..4]).unwrap();
    store.flush().unwrap();
    drop(store);
    let store = SegmentStore::open_with_segment_bytes(dir.path(), 64 << 10).unwrap();
    for (i, (h, b)) in objects.iter().enumerate() {
        let want = i % 10 == 0 || (1..4).contains(&i);
        assert_eq!(store.get(h).unwrap().as_deref(), want.then_some(&b[..]), "object {i}");
    }
    assert_eq!(store.stats().unwrap().objects, 203);
    // Deleting what is left, and compacting again, leaves an empty, sound store.
    let rest = store.object_hashes().unwrap();
    store.delete_objects(&rest).unwrap();
    drop(store);
    let store = SegmentStore::open_with_segment_bytes(dir.path(), 64 << 10).unwrap();
    assert_eq!(store.stats().unwrap().objects, 0);
    assert!(store.damage().data.is_empty());
}

#[test]
fn a_second_open_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let _store = SegmentStore::open(dir.path()).unwrap();
    assert!(matches!(SegmentStore::open(dir.path()), Err(StoreError::Locked { .. })));
}

#[test]
fn a_damaged_or_missing_marker_is_put_right() {
    let dir = tempfile::tempdir().unwrap();
    let expected = populated(dir.path());
    let marker = dir.path().join("CAIRN-STORE");
    let mut bytes = fs::read(&marker).unwrap();
    bytes[20] ^= 0x02; // "store 1" -> "store 3": caught by the marker's checksum
    fs::write(&marker, &bytes).unwrap();
    let store = SegmentStore::open(dir.path()).unwrap();
    assert_eq!(check_objects(&store, &expected, "marker"), 0);
    assert!(store.damage().data[0].contains("written again"), "{:?}", store.damage());
    drop(store);
    let store = SegmentStore::open(dir.path()).unwrap();
    assert!(store.damage().data.is_empty());
    drop(store);
    fs::remove_file(&marker).unwrap();
    assert!(SegmentStore::is_store(dir.path()));
    let store = SegmentStore::open(dir.path()).unwrap();
    assert_eq!(check_objects(&store, &expected, "no marker"), 0);
}

#[test]
fn the_active_segment_gets_a_hint_at_close_that_a_later_append_makes_stale() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = populated(dir.path());
    let newest = |dir: &Path| {
        files(dir)
            .into_iter()
            .rfind(|p| p.starts_with("objects") && p.extension().is_some_and(|e| e == "seg"))
            .unwrap()
    };
    // A clean close wrote the newest segment's hint.
    let seg = dir.path().join(newest(dir.path()));
    assert!(seg.with_extension("hint").is_file());
    // Appends after it, then a "crash" (no close): the hint no longer matches the
    // segment's length, so the open scans, and every acknowledged write is there.
    let store = SegmentStore::open_with_segment_bytes(dir.path(), SEGMENT).unwrap();
    assert_eq!(check_objects(&store, &expected, "opened with the hint"), 0);
    let more: Vec<_> = (60..64).map(object).collect();
    store.put_batch(&more).unwrap();
    store.flush().unwrap();
    expected.extend(more);
    // No close, as after kill -9. The forgotten store keeps this process's lock on the
    // directory, so the files are reopened from a copy.
    std::mem::forget(store);
    let copy = tempfile::tempdir().unwrap();
    for rel in files(dir.path()) {
        let dest = copy.path().join(&rel);
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::copy(dir.path().join(&rel), dest).unwrap();
    }
    for d in ["objects", "derived", "refs"] {
        fs::create_dir_all(copy.path().join(d)).unwrap();
    }
    let store = SegmentStore::open_with_segment_bytes(copy.path(), SEGMENT).unwrap();
    assert_eq!(check_objects(&store, &expected, "after appends past the hint"), 0);
    assert!(store.damage().data.is_empty());
}

#[test]
fn values_from_a_mebibyte_on_are_written_whole_among_small_ones() {
    // Values from 1 MiB on are written from where they lie rather than copied into the
    // write batch; their records must be the same, in the same order, whatever the mix.
    let dir = tempfile::tempdir().unwrap();
    let sizes = [300, (1 << 20) - 1, 1 << 20, 17, (3 << 20) + 5, 4096, 1 << 20, 1];
    let entries: Vec<(Vec<u8>, Vec<u8>)> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let value = (0..n).map(|b| (b * 31 + i) as u8).collect();
            (format!("ck/{i}").into_bytes(), value)
        })
        .collect();
    let check = |store: &SegmentStore, what: &str| {
        for (k, v) in &entries {
            let got = store.get_derived(k).unwrap();
            assert!(got.as_deref() == Some(&v[..]), "{what}: {}", String::from_utf8_lossy(k));
        }
        assert!(store.damage().data.is_empty(), "{what}");
    };
    {
        // Segments of 2 MiB: the batch rolls over segments, and a 3 MiB value fills one alone.
        let store = SegmentStore::open_with_segment_bytes(dir.path(), 2 << 20).unwrap();
        store.put_derived(&entries).unwrap();
        check(&store, "written");
        store.flush().unwrap();
    }
    // Without hints or the index snapshot, a reopen scans every record of every segment.
    let mut removed = 0;
    for rel in files(dir.path()) {
        if rel.extension().is_some_and(|e| e == "hint" || e == "crx") {
            fs::remove_file(dir.path().join(rel)).unwrap();
            removed += 1;
        }
    }
    assert!(removed >= 3, "{removed} hints and snapshots");
    let store = SegmentStore::open_with_segment_bytes(dir.path(), 2 << 20).unwrap();
    check(&store, "scanned on reopen");
}
