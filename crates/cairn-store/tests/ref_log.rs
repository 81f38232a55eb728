//! The ref log (`append_ref_log`, `ref_log`, `retain_ref_log`) on every backend: order,
//! retention, reopening, and damage that costs one record and is reported.

use std::path::Path;

use cairn_store::{MemoryStore, SegmentStore, SledStore, Store, MAX_REF_LOG_RECORD};

fn records(store: &dyn Store) -> Vec<Vec<u8>> {
    store.ref_log().unwrap()
}

/// Append, read in order, retain, append again, refuse bad sizes: the contract every
/// backend keeps.
fn append_read_retain(store: &dyn Store) {
    assert!(records(store).is_empty());
    for r in [&b"one"[..], b"two", b"three", b"four"] {
        store.append_ref_log(r).unwrap();
    }
    assert_eq!(records(store), [&b"one"[..], b"two", b"three", b"four"]);
    store.retain_ref_log(&|r| r != b"two" && r != b"four").unwrap();
    assert_eq!(records(store), [&b"one"[..], b"three"]);
    store.append_ref_log(b"five").unwrap();
    assert_eq!(records(store), [&b"one"[..], b"three", b"five"]);
    // Bad sizes are refused and change nothing.
    assert!(store.append_ref_log(b"").is_err());
    assert!(store.append_ref_log(&vec![7; MAX_REF_LOG_RECORD + 1]).is_err());
    store.append_ref_log(&vec![7; MAX_REF_LOG_RECORD]).unwrap();
    assert_eq!(records(store).len(), 4);
    store.retain_ref_log(&|_| false).unwrap();
    assert!(records(store).is_empty());
    store.append_ref_log(b"again").unwrap();
    assert_eq!(records(store), [&b"again"[..]]);
    assert!(store.damage().ref_log.is_empty());
}

#[test]
fn memory_store_keeps_a_ref_log() {
    append_read_retain(&MemoryStore::new());
}

#[test]
fn segment_store_keeps_a_ref_log() {
    let dir = tempfile::tempdir().unwrap();
    append_read_retain(&SegmentStore::open(dir.path()).unwrap());
}

#[test]
fn sled_store_keeps_a_ref_log() {
    let dir = tempfile::tempdir().unwrap();
    append_read_retain(&SledStore::open(dir.path()).unwrap());
}

/// Records flushed survive reopening, in order, and appends go on after them.
fn survives_reopen(open: &dyn Fn() -> Box<dyn Store>) {
    {
        let store = open();
        store.append_ref_log(b"first").unwrap();
        store.append_ref_log(b"second").unwrap();
        store.flush().unwrap();
    }
    let store = open();
    assert_eq!(records(&*store), [&b"first"[..], b"second"]);
    store.append_ref_log(b"third").unwrap();
    store.flush().unwrap();
    drop(store);
    let store = open();
    assert_eq!(records(&*store), [&b"first"[..], b"second", b"third"]);
    store.retain_ref_log(&|r| r != b"first").unwrap();
    drop(store);
    assert_eq!(records(&*open()), [&b"second"[..], b"third"]);
}

#[test]
fn segment_ref_log_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    survives_reopen(&|| Box::new(SegmentStore::open(&path).unwrap()));
}

#[test]
fn sled_ref_log_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    survives_reopen(&|| Box::new(SledStore::open(&path).unwrap()));
}

/// Writes three records to a segment store in `dir` and returns the log file's bytes.
fn three_segment_records(dir: &Path) -> Vec<u8> {
    let store = SegmentStore::open(dir).unwrap();
    for r in [&b"alpha"[..], b"bravo", b"carol"] {
        store.append_ref_log(r).unwrap();
    }
    store.flush().unwrap();
    drop(store);
    std::fs::read(dir.join("reflog")).unwrap()
}

/// Each record of 5 bytes takes 12 + 5 + 4 bytes in the file (storage-format.md §6.4).
const RECORD: usize = 12 + 5 + 4;

#[test]
fn segment_damaged_record_costs_only_that_record_and_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = three_segment_records(dir.path());
    assert_eq!(bytes.len(), 3 * RECORD);
    for (what, at) in [("payload", RECORD + 12 + 2), ("header", RECORD + 5)] {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        std::fs::write(dir.path().join("reflog"), &damaged).unwrap();
        let store = SegmentStore::open(dir.path()).unwrap();
        assert_eq!(records(&store), [&b"alpha"[..], b"carol"], "{what}");
        let damage = store.damage();
        assert_eq!(damage.ref_log.len(), 1, "{what}: {damage:?}");
        assert!(damage.data.is_empty(), "{what}: {damage:?}");
        // Appending goes on after the damage; a rewrite drops it.
        store.append_ref_log(b"delta").unwrap();
        assert_eq!(records(&store), [&b"alpha"[..], b"carol", b"delta"], "{what}");
        store.retain_ref_log(&|_| true).unwrap();
        assert!(store.damage().ref_log.is_empty());
        drop(store);
        let store = SegmentStore::open(dir.path()).unwrap();
        assert_eq!(records(&store), [&b"alpha"[..], b"carol", b"delta"], "{what}");
        assert!(store.damage().ref_log.is_empty());
    }
}

#[test]
fn segment_torn_tail_costs_only_the_last_record_and_is_cut_before_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = three_segment_records(dir.path());
    for cut in [1, 4, RECORD - 1] {
        std::fs::write(dir.path().join("reflog"), &bytes[..bytes.len() - cut]).unwrap();
        let store = SegmentStore::open(dir.path()).unwrap();
        assert_eq!(records(&store), [&b"alpha"[..], b"bravo"], "cut {cut}");
        assert_eq!(store.damage().ref_log.len(), 1, "cut {cut}");
        store.append_ref_log(b"delta").unwrap();
        store.flush().unwrap();
        drop(store);
        let store = SegmentStore::open(dir.path()).unwrap();
        assert_eq!(records(&store), [&b"alpha"[..], b"bravo", b"delta"], "cut {cut}");
        assert!(store.damage().ref_log.is_empty(), "cut {cut}");
        assert_eq!(std::fs::read(dir.path().join("reflog")).unwrap().len(), 3 * RECORD);
    }
}

#[test]
fn sled_damaged_record_costs_only_that_record_and_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        for r in [&b"alpha"[..], b"bravo", b"carol"] {
            store.append_ref_log(r).unwrap();
        }
        // Damage the second record's stored frame (key: sequence number 1, big-endian).
        let tree = store.raw_db().open_tree("reflog").unwrap();
        let key = 1u64.to_be_bytes();
        let mut value = tree.get(key).unwrap().unwrap().to_vec();
        assert_eq!(&value[4..], b"bravo", "value = crc32 LE ‖ record");
        value[5] ^= 0x01;
        tree.insert(key, value).unwrap();
        store.flush().unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.damage().ref_log.len(), 1, "{:?}", store.damage());
    assert_eq!(records(&store), [&b"alpha"[..], b"carol"]);
    store.append_ref_log(b"delta").unwrap();
    assert_eq!(records(&store), [&b"alpha"[..], b"carol", b"delta"]);
    store.retain_ref_log(&|_| true).unwrap();
    assert!(store.damage().ref_log.is_empty());
    assert_eq!(records(&store), [&b"alpha"[..], b"carol", b"delta"]);
}
