//! Whole-bundle behaviour: filters inside the search, typed errors, persistence, and (ignored
//! by default) build/derive timings at 100,000 nodes.

use std::time::{Duration, Instant};

use cairn_core::codec::{encode_node, hash_object};
use cairn_core::{Edge, Hash, Node, NodeId, SparseVector};
use cairn_index::persist::{decode_indexes, encode_indexes};
use cairn_index::{CommitIndexes, EdgeDelta, IndexError, IndexParams, NodeDelta};
use roaring::RoaringBitmap;

/// CPU time of this process, all threads (Linux; zero elsewhere): timings on a shared
/// machine. Resolution: one clock tick (10 ms).
fn cpu() -> Duration {
    let ticks = std::fs::read_to_string("/proc/self/stat").ok().and_then(|s| {
        let rest = s.rsplit_once(')')?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
    });
    Duration::from_millis(ticks.unwrap_or(0) * 10)
}

/// Wall and CPU time since `(wall, cpu)`.
fn since(start: (Instant, Duration)) -> String {
    format!(
        "{:.2?} wall, {:.2?} cpu",
        start.0.elapsed(),
        cpu().saturating_sub(start.1)
    )
}

fn now() -> (Instant, Duration) {
    (Instant::now(), cpu())
}

fn id(i: usize) -> NodeId {
    NodeId::new(format!("n{i:06}")).unwrap()
}

fn with_hash(n: Node) -> (Hash, Node) {
    (hash_object(&encode_node(&n)), n)
}

/// Deterministic pseudo-random words with a skewed (roughly Zipf) frequency.
struct Words {
    state: u64,
    vocab: Vec<String>,
}

impl Words {
    fn new(size: usize) -> Words {
        let mut w = Words {
            state: 0x2545_f491_4f6c_dd1d,
            vocab: Vec::new(),
        };
        const SYL: [&str; 16] = [
            "ka", "lo", "mi", "ne", "ru", "ta", "shi", "ven", "dor", "al", "ex", "qua", "ber", "ing", "ed", "s",
        ];
        for _ in 0..size {
            let n = 1 + (w.next() % 4) as usize;
            let word: String = (0..n).map(|_| SYL[(w.next() % 16) as usize]).collect();
            w.vocab.push(word);
        }
        w
    }
    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }
    fn text(&mut self, words: usize) -> String {
        let mut s = String::new();
        for _ in 0..words {
            // Skewed: the square of a uniform draw favours small indices.
            let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
            let i = ((u * u) * self.vocab.len() as f64) as usize;
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(&self.vocab[i]);
        }
        s
    }
}

#[test]
fn filters_apply_before_the_cut() {
    let nodes: Vec<(Hash, Node)> = (0..1000)
        .map(|i| {
            let mut n = Node::new(id(i)).with_text(if i == 637 { "rare common" } else { "common common" });
            n = n.with_sparse(
                "s",
                SparseVector::new(vec![1, 2], vec![if i == 637 { 0.1 } else { 1.0 }, 1.0]),
            );
            if i == 637 {
                n = n.with_label("Chosen");
            }
            with_hash(n)
        })
        .collect();
    let idx = CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[]);
    let chosen = idx.labels.get("Chosen");
    assert_eq!(chosen.len(), 1);
    let hits = idx.bm25.search("common", 1, Some(&chosen));
    assert_eq!(hits.iter().map(|h| h.ordinal).collect::<Vec<_>>(), vec![637]);
    assert_ne!(idx.bm25.search("common", 1, None)[0].ordinal, 637);
    let q = SparseVector::new(vec![1], vec![1.0]);
    let hits = idx.sparse_search("s", &q, 1, Some(&chosen)).unwrap();
    assert_eq!(hits.iter().map(|h| h.ordinal).collect::<Vec<_>>(), vec![637]);
    // Ranked exactly: the unfiltered top 10 are the 0-ordinals with weight 1.0.
    let top = idx.sparse_search("s", &q, 10, None).unwrap();
    assert_eq!(
        top.iter().map(|h| h.ordinal).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    assert!(matches!(
        idx.sparse_search("nope", &q, 1, None),
        Err(IndexError::UnknownModel { kind: "sparse", .. })
    ));
    let bad = SparseVector::new(vec![2, 1], vec![1.0, 1.0]);
    assert!(matches!(
        idx.sparse_search("s", &bad, 1, None),
        Err(IndexError::BadSparseQuery { .. })
    ));
    let empty = RoaringBitmap::new();
    assert!(idx.bm25.search("common", 10, Some(&empty)).is_empty());
}

#[test]
fn persisted_indexes_are_keyed_and_checked() {
    let nodes: Vec<(Hash, Node)> = (0..50)
        .map(|i| {
            with_hash(
                Node::new(id(i))
                    .with_label(if i % 2 == 0 { "Even" } else { "Odd" })
                    .with_text(format!("node number {i} flows"))
                    .with_prop("i", i as i64)
                    .with_embedding("m", vec![i as f32, 1.0])
                    .with_sparse("s", SparseVector::new(vec![i as u32 % 7], vec![0.5])),
            )
        })
        .collect();
    let edges: Vec<Edge> = (1..50)
        .map(|i| Edge::new(id(i - 1), "next", id(i)).with_weight(i as f64))
        .collect();
    let params = IndexParams::default();
    let key = Hash::of(b"content");
    let idx = CommitIndexes::build(key, &params, &nodes, &edges);
    let bytes = encode_indexes(&idx);
    assert_eq!(decode_indexes(&bytes, &key).unwrap(), idx);
    let wrong = Hash::of(b"other content");
    let err = decode_indexes(&bytes, &wrong).unwrap_err();
    assert!(matches!(err, IndexError::BadStoredIndex(_)), "{err}");
    assert!(decode_indexes(&[], &key).is_err());
    assert!(decode_indexes(&bytes[..bytes.len() - 1], &key).is_err());
    let mut long = bytes.clone();
    long.push(0);
    assert!(decode_indexes(&long, &key).is_err());
    // Deterministic bytes: the same content encodes the same.
    let again = CommitIndexes::build(key, &params, &nodes, &edges);
    assert_eq!(encode_indexes(&again), bytes);
    // The fingerprint covers every parameter.
    let mut p2 = params.clone();
    p2.bm25.k1 = 1.2;
    assert_ne!(p2.fingerprint(), params.fingerprint());
    let mut p3 = params.clone();
    p3.bm25.analyzer.stem = false;
    assert_ne!(p3.fingerprint(), params.fingerprint());
    let mut p4 = params.clone();
    p4.hnsw.ef_search += 1;
    assert_ne!(p4.fingerprint(), params.fingerprint());
    assert_eq!(params.fingerprint(), IndexParams::default().fingerprint());
}

#[test]
fn derive_refuses_other_bm25_params() {
    let nodes = vec![with_hash(Node::new(id(1)).with_text("a b c"))];
    let params = IndexParams::default();
    let idx = CommitIndexes::build(Hash::ZERO, &params, &nodes, &[]);
    let mut other = params.clone();
    other.bm25.b = 0.75;
    let r = CommitIndexes::derive(&idx, Hash::ZERO, &other, &NodeDelta::default(), &EdgeDelta::default());
    assert!(matches!(r, Err(IndexError::Inconsistent(_))));
}

/// `cargo test -p cairn-index --release --test bundle -- --ignored --nocapture`
#[test]
#[ignore]
fn timing_100k_nodes() {
    let n = 100_000;
    let mut words = Words::new(30_000);
    let t = now();
    let nodes: Vec<(Hash, Node)> = (0..n)
        .map(|i| {
            let mut node = Node::new(id(i))
                .with_label(["Doc", "Paper", "Note"][i % 3])
                .with_text(words.text(50))
                .with_prop("year", 1950 + (i % 70) as i64);
            if i % 2 == 0 {
                let a = (words.next() % 1000) as u32;
                node = node.with_sparse("s", SparseVector::new(vec![a, a + 1 + (i as u32 % 5)], vec![0.5, 1.0]));
            }
            with_hash(node)
        })
        .collect();
    let edges: Vec<Edge> = (0..n)
        .map(|i| Edge::new(id(i), "cites", id((i * 7919 + 13) % n)))
        .filter(|e| e.source != e.target)
        .collect();
    println!("generated {n} nodes, {} edges in {}", edges.len(), since(t));
    let params = IndexParams::default();
    let t = now();
    let idx = CommitIndexes::build(Hash::ZERO, &params, &nodes, &edges);
    println!("build: {} ({} terms)", since(t), idx.bm25.term_count());
    let mut plain = params.clone();
    plain.bm25.analyzer.stem = false;
    let t = now();
    let _ = CommitIndexes::build(Hash::ZERO, &plain, &nodes, &edges);
    println!("build (no stemming): {}", since(t));

    // A 10-node delta: 4 changed, 3 added, 3 removed, plus a few edges.
    let mut delta = NodeDelta::default();
    for i in [5, 50_000, 77_777, 99_999] {
        let mut node = nodes[i].1.clone();
        node.text = words.text(50);
        delta.upserted.push(with_hash(node));
    }
    for i in 0..3 {
        delta.upserted.push(with_hash(
            Node::new(NodeId::new(format!("n{:06}x", 1000 * i + 1)).unwrap()).with_text(words.text(50)),
        ));
    }
    let mut edelta = EdgeDelta::default();
    for i in [10, 20_000, 60_000] {
        delta.removed.push(id(i));
        edelta.removed.extend(
            edges
                .iter()
                .filter(|e| e.source == id(i) || e.target == id(i))
                .map(Edge::key),
        );
    }
    edelta.upserted.push(Edge::new(id(1), "mentions", id(2)));
    let t = now();
    let child = CommitIndexes::derive(&idx, Hash::ZERO, &params, &delta, &edelta).unwrap();
    println!("derive (10 nodes): {}", since(t));
    let t = now();
    let bytes = encode_indexes(&child);
    println!("encode: {} ({} bytes)", since(t), bytes.len());
    let t = now();
    let back = decode_indexes(&bytes, &Hash::ZERO).unwrap();
    println!("decode: {}", since(t));
    let t = now();
    let hits = back.bm25.search(&words.text(8), 10, None);
    println!("bm25 query: {} ({} hits)", since(t), hits.len());
    assert_eq!(back, child);
}

#[test]
#[ignore]
fn timing_components() {
    use cairn_index::{Adjacency, Bm25Index, LabelIndex, NodeTable, PropertyIndex, ValidityColumn};
    let n = 100_000;
    let mut words = Words::new(30_000);
    let nodes: Vec<Node> = (0..n)
        .map(|i| {
            Node::new(id(i))
                .with_label(["Doc", "Paper", "Note"][i % 3])
                .with_text(words.text(50))
                .with_prop("year", 1950 + (i % 70) as i64)
        })
        .collect();
    let edges: Vec<Edge> = (0..n)
        .map(|i| Edge::new(id(i), "cites", id((i * 7919 + 13) % n)))
        .collect();
    let refs: Vec<&Node> = nodes.iter().collect();
    let t = now();
    let table = NodeTable::from_sorted(nodes.iter().map(|n| n.id.clone()).collect(), vec![Hash::ZERO; n]);
    println!("table {}", since(t));
    let t = now();
    let _ = LabelIndex::build(&refs);
    println!("labels {}", since(t));
    let t = now();
    let _ = ValidityColumn::build(&refs);
    println!("validity {}", since(t));
    let t = now();
    let _ = PropertyIndex::build(&refs);
    println!("props {}", since(t));
    let t = now();
    let _ = Adjacency::build(&table, &edges);
    println!("adjacency {}", since(t));
    for stem in [false, true] {
        let mut p = cairn_index::Bm25Params::default();
        p.analyzer.stem = stem;
        let t = now();
        let b = Bm25Index::build(p, refs.iter().map(|n| n.text.as_str()));
        println!("bm25 stem={stem} {} ({} terms)", since(t), b.term_count());
    }
    let t = now();
    let mut c = 0usize;
    for n in &refs {
        c += n.text.to_lowercase().len();
    }
    println!("lowercase only {} {c}", since(t));
}
