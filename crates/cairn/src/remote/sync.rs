//! Fetch, push, pull and clone over a remote (the [module docs](super) say how objects
//! move).

use std::collections::BTreeMap;
use std::path::Path;

use cairn_core::CommitId;
use cairn_graph::history;
use cairn_graph::refs::BranchName;

use super::http::BranchMove;
use super::peer::{Peer, PeerRefs};
use super::transfer::{copy_reachable, End, TransferStats};
use super::wire::{hex, SyncBranch};
use super::{Remote, RemoteUrl};
use crate::dense_dims::{dense_dim_model, DENSE_DIM_META};
use crate::error::{Error, Result};
use crate::merge::MergeOutcome;
use crate::repo::Repo;
use crate::writer;

/// One branch a fetch or push moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    /// The branch, on the remote.
    pub branch: String,
    /// Where its tracking ref was (`None`: new).
    pub old: Option<CommitId>,
    /// Where it is now (`None`: the branch is gone from the remote, its tracking ref
    /// removed).
    pub new: Option<CommitId>,
}

/// What [`Repo::fetch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchReport {
    /// The remote's name.
    pub remote: String,
    /// The tracking refs that moved, in branch order (unchanged ones are not listed).
    pub updates: Vec<RefUpdate>,
    /// The objects that moved.
    pub transfer: TransferStats,
}

/// What [`Repo::push`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushReport {
    /// The remote's name.
    pub remote: String,
    /// The branch pushed.
    pub branch: String,
    /// The remote branch's head before (`None`: the push created it).
    pub old: Option<CommitId>,
    /// Its head now (the local branch's head).
    pub new: CommitId,
    /// The objects that moved.
    pub transfer: TransferStats,
}

impl Repo {
    /// Fetches every branch of remote `name`: copies the objects their heads reach that
    /// this repository lacks, then sets the remote-tracking refs `refs/remotes/<name>/*`
    /// (revisions `name/<branch>`), removing those of branches the remote no longer has.
    /// Local branches do not move ([`Repo::pull`] merges). The remote's dense-dimension
    /// records are registered here first; a model stored at another dimension here is
    /// refused before anything is written.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let upstream = cairn::Repo::init(dir.path().join("upstream"))?;
    /// let mut tx = upstream.transaction()?;
    /// tx.put_node(cairn::Node::new(cairn::NodeId::new("a")?).with_text("hello"))?;
    /// let head = tx.commit("first")?;
    /// drop(upstream);
    ///
    /// let repo = cairn::Repo::init(dir.path().join("mine"))?;
    /// repo.remote_add("origin", dir.path().join("upstream").to_str().unwrap())?;
    /// let report = repo.fetch("origin")?;
    /// assert_eq!(report.updates[0].new, Some(head));
    /// assert_eq!(repo.resolve("origin/main")?, head);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fetch(&self, name: &str) -> Result<FetchReport> {
        let remote = self.remote(name)?;
        let theirs = RemoteUrl::parse(&remote.url)?.open()?;
        self.fetch_from(&remote, &theirs, &theirs.refs()?)
    }

    /// Fetches from `theirs`, whose refs were read as `their_refs`.
    fn fetch_from(&self, remote: &Remote, theirs: &Peer, their_refs: &PeerRefs) -> Result<FetchReport> {
        let (heads, dims) = (&their_refs.branches, &their_refs.dims);
        check_dims(self, dims, &remote.name)?;
        // Published under the gc lock: what the transfer wrote cannot be collected before
        // the tracking refs make it reachable.
        let _publishing = self.inner.gc_lock.read();
        let ids: Vec<CommitId> = heads.iter().map(|(_, c)| *c).collect();
        let transfer = copy_reachable(theirs.end(), End::Local(self), &ids)?;
        register_dims(self, dims)?;
        let refs = self.refs();
        let mut updates = Vec::new();
        let before: BTreeMap<BranchName, CommitId> = refs.remote_branches(&remote.name)?.into_iter().collect();
        for (branch, head) in heads {
            let old = before.get(branch).copied();
            if old != Some(*head) {
                refs.set_remote_branch(&remote.name, branch, Some(*head))?;
                updates.push(RefUpdate {
                    branch: branch.to_string(),
                    old,
                    new: Some(*head),
                });
            }
        }
        for (branch, old) in &before {
            if !heads.iter().any(|(b, _)| b == branch) {
                refs.set_remote_branch(&remote.name, branch, None)?;
                updates.push(RefUpdate {
                    branch: branch.to_string(),
                    old: Some(*old),
                    new: None,
                });
            }
        }
        updates.sort_by(|a, b| a.branch.cmp(&b.branch));
        self.store().flush()?;
        Ok(FetchReport {
            remote: remote.name.clone(),
            updates,
            transfer,
        })
    }

    /// Pushes local branch `branch` (`None`: the current one) to remote `name`: copies the
    /// objects its head reaches that the remote lacks, then moves the remote's branch by
    /// compare-and-swap from the head it was read at (recorded in the remote's reflog) and
    /// sets the tracking ref `name/<branch>` here.
    ///
    /// Fast-forward only: if the remote's branch holds a commit the local head does not
    /// descend from (or one this repository has never fetched), the push is refused with
    /// [`Error::NotFastForward`], naming the remote's head — fetch, merge, push again — unless
    /// `force`. A push that loses a race with another writer on the remote is refused the
    /// same way, and the objects it copied are unreachable there until `gc`.
    pub fn push(&self, name: &str, branch: Option<&str>, force: bool) -> Result<PushReport> {
        let remote = self.remote(name)?;
        let branch = match branch {
            Some(b) => BranchName::new(b)?,
            None => self.current_branch()?,
        };
        let local = self
            .refs()
            .branch(&branch)?
            .ok_or_else(|| Error::UnknownBranch(branch.to_string()))?;
        let theirs = RemoteUrl::parse(&remote.url)?.open()?;
        let their_refs = theirs.refs()?;
        let their_head = their_refs.branch(&branch);
        let refused = |remote_head: Option<CommitId>| Error::NotFastForward {
            remote: remote.name.clone(),
            branch: branch.to_string(),
            remote_head: remote_head.map_or_else(|| "none (the branch was deleted)".into(), |h| h.to_hex()),
        };
        let mut transfer = TransferStats::default();
        if their_head != Some(local) {
            if let (Some(h), false) = (their_head, force) {
                let known = self.store().contains(h.hash())?;
                if !known || history::merge_base(self.objects(), h, local)? != Some(h) {
                    return Err(refused(Some(h)));
                }
            }
            let dims = self.refs().meta_list(DENSE_DIM_META)?;
            check_dims_against(&their_refs.dims, &dims, &remote.name)?;
            match &theirs {
                Peer::Local(theirs) => {
                    let _publishing = theirs.inner.gc_lock.read();
                    transfer = copy_reachable(End::Local(self), End::Local(theirs), &[local])?;
                    register_dims(theirs, &dims)?;
                    let commit = self.commit(&local)?;
                    match writer::move_branch(theirs, &branch, their_head, local, &commit, &BTreeMap::new()) {
                        Ok(_) => {}
                        Err(Error::Conflict { .. }) => return Err(refused(theirs.refs().branch(&branch)?)),
                        Err(e) => return Err(e),
                    }
                }
                Peer::Http(http) => {
                    transfer = copy_reachable(End::Local(self), End::Http(http), &[local])?;
                    let req = SyncBranch {
                        branch: branch.to_string(),
                        old: their_head.map(|h| h.to_hex()),
                        new: local.to_hex(),
                        dims: dims.iter().map(|(k, v)| (k.clone(), hex(v))).collect(),
                    };
                    if let BranchMove::Conflict = http.move_branch(&req)? {
                        return Err(refused(theirs.refs()?.branch(&branch)));
                    }
                }
            }
        }
        self.refs().set_remote_branch(&remote.name, &branch, Some(local))?;
        self.store().flush()?;
        Ok(PushReport {
            remote: remote.name,
            branch: branch.to_string(),
            old: their_head,
            new: local,
            transfer,
        })
    }

    /// Fetches remote `name`, then merges its branch `branch` (`None`: the one named like
    /// the current branch) into the current branch: [`Repo::merge`] of `name/<branch>`.
    /// The merge is returned uncommitted, as `merge` returns it — a fast-forward or a clean
    /// three-way merge needs only [`MergeOutcome::commit`]; conflicts are resolved first.
    pub fn pull(&self, name: &str, branch: Option<&str>) -> Result<(FetchReport, MergeOutcome)> {
        let fetched = self.fetch(name)?;
        let current = self.current_branch()?;
        let theirs = match branch {
            Some(b) => BranchName::new(b)?,
            None => current.clone(),
        };
        let rev = format!("{name}/{theirs}");
        if self.refs().remote_branch(name, &theirs)?.is_none() {
            return Err(Error::UnknownRevision {
                rev,
                detail: format!("remote `{name}` has no branch `{theirs}`"),
            });
        }
        let merge = self.merge(current.as_str(), &rev)?;
        Ok((fetched, merge))
    }

    /// Clones the repository at `url` into a new repository at `dir` (which must not
    /// exist): remote `origin` set to `url`, every branch fetched, and the remote's current
    /// branch checked out as a local branch of the same name. The remote's embedder
    /// settings come along, so text queries embed the same way in the clone. Built in a
    /// directory beside `dir` and moved into place when complete, so an interrupted clone
    /// leaves no `dir` (the next clone into `dir` removes what it left beside it).
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let upstream = cairn::Repo::init(dir.path().join("upstream"))?;
    /// let mut tx = upstream.transaction()?;
    /// tx.put_node(cairn::Node::new(cairn::NodeId::new("a")?).with_text("hello"))?;
    /// let head = tx.commit("first")?;
    /// drop(upstream);
    ///
    /// let clone = cairn::Repo::clone_from(dir.path().join("upstream").to_str().unwrap(), dir.path().join("copy"))?;
    /// assert_eq!(clone.head()?, Some(head));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clone_from(url: &str, dir: impl AsRef<Path>) -> Result<Repo> {
        let dir = dir.as_ref();
        if dir.exists() {
            return Err(Error::AlreadyExists {
                path: dir.display().to_string(),
            });
        }
        let parsed = RemoteUrl::parse(url)?;
        let theirs = parsed.open()?;
        let file_name = dir
            .file_name()
            .ok_or_else(|| Error::InvalidArgument(format!("clone into {}: not a directory name", dir.display())))?;
        let prefix = format!(".{}.cloning-", file_name.to_string_lossy());
        remove_stale_clones(dir, &prefix);
        let staging = dir.with_file_name(format!("{prefix}{}", std::process::id()));
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(|e| io_error("a clone's staging directory", &staging, e))?;
        }
        let built = (|| -> Result<()> {
            let repo = Repo::init(&staging)?;
            let remote = repo.remote_add("origin", &parsed.to_stored()?)?;
            let their_refs = theirs.refs()?;
            repo.fetch_from(&remote, &theirs, &their_refs)?;
            for (key, value) in &their_refs.settings {
                repo.refs().set_meta(key, Some(value))?;
            }
            let current = their_refs.current;
            if let Some(head) = repo.refs().remote_branch("origin", &current)? {
                let c = repo.commit(&head)?;
                writer::move_branch(&repo, &current, None, head, &c, &BTreeMap::new())?;
            }
            repo.refs().set_current_branch(&current)?;
            repo.store().flush()?;
            Ok(())
        })();
        if let Err(e) = built {
            // A clone that failed (a damaged remote, a full disk) leaves nothing behind.
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
        drop(theirs);
        std::fs::rename(&staging, dir).map_err(|e| io_error("the cloned repository", dir, e))?;
        Repo::open(dir)
    }
}

/// Removes what clones into `dir` killed part-way left beside it (`prefix<pid>`
/// directories): a staging repository that opens is no longer held by its process (the
/// store's lock ends with the process), and one that is not a repository yet was left
/// before its first write. One still held (a clone in progress) stays. Best effort.
fn remove_stale_clones(dir: &Path, prefix: &str) {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let path = entry.path();
        let stale = match Repo::open(&path) {
            Ok(_) | Err(Error::NotARepo { .. }) => true,
            Err(_) => false,
        };
        if stale {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// An I/O error on `path`, naming it.
fn io_error(what: &'static str, path: &Path, e: std::io::Error) -> Error {
    Error::Write {
        what,
        source: std::io::Error::new(e.kind(), format!("{}: {e}", path.display())),
    }
}

/// Refuses a model `dims` (meta entries `dense-dim/<model>`) records at a dimension other
/// than the one `repo` records.
pub(super) fn check_dims(repo: &Repo, dims: &[(String, Vec<u8>)], remote: &str) -> Result<()> {
    check_dims_against(&repo.refs().meta_list(DENSE_DIM_META)?, dims, remote)
}

/// Refuses a model `dims` records at a dimension other than the one `mine` records.
fn check_dims_against(mine: &[(String, Vec<u8>)], dims: &[(String, Vec<u8>)], remote: &str) -> Result<()> {
    let mine: BTreeMap<&str, &[u8]> = mine.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
    for (key, value) in dims {
        if let Some(&m) = mine.get(key.as_str()) {
            if m != value.as_slice() {
                let dim = |v: &[u8]| <[u8; 4]>::try_from(v).map_or(0, u32::from_le_bytes);
                return Err(Error::InvalidArgument(format!(
                    "model `{}` has dimension {} on remote `{remote}`'s side and {} on the other: the two repositories cannot share commits",
                    dense_dim_model(key),
                    dim(value),
                    dim(m)
                )));
            }
        }
    }
    Ok(())
}

/// Registers the dimension records `repo` lacks (after [`check_dims`]).
pub(super) fn register_dims(repo: &Repo, dims: &[(String, Vec<u8>)]) -> Result<()> {
    for (key, value) in dims {
        repo.refs().register_meta(key, value)?;
    }
    Ok(())
}
