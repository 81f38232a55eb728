//! Per-commit indexes: built on first use, derived from a parent's when possible, cached
//! in memory (bounded) and persisted as derived data.

/// The in-memory index cache of a repository.
#[derive(Default)]
pub(crate) struct IndexCache {}
