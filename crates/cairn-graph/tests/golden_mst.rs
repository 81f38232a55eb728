//! Golden vectors for the Merkle search tree described in `storage-format.md` (§4): key
//! levels, and the root hash of a fixed key set, reached by a one-shot build and by
//! batched path-copying updates in another order (history independence).
//!
//! The values were computed once and pasted. If a test here fails, the tree's shape or
//! bytes changed, and with them the `node_root`/`edge_root` of every commit: a format
//! change (see `storage-format.md` §8), not a constant to update.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cairn_core::codec::{self, TAG_TREE};
use cairn_core::{Hash, Node, NodeId};
use cairn_graph::mst::{self, key_level, Mutation, LEVEL_BITS};
use cairn_graph::{Objects, PendingWrites};
use cairn_store::{MemoryStore, Store};

/// Root of the tree of `node-0000 ..= node-0999`, each mapped to `Hash::of(key)`.
const ROOT_1000: &str = "3eb47fdc19f1b54c597a7698c4c4d3882661e9ad9413a81e1e8771d91d206a23";
/// Tree nodes in that tree, and their encoded bytes in total.
const TREE_NODES_1000: usize = 135;
const TREE_BYTES_1000: usize = 55_773;
/// Root of the node tree of a commit holding only `Node::new("a")` (the same value
/// `TREE_HASH` pins in `cairn-core/tests/golden_objects.rs`).
const ROOT_OF_A: &str = "730108d1338c8134e3b9a28e29a08b7d7d2651e96f1a716cfa6f5191a775ab30";

fn objects() -> (Arc<MemoryStore>, Objects) {
    let store = Arc::new(MemoryStore::new());
    let objs = Objects::new(Arc::clone(&store) as Arc<dyn Store>);
    (store, objs)
}

fn flush(store: &MemoryStore, out: PendingWrites) {
    out.flush_to(store).unwrap();
}

fn key(i: u32) -> Vec<u8> {
    format!("node-{i:04}").into_bytes()
}

fn entries_1000() -> Vec<(Vec<u8>, Hash)> {
    (0..1000)
        .map(|i| {
            let k = key(i);
            let v = Hash::of(&k);
            (k, v)
        })
        .collect()
}

/// The level rule restated independently: leading zero bits of the first 8 bytes of
/// blake3(key), read big-endian, divided by 3.
fn level_by_hand(k: &[u8]) -> u8 {
    let h = Hash::of(k);
    let first8: [u8; 8] = h.as_bytes()[..8].try_into().unwrap();
    (u64::from_be_bytes(first8).leading_zeros() / 3) as u8
}

#[test]
fn key_levels_are_pinned() {
    assert_eq!(LEVEL_BITS, 3);
    // blake3("") = af13…: no leading zero bit.
    assert_eq!(key_level(b""), 0);
    // blake3("a") = 1776…: 0x17 = 0b0001_0111, three leading zeros.
    assert_eq!(key_level(b"a"), 1);
    assert_eq!(key_level(b"b"), 1);
    // blake3("doc-1") = bbe6…
    assert_eq!(key_level(b"doc-1"), 0);
    // blake3("node-39") = 036f…: six leading zeros. The first `node-{i}` of level >= 2.
    assert_eq!(key_level(b"node-39"), 2);
    assert_eq!(
        (0..10_000)
            .find(|i| key_level(format!("node-{i}").as_bytes()) >= 2)
            .unwrap(),
        39
    );
    // blake3("node-1654") = 007c…: nine leading zeros.
    assert_eq!(key_level(b"node-1654"), 3);
    // blake3("node-1287") = 000c…: twelve leading zeros.
    assert_eq!(key_level(b"node-1287"), 4);
    for k in [&b""[..], b"a", b"b", b"doc-1", b"node-39", b"node-1654", b"node-1287"] {
        assert_eq!(key_level(k), level_by_hand(k), "{k:?}");
    }
    for i in 0..5_000 {
        let k = format!("node-{i}");
        assert_eq!(key_level(k.as_bytes()), level_by_hand(k.as_bytes()), "{k}");
    }
    // Levels of the 1,000 keys of the pinned tree.
    let mut histogram = BTreeMap::new();
    for (k, _) in entries_1000() {
        *histogram.entry(key_level(&k)).or_insert(0) += 1;
    }
    assert_eq!(histogram, BTreeMap::from([(0, 864), (1, 117), (2, 18), (4, 1)]));
}

#[test]
fn root_of_1000_keys_is_pinned() {
    let (store, objs) = objects();
    let entries = entries_1000();
    let mut out = PendingWrites::new();
    let root = mst::build(&entries, &mut out).unwrap();
    assert_eq!(out.len(), TREE_NODES_1000);
    assert_eq!(out.byte_len(), TREE_BYTES_1000);
    flush(&store, out);
    assert_eq!(root.to_hex(), ROOT_1000);

    // The root holds the one level-4 key; every stored object is a tree node whose hash
    // is blake3 over its bytes, and whose keys all have the node's level.
    let top = objs.tree(&root).unwrap();
    assert_eq!(top.level, 4);
    assert_eq!(top.entries.len(), 1);
    assert_eq!(key_level(&top.entries[0].key), 4);
    let hashes = store.object_hashes().unwrap();
    assert_eq!(hashes.len(), TREE_NODES_1000);
    for h in hashes {
        let bytes = store.get(&h).unwrap().unwrap();
        assert_eq!(bytes[0], TAG_TREE);
        assert_eq!(codec::hash_object(&bytes), h);
        let t = codec::decode_tree(&bytes).unwrap();
        assert!(t.entries.iter().all(|e| key_level(&e.key) == t.level));
    }

    // Every key is found, in order.
    let mut seen = Vec::new();
    mst::for_each(&objs, Some(root), &mut |k, v| {
        seen.push((k.to_vec(), *v));
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, entries);
}

/// History independence: the same key set gives the same root whatever the order and
/// batching of the writes that produced it.
#[test]
fn same_root_whatever_the_order_of_writes() {
    let (store, objs) = objects();
    let entries = entries_1000();
    let want = Hash::from_hex(ROOT_1000).unwrap();

    // Reverse order, batches of 37, path copying (no length hint).
    let mut root = None;
    let reversed: Vec<_> = entries.iter().rev().collect();
    for batch in reversed.chunks(37) {
        let muts: BTreeMap<Vec<u8>, Mutation> = batch.iter().map(|(k, v)| (k.clone(), Mutation::Put(*v))).collect();
        let mut out = PendingWrites::new();
        root = mst::apply(&objs, root, &muts, None, &mut out).unwrap();
        flush(&store, out);
    }
    assert_eq!(root, Some(want));

    // Extra keys put then deleted, interleaved with no-op puts, in other batches.
    let extra: Vec<Vec<u8>> = (0..300).map(|i| format!("extra-{i}").into_bytes()).collect();
    for batch in extra.chunks(50) {
        let muts: BTreeMap<_, _> = batch.iter().map(|k| (k.clone(), Mutation::Put(Hash::of(k)))).collect();
        let mut out = PendingWrites::new();
        root = mst::apply(&objs, root, &muts, None, &mut out).unwrap();
        flush(&store, out);
    }
    assert_ne!(root, Some(want));
    for (i, batch) in extra.chunks(70).enumerate() {
        let mut muts: BTreeMap<_, _> = batch.iter().map(|k| (k.clone(), Mutation::Delete)).collect();
        let (k, v) = &entries[i * 100];
        muts.insert(k.clone(), Mutation::Put(*v)); // unchanged value: a no-op
        let mut out = PendingWrites::new();
        root = mst::apply(&objs, root, &muts, None, &mut out).unwrap();
        flush(&store, out);
    }
    assert_eq!(root, Some(want));

    // One batch over an empty tree (the rebuild path).
    let muts: BTreeMap<_, _> = entries.iter().map(|(k, v)| (k.clone(), Mutation::Put(*v))).collect();
    let mut out = PendingWrites::new();
    let rebuilt = mst::apply(&objs, None, &muts, Some(0), &mut out).unwrap();
    assert_eq!(rebuilt, Some(want));

    // Every tree node reachable from the root is one the one-shot build writes.
    let mut built = PendingWrites::new();
    mst::build(&entries, &mut built);
    let built_store = MemoryStore::new();
    flush(&built_store, built);
    let built_hashes: BTreeSet<Hash> = built_store.object_hashes().unwrap().into_iter().collect();
    let mut stack = vec![want];
    let mut reachable = BTreeSet::new();
    while let Some(h) = stack.pop() {
        reachable.insert(h);
        let t = objs.tree(&h).unwrap();
        stack.extend(t.left);
        stack.extend(t.entries.iter().filter_map(|e| e.right));
    }
    assert_eq!(reachable, built_hashes);
}

/// The node tree of a commit holding only `Node::new("a")`: one tree node, level 1.
#[test]
fn tree_of_one_node_is_pinned() {
    let node = codec::encode_node(&Node::new(NodeId::new("a").unwrap()));
    let mut out = PendingWrites::new();
    let root = mst::build(&[(b"a".to_vec(), codec::hash_object(&node))], &mut out).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(root.to_hex(), ROOT_OF_A);
    assert_eq!(mst::build(&[], &mut PendingWrites::new()), None);
}
