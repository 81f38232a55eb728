//! The reflog record: one move of a branch, as the store's ref log keeps it
//! ([`Store::append_ref_log`](cairn_store::Store::append_ref_log)).
//!
//! This module owns the record's type ([`RefLogEntry`], [`RefAction`]) and its bytes;
//! writing, reading, gc and fsck of the log live in the `cairn` crate (`reflog.rs`), which
//! re-exports these types as `cairn::RefLogEntry` and `cairn::RefAction`.
//!
//! The record's bytes (storage-format.md §6.11): the version byte `0x01`, then the
//! fields in bincode's fixed-width little-endian encoding (the one codec of
//! `cairn_core::codec`): branch (u64 length + UTF-8), old and new (each a `0`/`1` byte,
//! then 32 raw bytes if `1`), time_ms (i64), author (u64 length + UTF-8), action (u8),
//! message (u64 length + UTF-8).
//!
//! ```
//! use cairn_core::{CommitId, Hash};
//! use cairn_graph::refs::BranchName;
//! use cairn_graph::reflog_entry::{RefAction, RefLogEntry};
//!
//! let main = BranchName::new("main")?;
//! let head = CommitId(Hash::from_bytes([0xab; 32]));
//! let entry = RefLogEntry::new(&main, None, Some(head), 1_700_000_000_000, "ann", RefAction::Commit, "first");
//! let bytes = entry.encode();
//! assert_eq!(RefLogEntry::decode(&bytes)?, entry);
//! // A truncated record is refused.
//! assert!(RefLogEntry::decode(&bytes[..bytes.len() - 1]).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use cairn_core::codec;
use cairn_core::{CommitId, DecodeError, Hash};
use serde::{Deserialize, Serialize};

use crate::refs::BranchName;

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

/// One move of a branch, as `cairn::Repo::reflog` returns it (see the module docs for
/// its bytes and an example).
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
    /// An entry for a move of `branch` from `old` to `new` at `time_ms`. The message is
    /// kept as given: the writer cuts it to [`MAX_REFLOG_MESSAGE`] bytes.
    pub fn new(
        branch: &BranchName,
        old: Option<CommitId>,
        new: Option<CommitId>,
        time_ms: i64,
        author: impl Into<String>,
        action: RefAction,
        message: impl Into<String>,
    ) -> RefLogEntry {
        RefLogEntry {
            branch: branch.to_string(),
            old,
            new,
            time_ms,
            author: author.into(),
            action,
            message: message.into(),
        }
    }

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
    /// use cairn_core::DecodeError;
    /// use cairn_graph::reflog_entry::RefLogEntry;
    ///
    /// assert!(matches!(RefLogEntry::decode(&[0xff]), Err(DecodeError::BadTag { found: 0xff, .. })));
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<RefLogEntry, DecodeError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RefLogEntry {
        let branch = BranchName::new("feature/x").unwrap();
        let (a, b) = (CommitId(Hash::from_bytes([1; 32])), CommitId(Hash::from_bytes([2; 32])));
        RefLogEntry::new(&branch, Some(a), Some(b), -5, "ann", RefAction::Merge, "merge x ✓")
    }

    #[test]
    fn round_trip() {
        for entry in [sample(), {
            let mut e = sample();
            (e.old, e.new, e.author, e.action) = (None, None, String::new(), RefAction::Delete);
            e
        }] {
            let bytes = entry.encode();
            assert_eq!(bytes[0], REFLOG_V1);
            assert_eq!(RefLogEntry::decode(&bytes).unwrap(), entry);
        }
    }

    #[test]
    fn every_truncation_is_refused() {
        let bytes = sample().encode();
        for n in 0..bytes.len() {
            assert!(
                RefLogEntry::decode(&bytes[..n]).is_err(),
                "{n} of {} bytes",
                bytes.len()
            );
        }
    }
}
