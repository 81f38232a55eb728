//! Unit texts (`cairn_index::unit_text`): the postings of a unit's chunks regrouped by
//! term. They give back every chunk's part exactly, answer every term as the chunks do,
//! read the same by range as whole, refuse damage (never panic), and a view whose stored
//! unit text is damaged answers from the node texts, the same hits, and says so.

mod common;

use std::sync::Arc;

use cairn_core::{Hash, Node, NodeId};
use cairn_index::unit_text::{encode_unit_text, TermPostings};
use cairn_index::{CommitIndexes, IndexParams, TextChunk, TextUnit, UnitText};
use common::OneValue;
use parking_lot::Mutex;

const WORDS: [&str; 12] = [
    "wing", "stall", "flow", "layer", "boundary", "shock", "lift", "drag", "heat", "mach", "plate", "jet",
];

/// `n` nodes `p0000…` with texts drawn from [`WORDS`] by a fixed xorshift.
fn nodes(n: u32, seed: u64) -> Vec<(Hash, Node)> {
    let mut rng = cairn_testkit::Rng(seed);
    (0..n)
        .map(|i| {
            let words: Vec<&str> = (0..1 + i % 9)
                .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
                .collect();
            let id = format!("p{i:04}");
            (
                Hash::of(id.as_bytes()),
                Node::new(NodeId::new(id).unwrap()).with_text(words.join(" ")),
            )
        })
        .collect()
}

/// A view of `nodes` given every chunk's text part.
fn view(nodes: &[(Hash, Node)]) -> CommitIndexes {
    CommitIndexes::build(Hash::ZERO, &IndexParams::default(), nodes, &[])
}

fn parts(v: &CommitIndexes) -> Vec<Arc<TextChunk>> {
    (0..v.chunks().len())
        .map(|c| Arc::clone(v.text_part(c).unwrap()))
        .collect()
}

/// The unit text of `parts` under `key`.
fn encoded(key: &Hash, parts: &[Arc<TextChunk>]) -> Vec<u8> {
    let refs: Vec<&TextChunk> = parts.iter().map(|p| p.as_ref()).collect();
    encode_unit_text(key, &refs)
}

fn every_term(parts: &[Arc<TextChunk>]) -> Vec<String> {
    let mut t: Vec<String> = parts
        .iter()
        .flat_map(|p| {
            WORDS
                .iter()
                .filter(|w| !p.postings(&stem(w)).is_empty())
                .map(|w| stem(w))
        })
        .collect();
    t.sort();
    t.dedup();
    t
}

fn stem(w: &str) -> String {
    let mut out = String::new();
    IndexParams::default()
        .bm25
        .analyzer
        .for_each_term(w, |t| out = t.to_string());
    out
}

/// A term's postings per chunk as the chunks' own parts hold them.
fn by_chunks(parts: &[Arc<TextChunk>], term: &str) -> Vec<(usize, Vec<(u32, u32)>)> {
    parts
        .iter()
        .enumerate()
        .map(|(j, p)| {
            (
                j,
                p.postings(term).iter().map(|q| (q.local(), q.tf())).collect::<Vec<_>>(),
            )
        })
        .filter(|(_, l)| !l.is_empty())
        .collect()
}

fn flat(p: &TermPostings) -> Vec<(usize, Vec<(u32, u32)>)> {
    p.chunks()
        .map(|(j, l)| (j, l.iter().map(|q| (q.local(), q.tf())).collect()))
        .collect()
}

#[test]
fn a_unit_text_gives_back_every_chunk_part_and_every_term() {
    let v = view(&nodes(900, 7));
    let parts = parts(&v);
    assert!(parts.len() > 5, "{} chunks", parts.len());
    let key = Hash::of(b"unit");
    let bytes = encoded(&key, &parts);
    let whole = UnitText::open(bytes.clone(), &key).unwrap();
    let source = Arc::new(OneValue {
        value: Mutex::new(bytes.clone()),
        ..OneValue::default()
    });
    let ranged = UnitText::open_stored(source.clone(), b"k", &key).unwrap().unwrap();
    assert!(ranged.is_stored() && !whole.is_stored());
    for u in [&whole, &ranged] {
        let back = u.chunk_texts().unwrap();
        assert_eq!(back.len(), parts.len());
        for (a, b) in back.iter().zip(&parts) {
            assert!(a == b.as_ref(), "a chunk part differs");
        }
        for t in every_term(&parts) {
            assert_eq!(flat(&u.postings(&t).unwrap().unwrap()), by_chunks(&parts, &t), "{t}");
        }
        for absent in ["", "a", "zzz", "wingz", "boundar"] {
            assert_eq!(u.postings(absent).unwrap(), None, "{absent}");
        }
    }
    // Terms read again come from the unit's memory of what it read, the same postings.
    let reads = source.reads.load(std::sync::atomic::Ordering::Relaxed);
    for t in every_term(&parts).iter().map(String::as_str).chain(["zzz", "wingz"]) {
        let again = ranged.postings(t).unwrap();
        assert_eq!(
            again.as_deref().map(flat),
            whole.postings(t).unwrap().as_deref().map(flat),
            "{t}"
        );
    }
    assert_eq!(source.reads.load(std::sync::atomic::Ordering::Relaxed), reads);
    // Another key is refused.
    assert!(UnitText::open(bytes, &Hash::of(b"other")).is_err());
    assert!(source.damaged.lock().is_empty());
}

#[test]
fn damaged_unit_texts_are_refused_never_read_as_data() {
    let v = view(&nodes(300, 11));
    let parts = parts(&v);
    let key = Hash::of(b"unit");
    let bytes = encoded(&key, &parts);
    let terms = every_term(&parts);
    // Every byte flipped in turn (a stride through large values): the whole-value open
    // refuses it; a ranged read refuses it at open or at the lookups that read it.
    let stride = (bytes.len() / 1500).max(1);
    for at in (0..bytes.len()).step_by(stride) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x5a;
        assert!(
            UnitText::open(bad.clone(), &key).is_err(),
            "byte {at} flipped was accepted"
        );
        let source = Arc::new(OneValue {
            value: Mutex::new(bad),
            ..OneValue::default()
        });
        if let Ok(Some(u)) = UnitText::open_stored(source, b"k", &key) {
            let all_read = terms.iter().all(|t| u.postings(t).is_ok()) && u.chunk_texts().is_ok();
            assert!(!all_read, "byte {at} flipped was read as data");
        }
    }
    for len in [0, 1, 33, 40, 41, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            UnitText::open(bytes[..len].to_vec(), &key).is_err(),
            "truncated to {len}"
        );
    }
}

#[test]
fn a_damaged_stored_unit_is_answered_from_the_node_texts_and_reported() {
    let content = nodes(700, 5);
    let fresh = view(&content);
    let parts = parts(&fresh);
    let key = Hash::of(b"unit");
    let bytes = encoded(&key, &parts);
    let head = 41 + u32::from_le_bytes(bytes[33..37].try_into().unwrap()) as usize;
    let mut served = fresh.clone();
    let source = Arc::new(OneValue {
        value: Mutex::new(bytes.clone()),
        ..OneValue::default()
    });
    let unit = UnitText::open_stored(source.clone(), b"k", &key).unwrap().unwrap();
    let all: Vec<Option<usize>> = (0..parts.len()).map(Some).collect();
    served
        .set_text_units(
            vec![TextUnit {
                text: Arc::new(unit),
                chunks: all,
            }],
            vec![None; parts.len()],
            None,
        )
        .unwrap();
    let queries = ["wing stall", "flow boundary layer", "mach jet jet"];
    for q in queries {
        assert_eq!(
            served.text_search(q, 9, None).unwrap(),
            fresh.text_search(q, 9, None).unwrap()
        );
    }
    assert!(source.damaged.lock().is_empty());
    // Every block and posting list damaged (a unit opened anew: the first one keeps what
    // it read in memory): the same answers, each query reporting it.
    for b in &mut source.value.lock()[head..] {
        *b ^= 0xff;
    }
    let unit = UnitText::open_stored(source.clone(), b"k", &key).unwrap().unwrap();
    served
        .set_text_units(
            vec![TextUnit {
                text: Arc::new(unit),
                chunks: (0..parts.len()).map(Some).collect(),
            }],
            vec![None; parts.len()],
            None,
        )
        .unwrap();
    for q in queries {
        assert_eq!(
            served.text_search(q, 9, None).unwrap(),
            fresh.text_search(q, 9, None).unwrap()
        );
    }
    let damaged = source.damaged.lock().clone();
    assert_eq!(damaged.len(), queries.len(), "{damaged:?}");
    assert!(damaged.iter().all(|d| d.contains("checksum")), "{damaged:?}");
}

#[test]
fn a_view_served_by_an_older_unit_with_gone_and_own_chunks_equals_a_fresh_build() {
    // The base: 800 nodes. The view: 200 of them deleted, 15 edited, 100 added.
    let base_nodes = nodes(800, 3);
    let base = view(&base_nodes);
    let base_parts = parts(&base);
    let key = Hash::of(b"base unit");
    let unit = Arc::new(UnitText::open(encoded(&key, &base_parts), &key).unwrap());
    let mut now: Vec<(Hash, Node)> = base_nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| !(300..500).contains(i))
        .map(|(i, (h, n))| {
            if (600..700).contains(&i) && i % 7 == 0 {
                let n = n.clone().with_text(format!("{} heat heat plate", n.text));
                (Hash::of(n.text.as_bytes()), n)
            } else {
                (*h, n.clone())
            }
        })
        .collect();
    now.extend(nodes(900, 9).into_iter().skip(800));
    let fresh = view(&now);
    let now_parts = parts(&fresh);
    // A base chunk maps onto the view's chunk with the same content (its parts equal).
    let chunks: Vec<Option<usize>> = base_parts
        .iter()
        .enumerate()
        .map(|(j, b)| {
            (0..now_parts.len())
                .find(|&c| now_parts[c].as_ref() == b.as_ref() && fresh.chunks()[c].ids() == base.chunks()[j].ids())
        })
        .collect();
    let mapped: Vec<usize> = chunks.iter().flatten().copied().collect();
    assert!(!mapped.is_empty() && mapped.len() < base_parts.len(), "{mapped:?}");
    let own: Vec<Option<Arc<TextChunk>>> = (0..now_parts.len())
        .map(|c| (!mapped.contains(&c)).then(|| Arc::clone(&now_parts[c])))
        .collect();
    let mut served = fresh.clone();
    served
        .set_text_units(vec![TextUnit { text: unit, chunks }], own, None)
        .unwrap();
    let label_free = fresh.filter_of((0..fresh.node_count()).step_by(3));
    for q in ["wing stall", "heat plate", "flow boundary layer drag", "jet", "nothing"] {
        for f in [None, Some(&label_free)] {
            for k in [1, 5, 40, 1000] {
                let want = fresh.text_search(q, k, f).unwrap();
                assert_eq!(served.text_search(q, k, f).unwrap(), want, "{q} {k}");
                assert_eq!(served.text_search_reference(q, k, f), want, "{q} {k}");
            }
        }
    }
    assert_eq!(served.digest(), fresh.digest());
    // A chunk mapped twice, or a view chunk left without postings, is refused.
    let mut twice = fresh.clone();
    let all: Vec<Option<Arc<TextChunk>>> = now_parts.iter().cloned().map(Some).collect();
    let unit2 = Arc::new(UnitText::open(encoded(&key, &base_parts), &key).unwrap());
    let chunks2: Vec<Option<usize>> = (0..base_parts.len()).map(|j| (j < 2).then_some(0)).collect();
    assert!(twice
        .set_text_units(
            vec![TextUnit {
                text: unit2,
                chunks: chunks2
            }],
            all,
            None
        )
        .is_err());
    assert!(twice
        .set_text_units(Vec::new(), vec![None; now_parts.len()], None)
        .is_err());
}

/// Golden: the bytes of a unit text (storage-format §7.3.9) are pinned.
#[test]
fn unit_text_bytes_are_pinned() {
    let v = view(&nodes(150, 1));
    let parts = parts(&v);
    let bytes = encoded(&Hash::of(b"golden unit"), &parts);
    assert_eq!(
        (parts.len(), bytes.len(), Hash::of(&bytes).to_hex()),
        (GOLDEN_CHUNKS, GOLDEN_LEN, GOLDEN_HASH.to_string())
    );
}

const GOLDEN_CHUNKS: usize = 3;
const GOLDEN_LEN: usize = 3776;
const GOLDEN_HASH: &str = "76a916101e9946424b6539df62d6b44844fbdfe29d6f3cceb5cfa9bb1228eaaf";

/// Golden: the bytes of a chunk's BM25 part (storage-format §7.3.2) are pinned, and they
/// decode back to the part.
#[test]
fn text_part_bytes_are_pinned() {
    let v = view(&nodes(150, 1));
    let key = Hash::of(b"golden text");
    let mut all = Vec::new();
    let mut lens = Vec::new();
    for p in parts(&v) {
        let bytes = cairn_index::persist::encode_text(&key, &p);
        assert_eq!(&cairn_index::persist::decode_text(&bytes, &key).unwrap(), p.as_ref());
        lens.push(bytes.len());
        all.extend_from_slice(&bytes);
    }
    assert_eq!(
        (lens, Hash::of(&all).to_hex()),
        (GOLDEN_TEXT_LENS.to_vec(), GOLDEN_TEXT_HASH.to_string())
    );
}

const GOLDEN_TEXT_LENS: [usize; 3] = [1216, 1616, 572];
const GOLDEN_TEXT_HASH: &str = "c7e2af056a761df8f6b95747f85faa17d0ca1f9ae537ea4f6817e391d704b1c8";
