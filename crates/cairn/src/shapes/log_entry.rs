//! One commit as `log` output shows it (`cairn log --json`, the server's `GET /log`).

use cairn_core::{Commit, CommitId};
use serde::Serialize;

/// One commit of a log, in the field order of `cairn log --json`.
///
/// ```
/// use cairn::{LogEntry, Node, NodeId, Repo};
///
/// let repo = Repo::in_memory()?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(NodeId::new("a")?))?;
/// tx.commit("first")?;
/// let log: Vec<LogEntry> = repo.log(None, None)?.iter().map(|(id, c)| LogEntry::new(*id, c)).collect();
/// assert_eq!(log[0].message, "first");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LogEntry {
    /// The commit.
    pub commit: CommitId,
    /// Its parents, first parent first.
    pub parents: Vec<CommitId>,
    /// Its timestamp (transaction time, ms since the epoch).
    pub timestamp_ms: i64,
    /// Its author.
    pub author: String,
    /// Its message.
    pub message: String,
    /// Nodes in the commit.
    pub node_count: u64,
    /// Edges in the commit.
    pub edge_count: u64,
}

impl LogEntry {
    /// The entry of commit `id` holding `commit`.
    pub fn new(id: CommitId, commit: &Commit) -> LogEntry {
        LogEntry {
            commit: id,
            parents: commit.parents.clone(),
            timestamp_ms: commit.timestamp_ms,
            author: commit.author.clone(),
            message: commit.message.clone(),
            node_count: commit.node_count,
            edge_count: commit.edge_count,
        }
    }
}
