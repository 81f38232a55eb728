//! Core parts (`persist::encode_node_core`, storage-format §7.3.1): a checksummed head,
//! then the texts. The bytes are pinned; the head alone — what a process that leaves the
//! texts in the store reads — gives every column, and each text read back by range is
//! checked against its crc32 from the head, a damaged one read from its node instead.

mod common;

use std::sync::Arc;

use cairn_core::{Hash, Node, NodeId, SparseVector};
use cairn_index::persist::{self, CORE_PREFIX};
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

fn core() -> NodeChunk {
    let nodes = nodes();
    let refs: Vec<(Hash, &Node)> = nodes.iter().map(|(h, n)| (*h, n)).collect();
    ChunkParts::build(&IndexParams::default(), &refs).core
}

/// Golden: a core part's bytes (storage-format §7.3.1) are pinned, and its layout is the
/// documented one — the head's length and crc32 after the key, the texts last.
#[test]
fn core_part_bytes_are_pinned() {
    let key = Hash::of(b"golden core");
    let bytes = persist::encode_node_core(&key, &core());
    let head_len = u32::from_le_bytes(bytes[33..37].try_into().unwrap()) as usize;
    let crc = u32::from_le_bytes(bytes[37..41].try_into().unwrap());
    assert_eq!(crc, crc32fast::hash(&bytes[CORE_PREFIX..CORE_PREFIX + head_len]));
    assert_eq!(
        persist::core_head_len(&bytes[..CORE_PREFIX]).unwrap(),
        CORE_PREFIX + head_len
    );
    let texts: String = nodes().iter().map(|(_, n)| n.text.as_str()).collect();
    assert_eq!(&bytes[CORE_PREFIX + head_len..], texts.as_bytes());
    assert_eq!(
        (bytes.len(), head_len, Hash::of(&bytes).to_hex()),
        (GOLDEN_LEN, GOLDEN_HEAD, GOLDEN_HASH.to_string())
    );
}

const GOLDEN_LEN: usize = 674;
const GOLDEN_HEAD: usize = 566;
const GOLDEN_HASH: &str = "74f469dd7fc5393f55f771d8ebe7502c17c718d9b0af0968124c800fbd3f796e";

/// The head alone gives the same columns as the whole value; texts are read by range,
/// checked, and a damaged one comes from its node with the damage reported.
#[test]
fn the_head_alone_serves_and_texts_are_checked_when_read() {
    let key = Hash::of(b"core");
    let whole_core = core();
    let bytes = persist::encode_node_core(&key, &whole_core);
    let whole = persist::decode_node_core(&bytes, &key).unwrap();
    assert_eq!(persist::encode_node_core(&key, &whole), bytes);
    let source = Arc::new(OneValue {
        value: Mutex::new(bytes.clone()),
        texts: nodes().into_iter().map(|(h, n)| (h, n.text)).collect(),
        ..OneValue::default()
    });
    let head = persist::core_head_len(&bytes[..CORE_PREFIX]).unwrap();
    let stored = persist::decode_node_core_texts_stored(&bytes[..head], &key, source.clone(), b"k").unwrap();
    assert!(!stored.texts_in_memory());
    assert_eq!(stored.ids(), whole.ids());
    for l in 0..whole.len() as u32 {
        assert_eq!(stored.text(l).unwrap(), whole.text(l).unwrap());
        assert_eq!(stored.text_chars(l), whole.text_chars(l));
        assert_eq!(stored.text_dates(l), whole.text_dates(l));
    }
    // The same bytes re-encoded from the stored texts.
    assert_eq!(persist::encode_node_core(&key, &stored), bytes);
    assert!(source.damaged.lock().is_empty());
    // Damage node c1's text ("wing stall in 1987") in the stored value: the head still
    // holds, the text's crc32 does not.
    let after_c0: usize = nodes()[1..].iter().map(|(_, n)| n.text.len()).sum();
    let at = bytes.len() - after_c0;
    source.value.lock()[at] ^= 0x20;
    assert_eq!(stored.text(1).unwrap(), "wing stall in 1987");
    let damaged = source.damaged.lock().clone();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    assert!(
        damaged[0].contains("c1") && damaged[0].contains("fails its checksum"),
        "{damaged:?}"
    );
    // Read whole, the same damage is refused.
    let flipped = source.value.lock().clone();
    assert!(persist::decode_node_core(&flipped, &key).is_err());
}

/// Every truncation and every bit flip of a core part is refused, or decodes to what
/// re-encodes to the same bytes; a flip in the head is refused read by range too.
#[test]
fn damage_to_a_core_part_is_refused() {
    let key = Hash::of(b"core");
    let bytes = persist::encode_node_core(&key, &core());
    for len in 0..bytes.len() {
        assert!(
            persist::decode_node_core(&bytes[..len], &key).is_err(),
            "truncated to {len}"
        );
    }
    let head = persist::core_head_len(&bytes[..CORE_PREFIX]).unwrap();
    let source: Arc<dyn RowSource> = Arc::new(OneValue::default());
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            if let Ok(c) = persist::decode_node_core(&b, &key) {
                assert_eq!(persist::encode_node_core(&key, &c), b, "byte {i} bit {bit}");
            }
            if i < head {
                let len = persist::core_head_len(&b[..CORE_PREFIX]).unwrap_or(0);
                let read = b.get(..len).unwrap_or(&b);
                assert!(
                    persist::decode_node_core_texts_stored(read, &key, Arc::clone(&source), b"k").is_err(),
                    "head byte {i} bit {bit}"
                );
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
        let decoded = persist::decode_node_core(&persist::encode_node_core(&key, &built), &key).unwrap();
        assert_eq!(decoded, built, "first = {first}");
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
