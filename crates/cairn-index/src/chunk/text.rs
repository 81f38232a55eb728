//! The BM25 part of a node chunk: postings and document lengths of its nodes' texts.
//! Collection statistics (N, total length, document frequencies) are summed over a
//! commit's chunks at query time (`view/text.rs`), so scores equal a from-scratch build of
//! the whole commit bit for bit.

use std::cell::RefCell;

use crate::analyzer::{term_of, tokens, Analyzer};
use crate::chunk::node::Local;
use crate::fast_hash::FastMap;

/// Postings of one chunk: for each term (sorted), `(local ordinal, term frequency)` in
/// local order; and each node's length in terms (every node is a document, empty text
/// included).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextChunk {
    /// Terms in byte order.
    pub(crate) terms: Vec<Box<str>>,
    /// Term `i`'s postings are `posts[starts[i]..starts[i + 1]]`.
    pub(crate) starts: Vec<u32>,
    pub(crate) posts: Vec<(Local, u32)>,
    /// Document length per local ordinal.
    pub(crate) doc_len: Vec<u32>,
    /// Sum of `doc_len`.
    pub(crate) total_len: u64,
}

/// Entries kept in a thread's token cache before it is cleared (bounds its memory).
const TOKEN_CACHE_ENTRIES: usize = 200_000;

thread_local! {
    /// Lowercased token → term (`None`: stopword), per stemming setting. Stemming is a pure
    /// function of the token, so the cache changes speed, never output.
    static TOKEN_CACHE: RefCell<[FastMap<Box<str>, Option<Box<str>>>; 2]> =
        RefCell::new([FastMap::default(), FastMap::default()]);
}

impl TextChunk {
    /// Analyses `texts` (local order) with `analyzer`.
    pub(crate) fn build<'a>(analyzer: Analyzer, texts: impl IntoIterator<Item = &'a str>) -> TextChunk {
        let stemmer = analyzer.stemmer();
        // Chunk-local term ids, their postings, and the current document's counts.
        let mut term_ids: FastMap<Box<str>, u32> = FastMap::default();
        let mut lists: Vec<Vec<(Local, u32)>> = Vec::new();
        let mut last_doc: Vec<Local> = Vec::new();
        let mut doc_len = Vec::new();
        TOKEN_CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            let cache = &mut cache[usize::from(analyzer.stem)];
            for (local, text) in texts.into_iter().enumerate() {
                let local = local as Local;
                let lower = text.to_lowercase();
                let mut len = 0u32;
                for token in tokens(&lower) {
                    if !cache.contains_key(token) {
                        if cache.len() >= TOKEN_CACHE_ENTRIES {
                            cache.clear();
                        }
                        let t: Option<Box<str>> = term_of(stemmer.as_ref(), token).map(|t| t.into());
                        cache.insert(token.into(), t);
                    }
                    let Some(Some(term)) = cache.get(token) else { continue };
                    len += 1;
                    let id = match term_ids.get(&**term) {
                        Some(&id) => id,
                        None => {
                            let id = lists.len() as u32;
                            term_ids.insert(term.clone(), id);
                            lists.push(Vec::new());
                            last_doc.push(Local::MAX);
                            id
                        }
                    };
                    let list = &mut lists[id as usize];
                    if last_doc[id as usize] == local {
                        if let Some(last) = list.last_mut() {
                            last.1 += 1;
                        }
                    } else {
                        last_doc[id as usize] = local;
                        list.push((local, 1));
                    }
                }
                doc_len.push(len);
            }
        });
        let mut terms: Vec<(Box<str>, u32)> = term_ids.into_iter().collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut out = TextChunk {
            total_len: doc_len.iter().map(|&l| u64::from(l)).sum(),
            doc_len,
            ..TextChunk::default()
        };
        out.starts.push(0);
        for (term, id) in terms {
            out.terms.push(term);
            out.posts.extend_from_slice(&lists[id as usize]);
            out.starts.push(out.posts.len() as u32);
        }
        out
    }

    /// The postings of `term` (an analysed term), empty if absent.
    pub fn postings(&self, term: &str) -> &[(Local, u32)] {
        match self.terms.binary_search_by(|t| (**t).cmp(term)) {
            Ok(i) => &self.posts[self.starts[i] as usize..self.starts[i + 1] as usize],
            Err(_) => &[],
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
        self.terms.len()
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.terms.iter().map(|t| t.len() + 16).sum::<usize>()
            + self.starts.len() * 4
            + self.posts.len() * 8
            + self.doc_len.len() * 4
            + 128
    }
}
