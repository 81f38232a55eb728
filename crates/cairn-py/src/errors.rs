//! The Python exception classes and the one mapping from Cairn's typed errors to them.
//!
//! One class per error family, all under [`CairnError`]:
//!
//! | class | raised for |
//! |---|---|
//! | `NotFound` | no repository at a path, an unknown revision, branch or tag, a node or edge that does not exist |
//! | `InvalidInput` | input refused by validation (bad id, non-finite float, wrong dimension, unknown field, bad time...); nothing was changed |
//! | `Conflict` | the branch moved under a transaction, unresolved merge conflicts, a repository, branch or tag that already exists |
//! | `Corrupt` | a stored object or index that is missing or damaged |
//! | `StoreError` | the store failed: I/O, a full disk, the repository locked by another process |
//! | `RetrieveError` | a retrieval that could not run: malformed spec, setting out of range, a lane an index refused |

use cairn::retrieve::RetrieveError as RustRetrieveError;
use cairn::Error;
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

/// The Python exception for a Cairn error (the message is the error's `Display`).
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Validation(_)
        | Error::InvalidArgument(_)
        | Error::InvalidId(_)
        | Error::Import { .. }
        | Error::AmbiguousRevision { .. }
        | Error::TimestampBeforeParent { .. }
        | Error::DeleteCurrentBranch(_) => InvalidInput::new_err(msg),
        Error::NotARepo { .. }
        | Error::UnknownRevision { .. }
        | Error::UnknownBranch(_)
        | Error::UnknownTag(_)
        | Error::NodeNotFound { .. }
        | Error::EdgeNotFound { .. } => NotFound::new_err(msg),
        Error::AlreadyExists { .. }
        | Error::BranchExists(_)
        | Error::TagExists(_)
        | Error::Conflict { .. }
        | Error::MergeConflicts(_) => Conflict::new_err(msg),
        Error::Graph(g) => graph(g, msg),
        Error::Store(s) => store(&s, msg),
        Error::Index(i) => index(&i, msg),
        Error::Retrieve(_) => RetrieveError::new_err(msg),
        Error::Write { .. } => StoreError::new_err(msg),
        _ => CairnError::new_err(msg),
    }
}

/// The Python exception for a retrieval error.
pub fn retrieve_to_py(e: RustRetrieveError) -> PyErr {
    RetrieveError::new_err(e.to_string())
}

fn graph(g: cairn_graph::GraphError, msg: String) -> PyErr {
    use cairn_graph::GraphError as G;
    match g {
        G::NotFound { .. } | G::Corrupt { .. } | G::BadRef { .. } => Corrupt::new_err(msg),
        G::TooLarge { .. } | G::BadBranchName { .. } => InvalidInput::new_err(msg),
        G::Store(s) => store(&s, msg),
        _ => CairnError::new_err(msg),
    }
}

fn store(s: &cairn_store::StoreError, msg: String) -> PyErr {
    match s {
        cairn_store::StoreError::Corrupt { .. } => Corrupt::new_err(msg),
        _ => StoreError::new_err(msg),
    }
}

fn index(i: &cairn_index::error::IndexError, msg: String) -> PyErr {
    use cairn_index::error::IndexError as I;
    match i {
        I::BadStoredIndex(_) | I::Inconsistent(_) => Corrupt::new_err(msg),
        I::DimensionMismatch { .. } | I::NonFiniteQuery { .. } | I::UnknownModel { .. } | I::BadSparseQuery { .. } => {
            InvalidInput::new_err(msg)
        }
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
