//! Branch refs against the reflog: a branch whose ref is missing or damaged while the
//! reflog's last move of it set it to a stored commit is named by `fsck`, and
//! `fsck --repair` sets it to that commit again (issue 22, item 4). A branch the reflog
//! last records as deleted is left alone.

use std::collections::{BTreeMap, BTreeSet};

use cairn_core::CommitId;
use cairn_graph::refs::BranchName;

use crate::error::Result;
use crate::reflog::RefLogEntry;
use crate::repo::Repo;

/// What a branch's ref holds, against its reflog.
enum Lost {
    Missing(CommitId),
    Damaged(CommitId, String),
}

impl Repo {
    /// The branches whose ref is missing or damaged but whose reflog's last move set them
    /// to a stored commit, by name.
    fn lost_branches(&self, entries: &[RefLogEntry]) -> Result<BTreeMap<String, Lost>> {
        let mut last: BTreeMap<&str, Option<CommitId>> = BTreeMap::new();
        for e in entries {
            last.insert(e.branch.as_str(), e.new);
        }
        let mut lost = BTreeMap::new();
        for (branch, head) in last {
            let (Some(head), Ok(name)) = (head, BranchName::new(branch)) else {
                continue;
            };
            if !self.store().contains(head.hash())? {
                continue;
            }
            match self.refs().branch(&name) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    lost.insert(branch.to_string(), Lost::Missing(head));
                }
                Err(e) => {
                    lost.insert(branch.to_string(), Lost::Damaged(head, e.to_string()));
                }
            }
        }
        Ok(lost)
    }

    /// Problems with branch refs the reflog can restore, one line each; returns those
    /// branches.
    pub(super) fn check_branches(
        &self,
        entries: &[RefLogEntry],
        problems: &mut Vec<String>,
    ) -> Result<BTreeSet<String>> {
        let lost = self.lost_branches(entries)?;
        for (branch, lost) in &lost {
            problems.push(match lost {
                Lost::Missing(c) => format!(
                    "branch {branch} has no ref, but the reflog last moved it to commit {c} (`cairn fsck --repair` sets it there again)"
                ),
                Lost::Damaged(c, e) => format!(
                    "branch {branch}'s ref is damaged: {e} (the reflog last moved it to commit {c}; `cairn fsck --repair` sets it there again)"
                ),
            });
        }
        Ok(lost.into_keys().collect())
    }

    /// Sets every branch whose ref is missing or damaged to the commit the reflog last
    /// moved it to (when that commit is stored); returns what it did. Sound refs are left
    /// alone, and a branch the reflog last records as deleted stays deleted.
    pub fn repair_branches(&self) -> Result<Vec<String>> {
        let (entries, _) = crate::reflog::read_all(self)?;
        let mut done = Vec::new();
        for (branch, lost) in self.lost_branches(&entries)? {
            let name = BranchName::new(&branch)?;
            let head = match lost {
                Lost::Missing(c) => c,
                Lost::Damaged(c, _) => {
                    if !self.store().remove_damaged_ref(&format!("refs/heads/{branch}"))? {
                        continue;
                    }
                    c
                }
            };
            if self.refs().cas_branch(&name, None, Some(head))?.is_ok() {
                done.push(format!(
                    "branch {branch} set to commit {head} (its last move in the reflog)"
                ));
            }
        }
        self.store().flush()?;
        Ok(done)
    }
}
