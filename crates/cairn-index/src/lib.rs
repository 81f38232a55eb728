//! # cairn-index
//!
//! Per-commit indexes, derived from a commit's content alone — the way a search engine
//! treats a segment: immutable, keyed by the hash of what they were derived from, cached in
//! memory, persisted as derived data, never silently stale.
//!
//! Every node of a commit gets a dense **ordinal**: its position in the commit's nodes
//! sorted by [`NodeId`](cairn_core::NodeId) bytes. Ordinal order is node-id order, so
//! "ties broken by node id" is "ties broken by ordinal". Candidate sets are
//! [`RoaringBitmap`](roaring::RoaringBitmap)s of ordinals, and every ranked list is
//! `(score desc, ordinal asc)` with exact scores.
//!
//! Indexes here: [`NodeTable`] (ordinal ↔ id), [`LabelIndex`], [`ValidityColumn`],
//! [`PropertyIndex`], [`DenseIndex`] (exact scan + optional HNSW base), [`SparseIndex`],
//! [`Bm25Index`] (with its [`Analyzer`]), [`Adjacency`] (edges by ordinal), bundled as
//! [`CommitIndexes`].

#![warn(missing_docs)]

pub mod adjacency;
pub mod analyzer;
pub mod bm25;
pub mod bundle;
pub mod dense;
pub mod error;
mod fast_hash;
pub mod hit;
pub mod hnsw;
pub mod labels;
pub mod node_table;
pub mod persist;
pub mod props;
pub mod sparse;
pub mod validity;

pub use adjacency::{Adjacency, AdjacentEdge};
pub use analyzer::Analyzer;
pub use bm25::{Bm25Index, Bm25Params};
pub use bundle::{CommitIndexes, EdgeDelta, IndexParams, NodeDelta};
pub use dense::{DenseIndex, DenseSearch};
pub use error::IndexError;
pub use hit::{top_k, Hit, Ordinal};
pub use hnsw::{HnswBase, HnswParams};
pub use labels::LabelIndex;
pub use node_table::{NodeTable, OrdinalRemap};
pub use props::{PropertyIndex, PropertyPredicate};
pub use sparse::SparseIndex;
pub use validity::ValidityColumn;
