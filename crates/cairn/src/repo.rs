//! [`Repo`]: a handle on one repository — opening, reading, history, branches.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::{Commit, CommitId, Edge, EdgeKey, Hash, Node, NodeId};
use cairn_graph::refs::BranchName;
use cairn_graph::{history, EdgeTree, NodeTree, Objects, Refs, ReverseEdgeTree};
use cairn_store::{MemoryStore, SegmentStore, SledStore, Store};

use crate::commit_cache::CommitCache;
use crate::derived::DerivedData;
use crate::diff::{Diff, EdgeChange, NodeChange};
use crate::error::{Error, Result};
use crate::progress::ProgressHook;
use crate::transaction::Transaction;

/// The branch a new repository starts on.
pub const DEFAULT_BRANCH: &str = "main";
pub(crate) const FORMAT_META: &str = "format";
pub(crate) const FORMAT_VALUE: &[u8] = b"cairn/1";

/// A Cairn repository: a versioned property graph with per-commit indexes.
///
/// Cheap to clone (a shared handle); safe to use from many threads. Writers use
/// [`Repo::transaction`]; of two transactions committing to one branch from the same
/// head, one gets [`Error::Conflict`].
///
/// Dropping the last clone closes the repository. Background work that only warms this
/// handle is dropped; derived data owed to later processes (the unit texts of the commit
/// the text lane moved its base to, stored by an idle background thread) is finished
/// first, so closing a handle that has just committed past such a move can take a moment
/// (up to ~3 s at 1M nodes, once per move) that the next process's first query saves.
///
/// ```
/// use cairn::{Node, NodeId, Repo};
///
/// let repo = Repo::in_memory()?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(NodeId::new("doc-1")?).with_label("Document").with_text("Wings stall."))?;
/// let commit = tx.commit("first import")?;
/// assert_eq!(repo.head()?, Some(commit));
/// assert_eq!(repo.node(&NodeId::new("doc-1")?)?.unwrap().text, "Wings stall.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Repo {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    /// The objects view, shared with `derived` (its tree-node cache serves both).
    pub(crate) objects: Arc<Objects>,
    pub(crate) path: Option<PathBuf>,
    /// The repository's derived data (indexes, time indexes): its own handles on the
    /// store, the objects, the commit cache and the progress observer.
    pub(crate) derived: DerivedData,
    /// Held for reading by every writer from the moment it builds a commit's objects
    /// until its ref has moved, and for writing by `gc` while it marks and sweeps: an
    /// object of an unpublished commit is never collected (see `gc.rs`).
    pub(crate) gc_lock: parking_lot::RwLock<()>,
    /// Objects open transactions wrote ahead of their commit, which `gc` keeps.
    pub(crate) pins: crate::pins::Pins,
    /// Held by every writer while it registers dense dimensions and moves its branch, so
    /// a registration taken back after a lost swap was seen by no commit that landed
    /// (see `writer.rs`).
    pub(crate) dims_lock: parking_lot::Mutex<()>,
    /// Embedders built for query embedding, by name with the configuration they were
    /// built from, shared by every [`Repo::retrieve`] of this handle (a local model is
    /// loaded once, not per retrieval).
    pub(crate) built_embedders: crate::embedders::BuiltEmbedders,
    /// The observer of long steps' progress ([`Repo::set_progress`]), shared with
    /// `derived`.
    pub(crate) progress: Arc<ProgressHook>,
    /// Commits read last, decoded ([`Repo::commit`]), shared with `derived`.
    pub(crate) commits: Arc<CommitCache>,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner.path {
            Some(p) => write!(f, "Repo({})", p.display()),
            None => write!(f, "Repo(in memory)"),
        }
    }
}

/// Counts describing one commit (the `cairn stats` output).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// The commit counted (the head, or the revision asked for).
    pub commit: CommitId,
    /// Root of its node tree (`None`: empty).
    pub node_root: Option<Hash>,
    /// Root of its edge tree.
    pub edge_root: Option<Hash>,
    /// Nodes.
    pub nodes: u64,
    /// Edges.
    pub edges: u64,
    /// First-parent depth.
    pub generation: u64,
}

/// Which on-disk store a new repository keeps its bytes in. [`Repo::open`] finds out by
/// itself which one a repository has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StoreKind {
    /// Cairn's segment store ([`SegmentStore`]): append-only checksummed segment files,
    /// refs as files. Damage costs the record it hits; a full disk costs the write that
    /// did not fit. The default.
    #[default]
    Segment,
    /// A sled database ([`SledStore`]), the default of earlier versions.
    Sled,
    /// An object store (`cairn_store::ObjectStoreBackend`): S3 and S3-compatible services,
    /// Google Cloud Storage, Azure Blob Storage, at a URL (`s3://bucket/prefix`, `gs://…`,
    /// `az://…`). A URL given to [`Repo::init`] or [`Repo::open`] picks it by itself; it
    /// needs the `object-store` feature (on by default).
    Object,
}

/// The object-store URL `path` spells, if it is one (`s3://…`, `gs://…`, `az://…`).
pub(crate) fn store_url(path: &Path) -> Option<&str> {
    let s = path.to_str()?;
    is_store_url(s).then_some(s)
}

/// True if `location` is an object-store URL.
#[cfg(feature = "object-store")]
pub(crate) fn is_store_url(location: &str) -> bool {
    cairn_store::ObjectStoreBackend::is_url(location)
}

/// True if `location` is an object-store URL (recognised to refuse it: this build has no
/// object-store backend).
#[cfg(not(feature = "object-store"))]
pub(crate) fn is_store_url(location: &str) -> bool {
    ["s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss"]
        .iter()
        .any(|s| location.strip_prefix(s).is_some_and(|r| r.starts_with("://")))
}

/// Opens the object store at `url` (no request is sent yet).
#[cfg(feature = "object-store")]
fn open_object_store(url: &str) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(cairn_store::ObjectStoreBackend::open(
        url,
        cairn_store::ObjectStoreOptions::default(),
    )?))
}

#[cfg(not(feature = "object-store"))]
fn open_object_store(url: &str) -> Result<Arc<dyn Store>> {
    Err(Error::InvalidArgument(format!(
        "{url}: this build of cairn has no object-store support (the `object-store` feature)"
    )))
}

impl Repo {
    /// Creates a new repository on disk at `path` (in the default [`StoreKind`]), or in an
    /// object store if `path` is a URL (`s3://bucket/prefix`: [`StoreKind::Object`]), on
    /// branch `main`. Fails with [`Error::AlreadyExists`] if one is there.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let repo = cairn::Repo::init(dir.path().join("memory"))?;
    /// assert_eq!(repo.head()?, None);
    /// drop(repo);
    /// let repo = cairn::Repo::open(dir.path().join("memory"))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn init(path: impl AsRef<Path>) -> Result<Repo> {
        Self::init_with(path, StoreKind::default())
    }

    /// [`Repo::init`] with the store of your choice. An object-store URL makes an
    /// object-store repository whatever `kind` says; [`StoreKind::Object`] with a path
    /// that is not such a URL is refused with [`Error::InvalidArgument`].
    pub fn init_with(path: impl AsRef<Path>, kind: StoreKind) -> Result<Repo> {
        let path = path.as_ref();
        let already = || Error::AlreadyExists {
            path: path.display().to_string(),
        };
        let store: Arc<dyn Store> = match Self::open_store(path)? {
            Some(store) => store,
            None => match kind {
                // A URL's store was opened above: this is a path.
                StoreKind::Object => {
                    return Err(Error::InvalidArgument(format!(
                        "{}: an object-store repository needs a URL (s3://bucket/prefix, gs://…, az://…)",
                        path.display()
                    )))
                }
                StoreKind::Segment => Arc::new(SegmentStore::open(path)?),
                StoreKind::Sled => match Self::init_sled_beside(path)? {
                    Some(store) => return Ok(Repo::from_store(store, Some(path.to_path_buf()))),
                    None => Arc::new(SledStore::open(path)?),
                },
            },
        };
        // Checked with the store open, so under its one-process lock: of two `init`s racing
        // on one new path, the second finds the first's repository, whether it saw the
        // path empty or not.
        if Self::initialised_fully(store.as_ref()) {
            return Err(already());
        }
        Self::initialize(store.as_ref())?;
        Ok(Repo::from_store(store, Some(path.to_path_buf())))
    }

    /// True if `store` holds a repository: initialised, and not a store whose
    /// initialisation was cut short (no branch, no damage, `HEAD` or the format marker
    /// missing), which `init` initialises again.
    fn initialised_fully(store: &dyn Store) -> bool {
        let refs = Refs::new(store);
        let (format, head) = (refs.meta(FORMAT_META), refs.current_branch());
        let no_branch = matches!(store.list_refs("refs/"), Ok(v) if v.is_empty());
        let half_done = no_branch
            && format.is_ok()
            && head.is_ok()
            && !(matches!(format, Ok(Some(_))) && matches!(head, Ok(Some(_))));
        Self::is_initialised(store) && !half_done
    }

    /// A new sled repository, built and initialised in a side directory
    /// (`.NAME.cairn-init` beside `path`) and renamed into place: sled's own first writes
    /// are not atomic, and a process killed during them can leave a database sled will
    /// not open, which `init` could then neither use nor replace. Killed here, it leaves
    /// only the side directory, which the next `init` removes. `None` when `path` is a
    /// directory with files in it, or has no name (`.`): that is initialised in place.
    fn init_sled_beside(path: &Path) -> Result<Option<Arc<dyn Store>>> {
        let io = |what: &str, e: std::io::Error| -> Error {
            let what = format!("{what} for {}", path.display());
            Error::Store(if cairn_store::StoreError::is_no_space(&e) {
                cairn_store::StoreError::NoSpace {
                    path: path.display().to_string(),
                    detail: what,
                }
            } else {
                cairn_store::StoreError::Backend(format!("{what}: {e}"))
            })
        };
        let occupied = path.is_dir() && std::fs::read_dir(path).map_or(true, |mut d| d.next().is_some());
        let Some(name) = path.file_name().filter(|_| !occupied) else {
            return Ok(None);
        };
        let side = path.with_file_name(format!(".{}.cairn-init", name.to_string_lossy()));
        if side.exists() {
            std::fs::remove_dir_all(&side).map_err(|e| io("removing an interrupted init", e))?;
        }
        {
            let store = SledStore::open(&side)?;
            Self::initialize(&store)?;
        }
        // rename(2) replaces an empty directory; the parent's entry is then made durable.
        std::fs::rename(&side, path).map_err(|e| io("moving the new repository into place", e))?;
        if let Some(parent) = path
            .parent()
            .map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p })
        {
            std::fs::File::open(parent)
                .and_then(|d| d.sync_all())
                .map_err(|e| io("syncing the parent directory", e))?;
        }
        Ok(Some(Arc::new(SledStore::open(path)?)))
    }

    /// True if a store holds a repository: its initialisation shows in its format marker,
    /// its `HEAD` or a branch. Damage to one of them (read as an error) counts as present:
    /// it does not make the others unreadable; `fsck` reports it, and
    /// [`Repo::current_branch`] falls back.
    fn is_initialised(store: &dyn Store) -> bool {
        let refs = Refs::new(store);
        !matches!(refs.meta(FORMAT_META), Ok(None))
            || !matches!(refs.current_branch(), Ok(None))
            || !matches!(store.list_refs("refs/"), Ok(v) if v.is_empty())
    }

    /// Opens the store a repository directory holds, of whichever kind (`None`: none), or
    /// the object store a URL names.
    fn open_store(path: &Path) -> Result<Option<Arc<dyn Store>>> {
        if let Some(url) = store_url(path) {
            return open_object_store(url).map(Some);
        }
        if !path.is_dir() {
            return Ok(None);
        }
        if SegmentStore::is_store(path) {
            return Ok(Some(Arc::new(SegmentStore::open(path)?)));
        }
        // sled creates its files in any directory it opens: look for its config file
        // first, so opening a directory that is not a repository changes nothing in it.
        if path.join("conf").is_file() {
            return Ok(Some(Arc::new(SledStore::open(path)?)));
        }
        Ok(None)
    }

    /// Opens the repository at `path`, whichever [`StoreKind`] it has, or the one in the
    /// object store a URL names (`s3://bucket/prefix`, `gs://…`, `az://…`; credentials from
    /// the provider's environment variables, README "Repositories in object storage"). A
    /// segment store
    /// reads its hint files (a few bytes per object: about 0.1 s per million objects) and
    /// scans its newest segment (at most 64 MiB); a sled store replays what its last
    /// session wrote.
    /// Fails with [`Error::NotARepo`] if there is none.
    pub fn open(path: impl AsRef<Path>) -> Result<Repo> {
        let path = path.as_ref();
        let not_a_repo = || Error::NotARepo {
            path: path.display().to_string(),
        };
        let Some(store) = Self::open_store(path)? else {
            return Err(not_a_repo());
        };
        let refs = Refs::new(store.as_ref());
        let format = refs.meta(FORMAT_META);
        if let Ok(Some(v)) = &format {
            if v != FORMAT_VALUE {
                return Err(Error::InvalidArgument(format!(
                    "{} holds repository format {:?}, this build reads {:?}",
                    path.display(),
                    String::from_utf8_lossy(v),
                    String::from_utf8_lossy(FORMAT_VALUE)
                )));
            }
        }
        if !Self::is_initialised(store.as_ref()) {
            return Err(not_a_repo());
        }
        let repo = Repo::from_store(store, Some(path.to_path_buf()));
        // A writer that crashed between registering a dimension and moving its branch
        // left an intent: take the registration back (one listing when there is none).
        crate::writer::recover_dim_intents(&repo);
        Ok(repo)
    }

    /// [`Repo::open`], waiting up to `timeout` while another process has the repository
    /// open (a store admits one process at a time: the others get
    /// [`StoreError::Locked`](cairn_store::StoreError::Locked)). Polls every 20 ms; after
    /// `timeout` the `Locked` error is returned. Any other error returns at once.
    pub fn open_waiting(path: impl AsRef<Path>, timeout: std::time::Duration) -> Result<Repo> {
        let path = path.as_ref();
        let deadline = std::time::Instant::now().checked_add(timeout);
        loop {
            match Repo::open(path) {
                Err(Error::Store(cairn_store::StoreError::Locked { .. }))
                    if deadline.is_none_or(|d| std::time::Instant::now() < d) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    /// A new repository held in memory (for tests and scratch work).
    pub fn in_memory() -> Result<Repo> {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        Self::initialize(store.as_ref())?;
        Ok(Repo::from_store(store, None))
    }

    /// A repository over any [`Store`] (initialised if empty).
    pub fn with_store(store: Arc<dyn Store>) -> Result<Repo> {
        if Refs::new(store.as_ref()).current_branch()?.is_none() {
            Self::initialize(store.as_ref())?;
        }
        Ok(Repo::from_store(store, None))
    }

    fn initialize(store: &dyn Store) -> Result<()> {
        let refs = Refs::new(store);
        refs.register_meta(FORMAT_META, FORMAT_VALUE)?;
        refs.set_current_branch(&BranchName::new(DEFAULT_BRANCH)?)?;
        store.flush()?;
        Ok(())
    }

    fn from_store(store: Arc<dyn Store>, path: Option<PathBuf>) -> Repo {
        let objects = Arc::new(Objects::new(Arc::clone(&store)));
        let commits = Arc::new(CommitCache::default());
        let progress = Arc::new(ProgressHook::default());
        let derived = DerivedData::new(
            Arc::clone(&store),
            Arc::clone(&objects),
            Arc::clone(&commits),
            Arc::clone(&progress),
        );
        Repo {
            inner: Arc::new(Inner {
                objects,
                store,
                path,
                derived,
                gc_lock: parking_lot::RwLock::new(()),
                pins: Default::default(),
                dims_lock: parking_lot::Mutex::new(()),
                built_embedders: Default::default(),
                progress,
                commits,
            }),
        }
    }

    /// The path of an on-disk repository.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// The underlying store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    pub(crate) fn objects(&self) -> &Objects {
        &self.inner.objects
    }

    pub(crate) fn refs(&self) -> Refs<'_> {
        Refs::new(self.inner.store.as_ref())
    }

    /// The repository's derived data.
    pub(crate) fn derived(&self) -> &DerivedData {
        &self.inner.derived
    }

    // -----------------------------------------------------------------------------------
    // Writing

    /// Starts a transaction on the current branch, based on its head now.
    pub fn transaction(&self) -> Result<Transaction<'_>> {
        let branch = self.current_branch()?;
        Transaction::begin(self, branch)
    }

    /// Starts a transaction on `branch` (which need not be the current one).
    ///
    /// [`Error::UnknownBranch`] if there is no branch of that name: a misspelt name must
    /// not start a new, unrelated history. Make one first with [`Repo::create_branch`].
    /// The current branch is always known, even before its first commit.
    ///
    /// ```
    /// use cairn::{Error, Node, NodeId, Repo};
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction_on("main")?; // the current branch, no commit yet
    /// tx.put_node(Node::new(NodeId::new("a")?))?;
    /// tx.commit("first")?;
    /// assert!(matches!(repo.transaction_on("mian"), Err(Error::UnknownBranch(_))));
    /// repo.create_branch("side", None)?;
    /// let mut tx = repo.transaction_on("side")?;
    /// tx.put_node(Node::new(NodeId::new("b")?))?;
    /// tx.commit("on side")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transaction_on(&self, branch: &str) -> Result<Transaction<'_>> {
        let branch = BranchName::new(branch)?;
        if self.refs().branch(&branch)?.is_none() && branch != self.current_branch()? {
            return Err(Error::UnknownBranch(branch.to_string()));
        }
        Transaction::begin(self, branch)
    }

    /// Starts a transaction whose commit creates `branch` with a root commit: a history
    /// unrelated to every other (git's `checkout --orphan`); merging it later merges
    /// against an empty base. [`Error::BranchExists`] if the branch exists (or is the
    /// current branch).
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?))?;
    /// tx.commit("first")?;
    /// let mut tx = repo.orphan_transaction("imported")?;
    /// tx.put_node(Node::new(NodeId::new("x")?))?;
    /// let root = tx.commit("another history")?;
    /// assert!(repo.commit(&root)?.parents.is_empty());
    /// assert!(repo.orphan_transaction("imported").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn orphan_transaction(&self, branch: &str) -> Result<Transaction<'_>> {
        let branch = BranchName::new(branch)?;
        if self.refs().branch(&branch)?.is_some() || branch == self.current_branch()? {
            return Err(Error::BranchExists(branch.to_string()));
        }
        Transaction::begin(self, branch)
    }

    // -----------------------------------------------------------------------------------
    // Branches

    /// The current branch (the one `HEAD` names). If `HEAD` is missing or damaged, the
    /// repository stays usable on a stand-in: `main` if it exists, else the first branch
    /// in name order, else `main` (`fsck` reports the damage; `cairn branch switch` or
    /// `fsck --repair` sets `HEAD` again).
    pub fn current_branch(&self) -> Result<BranchName> {
        match self.refs().current_branch() {
            Ok(Some(branch)) => Ok(branch),
            Ok(None) => self.stand_in_branch(),
            Err(e) if head_damage(&e) => self.stand_in_branch(),
            Err(e) => Err(e.into()),
        }
    }

    /// The branch used while `HEAD` is missing or damaged.
    pub(crate) fn stand_in_branch(&self) -> Result<BranchName> {
        let main = BranchName::new(DEFAULT_BRANCH)?;
        let branches = self.refs().branches()?;
        if branches.is_empty() || branches.iter().any(|(b, _)| *b == main) {
            return Ok(main);
        }
        Ok(branches[0].0.clone())
    }

    /// The head commit of the current branch (`None` before the first commit).
    pub fn head(&self) -> Result<Option<CommitId>> {
        Ok(self.refs().branch(&self.current_branch()?)?)
    }

    /// The head commit of `branch` (`None` if it has none), or [`Error::UnknownBranch`].
    pub fn branch_head(&self, branch: &str) -> Result<Option<CommitId>> {
        let name = BranchName::new(branch)?;
        let head = self.refs().branch(&name)?;
        if head.is_none() && self.current_branch()? != name {
            return Err(Error::UnknownBranch(branch.into()));
        }
        Ok(head)
    }

    /// Branches with their heads, in name order.
    pub fn branches(&self) -> Result<Vec<(String, CommitId)>> {
        Ok(self
            .refs()
            .branches()?
            .into_iter()
            .map(|(b, c)| (b.to_string(), c))
            .collect())
    }

    /// Creates `name` at revision `at` (default: the current head).
    /// [`Error::BranchExists`] if there is one of that name; [`Error::InvalidArgument`] if
    /// a tag has that name (one namespace: the branch would hide the tag).
    pub fn create_branch(&self, name: &str, at: Option<&str>) -> Result<CommitId> {
        let branch = BranchName::new(name)?;
        // Resolving and publishing under the gc lock: a commit resolved here cannot be
        // collected before the new branch makes it reachable.
        let _publishing = self.inner.gc_lock.read();
        if self.refs().tag(&branch)?.is_some() {
            return Err(Error::InvalidArgument(format!(
                "`{name}` is a tag: a branch of the same name would hide it (a revision naming both means the branch)"
            )));
        }
        let target = self.rev_or_head(at)?;
        match self.refs().cas_branch(&branch, None, Some(target))? {
            Ok(()) => {
                crate::reflog::record_created(self, &branch, target, at.unwrap_or("HEAD"))?;
                Ok(target)
            }
            Err(_) => Err(Error::BranchExists(name.into())),
        }
    }

    /// Revision `at`, or the current head (which must exist) if `None`.
    pub(crate) fn rev_or_head(&self, at: Option<&str>) -> Result<CommitId> {
        match at {
            Some(rev) => self.resolve(rev),
            None => self.head()?.ok_or_else(|| Error::UnknownRevision {
                rev: "HEAD".into(),
                detail: "the current branch has no commits yet".into(),
            }),
        }
    }

    /// Deletes a branch (not the current one). Its commits stay until `gc`.
    pub fn delete_branch(&self, name: &str) -> Result<()> {
        let branch = BranchName::new(name)?;
        if self.current_branch()? == branch {
            return Err(Error::DeleteCurrentBranch(name.into()));
        }
        let head = self
            .refs()
            .branch(&branch)?
            .ok_or_else(|| Error::UnknownBranch(name.into()))?;
        match self.refs().cas_branch(&branch, Some(head), None)? {
            Ok(()) => crate::reflog::record_deleted(self, &branch, head),
            Err(actual) => Err(Error::Conflict {
                branch: name.into(),
                expected: head.to_hex(),
                actual: actual.map_or("none".into(), |c| c.to_hex()),
            }),
        }
    }

    /// Makes `name` the current branch. It must exist (have a commit), unless the
    /// repository has no commits at all.
    pub fn switch_branch(&self, name: &str) -> Result<()> {
        let branch = BranchName::new(name)?;
        if self.refs().branch(&branch)?.is_none() && !self.branches()?.is_empty() {
            return Err(Error::UnknownBranch(name.into()));
        }
        self.refs().set_current_branch(&branch)?;
        self.inner.store.flush()?;
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // Reading

    /// Resolves a revision: a full commit hex or unique prefix (≥ 4 digits), a branch or
    /// a tag (one namespace), `HEAD`, any of those followed by `~N` (N-th first parent),
    /// `BRANCH@{T}` (the head of BRANCH as of time T, in any form [`parse_time_ms`](crate::parse_time_ms)
    /// reads: ms since the epoch, RFC 3339, a date and time read as UTC, a date), or
    /// `BRANCH@{#N}` (its head N moves ago, per the [reflog](Repo::reflog); a deleted
    /// branch's too). `HEAD@{…}` and `@{…}` name the current branch.
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?))?;
    /// let first = tx.commit("first")?;
    /// repo.create_tag("v1", None)?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("b")?))?;
    /// let second = tx.commit("second")?;
    /// assert_eq!(repo.resolve("HEAD")?, second);
    /// assert_eq!(repo.resolve("HEAD~1")?, first);
    /// assert_eq!(repo.resolve("v1")?, first);
    /// assert_eq!(repo.resolve("main@{#1}")?, first);
    /// assert_eq!(repo.resolve(&first.to_hex()[..8])?, first);
    /// assert!(repo.resolve("main@{1970-01-01}").is_err()); // no head that early
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolve(&self, rev: &str) -> Result<CommitId> {
        crate::rev::resolve(self, rev)
    }

    /// A commit object.
    pub fn commit(&self, id: &CommitId) -> Result<Commit> {
        Ok((*self.commit_shared(id)?).clone())
    }

    /// [`Repo::commit`], shared: the handle keeps the last commits it read.
    pub(crate) fn commit_shared(&self, id: &CommitId) -> Result<Arc<Commit>> {
        Ok(self.inner.commits.get(self.objects(), id)?)
    }

    /// The node `id` at the current head (`None`: absent, or no commits yet).
    pub fn node(&self, id: &NodeId) -> Result<Option<Node>> {
        match self.head()? {
            Some(h) => self.node_at(&h, id),
            None => Ok(None),
        }
    }

    /// The node `id` at commit `at`.
    pub fn node_at(&self, at: &CommitId, id: &NodeId) -> Result<Option<Node>> {
        let c = self.commit(at)?;
        self.node_in_root(c.node_root, id)
    }

    pub(crate) fn node_in_root(&self, root: Option<Hash>, id: &NodeId) -> Result<Option<Node>> {
        match NodeTree::new(root).get(self.objects(), id)? {
            Some(h) => Ok(Some(self.objects().node(&h)?)),
            None => Ok(None),
        }
    }

    /// The edge `key` at commit `at`.
    pub fn edge_at(&self, at: &CommitId, key: &EdgeKey) -> Result<Option<Edge>> {
        let c = self.commit(at)?;
        match EdgeTree::of(&c).get(self.objects(), key)? {
            Some(h) => Ok(Some(self.objects().edge(&h)?)),
            None => Ok(None),
        }
    }

    /// All nodes at commit `at`, in id order; only those carrying `label` if given. Holds
    /// them all in memory: [`Repo::iter_nodes_at`] walks a commit of any size.
    pub fn nodes_at(&self, at: &CommitId, label: Option<&str>) -> Result<Vec<Node>> {
        self.iter_nodes_at(at)?
            .filter(|n| n.as_ref().map_or(true, |n| label.is_none_or(|l| n.labels.contains(l))))
            .collect()
    }

    /// The nodes of commit `at` in id order, read one at a time: memory holds one node and
    /// one path of the tree, so a commit of any size can be walked. An error (a missing or
    /// damaged object) is the last item.
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// for i in 0..100 {
    ///     tx.put_node(Node::new(NodeId::new(format!("n{i:03}"))?))?;
    /// }
    /// let c = tx.commit("hundred")?;
    /// let first_three: Vec<String> = repo
    ///     .iter_nodes_at(&c)?
    ///     .take(3)
    ///     .map(|n| n.map(|n| n.id.to_string()))
    ///     .collect::<cairn::Result<_>>()?;
    /// assert_eq!(first_three, ["n000", "n001", "n002"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter_nodes_at(&self, at: &CommitId) -> Result<impl Iterator<Item = Result<Node>> + '_> {
        let c = self.commit(at)?;
        Ok(NodeTree::of(&c)
            .iter(self.objects())
            .map(move |e| Ok(self.objects().node(&e?.1)?)))
    }

    /// The edges of commit `at` in (source, kind, target) order, read one at a time (see
    /// [`Repo::iter_nodes_at`]).
    pub fn iter_edges_at(&self, at: &CommitId) -> Result<impl Iterator<Item = Result<Edge>> + '_> {
        let c = self.commit(at)?;
        Ok(EdgeTree::of(&c)
            .iter(self.objects())
            .map(move |e| Ok(self.objects().edge(&e?.1)?)))
    }

    /// All edges at commit `at`, in (source, kind, target) key order.
    pub fn edges_at(&self, at: &CommitId) -> Result<Vec<Edge>> {
        self.iter_edges_at(at)?.collect()
    }

    /// Edges leaving `id` at commit `at`.
    pub fn edges_from(&self, at: &CommitId, id: &NodeId) -> Result<Vec<Edge>> {
        let c = self.commit(at)?;
        self.edge_objects(EdgeTree::of(&c).edges_from(self.objects(), id)?)
    }

    /// Edges arriving at `id` at commit `at`.
    pub fn edges_to(&self, at: &CommitId, id: &NodeId) -> Result<Vec<Edge>> {
        let c = self.commit(at)?;
        self.edge_objects(ReverseEdgeTree::of(&c).edges_to(self.objects(), id)?)
    }

    fn edge_objects(&self, found: Vec<(EdgeKey, Hash)>) -> Result<Vec<Edge>> {
        found.iter().map(|(_, h)| Ok(self.objects().edge(h)?)).collect()
    }

    /// Commits reachable from `rev` (default: the current head), newest first (by
    /// timestamp, then id), at most `limit` of them. [`Repo::iter_log`] walks a history of
    /// any length without holding it.
    pub fn log(&self, rev: Option<&str>, limit: Option<usize>) -> Result<Vec<(CommitId, Commit)>> {
        self.iter_log(rev)?.take(limit.unwrap_or(usize::MAX)).collect()
    }

    /// The commits of [`Repo::log`] one at a time, read as the walk reaches them: memory
    /// holds the ids seen so far, never the commits already returned. An error (a missing
    /// or damaged commit) is the last item.
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    /// let repo = Repo::in_memory()?;
    /// for i in 0..5 {
    ///     let mut tx = repo.transaction()?;
    ///     tx.put_node(Node::new(NodeId::new(format!("n{i}"))?))?;
    ///     tx.commit(&format!("commit {i}"))?;
    /// }
    /// let newest: Vec<String> = repo
    ///     .iter_log(None)?
    ///     .take(2)
    ///     .map(|c| c.map(|(_, commit)| commit.message))
    ///     .collect::<cairn::Result<_>>()?;
    /// assert_eq!(newest, ["commit 4", "commit 3"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter_log(&self, rev: Option<&str>) -> Result<impl Iterator<Item = Result<(CommitId, Commit)>> + '_> {
        let head = match rev {
            Some(r) => Some(self.resolve(r)?),
            None => self.head()?,
        };
        let heads: Vec<CommitId> = head.into_iter().collect();
        Ok(history::walk(self.objects(), &heads)?.map(|r| r.map_err(Error::from)))
    }

    /// What changed from commit `a` to commit `b`: nodes and edges added, removed and
    /// changed. Subtrees the two commits share are skipped without being read.
    pub fn diff(&self, a: &CommitId, b: &CommitId) -> Result<Diff> {
        let (ca, cb) = (self.commit(a)?, self.commit(b)?);
        let nodes = NodeTree::of(&ca)
            .diff(self.objects(), NodeTree::of(&cb))?
            .into_iter()
            .map(|c| NodeChange::new(c.key, c.before, c.after))
            .collect();
        let edges = EdgeTree::of(&ca)
            .diff(self.objects(), EdgeTree::of(&cb))?
            .into_iter()
            .map(|c| EdgeChange::new(c.key, c.before, c.after))
            .collect();
        Ok(Diff {
            from: *a,
            to: *b,
            nodes,
            edges,
        })
    }

    /// Counts of one commit.
    pub fn stats(&self, at: &CommitId) -> Result<Stats> {
        let c = self.commit(at)?;
        Ok(Stats {
            commit: *at,
            node_root: c.node_root,
            edge_root: c.edge_root,
            nodes: c.node_count,
            edges: c.edge_count,
            generation: c.generation,
        })
    }

    /// The repository's dimension for dense model `model`, if any vector of it was ever
    /// committed.
    pub fn dense_dim(&self, model: &str) -> Result<Option<usize>> {
        Ok(self
            .refs()
            .meta(&crate::dense_dims::dense_dim_key(model))?
            .and_then(|v| <[u8; 4]>::try_from(v.as_slice()).ok())
            .map(|b| u32::from_le_bytes(b) as usize))
    }
}

/// True if reading `HEAD` failed because of what it holds (damaged bytes, a malformed
/// value) rather than because the store could not be read.
fn head_damage(e: &cairn_graph::GraphError) -> bool {
    use cairn_graph::GraphError;
    matches!(
        e,
        GraphError::BadRef { .. }
            | GraphError::BadBranchName { .. }
            | GraphError::Store(cairn_store::StoreError::Corrupt { .. })
    )
}
