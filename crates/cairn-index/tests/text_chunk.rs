//! A chunk's BM25 part (`TextChunk`) against a reference built term by term from
//! `Analyzer::analyze`: every term's postings (document, frequency), every document's
//! length, the chunk's total length and term count, for texts that mix case, stopwords,
//! non-ASCII letters, digits, repeats and tokens longer than the analyser's inline keys,
//! with and without stemming. Several chunks are built on one thread in a row, so the
//! thread's memo of tokens and its reused buffers are exercised across builds.

use std::collections::BTreeMap;

use cairn_core::{Hash, Node, NodeId};
use cairn_index::{Analyzer, CommitIndexes, IndexParams};
use proptest::prelude::*;

/// Words the texts draw from: short and long (past 16 bytes), stopwords, mixed case,
/// non-ASCII letters (one of whose lowercase differs in length), digits, stems that
/// collide ("running", "runs", "run").
const WORDS: [&str; 24] = [
    "Wing",
    "wing",
    "WINGS",
    "the",
    "and",
    "of",
    "running",
    "runs",
    "run",
    "boundary-layer",
    "counterrevolutionaries",
    "internationalisation",
    "aerothermodynamically",
    "Ünïcödé",
    "İstanbul",
    "straße",
    "ΣΊΣΥΦΟΣ",
    "mach2",
    "2024",
    "x",
    "a1b2c3d4e5f6g7h8",
    "a1b2c3d4e5f6g7h8i",
    "a1b2c3d4e5f6g7h",
    "...",
];

fn texts_strategy() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::collection::vec((0..WORDS.len(), 0..4usize), 0..30).prop_map(|ws| {
            ws.into_iter()
                .map(|(w, sep)| format!("{}{}", WORDS[w], [" ", ", ", "\n", "—"][sep]))
                .collect::<String>()
        }),
        1..120,
    )
}

fn nodes(texts: &[String]) -> Vec<(Hash, Node)> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let id = format!("n{i:04}");
            (
                Hash::of(id.as_bytes()),
                Node::new(NodeId::new(id).unwrap()).with_text(t.clone()),
            )
        })
        .collect()
}

/// Checks every chunk of a view of `texts` against the reference.
fn check(texts: &[String], stem: bool) {
    let mut params = IndexParams::default();
    params.bm25.analyzer = Analyzer { stem };
    let analyzer = params.bm25.analyzer;
    let view = CommitIndexes::build(Hash::ZERO, &params, &nodes(texts), &[]);
    let by_id: BTreeMap<String, &String> = texts.iter().enumerate().map(|(i, t)| (format!("n{i:04}"), t)).collect();
    let mut seen = 0;
    for (c, chunk) in view.chunks().iter().enumerate() {
        let part = view.text_part(c).expect("a text part per chunk");
        // term → local → frequency, and each document's length.
        let mut reference: BTreeMap<String, BTreeMap<u32, u32>> = BTreeMap::new();
        let mut total = 0u64;
        for (local, id) in chunk.ids().iter().enumerate() {
            let terms = analyzer.analyze(by_id[id]);
            assert_eq!(part.doc_len(local as u32) as usize, terms.len(), "length of {id}");
            total += terms.len() as u64;
            for t in terms {
                *reference.entry(t).or_default().entry(local as u32).or_default() += 1;
            }
            seen += 1;
        }
        assert_eq!(part.doc_count(), chunk.len());
        assert_eq!(part.total_len(), total);
        assert_eq!(part.term_count(), reference.len());
        for (term, docs) in &reference {
            let got: Vec<(u32, u32)> = part.postings(term).iter().map(|p| (p.local(), p.tf())).collect();
            let want: Vec<(u32, u32)> = docs.iter().map(|(&l, &f)| (l, f)).collect();
            assert_eq!(got, want, "postings of {term:?}");
        }
    }
    assert_eq!(seen, texts.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_text_part_equals_the_reference(texts in texts_strategy(), stem in any::<bool>()) {
        check(&texts, stem);
    }
}

#[test]
fn empty_and_stopword_only_texts_have_length_zero() {
    let texts: Vec<String> = vec!["".into(), "the and of".into(), "... —".into(), "Wing".into()];
    check(&texts, true);
    check(&texts, false);
}
