//! Branch refs and `HEAD`, kept in the store's ref space and moved only by
//! compare-and-swap.
//!
//! Ref names: `HEAD` holds `ref: refs/heads/<branch>` (the current branch);
//! `refs/heads/<branch>`, `refs/tags/<tag>` and the remote-tracking
//! `refs/remotes/<remote>/<branch>` hold a commit id's 32 raw bytes;
//! `meta/...` holds repository metadata (e.g. `meta/dense-dim/<model>`: a u32 LE).

use std::fmt;

use cairn_core::{CommitId, Hash};
use cairn_store::{CasOutcome, Store, StoreError};

use crate::error::GraphError;

/// The ref that names the current branch.
pub const HEAD: &str = "HEAD";
const HEADS: &str = "refs/heads/";
const TAGS: &str = "refs/tags/";
const REMOTES: &str = "refs/remotes/";

/// A validated branch (or tag) name: 1..=200 bytes of ASCII letters, digits and `._-/`,
/// not starting with `-`, `/` or `.`, without `..`, `//`, `@{` or a trailing `/`, and not
/// `HEAD`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BranchName(String);

impl BranchName {
    /// Checks the rules and wraps the name.
    pub fn new(name: impl Into<String>) -> Result<BranchName, GraphError> {
        let name = name.into();
        let bad = |detail| GraphError::BadBranchName {
            name: name.clone(),
            detail,
        };
        if name.is_empty() || name.len() > 200 {
            return Err(bad("must be 1..=200 bytes"));
        }
        if !name.bytes().all(|c| c.is_ascii_alphanumeric() || b"._-/".contains(&c)) {
            return Err(bad("only ASCII letters, digits and . _ - / are allowed"));
        }
        if name.starts_with(['-', '/', '.']) || name.ends_with('/') || name.contains("..") || name.contains("//") {
            return Err(bad("must not start with - / . nor contain .. or // nor end with /"));
        }
        if name == HEAD {
            return Err(bad("HEAD is reserved"));
        }
        Ok(BranchName(name))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BranchName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Typed access to the refs of a store.
pub struct Refs<'a> {
    store: &'a dyn Store,
}

fn decode_commit_ref(name: &str, bytes: &[u8]) -> Result<CommitId, GraphError> {
    let arr: [u8; 32] = bytes.try_into().map_err(|_| GraphError::BadRef {
        name: name.to_string(),
        detail: format!("expected 32 bytes, found {}", bytes.len()),
    })?;
    Ok(CommitId(Hash::from_bytes(arr)))
}

impl<'a> Refs<'a> {
    /// Wraps a store.
    pub fn new(store: &'a dyn Store) -> Refs<'a> {
        Refs { store }
    }

    /// The current branch named by `HEAD` (`None` if `HEAD` is unset: an uninitialised
    /// store).
    pub fn current_branch(&self) -> Result<Option<BranchName>, GraphError> {
        let Some(v) = self.store.get_ref(HEAD)? else {
            return Ok(None);
        };
        let s = std::str::from_utf8(&v)
            .ok()
            .and_then(|s| s.strip_prefix("ref: refs/heads/"));
        match s {
            Some(name) => Ok(Some(BranchName::new(name)?)),
            None => Err(GraphError::BadRef {
                name: HEAD.into(),
                detail: "expected `ref: refs/heads/<branch>`".into(),
            }),
        }
    }

    /// Points `HEAD` at `branch` (the branch need not have commits yet).
    pub fn set_current_branch(&self, branch: &BranchName) -> Result<(), GraphError> {
        let new = format!("ref: refs/heads/{branch}");
        loop {
            let cur = match self.store.get_ref(HEAD) {
                Ok(cur) => cur,
                // `HEAD` is overwritten whatever it holds, so a damaged one is removed
                // first (a store that cannot remove it reports the damage).
                Err(e @ StoreError::Corrupt { .. }) => {
                    if self.store.remove_damaged_ref(HEAD)? {
                        continue;
                    }
                    return Err(e.into());
                }
                Err(e) => return Err(e.into()),
            };
            match self.store.cas_ref(HEAD, cur.as_deref(), Some(new.as_bytes()))? {
                CasOutcome::Swapped => return Ok(()),
                CasOutcome::Conflict { .. } => continue,
            }
        }
    }

    /// The commit a branch points at (`None`: no such branch, or no commit yet).
    pub fn branch(&self, branch: &BranchName) -> Result<Option<CommitId>, GraphError> {
        let name = format!("{HEADS}{branch}");
        self.store
            .get_ref(&name)?
            .map(|v| decode_commit_ref(&name, &v))
            .transpose()
    }

    /// Moves `branch` from `expected` to `new` atomically (`None` = absent).
    pub fn cas_branch(
        &self,
        branch: &BranchName,
        expected: Option<CommitId>,
        new: Option<CommitId>,
    ) -> Result<Result<(), Option<CommitId>>, GraphError> {
        self.cas_commit_ref(&format!("{HEADS}{branch}"), expected, new)
    }

    /// Moves tag `tag` like [`Refs::cas_branch`].
    pub fn cas_tag(
        &self,
        tag: &BranchName,
        expected: Option<CommitId>,
        new: Option<CommitId>,
    ) -> Result<Result<(), Option<CommitId>>, GraphError> {
        self.cas_commit_ref(&format!("{TAGS}{tag}"), expected, new)
    }

    fn cas_commit_ref(
        &self,
        name: &str,
        expected: Option<CommitId>,
        new: Option<CommitId>,
    ) -> Result<Result<(), Option<CommitId>>, GraphError> {
        let exp = expected.map(|c| *c.hash().as_bytes());
        let nw = new.map(|c| *c.hash().as_bytes());
        match self
            .store
            .cas_ref(name, exp.as_ref().map(|b| &b[..]), nw.as_ref().map(|b| &b[..]))?
        {
            CasOutcome::Swapped => Ok(Ok(())),
            CasOutcome::Conflict { current } => Ok(Err(current.map(|v| decode_commit_ref(name, &v)).transpose()?)),
        }
    }

    /// All branches with their commits, in name order.
    pub fn branches(&self) -> Result<Vec<(BranchName, CommitId)>, GraphError> {
        self.list(HEADS)
    }

    /// All tags with their commits, in name order.
    pub fn tags(&self) -> Result<Vec<(BranchName, CommitId)>, GraphError> {
        self.list(TAGS)
    }

    /// The commit a tag points at.
    pub fn tag(&self, tag: &BranchName) -> Result<Option<CommitId>, GraphError> {
        let name = format!("{TAGS}{tag}");
        self.store
            .get_ref(&name)?
            .map(|v| decode_commit_ref(&name, &v))
            .transpose()
    }

    fn list(&self, prefix: &str) -> Result<Vec<(BranchName, CommitId)>, GraphError> {
        self.store
            .list_refs(prefix)?
            .into_iter()
            .map(|(name, v)| {
                let short = name.strip_prefix(prefix).unwrap_or(&name).to_string();
                Ok((BranchName::new(short)?, decode_commit_ref(&name, &v)?))
            })
            .collect()
    }

    /// The commit remote `remote`'s branch `branch` was at when last fetched or pushed
    /// (`refs/remotes/<remote>/<branch>`; `None`: never seen).
    pub fn remote_branch(&self, remote: &str, branch: &BranchName) -> Result<Option<CommitId>, GraphError> {
        let name = format!("{REMOTES}{remote}/{branch}");
        self.store
            .get_ref(&name)?
            .map(|v| decode_commit_ref(&name, &v))
            .transpose()
    }

    /// Remote `remote`'s tracked branches with their commits, in name order.
    pub fn remote_branches(&self, remote: &str) -> Result<Vec<(BranchName, CommitId)>, GraphError> {
        self.list(&format!("{REMOTES}{remote}/"))
    }

    /// Every remote-tracking ref as `(remote/branch, commit)`, in name order.
    pub fn all_remote_branches(&self) -> Result<Vec<(BranchName, CommitId)>, GraphError> {
        self.list(REMOTES)
    }

    /// Sets (or with `None` removes) the remote-tracking ref of `remote`'s `branch`,
    /// whatever it held: only fetch and push write these, and each writes what the remote
    /// said.
    pub fn set_remote_branch(&self, remote: &str, branch: &BranchName, to: Option<CommitId>) -> Result<(), GraphError> {
        let name = format!("{REMOTES}{remote}/{branch}");
        let new = to.map(|c| *c.0.as_bytes());
        loop {
            let cur = self.store.get_ref(&name)?;
            if cur.as_deref() == new.as_ref().map(|b| &b[..]) {
                return Ok(());
            }
            match self
                .store
                .cas_ref(&name, cur.as_deref(), new.as_ref().map(|b| &b[..]))?
            {
                CasOutcome::Swapped => return Ok(()),
                CasOutcome::Conflict { .. } => continue,
            }
        }
    }

    /// Replaces a metadata value whatever it holds (`None`: removes it).
    pub fn set_meta(&self, key: &str, value: Option<&[u8]>) -> Result<(), GraphError> {
        let name = format!("meta/{key}");
        loop {
            let cur = self.store.get_ref(&name)?;
            if cur.as_deref() == value {
                return Ok(());
            }
            match self.store.cas_ref(&name, cur.as_deref(), value)? {
                CasOutcome::Swapped => return Ok(()),
                CasOutcome::Conflict { .. } => continue,
            }
        }
    }

    /// A metadata value (`meta/<key>`).
    pub fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, GraphError> {
        Ok(self.store.get_ref(&format!("meta/{key}"))?)
    }

    /// Sets a metadata value if it is absent. `None` if this call set it; otherwise the
    /// value already stored (possibly set by a concurrent writer), left as it is.
    pub fn register_meta(&self, key: &str, value: &[u8]) -> Result<Option<Vec<u8>>, GraphError> {
        let name = format!("meta/{key}");
        match self.store.cas_ref(&name, None, Some(value))? {
            CasOutcome::Swapped => Ok(None),
            CasOutcome::Conflict { current: Some(v) } => Ok(Some(v)),
            CasOutcome::Conflict { current: None } => Err(GraphError::BadRef {
                name,
                detail: "compare-and-swap conflict on an absent ref".into(),
            }),
        }
    }

    /// Removes a metadata value if it still holds `value` (taking back a registration).
    /// True if it was removed.
    pub fn remove_meta_if(&self, key: &str, value: &[u8]) -> Result<bool, GraphError> {
        let name = format!("meta/{key}");
        Ok(matches!(
            self.store.cas_ref(&name, Some(value), None)?,
            CasOutcome::Swapped
        ))
    }

    /// All metadata entries under `meta/<prefix>`, keys without the `meta/` part.
    pub fn meta_list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, GraphError> {
        Ok(self
            .store
            .list_refs(&format!("meta/{prefix}"))?
            .into_iter()
            .map(|(k, v)| (k.trim_start_matches("meta/").to_string(), v))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names() {
        for ok in ["main", "feature/x", "v1.2", "a_b-c"] {
            assert!(BranchName::new(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-x", "a..b", "a b", "HEAD", "x/", "/x", "a@{1}", ".hidden"] {
            assert!(BranchName::new(bad).is_err(), "{bad}");
        }
    }
}
