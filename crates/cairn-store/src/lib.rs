//! # cairn-store
//!
//! Where Cairn's bytes live. The [`Store`] trait is the seam under everything: a
//! content-addressed object space (hash → encoded object), a small space of named refs
//! moved by compare-and-swap, and a space of derived data (index snapshots, time indexes)
//! that can always be rebuilt from the objects. Two backends: [`MemoryStore`] (tests) and
//! [`SledStore`] (the embedded default on disk).
//!
//! Nothing above this crate does I/O.

#![warn(missing_docs)]

mod backend;
mod error;
mod frame;
mod memory;
mod range;
mod segment;
mod sled_store;

pub use backend::{CasOutcome, DerivedEntry, Store, StoreDamage, StoreStats, MAX_REF_LOG_RECORD};
pub use error::StoreError;
pub use frame::{frame, unframe};
pub use memory::MemoryStore;
pub use segment::{FileChange, FileStep, FileStepHook, SegmentStore, REF_LOG_SYNC_INTERVAL};
pub use sled_store::SledStore;
