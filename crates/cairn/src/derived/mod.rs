//! Derived data: the chunks, unit graphs and manifests a commit's indexes are made of —
//! built from the objects on first use, cached in memory, stored under their own keys,
//! shared by every commit whose content they cover (`storage-format.md` §7).
//!
//! * [`keys`] — the registry of derived key spaces and every key derivation;
//! * [`spans`] — chunk spans read off a tree's upper levels;
//! * `list` — a tree's resolved chunk list, taken over subtree by subtree from the previous
//!   view's;
//! * [`cache`] — the byte-bounded part cache, and the view and chunk-list caches;
//! * `build` — resolving a tree's chunks (loading, or building and storing, each part),
//!   assembling a commit's view for the parts a query needs;
//! * `graph_base` — which commit's unit graphs an approximate search walks;
//! * `drop` — dropping every derived value (`Repo::drop_derived`, `cairn index drop`);
//! * `source` — the retrieval pipeline's [`RetrievalSource`](cairn_retrieve::RetrievalSource)
//!   over a repository;
//! * `time_index` — each branch's transaction-time index (which commit was its head at
//!   time T).
//!
//! Derived data is a cache of the objects: a part that is missing, damaged or unreadable
//! is rebuilt from the objects (with a note, which a retrieval reports as a warning), and
//! a part that cannot be stored is only kept in memory. Nothing here can make the data
//! unreadable.

mod build;
pub(crate) mod cache;
pub(crate) mod check;
mod drop;
mod graph_base;
pub(crate) mod keys;
mod list;
mod live;
mod rows;
mod source;
pub(crate) mod spans;
mod time_index;

pub use build::{DenseReport, IndexReport, IndexStats};
pub use cache::DEFAULT_MEMORY_BUDGET;

use cairn_core::Hash;
use cairn_index::IndexParams;

/// A repository's derived-data state: parameters, cache, and what it has stored.
pub(crate) struct Derived {
    pub(crate) params: IndexParams,
    pub(crate) fingerprint: Hash,
    pub(crate) cache: cache::DerivedCache,
    /// Derived values and bytes this handle has written (for reports and benchmarks).
    pub(crate) stored: parking_lot::Mutex<(usize, u64)>,
    /// Index parts this handle read from the store, and chunks it built from their
    /// objects (for [`IndexStats`]).
    pub(crate) parts_loaded: std::sync::atomic::AtomicU64,
    pub(crate) chunks_built: std::sync::atomic::AtomicU64,
    /// Unit graphs it built (for [`IndexStats`]).
    pub(crate) graphs_built: std::sync::atomic::AtomicU64,
    /// The first failure to store derived values since [`Repo::build_indexes_with`] last
    /// looked (queries only note such failures; a build that was asked to store reports it).
    pub(crate) store_failure: parking_lot::Mutex<Option<cairn_store::StoreError>>,
    /// Stored dense parts whose rows could not be read at query time (key, why): deleted
    /// and rebuilt by the next view assembly ([`rows`]).
    pub(crate) damaged_rows: rows::DamagedRows,
    /// Each queried commit's graph base root (`graph_base.rs`; `None`: its own units).
    pub(crate) graph_bases: parking_lot::Mutex<std::collections::HashMap<cairn_core::CommitId, Option<Hash>>>,
    /// Each such commit's ancestors at the base strides (`graph_base.rs`).
    pub(crate) stride_ancestors:
        parking_lot::Mutex<std::collections::HashMap<cairn_core::CommitId, graph_base::StrideAncestors>>,
}

impl Default for Derived {
    fn default() -> Self {
        let params = IndexParams::default();
        Derived {
            fingerprint: params.fingerprint(),
            params,
            cache: cache::DerivedCache::default(),
            stored: parking_lot::Mutex::new((0, 0)),
            parts_loaded: Default::default(),
            chunks_built: Default::default(),
            graphs_built: Default::default(),
            store_failure: parking_lot::Mutex::new(None),
            damaged_rows: Default::default(),
            graph_bases: Default::default(),
            stride_ancestors: Default::default(),
        }
    }
}
