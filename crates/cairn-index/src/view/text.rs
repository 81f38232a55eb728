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
//!
//! Cost: a view's postings are grouped by term per unit (`postings.rs`, [`crate::unit_text`]):
//! a query reads its terms' postings — the block of a unit's term dictionary holding the
//! term, with that block's postings — plus a lookup in each chunk no unit covers, and sums
//! each term's document frequency from them. Chunks are then visited in order under
//! **MaxScore** pruning: a term can add at most `count · idf · (k1 + 1)` to a score (BM25's
//! saturation bound), so once the `k`-th best score so far exceeds the sum of the smallest
//! terms' bounds, a document holding only those terms cannot enter the top `k` — not even on
//! a tie, since every later document has a higher ordinal — and only chunks holding one of
//! the other ("essential") terms are read. A document that is read is scored in full, by
//! the arithmetic above, so the result equals scoring every posting
//! ([`CommitIndexes::text_search_reference`]) bit for bit; the cost follows the rarer
//! terms' postings rather than every posting of a common word.
//!
//! A query with many postings (a deep lane: fusion asks for 1,000 candidates, so the bar
//! is low) is scanned in contiguous ranges of chunks at once, one per thread and at least
//! [`PARALLEL_POSTINGS`] postings each, every range under its own bar; their best `k`
//! are merged by `(score desc, ordinal asc)`. A document a range could not score cannot
//! be in that range's best `k`, so the union holds the overall best `k`: the answer does
//! not depend on the number of ranges (tested with 1 to 8 threads).

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::chunk::text::term_hash;
use crate::chunk::{Local, Posting, TextChunk};
use crate::dense::prefetch::prefetch;
use crate::error::IndexError;
use crate::hit::{top_k_vec, Hit, TopK};
use crate::unit_text::UnitText;
use crate::view::filter::admits;
use crate::view::push_chunk_hits;
use crate::view::{CommitIndexes, Filter, FilterPart};

/// An `f32` parameter as the `f64` its shortest decimal representation names
/// (`0.9f32` → `0.9f64`), so scores use the value the user wrote.
pub(crate) fn widen(x: f32) -> f64 {
    x.to_string().parse::<f64>().unwrap_or(f64::from(x))
}

/// Above this many postings per parallel piece, a query's chunks are scanned in ranges at
/// once ([`CommitIndexes::text_search`]).
const PARALLEL_POSTINGS: u64 = 20_000;

/// A term's `(idf, count)`, `None` if no document has it.
type TermWeight = Option<(f64, f64)>;
/// `(k1, b, avgdl)` widened to `f64`.
type Bm25Consts = (f64, f64, f64);

impl CommitIndexes {
    /// True if the BM25 parts are loaded.
    pub fn has_text(&self) -> bool {
        self.text.is_some()
    }

    /// Distinct analysed query terms in first-occurrence order, with multiplicity.
    fn query_terms(&self, query: &str) -> Vec<(String, u32)> {
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
        terms
    }

    /// `(idf, count)` per term from its document frequency (`None` if no document has
    /// it), and the `(k1, b, avgdl)` of the scoring formula.
    fn bm25_weights(&self, terms: &[(String, u32)], df: &[u64]) -> (Vec<TermWeight>, Bm25Consts) {
        let n = f64::from(self.node_count());
        let avgdl = self.text.as_ref().map_or(0, |t| t.total_len) as f64 / n;
        let k1 = widen(self.params.bm25.k1);
        let b = widen(self.params.bm25.b);
        let weights = terms
            .iter()
            .zip(df)
            .map(|((_, count), &df)| {
                (df > 0).then(|| {
                    let df = df as f64;
                    ((1.0 + (n - df + 0.5) / (df + 0.5)).ln(), f64::from(*count))
                })
            })
            .collect();
        (weights, (k1, b, avgdl))
    }

    /// The `k` best documents for `query` among `filter` (all if `None`), exact, in
    /// `(score desc, ordinal asc)` order (module docs). Documents matching no query term
    /// are not hits. Empty if the BM25 parts are not loaded.
    ///
    /// A unit text read from the store that cannot be read, or fails a checksum, is not
    /// used: its chunks are analysed again from their node texts for this query (the same
    /// postings, so the same answer) and its source is told, so the stored value is
    /// rebuilt. Errors: [`IndexError::UnreadableText`] if a node text can be read neither
    /// way, or does not hold the text the unit was built from.
    pub fn text_search(&self, query: &str, k: usize, filter: Option<&Filter>) -> Result<Vec<Hit>, IndexError> {
        let Some(post) = &self.text else {
            return Ok(Vec::new());
        };
        if k == 0 || self.node_count() == 0 {
            return Ok(Vec::new());
        }
        let terms = self.query_terms(query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let nt = terms.len();
        let names: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
        // Each unit's postings of the terms; a unit that cannot be read gives its chunks'
        // parts, analysed again from the node texts.
        let mut fetched = Vec::with_capacity(post.units().len());
        let mut extra: Vec<(u32, TextChunk)> = Vec::new();
        for ((unit, to_view), got) in post.units().iter().zip(post.fetch(&names)) {
            match got {
                Ok(f) => fetched.push(f),
                Err(why) => {
                    fetched.push(vec![None; nt]);
                    extra.extend(self.texts_from_data(unit, to_view, why)?);
                }
            }
        }
        // Each term's chunks in view order with their postings, and its document frequency.
        let mut at: Vec<Vec<(u32, &[Posting])>> = Vec::with_capacity(nt);
        let mut df = vec![0u64; nt];
        for (i, (t, _)) in terms.iter().enumerate() {
            let lists = post.term_lists(i, t, term_hash(t), &fetched, &extra);
            df[i] = lists.df;
            at.push(lists.lists);
        }
        let (weights, (k1, b, avgdl)) = self.bm25_weights(&terms, &df);
        // The most a term adds to a score (`+∞`, so never pruned, for parameters outside
        // BM25's range, where the saturation bound does not hold).
        let bounded = k1 >= 0.0 && (0.0..=1.0).contains(&b);
        let bound: Vec<f64> = weights
            .iter()
            .map(|w| match w {
                Some((idf, count)) if bounded => count * idf * (k1 + 1.0),
                Some(_) => f64::INFINITY,
                None => 0.0,
            })
            .collect();
        // Terms by bound, smallest first: the first `skip` of them are non-essential.
        let mut by_bound: Vec<usize> = (0..nt).collect();
        by_bound.sort_by(|&x, &y| bound[x].total_cmp(&bound[y]).then(x.cmp(&y)));
        let prefix: Vec<f64> = by_bound
            .iter()
            .scan(0.0f64, |acc, &i| {
                *acc += bound[i];
                Some(*acc)
            })
            .collect();
        let bits = filter.map(Filter::bits);
        // The best `k` of the documents in chunks `range` (MaxScore within the range: its
        // own bar, so ranges are independent).
        let scan = |range: std::ops::Range<u32>| -> Vec<Hit> {
            let mut essential = vec![true; nt];
            let mut skip = 0usize;
            let mut top = TopK::new(k);
            let mut pos: Vec<usize> = at.iter().map(|e| e.partition_point(|x| x.0 < range.start)).collect();
            let mut lists: Vec<&[Posting]> = vec![&[]; nt];
            let mut candidates: Vec<Local> = Vec::new();
            // Each step: the next chunk holding an essential term.
            while let Some(c) = (0..nt)
                .filter(|&i| essential[i])
                .filter_map(|i| at[i].get(pos[i]).map(|e| e.0))
                .filter(|&c| c < range.end)
                .min()
            {
                for i in 0..nt {
                    let entries = &at[i];
                    while pos[i] < entries.len() && entries[pos[i]].0 < c {
                        pos[i] += 1;
                    }
                    lists[i] = match entries.get(pos[i]) {
                        Some(&(ec, list)) if ec == c => {
                            pos[i] += 1;
                            list
                        }
                        _ => &[],
                    };
                }
                // Ahead of the next chunks: each term's next postings (each step's address
                // needs the step before it in cache).
                for (i, entries) in at.iter().enumerate() {
                    if let Some(&(_, next)) = entries.get(pos[i]) {
                        prefetch(&next[..next.len().min(16)]);
                    }
                }
                // Candidates: the documents of the essential terms' lists, in the filter (its
                // bitset, so documents the filter drops are never sorted; a chunk it admits
                // nothing of gives none).
                let base = self.offset(c as usize);
                candidates.clear();
                for i in (0..nt).filter(|&i| essential[i]) {
                    let locals = lists[i].iter().map(|p| p.local());
                    match bits {
                        Some(bits) => candidates.extend(locals.filter(|&l| admits(bits, base + l))),
                        None => candidates.extend(locals),
                    }
                }
                candidates.sort_unstable();
                candidates.dedup();
                for &l in &candidates {
                    let dl = f64::from(post.doc_len(c as usize, l));
                    let mut sum = 0.0f64;
                    for (list, w) in lists.iter().zip(&weights) {
                        let Some((idf, count)) = *w else { continue };
                        let Ok(j) = list.binary_search_by_key(&l, |p| p.local()) else {
                            continue;
                        };
                        let tf = f64::from(list[j].tf());
                        let norm = k1 * (1.0 - b + b * dl / avgdl);
                        sum += count * (idf * tf * (k1 + 1.0) / (tf + norm));
                    }
                    top.push(Hit {
                        ordinal: base + l,
                        score: sum as f32,
                    });
                }
                // Raise the bar: terms whose bounds, with every smaller one, stay below it
                // can no longer bring a document in on their own.
                if let Some(bar) = top.bar() {
                    let bar = f64::from(bar);
                    while skip < nt && prefix[skip] * (1.0 + 1e-9) < bar {
                        essential[by_bound[skip]] = false;
                        skip += 1;
                    }
                }
            }
            top.into_sorted()
        };
        // Many postings: the chunks in ranges scanned at once, each range's best `k`
        // merged. Every document a range can still score is scored in full, so the union
        // holds the overall best `k` and the result is the same as one scan's.
        let postings: u64 = df.iter().sum();
        let chunks = self.chunks.len() as u32;
        let pieces = rayon::current_num_threads()
            .min((postings / PARALLEL_POSTINGS) as usize)
            .min(chunks as usize / 64);
        if pieces < 2 {
            return Ok(scan(0..chunks));
        }
        let step = chunks.div_ceil(pieces as u32);
        let found: Vec<Vec<Hit>> = (0..pieces as u32)
            .into_par_iter()
            .map(|p| scan(p * step..((p + 1) * step).min(chunks)))
            .collect();
        Ok(top_k_vec(found.into_iter().flatten().collect(), k))
    }

    /// The parts of `unit`'s chunks in this view (`to_view`), analysed again from their
    /// node texts, after telling the unit's source why the unit could not be read.
    fn texts_from_data(
        &self,
        unit: &UnitText,
        to_view: &[u32],
        why: String,
    ) -> Result<Vec<(u32, TextChunk)>, IndexError> {
        match unit.stored() {
            Some((source, key)) => source.damaged(key, why),
            None => return Err(IndexError::UnreadableText(why)),
        }
        let analyzer = self.params.bm25.analyzer;
        let mut out = Vec::new();
        for (j, &c) in to_view.iter().enumerate() {
            if c == u32::MAX {
                continue;
            }
            let core = &self.chunks[c as usize];
            let texts = (0..core.len() as Local)
                .map(|l| core.text(l))
                .collect::<Result<Vec<_>, _>>()
                .map_err(IndexError::UnreadableText)?;
            let part = TextChunk::build(analyzer, texts.iter().map(|t| t.as_ref()));
            if (0..part.doc_count() as Local).any(|l| part.doc_len(l) != unit.doc_len(j, l)) {
                return Err(IndexError::UnreadableText(format!(
                    "the nodes of chunk {c} do not hold the texts their index was built from"
                )));
            }
            out.push((c, part));
        }
        Ok(out)
    }

    /// The reference for [`CommitIndexes::text_search`]: every chunk probed for every
    /// term and every posting scored, with the same statistics and arithmetic. For tests
    /// that hold the two equal.
    pub fn text_search_reference(&self, query: &str, k: usize, filter: Option<&Filter>) -> Vec<Hit> {
        let Some(post) = &self.text else {
            return Vec::new();
        };
        if k == 0 || self.node_count() == 0 {
            return Vec::new();
        }
        let parts = post.chunk_texts().expect("the reference reads every unit text");
        let terms = self.query_terms(query);
        let nt = terms.len();
        let lists: Vec<&[Posting]> = parts
            .iter()
            .flat_map(|p| terms.iter().map(move |(t, _)| p.postings(t)))
            .collect();
        let mut df = vec![0u64; nt];
        for (j, l) in lists.iter().enumerate() {
            df[j % nt.max(1)] += l.len() as u64;
        }
        let (weights, params) = self.bm25_weights(&terms, &df);
        let mut hits = Vec::new();
        let mut sums: Vec<f64> = Vec::new();
        let mut touched: Vec<Local> = Vec::new();
        for (c, (part, chunk_lists)) in parts.iter().zip(lists.chunks(nt.max(1))).enumerate() {
            let fpart = filter.map(|f| f.part(c));
            if fpart.is_some_and(FilterPart::is_none) || chunk_lists.iter().all(|l| l.is_empty()) {
                continue;
            }
            score_chunk(part, chunk_lists, &weights, params, fpart, &mut sums, &mut touched);
            push_chunk_hits(&mut hits, self.offset(c), &mut touched, &sums, k);
        }
        top_k_vec(hits, k)
    }
}

/// Scores one chunk's documents into `sums` (one slot per document, NaN = untouched) and
/// lists the touched documents in `touched` (increasing).
fn score_chunk(
    part: &TextChunk,
    lists: &[&[Posting]],
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
        for p in *list {
            let (l, tf) = (p.local(), p.tf());
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
