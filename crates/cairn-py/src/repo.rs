//! `Repo`: the native handle on one repository — opening, transactions, reads at any
//! revision, history and branches. Results that carry graph data come back as JSON text
//! in the import format's field names (what `cairn show --json`/`export` write); the
//! Python `cairn.Repo` wrapper turns them into dataclasses.

use std::sync::Mutex;

use cairn::{CommitId, HistoryLine, LogEntry, Repo};
use pyo3::prelude::*;

use crate::convert;
use crate::errors::{CairnError, OrPyErr};
use crate::transaction::PyTransaction;

/// A Cairn repository. Safe to share between threads: every call takes a cheap clone of
/// the handle, and long calls (commits, retrievals, index builds, imports, merges) run
/// without the GIL.
#[pyclass(frozen, module = "cairn._native", name = "Repo")]
pub struct PyRepo {
    /// `None` once closed.
    inner: Mutex<Option<Repo>>,
}

impl PyRepo {
    fn wrap(repo: Repo) -> PyRepo {
        PyRepo {
            inner: Mutex::new(Some(repo)),
        }
    }

    /// A handle on the repository, or `CairnError` once closed.
    pub fn repo(&self) -> PyResult<Repo> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| CairnError::new_err("the repository is closed"))
    }

    /// Revision `at`, or the head (`None` before the first commit).
    fn at_or_head(repo: &Repo, at: Option<&str>) -> PyResult<Option<CommitId>> {
        match at {
            Some(rev) => repo.resolve(rev).map(Some).py_err(),
            None => repo.head().py_err(),
        }
    }
}

#[pymethods]
impl PyRepo {
    /// Creates a repository at `path` (`Conflict` if one is there).
    #[staticmethod]
    fn init(py: Python<'_>, path: std::path::PathBuf) -> PyResult<PyRepo> {
        py.allow_threads(|| Repo::init(&path)).py_err().map(PyRepo::wrap)
    }

    /// Opens the repository at `path` (`NotFound` if there is none).
    #[staticmethod]
    #[pyo3(signature = (path, wait=0.0))]
    fn open(py: Python<'_>, path: std::path::PathBuf, wait: f64) -> PyResult<PyRepo> {
        let timeout = std::time::Duration::try_from_secs_f64(wait.max(0.0)).unwrap_or(std::time::Duration::MAX);
        py.allow_threads(|| Repo::open_waiting(&path, timeout))
            .py_err()
            .map(PyRepo::wrap)
    }

    /// A new repository held in memory.
    #[staticmethod]
    fn in_memory() -> PyResult<PyRepo> {
        Repo::in_memory().py_err().map(PyRepo::wrap)
    }

    /// Releases this handle. The store closes when the last handle (including open
    /// transactions) is gone.
    fn close(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// True until `close`.
    #[getter]
    fn is_open(&self) -> bool {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// The repository's directory (`None` in memory).
    #[getter]
    fn path(&self) -> PyResult<Option<String>> {
        Ok(self.repo()?.path().map(|p| p.display().to_string()))
    }

    /// Starts a transaction on `branch` (default: the current branch).
    #[pyo3(signature = (branch=None, author=None))]
    fn transaction(&self, branch: Option<&str>, author: Option<&str>) -> PyResult<PyTransaction> {
        PyTransaction::begin(self.repo()?, branch, author)
    }

    /// The head commit of the current branch (hex; `None` before the first commit).
    fn head(&self) -> PyResult<Option<String>> {
        Ok(self.repo()?.head().py_err()?.map(|c| c.to_hex()))
    }

    /// Resolves a revision to a commit id (hex).
    fn resolve(&self, rev: &str) -> PyResult<String> {
        Ok(self.repo()?.resolve(rev).py_err()?.to_hex())
    }

    /// The commit `rev` as JSON (the fields of one `log` entry).
    fn commit_json(&self, rev: &str) -> PyResult<String> {
        let repo = self.repo()?;
        let id = repo.resolve(rev).py_err()?;
        let c = repo.commit(&id).py_err()?;
        Ok(serde_json::to_string(&LogEntry::new(id, &c)).expect("a commit serializes"))
    }

    /// Node `id` at revision `at` (default: the head) as import-format JSON, or `None`.
    #[pyo3(signature = (id, at=None))]
    fn node_json(&self, id: &str, at: Option<&str>) -> PyResult<Option<String>> {
        let repo = self.repo()?;
        let id = convert::node_id(id)?;
        let Some(c) = Self::at_or_head(&repo, at)? else {
            return Ok(None);
        };
        Ok(repo.node_at(&c, &id).py_err()?.map(|n| convert::node_json(&n)))
    }

    /// The nodes at revision `at` (default: the head), in id order, only those with
    /// `label` if given: a JSON array.
    #[pyo3(signature = (at=None, label=None))]
    fn nodes_json(&self, py: Python<'_>, at: Option<&str>, label: Option<&str>) -> PyResult<String> {
        let repo = self.repo()?;
        let Some(c) = Self::at_or_head(&repo, at)? else {
            return Ok("[]".into());
        };
        let nodes = py.allow_threads(|| repo.nodes_at(&c, label)).py_err()?;
        Ok(convert::json_array(nodes.iter().map(convert::node_json)))
    }

    /// The edges of node `id` at revision `at` (default: the head): `direction` `out`
    /// (leaving it), `in` (arriving) or `both` (out first; a self-loop once). A JSON array.
    #[pyo3(signature = (id, at=None, direction="both"))]
    fn edges_json(&self, id: &str, at: Option<&str>, direction: &str) -> PyResult<String> {
        let repo = self.repo()?;
        let id = convert::node_id(id)?;
        let (outgoing, incoming) = match direction {
            "out" => (true, false),
            "in" => (false, true),
            "both" => (true, true),
            other => {
                return Err(crate::errors::InvalidInput::new_err(format!(
                    "direction: expected \"out\", \"in\" or \"both\", got {other:?}"
                )))
            }
        };
        let Some(c) = Self::at_or_head(&repo, at)? else {
            return Ok("[]".into());
        };
        let mut edges = Vec::new();
        if outgoing {
            edges.extend(repo.edges_from(&c, &id).py_err()?);
        }
        if incoming {
            for e in repo.edges_to(&c, &id).py_err()? {
                if !(outgoing && e.source == e.target) {
                    edges.push(e);
                }
            }
        }
        Ok(convert::json_array(edges.iter().map(convert::edge_json)))
    }

    /// Commits reachable from `rev` (default: the head), newest first, at most `limit`:
    /// a JSON array of `cairn log --json` entries.
    #[pyo3(signature = (rev=None, limit=None))]
    fn log_json(&self, rev: Option<&str>, limit: Option<usize>) -> PyResult<String> {
        let repo = self.repo()?;
        let commits = repo.log(rev, limit).py_err()?;
        let entries: Vec<LogEntry> = commits.iter().map(|(id, c)| LogEntry::new(*id, c)).collect();
        Ok(serde_json::to_string(&entries).expect("a log serializes"))
    }

    /// What changed from revision `a` to revision `b` (without `b`: from `a`'s first
    /// parent), as `cairn diff --json` prints it: the [`cairn::DiffReport`], each change
    /// with its kind, object hashes and changed fields.
    #[pyo3(signature = (a, b=None))]
    fn diff_json(&self, py: Python<'_>, a: &str, b: Option<&str>) -> PyResult<String> {
        let repo = self.repo()?;
        let report = py
            .allow_threads(|| cairn::DiffReport::for_revisions(&repo, a, b))
            .py_err()?;
        Ok(serde_json::to_string(&report).expect("a diff serializes"))
    }

    /// The history of node `id` among the ancestors of `rev` (default: the current
    /// branch's head), newest first, at most `limit` entries, each with its commit's
    /// message: a JSON array.
    #[pyo3(signature = (id, rev=None, limit=None))]
    fn history_json(&self, py: Python<'_>, id: &str, rev: Option<&str>, limit: Option<usize>) -> PyResult<String> {
        let repo = self.repo()?;
        let id = convert::node_id(id)?;
        let lines = py
            .allow_threads(|| HistoryLine::list(&repo, rev, &id, limit))
            .py_err()?;
        Ok(serde_json::to_string(&lines).expect("a history serializes"))
    }

    /// Counts of revision `rev` (default: the head) as JSON (`cairn stats --json`).
    #[pyo3(signature = (rev=None))]
    fn stats_json(&self, rev: Option<&str>) -> PyResult<String> {
        let repo = self.repo()?;
        let c = repo.resolve(rev.unwrap_or("HEAD")).py_err()?;
        Ok(serde_json::to_string(&repo.stats(&c).py_err()?).expect("stats serialize"))
    }

    /// The current branch.
    fn current_branch(&self) -> PyResult<String> {
        Ok(self.repo()?.current_branch().py_err()?.to_string())
    }

    /// Branches with their heads (hex), in name order.
    fn branches(&self) -> PyResult<Vec<(String, String)>> {
        let b = self.repo()?.branches().py_err()?;
        Ok(b.into_iter().map(|(n, c)| (n, c.to_hex())).collect())
    }

    /// Creates branch `name` at revision `at` (default: the head); returns its head.
    #[pyo3(signature = (name, at=None))]
    fn create_branch(&self, name: &str, at: Option<&str>) -> PyResult<String> {
        Ok(self.repo()?.create_branch(name, at).py_err()?.to_hex())
    }

    /// Makes `name` the current branch.
    fn switch_branch(&self, name: &str) -> PyResult<()> {
        self.repo()?.switch_branch(name).py_err()
    }

    /// Deletes branch `name` (not the current one).
    fn delete_branch(&self, name: &str) -> PyResult<()> {
        self.repo()?.delete_branch(name).py_err()
    }

    /// Tags with their commits (hex), in name order.
    fn tags(&self) -> PyResult<Vec<(String, String)>> {
        let t = self.repo()?.tags().py_err()?;
        Ok(t.into_iter().map(|(n, c)| (n, c.to_hex())).collect())
    }

    /// Creates tag `name` at revision `at` (default: the head); returns its commit.
    #[pyo3(signature = (name, at=None))]
    fn create_tag(&self, name: &str, at: Option<&str>) -> PyResult<String> {
        Ok(self.repo()?.create_tag(name, at).py_err()?.to_hex())
    }

    /// Deletes tag `name`.
    fn delete_tag(&self, name: &str) -> PyResult<()> {
        self.repo()?.delete_tag(name).py_err()
    }

    /// Clones the repository at `url` (a path, or a `cairn serve` URL) into `dir`, without the GIL.
    #[staticmethod]
    fn clone_from(py: Python<'_>, url: &str, dir: std::path::PathBuf) -> PyResult<PyRepo> {
        py.allow_threads(|| Repo::clone_from(url, &dir))
            .py_err()
            .map(PyRepo::wrap)
    }

    /// Remotes as `(name, url)`, in name order.
    fn remotes(&self) -> PyResult<Vec<(String, String)>> {
        let r = self.repo()?.remotes().py_err()?;
        Ok(r.into_iter().map(|r| (r.name, r.url)).collect())
    }

    /// Adds remote `name` at `url` (a repository path, or a `cairn serve` URL `http://HOST:PORT`).
    fn remote_add(&self, name: &str, url: &str) -> PyResult<()> {
        self.repo()?.remote_add(name, url).py_err().map(|_| ())
    }

    /// Removes remote `name` and its tracking branches.
    fn remote_remove(&self, name: &str) -> PyResult<()> {
        self.repo()?.remote_remove(name).py_err()
    }

    /// Fetches remote `name` without the GIL; the report as JSON.
    fn fetch_json(&self, py: Python<'_>, name: &str) -> PyResult<String> {
        let repo = self.repo()?;
        let r = py.allow_threads(|| repo.fetch(name)).py_err()?;
        let updates: Vec<serde_json::Value> = r
            .updates
            .iter()
            .map(|u| {
                serde_json::json!({
                    "branch": u.branch,
                    "old": u.old.map(|c| c.to_hex()),
                    "new": u.new.map(|c| c.to_hex()),
                })
            })
            .collect();
        Ok(serde_json::json!({
            "remote": r.remote,
            "updates": updates,
            "objects": r.transfer.objects,
            "bytes": r.transfer.bytes,
            "commits": r.transfer.commits,
        })
        .to_string())
    }

    /// Pushes `branch` (default: the current one) to remote `name` without the GIL; the
    /// report as JSON.
    #[pyo3(signature = (name, branch=None, force=false))]
    fn push_json(&self, py: Python<'_>, name: &str, branch: Option<&str>, force: bool) -> PyResult<String> {
        let repo = self.repo()?;
        let r = py.allow_threads(|| repo.push(name, branch, force)).py_err()?;
        Ok(serde_json::json!({
            "remote": r.remote,
            "branch": r.branch,
            "old": r.old.map(|c| c.to_hex()),
            "new": r.new.to_hex(),
            "objects": r.transfer.objects,
            "bytes": r.transfer.bytes,
            "commits": r.transfer.commits,
        })
        .to_string())
    }

    /// Fetches remote `name` and merges its `branch` into the current branch, committing
    /// a fast-forward or a clean merge (`message`: default "merge NAME/BRANCH"); a merge
    /// with conflicts commits nothing and raises `Conflict`. Returns the new head.
    #[pyo3(signature = (name, branch=None, message=None))]
    fn pull(&self, py: Python<'_>, name: &str, branch: Option<&str>, message: Option<&str>) -> PyResult<String> {
        let repo = self.repo()?;
        py.allow_threads(|| {
            let (_, merge) = repo.pull(name, branch)?;
            if merge.unresolved() > 0 {
                return Err(cairn::Error::MergeConflicts(merge.unresolved()));
            }
            let theirs = format!("{name}/{}", branch.unwrap_or(merge.branch()));
            merge.commit(message.unwrap_or(&format!("merge {theirs}")))
        })
        .py_err()
        .map(|c| c.to_hex())
    }

    /// Builds and stores the index chunks of revision `rev` (and with `graphs`, the HNSW
    /// unit graphs) ahead of queries, without the GIL. Returns the report as JSON.
    #[pyo3(signature = (rev="HEAD", graphs=false))]
    fn build_indexes_json(&self, py: Python<'_>, rev: &str, graphs: bool) -> PyResult<String> {
        let repo = self.repo()?;
        let report = py.allow_threads(|| repo.build_indexes_with(rev, graphs)).py_err()?;
        Ok(serde_json::to_string(&report).expect("a report serializes"))
    }

    /// Sets the memory budget of the repository's index data, in bytes (the library's
    /// `Repo::set_memory_budget`).
    fn set_memory_budget(&self, bytes: usize) -> PyResult<()> {
        self.repo()?.set_memory_budget(bytes);
        Ok(())
    }

    /// The index cache's state and the memory budget, as JSON.
    fn index_stats_json(&self) -> PyResult<String> {
        let stats = self.repo()?.index_stats();
        Ok(serde_json::to_string(&stats).expect("stats serialize"))
    }

    /// Imports JSON Lines text (the import format) as one commit on the current branch,
    /// without the GIL. Returns the summary as JSON.
    fn import_jsonl(&self, py: Python<'_>, text: &str, message: &str) -> PyResult<String> {
        let repo = self.repo()?;
        let summary = py
            .allow_threads(|| repo.import_jsonl(text.as_bytes(), message, &mut |_| {}))
            .py_err()?;
        Ok(serde_json::to_string(&summary).expect("a summary serializes"))
    }

    /// Revision `rev` as JSON Lines in the import format (what `cairn export` writes).
    #[pyo3(signature = (rev="HEAD"))]
    fn export_jsonl(&self, py: Python<'_>, rev: &str) -> PyResult<String> {
        let repo = self.repo()?;
        let mut out = Vec::new();
        py.allow_threads(|| repo.export_jsonl(rev, &mut out)).py_err()?;
        String::from_utf8(out).map_err(|e| CairnError::new_err(e.to_string()))
    }

    fn __repr__(&self) -> String {
        match self.repo() {
            Ok(r) => format!("{r:?}"),
            Err(_) => "Repo(closed)".into(),
        }
    }
}
