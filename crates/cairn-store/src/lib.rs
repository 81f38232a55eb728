//! # cairn-store
//!
//! Where Cairn's bytes live. The [`Store`] trait is the seam under everything: a
//! content-addressed object space (hash → encoded object), a small space of named refs
//! moved by compare-and-swap, and a space of derived data (index snapshots, time indexes)
//! that can always be rebuilt from the objects. Backends: [`SegmentStore`] (the default on
//! disk), [`SledStore`] (the alternative), [`MemoryStore`] (tests), and with the
//! `object-store` feature `ObjectStoreBackend` (S3, GCS, Azure).
//!
//! Nothing above this crate does I/O.

#![warn(missing_docs)]

mod backend;
#[cfg(feature = "object-store")]
mod cloud;
mod error;
mod frame;
mod memory;
mod range;
mod segment;
mod sled_store;

pub use backend::{CasOutcome, DerivedEntry, Store, StoreDamage, StoreStats, MAX_REF_LOG_RECORD};
#[cfg(feature = "object-store")]
pub use cloud::{ObjectStoreBackend, ObjectStoreOptions, RequestCounts};
pub use error::{ServiceError, StoreError};
pub use frame::{frame, unframe};
pub use memory::MemoryStore;
#[cfg(feature = "object-store")]
/// The `object_store` crate the object-store backend is built on (for
/// [`ObjectStoreBackend::with_object_store`]).
pub use object_store;
pub use segment::{FileChange, FileStep, FileStepHook, SegmentStore, REF_LOG_SYNC_INTERVAL};
pub use sled_store::SledStore;

/// Entry points for the fuzz targets (`fuzz/`): the segment store's strict decoders of its
/// own files, which are otherwise reached only by opening a directory. Not part of the API.
#[doc(hidden)]
pub mod fuzzing {
    /// A segment's hint file: `body` with its checksum appended, decoded; what is
    /// accepted must encode back to the same bytes. True if accepted.
    pub fn hint(body: &[u8], segment_len: u64) -> bool {
        crate::segment::fuzz_hint(body, segment_len)
    }

    /// The index snapshot (`index.crx`): `body` as a whole file, its checksums not
    /// checked, decoded, and keys of an accepted snapshot's blocks looked up. True if its
    /// head is accepted.
    pub fn snapshot(body: &[u8]) -> bool {
        crate::segment::fuzz_snapshot(body)
    }
}
