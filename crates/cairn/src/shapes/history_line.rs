//! One entry of a node's history as `history` output shows it (`cairn history --json`,
//! the server's `GET /nodes/{id}/history`, the Python `Repo.history`).

use cairn_core::{Commit, NodeId};
use serde::Serialize;

use crate::error::Result;
use crate::node_history::NodeHistoryEntry;
use crate::repo::Repo;

/// One commit that touched a node, with the commit's message: the fields of a
/// [`NodeHistoryEntry`] (`commit`, `timestamp_ms`, `change`, `hash`, `previous`), then
/// `message`, as `cairn history --json` prints them.
///
/// ```
/// use cairn::{HistoryLine, Node, NodeId, Repo};
///
/// let repo = Repo::in_memory()?;
/// let a = NodeId::new("a")?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(a.clone()).with_text("v1"))?;
/// tx.commit("add a")?;
/// let lines = HistoryLine::list(&repo, None, &a, None)?;
/// assert_eq!(lines.len(), 1);
/// assert_eq!(lines[0].message, "add a");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HistoryLine {
    /// The library's entry.
    #[serde(flatten)]
    pub entry: NodeHistoryEntry,
    /// The commit's message.
    pub message: String,
}

impl HistoryLine {
    /// The line of `entry`, whose commit is `commit`.
    pub fn new(entry: NodeHistoryEntry, commit: &Commit) -> HistoryLine {
        HistoryLine {
            entry,
            message: commit.message.clone(),
        }
    }

    /// The history of node `id` among the ancestors of revision `rev` (default: the
    /// current branch's head; empty before its first commit), newest first, at most
    /// `limit` entries, each with its commit's message. See [`Repo::history_of`].
    pub fn list(repo: &Repo, rev: Option<&str>, id: &NodeId, limit: Option<usize>) -> Result<Vec<HistoryLine>> {
        let entries = match rev {
            Some(rev) => repo.history_of(rev, id, limit)?,
            None => match repo.head()? {
                Some(head) => repo.history_of(&head.to_hex(), id, limit)?,
                None => Vec::new(),
            },
        };
        entries
            .into_iter()
            .map(|e| Ok(HistoryLine::new(e, &repo.commit(&e.commit)?)))
            .collect()
    }
}
