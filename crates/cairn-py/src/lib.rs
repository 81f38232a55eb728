//! # cairn-py
//!
//! The native half of the `cairn` Python package: PyO3 bindings over the [`cairn`]
//! library, built with maturin into `cairn._native`. The Python half
//! (`python/cairn/`) wraps it in typed classes (dataclasses for nodes, edges, results,
//! commits; context-manager transactions; a retriever adapter).
//!
//! The native layer is deliberately thin and exact:
//!
//! - nodes, edges and patches go in as dicts and are read with the import format's own
//!   parser ([`convert`]), dense vectors straight from `float32` buffers;
//! - graph data comes out as JSON text in the import format's field names, retrieval
//!   results as the very JSON the CLI prints ([`retrieve`]);
//! - every Cairn error becomes one exception class per family ([`errors`]);
//! - commits, retrievals, index builds, imports and merges run without the GIL.

#![warn(missing_docs)]

use pyo3::prelude::*;

/// mimalloc for the module's Rust allocations (Python objects keep Python's allocator):
/// glibc's per-thread arenas kept ~40 % more memory than the index needs after a
/// parallel build (README, "Memory").
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod convert;
pub mod errors;
mod merge;
pub mod repo;
pub mod retrieve;
pub mod transaction;

/// Parses a time (ms since the epoch, RFC 3339, a date and time read as UTC, or a date)
/// to ms since the epoch; `InvalidInput` if it is none of those.
#[pyfunction]
fn parse_time(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    convert::time_ms(value, "time")
}

/// The native module `cairn._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<repo::PyRepo>()?;
    m.add_class::<transaction::PyTransaction>()?;
    m.add_function(wrap_pyfunction!(parse_time, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
