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
//! The record's bytes (storage-format.md §6.11): the version byte `0x01`, then the
//! fields in bincode's fixed-width little-endian encoding (the one codec of
//! `cairn_core::codec`): branch (u64 length + UTF-8), old and new (each a `0`/`1` byte,
//! then 32 raw bytes if `1`), time_ms (i64), author (u64 length + UTF-8), action (u8),
//! message (u64 length + UTF-8).

use cairn_core::codec;
use cairn_core::{CommitId, DecodeError, Hash};
use cairn_graph::refs::BranchName;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::repo::Repo;

/// Version byte of a reflog record, format version 1.
pub const REFLOG_V1: u8 = 0x01;

/// The longest message an entry keeps (a commit's first line, cut at a character
/// boundary).
pub const MAX_REFLOG_MESSAGE: usize = 1024;

/// What moved a branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum RefAction {
    /// A commit (a transaction, an import) moved the branch to its new commit.
    Commit,
    /// A three-way merge commit.
    Merge,
    /// A fast-forward merge: the branch moved to theirs' head, no commit written.
    FastForward,
    /// The branch was created (`old` is absent).
    Create,
    /// The branch was deleted (`new` is absent).
    Delete,
}

impl RefAction {
    /// The byte a record stores.
    fn byte(self) -> u8 {
        match self {
            RefAction::Commit => 1,
            RefAction::Merge => 2,
            RefAction::FastForward => 3,
            RefAction::Create => 4,
            RefAction::Delete => 5,
        }
    }

    fn of(byte: u8) -> Option<RefAction> {
        Some(match byte {
            1 => RefAction::Commit,
            2 => RefAction::Merge,
            3 => RefAction::FastForward,
            4 => RefAction::Create,
            5 => RefAction::Delete,
            _ => return None,
        })
    }

    /// The action as `cairn reflog` shows it (`commit`, `merge`, `fast-forward`,
    /// `create`, `delete`).
    pub fn as_str(self) -> &'static str {
        match self {
            RefAction::Commit => "commit",
            RefAction::Merge => "merge",
            RefAction::FastForward => "fast-forward",
            RefAction::Create => "create",
            RefAction::Delete => "delete",
        }
    }
}

/// One move of a branch, as [`Repo::reflog`] returns it.
///
/// ```
/// use cairn::{Node, NodeId, Repo};
/// use cairn::RefAction;
///
/// let repo = Repo::in_memory()?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(NodeId::new("a")?))?;
/// let first = tx.commit("first")?;
/// let entries = repo.reflog("main")?;
/// assert_eq!(entries[0].action, RefAction::Commit);
/// assert_eq!((entries[0].old, entries[0].new), (None, Some(first)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RefLogEntry {
    /// The branch that moved.
    pub branch: String,
    /// Its head before the move (`None`: it did not exist).
    pub old: Option<CommitId>,
    /// Its head after the move (`None`: deleted).
    pub new: Option<CommitId>,
    /// When it moved (wall clock, ms since the epoch; not the commit's timestamp).
    pub time_ms: i64,
    /// Who moved it: the commit's author; empty for a branch created or deleted.
    pub author: String,
    /// What moved it.
    pub action: RefAction,
    /// The commit message's first line (at most [`MAX_REFLOG_MESSAGE`] bytes), or a note
    /// (`from <commit>` for a branch created).
    pub message: String,
}

/// The record's fields in stored order (see the module docs).
#[derive(Serialize, Deserialize)]
struct Wire {
    branch: String,
    old: Option<[u8; 32]>,
    new: Option<[u8; 32]>,
    time_ms: i64,
    author: String,
    action: u8,
    message: String,
}

/// The bincode configuration of `cairn_core::codec` ([`codec::STORED`]), with the
/// store's record limit.
fn config() -> impl codec::bincode::config::Config {
    codec::STORED.with_limit::<{ cairn_store::MAX_REF_LOG_RECORD }>()
}

impl RefLogEntry {
    /// The record's bytes (version byte, then the fields; see the module docs).
    pub fn encode(&self) -> Vec<u8> {
        codec::encode_derived_serde(REFLOG_V1, &self.wire()).expect("a reflog entry always encodes")
    }

    fn wire(&self) -> Wire {
        Wire {
            branch: self.branch.clone(),
            old: self.old.map(|c| *c.hash().as_bytes()),
            new: self.new.map(|c| *c.hash().as_bytes()),
            time_ms: self.time_ms,
            author: self.author.clone(),
            action: self.action.byte(),
            message: self.message.clone(),
        }
    }

    /// Reads a record made by [`RefLogEntry::encode`], strictly: the version byte, every
    /// field, no trailing bytes, and the canonical encoding (re-encoding gives the same
    /// bytes). The error says what failed, as the object decoders do (its `kind` is
    /// `"reflog record"`).
    ///
    /// ```
    /// use cairn::{DecodeError, RefLogEntry};
    ///
    /// assert!(matches!(RefLogEntry::decode(&[0xff]), Err(DecodeError::BadTag { found: 0xff, .. })));
    /// ```
    pub fn decode(bytes: &[u8]) -> std::result::Result<RefLogEntry, DecodeError> {
        const KIND: &str = "reflog record";
        let invalid = |detail: String| DecodeError::Invalid { kind: KIND, detail };
        let (&version, body) = bytes.split_first().ok_or_else(|| invalid("empty record".into()))?;
        if version != REFLOG_V1 {
            return Err(DecodeError::BadTag {
                found: version,
                expected: "a reflog record version (0x01)",
            });
        }
        let (wire, read): (Wire, usize) =
            codec::bincode::serde::decode_from_slice(body, config()).map_err(|e| DecodeError::Malformed {
                kind: KIND,
                detail: e.to_string(),
            })?;
        if read != body.len() {
            return Err(invalid(format!("{} trailing bytes", body.len() - read)));
        }
        let action = RefAction::of(wire.action).ok_or_else(|| invalid(format!("unknown action {}", wire.action)))?;
        let id = |b: Option<[u8; 32]>| b.map(|b| CommitId(Hash::from_bytes(b)));
        let entry = RefLogEntry {
            branch: wire.branch,
            old: id(wire.old),
            new: id(wire.new),
            time_ms: wire.time_ms,
            author: wire.author,
            action,
            message: wire.message,
        };
        if BranchName::new(entry.branch.as_str()).is_err() {
            return Err(invalid(format!("{:?} is not a branch name", entry.branch)));
        }
        if entry.encode() != bytes {
            return Err(DecodeError::NonCanonical { kind: KIND });
        }
        Ok(entry)
    }

    /// The commits the entry names (old, then new).
    pub fn commits(&self) -> impl Iterator<Item = CommitId> {
        self.old.into_iter().chain(self.new)
    }
}

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
    let entry = RefLogEntry {
        branch: branch.to_string(),
        old,
        new,
        time_ms: crate::writer::now_ms(),
        author: author.to_owned(),
        action,
        message,
    };
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
    pub fn reflog_all(&self) -> Result<Vec<RefLogEntry>> {
        let (entries, _) = read_all(self)?;
        Ok(entries.into_iter().rev().collect())
    }
}
