//! Derived data: the chunks, unit graphs and manifests a commit's indexes are made of,
//! and each branch's time index — built from the objects on first use, cached in memory,
//! stored under their own keys, shared by every commit whose content they cover
//! (`storage-format.md` §7).
//!
//! [`DerivedData`] is their owner: one per repository handle, holding its own handles on
//! the store, the objects view, the commit cache and the progress observer, the index
//! parameters, and every piece of in-memory state (caches, counters, graph-base
//! decisions). Everything below is a method of it or plain data it uses; none reads the
//! [`Repo`](crate::Repo)'s fields. The repository's face onto it is `api` (and `source`,
//! the retrieval pipeline's): each resolves a revision or a branch's head and passes the
//! commit id in.
//!
//! * `api` — [`Repo`](crate::Repo)'s index, drop, repair and `as_of` methods, delegating;
//! * [`keys`] — the registry of derived key spaces and every key derivation (nothing else
//!   spells a derived key);
//! * [`spans`] — chunk spans read off a tree's upper levels;
//! * `list` — a tree's resolved chunk list, taken over subtree by subtree from the previous
//!   view's;
//! * [`cache`] — the byte-bounded part cache, and the view and chunk-list caches;
//! * `build` — resolving a tree's chunks (loading, or building and storing, each part),
//!   assembling a commit's view for the parts a query needs (one loader for the four part
//!   kinds), writing what was built;
//! * `early_units` — a view's own unit texts, built as its chunks are (each chunk's text
//!   part released once its unit's text is built);
//! * `rows` — the source rows and texts are read from their node objects through, and
//!   which dense rows a view leaves there;
//! * `background` — the handle's background threads (reading the rows loaded parts keep,
//!   storing unit texts), stopped and joined with it;
//! * `base_texts` — storing, in the background and at the latest when the handle closes,
//!   the unit texts of the commit a derived view's text lane is based on, which a fresh
//!   process reads;
//! * `graph_base` — which commit's unit graphs (and unit texts) a view reads;
//! * `hashed` — maps and sets keyed by chunk keys, hashed by their own bytes;
//! * `live` — which derived entries live commits use, and `gc`'s sweep of the others;
//! * [`check`] — reading back every stored entry (`fsck`) and deleting the damaged ones;
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

mod api;
mod background;
mod base_texts;
mod build;
pub(crate) mod cache;
pub(crate) mod check;
mod drop;
mod early_units;
mod graph_base;
mod hashed;
pub(crate) mod keys;
mod list;
mod live;
mod rows;
mod source;
pub(crate) mod spans;
mod time_index;

pub use build::{DenseReport, IndexReport, IndexStats};
pub use cache::DEFAULT_MEMORY_BUDGET;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use cairn_core::{Commit, CommitId, Hash};
use cairn_graph::{Objects, Refs};
use cairn_index::IndexParams;
use cairn_store::{Store, StoreError};
use parking_lot::Mutex;

use crate::commit_cache::CommitCache;
use crate::error::Result;
use crate::progress::{Meter, ProgressHook, Step};

/// A repository's derived data: everything built from its objects and stored apart from
/// them, and the handles it is built with.
///
/// It owns
/// * its handles: the store it reads and writes derived values in, the objects view it
///   builds chunks from, the commit cache its graph-base walk reads first-parent chains
///   through, and the progress observer its long steps report to — each shared with the
///   [`Repo`](crate::Repo) that made it, which reaches none of this type's state;
/// * its parameters ([`IndexParams`], and their fingerprint, which every derived key
///   carries);
/// * its in-memory state: the part, view and chunk-list caches; the counters
///   [`IndexStats`] reports; the first store failure since a build last looked; the
///   stored dense parts found damaged at query time; the graph-base decisions per commit.
///
/// It knows nothing of revisions, branches' heads or embedders: the repository resolves
/// those and passes a [`CommitId`] (or a branch's head) in.
pub(crate) struct DerivedData {
    store: Arc<dyn Store>,
    objects: Arc<Objects>,
    commits: Arc<CommitCache>,
    progress: Arc<ProgressHook>,
    params: IndexParams,
    fingerprint: Hash,
    cache: cache::DerivedCache,
    /// Derived values and bytes this handle has written (for reports and benchmarks).
    stored: Arc<Mutex<(usize, u64)>>,
    /// Index parts this handle read from the store, and chunks it built from their
    /// objects (for [`IndexStats`]).
    parts_loaded: AtomicU64,
    chunks_built: AtomicU64,
    /// Unit graphs it built (for [`IndexStats`]).
    graphs_built: AtomicU64,
    /// The first failure to store derived values since [`DerivedData::build`] last
    /// looked (queries only note such failures; a build that was asked to store reports it).
    store_failure: Mutex<Option<StoreError>>,
    /// Stored dense parts whose rows could not be read at query time (key, why): deleted
    /// and rebuilt by the next view assembly ([`rows`]).
    damaged_rows: rows::DamagedRows,
    /// The handle's background threads: reading the rows of views that hold them once
    /// read, storing the unit texts of bases views moved to (stopped and joined on drop).
    background: background::Background,
    /// The bases whose unit texts the background was given (`base_texts.rs`).
    text_bases: base_texts::QueuedBases,
    /// Each queried commit's graph base root (`graph_base.rs`; `None`: its own units).
    graph_bases: Mutex<HashMap<CommitId, Option<Hash>>>,
    /// Each such commit's ancestors at the base strides (`graph_base.rs`).
    stride_ancestors: Mutex<HashMap<CommitId, graph_base::StrideAncestors>>,
    /// The chunk keys of the last graph-base candidates tested (by node root, most recent
    /// last), which the commits after them test again (`graph_base.rs`).
    candidate_keys: Mutex<Vec<(Hash, Arc<hashed::KeySet>)>>,
    /// How many chunks recent lists differ from recent candidates by (`graph_base.rs`).
    candidate_counts: Mutex<Vec<graph_base::Counted>>,
}

/// Closing: the background threads stop (queued warm-up work is dropped), then the unit
/// texts owed to later processes are finished on the closing thread (`base_texts.rs`).
impl Drop for DerivedData {
    fn drop(&mut self) {
        self.background.close();
        self.finish_base_texts();
    }
}

impl DerivedData {
    /// Derived data over `store`, with the default parameters and memory budget; the
    /// handles are the repository's own (shared).
    pub(crate) fn new(
        store: Arc<dyn Store>,
        objects: Arc<Objects>,
        commits: Arc<CommitCache>,
        progress: Arc<ProgressHook>,
    ) -> DerivedData {
        let params = IndexParams::default();
        DerivedData {
            store,
            objects,
            commits,
            progress,
            fingerprint: params.fingerprint(),
            params,
            cache: cache::DerivedCache::default(),
            stored: Default::default(),
            parts_loaded: AtomicU64::default(),
            chunks_built: AtomicU64::default(),
            graphs_built: AtomicU64::default(),
            store_failure: Mutex::new(None),
            damaged_rows: Default::default(),
            background: Default::default(),
            text_bases: Default::default(),
            graph_bases: Default::default(),
            stride_ancestors: Default::default(),
            candidate_keys: Default::default(),
            candidate_counts: Default::default(),
        }
    }

    /// The parameters indexes are built with.
    pub(crate) fn params(&self) -> &IndexParams {
        &self.params
    }

    /// The commit `id`, through the shared commit cache.
    fn commit(&self, id: &CommitId) -> Result<Arc<Commit>> {
        Ok(self.commits.get(&self.objects, id)?)
    }

    /// The refs (for the dense-dimension records and the branch list).
    fn refs(&self) -> Refs<'_> {
        Refs::new(self.store.as_ref())
    }

    /// Starts a run of `step` on the progress observer.
    fn meter(&self, step: Step, total: Option<u64>) -> Meter {
        self.progress.meter(step, total)
    }
}
