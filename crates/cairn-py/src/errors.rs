//! The Python exception classes and the one mapping from Cairn's typed errors to them.
//!
//! One class per error family, all under [`CairnError`], chosen by [`cairn::Error::kind`]
//! (the classification the server and MCP map from too):
//!
//! | class | raised for |
//! |---|---|
//! | `NotFound` | no repository at a path, an unknown revision, branch or tag, a node or edge that does not exist |
//! | `InvalidInput` | input refused by validation (bad id, non-finite float, wrong dimension, unknown field, bad time...); nothing was changed |
//! | `Conflict` | the branch moved under a transaction, unresolved merge conflicts, a repository, branch or tag that already exists |
//! | `Corrupt` | a stored object or index that is missing or damaged |
//! | `StoreError` | the store failed: I/O, a full disk, the repository locked by another process |
//! | `RetrieveError` | a retrieval that could not run: malformed spec, setting out of range, a lane an index refused, an unknown revision, an embedder the spec names failing |
//! | `CairnError` | anything else, e.g. an embedder failing while a commit embeds on write |

use cairn::retrieve::RetrieveError as RustRetrieveError;
use cairn::{Error, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    cairn,
    CairnError,
    PyException,
    "Base class of every error Cairn raises; its message names the node, edge, commit, branch or setting it is about."
);
create_exception!(
    cairn,
    NotFound,
    CairnError,
    "No repository at the path, or an unknown revision, branch, tag, node or edge."
);
create_exception!(
    cairn,
    InvalidInput,
    CairnError,
    "Input refused by validation (id, value, dimension, field, time...); nothing was changed."
);
create_exception!(
    cairn,
    Conflict,
    CairnError,
    "The branch moved under a transaction (retry on the new head), a merge has unresolved conflicts, or a repository, branch or tag already exists."
);
create_exception!(
    cairn,
    Corrupt,
    CairnError,
    "A stored object, ref or index is missing or damaged (run `cairn fsck`)."
);
create_exception!(
    cairn,
    StoreError,
    CairnError,
    "The store failed: an I/O error, a full disk, or the repository is in use by another process."
);
create_exception!(
    cairn,
    RetrieveError,
    CairnError,
    "A retrieval could not run: a malformed spec, a setting out of range, a lane an index refused, a revision that does not resolve."
);

/// Registers the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CairnError", py.get_type::<CairnError>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("InvalidInput", py.get_type::<InvalidInput>())?;
    m.add("Conflict", py.get_type::<Conflict>())?;
    m.add("Corrupt", py.get_type::<Corrupt>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("RetrieveError", py.get_type::<RetrieveError>())?;
    Ok(())
}

/// The Python exception for a Cairn error (the message is the error's `Display`), by
/// [`cairn::Error::kind`] — the one classification the server and MCP map from too. A
/// retrieval's own refusals are `RetrieveError`; damage met on the way is `Corrupt`.
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match (&e, e.kind()) {
        (Error::Retrieve(_), ErrorKind::InvalidInput | ErrorKind::NotFound | ErrorKind::Embedder) => {
            RetrieveError::new_err(msg)
        }
        (_, kind) => by_kind(kind, msg),
    }
}

/// The Python exception for a retrieval error.
pub fn retrieve_to_py(e: RustRetrieveError) -> PyErr {
    match ErrorKind::of_retrieve(&e) {
        ErrorKind::InvalidInput | ErrorKind::NotFound | ErrorKind::Embedder => RetrieveError::new_err(e.to_string()),
        kind => by_kind(kind, e.to_string()),
    }
}

fn by_kind(kind: ErrorKind, msg: String) -> PyErr {
    match kind {
        ErrorKind::InvalidInput => InvalidInput::new_err(msg),
        ErrorKind::NotFound => NotFound::new_err(msg),
        ErrorKind::AlreadyExists | ErrorKind::Conflict => Conflict::new_err(msg),
        ErrorKind::Corrupt => Corrupt::new_err(msg),
        ErrorKind::Locked | ErrorKind::NoSpace | ErrorKind::Storage => StoreError::new_err(msg),
        _ => CairnError::new_err(msg),
    }
}

/// Shorthand: a Cairn result as a Python result.
pub trait OrPyErr<T> {
    /// Maps the error with [`to_py`].
    fn py_err(self) -> PyResult<T>;
}

impl<T> OrPyErr<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

impl<T> OrPyErr<T> for Result<T, RustRetrieveError> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(retrieve_to_py)
    }
}
