//! `Store::get_derived_shared` (`storage-format.md` §6.7, "Values read where they lie"): the
//! segment store hands out a value of a sealed segment as a slice of the segment's mapping,
//! checked as a positional read is; a value of the active segment is copied. Both equal
//! `get_derived`; damage in a sealed segment is reported as corruption, never returned;
//! a value handed out stays readable after compaction removes its segment. (Linux: the
//! mappings are seen in `/proc/self/maps`.)

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;

use cairn_store::{MemoryStore, SegmentStore, Store, StoreError};

/// Small segments, so that a few hundred values fill several.
const SEGMENT: u64 = 16 << 10;

fn key(i: usize) -> Vec<u8> {
    format!("ck/{i:05}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    (0..200 + i % 57).map(|b| (b * 31 + i) as u8).collect()
}

fn filled(dir: &Path, n: usize) -> SegmentStore {
    let store = SegmentStore::open_with_segment_bytes(dir, SEGMENT).unwrap();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..n).map(|i| (key(i), value(i))).collect();
    store.put_derived(&entries).unwrap();
    store.flush_derived().unwrap();
    store
}

/// The derived log's segment files, in number order.
fn segments(dir: &Path) -> Vec<std::path::PathBuf> {
    cairn_testkit::segment_files(dir, "derived")
}

#[test]
fn shared_values_equal_copied_ones_in_sealed_and_active_segments() {
    let dir = tempfile::tempdir().unwrap();
    let store = filled(dir.path(), 400);
    assert!(segments(dir.path()).len() >= 4, "several segments, one active");
    for i in 0..400 {
        let shared = store.get_derived_shared(&key(i)).unwrap().expect("present");
        assert_eq!(&shared[..], &value(i)[..], "value {i}");
        assert_eq!(store.get_derived(&key(i)).unwrap().as_deref(), Some(&shared[..]));
    }
    assert!(store.get_derived_shared(b"ck/absent").unwrap().is_none());
    // Sealed segments were read through their mappings; the active one was not mapped.
    let maps = fs::read_to_string("/proc/self/maps").unwrap();
    let all = segments(dir.path());
    let (active, sealed) = all.split_last().unwrap();
    for s in sealed {
        assert!(maps.contains(s.to_str().unwrap()), "{} is mapped", s.display());
    }
    assert!(
        !maps.contains(active.to_str().unwrap()),
        "the active segment is not mapped"
    );
    // After a reopen (snapshot or hints), the same.
    drop(store);
    let store = SegmentStore::open_with_segment_bytes(dir.path(), SEGMENT).unwrap();
    for i in (0..400).step_by(7) {
        assert_eq!(&store.get_derived_shared(&key(i)).unwrap().unwrap()[..], &value(i)[..]);
    }
    // The default of other backends copies.
    let memory = MemoryStore::new();
    memory.put_derived(&[(key(1), value(1))]).unwrap();
    assert_eq!(&memory.get_derived_shared(&key(1)).unwrap().unwrap()[..], &value(1)[..]);
}

#[test]
fn a_flipped_byte_in_a_sealed_segment_is_corruption_not_data() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(dir.path(), 400));
    // Flip one byte inside the first value of the first (sealed) segment: its record is
    // `15 + key + value + 4` bytes from offset 0.
    let first = &segments(dir.path())[0];
    let file = fs::OpenOptions::new().read(true).write(true).open(first).unwrap();
    let at = 15 + key(0).len() as u64 + 10;
    let mut b = [0u8; 1];
    file.read_exact_at(&mut b, at).unwrap();
    file.write_all_at(&[b[0] ^ 0x20], at).unwrap();
    drop(file);
    let store = SegmentStore::open_with_segment_bytes(dir.path(), SEGMENT).unwrap();
    match store.get_derived_shared(&key(0)) {
        Err(StoreError::Corrupt { detail, .. }) => assert!(detail.contains("crc32"), "{detail}"),
        other => panic!("expected corruption, got {other:?}"),
    }
    // Its neighbours in the same mapping are sound.
    assert_eq!(&store.get_derived_shared(&key(1)).unwrap().unwrap()[..], &value(1)[..]);
}

#[test]
fn a_value_handed_out_outlives_the_compaction_that_removes_its_segment() {
    let dir = tempfile::tempdir().unwrap();
    let store = filled(dir.path(), 400);
    let first = segments(dir.path())[0].clone();
    let held = store.get_derived_shared(&key(0)).unwrap().unwrap();
    // Delete most of the first segment's values (not key 0's neighbours' data we hold:
    // the handed-out bytes are what matter), then compact: the file goes.
    let dead: Vec<Vec<u8>> = (0..60).map(key).collect();
    store.delete_derived(&dead).unwrap();
    store.compact().unwrap();
    assert!(!first.exists(), "the mostly dead first segment was compacted away");
    assert_eq!(&held[..], &value(0)[..]);
    // A live value that was in it is read from where compaction copied it.
    for i in 60..80 {
        assert_eq!(&store.get_derived_shared(&key(i)).unwrap().unwrap()[..], &value(i)[..]);
    }
}
