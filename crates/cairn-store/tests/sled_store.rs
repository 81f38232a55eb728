//! What only the on-disk backend promises: reopening, the framed layout, corruption
//! reported as such, and the process lock. The shared contract is in `conformance.rs`.

use cairn_core::Hash;
use cairn_store::{frame, CasOutcome, SledStore, Store, StoreError};

fn object(text: &str) -> (Hash, Vec<u8>) {
    let bytes = text.as_bytes().to_vec();
    (Hash::of(&bytes), bytes)
}

/// Replaces the raw (framed) value of `key` in sled tree `tree`, bypassing the store.
fn overwrite_raw(store: &SledStore, tree: &str, key: &[u8], value: &[u8]) {
    let tree = store.raw_db().open_tree(tree).unwrap();
    assert!(
        tree.insert(key, value).unwrap().is_some(),
        "the key was not there to damage"
    );
}

fn raw(store: &SledStore, tree: &str, key: &[u8]) -> Vec<u8> {
    let tree = store.raw_db().open_tree(tree).unwrap();
    tree.get(key).unwrap().expect("raw value present").to_vec()
}

#[test]
fn data_survives_close_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (hash, bytes) = object("durable");
    {
        let store = SledStore::open(dir.path()).unwrap();
        store.put_batch(&[(hash, bytes.clone())]).unwrap();
        store.put_derived(&[(b"idx".to_vec(), b"snapshot".to_vec())]).unwrap();
        store.flush().unwrap();
        // A moved ref is durable without an explicit flush.
        assert_eq!(store.cas_ref("HEAD", None, Some(b"main")).unwrap(), CasOutcome::Swapped);
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.path(), dir.path());
    assert_eq!(store.get(&hash).unwrap().as_deref(), Some(&bytes[..]));
    assert_eq!(store.get_ref("HEAD").unwrap(), Some(b"main".to_vec()));
    assert_eq!(store.get_derived(b"idx").unwrap(), Some(b"snapshot".to_vec()));
    assert_eq!(store.object_hashes().unwrap(), vec![hash]);
}

#[test]
fn open_creates_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("repo");
    let store = SledStore::open(&path).unwrap();
    assert!(path.is_dir());
    assert_eq!(store.object_hashes().unwrap(), vec![]);
}

#[test]
fn values_are_framed_on_disk() {
    // Pins the layout that store-format.md describes: three trees, raw keys, framed values.
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let (hash, bytes) = object("framed");
    store.put_batch(&[(hash, bytes.clone())]).unwrap();
    store.cas_ref("heads/main", None, Some(b"c1")).unwrap();
    store.put_derived(&[(vec![0, 0xff, 7], b"d".to_vec())]).unwrap();
    assert_eq!(raw(&store, "objects", hash.as_bytes()), frame(&bytes));
    assert_eq!(raw(&store, "refs", b"heads/main"), frame(b"c1"));
    assert_eq!(raw(&store, "derived", &[0, 0xff, 7]), frame(b"d"));
    assert_eq!(raw(&store, "objects", hash.as_bytes())[..4], crc32fast_le(&bytes));
}

/// The crc32 the frame must start with, computed independently of `frame`.
fn crc32fast_le(bytes: &[u8]) -> [u8; 4] {
    // Bitwise CRC-32/ISO-HDLC (reflected polynomial 0xedb88320), the reference algorithm.
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    (!crc).to_le_bytes()
}

#[test]
fn flipped_byte_in_an_object_is_reported_as_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let (hash, bytes) = object("an object that will be damaged");
    let (intact, intact_bytes) = object("an object left alone");
    store
        .put_batch(&[(hash, bytes), (intact, intact_bytes.clone())])
        .unwrap();

    let mut damaged = raw(&store, "objects", hash.as_bytes());
    damaged[10] ^= 0x04;
    overwrite_raw(&store, "objects", hash.as_bytes(), &damaged);

    let err = store.get(&hash).unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { space: "object", key, .. } if *key == hash.to_hex()),
        "{err:?}"
    );
    assert!(err.to_string().contains(&hash.to_hex()), "{err}");
    assert!(err.to_string().contains("crc32 mismatch"), "{err}");
    // Only the damaged object is affected; presence is still reported (no checksum).
    assert_eq!(store.get(&intact).unwrap().as_deref(), Some(&intact_bytes[..]));
    assert!(store.contains(&hash).unwrap());
    assert_eq!(store.object_hashes().unwrap().len(), 2);
}

#[test]
fn a_value_too_short_for_a_frame_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let (hash, bytes) = object("to be truncated");
    store.put_batch(&[(hash, bytes)]).unwrap();
    overwrite_raw(&store, "objects", hash.as_bytes(), &[1, 2, 3]);
    let err = store.get(&hash).unwrap_err();
    assert!(err.to_string().contains("too short"), "{err}");
    assert!(err.to_string().contains(&hash.to_hex()), "{err}");
}

#[test]
fn damaged_refs_and_derived_values_are_reported_as_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    store.cas_ref("heads/main", None, Some(b"c1")).unwrap();
    store.put_derived(&[(vec![0xab, 0xcd], b"snapshot".to_vec())]).unwrap();
    let mut bad_ref = raw(&store, "refs", b"heads/main");
    bad_ref[4] ^= 1;
    overwrite_raw(&store, "refs", b"heads/main", &bad_ref);
    let mut bad_derived = raw(&store, "derived", &[0xab, 0xcd]);
    bad_derived[0] ^= 0x80;
    overwrite_raw(&store, "derived", &[0xab, 0xcd], &bad_derived);

    let is_corrupt = |r: Result<_, StoreError>, want_space: &str, want_key: &str| match r {
        Err(StoreError::Corrupt { space, key, .. }) => space == want_space && key == want_key,
        _ => false,
    };
    assert!(is_corrupt(store.get_ref("heads/main").map(drop), "ref", "heads/main"));
    // A listing leaves the damaged ref out and names it; the others stay listed.
    store.cas_ref("heads/side", None, Some(b"c9")).unwrap();
    assert_eq!(
        store.list_refs("heads/").unwrap(),
        vec![("heads/side".to_string(), b"c9".to_vec())]
    );
    assert_eq!(store.damaged_refs("heads/").unwrap(), vec!["heads/main".to_string()]);
    // A CAS against a damaged ref cannot match it, and reports the damage.
    assert!(is_corrupt(
        store.cas_ref("heads/main", Some(b"c1"), Some(b"c2")).map(drop),
        "ref",
        "heads/main"
    ));
    assert!(is_corrupt(
        store.get_derived(&[0xab, 0xcd]).map(drop),
        "derived",
        "abcd"
    ));
    assert!(is_corrupt(store.scan_derived(&[0xab]).map(drop), "derived", "abcd"));
    assert!(is_corrupt(
        store.last_derived_at_or_before(&[0xab], &[0xff]).map(drop),
        "derived",
        "abcd"
    ));
}

#[test]
fn a_malformed_object_key_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let tree = store.raw_db().open_tree("objects").unwrap();
    tree.insert(b"short key", frame(b"x")).unwrap();
    let err = store.object_hashes().unwrap_err();
    assert!(err.to_string().contains("expected 32"), "{err}");
}

#[test]
fn a_second_open_is_locked_until_the_first_closes() {
    let dir = tempfile::tempdir().unwrap();
    let first = SledStore::open(dir.path()).unwrap();
    match SledStore::open(dir.path()) {
        Err(StoreError::Locked { path }) => assert_eq!(path, dir.path().display().to_string()),
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(first);
    SledStore::open(dir.path()).unwrap();
}

/// Set in the child process of [`flushed_writes_survive_a_process_kill`]: where to write.
const CRASH_CHILD_DIR: &str = "CAIRN_STORE_TEST_CRASH_CHILD_DIR";
/// The child's exit code once it has written (a test harness never exits with it).
const CRASH_CHILD_EXIT_CODE: i32 = 42;

#[test]
fn flushed_writes_survive_a_process_kill() {
    let objects: Vec<(Hash, Vec<u8>)> = (0..100).map(|i| object(&format!("crash object {i}"))).collect();
    if let Some(dir) = std::env::var_os(CRASH_CHILD_DIR) {
        // The child: write in the order callers use (objects, flush, ref), then exit at
        // once without dropping the store (so sled gets no chance to flush on close);
        // `exit` rather than `abort` so that no core file is left behind.
        let store = SledStore::open(std::path::Path::new(&dir)).unwrap();
        store.put_batch(&objects).unwrap();
        store.flush().unwrap();
        assert_eq!(
            store.cas_ref("HEAD", None, Some(b"after objects")).unwrap(),
            CasOutcome::Swapped
        );
        std::process::exit(CRASH_CHILD_EXIT_CODE);
    }
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "flushed_writes_survive_a_process_kill", "--test-threads=1"])
        .env(CRASH_CHILD_DIR, dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(
        status.code(),
        Some(CRASH_CHILD_EXIT_CODE),
        "the child did not get to its exit"
    );
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.get_ref("HEAD").unwrap(), Some(b"after objects".to_vec()));
    for (hash, bytes) in &objects {
        assert_eq!(store.get(hash).unwrap().as_deref(), Some(&bytes[..]));
    }
}
