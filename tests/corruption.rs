//! Corrupt bytes on disk are detected — by the store's crc32, or by the blake3 hash when
//! the crc was forged too — and reported naming the object, never returned as data. For
//! both on-disk stores.

use cairn::{Error, Node, NodeId, Repo, StoreKind};
use cairn_core::codec::{encode_node, hash_object};
use cairn_graph::GraphError;

fn setup(kind: StoreKind) -> (tempfile::TempDir, std::path::PathBuf, NodeId, cairn::Hash) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("repo");
    let repo = Repo::init_with(&path, kind).expect("init");
    let id = NodeId::new("victim").expect("id");
    let node = Node::new(id.clone()).with_text("the bytes of this node will be damaged");
    let hash = hash_object(&encode_node(&node));
    let mut tx = repo.transaction().expect("tx");
    tx.put_node(node).expect("put");
    tx.commit("c").expect("commit");
    // Close the repository so the test can open the sled database directly.
    drop(repo);
    (dir, path, id, hash)
}

/// Rewrites the stored object `hash` in the segment store's object segments: `f` gets the
/// object's bytes followed by their 4-byte crc32 (the record's value and trailer).
fn tamper_segment(path: &std::path::Path, hash: &cairn::Hash, f: impl FnOnce(&mut [u8])) {
    for entry in std::fs::read_dir(path.join("objects")).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_none_or(|e| e != "seg") {
            continue;
        }
        let mut bytes = std::fs::read(&file).unwrap();
        let Some(key_at) = bytes.windows(32).position(|w| w == hash.as_bytes()) else {
            continue;
        };
        // Header: magic 4, kind 1, key_len 2, value_len 4, head_crc 4; then the key.
        let header = key_at - 15;
        let value_len = u32::from_le_bytes(bytes[header + 7..header + 11].try_into().unwrap()) as usize;
        let value = key_at + 32;
        f(&mut bytes[value..value + value_len + 4]);
        std::fs::write(&file, bytes).unwrap();
        return;
    }
    panic!("object {hash} not found in any segment");
}

/// Rewrites the stored value of `hash` in sled's `objects` tree with `f`.
fn tamper(path: &std::path::Path, hash: &cairn::Hash, f: impl FnOnce(&mut Vec<u8>)) {
    // sled's background flusher may hold the file lock for a moment after the repository
    // is dropped: retry briefly rather than fail.
    let db = (0..100)
        .find_map(|_| match sled::open(path) {
            Ok(db) => Some(db),
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                None
            }
        })
        .expect("open sled");
    let objects = db.open_tree("objects").expect("objects tree");
    let mut value = objects
        .get(hash.as_bytes())
        .expect("get")
        .expect("object present")
        .to_vec();
    f(&mut value);
    objects.insert(hash.as_bytes(), value).expect("insert");
    db.flush().expect("flush");
}

fn assert_corrupt(path: &std::path::Path, id: &NodeId, hash: &cairn::Hash) {
    let repo = Repo::open(path).expect("reopen");
    match repo.node(id) {
        Err(Error::Graph(GraphError::Corrupt { hash: h, .. })) => assert_eq!(&h, hash),
        other => panic!("expected a corruption error, got {other:?}"),
    }
    let err = repo.node(id).unwrap_err().to_string();
    assert!(err.contains(&hash.to_hex()), "message names the object: {err}");
    let report = repo.fsck().expect("fsck runs");
    assert!(!report.is_ok());
    assert!(
        report.problems.iter().any(|p| p.contains(&hash.to_hex())),
        "{:?}",
        report.problems
    );
}

#[test]
fn flipped_byte_is_caught_by_crc() {
    let (_dir, path, id, hash) = setup(StoreKind::Sled);
    tamper(&path, &hash, |v| {
        let last = v.len() - 1;
        v[last] ^= 0x40;
    });
    assert_corrupt(&path, &id, &hash);
}

#[test]
fn segment_flipped_byte_is_caught_by_crc() {
    let (_dir, path, id, hash) = setup(StoreKind::Segment);
    tamper_segment(&path, &hash, |v| v[0] ^= 0x40);
    assert_corrupt(&path, &id, &hash);
}

#[test]
fn segment_forged_crc_is_caught_by_blake3() {
    let (_dir, path, id, hash) = setup(StoreKind::Segment);
    tamper_segment(&path, &hash, |v| {
        let n = v.len() - 4;
        v[n - 1] ^= 0x01;
        let crc = crc32(&v[..n]);
        v[n..].copy_from_slice(&crc.to_le_bytes());
    });
    assert_corrupt(&path, &id, &hash);
}

#[test]
fn forged_crc_is_caught_by_blake3() {
    let (_dir, path, id, hash) = setup(StoreKind::Sled);
    tamper(&path, &hash, |v| {
        // Flip a payload byte and recompute the frame's crc32 so only the hash can tell.
        let last = v.len() - 1;
        v[last] ^= 0x01;
        let crc = crc32(&v[4..]);
        v[..4].copy_from_slice(&crc.to_le_bytes());
    });
    assert_corrupt(&path, &id, &hash);
}

fn crc32(bytes: &[u8]) -> u32 {
    // The store's frame is crc32fast over the payload (IEEE polynomial).
    let framed = cairn_store::frame(bytes);
    u32::from_le_bytes([framed[0], framed[1], framed[2], framed[3]])
}
