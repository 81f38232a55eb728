//! Remotes, git's way: [`Repo::remote_add`], [`Repo::fetch`], [`Repo::push`],
//! [`Repo::pull`] and [`Repo::clone_from`].
//!
//! A remote is a name and a URL, kept in the ref `meta/remotes/<name>` (storage-format
//! §5). What a remote's branches held when last fetched or pushed is kept in the
//! remote-tracking refs `refs/remotes/<name>/<branch>`; they are revisions (`origin/main`)
//! and `gc` keeps what they reach.
//!
//! Only missing objects move ([`transfer`]): the walk from the heads stops at the first
//! object the destination already holds, every object is verified against its blake3 name
//! as it is read, and objects are written (children first) and made durable before any
//! ref names them, so an interrupted transfer leaves the destination's refs as they were.
//!
//! URLs: a path to a repository on this machine (`/data/memory`, `./memory`, or
//! `file:///data/memory`), a `cairn serve` server (`http://HOST:PORT`, with
//! `/t/TENANT` for a tenant of a `--root` server; the bearer token is `$CAIRN_TOKEN`),
//! which speaks the sync protocol of [`wire`] (storage-format §5.3), or a repository in an
//! object store (`s3://bucket/prefix`, `gs://…`, `az://…`; see [`Repo::open`]), opened
//! here like a path.

mod http;
mod peer;
mod sync;
pub(crate) mod transfer;
mod wire;

use std::path::{Path, PathBuf};

use cairn_graph::refs::BranchName;

use crate::error::{Error, Result};
use crate::repo::Repo;

pub use sync::{FetchReport, PushReport, RefUpdate};
pub use transfer::TransferStats;
pub use wire::{
    SyncBranch, SyncRefs, SyncServer, MAX_ANSWER_BYTES as SYNC_MAX_ANSWER_BYTES, MAX_BATCH as SYNC_MAX_BATCH,
};

use peer::Peer;

/// The repository settings a clone copies (storage-format §5.1): the embedders, so that a
/// text query embeds the same way in the clone.
const CLONED_META: [&str; 1] = ["embedders"];

/// How long a fetch or push waits for a path remote another process has open.
pub const REMOTE_OPEN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Meta key prefix of the remotes' URLs.
const REMOTES_META: &str = "remotes/";

/// A configured remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// Its name (`origin`).
    pub name: String,
    /// Where it is, as given to [`Repo::remote_add`] (a path made absolute).
    pub url: String,
}

/// Where a remote URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RemoteUrl {
    /// A repository directory on this machine.
    Path(PathBuf),
    /// A `cairn serve` server (no trailing slash).
    Http(String),
    /// A repository in an object store, by URL.
    Store(String),
}

impl RemoteUrl {
    /// Parses a remote URL (module docs).
    pub(crate) fn parse(url: &str) -> Result<RemoteUrl> {
        if let Some(path) = url.strip_prefix("file://") {
            return Ok(RemoteUrl::Path(PathBuf::from(path)));
        }
        if let Some(rest) = url.strip_prefix("http://") {
            if rest.is_empty() || rest.starts_with('/') {
                return Err(Error::InvalidArgument(format!("remote URL {url:?}: no host")));
            }
            return Ok(RemoteUrl::Http(url.trim_end_matches('/').to_string()));
        }
        if crate::repo::is_store_url(url) {
            let bucket = url
                .split_once("://")
                .map_or("", |(_, rest)| rest.split('/').next().unwrap_or(""));
            if bucket.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "remote URL {url:?}: no bucket (s3://bucket/prefix, gs://bucket/prefix, az://container/prefix)"
                )));
            }
            return Ok(RemoteUrl::Store(url.to_string()));
        }
        if let Some((scheme, _)) = url.split_once("://") {
            return Err(Error::InvalidArgument(format!(
                "remote URL {url:?}: `{scheme}://` remotes are not supported yet; give the path of a repository on this machine, a `cairn serve` URL (http://) or an object-store URL (s3://, gs://, az://)"
            )));
        }
        if url.is_empty() {
            return Err(Error::InvalidArgument("a remote URL cannot be empty".into()));
        }
        Ok(RemoteUrl::Path(PathBuf::from(url)))
    }

    /// Opens the repository it names, waiting up to [`REMOTE_OPEN_WAIT`] while another
    /// process (or handle) has it open: pushes from several writers take turns.
    pub(crate) fn open(&self) -> Result<Peer> {
        match self {
            RemoteUrl::Path(p) => Ok(Peer::Local(Repo::open_waiting(p, REMOTE_OPEN_WAIT)?)),
            RemoteUrl::Http(url) => Ok(Peer::Http(http::HttpRemote::new(url))),
            // No lock to wait for: any number of processes may have it open.
            RemoteUrl::Store(url) => Ok(Peer::Local(Repo::open(url)?)),
        }
    }

    /// The URL to store for it: a path made absolute, a server's or an object store's
    /// URL as given.
    pub(crate) fn to_stored(&self) -> Result<String> {
        match self {
            RemoteUrl::Path(p) => Ok(absolute(p)?.display().to_string()),
            RemoteUrl::Http(url) | RemoteUrl::Store(url) => Ok(url.clone()),
        }
    }
}

/// Checks a remote's name: a branch name without `/` (it prefixes tracking refs).
fn check_remote_name(name: &str) -> Result<()> {
    BranchName::new(name)?;
    if name.contains('/') {
        return Err(Error::InvalidArgument(format!(
            "remote name `{name}`: a remote name has no `/`"
        )));
    }
    Ok(())
}

/// Remote `name` with the stored URL `url` (a damaged ref if it is not UTF-8).
fn remote_of(name: &str, url: Vec<u8>) -> Result<Remote> {
    let url = String::from_utf8(url).map_err(|_| {
        Error::Graph(cairn_graph::GraphError::BadRef {
            name: format!("meta/{REMOTES_META}{name}"),
            detail: "a remote URL that is not UTF-8".into(),
        })
    })?;
    Ok(Remote {
        name: name.to_string(),
        url,
    })
}

/// `path` made absolute (without resolving links), for storing as a remote's URL.
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| Error::InvalidArgument(format!("remote path {}: {e}", path.display())))
}

impl Repo {
    /// Adds a remote named `name` at `url` (module docs). A path is stored absolute and
    /// must hold a repository. Fails with [`Error::RemoteExists`] if the name is taken.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let upstream = cairn::Repo::init(dir.path().join("upstream"))?;
    /// drop(upstream);
    /// let repo = cairn::Repo::init(dir.path().join("mine"))?;
    /// repo.remote_add("origin", dir.path().join("upstream").to_str().unwrap())?;
    /// assert_eq!(repo.remotes()?[0].name, "origin");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remote_add(&self, name: &str, url: &str) -> Result<Remote> {
        check_remote_name(name)?;
        let parsed = RemoteUrl::parse(url)?;
        let url = parsed.to_stored()?;
        let mine = match (&parsed, self.path()) {
            (RemoteUrl::Path(_), Some(mine)) if crate::repo::store_url(mine).is_none() => {
                absolute(mine).ok().map(|m| m.display().to_string())
            }
            (RemoteUrl::Store(_), Some(mine)) => crate::repo::store_url(mine).map(str::to_string),
            _ => None,
        };
        if mine.is_some_and(|m| m.trim_end_matches('/') == url.trim_end_matches('/')) {
            return Err(Error::InvalidArgument(format!(
                "remote `{name}`: {url} is this repository"
            )));
        }
        match self
            .refs()
            .register_meta(&format!("{REMOTES_META}{name}"), url.as_bytes())?
        {
            None => Ok(Remote {
                name: name.to_string(),
                url,
            }),
            Some(_) => Err(Error::RemoteExists(name.to_string())),
        }
    }

    /// Removes remote `name` and its remote-tracking refs (the commits they reached stay
    /// until `gc`).
    pub fn remote_remove(&self, name: &str) -> Result<()> {
        let remote = self.remote(name)?;
        let refs = self.refs();
        for (branch, _) in refs.remote_branches(&remote.name)? {
            refs.set_remote_branch(&remote.name, &branch, None)?;
        }
        refs.set_meta(&format!("{REMOTES_META}{name}"), None)?;
        Ok(())
    }

    /// The configured remotes, in name order.
    pub fn remotes(&self) -> Result<Vec<Remote>> {
        self.refs()
            .meta_list(REMOTES_META)?
            .into_iter()
            .map(|(key, url)| remote_of(key.trim_start_matches(REMOTES_META), url))
            .collect()
    }

    /// Remote `name` (fails with [`Error::UnknownRemote`]).
    pub fn remote(&self, name: &str) -> Result<Remote> {
        check_remote_name(name)?;
        match self.refs().meta(&format!("{REMOTES_META}{name}"))? {
            Some(url) => remote_of(name, url),
            None => Err(Error::UnknownRemote(name.to_string())),
        }
    }

    /// Remote `name`'s tracked branches (`refs/remotes/<name>/*`) with the commits they
    /// held when last fetched or pushed.
    pub fn remote_branches(&self, name: &str) -> Result<Vec<(String, crate::CommitId)>> {
        let remote = self.remote(name)?;
        Ok(self
            .refs()
            .remote_branches(&remote.name)?
            .into_iter()
            .map(|(b, c)| (b.to_string(), c))
            .collect())
    }
}
