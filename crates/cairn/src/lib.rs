//! # Cairn
//!
//! An embedded, versioned graph database with a deterministic hybrid retriever for AI
//! agents: "git for an agent's knowledge graph".
//!
//! - [`Repo`] — open or create a repository ([`Repo::open`], [`Repo::init`],
//!   [`Repo::in_memory`]), write through [`Transaction`]s, read nodes and edges at any
//!   commit, walk history ([`Repo::log`], [`Repo::diff`], [`Repo::as_of`]), manage branches.
//! - Content addressing: every node, edge, tree node and commit is hashed with blake3 over
//!   a canonical encoding (`storage-format.md`); the same graph has the same hash whatever
//!   the order of writes.
//!
//! ```
//! use cairn::{Edge, Node, NodeId, Repo};
//!
//! let repo = Repo::in_memory()?;
//! let mut tx = repo.transaction()?;
//! let a = NodeId::new("a")?;
//! let b = NodeId::new("b")?;
//! tx.put_node(Node::new(a.clone()).with_label("Doc").with_text("lift and drag"))?;
//! tx.put_node(Node::new(b.clone()).with_label("Doc").with_text("stall"))?;
//! tx.put_edge(Edge::new(a.clone(), "cites", b.clone()))?;
//! let c1 = tx.commit("two docs")?;
//!
//! let mut tx = repo.transaction()?;
//! tx.delete_node(&b)?; // also deletes the edge
//! let c2 = tx.commit("drop b")?;
//! let diff = repo.diff(&c1, &c2)?;
//! assert_eq!(diff.nodes.len(), 1);
//! assert_eq!(diff.edges.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

mod branch_list;
mod derived;
pub mod diff;
mod diff_report;
mod embedders;
pub mod error;
pub mod export;
pub mod fsck;
pub mod gc;
mod history_line;
pub mod import;
mod log_entry;
pub mod merge;
pub mod node_history;
mod patch;
pub mod reflog;
pub mod progress;
mod repo;
pub mod rev;
mod shown_node;
mod tags;
mod time_index;
mod transaction;
mod view;
mod writer;

pub use branch_list::{BranchHead, BranchList};
pub use cairn_core::{Commit, CommitId, Edge, EdgeKey, Hash, Node, NodeId, SparseVector, Validity, Value};
#[doc(inline)]
pub use cairn_retrieve as retrieve;
pub use derived::{DenseReport, IndexReport, IndexStats, DEFAULT_CACHE_BYTES};
pub use diff::{ChangeKind, Diff, EdgeChange, NodeChange};
pub use diff_report::{DiffReport, EdgeDiff, NodeDiff};
pub use embedders::{
    EmbedNodesReport, EmbedderConfig, EmbedderError, OpenAiSettings, QueryEmbedder, DEFAULT_EMBED_BATCH,
    MAX_EMBEDDER_NAME,
};
pub use error::{Error, Result};
pub use export::ExportSummary;
pub use fsck::FsckReport;
pub use gc::{GcOptions, GcReport};
pub use history_line::HistoryLine;
pub use import::{ImportOp, ImportSummary};
pub use log_entry::LogEntry;
pub use merge::{Conflict, MergeKind, MergeOutcome, MergeStrategy, MergeSummary, Resolution};
pub use node_history::NodeHistoryEntry;
pub use patch::NodePatch;
pub use reflog::{RefAction, RefLogEntry};
pub use progress::{Progress, ProgressFn, Step};
pub use repo::{Repo, Stats, StoreKind, DEFAULT_BRANCH};
pub use shown_node::{NodeEdges, ShownNode, ValidAtCheck};
pub use transaction::Transaction;
pub use view::View;
