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
//!
//! ## The API at a glance
//!
//! Everything is reached from the crate root (the modules are private; this list is the
//! deliberate face of the crate):
//!
//! | to … | use |
//! | --- | --- |
//! | open, create, configure | [`Repo`], [`StoreKind`], [`Repo::set_progress`] ([`Progress`], [`Step`]) |
//! | write | [`Transaction`] (put, delete, [`NodePatch`], invalidate), [`Repo::import_jsonl`] ([`ImportOp`], [`parse_import_line`]) |
//! | read a commit | [`Repo::node_at`], [`Repo::iter_nodes_at`], [`Repo::edges_from`], [`View`], [`ShownNode`], [`NodeEdges`] |
//! | travel in time | [`Repo::resolve`] (revisions), [`Repo::as_of`], [`parse_time`] / [`parse_time_ms`], [`format_time_ms`], [`system_time_ms`] |
//! | see what changed | [`Repo::log`] ([`LogEntry`]), [`Repo::diff`] ([`Diff`], [`DiffReport`], [`FieldChange`]), [`Repo::history`] ([`NodeHistoryEntry`], [`HistoryLine`]) |
//! | branch, tag, merge, recover | [`Repo::create_branch`] ([`BranchName`]), [`BranchList`], [`Repo::create_tag`], [`Repo::merge`] ([`MergeOutcome`], [`Conflict`], [`Resolution`], [`MergeSummary`]), [`Repo::reflog`] ([`RefLogEntry`]) |
//! | retrieve | [`Repo::retrieve`] and the [`retrieve`] module ([`retrieve::Retrieval`], [`retrieve::RetrievalResult`]) |
//! | embed | [`EmbedderConfig`], [`Repo::embed_nodes`], [`QueryEmbedder`] |
//! | move data | [`Repo::export_jsonl`] ([`NodeLine`], [`EdgeLine`]), [`Repo::import_jsonl`] |
//! | look after a repository | [`Repo::build_indexes`] ([`IndexReport`]), [`Repo::indexes`] ([`CommitIndexes`]), [`Repo::fsck`] ([`FsckReport`]), [`Repo::gc`] ([`GcOptions`], [`GcReport`]), [`Repo::stats`] |
//! | handle errors | [`Error`], classified by [`Error::kind`] as an [`ErrorKind`] (and the types it wraps: [`ValidationError`], [`StoreError`], [`GraphError`], [`IndexError`], [`RetrieveError`], [`ParseIdError`]), [`EmbedderError`] |

#![warn(missing_docs)]

// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

mod commit_cache;
mod dense_dims;
mod derived;
mod diff;
mod embed_on_write;
mod embedders;
mod error;
mod error_kind;
mod export;
mod fsck;
mod gc;
mod import;
mod merge;
mod node_history;
mod patch;
mod pins;
mod progress;
mod reflog;
mod remote;
mod repo;
mod rev;
mod shapes;
mod tags;
mod transaction;
mod view;
mod writer;

pub use cairn_core::{Commit, CommitId, Edge, EdgeKey, Hash, Node, NodeId, SparseVector, Validity, Value};
pub use cairn_index::CommitIndexes;
#[doc(inline)]
pub use cairn_retrieve as retrieve;
pub use derived::{DenseReport, IndexReport, IndexStats, DEFAULT_MEMORY_BUDGET};
pub use diff::{edge_field_changes, node_field_changes, ChangeKind, Diff, EdgeChange, FieldChange, NodeChange};
pub use embedders::{
    EmbedNodesReport, EmbedderConfig, EmbedderError, OpenAiSettings, QueryEmbedder, DEFAULT_EMBED_BATCH,
    MAX_EMBEDDER_NAME,
};
pub use error::{Error, Result};
pub use error_kind::ErrorKind;
pub use shapes::branch_list::{BranchHead, BranchList};
pub use shapes::diff_report::{DiffReport, EdgeDiff, NodeDiff};
// The error types `Error` wraps, for callers that match on them.
pub use cairn_core::{DecodeError, ParseIdError, ValidationError};
pub use cairn_graph::refs::BranchName;
pub use cairn_graph::GraphError;
pub use cairn_index::IndexError;
pub use cairn_retrieve::RetrieveError;
pub use cairn_store::{StoreError, StoreStats};
pub use export::{EdgeLine, ExportSummary, NodeLine};
pub use fsck::FsckReport;
pub use gc::{GcOptions, GcReport, DEFAULT_GRACE};
pub use import::{parse_line as parse_import_line, ImportOp, ImportSummary};
pub use merge::{Conflict, MergeKind, MergeOutcome, MergeStrategy, MergeSummary, Resolution};
pub use node_history::NodeHistoryEntry;
pub use patch::NodePatch;
pub use progress::{Progress, ProgressFn, Step};
pub use reflog::{RefAction, RefLogEntry, MAX_REFLOG_MESSAGE};
pub use remote::{
    FetchReport, PushReport, RefUpdate, Remote, SyncBranch, SyncRefs, SyncServer, TransferStats, SYNC_MAX_ANSWER_BYTES,
    SYNC_MAX_BATCH,
};
pub use repo::{Repo, Stats, StoreKind, DEFAULT_BRANCH};
pub use rev::{format_time_ms, parse_time, parse_time_ms, system_time_ms, TimeParseError, TIME_FORMS};
pub use shapes::history_line::HistoryLine;
pub use shapes::log_entry::LogEntry;
pub use shapes::shown_node::{NodeEdges, ShownNode, ValidAtCheck};
pub use transaction::Transaction;
pub use view::View;
