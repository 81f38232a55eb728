//! The BM25 lane's directory lookups and MaxScore pruning change no result: over random
//! corpora (a skewed vocabulary, so some terms are in every chunk and some in one), random
//! queries, depths and filters, [`CommitIndexes::text_search`] equals
//! [`CommitIndexes::text_search_reference`] (every posting scored) hit for hit and bit for
//! bit — ties included, since scores repeat often in short documents.

use cairn_core::{Hash, Node, NodeId};
use cairn_index::{Bm25Params, CommitIndexes, IndexParams};
use proptest::prelude::*;

/// A word drawn with a skew: `w0` is in most documents, `w{n}` in about one in `n`.
fn word(r: u32) -> String {
    let x = r % 1000;
    let w = (1000 / (x + 1)).min(400);
    format!("w{}", 400 - w)
}

fn corpus(docs: &[Vec<u32>]) -> Vec<(Hash, Node)> {
    docs.iter()
        .enumerate()
        .map(|(i, words)| {
            let id = format!("d{:05}", (i * 7919) % 100_000);
            let text = words.iter().map(|&r| word(r)).collect::<Vec<_>>().join(" ");
            let node = Node::new(NodeId::new(id).unwrap())
                .with_label(if i % 3 == 0 { "A" } else { "B" })
                .with_text(text);
            (Hash::of(format!("{i}").as_bytes()), node)
        })
        .collect()
}

fn check(ix: &CommitIndexes, queries: &[Vec<u32>], ks: &[usize]) {
    let a = ix.labels_all_of(&["A".to_string()]);
    let none = ix.labels_all_of(&["Missing".to_string()]);
    for q in queries {
        let text = q.iter().map(|&r| word(r)).collect::<Vec<_>>().join(" ");
        for &k in ks {
            for f in [None, Some(&a), Some(&none)] {
                let got = ix.text_search(&text, k, f).unwrap();
                let want = ix.text_search_reference(&text, k, f);
                assert_eq!(got.len(), want.len(), "{text:?} k={k}");
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.ordinal, w.ordinal, "{text:?} k={k}");
                    assert_eq!(g.score.to_bits(), w.score.to_bits(), "{text:?} k={k}");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn pruned_search_equals_scoring_every_posting(
        docs in proptest::collection::vec(proptest::collection::vec(any::<u32>(), 0..12), 1..700),
        queries in proptest::collection::vec(proptest::collection::vec(any::<u32>(), 1..6), 1..6),
        k1 in prop_oneof![Just(0.9f32), Just(0.0f32), Just(1.2f32)],
        b in prop_oneof![Just(0.4f32), Just(0.0f32), Just(1.0f32)],
    ) {
        let params = IndexParams { bm25: Bm25Params { k1, b, ..Bm25Params::default() }, ..IndexParams::default() };
        let ix = CommitIndexes::build(Hash::ZERO, &params, &corpus(&docs), &[]);
        check(&ix, &queries, &[1, 3, 10, 1000]);
    }
}

#[test]
fn a_common_word_with_rare_ones_is_pruned_and_exact() {
    // 5,000 documents: `common` in all, `rare{i % 50}` in one in fifty, repeated words.
    let nodes: Vec<(Hash, Node)> = (0..5000u32)
        .map(|i| {
            let text = format!("common filler{} rare{} common", i % 7, i % 50);
            let node = Node::new(NodeId::new(format!("n{i:05}")).unwrap())
                .with_label("A")
                .with_text(text);
            (Hash::of(&i.to_le_bytes()), node)
        })
        .collect();
    let ix = CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[]);
    assert!(ix.chunks().len() > 20, "several chunks");
    for q in [
        "common rare7",
        "rare3 common filler2",
        "common",
        "rare49 rare1",
        "absent common",
    ] {
        for k in [1, 10, 100, 400] {
            let got = ix.text_search(q, k, None).unwrap();
            let want = ix.text_search_reference(q, k, None);
            assert_eq!(got, want, "{q} k={k}");
        }
    }
}

/// Many postings: the lane scans ranges of chunks at once (each with its own MaxScore bar)
/// and merges their best `k`. Under 1, 2, 3 and 8 threads (so 1 to 8 ranges) every answer
/// equals scoring every posting, ties included, with and without a gate.
#[test]
fn ranges_scanned_at_once_give_the_same_answer() {
    // 16,000 documents (about 250 chunks): three words in every one (48,000 postings for a
    // query of them), a tie-heavy filler and a rarer word.
    let nodes: Vec<(Hash, Node)> = (0..16_000u32)
        .map(|i| {
            let text = format!("alpha beta gamma filler{} rare{} alpha", i % 5, i % 97);
            let node = Node::new(NodeId::new(format!("n{i:05}")).unwrap())
                .with_label(if i % 3 == 0 { "A" } else { "B" })
                .with_text(text);
            (Hash::of(&i.to_le_bytes()), node)
        })
        .collect();
    let ix = CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[]);
    assert!(ix.chunks().len() >= 128, "enough chunks for several ranges");
    let a = ix.labels_all_of(&["A".to_string()]);
    let queries = ["alpha beta gamma", "alpha beta gamma rare5", "gamma filler2 beta"];
    let want: Vec<Vec<_>> = queries
        .iter()
        .flat_map(|q| [1usize, 100, 1000].map(|k| (q, k)))
        .flat_map(|(q, k)| [None, Some(&a)].map(|f| ix.text_search_reference(q, k, f)))
        .collect();
    for threads in [1, 2, 3, 8] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let got: Vec<Vec<_>> = pool.install(|| {
            queries
                .iter()
                .flat_map(|q| [1usize, 100, 1000].map(|k| (q, k)))
                .flat_map(|(q, k)| [None, Some(&a)].map(|f| ix.text_search(q, k, f).unwrap()))
                .collect()
        });
        assert_eq!(got, want, "{threads} threads");
    }
}
