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
//! Cost: the term directory (`directory.rs`) gives each term's document frequency without
//! reading a part, and the chunks holding it. Chunks are then visited in order under
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
use crate::hit::{top_k_vec, Hit, TopK};
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
        let avgdl = self.text_total_len as f64 / n;
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
    pub fn text_search(&self, query: &str, k: usize, filter: Option<&Filter>) -> Vec<Hit> {
        let (Some(parts), Some(dir)) = (&self.text, &self.text_dir) else {
            return Vec::new();
        };
        if k == 0 || self.node_count() == 0 {
            return Vec::new();
        }
        let terms = self.query_terms(query);
        if terms.is_empty() {
            return Vec::new();
        }
        let nt = terms.len();
        // Each term's chunks in view order, `(chunk, slot)` (`PROBE`: an overlay chunk,
        // whose postings come from a lookup), and its document frequency.
        const PROBE: u32 = u32::MAX;
        let mut at: Vec<Vec<(u32, u32)>> = Vec::with_capacity(nt);
        let mut df = vec![0u64; nt];
        for (i, (t, _)) in terms.iter().enumerate() {
            let entries = dir.key(t.as_str());
            df[i] = entries.base_count;
            let h = term_hash(t);
            let mut extra: Vec<(u32, u32)> = Vec::new();
            for &c in dir.overlay() {
                let n = parts[c as usize].lookup(t, h).len();
                if n > 0 {
                    df[i] += n as u64;
                    extra.push((c, PROBE));
                }
            }
            let mut list: Vec<(u32, u32)> = entries.iter().map(|(c, slot, _)| (c as u32, slot)).collect();
            if !extra.is_empty() {
                list.extend(extra);
                list.sort_unstable();
            }
            at.push(list);
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
        // The best `k` of the documents in chunks `range` (MaxScore within the range: its
        // own bar, so ranges are independent).
        let scan = |range: std::ops::Range<u32>| -> Vec<Hit> {
            let mut essential = vec![true; nt];
            let mut skip = 0usize;
            let mut top = TopK::new(k);
            let mut pos: Vec<usize> = at.iter().map(|e| e.partition_point(|x| x.0 < range.start)).collect();
            let mut lists: Vec<&[Posting]> = vec![&[]; nt];
            let mut candidates: Vec<Local> = Vec::new();
            let mut mask: Vec<u64> = Vec::new();
            // Each step: the next chunk holding an essential term.
            while let Some(c) = (0..nt)
                .filter(|&i| essential[i])
                .filter_map(|i| at[i].get(pos[i]).map(|e| e.0))
                .filter(|&c| c < range.end)
                .min()
            {
                let part = &parts[c as usize];
                let fpart = filter.map(|f| f.part(c as usize));
                for i in 0..nt {
                    let entries = &at[i];
                    while pos[i] < entries.len() && entries[pos[i]].0 < c {
                        pos[i] += 1;
                    }
                    lists[i] = match entries.get(pos[i]) {
                        Some(&(ec, slot)) if ec == c => {
                            pos[i] += 1;
                            if slot == PROBE {
                                part.postings(&terms[i].0)
                            } else {
                                part.postings_at(slot as usize)
                            }
                        }
                        _ => &[],
                    };
                }
                // Ahead of the next chunks: each term's part a few chunks on, its term's
                // posting offsets nearer, and the postings of its next chunk (each step's
                // address needs the step before it in cache).
                for (i, entries) in at.iter().enumerate() {
                    if let Some(&(c, _)) = entries.get(pos[i] + 3) {
                        prefetch(std::slice::from_ref::<TextChunk>(&parts[c as usize]));
                    }
                    if let Some(&(c, slot)) = entries.get(pos[i] + 1) {
                        if slot != PROBE {
                            parts[c as usize].prefetch_offsets(slot as usize);
                        }
                    }
                    if let Some(&(c, slot)) = entries.get(pos[i]) {
                        if slot != PROBE {
                            let next = parts[c as usize].postings_at(slot as usize);
                            prefetch(&next[..next.len().min(16)]);
                        }
                    }
                }
                if fpart.is_some_and(FilterPart::is_none) {
                    continue;
                }
                // Candidates: the documents of the essential terms' lists, in the filter (read
                // from a bitmask of the chunk's admitted locals, so documents the filter drops
                // are never sorted).
                candidates.clear();
                match fpart {
                    Some(FilterPart::Some(b)) => {
                        mask.clear();
                        mask.resize(self.chunks[c as usize].len().div_ceil(64), 0);
                        for l in b.iter() {
                            if let Some(w) = mask.get_mut((l >> 6) as usize) {
                                *w |= 1u64 << (l & 63);
                            }
                        }
                        let admitted =
                            |l: &Local| mask.get((l >> 6) as usize).is_some_and(|w| w & (1u64 << (l & 63)) != 0);
                        for i in (0..nt).filter(|&i| essential[i]) {
                            candidates.extend(lists[i].iter().map(|p| p.local()).filter(admitted));
                        }
                    }
                    _ => {
                        for i in (0..nt).filter(|&i| essential[i]) {
                            candidates.extend(lists[i].iter().map(|p| p.local()));
                        }
                    }
                }
                candidates.sort_unstable();
                candidates.dedup();
                let base = self.offset(c as usize);
                for &l in &candidates {
                    let dl = f64::from(part.doc_len(l));
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
        let chunks = parts.len() as u32;
        let pieces = rayon::current_num_threads()
            .min((postings / PARALLEL_POSTINGS) as usize)
            .min(chunks as usize / 64);
        if pieces < 2 {
            return scan(0..chunks);
        }
        let step = chunks.div_ceil(pieces as u32);
        let found: Vec<Vec<Hit>> = (0..pieces as u32)
            .into_par_iter()
            .map(|p| scan(p * step..((p + 1) * step).min(chunks)))
            .collect();
        top_k_vec(found.into_iter().flatten().collect(), k)
    }

    /// The reference for [`CommitIndexes::text_search`]: every chunk probed for every
    /// term and every posting scored, with the same statistics and arithmetic. For tests
    /// that hold the two equal.
    pub fn text_search_reference(&self, query: &str, k: usize, filter: Option<&Filter>) -> Vec<Hit> {
        let Some(parts) = &self.text else {
            return Vec::new();
        };
        if k == 0 || self.node_count() == 0 {
            return Vec::new();
        }
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
