//! [`Peer`]: the other side of a fetch, push or clone — a repository opened on this
//! machine, or a `cairn serve` remote reached over HTTP — and [`PeerRefs`], what a sync
//! reads of it, in one read (one `GET /sync/refs` for a server): its branches, its
//! dimension records, the settings a clone copies, its current branch.

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

/// A peer's refs, read at one moment.
pub(crate) struct PeerRefs {
    /// Every branch and its head, in name order.
    pub(crate) branches: Vec<(BranchName, CommitId)>,
    /// The dense-dimension records (`dense-dim/<model>` → stored bytes).
    pub(crate) dims: Vec<(String, Vec<u8>)>,
    /// The settings a clone copies ([`CLONED_META`]) that the peer has.
    pub(crate) settings: Vec<(String, Vec<u8>)>,
    /// The peer's current branch.
    pub(crate) current: BranchName,
}

impl PeerRefs {
    /// The head of `branch`, if the peer has it.
    pub(crate) fn branch(&self, branch: &BranchName) -> Option<CommitId> {
        self.branches.iter().find(|(b, _)| b == branch).map(|(_, c)| *c)
    }
}

impl Peer {
    /// The peer as a transfer's end.
    pub(crate) fn end(&self) -> End<'_> {
        match self {
            Peer::Local(r) => End::Local(r),
            Peer::Http(h) => End::Http(h),
        }
    }

    /// The peer's refs, now.
    pub(crate) fn refs(&self) -> Result<PeerRefs> {
        match self {
            Peer::Local(r) => {
                let mut settings = Vec::new();
                for key in CLONED_META {
                    if let Some(v) = r.refs().meta(key)? {
                        settings.push((key.to_string(), v));
                    }
                }
                Ok(PeerRefs {
                    branches: r.refs().branches()?,
                    dims: r.refs().meta_list(DENSE_DIM_META)?,
                    settings,
                    current: r.current_branch()?,
                })
            }
            Peer::Http(h) => {
                let refs = h.refs()?;
                let branches = refs
                    .branches
                    .iter()
                    .map(|(b, c)| {
                        Ok((
                            BranchName::new(b).map_err(|e| bad(h, e))?,
                            CommitId::from_hex(c).map_err(|e| bad(h, e))?,
                        ))
                    })
                    .collect::<Result<_>>()?;
                let dims = refs
                    .dims
                    .iter()
                    .map(|(k, v)| {
                        if !k.starts_with(DENSE_DIM_META) {
                            return Err(bad(h, format!("{k:?} is not a dimension record")));
                        }
                        Ok((k.clone(), unhex(v).map_err(|e| bad(h, e))?))
                    })
                    .collect::<Result<_>>()?;
                let settings = refs
                    .settings
                    .iter()
                    .filter(|(k, _)| CLONED_META.contains(&k.as_str()))
                    .map(|(k, v)| Ok((k.clone(), unhex(v).map_err(|e| bad(h, e))?)))
                    .collect::<Result<_>>()?;
                Ok(PeerRefs {
                    branches,
                    dims,
                    settings,
                    current: BranchName::new(&refs.current).map_err(|e| bad(h, e))?,
                })
            }
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
