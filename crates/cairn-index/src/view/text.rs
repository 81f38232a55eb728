//! BM25 across chunks.
//!
//! Scoring: Lucene idf `ln(1 + (N − df + 0.5)/(df + 0.5))` and `tf·(k1+1) / (tf + k1·(1 −
//! b + b·dl/avgdl))`, where `N` is the commit's node count (every node is a document, empty
//! text included), `avgdl` the commit's total length over `N`, and `df` the sum of the
//! chunks' document frequencies — the collection statistics of the whole commit, so a
//! score does not depend on how the commit is chunked.
//!
//! Arithmetic: `k1` and `b` are widened to `f64` through their shortest decimal form
//! (`0.9f32` becomes `0.9f64`, the number the user wrote); each term's contribution
//! `count · idf · tf · (k1 + 1) / (tf + k1 · (1 - b + b · dl / avgdl))` is computed in
//! `f64` and added to the document's `f64` sum in query-term order (the order of each
//! distinct term's first occurrence in the analysed query, `count` its occurrences); the
//! sum is rounded to `f32` once. Ranking is by that `f32` score, then ordinal. A filter
//! restricts which documents are scored, never the statistics.

use std::collections::BTreeMap;

use crate::chunk::text::term_hash;
use crate::chunk::{Local, TextChunk};
use crate::hit::{top_k_vec, Hit};
use crate::view::push_chunk_hits;
use crate::view::{CommitIndexes, Filter, FilterPart};

/// An `f32` parameter as the `f64` its shortest decimal representation names
/// (`0.9f32` → `0.9f64`), so scores use the value the user wrote.
pub(crate) fn widen(x: f32) -> f64 {
    x.to_string().parse::<f64>().unwrap_or(f64::from(x))
}

impl CommitIndexes {
    /// True if the BM25 parts are loaded.
    pub fn has_text(&self) -> bool {
        self.text.is_some()
    }

    /// The `k` best documents for `query` among `filter` (all if `None`), exact, in
    /// `(score desc, ordinal asc)` order (module docs). Documents matching no query term
    /// are not hits. Empty if the BM25 parts are not loaded.
    pub fn text_search(&self, query: &str, k: usize, filter: Option<&Filter>) -> Vec<Hit> {
        let Some(parts) = &self.text else {
            return Vec::new();
        };
        let n_docs = self.node_count();
        if k == 0 || n_docs == 0 {
            return Vec::new();
        }
        // Distinct query terms in first-occurrence order, with multiplicity.
        let mut terms: Vec<(String, u32)> = Vec::new();
        let mut position: BTreeMap<String, usize> = BTreeMap::new();
        self.params
            .bm25
            .analyzer
            .for_each_term(query, |t| match position.get(t) {
                Some(&i) => terms[i].1 += 1,
                None => {
                    position.insert(t.to_string(), terms.len());
                    terms.push((t.to_string(), 1));
                }
            });
        if terms.is_empty() {
            return Vec::new();
        }
        // Postings per (chunk, term), flat, and the commit's statistics.
        let nt = terms.len();
        let hashes: Vec<u64> = terms.iter().map(|(t, _)| term_hash(t)).collect();
        // Two passes, so that cache misses overlap: first every (chunk, term) home slot (all
        // independent loads; an empty slot settles most chunks that lack the term), then
        // the full lookups of the rest, whose lines are now warm.
        let mut home: Vec<u32> = Vec::with_capacity(parts.len() * nt);
        for p in parts {
            home.extend(hashes.iter().map(|&h| p.home_entry(h)));
        }
        let mut lists: Vec<&[(Local, u32)]> = Vec::with_capacity(parts.len() * nt);
        let mut df = vec![0u64; nt];
        for (p, homes) in parts.iter().zip(home.chunks_exact(nt)) {
            for (i, (t, _)) in terms.iter().enumerate() {
                let l = if homes[i] == 0 { &[][..] } else { p.lookup(t, hashes[i]) };
                df[i] += l.len() as u64;
                lists.push(l);
            }
        }
        let total_len: u64 = parts.iter().map(|p| p.total_len()).sum();
        let n = f64::from(n_docs);
        let avgdl = total_len as f64 / n;
        let k1 = widen(self.params.bm25.k1);
        let b = widen(self.params.bm25.b);
        let weights: Vec<Option<(f64, f64)>> = terms
            .iter()
            .zip(&df)
            .map(|((_, count), &df)| {
                (df > 0).then(|| {
                    let df = df as f64;
                    ((1.0 + (n - df + 0.5) / (df + 0.5)).ln(), f64::from(*count))
                })
            })
            .collect();
        let mut hits = Vec::new();
        let mut sums: Vec<f64> = Vec::new();
        let mut touched: Vec<Local> = Vec::new();
        for (c, (part, chunk_lists)) in parts.iter().zip(lists.chunks_exact(nt)).enumerate() {
            if chunk_lists.iter().all(|l| l.is_empty()) {
                continue;
            }
            let fpart = filter.map(|f| f.part(c));
            if fpart.is_some_and(FilterPart::is_none) {
                continue;
            }
            score_chunk(
                part,
                chunk_lists,
                &weights,
                (k1, b, avgdl),
                fpart,
                &mut sums,
                &mut touched,
            );
            push_chunk_hits(&mut hits, self.offset(c), &mut touched, &sums, k);
        }
        top_k_vec(hits, k)
    }
}

/// Scores one chunk's documents into `sums` (one slot per document, NaN = untouched) and
/// lists the touched documents in `touched` (increasing).
fn score_chunk(
    part: &TextChunk,
    lists: &[&[(Local, u32)]],
    weights: &[Option<(f64, f64)>],
    (k1, b, avgdl): (f64, f64, f64),
    filter: Option<&FilterPart>,
    sums: &mut Vec<f64>,
    touched: &mut Vec<Local>,
) {
    sums.clear();
    sums.resize(part.doc_count(), f64::NAN);
    for (list, w) in lists.iter().zip(weights) {
        let Some((idf, count)) = *w else { continue };
        for &(l, tf) in *list {
            if filter.is_some_and(|f| !f.contains(l)) {
                continue;
            }
            let dl = f64::from(part.doc_len(l));
            let tf = f64::from(tf);
            let norm = k1 * (1.0 - b + b * dl / avgdl);
            let slot = &mut sums[l as usize];
            if slot.is_nan() {
                *slot = 0.0;
                touched.push(l);
            }
            *slot += count * (idf * tf * (k1 + 1.0) / (tf + norm));
        }
    }
    touched.sort_unstable();
}
