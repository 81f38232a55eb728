//! Node history: the commits of a branch that added, changed or removed one node.
//!
//! The walk follows the first-parent chain from the branch head. For each commit it
//! compares the node-tree root hash with the parent's: equal roots mean no node changed,
//! and the commit is skipped without reading any tree. Otherwise the node is looked up
//! with [`mst::get`] (O(log n) tree nodes, mostly cached upper levels), and the commit is
//! reported if the node's object hash differs from the parent's. The whole tree of a
//! commit is never decoded, so the cost is O(commits walked + commits with a different
//! node root × log n).
//!
//! A merge commit is compared with its first parent only: a change a merge brought in
//! from the other branch shows as a change made by the merge commit.

use cairn_core::{CommitId, Hash, NodeId};
use cairn_graph::mst;
use serde::Serialize;

use crate::diff::ChangeKind;
use crate::error::Result;
use crate::repo::Repo;

/// One commit that touched a node, as [`Repo::history`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NodeHistoryEntry {
    /// The commit.
    pub commit: CommitId,
    /// Its timestamp (transaction time, ms since the epoch).
    pub timestamp_ms: i64,
    /// What the commit did to the node, relative to its first parent.
    pub change: ChangeKind,
    /// The node's object hash after the commit (`None`: removed by it).
    pub hash: Option<Hash>,
    /// The node's object hash before the commit (`None`: added by it).
    pub previous: Option<Hash>,
}

impl Repo {
    /// The history of node `id` on the current branch, newest first: every commit on the
    /// first-parent chain that added, changed or removed it. Empty if the branch has no
    /// commits or never held the node.
    ///
    /// ```
    /// use cairn::{ChangeKind, Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let a = NodeId::new("a")?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(a.clone()).with_text("v1"))?;
    /// tx.commit("add")?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("b")?))?; // does not touch `a`
    /// tx.commit("other")?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(a.clone()).with_text("v2"))?;
    /// tx.commit("edit")?;
    /// let kinds: Vec<ChangeKind> = repo.history(&a)?.iter().map(|e| e.change).collect();
    /// assert_eq!(kinds, [ChangeKind::Changed, ChangeKind::Added]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn history(&self, id: &NodeId) -> Result<Vec<NodeHistoryEntry>> {
        match self.head()? {
            Some(head) => self.node_history_from(head, id, None),
            None => Ok(Vec::new()),
        }
    }

    /// The history of node `id` along the first-parent chain of revision `rev` (a branch,
    /// or any revision [`Repo::resolve`] accepts), newest first, at most `limit` entries.
    pub fn history_of(&self, rev: &str, id: &NodeId, limit: Option<usize>) -> Result<Vec<NodeHistoryEntry>> {
        let head = self.resolve(rev)?;
        self.node_history_from(head, id, limit)
    }

    fn node_history_from(&self, head: CommitId, id: &NodeId, limit: Option<usize>) -> Result<Vec<NodeHistoryEntry>> {
        let objs = self.objects();
        let key = id.as_bytes();
        let mut out = Vec::new();
        let mut cur_id = head;
        let mut cur = self.commit(&head)?;
        // The node's hash at `cur`, looked up lazily: only once a root differs.
        let mut cur_hash: Option<Option<Hash>> = None;
        loop {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            let parent = match cur.parents.first() {
                Some(p) => Some((*p, self.commit(p)?)),
                None => None,
            };
            let parent_root = parent.as_ref().and_then(|(_, c)| c.node_root);
            let same_root = parent.is_some() && parent_root == cur.node_root;
            let parent_hash = if same_root {
                // No node changed: the parent holds what `cur` holds.
                cur_hash
            } else {
                let here = match cur_hash {
                    Some(h) => h,
                    None => mst::get(objs, cur.node_root, key)?,
                };
                let before = match &parent {
                    Some(_) => mst::get(objs, parent_root, key)?,
                    None => None,
                };
                if here != before {
                    out.push(NodeHistoryEntry {
                        commit: cur_id,
                        timestamp_ms: cur.timestamp_ms,
                        change: change_kind(before, here),
                        hash: here,
                        previous: before,
                    });
                }
                Some(before)
            };
            match parent {
                Some((pid, pc)) => {
                    cur_id = pid;
                    cur = pc;
                    cur_hash = parent_hash;
                }
                None => break,
            }
        }
        Ok(out)
    }
}

fn change_kind(before: Option<Hash>, after: Option<Hash>) -> ChangeKind {
    match (before, after) {
        (None, _) => ChangeKind::Added,
        (_, None) => ChangeKind::Removed,
        _ => ChangeKind::Changed,
    }
}
