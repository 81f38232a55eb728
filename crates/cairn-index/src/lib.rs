//! # cairn-index
//!
//! Cairn's derived indexes, as content-defined **chunks** that commits share the way they
//! share tree nodes. Nothing here does I/O: the repository loads, builds and stores chunks;
//! this crate defines them, encodes them, and searches a commit's view of them.
//!
//! * [`chunking`] — the rule that cuts a sorted key list into spans at a tree level, the
//!   same spans as the Merkle search tree's (`storage-format.md` §7.2).
//! * [`chunk`] — one span's parts: core columns ([`NodeChunk`]: ids, hashes, labels,
//!   validity, properties, text), BM25 postings ([`TextChunk`]), sparse and dense parts
//!   per model ([`SparseChunk`], [`DenseChunk`]), and edge chunks ([`EdgeChunk`]).
//! * [`CommitIndexes`] — a commit's view: its chunks in key order with prefix sums, so a
//!   node's ordinal (its rank in id order) is its chunk's offset plus its local ordinal.
//!   Every lane runs per chunk and merges exactly: label, property and validity gates as
//!   per-chunk [`Filter`]s; BM25 with the commit's statistics summed over chunks; sparse
//!   dot products; the dense lane exact by default (an int8 scan with a proven bound, then
//!   exact rescoring) and approximate on request (HNSW graphs per [unit](mod@unit)).
//! * [`dates`] — dates written in text (one grammar for queries and node texts); each
//!   node chunk stores its nodes' [`dates::text_dates`].
//! * [`persist`] — the bytes of every stored part, read by one bounded reader.
//!
//! Every ranked list is `(score desc, ordinal asc)` with exact scores.

#![warn(missing_docs)]

pub mod analyzer;
pub mod chunk;
pub mod chunking;
pub mod dates;
pub(crate) mod dense;
pub mod error;
pub mod fast_hash;
pub mod hit;
pub mod hnsw;
pub mod params;
pub mod persist;
pub mod props;
pub mod unit;
pub mod unit_text;
pub mod validity;
pub mod view;

pub use analyzer::Analyzer;
pub use chunk::{ChunkParts, DenseChunk, DenseHead, EdgeChunk, EdgeDirection, NodeChunk, SparseChunk, TextChunk};
pub use dense::rows::RowSource;
pub use error::IndexError;
pub use hit::{top_k, top_k_vec, Hit, Ordinal};
pub use hnsw::GraphParams;
pub use params::{Bm25Params, IndexParams, INDEX_FORMAT_VERSION};
pub use props::PropertyPredicate;
pub use unit::UnitGraph;
pub use unit_text::UnitText;
pub use view::{
    ann_ef, AdjacentEdge, AnnOptions, BaseUnit, CommitIndexes, DenseSearch, DenseView, EdgeView, Filter, FilterPart,
    IndexNeeds, TextUnit, ANN_MIN_ROWS, EXACT_SCAN_ROWS,
};
