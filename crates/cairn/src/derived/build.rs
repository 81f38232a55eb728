//! [`DerivedData`]'s view assembly: loading or building chunk parts, and assembling a
//! commit's view (a tree's chunk list: `list.rs`) from them; writing what was built, and
//! the manifests that say a tree's chunks are all stored.
//!
//! A view takes three kinds of node-chunk part for every chunk — core, and per model
//! sparse and dense — through one loader ([`DerivedData::chunk_parts`]) driven by a table
//! of the kinds ([`PartKind`]); BM25 postings come as unit texts (the text parts of the
//! chunks they cover are read only to build them) plus the text parts of the chunks no
//! unit covers; edge chunks and unit graphs have loaders of their own.
//!
//! For each chunk part a query needs, in order: the part cache; the store (decoded by the
//! bounded reader, refused unless it carries the expected key); else the chunk is built
//! from its span's objects — every part of it at once — cached, and stored (when the
//! store outlives the process). A stored part that fails to decode, or that the store
//! reports damaged or cannot read, is rebuilt with a note; so is a part missing under a
//! tree whose manifest says its chunks were all stored.
//!
//! Builds of missing chunks run in parallel (rayon); each chunk is a function of its own
//! objects, so the result does not depend on scheduling. A build lock makes two queries
//! that need the same missing chunks build them once.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cairn_core::{CommitId, Edge, Hash, Node};
use cairn_index::chunk::{ChunkParts, EdgeChunk, EdgeDirection};
use cairn_index::params::{MAX_CHUNK_BYTES, MAX_CHUNK_KEYS};
use cairn_index::persist;
use cairn_index::unit::{build_unit_graph, chunk_levels, unit_ranges, unit_seed};
use cairn_index::unit_text::encode_unit_text;
use cairn_index::{
    BaseUnit, CommitIndexes, DenseChunk, IndexError, IndexNeeds, IndexParams, NodeChunk, SparseChunk, TextChunk,
    TextUnit, UnitGraph, UnitText,
};
use cairn_store::{Store, StoreError};
use parking_lot::Mutex;
use rayon::prelude::*;
use serde::Serialize;

use crate::derived::cache::{Part, ViewEntry};
use crate::derived::early_units::EarlyUnits;
use crate::derived::graph_base::ListChange;
use crate::derived::keys::{
    graph_store_key, manifest_key, manifest_store_key, part_store_key, unit_key, unit_text_store_key, view_key,
    TreeKind, TAG_DENSE, TAG_EDGES, TAG_NODE_CORE, TAG_SPARSE, TAG_SPLIT, TAG_TEXT,
};
use crate::derived::list::{Donor, FromDonor};
use crate::derived::spans::{self, positions, ChunkList, ChunkRef};
use crate::derived::DerivedData;
use crate::error::{Error, Result};
use crate::progress::{Meter, Step};

/// Nodes of a chunk read as one batch (`Objects::nodes_sized`); a chunk's batches are read
/// in parallel.
const READ_BATCH: usize = 16;

/// Bytes of derived values written per store batch.
const PERSIST_BATCH_BYTES: usize = 32 << 20;

/// The most unit texts one view assembly builds for drifted units
/// ([`DerivedData::refresh_text_units`]).
const TEXT_REFRESH_UNITS: usize = 2;

/// How many of a view's `chunks` may be served by their own text parts before it looks
/// for drifted units ([`DerivedData::refresh_text_units`]): 64, or an eighth of them.
fn text_refresh_floor(chunks: usize) -> usize {
    (chunks / 8).min(64)
}

/// The most chunks served by their own text parts a stretch of a view around a unit text
/// of `len` chunks may hold before the unit texts of the view's own units there are built
/// ([`DerivedData::refresh_text_units`]): 1/32 of them, at least 8.
fn unit_own_limit(len: usize) -> usize {
    (len / 32).max(8)
}

/// What [`Repo::build_indexes`](crate::Repo::build_indexes) did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexReport {
    /// The commit.
    pub commit: CommitId,
    /// Nodes indexed.
    pub nodes: u32,
    /// Node chunks.
    pub chunks: usize,
    /// Edges indexed.
    pub edges: usize,
    /// Dense models.
    pub dense: Vec<DenseReport>,
    /// Derived values written to the store by this call.
    pub stored_values: usize,
    /// Their bytes.
    pub stored_bytes: u64,
    /// Derived data found damaged or missing and rebuilt.
    pub repaired: Vec<String>,
}

/// The state of a repository handle's index cache ([`Repo::index_stats`](crate::Repo::index_stats)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IndexStats {
    /// Bytes of index parts held in memory (estimated).
    pub cached_bytes: u64,
    /// The memory budget ([`Repo::set_memory_budget`](crate::Repo::set_memory_budget)).
    pub memory_budget: u64,
    /// Derived values this handle has written to the store.
    pub stored_values: usize,
    /// Their bytes.
    pub stored_bytes: u64,
    /// Index parts this handle read from the store (each chunk part, loaded once into the
    /// cache).
    pub parts_loaded: u64,
    /// Chunks this handle built from their objects (each makes all its parts at once).
    pub chunks_built: u64,
    /// HNSW unit graphs this handle built (not loaded from the store or cache).
    pub graphs_built: u64,
    /// Jobs waiting for the handle's background threads, which prepare for later queries
    /// without changing an answer: reading the rows of loaded dense parts that keep them in
    /// memory, storing the unit texts a fresh process's view of a later commit reads.
    pub background_jobs: usize,
    /// True while those threads have work (a job queued or running).
    pub background_busy: bool,
}

/// One dense model in an [`IndexReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DenseReport {
    /// The model.
    pub model: String,
    /// Its dimension.
    pub dim: usize,
    /// Vectors.
    pub vectors: usize,
    /// HNSW unit graphs built or loaded (0 unless asked for).
    pub unit_graphs: usize,
}

/// The state of one assembly: parameters, notes, and the values to store.
pub(super) struct Ctx {
    params: IndexParams,
    pub(super) fp: Hash,
    pub(super) persistent: bool,
    notes: Mutex<Vec<String>>,
    pub(super) pending: Mutex<Vec<(Vec<u8>, Vec<u8>)>>,
    /// Trees whose manifest is stored (a missing part under them is damage).
    manifests: Mutex<BTreeSet<(u8, Hash)>>,
    stored_values: Mutex<(usize, u64)>,
    /// The dense models whose rows this assembly leaves on disk, with their row source
    /// (`rows.rs`): their parts are put on disk as they are built or loaded.
    rows_on_disk: std::collections::BTreeMap<String, Arc<dyn cairn_index::RowSource>>,
    /// Where core parts read their node texts, and a loaded dense part whose rows stay in
    /// memory reads them, from: their node objects, through the store.
    rows_source: Arc<dyn cairn_index::RowSource>,
    /// True if core parts hold their texts in memory ([`DerivedData::texts_in_memory`]).
    texts_in_memory: bool,
    /// What the view being assembled needs (`None`: everything).
    needs: Option<IndexNeeds>,
    /// Parts this assembly deleted itself (rows found damaged): their absence is no news.
    dropped: BTreeSet<Vec<u8>>,
    /// Every part built or loaded by this assembly, by store key: the assembly reads them
    /// from here, so a part the byte-bounded cache has already evicted again (a view larger
    /// than the cache) is never built twice.
    seen: Mutex<crate::derived::hashed::BytesMap<Vec<u8>, Part>>,
}

impl Ctx {
    fn note(&self, what: String) {
        self.notes.lock().push(what);
    }

    /// True if this assembly keeps a part it built (`tag`, of `model`) in memory: always
    /// in a store that keeps no derived data (the cache is then its only copy) and for a
    /// view that asks for no lane (a listing, or `build_indexes`' probe, whose next view
    /// needs the parts); else only a part its view needs — the others (a chunk is built
    /// whole: the sparse parts of a hybrid query's chunks, say) are stored and dropped,
    /// and loaded when a view asks.
    fn keeps(&self, tag: u8, model: &str) -> bool {
        let Some(n) = self
            .needs
            .as_ref()
            .filter(|n| self.persistent && **n != IndexNeeds::default())
        else {
            return true;
        };
        match tag {
            TAG_TEXT => n.text,
            TAG_SPARSE => n.sparse.contains(model),
            TAG_DENSE => n.dense.contains(model) || n.graphs.contains(model),
            _ => true,
        }
    }

    /// True if this assembly holds every part of `keys`.
    pub(super) fn holds_all(&self, mut keys: impl Iterator<Item = Vec<u8>>) -> bool {
        let seen = self.seen.lock();
        keys.all(|k| seen.contains_key(&k))
    }

    /// Releases parts this assembly holds (`early_units.rs`: a unit's chunk text parts
    /// once its unit text is built), unless a store write failed (then they are only here).
    pub(super) fn forget_parts(&self, keys: impl IntoIterator<Item = Vec<u8>>) {
        if self.store_failed() {
            return;
        }
        let mut seen = self.seen.lock();
        for k in keys {
            seen.remove(&k);
        }
    }

    /// True if a store write of this assembly failed (what it built is only in memory).
    fn store_failed(&self) -> bool {
        self.notes.lock().iter().any(|n| n.starts_with("could not store"))
    }

    /// Queues `value()` for storage under `key` (only computed if the store keeps derived
    /// data).
    fn persist(&self, key: Vec<u8>, value: impl FnOnce() -> Vec<u8>) {
        if self.persistent {
            let value = value();
            self.pending.lock().push((key, value));
        }
    }
}

/// Counts one unit of a [`Meter`] when dropped: whether the unit's work succeeded or
/// returned early, it is done.
pub(super) struct Tick<'a>(pub(super) &'a Meter);

impl Drop for Tick<'_> {
    fn drop(&mut self) {
        self.0.add(1);
    }
}

/// Writes `batch` of derived values, and out of the store's memory
/// (`Store::flush_derived`: so a large build does not pile up unwritten values there; not
/// synced, a cache), and counts them in `stored` (a handle's
/// [`IndexStats::stored_values`] and bytes): how many and their bytes.
pub(super) fn put_values(
    store: &dyn Store,
    stored: &Mutex<(usize, u64)>,
    batch: &[(Vec<u8>, Vec<u8>)],
) -> std::result::Result<(usize, u64), StoreError> {
    store.put_derived(batch)?;
    store.flush_derived()?;
    let bytes = batch.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
    let mut s = stored.lock();
    s.0 += batch.len();
    s.1 += bytes;
    Ok((batch.len(), bytes))
}

/// The units a view reads — its own (`base` `None`) or a base commit's — as the chunk list
/// they are cut from and their ranges of it, and, for a base, each of the view's chunks'
/// position by key. A chunk's first key is its span's head (the leading span has none: it
/// is the first chunk, whatever its key), as gc's live set reads it (`live.rs`).
pub(super) fn units_of<'a>(list: &'a [ChunkRef], base: Option<&'a ChunkList>) -> BaseUnits<'a> {
    let units_of: &[ChunkRef] = base.map_or(list, |b| &b[..]);
    let firsts = units_of
        .iter()
        .map(|c| c.span.head.as_ref().map_or(&[][..], |h| h.0.as_slice()));
    let units = unit_ranges(&chunk_levels(firsts));
    (units_of, units, base.map(|_| positions(list)))
}

/// [`units_of`]'s answer.
pub(super) type BaseUnits<'a> = (
    &'a [ChunkRef],
    Vec<std::ops::Range<usize>>,
    Option<crate::derived::hashed::KeyMap<usize>>,
);

/// A view's unit texts, and the text part of each of its chunks no unit covers.
type ViewTexts = (Vec<TextUnit>, Vec<Option<Arc<TextChunk>>>);

/// What a part lookup found.
pub(super) enum Found {
    Part(Part),
    Split,
}

/// How a stored part's decode finds what the part does not hold: the node texts and dense
/// rows, in their node objects.
struct Sources<'a> {
    /// The source texts and rows are read through.
    source: &'a Arc<dyn cairn_index::RowSource>,
    /// Whether a dense part's rows stay in their objects (else each is kept in memory once
    /// read).
    rows_stay: bool,
    /// Whether a core part holds its texts in memory once read.
    texts_in_memory: bool,
    /// The part's store key.
    key: &'a [u8],
    /// Whether the store checked a shared value end to end as it read it
    /// (`Store::checks_derived_values`): the part's own checksum is then not computed
    /// again over the same bytes.
    checked: persist::Checked,
}

/// A stored value as the store handed it out: lent for the decode, or shared
/// (`Store::get_derived_shared`: maybe a slice of the store's mapping), which a part may
/// keep and read where it lies.
enum Stored<'a> {
    Lent(&'a [u8]),
    Shared(&'a bytes::Bytes),
}

/// Decodes a stored part (`chunk`: its chunk key), with what it reads from `sources`. Of a
/// shared value, a dense part keeps its codes and row fields, a core part its head.
fn decode_part(
    tag: u8,
    value: Stored<'_>,
    chunk: &Hash,
    sources: Sources<'_>,
) -> std::result::Result<Part, IndexError> {
    let bytes: &[u8] = match value {
        Stored::Lent(b) => b,
        Stored::Shared(b) => b,
    };
    Ok(match tag {
        TAG_NODE_CORE => {
            let source = Arc::clone(sources.source);
            let mut core = match value {
                Stored::Shared(shared) => {
                    persist::decode_node_core_shared(shared, chunk, source, sources.key, sources.checked)?
                }
                Stored::Lent(bytes) => persist::decode_node_core(bytes, chunk, source, sources.key)?,
            };
            if sources.texts_in_memory {
                // Read when one is first rendered; a text its node object does not hold
                // then has the part rebuilt, as a dense row.
                core.hold_texts();
            }
            Part::Core(Arc::new(core))
        }
        TAG_TEXT => Part::Text(Arc::new(persist::decode_text(bytes, chunk)?)),
        TAG_SPARSE => Part::Sparse(Arc::new(persist::decode_sparse(bytes, chunk)?.1)),
        TAG_DENSE => {
            let head = match value {
                Stored::Shared(shared) => persist::decode_dense_shared(shared, chunk, sources.checked)?.2,
                Stored::Lent(bytes) => persist::decode_dense_checked(bytes, chunk, sources.checked)?.2,
            };
            let source = sources.source;
            Part::Dense(Arc::new(if sources.rows_stay {
                head.into_rows_stored(Arc::clone(source), sources.key)
            } else {
                // Read when one is first rescored; a row its node object does not hold (or
                // a damaged object) then has the part rebuilt from the objects, whose own
                // damage that build reports.
                head.into_rows_held(Arc::clone(source), sources.key)
            }))
        }
        TAG_EDGES => Part::Edges(Arc::new(persist::decode_edges(bytes, chunk)?.1)),
        TAG_SPLIT => {
            persist::decode_split(bytes, chunk)?;
            Part::Split
        }
        t => return Err(IndexError::BadStoredIndex(format!("unknown part tag 0x{t:02x}"))),
    })
}

fn tag_name(tag: u8) -> &'static str {
    match tag {
        TAG_NODE_CORE => "core",
        TAG_TEXT => "text",
        TAG_SPARSE => "sparse",
        TAG_DENSE => "dense",
        TAG_EDGES => "edges",
        TAG_SPLIT => "split marker",
        _ => "part",
    }
}

/// One kind of chunk part a view loads for all its chunks at once
/// ([`DerivedData::chunk_parts`]): the table of the three kinds below.
struct PartKind<T> {
    /// The part's tag in its store key.
    tag: u8,
    /// Which chunks have the part, by their core part and the model (`None`: every chunk).
    wanted: Option<fn(&NodeChunk, &str) -> bool>,
    /// The donor view's part of its chunk `i`, of the model.
    donor: fn(&CommitIndexes, &str, usize) -> Option<Arc<T>>,
    /// The part, if a loaded or built [`Part`] is of this kind.
    take: fn(Part) -> Option<Arc<T>>,
    /// True if loading it is a run of [`Step::IndexParts`] (the core parts are loaded with
    /// the chunk list, under [`Step::IndexChunks`]).
    metered: bool,
}

/// Core parts: every chunk has one.
const CORE: PartKind<NodeChunk> = PartKind {
    tag: TAG_NODE_CORE,
    wanted: None,
    donor: |dv, _, i| dv.chunks().get(i).cloned(),
    take: |p| match p {
        Part::Core(c) => Some(c),
        _ => None,
    },
    metered: false,
};

/// Sparse parts of one model: chunks with a vector of it.
const SPARSE: PartKind<SparseChunk> = PartKind {
    tag: TAG_SPARSE,
    wanted: Some(|core, model| core.sparse_models().contains_key(model)),
    donor: |dv, model, i| dv.sparse_part(model, i).cloned(),
    take: |p| match p {
        Part::Sparse(s) => Some(s),
        _ => None,
    },
    metered: true,
};

/// Dense parts of one model: chunks with a vector of it.
const DENSE: PartKind<DenseChunk> = PartKind {
    tag: TAG_DENSE,
    wanted: Some(|core, model| core.dense_models().contains_key(model)),
    donor: |dv, model, i| dv.dense(model).and_then(|d| d.part(i)).cloned(),
    take: |p| match p {
        Part::Dense(d) => Some(d),
        _ => None,
    },
    metered: true,
};

fn inconsistent(e: IndexError) -> Error {
    Error::Index(e)
}

impl DerivedData {
    /// Sets the part cache's memory budget ([`Repo::set_memory_budget`](crate::Repo::set_memory_budget)).
    pub(crate) fn set_memory_budget(&self, bytes: usize) {
        self.cache.set_capacity(bytes);
    }

    /// What the index cache holds and what this handle has stored.
    pub(crate) fn stats(&self) -> IndexStats {
        let (stored_values, stored_bytes) = *self.stored.lock();
        IndexStats {
            cached_bytes: self.cache.bytes() as u64,
            memory_budget: self.cache.capacity() as u64,
            stored_values,
            stored_bytes,
            parts_loaded: self.parts_loaded.load(Ordering::Relaxed),
            chunks_built: self.chunks_built.load(Ordering::Relaxed),
            graphs_built: self.graphs_built.load(Ordering::Relaxed),
            background_jobs: self.background.queued(),
            background_busy: self.background.busy(),
        }
    }

    fn ctx(&self) -> Ctx {
        let params = self.params().clone();
        Ctx {
            fp: params.fingerprint(),
            params,
            persistent: self.store.is_persistent(),
            notes: Mutex::new(Vec::new()),
            pending: Mutex::new(Vec::new()),
            rows_on_disk: Default::default(),
            rows_source: self.row_source(),
            texts_in_memory: true,
            needs: None,
            dropped: BTreeSet::new(),
            manifests: Mutex::new(BTreeSet::new()),
            stored_values: Mutex::new((0, 0)),
            seen: Mutex::new(Default::default()),
        }
    }

    /// The view of commit `id` with at least the parts `needs` names, and notes about
    /// derived data that was repaired on the way.
    ///
    /// A commit's first view takes over, from the most recently used view (usually its
    /// parent's), every part of every chunk the two share: a small commit's view costs its
    /// new chunks and a walk of its tree's upper levels, not a lookup per chunk.
    pub(crate) fn index_view(&self, id: &CommitId, needs: &IndexNeeds) -> Result<(Arc<CommitIndexes>, Vec<String>)> {
        let c = self.commit(id)?;
        let (repaired, dropped) = self.drop_damaged_rows();
        let cache = &self.cache;
        let fp = self.fingerprint;
        let vkey = view_key(&fp, c.node_root, c.edge_root);
        // A cached view serves if it has the parts, and graphs of the base this commit
        // walks (`graph_base.rs`; decided once per commit).
        let serves = |v: &CommitIndexes| {
            v.satisfies(needs)
                && needs.graphs.iter().all(|m| match v.dense(m) {
                    // No vectors of the model: no graphs to walk.
                    None => true,
                    Some(d) => self
                        .known_graph_base(id)
                        .is_some_and(|origin| d.graphs_origin() == origin),
                })
        };
        if let Some(e) = cache.view(&vkey).filter(|e| serves(&e.view)) {
            return Ok((e.view, Vec::new()));
        }
        let _building = cache.build.lock();
        let base = cache.view(&vkey);
        if let Some(e) = base.as_ref().filter(|e| serves(&e.view)) {
            return Ok((Arc::clone(&e.view), Vec::new()));
        }
        let mut ctx = self.ctx();
        let on_disk = self.on_disk(ctx.persistent, c.node_count);
        ctx.rows_on_disk = on_disk;
        ctx.texts_in_memory = self.texts_in_memory(c.node_count);
        ctx.needs = Some(needs.clone());
        ctx.notes.lock().extend(repaired);
        ctx.dropped = dropped.into_iter().collect();
        self.check_manifest(&ctx, TreeKind::Nodes, c.node_root);
        let donor_view = match &base {
            Some(_) => None,
            None => cache.recent_view(),
        };
        let donor = donor_view.as_ref().map(Donor::new);
        // A view that will read unit texts of its own builds them as its chunks are built
        // (`early_units.rs`), unless its donor's unit texts carry over.
        let early =
            (needs.text && ctx.persistent && donor_view.as_ref().is_none_or(|e| e.view.text_origin().is_none()))
                .then(EarlyUnits::default);
        let (list, memo, from_donor) = match &base {
            Some(e) => (Arc::clone(&e.nodes), Arc::clone(&e.memo), None),
            None => self.chunk_list_with(&ctx, TreeKind::Nodes, c.node_root, donor.as_ref(), early.as_ref())?,
        };
        // Chunk i's position in the donor, if it has the chunk.
        let from_donor: FromDonor = match (from_donor, &donor) {
            (Some(f), _) => f,
            (None, Some(d)) => list.iter().map(|ch| d.index().get(&ch.key).copied()).collect(),
            (None, None) => vec![None; list.len()],
        };
        let dv = donor_view.as_ref().map(|e| &*e.view);
        // How this list came from the donor's: a graph base candidate's count follows it.
        let change = donor_view.as_ref().map(|e| ListChange {
            donor_root: e.node_root,
            donor: &e.nodes,
            from_donor: &from_donor,
        });
        let whole = base.is_none() && dv.is_none();
        if whole {
            // A view loaded whole (a fresh handle's first): a part or two per chunk, held
            // by this assembly and the cache; their tables sized once rather than grown.
            let per_chunk = 1 + needs.dense.len() + needs.sparse.len();
            ctx.seen.lock().reserve(list.len() * per_chunk);
            cache.reserve_parts(list.len() * per_chunk);
        }
        let lists = (&list[..], &from_donor[..], dv);
        // The graph base a text lane needs (below), decided while a view loaded whole
        // loads its core parts: the decision walks the candidates' trees on one thread,
        // which would otherwise leave the other core idle between the part loads.
        let mut early_base = None;
        let mut view = match &base {
            Some(e) => (*e.view).clone(),
            None => {
                let text_base = needs.text && whole;
                let (cores, decided) = rayon::join(
                    || self.chunk_parts(&ctx, lists, &CORE, None, &[]),
                    || {
                        text_base.then(|| {
                            let base_ctx = self.ctx();
                            let base = self.graph_base(&base_ctx, id, &list, &memo, None);
                            (base, base_ctx)
                        })
                    },
                );
                early_base = decided;
                let cores: Vec<Arc<NodeChunk>> = cores?.into_iter().flatten().collect();
                match dv {
                    // The donor's chunks it shares are not read again (their lengths and
                    // order are the donor's), and its label gates carry over.
                    Some(dv) => {
                        let mut view = CommitIndexes::assemble_after(vkey, ctx.params.clone(), cores, dv, &from_donor)
                            .map_err(inconsistent)?;
                        view.inherit_gates(dv, &from_donor).map_err(inconsistent)?;
                        view
                    }
                    None => CommitIndexes::assemble(vkey, ctx.params.clone(), cores).map_err(inconsistent)?,
                }
            }
        };
        if needs.text && !view.has_text() {
            // The commit whose graphs it walks (`graph_base.rs`), decided here for every
            // commit a text query reaches, as its approximate search would: the candidates'
            // chunk lists are then at hand when a later query walks graphs.
            let (base, base_ctx) = match early_base.take() {
                Some((base, base_ctx)) => (base?, base_ctx),
                None => {
                    let base_ctx = self.ctx();
                    (self.graph_base(&base_ctx, id, &list, &memo, change.as_ref())?, base_ctx)
                }
            };
            match dv.filter(|d| d.text_origin().is_some()) {
                // A donor served by unit texts: they carry over (O(chunks)), with the parts
                // of this view's new chunks; then only the units that drifted are built
                // (`refresh_text_units`).
                Some(d) => {
                    let new = list
                        .par_iter()
                        .zip(&from_donor)
                        .map(|(ch, f)| match f {
                            Some(_) => Ok(None),
                            None => self.text_part(&ctx, ch).map(Some),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    view.derive_text(d, &from_donor, new).map_err(inconsistent)?;
                    self.refresh_text_units(&ctx, &list, &mut view)?;
                    // A fresh process's view reads the base's units: stored in the
                    // background, this process reading none of them (`base_texts.rs`).
                    if let Some((root, base_list)) = &base {
                        self.store_base_texts(&ctx, *root, base_list);
                    }
                }
                // Else the base's units; its chunks load under an assembly of their own,
                // as for graphs.
                None => {
                    let origin = base.as_ref().map(|b| b.0);
                    let (units, own) = self.text_units(&ctx, &base_ctx, lists, base.as_ref().map(|b| &*b.1))?;
                    view.set_text_units(units, own, origin).map_err(inconsistent)?;
                }
            }
            self.store_pending(&base_ctx);
            ctx.notes.lock().append(&mut base_ctx.notes.lock());
        }
        for model in &needs.sparse {
            if !view.has_sparse_model(model) || view.sparse_loaded(model) {
                continue;
            }
            let parts = self.chunk_parts(&ctx, lists, &SPARSE, Some(model), view.chunks())?;
            view.set_sparse_from(model, parts, dv.map(|d| (d, from_donor.as_slice())))
                .map_err(inconsistent)?;
        }
        let dense_models: BTreeSet<&String> = needs.dense.iter().chain(&needs.graphs).collect();
        for model in dense_models {
            if !view.has_dense_model(model) || view.dense(model).is_some() {
                continue;
            }
            let parts = self.chunk_parts(&ctx, lists, &DENSE, Some(model), view.chunks())?;
            let parts = self.leave_rows_on_disk(&ctx, &list, model, parts);
            // A part the donor view lent was queued when that view loaded it: only this
            // assembly's own are looked at (a donor's whole view would be, every commit).
            let donor_dense = dv.and_then(|d| d.dense(model));
            let lent = |c: usize, p: &Arc<DenseChunk>| {
                from_donor[c]
                    .and_then(|i| donor_dense?.part(i))
                    .is_some_and(|d| Arc::ptr_eq(d, p))
            };
            self.fill_rows(
                parts
                    .iter()
                    .enumerate()
                    .filter_map(|(c, p)| p.as_ref().filter(|p| !lent(c, p))),
            );
            view.set_dense_from(model, parts, dv.map(|d| (d, from_donor.as_slice())))
                .map_err(inconsistent)?;
        }
        let graph_models: Vec<&String> = needs.graphs.iter().filter(|m| view.has_dense_model(m)).collect();
        if !graph_models.is_empty() {
            // The base's chunks (its list, and the parts of those this commit lacks) are
            // loaded under an assembly of their own: no manifest of the base's tree was
            // checked, so a part of its never stored is no damage.
            let base_ctx = self.ctx();
            let base = self.graph_base(&base_ctx, id, &list, &memo, change.as_ref())?;
            let origin = base.as_ref().map(|b| b.0);
            for model in graph_models {
                if view
                    .dense(model)
                    .is_some_and(|d| d.has_units() && d.graphs_origin() == origin)
                {
                    continue;
                }
                let units = self.unit_graphs(&ctx, &base_ctx, &list, &view, model, base.as_ref().map(|b| &*b.1))?;
                view.set_base_graphs(model, units, origin).map_err(inconsistent)?;
            }
            self.store_pending(&base_ctx);
            ctx.notes.lock().append(&mut base_ctx.notes.lock());
        }
        if needs.edges && view.edges().is_none() {
            let same_edges = donor_view
                .as_ref()
                .filter(|e| e.edge_roots == (c.edge_root, c.edge_in_root))
                .and_then(|e| e.view.edges().cloned());
            match same_edges {
                Some(e) => view.set_edge_view(e),
                None => {
                    self.check_manifest(&ctx, TreeKind::Edges, c.edge_root);
                    self.check_manifest(&ctx, TreeKind::EdgesIn, c.edge_in_root);
                    let out = self.edge_parts(&ctx, TreeKind::Edges, c.edge_root)?;
                    let inc = self.edge_parts(&ctx, TreeKind::EdgesIn, c.edge_in_root)?;
                    view.set_edges(out, inc);
                }
            }
        }
        self.store_pending(&ctx);
        let mut manifests = vec![(TreeKind::Nodes, c.node_root)];
        if view.edges().is_some() {
            manifests.push((TreeKind::Edges, c.edge_root));
            manifests.push((TreeKind::EdgesIn, c.edge_in_root));
        }
        self.write_manifests(&ctx, &manifests, &list);
        let view = Arc::new(view);
        let evicted = cache.put_view(
            vkey,
            ViewEntry {
                view: Arc::clone(&view),
                nodes: list,
                node_root: c.node_root,
                memo,
                edge_roots: (c.edge_root, c.edge_in_root),
            },
        );
        self.background.drop_later(evicted);
        // Parts load in parallel, so notes arrive in any order: sorted, a retrieval's
        // warnings are the same bytes for any thread count.
        let mut notes = std::mem::take(&mut *ctx.notes.lock());
        notes.sort();
        notes.dedup();
        Ok((view, notes))
    }

    /// Builds (or loads) every index part of commit `id` — with `graphs`, its unit graphs
    /// too — stores what was missing, and reports it ([`Repo::build_indexes_with`](crate::Repo::build_indexes_with)).
    pub(crate) fn build(&self, id: CommitId, graphs: bool) -> Result<IndexReport> {
        self.store_failure.lock().take();
        let before = *self.stored.lock();
        let (probe, mut repaired) = self.index_view(&id, &IndexNeeds::default())?;
        let mut needs = IndexNeeds {
            text: true,
            dense: probe.dense_models().into_keys().collect(),
            sparse: probe.sparse_models(),
            edges: true,
            graphs: BTreeSet::new(),
        };
        if graphs {
            needs.graphs = needs.dense.clone();
        }
        let (view, more) = self.index_view(&id, &needs)?;
        repaired.extend(more);
        let after = *self.stored.lock();
        self.store.flush()?;
        if let Some(e) = self.store_failure.lock().take() {
            return Err(e.into());
        }
        Ok(IndexReport {
            commit: id,
            nodes: view.node_count(),
            chunks: view.chunks().len(),
            edges: view.edges().map_or(0, |e| e.edge_count()),
            dense: view
                .dense_models()
                .into_iter()
                .map(|(model, dim)| {
                    let d = view.dense(&model);
                    DenseReport {
                        vectors: d.map_or(0, |d| d.len()),
                        unit_graphs: d.map_or(0, |d| d.unit_count()),
                        model,
                        dim,
                    }
                })
                .collect(),
            stored_values: after.0 - before.0,
            stored_bytes: after.1 - before.1,
            repaired,
        })
    }

    /// Commit `id`'s whole index, unit graphs left out ([`Repo::indexes`](crate::Repo::indexes)).
    pub(crate) fn whole_view(&self, id: &CommitId) -> Result<Arc<CommitIndexes>> {
        let probe = self.index_view(id, &IndexNeeds::default())?.0;
        let needs = IndexNeeds {
            text: true,
            dense: probe.dense_models().into_keys().collect(),
            sparse: probe.sparse_models(),
            edges: true,
            graphs: BTreeSet::new(),
        };
        Ok(self.index_view(id, &needs)?.0)
    }

    /// The keys of the node chunks commit `id`'s node tree is cut into, in key order
    /// ([`Repo::index_chunk_keys`](crate::Repo::index_chunk_keys)); builds what it must.
    pub(crate) fn chunk_keys(&self, id: &CommitId) -> Result<Vec<Hash>> {
        let node_root = self.commit(id)?.node_root;
        let ctx = self.ctx();
        let list = {
            let _building = self.cache.build.lock();
            let list = self.chunk_list(&ctx, TreeKind::Nodes, node_root)?;
            self.store_pending(&ctx);
            list
        };
        Ok(list.iter().map(|c| c.key).collect())
    }

    /// Notes a damaged or missing manifest-covered tree.
    fn check_manifest(&self, ctx: &Ctx, tree: TreeKind, root: Option<Hash>) {
        if !ctx.persistent {
            return;
        }
        let key = manifest_key(&ctx.fp, tree, root);
        match self.store.get_derived(&manifest_store_key(&key)) {
            Ok(Some(bytes)) => match persist::decode_manifest(&bytes, &key) {
                Ok(_) => {
                    ctx.manifests.lock().insert((tree as u8, key));
                }
                Err(e) => ctx.note(format!("index manifest {} is damaged ({e}); rebuilt", key.short())),
            },
            Ok(None) => {}
            Err(e) => ctx.note(format!("index manifest {} is unreadable ({e}); rebuilt", key.short())),
        }
    }

    fn has_manifest(&self, ctx: &Ctx, tree: TreeKind) -> bool {
        ctx.manifests.lock().iter().any(|(t, _)| *t == tree as u8)
    }

    /// A part of a resolved chunk.
    fn part(&self, ctx: &Ctx, tree: TreeKind, ch: &ChunkRef, tag: u8, model: Option<&str>) -> Result<Part> {
        match self.lookup(ctx, tree, ch, tag, model)? {
            Found::Part(p) => Ok(p),
            Found::Split => Err(Error::Index(IndexError::Inconsistent(format!(
                "chunk {} was resolved but is a split span",
                ch.key.short()
            )))),
        }
    }

    pub(super) fn lookup(
        &self,
        ctx: &Ctx,
        tree: TreeKind,
        ch: &ChunkRef,
        tag: u8,
        model: Option<&str>,
    ) -> Result<Found> {
        let cache = &self.cache;
        let skey = part_store_key(&ch.key, tag, model);
        let is_core = matches!(tag, TAG_NODE_CORE | TAG_EDGES);
        // Only a core part's span may be split (then its chunks hold the parts).
        let split_key = is_core.then(|| part_store_key(&ch.key, TAG_SPLIT, None));
        {
            let seen = ctx.seen.lock();
            if let Some(p) = seen.get(&skey) {
                return Ok(Found::Part(p.clone()));
            }
            if split_key.as_ref().is_some_and(|k| seen.contains_key(k)) {
                return Ok(Found::Split);
            }
        }
        match cache.part_or_split(&skey, split_key.as_ref()) {
            Some(Part::Split) => return Ok(Found::Split),
            Some(p) => return Ok(Found::Part(p)),
            None => {}
        }
        let what = || format!("{} part of chunk {}", tag_name(tag), ch.key.short());
        if ctx.persistent {
            let on_disk = model.and_then(|m| ctx.rows_on_disk.get(m));
            let checked = match self.store.checks_derived_values() {
                true => persist::Checked::ByStore,
                false => persist::Checked::No,
            };
            let sources = || Sources {
                source: on_disk.unwrap_or(&ctx.rows_source),
                rows_stay: on_disk.is_some(),
                texts_in_memory: ctx.texts_in_memory,
                key: &skey,
                checked,
            };
            // Rows left on disk (a commit large for the memory budget): a dense part's codes
            // and row fields, most of it, stay where the store keeps them too, read through
            // the page cache instead of copied into fresh memory. So do a core part's
            // object hashes and text table where texts stay on disk too, in a store that
            // reads values where they lie (one that copies would hold the whole head).
            // (Held rows keep their codes in memory: scattered rows of a label read from a
            // mapping's small pages cost the warm scans ~15 % at 100k nodes.)
            let in_place = match tag {
                TAG_DENSE => on_disk.is_some(),
                TAG_NODE_CORE => !ctx.texts_in_memory && self.store.reads_derived_ranges(),
                _ => false,
            };
            let read = if in_place && tag == TAG_DENSE {
                // A dense part checks its head at once and each row's codes when the row
                // is first scored: the store need not read the whole value to check it.
                self.store.get_derived_shared_unchecked(&skey).map(|v| {
                    v.map(|(b, by_store)| {
                        let checked = match by_store {
                            true => persist::Checked::ByStore,
                            false => persist::Checked::No,
                        };
                        decode_part(tag, Stored::Shared(&b), &ch.key, Sources { checked, ..sources() })
                    })
                })
            } else if in_place {
                self.store
                    .get_derived_shared(&skey)
                    .map(|v| v.map(|b| decode_part(tag, Stored::Shared(&b), &ch.key, sources())))
            } else {
                let mut decoded = None;
                self.store
                    .with_derived(&skey, &mut |bytes| {
                        decoded = Some(decode_part(tag, Stored::Lent(bytes), &ch.key, sources()))
                    })
                    .map(|found| decoded.filter(|_| found))
            };
            match read {
                Ok(Some(decoded)) => match decoded {
                    Ok(p) => {
                        self.parts_loaded.fetch_add(1, Ordering::Relaxed);
                        self.remember(ctx, skey, p.clone());
                        return Ok(Found::Part(p));
                    }
                    Err(e) => ctx.note(format!("the stored {} is damaged ({e}); rebuilt", what())),
                },
                Ok(None) => {
                    if let Some(split_key) = &split_key {
                        if let Ok(Some(bytes)) = self.store.get_derived(split_key) {
                            if persist::decode_split(&bytes, &ch.key).is_ok() {
                                self.remember(ctx, split_key.clone(), Part::Split);
                                return Ok(Found::Split);
                            }
                        }
                    }
                    if self.has_manifest(ctx, tree) && !ctx.dropped.contains(&skey) {
                        ctx.note(format!("the stored {} is missing; rebuilt", what()));
                    }
                }
                Err(e) => ctx.note(format!("the stored {} is unreadable ({e}); rebuilt", what())),
            }
        }
        self.build_chunk(ctx, tree, ch)?;
        if let Some(split_key) = &split_key {
            if cache.part(split_key).is_some() {
                return Ok(Found::Split);
            }
        }
        let seen = ctx.seen.lock();
        if split_key.as_ref().is_some_and(|k| seen.contains_key(k)) {
            return Ok(Found::Split);
        }
        match seen.get(&skey) {
            Some(p) => Ok(Found::Part(p.clone())),
            None => Err(Error::Index(IndexError::Inconsistent(format!(
                "{} was not produced by its build",
                what()
            )))),
        }
    }

    /// Caches a part, and keeps it for the rest of this assembly. A chunk's text part that
    /// an assembly of the BM25 lane met is not cached where the store keeps it: that
    /// assembly reads it to build a unit text, or its view holds it (a chunk no unit
    /// covers), so the cache's room goes to parts that views share.
    fn remember(&self, ctx: &Ctx, key: Vec<u8>, part: Part) {
        ctx.seen.lock().insert(key.clone(), part.clone());
        let texts_held = ctx.persistent && ctx.needs.as_ref().is_some_and(|n| n.text);
        if !(texts_held && matches!(part, Part::Text(_))) {
            self.cache.put_part(key, part);
        }
    }

    /// The nodes of a span's `entries` (tree key, object), with their stored bytes in all:
    /// read in batches of [`READ_BATCH`] (each located under one read of the store's index),
    /// in parallel (a commit's view builds one or two chunks: its nodes are read and
    /// checked on every core), checked in key order (the first damage named), each the
    /// node its key names. The store is told of them all first (a hint: an object store
    /// fetches them at once, the segment store asks the kernel to read them in, so that a
    /// cold cache waits for the scattered records together; a failure is met again, and
    /// reported, by the reads).
    fn chunk_nodes(&self, entries: &[(Vec<u8>, Hash)]) -> Result<(Vec<(Hash, Node)>, usize)> {
        let objs = &*self.objects;
        let hashes: Vec<Hash> = entries.iter().map(|(_, h)| *h).collect();
        let _ = objs.store().prefetch(&hashes);
        let batches: Vec<_> = hashes.par_chunks(READ_BATCH).map(|b| objs.nodes_sized(b)).collect();
        let mut read = Vec::with_capacity(hashes.len());
        for b in batches {
            read.extend(b?);
        }
        let mut nodes: Vec<(Hash, Node)> = Vec::with_capacity(entries.len());
        let mut bytes = 0usize;
        for ((k, h), (node, size)) in entries.iter().zip(read) {
            if node.id.as_str().as_bytes() != k.as_slice() {
                return Err(Error::Graph(cairn_graph::GraphError::Corrupt {
                    kind: "node",
                    hash: *h,
                    detail: "the node tree maps another id to this node".into(),
                }));
            }
            bytes += size;
            nodes.push((*h, node));
        }
        Ok((nodes, bytes))
    }

    /// Builds every part of one chunk from its span's objects (or records it as split).
    fn build_chunk(&self, ctx: &Ctx, tree: TreeKind, ch: &ChunkRef) -> Result<()> {
        let objs = &*self.objects;
        let entries = spans::entries(objs, &ch.span)?;
        let split = || {
            let k = part_store_key(&ch.key, TAG_SPLIT, None);
            ctx.persist(k.clone(), || persist::encode_split(&ch.key));
            self.remember(ctx, k, Part::Split);
        };
        if entries.len() > MAX_CHUNK_KEYS && ch.span.gap.is_some() {
            split();
            return Ok(());
        }
        self.chunks_built.fetch_add(1, Ordering::Relaxed);
        match tree {
            TreeKind::Nodes => {
                let (nodes, bytes) = self.chunk_nodes(&entries)?;
                if bytes > MAX_CHUNK_BYTES && ch.span.gap.is_some() {
                    split();
                    return Ok(());
                }
                let refs: Vec<(Hash, &Node)> = nodes.iter().map(|(h, n)| (*h, n)).collect();
                let parts = ChunkParts::build(&ctx.params, &refs);
                let n = parts.core.len() as u32;
                let key = &ch.key;
                let core_key = part_store_key(key, TAG_NODE_CORE, None);
                // Texts left in their node objects: as in a part loaded from the store.
                ctx.persist(core_key.clone(), || persist::encode_node_core(key, &parts.core));
                let mut core = parts.core;
                if !ctx.texts_in_memory {
                    core.leave_texts_stored(Arc::clone(&ctx.rows_source), &core_key);
                }
                let text_key = part_store_key(key, TAG_TEXT, None);
                ctx.persist(text_key.clone(), || persist::encode_text(key, &parts.text));
                for (m, s) in parts.sparse {
                    let k = part_store_key(key, TAG_SPARSE, Some(&m));
                    ctx.persist(k.clone(), || persist::encode_sparse(key, &m, n, &s));
                    if ctx.keeps(TAG_SPARSE, &m) {
                        self.remember(ctx, k, Part::Sparse(Arc::new(s)));
                    }
                }
                for (m, d) in parts.dense {
                    let k = part_store_key(key, TAG_DENSE, Some(&m));
                    ctx.persist(k.clone(), || persist::encode_dense(key, &m, n, &d));
                    // Rows left on disk: the value is queued for the store, written before
                    // any query reads a row (and read from the node objects if it never is).
                    let d = match ctx.rows_on_disk.get(&m) {
                        Some(source) => d.into_rows_stored(Arc::clone(source), &k),
                        None => d,
                    };
                    if ctx.keeps(TAG_DENSE, &m) {
                        self.remember(ctx, k, Part::Dense(Arc::new(d)));
                    }
                }
                if ctx.keeps(TAG_TEXT, "") {
                    self.remember(ctx, text_key, Part::Text(Arc::new(parts.text)));
                }
                self.remember(ctx, core_key, Part::Core(Arc::new(core)));
            }
            TreeKind::Edges | TreeKind::EdgesIn => {
                let mut edges: Vec<Edge> = Vec::with_capacity(entries.len());
                let mut bytes = 0usize;
                for (_, h) in &entries {
                    let (edge, size) = objs.edge_sized(h)?;
                    bytes += size;
                    edges.push(edge);
                }
                if bytes > MAX_CHUNK_BYTES && ch.span.gap.is_some() {
                    split();
                    return Ok(());
                }
                let direction = if tree == TreeKind::Edges {
                    EdgeDirection::Out
                } else {
                    EdgeDirection::In
                };
                let chunk = EdgeChunk::build(direction, &edges);
                let k = part_store_key(&ch.key, TAG_EDGES, None);
                ctx.persist(k.clone(), || persist::encode_edges(&ch.key, direction, &chunk));
                self.remember(ctx, k, Part::Edges(Arc::new(chunk)));
            }
        }
        Ok(())
    }

    fn edge_parts(&self, ctx: &Ctx, tree: TreeKind, root: Option<Hash>) -> Result<Vec<Arc<EdgeChunk>>> {
        let list = self.chunk_list(ctx, tree, root)?;
        list.par_iter()
            .map(|ch| match self.part(ctx, tree, ch, TAG_EDGES, None)? {
                Part::Edges(e) => Ok(e),
                _ => Err(Error::Index(IndexError::Inconsistent(
                    "edge part of another kind".into(),
                ))),
            })
            .collect()
    }

    /// `parts` with their rows left on disk, if the view's `model` rows stay there
    /// ([`DerivedData::on_disk`]) and a part still holds them: one an earlier assembly
    /// built or loaded under another rule (this assembly's own are put on disk as they
    /// are built or loaded, [`DenseChunk::into_rows_stored`]). Its rows are in its node objects, which the
    /// store holds (the part was made from them).
    fn leave_rows_on_disk(
        &self,
        ctx: &Ctx,
        list: &ChunkList,
        model: &str,
        parts: Vec<Option<Arc<DenseChunk>>>,
    ) -> Vec<Option<Arc<DenseChunk>>> {
        let Some(source) = ctx.rows_on_disk.get(model) else {
            return parts;
        };
        if parts.iter().flatten().all(|p| !p.rows_in_memory()) {
            return parts;
        }
        let cache = &self.cache;
        parts
            .into_par_iter()
            .zip(list.par_iter())
            .map(|(p, ch)| {
                let p = p?;
                if !p.rows_in_memory() || p.is_empty() {
                    return Some(p);
                }
                let key = part_store_key(&ch.key, TAG_DENSE, Some(model));
                let on_disk = Arc::new((*p).clone().into_rows_stored(Arc::clone(source), &key));
                cache.put_part(key, Part::Dense(Arc::clone(&on_disk)));
                Some(on_disk)
            })
            .collect()
    }

    /// One kind of part of every chunk of `list` (the one loader of the three kinds a view
    /// assembles: [`CORE`], [`SPARSE`], [`DENSE`]), of `model` for sparse and
    /// dense parts. For chunk `c`: `None` unless the kind wants it (by its core part,
    /// `cores[c]`); else the donor view's part where the donor has the chunk
    /// (`from_donor[c]`); else the part loaded or built ([`DerivedData::part`]) — another
    /// kind of part there is an inconsistency. A metered kind ticks a run of
    /// [`Step::IndexParts`] once a chunk.
    fn chunk_parts<T: Send + Sync>(
        &self,
        ctx: &Ctx,
        (list, from_donor, donor): (&[ChunkRef], &[Option<usize>], Option<&CommitIndexes>),
        kind: &PartKind<T>,
        model: Option<&str>,
        cores: &[Arc<NodeChunk>],
    ) -> Result<Vec<Option<Arc<T>>>> {
        let meter = kind
            .metered
            .then(|| self.meter(Step::IndexParts, Some(list.len() as u64)));
        let m = model.unwrap_or_default();
        let tag = kind.tag;
        list.par_iter()
            .zip(from_donor)
            .enumerate()
            .map(|(c, (ch, d))| {
                let _tick = meter.as_ref().map(Tick);
                // The donor's chunk has the same content, so it has the part only if this
                // chunk wants it: asked first, it spares most chunks the model lookup.
                if let Some(p) = d.and_then(|i| (kind.donor)(donor?, m, i)) {
                    return Ok(Some(p));
                }
                if !kind.wanted.is_none_or(|wanted| wanted(&cores[c], m)) {
                    return Ok(None);
                }
                let part = self.part(ctx, TreeKind::Nodes, ch, tag, model)?;
                (kind.take)(part).map(Some).ok_or_else(|| {
                    Error::Index(IndexError::Inconsistent(format!(
                        "a part of another kind under tag {tag:#04x} of chunk {}",
                        ch.key.short()
                    )))
                })
            })
            .collect()
    }

    /// Builds (or loads) the unit text of the units of the view's own cut that hold the
    /// most chunks of drifted stretches — a stretch around a unit text's chunks with more
    /// than [`unit_own_limit`] of them served by their own parts
    /// (`CommitIndexes::text_drifted`) — at most [`TEXT_REFRESH_UNITS`] of them, and
    /// serves those units' chunks from it. A view derived from a donor keeps the donor's
    /// unit texts, whichever commit's units they are; so a unit's text is built again once
    /// the view has drifted there, not every unit's at once when the commit's graph base
    /// moves. The scores do not change (`CommitIndexes::cover_text_units`). The cut (a key
    /// level per chunk) is computed only when a stretch has drifted.
    fn refresh_text_units(&self, ctx: &Ctx, list: &ChunkList, view: &mut CommitIndexes) -> Result<()> {
        if view.text_uncovered().len() <= text_refresh_floor(list.len()) {
            return Ok(());
        }
        let drifted = view.text_drifted(unit_own_limit);
        if drifted.is_empty() {
            return Ok(());
        }
        let (_, ranges, _) = units_of(list, None);
        // The units holding the most drifted chunks first (ties in view order), at most
        // `TEXT_REFRESH_UNITS` of them: a commit builds a unit text or two, and the next
        // commits take the rest.
        let mut stale: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
        let mut at = drifted.iter().map(|&c| c as usize).peekable();
        for range in ranges {
            let mut n = 0;
            while at.next_if(|c| *c < range.end).is_some() {
                n += 1;
            }
            if n > 0 {
                stale.push((n, range));
            }
        }
        stale.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.start.cmp(&b.1.start)));
        stale.truncate(TEXT_REFRESH_UNITS);
        let units = stale
            .into_iter()
            .map(|(_, range)| range)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|range| {
                let chunks: Vec<Option<usize>> = range.clone().map(Some).collect();
                let text = self.unit_text(ctx, ctx, &list[range], &chunks)?;
                Ok(TextUnit { text, chunks })
            })
            .collect::<Result<Vec<_>>>()?;
        view.cover_text_units(units).map_err(inconsistent)
    }

    /// The unit texts a view's BM25 lane reads, mapped onto its chunks — its own units'
    /// (`base` `None`) or those of a base commit's chunk list, whose own chunks load
    /// under `base_ctx` — and the text part of each of its chunks no unit covers (the
    /// donor's where it has one). A run of [`Step::IndexParts`] ticks once a unit.
    fn text_units(
        &self,
        ctx: &Ctx,
        base_ctx: &Ctx,
        (list, from_donor, donor): (&[ChunkRef], &[Option<usize>], Option<&CommitIndexes>),
        base: Option<&ChunkList>,
    ) -> Result<ViewTexts> {
        let (units_of, units, index) = units_of(list, base);
        let meter = self.meter(Step::IndexParts, Some(units.len() as u64));
        let units: Vec<TextUnit> = units
            .into_par_iter()
            .map(|range| {
                let _tick = Tick(&meter);
                let chunks: Vec<Option<usize>> = range
                    .clone()
                    .map(|j| match &index {
                        None => Some(j),
                        Some(ix) => ix.get(&units_of[j].key).copied(),
                    })
                    .collect();
                let text = self.unit_text(ctx, base_ctx, &units_of[range], &chunks)?;
                Ok(TextUnit { text, chunks })
            })
            .collect::<Result<_>>()?;
        let mut covered = vec![false; list.len()];
        for c in units.iter().flat_map(|u| u.chunks.iter().flatten()) {
            covered[*c] = true;
        }
        let own = list
            .par_iter()
            .enumerate()
            .map(|(c, ch)| {
                if covered[c] {
                    return Ok(None);
                }
                if let Some(p) = from_donor[c].and_then(|i| donor?.text_part(i).cloned()) {
                    return Ok(Some(p));
                }
                self.text_part(ctx, ch).map(Some)
            })
            .collect::<Result<_>>()?;
        Ok((units, own))
    }

    /// A chunk's text part (cached, stored, or built from its objects).
    fn text_part(&self, ctx: &Ctx, ch: &ChunkRef) -> Result<Arc<TextChunk>> {
        match self.part(ctx, TreeKind::Nodes, ch, TAG_TEXT, None)? {
            Part::Text(t) => Ok(t),
            _ => Err(Error::Index(IndexError::Inconsistent(format!(
                "a part of another kind under the text tag of chunk {}",
                ch.key.short()
            )))),
        }
    }

    /// The unit text of the unit of chunks `refs` (`chunks[j]`: chunk `j`'s position in
    /// the view being assembled, whose parts load under `ctx`; the others' under
    /// `base_ctx`): cached; stored (its head read alone where the store reads ranges,
    /// else read whole and checked); or built from the chunks' text parts and stored.
    /// Either way the chunks' text parts are then let go by the assemblies
    /// ([`Ctx::forget_parts`]): a view reads a covered chunk's text from its unit, and a
    /// cold view of a commit whose base's unit texts were never stored builds them all —
    /// every chunk's text part, ~600 MB at 1M nodes, held at once otherwise.
    pub(super) fn unit_text(
        &self,
        ctx: &Ctx,
        base_ctx: &Ctx,
        refs: &[ChunkRef],
        chunks: &[Option<usize>],
    ) -> Result<Arc<UnitText>> {
        let u = self.unit_text_of(ctx, base_ctx, refs, chunks)?;
        let text_key = |ch: &ChunkRef| part_store_key(&ch.key, TAG_TEXT, None);
        let (own, base): (Vec<_>, Vec<_>) = refs.iter().zip(chunks).partition(|(_, at)| at.is_some());
        ctx.forget_parts(own.into_iter().map(|(ch, _)| text_key(ch)));
        base_ctx.forget_parts(base.into_iter().map(|(ch, _)| text_key(ch)));
        Ok(u)
    }

    /// [`DerivedData::unit_text`], but for letting go of the parts.
    fn unit_text_of(
        &self,
        ctx: &Ctx,
        base_ctx: &Ctx,
        refs: &[ChunkRef],
        chunks: &[Option<usize>],
    ) -> Result<Arc<UnitText>> {
        let keys: Vec<Hash> = refs.iter().map(|c| c.key).collect();
        let key = unit_key(&ctx.fp, &keys);
        let skey = unit_text_store_key(&key);
        if let Some(Part::UnitText(u)) = ctx.seen.lock().get(&skey) {
            return Ok(Arc::clone(u));
        }
        if let Some(Part::UnitText(u)) = self.cache.part(&skey) {
            return Ok(u);
        }
        let source = self.range_source(ctx.persistent);
        if ctx.persistent {
            let read = match &source {
                Some(src) => UnitText::open_stored(Arc::clone(src), &skey, &key).map_err(|e| e.to_string()),
                None => match self.store.get_derived(&skey) {
                    Ok(Some(bytes)) => UnitText::open(bytes, &key).map(Some).map_err(|e| e.to_string()),
                    Ok(None) => Ok(None),
                    Err(e) => Err(e.to_string()),
                },
            };
            match read {
                Ok(Some(u)) => {
                    self.parts_loaded.fetch_add(1, Ordering::Relaxed);
                    let u = Arc::new(u);
                    self.remember(ctx, skey, Part::UnitText(Arc::clone(&u)));
                    return Ok(u);
                }
                Ok(None) => {}
                Err(e) => ctx.note(format!(
                    "the stored unit text {} is damaged ({e}); rebuilt",
                    key.short()
                )),
            }
        }
        let parts = refs
            .iter()
            .zip(chunks)
            .map(|(ch, at)| self.text_part(if at.is_some() { ctx } else { base_ctx }, ch))
            .collect::<Result<Vec<_>>>()?;
        let part_refs: Vec<&TextChunk> = parts.iter().map(|p| p.as_ref()).collect();
        let bytes = encode_unit_text(&key, &part_refs);
        drop(parts);
        let u = match &source {
            Some(src) if ctx.persistent => UnitText::built_stored(&bytes, &key, Arc::clone(src), &skey),
            _ => UnitText::open_built(bytes.clone(), &key),
        }
        .map_err(inconsistent)?;
        ctx.persist(skey.clone(), || bytes);
        let u = Arc::new(u);
        self.remember(ctx, skey, Part::UnitText(Arc::clone(&u)));
        Ok(u)
    }

    /// The unit graphs of `model` a view walks, mapped onto its chunks: its own units'
    /// (`base` `None`) or those of a base commit's chunk list (`graph_base.rs`), whose own
    /// chunks load under `base_ctx`. Each graph is cached, stored, or built (units in
    /// parallel, each graph on one thread).
    fn unit_graphs(
        &self,
        ctx: &Ctx,
        base_ctx: &Ctx,
        list: &ChunkList,
        view: &CommitIndexes,
        model: &str,
        base: Option<&ChunkList>,
    ) -> Result<Vec<BaseUnit>> {
        let dense = view
            .dense(model)
            .ok_or_else(|| Error::Index(IndexError::NotLoaded(format!("dense:{model}"))))?;
        let (units_of, units, index) = units_of(list, base);
        let meter = self.meter(Step::IndexGraphs, Some(units.len() as u64));
        units
            .into_par_iter()
            .map(|range| {
                let _tick = Tick(&meter);
                let unit_chunks = &units_of[range.clone()];
                let keys: Vec<Hash> = unit_chunks.iter().map(|c| c.key).collect();
                let key = unit_key(&ctx.fp, &keys);
                let mut parts = Vec::with_capacity(range.len());
                let mut chunks = Vec::with_capacity(range.len());
                for j in range {
                    let at = match &index {
                        None => Some(j),
                        Some(ix) => ix.get(&units_of[j].key).copied(),
                    };
                    parts.push(match at {
                        Some(c) => dense.part(c).cloned(),
                        None => self.base_dense_part(base_ctx, &units_of[j], model, dense.dim())?,
                    });
                    chunks.push(at);
                }
                let graph = match self.stored_unit_graph(ctx, &key, model, &parts) {
                    Some(g) => g,
                    None => {
                        // A graph is built from codes known good: a stored part's that fail
                        // their check (reported: it is rebuilt at the next assembly) are
                        // replaced here by the chunk's part built from its objects.
                        let mut checked = Vec::with_capacity(parts.len());
                        for (p, ch) in parts.iter().zip(unit_chunks) {
                            checked.push(match p {
                                Some(d) if d.check_codes().is_err() => {
                                    self.dense_from_objects(ctx, ch, model, d.dim())?
                                }
                                p => p.clone(),
                            });
                        }
                        let refs: Vec<&DenseChunk> = checked.iter().flatten().map(|p| p.as_ref()).collect();
                        self.built_unit_graph(ctx, &key, model, &refs)
                    }
                };
                Ok(BaseUnit { graph, parts, chunks })
            })
            .collect()
    }

    /// The dense part of `model` of a base commit's chunk the view lacks (`None`: none of
    /// its nodes has a vector of the model, or of another dimension, as a view drops).
    fn base_dense_part(&self, ctx: &Ctx, ch: &ChunkRef, model: &str, dim: usize) -> Result<Option<Arc<DenseChunk>>> {
        let has = match self.part(ctx, TreeKind::Nodes, ch, TAG_NODE_CORE, None)? {
            Part::Core(core) => core.dense_models().contains_key(model),
            _ => false,
        };
        if !has {
            return Ok(None);
        }
        Ok(match self.part(ctx, TreeKind::Nodes, ch, TAG_DENSE, Some(model))? {
            Part::Dense(d) if !d.is_empty() && d.dim() == dim => Some(d),
            _ => None,
        })
    }

    /// Unit `key`'s graph over `parts` (`None`: a chunk without the model), cached or
    /// stored; `None` if it must be built ([`DerivedData::built_unit_graph`]).
    fn stored_unit_graph(
        &self,
        ctx: &Ctx,
        key: &Hash,
        model: &str,
        parts: &[Option<Arc<DenseChunk>>],
    ) -> Option<Arc<UnitGraph>> {
        let cache = &self.cache;
        let skey = graph_store_key(key, model);
        let rows: usize = parts.iter().flatten().map(|p| p.len()).sum();
        if let Some(Part::Graph(g)) = cache.part(&skey) {
            return Some(g);
        }
        let stored = if ctx.persistent {
            match self.store.get_derived(&skey) {
                Ok(Some(bytes)) => match persist::decode_unit_graph(&bytes, key) {
                    Ok((m, g)) if m == model && g.len() as usize == rows => Some(Arc::new(g)),
                    Ok(_) => {
                        ctx.note(format!("stored unit graph {} has another size; rebuilt", key.short()));
                        None
                    }
                    Err(e) => {
                        ctx.note(format!("stored unit graph {} is damaged ({e}); rebuilt", key.short()));
                        None
                    }
                },
                Ok(None) => None,
                Err(e) => {
                    ctx.note(format!(
                        "stored unit graph {} is unreadable ({e}); rebuilt",
                        key.short()
                    ));
                    None
                }
            }
        } else {
            None
        };
        if let Some(g) = &stored {
            cache.put_part(skey, Part::Graph(Arc::clone(g)));
        }
        stored
    }

    /// Unit `key`'s graph built over `parts` (their codes checked), stored and cached.
    fn built_unit_graph(&self, ctx: &Ctx, key: &Hash, model: &str, parts: &[&DenseChunk]) -> Arc<UnitGraph> {
        let g = Arc::new(build_unit_graph(
            parts,
            &ctx.params.graph,
            unit_seed(&ctx.params.graph, key),
        ));
        let skey = graph_store_key(key, model);
        ctx.persist(skey.clone(), || persist::encode_unit_graph(key, model, &g));
        self.graphs_built.fetch_add(1, Ordering::Relaxed);
        self.cache.put_part(skey, Part::Graph(Arc::clone(&g)));
        g
    }

    /// Chunk `ch`'s dense part of `model` (of dimension `dim`) built from its span's
    /// objects, neither stored nor cached: what a unit's graph is built from in place of a
    /// stored part whose codes fail their check (reported, so that the stored part is
    /// deleted and rebuilt at the next assembly).
    fn dense_from_objects(&self, ctx: &Ctx, ch: &ChunkRef, model: &str, dim: usize) -> Result<Option<Arc<DenseChunk>>> {
        let (nodes, _) = self.chunk_nodes(&spans::entries(&self.objects, &ch.span)?)?;
        let refs: Vec<(Hash, &Node)> = nodes.iter().map(|(h, n)| (*h, n)).collect();
        let mut parts = ChunkParts::build(&ctx.params, &refs);
        Ok(parts.dense.remove(model).filter(|d| d.dim() == dim).map(Arc::new))
    }

    /// Writes the collected values (best effort: derived data that cannot be stored is
    /// only kept in memory, with a note).
    fn store_pending(&self, ctx: &Ctx) {
        let n = ctx.pending.lock().len();
        if n > 0 {
            self.write_pending(ctx, &self.meter(Step::IndexStore, Some(n as u64)));
        }
    }

    /// Writes and releases the values queued so far, counting them on `meter`.
    pub(super) fn write_pending(&self, ctx: &Ctx, meter: &Meter) {
        let pending = std::mem::take(&mut *ctx.pending.lock());
        self.write_values(ctx, pending, meter);
    }

    /// Writes and releases `pending` (values taken from `ctx`'s queue), counting them on
    /// `meter`.
    pub(super) fn write_values(&self, ctx: &Ctx, mut pending: Vec<(Vec<u8>, Vec<u8>)>, meter: &Meter) {
        // Parts are built in parallel and collected as they finish: write them in one
        // fixed order (`keys::write_order`: each kind of part together, by key), so the
        // derived log's layout (where segments end, what a compaction copies) is a
        // function of what was built, not of thread scheduling.
        pending.sort_unstable_by(|a, b| super::keys::write_order(&a.0, &b.0));
        if pending.is_empty() {
            return;
        }
        let mut batch = Vec::new();
        let mut size = 0usize;
        let mut written = (0usize, 0u64);
        let mut flush = |batch: &mut Vec<(Vec<u8>, Vec<u8>)>, size: &mut usize| {
            if batch.is_empty() {
                return;
            }
            let values = batch.len() as u64;
            let result = put_values(self.store.as_ref(), &self.stored, batch);
            meter.add(values);
            match result {
                Ok((n, bytes)) => {
                    written.0 += n;
                    written.1 += bytes;
                }
                Err(e) => {
                    ctx.note(format!(
                        "could not store {} derived values ({e}); kept in memory",
                        batch.len()
                    ));
                    self.store_failure.lock().get_or_insert(e);
                }
            }
            batch.clear();
            *size = 0;
        };
        for (k, v) in pending {
            size += k.len() + v.len();
            batch.push((k, v));
            if size >= PERSIST_BATCH_BYTES {
                flush(&mut batch, &mut size);
            }
        }
        flush(&mut batch, &mut size);
        let mut s = ctx.stored_values.lock();
        s.0 += written.0;
        s.1 += written.1;
    }

    /// Records that every chunk of these trees is stored (if no store write failed).
    fn write_manifests(&self, ctx: &Ctx, trees: &[(TreeKind, Option<Hash>)], list: &ChunkList) {
        if !ctx.persistent || ctx.store_failed() {
            return;
        }
        let mut entries = Vec::new();
        for (tree, root) in trees {
            let key = manifest_key(&ctx.fp, *tree, *root);
            if ctx.manifests.lock().contains(&(*tree as u8, key)) {
                continue;
            }
            let mut h = blake3::Hasher::new();
            let count = if *tree == TreeKind::Nodes {
                for c in list {
                    h.update(c.key.as_bytes());
                }
                list.len() as u32
            } else {
                0
            };
            let list_hash = Hash::from_bytes(*h.finalize().as_bytes());
            entries.push((
                manifest_store_key(&key),
                persist::encode_manifest(&key, count, &list_hash),
            ));
        }
        if !entries.is_empty() {
            if let Err(e) = self.store.put_derived(&entries) {
                ctx.note(format!("could not store index manifests ({e})"));
            }
        }
    }
}
