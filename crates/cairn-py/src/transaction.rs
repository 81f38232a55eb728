//! `Transaction`: a set of changes to one branch, made from Python and committed at once.
//!
//! A [`cairn::Transaction`] borrows its [`cairn::Repo`]; a Python object cannot hold a
//! borrow, so the transaction is kept in a [`self_cell`] beside the repository handle it
//! borrows (a cheap clone of the caller's). Every change is validated as it is made,
//! exactly as in Rust; a refused change raises and leaves the transaction as it was.

use std::sync::Mutex;

use cairn::{EdgeKey, Repo};
use pyo3::prelude::*;

use crate::convert;
use crate::errors::{InvalidInput, OrPyErr};

type Pending<'a> = Option<cairn::Transaction<'a>>;

self_cell::self_cell!(
    /// A repository handle and a transaction borrowing it.
    struct TxCell {
        owner: Repo,
        #[covariant]
        dependent: Pending,
    }
);

/// A set of changes to one branch. Made by `Repo.transaction`; used by the Python
/// `cairn.Transaction` wrapper (a context manager). `commit` writes every change as one
/// commit; `rollback` (or dropping the object) discards them.
#[pyclass(frozen, module = "cairn._native", name = "Transaction")]
pub struct PyTransaction {
    /// `None` once committed or rolled back.
    cell: Mutex<Option<TxCell>>,
}

impl PyTransaction {
    /// Starts a transaction on `branch` (`None`: the current branch) of `repo`.
    pub fn begin(repo: Repo, branch: Option<&str>, author: Option<&str>) -> PyResult<PyTransaction> {
        let cell = TxCell::try_new(repo, |r| {
            let mut tx = match branch {
                Some(b) => r.transaction_on(b)?,
                None => r.transaction()?,
            };
            if let Some(a) = author {
                tx.set_author(a)?;
            }
            Ok::<_, cairn::Error>(Some(tx))
        })
        .py_err()?;
        Ok(PyTransaction {
            cell: Mutex::new(Some(cell)),
        })
    }

    /// Runs `f` on the open transaction. The lock is held only while `f` runs, and `f`
    /// never calls into Python (arguments are converted before).
    fn with_tx<T>(&self, f: impl FnOnce(&mut cairn::Transaction<'_>) -> cairn::Result<T>) -> PyResult<T> {
        let mut guard = self.cell.lock().unwrap_or_else(|e| e.into_inner());
        let cell = guard.as_mut().ok_or_else(finished)?;
        cell.with_dependent_mut(|_, tx| match tx.as_mut() {
            Some(tx) => f(tx).py_err(),
            None => Err(finished()),
        })
    }

    fn take(&self) -> PyResult<TxCell> {
        let mut guard = self.cell.lock().unwrap_or_else(|e| e.into_inner());
        guard.take().ok_or_else(finished)
    }
}

fn finished() -> PyErr {
    InvalidInput::new_err("this transaction was already committed or rolled back")
}

fn edge_key(source: &str, kind: &str, target: &str) -> PyResult<EdgeKey> {
    Ok(EdgeKey {
        source: convert::node_id(source)?,
        kind: kind.to_string(),
        target: convert::node_id(target)?,
    })
}

#[pymethods]
impl PyTransaction {
    /// Adds or replaces a node, given as a dict in the import format's field names.
    fn put_node(&self, node: &Bound<'_, PyAny>) -> PyResult<()> {
        let node = convert::node(node)?;
        self.with_tx(|tx| tx.put_node(node))
    }

    /// Adds or replaces an edge, given as a dict in the import format's field names.
    fn put_edge(&self, edge: &Bound<'_, PyAny>) -> PyResult<()> {
        let edge = convert::edge(edge)?;
        self.with_tx(|tx| tx.put_edge(edge))
    }

    /// Deletes a node and its incident edges.
    fn delete_node(&self, id: &str) -> PyResult<()> {
        let id = convert::node_id(id)?;
        self.with_tx(|tx| tx.delete_node(&id))
    }

    /// Deletes an edge.
    fn delete_edge(&self, source: &str, kind: &str, target: &str) -> PyResult<()> {
        let key = edge_key(source, kind, target)?;
        self.with_tx(|tx| tx.delete_edge(&key))
    }

    /// Ends a node's validity at `valid_until` (ms or a time string).
    fn invalidate(&self, id: &str, valid_until: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = convert::node_id(id)?;
        let t = convert::time_ms(valid_until, "valid_until")?;
        self.with_tx(|tx| tx.invalidate(&id, t))
    }

    /// Ends an edge's validity at `valid_until` (ms or a time string).
    fn invalidate_edge(&self, source: &str, kind: &str, target: &str, valid_until: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = edge_key(source, kind, target)?;
        let t = convert::time_ms(valid_until, "valid_until")?;
        self.with_tx(|tx| tx.invalidate_edge(&key, t))
    }

    /// Changes part of a node: a dict in the import format's `patch` field names.
    fn patch_node(&self, patch: &Bound<'_, PyAny>) -> PyResult<()> {
        let (id, patch) = convert::patch(patch)?;
        self.with_tx(|tx| tx.patch_node(&id, patch))
    }

    /// The node as this transaction sees it, as import-format JSON (`None`: absent).
    fn node_json(&self, id: &str) -> PyResult<Option<String>> {
        let id = convert::node_id(id)?;
        Ok(self.with_tx(|tx| tx.node(&id))?.map(|n| convert::node_json(&n)))
    }

    /// The commit this transaction is based on (hex; `None` on an empty branch).
    fn base(&self) -> PyResult<Option<String>> {
        self.with_tx(|tx| Ok(tx.base().map(|c| c.to_hex())))
    }

    /// Number of pending node and edge changes.
    fn __len__(&self) -> PyResult<usize> {
        self.with_tx(|tx| Ok(tx.len()))
    }

    /// True until committed or rolled back.
    #[getter]
    fn is_open(&self) -> bool {
        self.cell.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Commits every change as one commit and returns its id (hex). With `timestamp_ms`,
    /// the commit carries that time (it may not be earlier than the parent's). Runs
    /// without the GIL. Afterwards the transaction is finished, whatever the outcome.
    #[pyo3(signature = (message, timestamp_ms=None))]
    fn commit(&self, py: Python<'_>, message: &str, timestamp_ms: Option<i64>) -> PyResult<String> {
        let mut cell = self.take()?;
        let message = message.to_string();
        py.allow_threads(move || {
            cell.with_dependent_mut(|_, tx| {
                let tx = tx.take().expect("an open transaction");
                match timestamp_ms {
                    Some(ts) => tx.commit_at(&message, ts),
                    None => tx.commit(&message),
                }
            })
        })
        .py_err()
        .map(|c| c.to_hex())
    }

    /// Discards every change. Harmless on a finished transaction.
    fn rollback(&self) {
        let mut guard = self.cell.lock().unwrap_or_else(|e| e.into_inner());
        guard.take();
    }
}
