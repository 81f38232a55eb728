//! The history of one node ([`Repo::history`]; the rules are documented there).

use std::collections::{BinaryHeap, HashMap, HashSet};

use cairn_core::{Commit, CommitId, Hash, NodeId};
use cairn_graph::{history, NodeTree};
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
    /// The history of node `id` on the current branch, newest first: every ancestor of
    /// the head that added, changed or removed it, following merged branches (see the
    /// *How history is followed* below). Empty if the branch has no commits or never
    /// held the node.
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
    ///
    /// # How history is followed
    ///
    /// Node history: the commits that added, changed or removed one node, across merges.
    ///
    /// The walk starts at the branch head and visits ancestors children before parents
    /// (by generation, then timestamp, then commit id), following merges the way
    /// `git log -- PATH` does:
    ///
    /// - a commit whose node is the same as in its first parent is not reported, and the walk
    ///   follows that parent only;
    /// - a merge whose node is the same as in a later parent, and whose first parent still
    ///   held the merge base's version (a clean merge), is not reported, and the walk follows
    ///   that parent only — so a change a merge brought in is reported at the commit on the
    ///   merged branch that made it, not at the merge;
    /// - any other commit is reported (relative to its first parent) and the walk follows all
    ///   its parents — an ordinary commit that changed the node, or a merge that changed it
    ///   itself: a resolved conflict, including one resolved to theirs' version (the merge
    ///   replaced the branch's own change, which stays listed).
    ///
    /// Comparing node-tree root hashes comes first: an equal root means no node changed, and
    /// the commit is passed without reading any tree. Otherwise the node is looked up with
    /// [`NodeTree::get`] (O(log n) tree nodes, mostly cached upper levels); the whole tree of
    /// a commit is never decoded, so the cost is O(commits walked + commits with a different
    /// node root × log n), plus a merge-base search (a walk of both parents' ancestors) at
    /// each merge that took a merged branch's version of the node.
    pub fn history(&self, id: &NodeId) -> Result<Vec<NodeHistoryEntry>> {
        match self.head()? {
            Some(head) => self.node_history_from(head, id, None),
            None => Ok(Vec::new()),
        }
    }

    /// The history of node `id` among the ancestors of revision `rev` (a branch, or any
    /// revision [`Repo::resolve`] accepts), newest first, at most `limit` entries.
    pub fn history_of(&self, rev: &str, id: &NodeId, limit: Option<usize>) -> Result<Vec<NodeHistoryEntry>> {
        let head = self.resolve(rev)?;
        self.node_history_from(head, id, limit)
    }

    fn node_history_from(&self, head: CommitId, id: &NodeId, limit: Option<usize>) -> Result<Vec<NodeHistoryEntry>> {
        let objs = self.objects();
        let mut out = Vec::new();
        // Children before parents, newest first: a max-heap on (generation, timestamp,
        // commit id).
        let mut queue: BinaryHeap<(u64, i64, CommitId)> = BinaryHeap::new();
        let mut seen: HashSet<CommitId> = HashSet::new();
        let mut pending: HashMap<CommitId, Commit> = HashMap::new();
        // The node's hash at a commit, once known (from a lookup or an equal root).
        let mut known: HashMap<CommitId, Option<Hash>> = HashMap::new();
        let first = self.commit(&head)?;
        queue.push((first.generation, first.timestamp_ms, head));
        seen.insert(head);
        pending.insert(head, first);
        let lookup =
            |cid: CommitId, root: Option<Hash>, known: &mut HashMap<CommitId, Option<Hash>>| -> Result<Option<Hash>> {
                if let Some(h) = known.get(&cid) {
                    return Ok(*h);
                }
                let h = NodeTree::new(root).get(objs, id)?;
                known.insert(cid, h);
                Ok(h)
            };
        while let Some((_, _, cid)) = queue.pop() {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            let cur = pending.remove(&cid).expect("queued commits are pending");
            let parents = cur
                .parents
                .iter()
                .map(|p| Ok((*p, self.commit(p)?)))
                .collect::<Result<Vec<_>>>()?;
            // The parents the walk goes on to.
            let follow: Vec<usize> = if parents.first().is_some_and(|(_, pc)| pc.node_root == cur.node_root) {
                // No node changed against the first parent: it holds what `cur` holds.
                if let Some(h) = known.get(&cid).copied() {
                    known.entry(parents[0].0).or_insert(h);
                }
                vec![0]
            } else {
                let here = lookup(cid, cur.node_root, &mut known)?;
                let mut befores = Vec::with_capacity(parents.len());
                for (pid, pc) in &parents {
                    befores.push(lookup(*pid, pc.node_root, &mut known)?);
                }
                let same = match befores.iter().position(|b| *b == here) {
                    // A merge that took another parent's version over the first parent's:
                    // passed only if the first parent's was still the merge base's (a
                    // clean merge); otherwise it replaced the branch's own change.
                    Some(i) if i > 0 => {
                        let base = history::merge_base(objs, parents[0].0, parents[i].0)?;
                        let at_base = match base {
                            Some(b) => lookup(b, self.commit(&b)?.node_root, &mut known)?,
                            None => None,
                        };
                        (at_base == befores[0]).then_some(i)
                    }
                    other => other,
                };
                match same {
                    Some(i) => vec![i],
                    None if parents.is_empty() && here.is_none() => Vec::new(),
                    None => {
                        let before = befores.first().copied().flatten();
                        out.push(NodeHistoryEntry {
                            commit: cid,
                            timestamp_ms: cur.timestamp_ms,
                            change: change_kind(before, here),
                            hash: here,
                            previous: before,
                        });
                        (0..parents.len()).collect()
                    }
                }
            };
            for (i, (pid, pc)) in parents.into_iter().enumerate() {
                if follow.contains(&i) && seen.insert(pid) {
                    queue.push((pc.generation, pc.timestamp_ms, pid));
                    pending.insert(pid, pc);
                }
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
