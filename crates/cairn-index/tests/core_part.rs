//! Core parts (`persist::encode_node_core`, storage-format §7.3.1) and dense parts
//! (§7.3.4), whose texts and rows stay in their node objects, and sparse parts (§7.3.3).
//! The bytes of all three are pinned; the head alone — what a process that leaves the
//! texts in the store reads — gives every column, and each text read back by range is
//! checked against its crc32 from the head, a damaged one read from its node instead.

mod common;

use std::sync::Arc;

use cairn_core::{Hash, Node, NodeId, SparseVector};
use cairn_index::persist::{self, Checked, CORE_PREFIX};
use cairn_index::{ChunkParts, IndexParams, NodeChunk, RowSource};
use common::OneValue;
use parking_lot::Mutex;

/// Five nodes using every core column: labels, properties, texts (empty, multibyte, with
/// dates), dense and sparse vectors.
fn nodes() -> Vec<(Hash, Node)> {
    let texts = [
        "",
        "wing stall in 1987",
        "Überschall — Mach 2",
        "the flow of 3 May 2021",
        "plate",
    ];
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let id = format!("c{i}");
            let mut n = Node::new(NodeId::new(id.clone()).unwrap())
                .with_text(*t)
                .with_label(if i % 2 == 0 { "Even" } else { "Odd" })
                .with_prop("i", i as i64);
            if i != 2 {
                n = n.with_embedding("m", vec![i as f32, 1.0, -0.5]);
            }
            if i % 2 == 1 {
                n = n.with_sparse("s", SparseVector::new(vec![3, 7], vec![0.5, 1.5]));
            }
            (Hash::of(id.as_bytes()), n)
        })
        .collect()
}

/// Every part of the chunk of [`nodes`].
fn parts() -> ChunkParts {
    let nodes = nodes();
    let refs: Vec<(Hash, &Node)> = nodes.iter().map(|(h, n)| (*h, n)).collect();
    ChunkParts::build(&IndexParams::default(), &refs)
}

fn core() -> NodeChunk {
    parts().core
}

/// The chunk's nodes' objects, as a source reads them.
fn source() -> Arc<OneValue> {
    Arc::new(OneValue {
        objects: Mutex::new(
            nodes()
                .iter()
                .map(|(h, n)| (*h, cairn_core::codec::encode_node(n)))
                .collect(),
        ),
        texts: nodes().into_iter().map(|(h, n)| (h, n.text)).collect(),
        ..OneValue::default()
    })
}

/// Golden: a core part's bytes (storage-format §7.3.1) are pinned, and its layout is the
/// documented one — the head's length and crc32 after the key, nothing after the head;
/// each text's row says where its node object holds it.
#[test]
fn core_part_bytes_are_pinned() {
    let key = Hash::of(b"golden core");
    let core = core();
    let bytes = persist::encode_node_core(&key, &core);
    let head_len = u32::from_le_bytes(bytes[33..37].try_into().unwrap()) as usize;
    let crc = u32::from_le_bytes(bytes[37..41].try_into().unwrap());
    assert_eq!(bytes.len(), CORE_PREFIX + head_len);
    assert_eq!(crc, crc32fast::hash(&bytes[CORE_PREFIX..]));
    for (l, (h, n)) in nodes().iter().enumerate() {
        let (node, offset) = core.text_place(l as u32);
        assert_eq!(node, *h);
        let object = cairn_core::codec::encode_node(n);
        let at = offset as usize;
        assert_eq!(&object[at..at + n.text.len()], n.text.as_bytes());
    }
    assert_eq!(
        (bytes.len(), head_len, Hash::of(&bytes).to_hex()),
        (GOLDEN_LEN, GOLDEN_HEAD, GOLDEN_HASH.to_string())
    );
}

const GOLDEN_LEN: usize = 627;
const GOLDEN_HEAD: usize = 586;
const GOLDEN_HASH: &str = "e68f9370c056f4f372d4217fe43d83975285d650dade1b7b341b04f31ecd7ca8";

/// Golden: a dense part's bytes (storage-format §7.3.4) are pinned, and its layout is the
/// documented one — no vector stored; each row names its node object and the offset of
/// its vector in the object's encoding, where the row's crc32 holds; each row's codes have
/// their own crc32; the head's checksum covers every byte before the codes, which end the
/// part.
#[test]
fn dense_part_bytes_are_pinned() {
    let nodes = nodes();
    let parts = parts();
    let key = Hash::of(b"golden dense");
    let bytes = persist::encode_dense(&key, "m", nodes.len() as u32, &parts.dense["m"]);
    let (model, n, head) = persist::decode_dense(&bytes, &key).unwrap();
    assert_eq!(
        (model.as_str(), n as usize, head.len()),
        ("m", nodes.len(), nodes.len() - 1)
    );
    let rows = head.len();
    // After the tag, key, `str("m")` and the three counts: locals, scales, bounds, crcs.
    let crcs_at = 1 + 32 + 9 + 12 + 16 * rows;
    for r in 0..rows {
        let (node, offset) = head.row_place(r).unwrap();
        let (_, n) = nodes.iter().find(|(h, _)| *h == node).unwrap();
        let object = cairn_core::codec::encode_node(n);
        let vector = &object[offset as usize..offset as usize + 3 * 4];
        let crc = u32::from_le_bytes(bytes[crcs_at + 4 * r..crcs_at + 4 * r + 4].try_into().unwrap());
        assert_eq!(crc, crc32fast::hash(vector), "row {r}");
        let want: Vec<u8> = n.embeddings["m"].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(vector, want.as_slice());
    }
    let codes_at = bytes.len() - 3 * rows;
    let code_crcs_at = crcs_at + 4 * rows;
    for r in 0..rows {
        let crc = u32::from_le_bytes(
            bytes[code_crcs_at + 4 * r..code_crcs_at + 4 * r + 4]
                .try_into()
                .unwrap(),
        );
        assert_eq!(
            crc,
            crc32fast::hash(&bytes[codes_at + 3 * r..codes_at + 3 * r + 3]),
            "row {r}"
        );
    }
    let end = codes_at - 4;
    assert_eq!(
        &bytes[end..codes_at],
        crc32fast::hash(&bytes[..end]).to_le_bytes().as_slice()
    );
    assert_eq!(
        (bytes.len(), Hash::of(&bytes).to_hex()),
        (GOLDEN_DENSE_LEN, GOLDEN_DENSE_HASH.to_string())
    );
}

/// 54 bytes before the rows (tag, key, `str("m")`, three counts), 4 rows of 60 bytes, the
/// head checksum, then 3 codes a row.
const GOLDEN_DENSE_LEN: usize = 310;
const GOLDEN_DENSE_HASH: &str = "5b63935ca0f6f6b8936ee73f5b5fbe79a055234703d3a78392380930b999366f";

/// A decoded part reads each text from its node object by range, checked by its crc32,
/// and re-encodes to the same bytes; a damaged text comes from its node read whole, with
/// the damage reported.
#[test]
fn texts_are_read_from_their_nodes_and_checked() {
    let key = Hash::of(b"core");
    let built = core();
    let bytes = persist::encode_node_core(&key, &built);
    let source = source();
    let stored = persist::decode_node_core(&bytes, &key, source.clone(), b"k").unwrap();
    assert!(!stored.texts_in_memory() && built.texts_in_memory());
    assert_eq!(stored.ids(), built.ids());
    for l in 0..built.len() as u32 {
        assert_eq!(stored.text(l).unwrap(), built.text(l).unwrap());
        assert_eq!(stored.text_chars(l), built.text_chars(l));
        assert_eq!(stored.text_dates(l), built.text_dates(l));
    }
    assert_eq!(persist::encode_node_core(&key, &stored), bytes);
    assert!(source.damaged.lock().is_empty());
    // Damage node c1's text ("wing stall in 1987") in its object: the part still holds,
    // the text's crc32 does not.
    let (_, at) = built.text_place(1);
    source.objects.lock()[1].1[at as usize] ^= 0x20;
    assert_eq!(stored.text(1).unwrap(), "wing stall in 1987");
    let damaged = source.damaged.lock().clone();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    assert!(
        damaged[0].contains("c1") && damaged[0].contains("fails its checksum"),
        "{damaged:?}"
    );
}

/// A part decoded from a shared value (`decode_node_core_shared`) reads its object hashes
/// and text table where the value lies: it equals the part decoded by copy, reads the same
/// texts and places, re-encodes to the same bytes, refuses what the copy refuses, and its
/// charge is not smaller than the bytes it keeps. Decoded as a value its store checked
/// (`Checked::ByStore`: the head's checksum not computed again) it is the same part.
#[test]
fn a_shared_core_part_reads_hashes_and_texts_in_place() {
    let key = Hash::of(b"core");
    let built = core();
    let bytes = persist::encode_node_core(&key, &built);
    let source = source();
    let copied = persist::decode_node_core(&bytes, &key, source.clone(), b"k").unwrap();
    let shared = bytes::Bytes::from(bytes.clone());
    let in_place = persist::decode_node_core_shared(&shared, &key, source.clone(), b"k", Checked::No).unwrap();
    assert_eq!(in_place, copied);
    let by_store = persist::decode_node_core_shared(&shared, &key, source.clone(), b"k", Checked::ByStore).unwrap();
    assert_eq!(by_store, copied);
    for (l, (h, _)) in nodes().iter().enumerate() {
        let l = l as u32;
        assert_eq!(in_place.hash(l), *h);
        assert_eq!(in_place.text_place(l), copied.text_place(l));
        assert_eq!(in_place.text(l).unwrap(), built.text(l).unwrap());
        assert_eq!(in_place.text_chars(l), built.text_chars(l));
    }
    assert_eq!(persist::encode_node_core(&key, &in_place), bytes);
    assert!(in_place.heap_bytes() >= bytes.len() - CORE_PREFIX);
    assert!(source.damaged.lock().is_empty());
    let src: Arc<dyn RowSource> = Arc::new(OneValue::default());
    for i in 33..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x08;
        let b = bytes::Bytes::from(b);
        assert!(
            persist::decode_node_core_shared(&b, &key, Arc::clone(&src), b"k", Checked::No).is_err(),
            "byte {i}"
        );
    }
}

/// Every truncation and every bit flip of a core part is refused, or decodes to what
/// re-encodes to the same bytes.
#[test]
fn damage_to_a_core_part_is_refused() {
    let key = Hash::of(b"core");
    let bytes = persist::encode_node_core(&key, &core());
    let source: Arc<dyn RowSource> = Arc::new(OneValue::default());
    for len in 0..bytes.len() {
        assert!(
            persist::decode_node_core(&bytes[..len], &key, Arc::clone(&source), b"k").is_err(),
            "truncated to {len}"
        );
    }
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            if let Ok(c) = persist::decode_node_core(&b, &key, Arc::clone(&source), b"k") {
                assert_eq!(persist::encode_node_core(&key, &c), b, "byte {i} bit {bit}");
            }
            // Past the key, the head's checksum holds every byte.
            if i >= 33 {
                assert!(persist::check_node_core(&b, &key).is_err(), "byte {i} bit {bit}");
            }
        }
    }
}

/// A chunk keeps no validity column while every node is always valid, and no date ends
/// while no text mentions a date; the columns read the same either way, and a part decodes
/// to the chunk it was built from — whichever node is the first with bounds or dates.
#[test]
fn sparse_validity_and_dates_read_back_at_every_position() {
    use cairn_core::Validity;
    for first in 0..4 {
        let nodes: Vec<(Hash, Node)> = (0..4)
            .map(|i| {
                let id = format!("v{i}");
                let mut n = Node::new(NodeId::new(id.clone()).unwrap()).with_text("plain");
                if i == first {
                    n = n
                        .with_validity(Validity::new(Some(10), Some(20)))
                        .with_text("In 1950 and in 1940.");
                }
                (Hash::of(id.as_bytes()), n)
            })
            .collect();
        let refs: Vec<(Hash, &Node)> = nodes.iter().map(|(h, n)| (*h, n)).collect();
        let built = ChunkParts::build(&IndexParams::default(), &refs).core;
        let key = Hash::of(b"sparse columns");
        let objects = Arc::new(OneValue::default());
        let decoded =
            persist::decode_node_core(&persist::encode_node_core(&key, &built), &key, objects.clone(), b"k").unwrap();
        let mut stored = built.clone();
        stored.leave_texts_stored(objects, b"k");
        assert_eq!(decoded, stored, "first = {first}");
        for c in [&built, &decoded] {
            for l in 0..4u32 {
                let open = (i64::MIN, i64::MAX);
                let want = if l as usize == first { (10, 20) } else { open };
                assert_eq!(c.validity(l), want, "first = {first}, local {l}");
                assert_eq!(
                    c.text_dates(l).is_empty(),
                    l as usize != first,
                    "first = {first}, local {l}"
                );
            }
        }
    }
    let open: Vec<(Hash, Node)> = (0..3)
        .map(|i| {
            let id = format!("o{i}");
            (
                Hash::of(id.as_bytes()),
                Node::new(NodeId::new(id).unwrap()).with_text("plain"),
            )
        })
        .collect();
    let refs: Vec<(Hash, &Node)> = open.iter().map(|(h, n)| (*h, n)).collect();
    let built = ChunkParts::build(&IndexParams::default(), &refs).core;
    assert!((0..3).all(|l| built.validity(l) == (i64::MIN, i64::MAX) && built.text_dates(l).is_empty()));
}

/// Golden: a sparse part's bytes (storage-format §7.3.3, index format 8) are pinned whole:
/// the model, the chunk's node count, the nodes with a vector, then per dimension its
/// number, a varint count and each posting as a two-byte local and an `f32` weight; and
/// they decode back to the part.
#[test]
fn sparse_part_bytes_are_pinned() {
    let parts = parts();
    let key = Hash::of(b"golden sparse");
    let bytes = persist::encode_sparse(&key, "s", nodes().len() as u32, &parts.sparse["s"]);
    let (model, decoded) = persist::decode_sparse(&bytes, &key).unwrap();
    assert_eq!((model.as_str(), &decoded), ("s", &parts.sparse["s"]));
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, GOLDEN_SPARSE);
}

const GOLDEN_SPARSE: &str = "c334ceb92b2fad23afbe82aef4a045e39e6167b4664c10046e2b188393c7200bf2010000000000000073050000000200000001000000030000000200000000000000030000000201000000003f03000000003f070000000201000000c03f03000000c03f";
