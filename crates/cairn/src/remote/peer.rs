//! [`Peer`]: the other side of a fetch, push or clone — a repository opened on this
//! machine, or a `cairn serve` remote reached over HTTP — with the few questions a sync
//! asks of it (its branches, its dimension records and settings, its current branch).

use cairn_core::CommitId;
use cairn_graph::refs::BranchName;

use super::http::HttpRemote;
use super::transfer::End;
use super::wire::unhex;
use super::CLONED_META;
use crate::dense_dims::DENSE_DIM_META;
use crate::error::{Error, Result};
use crate::repo::Repo;

/// An opened remote.
pub(crate) enum Peer {
    /// A repository on this machine, opened (and locked) for the sync.
    Local(Repo),
    /// A `cairn serve` remote.
    Http(HttpRemote),
}

impl Peer {
    /// The peer as a transfer's end.
    pub(crate) fn end(&self) -> End<'_> {
        match self {
            Peer::Local(r) => End::Local(r),
            Peer::Http(h) => End::Http(h),
        }
    }

    /// Every branch and its head, in name order.
    pub(crate) fn branches(&self) -> Result<Vec<(BranchName, CommitId)>> {
        match self {
            Peer::Local(r) => Ok(r.refs().branches()?),
            Peer::Http(h) => h
                .refs()?
                .branches
                .iter()
                .map(|(b, c)| {
                    Ok((
                        BranchName::new(b).map_err(|e| bad(h, e))?,
                        CommitId::from_hex(c).map_err(|e| bad(h, e))?,
                    ))
                })
                .collect(),
        }
    }

    /// The head of `branch`, if the peer has it.
    pub(crate) fn branch(&self, branch: &BranchName) -> Result<Option<CommitId>> {
        match self {
            Peer::Local(r) => Ok(r.refs().branch(branch)?),
            Peer::Http(_) => Ok(self.branches()?.into_iter().find(|(b, _)| b == branch).map(|(_, c)| c)),
        }
    }

    /// The dense-dimension records (`dense-dim/<model>` → stored bytes).
    pub(crate) fn dims(&self) -> Result<Vec<(String, Vec<u8>)>> {
        match self {
            Peer::Local(r) => Ok(r.refs().meta_list(DENSE_DIM_META)?),
            Peer::Http(h) => h
                .refs()?
                .dims
                .iter()
                .map(|(k, v)| {
                    if !k.starts_with(DENSE_DIM_META) {
                        return Err(bad(h, format!("{k:?} is not a dimension record")));
                    }
                    Ok((k.clone(), unhex(v).map_err(|e| bad(h, e))?))
                })
                .collect(),
        }
    }

    /// The settings a clone copies ([`CLONED_META`]) that the peer has.
    pub(crate) fn settings(&self) -> Result<Vec<(String, Vec<u8>)>> {
        match self {
            Peer::Local(r) => {
                let mut out = Vec::new();
                for key in CLONED_META {
                    if let Some(v) = r.refs().meta(key)? {
                        out.push((key.to_string(), v));
                    }
                }
                Ok(out)
            }
            Peer::Http(h) => h
                .refs()?
                .settings
                .iter()
                .filter(|(k, _)| CLONED_META.contains(&k.as_str()))
                .map(|(k, v)| Ok((k.clone(), unhex(v).map_err(|e| bad(h, e))?)))
                .collect(),
        }
    }

    /// The peer's current branch.
    pub(crate) fn current_branch(&self) -> Result<BranchName> {
        match self {
            Peer::Local(r) => r.current_branch(),
            Peer::Http(h) => BranchName::new(&h.refs()?.current).map_err(|e| bad(h, e)),
        }
    }
}

/// A malformed answer from `h`.
fn bad(h: &HttpRemote, e: impl std::fmt::Display) -> Error {
    Error::Remote {
        url: h.url().to_string(),
        status: None,
        detail: format!("GET /sync/refs: a malformed answer: {e}"),
    }
}
