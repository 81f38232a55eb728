//! BM25 full-text index over node text.

use std::collections::BTreeMap;

use rayon::prelude::*;
use roaring::RoaringBitmap;
use rust_stemmers::Stemmer;
use serde::{Deserialize, Serialize};

use crate::analyzer::{term_of, tokens, Analyzer};
use crate::fast_hash::FastMap;
use crate::hit::{Accumulator, Hit, Ordinal};
use crate::node_table::{merge_postings, OrdinalRemap};

/// BM25 parameters. Defaults `k1 = 0.9`, `b = 0.4` (Anserini's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
    /// The analyzer.
    pub analyzer: Analyzer,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params {
            k1: 0.9,
            b: 0.4,
            analyzer: Analyzer::default(),
        }
    }
}

/// Inverted index: term → postings `(ordinal, term frequency)` in ordinal order, plus
/// each document's length in terms. Scoring: Lucene idf `ln(1 + (N - df + 0.5)/(df + 0.5))`,
/// `tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl))`, query terms counted with multiplicity,
/// summed in a fixed order so scores are reproducible bit for bit.
///
/// Every node of the commit is a document, including nodes with empty text (length 0):
/// `N` is the commit's node count and `avgdl` the mean length over all of them (as the
/// reference `baselines.py` counts every document). A filter restricts which documents
/// are scored and ranked, never these collection statistics.
///
/// Arithmetic: `k1` and `b` are widened to `f64` through their shortest decimal form
/// (`0.9f32` becomes `0.9f64`, the number the user wrote); each term's contribution
/// `count · idf · tf · (k1 + 1) / (tf + k1 · (1 - b + b · dl / avgdl))` is computed in
/// `f64` and added to the document's `f64` sum in query-term order (the order of each
/// distinct term's first occurrence in the analysed query, `count` its occurrences); the
/// sum is rounded to `f32` once. Ranking is by that `f32` score, then ordinal.
#[derive(Debug, Clone, PartialEq)]
pub struct Bm25Index {
    pub(crate) params: Bm25Params,
    pub(crate) postings: BTreeMap<String, Vec<(Ordinal, u32)>>,
    pub(crate) doc_len: Vec<u32>,
    pub(crate) total_len: u64,
}

/// Marks a cached token as a stopword during a build.
const STOP: u32 = u32::MAX;

/// Documents per chunk of a parallel build (each chunk analyses its documents with its own
/// token cache).
pub const BUILD_CHUNK_DOCS: usize = 8192;

/// The postings of a run of consecutive documents, by chunk-local term id.
struct Chunk {
    terms: Vec<String>,
    lists: Vec<Vec<(Ordinal, u32)>>,
    doc_len: Vec<u32>,
}

impl Chunk {
    /// Analyses `docs`, whose first has ordinal `first`.
    fn build(analyzer: Analyzer, first: Ordinal, docs: &[&str]) -> Chunk {
        let mut vocab = Vocabulary {
            stemmer: analyzer.stemmer(),
            term_ids: FastMap::default(),
            terms: Vec::new(),
            lists: Vec::new(),
            last_doc: Vec::new(),
            tf: Vec::new(),
        };
        // Lookup-only maps (never iterated). Short tokens (almost all) are keyed as one
        // packed integer.
        let mut short_cache: FastMap<u128, u32> = FastMap::default();
        let mut long_cache: FastMap<String, u32> = FastMap::default();
        let mut doc_len = Vec::with_capacity(docs.len());
        let mut touched: Vec<u32> = Vec::new();
        for (i, text) in docs.iter().enumerate() {
            let o = first + i as Ordinal;
            let lower = text.to_lowercase();
            let mut len = 0u32;
            for token in tokens(&lower) {
                let id = match pack(token) {
                    Some(key) => match short_cache.get(&key) {
                        Some(&id) => id,
                        None => {
                            let id = vocab.term_id(token);
                            short_cache.insert(key, id);
                            id
                        }
                    },
                    None => match long_cache.get(token) {
                        Some(&id) => id,
                        None => {
                            let id = vocab.term_id(token);
                            long_cache.insert(token.to_string(), id);
                            id
                        }
                    },
                };
                if id != STOP {
                    len += 1;
                    let t = id as usize;
                    if vocab.last_doc[t] != o {
                        vocab.last_doc[t] = o;
                        vocab.tf[t] = 0;
                        touched.push(id);
                    }
                    vocab.tf[t] += 1;
                }
            }
            doc_len.push(len);
            for id in touched.drain(..) {
                let t = id as usize;
                vocab.lists[t].push((o, vocab.tf[t]));
            }
        }
        Chunk {
            terms: vocab.terms,
            lists: vocab.lists,
            doc_len,
        }
    }
}

/// The terms met while analysing a chunk, by id, with their postings so far and the
/// current document's counts.
struct Vocabulary {
    stemmer: Option<Stemmer>,
    term_ids: FastMap<String, u32>,
    terms: Vec<String>,
    lists: Vec<Vec<(Ordinal, u32)>>,
    /// Per term: the last document that counted it (`Ordinal::MAX` before any) and its
    /// count there.
    last_doc: Vec<Ordinal>,
    tf: Vec<u32>,
}

impl Vocabulary {
    /// The term id of a token not yet in the token cache (or [`STOP`] for a stopword).
    fn term_id(&mut self, token: &str) -> u32 {
        let Some(term) = term_of(self.stemmer.as_ref(), token) else {
            return STOP;
        };
        if let Some(&id) = self.term_ids.get(term.as_ref()) {
            return id;
        }
        let id = self.terms.len() as u32;
        self.terms.push(term.to_string());
        self.term_ids.insert(term.into_owned(), id);
        self.lists.push(Vec::new());
        self.last_doc.push(Ordinal::MAX);
        self.tf.push(0);
        id
    }
}

/// A token of at most 15 bytes packed into one integer (bytes little endian, the length
/// in the top byte), so the build's token cache compares integers, not strings.
fn pack(token: &str) -> Option<u128> {
    let b = token.as_bytes();
    if b.len() > 15 {
        return None;
    }
    // A byte loop: a variable-length copy would be a libc call per token.
    let mut key = (b.len() as u128) << 120;
    for (i, &c) in b.iter().enumerate() {
        key |= u128::from(c) << (8 * i);
    }
    Some(key)
}

impl Bm25Index {
    /// Builds the index over the commit's node texts in ordinal order (`texts[i]` is
    /// the text of ordinal `i`).
    ///
    /// Documents are analysed in chunks of [`BUILD_CHUNK_DOCS`] on rayon's pool, each
    /// chunk with its own vocabulary; the chunks are then merged in document order, so the
    /// index does not depend on the thread count or on scheduling.
    pub fn build<'a>(params: Bm25Params, texts: impl IntoIterator<Item = &'a str>) -> Bm25Index {
        let texts: Vec<&str> = texts.into_iter().collect();
        let chunks: Vec<Chunk> = if texts.len() <= BUILD_CHUNK_DOCS {
            vec![Chunk::build(params.analyzer, 0, &texts)]
        } else {
            texts
                .par_chunks(BUILD_CHUNK_DOCS)
                .enumerate()
                .map(|(c, docs)| Chunk::build(params.analyzer, (c * BUILD_CHUNK_DOCS) as Ordinal, docs))
                .collect()
        };
        let mut doc_len = Vec::with_capacity(texts.len());
        let mut term_ids: FastMap<String, u32> = FastMap::default();
        let mut lists: Vec<Vec<(Ordinal, u32)>> = Vec::new();
        for chunk in chunks {
            doc_len.extend_from_slice(&chunk.doc_len);
            for (term, list) in chunk.terms.into_iter().zip(chunk.lists) {
                match term_ids.get(term.as_str()) {
                    Some(&id) => lists[id as usize].extend_from_slice(&list),
                    None => {
                        term_ids.insert(term, lists.len() as u32);
                        lists.push(list);
                    }
                }
            }
        }
        let mut slots: Vec<Option<Vec<(Ordinal, u32)>>> = lists.into_iter().map(Some).collect();
        let postings = term_ids
            .into_iter()
            .map(|(term, id)| (term, slots[id as usize].take().unwrap_or_default()))
            .collect();
        let total_len = doc_len.iter().map(|&l| u64::from(l)).sum();
        Bm25Index {
            params,
            postings,
            doc_len,
            total_len,
        }
    }

    /// Derives a child's index: the parent's postings and lengths moved by `remap`, plus
    /// the texts of `upserted` (child ordinals, increasing). Equal to
    /// [`Bm25Index::build`] over the child's texts.
    pub fn derive<'a>(
        parent: &Bm25Index,
        remap: &OrdinalRemap,
        upserted: impl IntoIterator<Item = (Ordinal, &'a str)>,
    ) -> Bm25Index {
        let n = remap.new_len as usize;
        let mut doc_len = vec![0u32; n];
        for (old, new) in remap.old_to_new.iter().enumerate() {
            if let (Some(new), Some(&len)) = (new, parent.doc_len.get(old)) {
                if let Some(slot) = doc_len.get_mut(*new as usize) {
                    *slot = len;
                }
            }
        }
        let mut added: BTreeMap<String, Vec<(Ordinal, u32)>> = BTreeMap::new();
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for (o, text) in upserted {
            counts.clear();
            let mut len = 0u32;
            parent.params.analyzer.for_each_term(text, |term| {
                len += 1;
                match counts.get_mut(term) {
                    Some(c) => *c += 1,
                    None => {
                        counts.insert(term.to_string(), 1);
                    }
                }
            });
            if let Some(slot) = doc_len.get_mut(o as usize) {
                *slot = len;
            }
            for (term, tf) in std::mem::take(&mut counts) {
                added.entry(term).or_default().push((o, tf));
            }
        }
        let mut postings = BTreeMap::new();
        for (term, list) in &parent.postings {
            let kept = remap.remap_postings(list);
            let merged = merge_postings(kept, added.remove(term.as_str()).unwrap_or_default());
            if !merged.is_empty() {
                postings.insert(term.clone(), merged);
            }
        }
        postings.append(&mut added);
        let total_len = doc_len.iter().map(|&l| u64::from(l)).sum();
        Bm25Index {
            params: parent.params,
            postings,
            doc_len,
            total_len,
        }
    }

    /// The parameters the index was built with.
    pub fn params(&self) -> &Bm25Params {
        &self.params
    }

    /// Number of documents (the commit's node count).
    pub fn doc_count(&self) -> usize {
        self.doc_len.len()
    }

    /// Number of distinct terms.
    pub fn term_count(&self) -> usize {
        self.postings.len()
    }

    /// The number of documents containing `term` (an analysed term).
    pub fn doc_freq(&self, term: &str) -> usize {
        self.postings.get(term).map_or(0, Vec::len)
    }

    /// The `k` best documents for `query` among `filter` (all if `None`), exact, in
    /// `(score desc, ordinal asc)` order. Documents matching no query term are not hits.
    ///
    /// The filter applies before the cut: a document outside it is never scored, one
    /// inside it competes only with other documents inside it.
    pub fn search(&self, query: &str, k: usize, filter: Option<&RoaringBitmap>) -> Vec<Hit> {
        if k == 0 || self.doc_len.is_empty() {
            return Vec::new();
        }
        // Distinct query terms in first-occurrence order, with multiplicity.
        let mut terms: Vec<(&[(Ordinal, u32)], u32)> = Vec::new();
        let mut position: BTreeMap<String, usize> = BTreeMap::new();
        self.params.analyzer.for_each_term(query, |t| match position.get(t) {
            Some(&i) => terms[i].1 += 1,
            None => {
                // Terms absent from the index contribute nothing: keep a placeholder so
                // repeats are still recognised.
                let list = self.postings.get(t).map_or(&[][..], Vec::as_slice);
                position.insert(t.to_string(), terms.len());
                terms.push((list, 1));
            }
        });
        let n = self.doc_len.len() as f64;
        let avgdl = self.total_len as f64 / n;
        let k1 = widen(self.params.k1);
        let b = widen(self.params.b);
        let postings: usize = terms.iter().map(|(l, _)| l.len()).sum();
        let mut acc = Accumulator::new(self.doc_len.len(), postings);
        for &(list, count) in &terms {
            if list.is_empty() {
                continue;
            }
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let count = f64::from(count);
            for &(o, tf) in list {
                if filter.is_some_and(|f| !f.contains(o)) {
                    continue;
                }
                let Some(&dl) = self.doc_len.get(o as usize) else {
                    continue;
                };
                let tf = f64::from(tf);
                let norm = k1 * (1.0 - b + b * f64::from(dl) / avgdl);
                acc.add(o, count * (idf * tf * (k1 + 1.0) / (tf + norm)));
            }
        }
        acc.top_k(k)
    }
}

/// An `f32` parameter as the `f64` its shortest decimal representation names
/// (`0.9f32` → `0.9f64`), so scores use the value the user wrote.
fn widen(x: f32) -> f64 {
    x.to_string().parse::<f64>().unwrap_or(f64::from(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOCS: [&str; 4] = [
        "the quick brown fox",
        "quick quick fox jumps",
        "",
        "a lazy dog sleeps over the brown fox brown",
    ];

    fn plain(k1: f32, b: f32) -> Bm25Params {
        Bm25Params {
            k1,
            b,
            analyzer: Analyzer { stem: false },
        }
    }

    #[test]
    fn hand_computed_scores() {
        let idx = Bm25Index::build(plain(1.2, 0.75), DOCS);
        // lengths after stopwords: [3, 4, 0, 7] ("the", "a", "over"? no: "over" is not a stopword)
        assert_eq!(idx.doc_len, vec![3, 4, 0, 7]);
        assert_eq!(idx.total_len, 14);
        let n = 4.0f64;
        let avgdl = 14.0 / 4.0;
        let (k1, b) = (1.2f64, 0.75f64);
        let idf = |df: f64| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let w = |tf: f64, dl: f64, df: f64| idf(df) * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl));
        // query "quick brown brown": quick (df 2), brown (df 2, counted twice)
        let s0 = w(1.0, 3.0, 2.0) + 2.0 * w(1.0, 3.0, 2.0);
        let s1 = w(2.0, 4.0, 2.0);
        let s3 = 2.0 * w(2.0, 7.0, 2.0);
        let hits = idx.search("Quick brown BROWN", 10, None);
        let mut want = vec![(0u32, s0 as f32), (1, s1 as f32), (3, s3 as f32)];
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        assert_eq!(hits.iter().map(|h| (h.ordinal, h.score)).collect::<Vec<_>>(), want);
        // a 4-doc example by hand: idf(2) = ln(1 + 2.5/2.5) = ln 2
        assert!((idf(2.0) - std::f64::consts::LN_2).abs() < 1e-15);
        assert!(idx.search("nothing matches", 10, None).is_empty());
        assert!(idx.search("the a of", 10, None).is_empty());
        assert!(idx.search("fox", 0, None).is_empty());
    }

    #[test]
    fn filter_applies_before_the_cut() {
        let mut texts: Vec<String> = (0..1000).map(|i| format!("common word{i} common")).collect();
        texts[637] = "common rare".to_string();
        let idx = Bm25Index::build(plain(0.9, 0.4), texts.iter().map(String::as_str));
        let mut only = RoaringBitmap::new();
        only.insert(637);
        let hits = idx.search("common", 1, Some(&only));
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].ordinal, 637);
        // without the filter the top-1 is someone else
        assert_ne!(idx.search("common", 1, None)[0].ordinal, 637);
        let mut none = RoaringBitmap::new();
        none.insert(5);
        assert!(idx.search("rare", 10, Some(&none)).is_empty());
    }

    /// The chunked, cached build against the plain analyzer path of `derive` (every node
    /// an upsert into an empty parent), over more documents than one chunk holds.
    #[test]
    fn chunked_build_equals_plain_analysis() {
        const WORDS: [&str; 14] = [
            "The",
            "flows",
            "FLOWING",
            "of",
            "naïve",
            "Ωmega",
            "ΣΟΦΊΑΣ",
            "x86_64",
            "a1b2",
            "isn't",
            "supercalifragilistic",
            "electroencephalographically",
            "wing-tip",
            "東京",
        ];
        let mut state = 99u64;
        let texts: Vec<String> = (0..BUILD_CHUNK_DOCS + 1500)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let n = ((state >> 40) % 9) as usize;
                (0..n)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1442695040888963407);
                        WORDS[((state >> 33) % WORDS.len() as u64) as usize]
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        for stem in [false, true] {
            let params = Bm25Params {
                analyzer: Analyzer { stem },
                ..Bm25Params::default()
            };
            let built = Bm25Index::build(params, texts.iter().map(String::as_str));
            let empty = Bm25Index::build(params, std::iter::empty());
            let remap = OrdinalRemap {
                old_to_new: Vec::new(),
                new_len: texts.len() as u32,
            };
            let derived = Bm25Index::derive(
                &empty,
                &remap,
                texts.iter().enumerate().map(|(o, t)| (o as Ordinal, t.as_str())),
            );
            assert_eq!(built, derived);
            assert!(built
                .postings
                .contains_key(if stem { "flow" } else { "electroencephalographically" }));
            assert!(built.doc_len.iter().any(|&l| l > 0));
        }
    }

    #[test]
    fn build_matches_analyzer() {
        let params = Bm25Params::default();
        let idx = Bm25Index::build(params, DOCS);
        for (o, d) in DOCS.iter().enumerate() {
            let terms = params.analyzer.analyze(d);
            assert_eq!(idx.doc_len[o] as usize, terms.len());
            for t in &terms {
                let tf = terms.iter().filter(|x| *x == t).count() as u32;
                assert!(idx.postings[t.as_str()].contains(&(o as u32, tf)));
            }
        }
        assert_eq!(widen(0.9), 0.9f64);
        assert_eq!(widen(0.75), 0.75f64);
    }
}
