//! The BM25 part of a node chunk: postings and document lengths of its nodes' texts.
//! Collection statistics (N, total length, document frequencies) are summed over a
//! commit's chunks at query time (`view/text.rs`), so scores equal a from-scratch build of
//! the whole commit bit for bit.

use std::cell::RefCell;

use crate::analyzer::{ascii_tokens, term_of, tokens, Analyzer};
use crate::chunk::node::Local;
use crate::chunk::offsets::Offsets;
use crate::chunk::scatter::scatter_by_byte;
use crate::chunk::token_table::TokenTable;
use crate::dense::prefetch::prefetch;
use crate::fast_hash::FastMap;
use crate::params::MAX_CHUNK_KEYS;

/// One posting: a document (local ordinal) and the term's frequency in it, packed in 32
/// bits (local ordinal in the top 12 bits, frequency in the 20 below), so that a list sorted
/// by document is sorted as integers. Both always fit: a chunk holds at most
/// [`MAX_CHUNK_KEYS`] nodes, and a text of at most
/// [`MAX_TEXT_BYTES`](cairn_core::limits::MAX_TEXT_BYTES) has at most one token per two
/// bytes (a token is one or more alphanumeric characters, each token but the last followed
/// by a separator), so a term's frequency is below [`TF_LIMIT`]. In memory only: the
/// stored part writes the two as separate `u32`s (storage-format §7.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Posting(u32);

/// Bits of a [`Posting`] holding the local ordinal.
const LOCAL_BITS: u32 = 12;
/// Bits holding the term frequency.
const TF_BITS: u32 = 32 - LOCAL_BITS;
/// Frequencies are below this.
pub const TF_LIMIT: u32 = 1 << TF_BITS;

const _: () = assert!(MAX_CHUNK_KEYS <= 1 << LOCAL_BITS);
const _: () = assert!(cairn_core::limits::MAX_TEXT_BYTES / 2 + 1 < TF_LIMIT as usize);

impl Posting {
    /// A posting of document `local` with frequency `tf`, `None` if either is out of
    /// range (a local ordinal of [`MAX_CHUNK_KEYS`] or more, a frequency of
    /// [`TF_LIMIT`] or more).
    pub fn new(local: Local, tf: u32) -> Option<Posting> {
        (local < (1 << LOCAL_BITS) && tf < TF_LIMIT).then_some(Posting(local << TF_BITS | tf))
    }

    /// The document's local ordinal.
    #[inline]
    pub fn local(self) -> Local {
        self.0 >> TF_BITS
    }

    /// The term's frequency in the document.
    #[inline]
    pub fn tf(self) -> u32 {
        self.0 & (TF_LIMIT - 1)
    }

    /// The packed word (the stored form in a unit text, `unit_text.rs`).
    #[inline]
    pub(crate) fn raw(self) -> u32 {
        self.0
    }

    /// A posting from its packed word (any word unpacks; callers check the fields).
    #[inline]
    pub(crate) fn from_raw(w: u32) -> Posting {
        Posting(w)
    }
}

/// Postings of one chunk: for each term (sorted), `(local ordinal, term frequency)` in
/// local order; and each node's length in terms (every node is a document, empty text
/// included).
#[derive(Debug, Clone, Default)]
pub struct TextChunk {
    /// Terms in byte order, concatenated: term `i` is `term_bytes[term_end[i-1]..term_end[i]]`.
    pub(crate) term_bytes: String,
    pub(crate) term_end: Offsets,
    /// An open-addressing table over the terms: slot `term_hash & mask` onwards (linear
    /// probing) holds `(hash's top 12 bits) << 20 | (term index + 1)`, 0 for empty. A
    /// lookup for a term the chunk lacks usually costs one cache line; a match is confirmed
    /// on the term's bytes, so collisions cost time, never correctness. Built in memory on
    /// the chunk's first lookup by term, never stored: a view reads most chunks' postings
    /// from unit texts (`unit_text.rs`), and a unit text is built from its parts by term
    /// index, so only the chunks no unit covers (probed by term) ever need one. Empty
    /// (binary search instead) for chunks of 2²⁰ − 1 terms or more.
    table: std::sync::OnceLock<Vec<u32>>,
    /// Term `i`'s postings are `posts[starts[i]..starts[i + 1]]`.
    pub(crate) starts: Offsets,
    pub(crate) posts: Vec<Posting>,
    /// Document length per local ordinal.
    pub(crate) doc_len: Vec<u32>,
    /// Sum of `doc_len`.
    pub(crate) total_len: u64,
}

/// Equality of the content (the lookup table is a cache of it).
impl PartialEq for TextChunk {
    fn eq(&self, other: &Self) -> bool {
        self.term_bytes == other.term_bytes
            && self.term_end == other.term_end
            && self.starts == other.starts
            && self.posts == other.posts
            && self.doc_len == other.doc_len
            && self.total_len == other.total_len
    }
}

/// Tokens a thread's vocabulary holds before it is cleared (bounds its memory).
const VOCABULARY_TOKENS: usize = 200_000;

/// Bytes of terms a thread's vocabulary holds before it is cleared (bounds its memory with
/// [`VOCABULARY_TOKENS`]: a few long tokens can weigh more than many short ones).
const VOCABULARY_TEXT_BYTES: usize = 64 << 20;

/// Tokens of a document hashed (and their table slots asked for) before they are looked up.
const WINDOW: usize = 64;

/// A token of a [`WINDOW`]: its place in its document and, for a short one, its
/// [`inline_key`] and that key's hash.
struct Pending {
    start: usize,
    end: usize,
    short: Option<(u128, u64)>,
}

/// A chunk build's token state, for [`Vocabulary::count_tokens`].
struct ChunkTokens {
    /// The build's epoch (`Vocabulary::seen`).
    epoch: u32,
    /// Scratch: a [`WINDOW`] of tokens.
    window: Vec<Pending>,
    /// Chunk-local term id → vocabulary id, in first-seen order.
    local_terms: Vec<u32>,
    /// Each counted token's (chunk-local term id, document), in document order.
    occurrences: Vec<(u32, Local)>,
}

/// Marks a stopword in a vocabulary.
const STOP: u32 = u32::MAX;

/// Bytes of a token or term held inline in a [`Vocabulary`] key.
const INLINE: usize = 16;

/// The first [`INLINE`] bytes of `s`, zero-padded, as one integer: little-endian for a
/// token's table key (with `s` at most [`INLINE`] bytes, the key is the token), big-endian
/// for a term's order key (integers in the order of the byte strings, shorter first on a
/// shared prefix). A token or term is alphanumeric, so it holds no zero byte and the padding
/// never makes two strings equal.
fn inline_key(s: &[u8], big_endian: bool) -> u128 {
    let mut a = [0u8; INLINE];
    let n = s.len().min(INLINE);
    a[..n].copy_from_slice(&s[..n]);
    if big_endian {
        u128::from_be_bytes(a)
    } else {
        u128::from_le_bytes(a)
    }
}

/// [`inline_key`] (little-endian) of `doc[start..end]`, at most [`INLINE`] bytes: one
/// 16-byte load, masked to the token's length, where `doc` holds 16 bytes from `start`
/// (a short copy's bytes, read back as one integer, cost a stall on every token).
#[inline]
fn short_key(doc: &[u8], start: usize, end: usize) -> u128 {
    let len = end - start;
    debug_assert!(len <= INLINE);
    match doc.get(start..start + INLINE) {
        Some(w) => {
            let raw = u128::from_le_bytes(w.try_into().expect("INLINE bytes"));
            if len == INLINE {
                raw
            } else {
                raw & ((1u128 << (8 * len)) - 1)
            }
        }
        None => inline_key(&doc[start..end], false),
    }
}

/// `items` — each a term's order key (its [`inline_key`], big-endian) and a local id — in
/// the order of `cmp`, which orders by the key first: bucketed by the key's first byte (a
/// count and a scatter), each bucket then sorted alone (a chunk's ~2,000 terms spread over
/// a few dozen first letters: a fraction of one sort's comparisons).
fn sort_by_order_key(
    items: &[(u128, u32)],
    cmp: impl Fn(&(u128, u32), &(u128, u32)) -> std::cmp::Ordering,
) -> Vec<(u128, u32)> {
    let mut out = vec![(0u128, 0u32); items.len()];
    let bounds = scatter_by_byte(items, &mut out, |e| (e.0 >> 120) as u8);
    for w in bounds.windows(2) {
        out[w[0]..w[1]].sort_unstable_by(&cmp);
    }
    out
}

/// A thread's analysis memo for one analyzer setting: each token met maps to an interned
/// term id, so a token costs one hash lookup (of an inline key, for tokens of up to
/// [`INLINE`] bytes: no pointer to follow; prefetched a window ahead,
/// [`Vocabulary::count_tokens`]). Stemming is a pure function of the token, so
/// the memo changes speed, never output. It also keeps the scratch buffers of a chunk's
/// build that grow with its texts (occurrences, documents, the lowercased text), so a
/// build allocates little beyond what it returns.
#[derive(Default)]
struct Vocabulary {
    /// Lowercased token of at most [`INLINE`] bytes (its little-endian [`inline_key`]) →
    /// term id ([`STOP`] for a stopword).
    short_tokens: TokenTable,
    /// Longer lowercased tokens → term id.
    long_tokens: FastMap<Box<str>, u32>,
    /// Term string → term id.
    term_ids: FastMap<Box<str>, u32>,
    /// Every term's bytes, in id order: term `g` is `term_text[term_end[g - 1]..term_end[g]]`
    /// (one buffer, so a chunk's terms are read from a few cache lines, not one
    /// allocation each).
    term_text: String,
    term_end: Vec<usize>,
    /// Term id → its big-endian [`inline_key`]: terms sort by it, then by their bytes.
    order: Vec<u128>,
    /// Term id → (chunk build it was last seen in, its chunk-local id there).
    seen: Vec<(u32, u32)>,
    /// The current chunk build (starts at 1: 0 marks "never").
    epoch: u32,
    /// Scratch of a build: each counted token's (chunk-local term id, document), in
    /// document order.
    occurrences: Vec<(u32, Local)>,
    /// Scratch: chunk-local term id → vocabulary id.
    local_terms: Vec<u32>,
    /// Scratch: chunk-local term id → where its documents start in `docs`.
    at: Vec<u32>,
    /// Scratch: the occurrences' documents grouped by chunk-local term id.
    docs: Vec<Local>,
    /// Scratch: the lowercased text.
    lower: String,
}

impl Vocabulary {
    /// Term `g`.
    #[inline]
    fn term(&self, g: u32) -> &str {
        let g = g as usize;
        let start = if g == 0 { 0 } else { self.term_end[g - 1] };
        &self.term_text[start..self.term_end[g]]
    }

    /// The term id of `token`: for a short one, its [`inline_key`] `key` with that key's
    /// hash `h` in [`Vocabulary::short_tokens`]; analysed on first sight.
    fn term_id(&mut self, stemmer: Option<&rust_stemmers::Stemmer>, token: &str, short: Option<(u128, u64)>) -> u32 {
        let known = match short {
            Some((k, h)) => self.short_tokens.get(k, h),
            None => self.long_tokens.get(token).copied(),
        };
        if let Some(id) = known {
            return id;
        }
        let id = match term_of(stemmer, token) {
            None => STOP,
            Some(term) => match self.term_ids.get(term.as_ref()) {
                Some(&id) => id,
                None => {
                    let id = self.term_end.len() as u32;
                    self.order.push(inline_key(term.as_bytes(), true));
                    self.term_text.push_str(&term);
                    self.term_end.push(self.term_text.len());
                    self.term_ids.insert(term.into_owned().into_boxed_str(), id);
                    self.seen.push((0, 0));
                    id
                }
            },
        };
        match short {
            Some((k, h)) => self.short_tokens.insert(k, h, id),
            None => {
                self.long_tokens.insert(token.into(), id);
            }
        }
        id
    }

    /// Counts the tokens `toks` of document `doc` (`local`; each token a slice of `doc`)
    /// into `chunk`: appends each counted token's (chunk-local term id, `local`) to its
    /// occurrences, numbering a term on its first sight in the chunk; returns the document's
    /// length in terms. Tokens are hashed and their table slots asked for a [`WINDOW`] at a
    /// time before they are looked up (`token_table.rs`).
    fn count_tokens<'t>(
        &mut self,
        stemmer: Option<&rust_stemmers::Stemmer>,
        chunk: &mut ChunkTokens,
        local: Local,
        doc: &'t str,
        toks: impl Iterator<Item = &'t str>,
    ) -> u32 {
        let ChunkTokens {
            epoch,
            window,
            local_terms,
            occurrences,
        } = chunk;
        let epoch = *epoch;
        let mut len = 0u32;
        let mut toks = toks.peekable();
        while toks.peek().is_some() {
            window.clear();
            for token in toks.by_ref().take(WINDOW) {
                // A token is a slice of its document (both splitters lend them).
                let start = token.as_ptr() as usize - doc.as_ptr() as usize;
                debug_assert!(start + token.len() <= doc.len());
                let short = (token.len() <= INLINE).then(|| {
                    let k = short_key(doc.as_bytes(), start, start + token.len());
                    let h = self.short_tokens.hash(k);
                    self.short_tokens.prefetch(h);
                    (k, h)
                });
                window.push(Pending {
                    start,
                    end: start + token.len(),
                    short,
                });
            }
            // Then their term ids, asking for each term's chunk state (`seen`) ahead of
            // its use too.
            let mut gids = [STOP; WINDOW];
            for (g, p) in gids.iter_mut().zip(window.iter()) {
                *g = self.term_id(stemmer, &doc[p.start..p.end], p.short);
                if let Some(s) = self.seen.get(*g as usize) {
                    prefetch(std::slice::from_ref(s));
                }
            }
            for &gid in &gids[..window.len()] {
                if gid == STOP {
                    continue;
                }
                len += 1;
                let (e, lid) = self.seen[gid as usize];
                let lid = if e == epoch {
                    lid
                } else {
                    let lid = local_terms.len() as u32;
                    self.seen[gid as usize] = (epoch, lid);
                    local_terms.push(gid);
                    lid
                };
                occurrences.push((lid, local));
            }
        }
        window.clear();
        len
    }

    /// Tokens memoised.
    fn tokens(&self) -> usize {
        self.short_tokens.len() + self.long_tokens.len()
    }
}

/// The most bytes a scratch buffer of a [`Vocabulary`] keeps between builds.
const SCRATCH_KEEP_BYTES: usize = 4 << 20;

/// `v`, or an empty vector if it holds more than [`SCRATCH_KEEP_BYTES`].
fn kept<T>(v: Vec<T>) -> Vec<T> {
    if v.capacity() * std::mem::size_of::<T>() <= SCRATCH_KEEP_BYTES {
        v
    } else {
        Vec::new()
    }
}

thread_local! {
    /// One vocabulary per stemming setting.
    static VOCABULARY: RefCell<[Vocabulary; 2]> = RefCell::new([Vocabulary::default(), Vocabulary::default()]);
}

impl TextChunk {
    /// Analyses `texts` (local order) with `analyzer`.
    pub(crate) fn build<'a>(analyzer: Analyzer, texts: impl IntoIterator<Item = &'a str>) -> TextChunk {
        let stemmer = analyzer.stemmer();
        let mut out = TextChunk::default();
        VOCABULARY.with(|vocab| {
            let mut vocab = vocab.borrow_mut();
            let v = &mut vocab[usize::from(analyzer.stem)];
            if v.tokens() >= VOCABULARY_TOKENS || v.term_text.len() >= VOCABULARY_TEXT_BYTES || v.epoch == u32::MAX {
                *v = Vocabulary::default();
            }
            v.epoch += 1;
            let epoch = v.epoch;
            let mut chunk = ChunkTokens {
                epoch,
                window: Vec::with_capacity(WINDOW),
                local_terms: std::mem::take(&mut v.local_terms),
                occurrences: std::mem::take(&mut v.occurrences),
            };
            chunk.local_terms.clear();
            chunk.occurrences.clear();
            let mut lower = std::mem::take(&mut v.lower);
            // Each counted token's chunk-local term id (in first-seen order) and document.
            for (local, text) in texts.into_iter().enumerate() {
                let local = local as Local;
                lower.clear();
                let ascii = text.is_ascii();
                if ascii {
                    // What `to_lowercase` gives for ASCII, without a fresh string.
                    lower.push_str(text);
                    lower.make_ascii_lowercase();
                } else {
                    lower.push_str(&text.to_lowercase());
                }
                let len = if ascii {
                    v.count_tokens(stemmer.as_ref(), &mut chunk, local, &lower, ascii_tokens(&lower))
                } else {
                    v.count_tokens(stemmer.as_ref(), &mut chunk, local, &lower, tokens(&lower))
                };
                out.doc_len.push(len);
            }
            let ChunkTokens {
                local_terms,
                occurrences,
                ..
            } = chunk;
            // The documents of each local term, grouped by a counting sort (stable: in
            // document order within a term).
            let mut at = std::mem::take(&mut v.at);
            at.clear();
            at.resize(local_terms.len() + 1, 0);
            for &(lid, _) in &occurrences {
                at[lid as usize + 1] += 1;
            }
            for i in 1..at.len() {
                at[i] += at[i - 1];
            }
            let mut docs = std::mem::take(&mut v.docs);
            docs.clear();
            docs.resize(occurrences.len(), 0);
            let mut next = at.clone();
            for &(lid, local) in &occurrences {
                docs[next[lid as usize] as usize] = local;
                next[lid as usize] += 1;
            }
            // Local terms in byte order of their terms (distinct ids, distinct terms: a
            // strict order), sorted by their order keys gathered beside them (the terms'
            // bytes are compared only on a shared 16-byte prefix).
            let by_term: Vec<(u128, u32)> = local_terms
                .iter()
                .enumerate()
                .map(|(lid, &g)| (v.order[g as usize], lid as u32))
                .collect();
            let by_term = sort_by_order_key(&by_term, |a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| v.term(local_terms[a.1 as usize]).cmp(v.term(local_terms[b.1 as usize])))
            });
            let term_bytes: usize = local_terms.iter().map(|&g| v.term(g).len()).sum();
            out.term_bytes.reserve_exact(term_bytes);
            out.term_end.reserve_exact(local_terms.len());
            out.starts.reserve_exact(local_terms.len() + 1);
            out.starts.push(0);
            out.posts.reserve(occurrences.len());
            for (_, lid) in by_term {
                out.push_term(v.term(local_terms[lid as usize]));
                // Runs of one document are its frequency. In range by the limits (see
                // `Posting`). Only a node that skipped validation (a text past
                // `MAX_TEXT_BYTES`, never stored) can count more: it counts
                // `TF_LIMIT − 1`. Chunks never exceed `MAX_CHUNK_KEYS` nodes (the chunking
                // rule).
                let group = &docs[at[lid as usize] as usize..at[lid as usize + 1] as usize];
                for run in group.chunk_by(|a, b| a == b) {
                    debug_assert!((run[0] as usize) < MAX_CHUNK_KEYS);
                    out.posts
                        .extend(Posting::new(run[0], (run.len() as u32).min(TF_LIMIT - 1)));
                }
                out.starts.push(out.posts.len() as u32);
            }
            // Kept for the next build, unless a huge text grew them.
            v.occurrences = kept(occurrences);
            v.local_terms = kept(local_terms);
            v.at = kept(at);
            v.docs = kept(docs);
            v.lower = if lower.capacity() <= SCRATCH_KEEP_BYTES {
                lower
            } else {
                String::new()
            };
        });
        out.posts.shrink_to_fit();
        out.total_len = out.doc_len.iter().map(|&l| u64::from(l)).sum();
        out
    }

    /// The lookup table over the terms, built on first use (after the last
    /// [`TextChunk::push_term`]).
    fn table(&self) -> &[u32] {
        self.table.get_or_init(|| {
            let n = self.term_end.len();
            if n >= TABLE_MAX_TERMS {
                return Vec::new();
            }
            // Load factor at most 1/2: a term the chunk lacks (most chunks lack most query
            // terms) then ends on an empty slot after ~1.5 probes, nearly always in one line.
            let size = (2 * n + 1).next_power_of_two().max(8);
            let mask = size - 1;
            let mut table = vec![0u32; size];
            for i in 0..n {
                let h = term_hash(self.term(i));
                let mut slot = (h as usize) & mask;
                while table[slot] != 0 {
                    slot = (slot + 1) & mask;
                }
                table[slot] = tag_of(h) | (i as u32 + 1);
            }
            table
        })
    }

    /// A part of documents with lengths `doc_len` and no terms yet
    /// ([`TextChunk::push_postings`] adds them).
    pub(crate) fn with_lengths(doc_len: Vec<u32>) -> TextChunk {
        let mut t = TextChunk {
            total_len: doc_len.iter().map(|&l| u64::from(l)).sum(),
            doc_len,
            ..TextChunk::default()
        };
        t.starts.push(0);
        t
    }

    /// Appends a term (greater than every term so far) with its postings.
    pub(crate) fn push_postings(&mut self, term: &str, postings: &[Posting]) {
        self.push_term(term);
        self.posts.extend_from_slice(postings);
        self.starts.push(self.posts.len() as u32);
    }

    /// Appends a term (greater than every term so far).
    pub(crate) fn push_term(&mut self, term: &str) {
        self.term_bytes.push_str(term);
        self.term_end.push(self.term_bytes.len() as u32);
    }

    /// Term `i`.
    pub(crate) fn term(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.term_end.get(i - 1) as usize };
        &self.term_bytes[start..self.term_end.get(i) as usize]
    }

    /// The postings of term `i`.
    pub(crate) fn postings_at(&self, i: usize) -> &[Posting] {
        &self.posts[self.starts.get(i) as usize..self.starts.get(i + 1) as usize]
    }

    /// The postings of `term` (an analysed term), empty if absent.
    pub fn postings(&self, term: &str) -> &[Posting] {
        self.lookup(term, term_hash(term))
    }

    /// [`TextChunk::postings`] with the term's hash computed once by the caller.
    pub(crate) fn lookup(&self, term: &str, hash: u64) -> &[Posting] {
        let table = self.table();
        if table.is_empty() {
            // No table (none needed for an empty chunk; too many terms for its encoding).
            let mut lo = 0;
            let mut hi = self.term_end.len();
            while lo < hi {
                let mid = (lo + hi) / 2;
                match self.term(mid).cmp(term) {
                    std::cmp::Ordering::Less => lo = mid + 1,
                    std::cmp::Ordering::Greater => hi = mid,
                    std::cmp::Ordering::Equal => return self.postings_at(mid),
                }
            }
            return &[];
        }
        let mask = table.len() - 1;
        let tag = tag_of(hash);
        let mut slot = (hash as usize) & mask;
        loop {
            let e = table[slot];
            if e == 0 {
                return &[];
            }
            if e & !INDEX_MASK == tag {
                let i = (e & INDEX_MASK) as usize - 1;
                if self.term(i) == term {
                    return self.postings_at(i);
                }
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Number of documents (the chunk's nodes).
    pub fn doc_count(&self) -> usize {
        self.doc_len.len()
    }

    /// Length in terms of document `local`.
    pub fn doc_len(&self, local: Local) -> u32 {
        self.doc_len[local as usize]
    }

    /// Sum of the document lengths.
    pub fn total_len(&self) -> u64 {
        self.total_len
    }

    /// Distinct terms.
    pub fn term_count(&self) -> usize {
        self.term_end.len()
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.term_bytes.len()
            + self.term_end.heap_bytes()
            + self.table.get().map_or(0, |t| t.len() * 4)
            + self.starts.heap_bytes()
            + self.posts.len() * 4
            + self.doc_len.len() * 4
            + 128
    }
}

/// Bits of a table entry holding the term index plus one.
const INDEX_MASK: u32 = (1 << 20) - 1;
/// Chunks with this many terms or more get no table.
const TABLE_MAX_TERMS: usize = INDEX_MASK as usize;

/// The top 12 bits of a term hash, in place above the index bits.
fn tag_of(hash: u64) -> u32 {
    ((hash >> 52) as u32) << 20
}

/// A fixed 64-bit hash of a term for in-memory lookups: FNV-1a, then murmur3's `fmix64`.
pub(crate) fn term_hash(term: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in term.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorting_by_first_byte_then_buckets_equals_one_sort() {
        let terms = [
            "b",
            "ab",
            "a",
            "zz",
            "z",
            "a0",
            "é",
            "abcdefghijklmnopq",
            "abcdefghijklmnopr",
            "abcdefghijklmnop",
            "0",
        ];
        let items: Vec<(u128, u32)> = terms
            .iter()
            .enumerate()
            .map(|(i, t)| (inline_key(t.as_bytes(), true), i as u32))
            .collect();
        let cmp =
            |a: &(u128, u32), b: &(u128, u32)| a.0.cmp(&b.0).then_with(|| terms[a.1 as usize].cmp(terms[b.1 as usize]));
        let mut expected = items.clone();
        expected.sort_unstable_by(cmp);
        let sorted = sort_by_order_key(&items, cmp);
        assert_eq!(sorted, expected);
        let in_order: Vec<&str> = sorted.iter().map(|e| terms[e.1 as usize]).collect();
        let mut bytes_order = terms.to_vec();
        bytes_order.sort();
        assert_eq!(in_order, bytes_order);
    }

    #[test]
    fn short_key_equals_inline_key_at_every_place_and_length() {
        let doc = "ab cdefghijklmnopqrstu v wxyz0123456789 é9 x";
        let bytes = doc.as_bytes();
        for start in 0..bytes.len() {
            for end in start + 1..=(start + INLINE).min(bytes.len()) {
                assert_eq!(
                    short_key(bytes, start, end),
                    inline_key(&bytes[start..end], false),
                    "{start}..{end}"
                );
            }
        }
    }
}
