//! The reflog: a record of every branch move, so that a head a branch no longer has (a
//! deleted branch, a commit a merge or reset moved past) can be found again.
//!
//! Every move of a branch ref — a commit, a merge (three-way or fast-forward), a branch
//! created or deleted — appends one [`RefLogEntry`] to the store's ref log
//! ([`Store::append_ref_log`](cairn_store::Store::append_ref_log)) after the ref moved.
//! The entry is not synced on its own: it is durable with the store's next flush (every
//! commit flushes before it moves its branch), so a crash right after a move may cost
//! that move's entry, never the move. A failure to append is ignored for the same
//! reason: the move has happened and stands.
//!
//! `gc` keeps every commit an entry younger than the grace period names (with all it
//! reaches) and drops entries older than it (see [`crate::gc`]). `fsck` reports damaged
//! records and entries naming missing commits.
//!
//! The record's type and bytes ([`RefLogEntry`], [`RefAction`]; storage-format.md §6.11)
//! live in `cairn_graph::reflog_entry`, re-exported here.

use cairn_core::CommitId;
pub use cairn_graph::reflog_entry::{RefAction, RefLogEntry, MAX_REFLOG_MESSAGE};
use cairn_graph::refs::BranchName;

use crate::error::Result;
use crate::repo::Repo;

/// A commit message's first line, cut to [`MAX_REFLOG_MESSAGE`] bytes.
pub(crate) fn summary(message: &str) -> String {
    let line = message.lines().next().unwrap_or("");
    let mut end = line.len().min(MAX_REFLOG_MESSAGE);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}

/// Appends an entry for a move of `branch` that has happened. Best effort: the move
/// stands whatever happens here (see the module docs).
pub(crate) fn record(
    repo: &Repo,
    branch: &BranchName,
    old: Option<CommitId>,
    new: Option<CommitId>,
    action: RefAction,
    author: &str,
    message: String,
) {
    let entry = RefLogEntry::new(branch, old, new, crate::writer::now_ms(), author, action, message);
    let _ = repo.store().append_ref_log(&entry.encode());
}

/// Records `branch` created at `at` (resolved from revision `from`), durably.
pub(crate) fn record_created(repo: &Repo, branch: &BranchName, at: CommitId, from: &str) -> Result<()> {
    let message = format!("from {from}");
    record_rare(repo, branch, None, Some(at), RefAction::Create, message)
}

/// Records `branch` deleted at head `head`, durably.
pub(crate) fn record_deleted(repo: &Repo, branch: &BranchName, head: CommitId) -> Result<()> {
    let message = format!("was {}", head.short());
    record_rare(repo, branch, Some(head), None, RefAction::Delete, message)
}

/// Records a branch created or deleted, and flushes, so the entry is durable when the
/// call returns (these moves are rare, and a deleted branch's entry is the one recovery
/// needs most). Only the flush's error is returned: the move stands either way.
fn record_rare(
    repo: &Repo,
    branch: &BranchName,
    old: Option<CommitId>,
    new: Option<CommitId>,
    action: RefAction,
    message: String,
) -> Result<()> {
    record(repo, branch, old, new, action, "", message);
    repo.store().flush()?;
    Ok(())
}

/// Records a move of `branch` from `old` to `id` (holding `commit`) by a commit, merge or
/// fast-forward.
pub(crate) fn record_move(
    repo: &Repo,
    branch: &BranchName,
    old: Option<CommitId>,
    id: CommitId,
    commit: &cairn_core::Commit,
    action: RefAction,
) {
    let (author, message) = match action {
        RefAction::FastForward => ("", format!("to {}: {}", id.short(), summary(&commit.message))),
        _ => (commit.author.as_str(), summary(&commit.message)),
    };
    record(repo, branch, old, Some(id), action, author, message);
}

/// Every readable entry, in append order, and one line per record that does not decode.
pub(crate) fn read_all(repo: &Repo) -> Result<(Vec<RefLogEntry>, Vec<String>)> {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    for (i, record) in repo.store().ref_log()?.iter().enumerate() {
        match RefLogEntry::decode(record) {
            Ok(entry) => entries.push(entry),
            Err(detail) => problems.push(format!("reflog record {i} does not decode (skipped): {detail}")),
        }
    }
    Ok((entries, problems))
}

impl Repo {
    /// The moves of `branch`, newest first: every commit, merge and fast-forward that
    /// moved it, its creation and its deletion. A deleted branch's entries stay readable
    /// (until `gc` drops them past the grace period), which is how its last head is found
    /// again. Records that cannot be read are skipped (`fsck` names them).
    ///
    /// Errors: [`Error::Graph`](crate::Error::Graph) for an invalid branch name; store
    /// errors.
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?))?;
    /// tx.commit("first")?;
    /// repo.create_branch("scratch", None)?;
    /// let mut tx = repo.transaction_on("scratch")?;
    /// tx.put_node(Node::new(NodeId::new("b")?))?;
    /// let lost = tx.commit("scratch work")?;
    /// repo.delete_branch("scratch")?;
    /// // The deleted branch's last head, found again.
    /// let entries = repo.reflog("scratch")?;
    /// assert_eq!(entries[0].old, Some(lost));
    /// repo.create_branch("recovered", Some(&lost.to_hex()))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reflog(&self, branch: &str) -> Result<Vec<RefLogEntry>> {
        let branch = BranchName::new(branch)?;
        let (entries, _) = read_all(self)?;
        Ok(entries
            .into_iter()
            .rev()
            .filter(|e| e.branch == branch.as_str())
            .collect())
    }

    /// The moves of every branch, newest first (see [`Repo::reflog`]).
    ///
    /// ```
    /// use cairn::{Node, NodeId, RefAction, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?))?;
    /// let first = tx.commit("first")?;
    /// let entries = repo.reflog_all()?;
    /// assert_eq!(entries[0].action, RefAction::Commit);
    /// assert_eq!((entries[0].old, entries[0].new), (None, Some(first)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reflog_all(&self) -> Result<Vec<RefLogEntry>> {
        let (entries, _) = read_all(self)?;
        Ok(entries.into_iter().rev().collect())
    }
}
