//! [`CommitIndexes`]: one commit's index, assembled from its chunks.
//!
//! Ordinals: every node of the commit has a global ordinal, its position among the
//! commit's ids in byte order. Chunks are in key order, so a node's ordinal is its chunk's
//! offset (the prefix sum of the chunks before it) plus its local ordinal, and "ties
//! broken by ordinal" is still "ties broken by node id". Ordinals are a query-time notion:
//! nothing stored holds one, so an insert that shifts every later ordinal changes no chunk.
//!
//! A view holds the parts a query needs ([`IndexNeeds`]): the core columns always, BM25
//! postings, sparse and dense parts per model, edge chunks and unit graphs on demand. The
//! repository assembles views; tests build them in memory with [`CommitIndexes::build`].

mod dense;
mod directory;
mod edges;
mod filter;
mod inherit;
mod postings;
mod sparse;
mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cairn_core::level::key_level;
use cairn_core::{codec, Edge, Hash, Node, NodeId, Value};
use parking_lot::Mutex;

pub use dense::{ann_ef, ann_floor, AnnOptions, BaseUnit, DenseSearch, DenseView, ANN_MIN_ROWS, EXACT_SCAN_ROWS};
pub use edges::{AdjacentEdge, EdgeView};
pub use filter::{Filter, FilterPart};
pub use postings::TextUnit;

use crate::chunk::{ChunkParts, DenseChunk, EdgeChunk, EdgeDirection, Local, NodeChunk, SparseChunk, TextChunk};
use crate::chunking::{spans, SplitRule};
use crate::error::IndexError;
use crate::hit::{Hit, Ordinal};
use crate::params::{IndexParams, CHUNK_LEVEL, MAX_CHUNK_BYTES, MAX_CHUNK_KEYS};
use crate::props::PropertyPredicate;
use crate::unit::UnitGraph;
use directory::Directory;
use filter::chunk_of;
use inherit::{InheritedGates, InheritedRows};

/// The parts a query reads beyond the core columns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexNeeds {
    /// BM25 postings.
    pub text: bool,
    /// Dense models.
    pub dense: BTreeSet<String>,
    /// Sparse models.
    pub sparse: BTreeSet<String>,
    /// Edge chunks (both directions).
    pub edges: bool,
    /// Dense models whose unit graphs an approximate search reads.
    pub graphs: BTreeSet<String>,
}

impl IndexNeeds {
    /// The union of two needs.
    pub fn union(&self, other: &IndexNeeds) -> IndexNeeds {
        IndexNeeds {
            text: self.text || other.text,
            dense: self.dense.union(&other.dense).cloned().collect(),
            sparse: self.sparse.union(&other.sparse).cloned().collect(),
            edges: self.edges || other.edges,
            graphs: self.graphs.union(&other.graphs).cloned().collect(),
        }
    }
}

/// The index of one commit: its node chunks in key order and the parts loaded for them.
#[derive(Debug, Clone)]
pub struct CommitIndexes {
    /// What the view was derived from (the repository's manifest key: the commit's trees
    /// and the parameters).
    pub key: Hash,
    params: IndexParams,
    chunks: Vec<Arc<NodeChunk>>,
    offsets: Arc<[Ordinal]>,
    /// The BM25 postings: unit texts, and parts of the chunks no unit covers.
    text: Option<postings::Postings>,
    /// Every chunk's BM25 part, for a view given them all ([`CommitIndexes::set_text`]).
    text_parts: Option<Vec<Arc<TextChunk>>>,
    sparse: BTreeMap<String, Vec<Option<Arc<SparseChunk>>>>,
    /// Per sparse model: dimension → the chunks holding it.
    sparse_dirs: BTreeMap<String, Directory<u32>>,
    dense: BTreeMap<String, DenseView>,
    edges: Option<Arc<EdgeView>>,
    /// True if every node of every chunk is always valid (no validity gate needed).
    always_valid: bool,
    /// Label gates built on this view, most recent last: a function of the core columns,
    /// which clones of the view share.
    label_memo: Arc<Mutex<Vec<LabelGate>>>,
    /// The donor's label gates, for a view assembled from one (`inherit.rs`).
    inherited: Option<InheritedGates>,
}

/// A remembered label gate: all-of (`true`) or any-of, its labels, its filter.
pub(crate) type LabelGate = (bool, Vec<String>, Filter);

/// Label gates a view remembers.
pub(crate) const LABEL_MEMO: usize = 16;

impl CommitIndexes {
    /// A view over `chunks` (in key order), with no optional part loaded yet.
    pub fn assemble(key: Hash, params: IndexParams, chunks: Vec<Arc<NodeChunk>>) -> Result<CommitIndexes, IndexError> {
        Self::assemble_with(key, params, chunks, None)
    }

    /// [`CommitIndexes::assemble`] for a view whose chunk `i` is `donor`'s chunk
    /// `from_donor[i]` when that index is given and the part is the donor's own (the same
    /// `Arc`): such a chunk's length is the donor's, and two of them that are neighbours in
    /// the donor are in key order already (checked when the donor was assembled), so only
    /// the chunks around a change are read — at 1M nodes, a few of ~15,600 after a 1-node
    /// commit instead of every chunk's ids. The same view as [`CommitIndexes::assemble`]
    /// would give, and the same errors for the chunks it reads.
    pub fn assemble_after(
        key: Hash,
        params: IndexParams,
        chunks: Vec<Arc<NodeChunk>>,
        donor: &CommitIndexes,
        from_donor: &[Option<usize>],
    ) -> Result<CommitIndexes, IndexError> {
        if from_donor.len() != chunks.len() {
            return Err(IndexError::Inconsistent(format!(
                "donor map: {} entries for {} chunks",
                from_donor.len(),
                chunks.len()
            )));
        }
        Self::assemble_with(key, params, chunks, Some((donor, from_donor)))
    }

    fn assemble_with(
        key: Hash,
        params: IndexParams,
        chunks: Vec<Arc<NodeChunk>>,
        donor: Option<(&CommitIndexes, &[Option<usize>])>,
    ) -> Result<CommitIndexes, IndexError> {
        // The donor's chunk that chunk `i` is (the same part), if any.
        let lent = |i: usize| -> Option<usize> {
            let (d, from) = donor?;
            let a = from[i]?;
            Arc::ptr_eq(d.chunks.get(a)?, &chunks[i]).then_some(a)
        };
        let mut offsets = Vec::with_capacity(chunks.len() + 1);
        let mut total: u64 = 0;
        offsets.push(0);
        let mut before: Option<usize> = None;
        let mut always_valid = true;
        for (i, c) in chunks.iter().enumerate() {
            let at = lent(i);
            let len = match (at, donor) {
                (Some(a), Some((d, _))) => {
                    always_valid &= d.always_valid || c.always_valid;
                    u64::from(d.offsets[a + 1] - d.offsets[a])
                }
                _ => {
                    if c.is_empty() {
                        return Err(IndexError::Inconsistent(format!("chunk {i} is empty")));
                    }
                    always_valid &= c.always_valid;
                    c.len() as u64
                }
            };
            let ordered = matches!((before, at), (Some(b), Some(a)) if a == b + 1);
            if i > 0 && !ordered && chunks[i - 1].ids().last() >= c.ids().first() {
                return Err(IndexError::Inconsistent(format!("chunk {i} is out of key order")));
            }
            before = at;
            total += len;
            let t = u32::try_from(total).map_err(|_| IndexError::Inconsistent("more than 2^32 nodes".into()))?;
            offsets.push(t);
        }
        Ok(CommitIndexes {
            key,
            params,
            offsets: offsets.into(),
            text: None,
            text_parts: None,
            sparse: BTreeMap::new(),
            sparse_dirs: BTreeMap::new(),
            dense: BTreeMap::new(),
            edges: None,
            always_valid,
            label_memo: Arc::default(),
            inherited: None,
            chunks,
        })
    }

    fn check_len(&self, what: &str, n: usize) -> Result<(), IndexError> {
        if n != self.chunks.len() {
            return Err(IndexError::Inconsistent(format!(
                "{what}: {n} parts for {} chunks",
                self.chunks.len()
            )));
        }
        Ok(())
    }

    /// For a view assembled from `donor`, whose chunk `i` is the donor's chunk
    /// `from_donor[i]` (the same chunk key) or new: label gates the donor remembers are
    /// derived from its parts for the shared chunks instead of walking every chunk
    /// (`inherit.rs`). Changes no result.
    pub fn inherit_gates(&mut self, donor: &CommitIndexes, from_donor: &[Option<usize>]) -> Result<(), IndexError> {
        self.check_len("donor map", from_donor.len())?;
        self.inherited = Some(InheritedGates::new(donor, from_donor));
        Ok(())
    }

    /// Attaches the BM25 parts (one per chunk, in chunk order), grouping them into unit
    /// texts in memory ([`crate::unit_text`]: the units of [`crate::unit`], as the
    /// repository stores them).
    pub fn set_text(&mut self, parts: Vec<Arc<TextChunk>>) -> Result<(), IndexError> {
        use crate::unit_text::{encode_unit_text, UnitText};
        self.check_len("text", parts.len())?;
        let mut units = Vec::new();
        for (range, key) in self.memory_units() {
            let refs: Vec<&TextChunk> = parts[range.clone()].iter().map(|p| p.as_ref()).collect();
            let text = UnitText::open_built(encode_unit_text(&key, &refs), &key)?;
            units.push(TextUnit {
                text: Arc::new(text),
                chunks: range.map(Some).collect(),
            });
        }
        self.set_text_units(units, vec![None; parts.len()], None)?;
        self.text_parts = Some(parts);
        Ok(())
    }

    /// Attaches BM25 postings as unit texts mapped onto this view's chunks (each chunk at
    /// most once; `view/postings.rs`), and `own[c]`, the part of every chunk `c` no unit
    /// maps. `origin` names the node tree whose units they are (`None`: the view's own),
    /// for [`CommitIndexes::derive_text`]. Errors: [`IndexError::Inconsistent`] if a chunk
    /// is mapped twice or not at all, or a unit chunk's document count differs from its
    /// view chunk's.
    pub fn set_text_units(
        &mut self,
        units: Vec<TextUnit>,
        own: Vec<Option<Arc<TextChunk>>>,
        origin: Option<Hash>,
    ) -> Result<(), IndexError> {
        self.text = Some(postings::Postings::new(units, own, &self.chunk_lens(), origin)?);
        self.text_parts = None;
        Ok(())
    }

    /// The node tree whose unit texts serve this view's BM25 lane (`None`: its own units),
    /// `None` outright if the view has no BM25 postings or was given every chunk's part.
    pub fn text_origin(&self) -> Option<Option<Hash>> {
        self.unit_postings().map(|t| t.origin())
    }

    /// The BM25 postings, if unit texts serve them (not every chunk's part given).
    fn unit_postings(&self) -> Option<&postings::Postings> {
        self.text.as_ref().filter(|_| self.text_parts.is_none())
    }

    /// Each chunk's node count, in view order.
    fn chunk_lens(&self) -> Vec<usize> {
        self.chunks.iter().map(|c| c.len()).collect()
    }

    /// The BM25 postings of a view assembled from `donor`, whose chunk `i` is the donor's
    /// chunk `from_donor[i]` (the same chunk key) or new, served by the donor's unit
    /// texts: each unit chunk moved to its place here (or skipped, if this view lacks
    /// it), the donor's own parts kept, and `new[i]` the part of each new chunk `i`.
    /// O(chunks) integer work. Errors: [`IndexError::Inconsistent`] if the donor has no
    /// unit texts, or a new chunk lacks its part.
    pub fn derive_text(
        &mut self,
        donor: &CommitIndexes,
        from_donor: &[Option<usize>],
        new: Vec<Option<Arc<TextChunk>>>,
    ) -> Result<(), IndexError> {
        self.check_len("donor map", from_donor.len())?;
        self.check_len("text", new.len())?;
        let Some(d) = donor.unit_postings() else {
            return Err(IndexError::Inconsistent("the donor has no unit texts".into()));
        };
        self.text = Some(d.derive(from_donor, new, &self.chunk_lens())?);
        self.text_parts = None;
        Ok(())
    }

    /// The view's chunks whose BM25 postings come from their own text part, not a unit
    /// text, increasing (empty without unit texts).
    pub fn text_uncovered(&self) -> &[u32] {
        self.unit_postings().map_or(&[], |t| t.uncovered())
    }

    /// The chunks of [`CommitIndexes::text_uncovered`] in a stretch of the view around one
    /// unit text's chunks (its chunks and the own-part chunks up to the next unit's) that
    /// holds more than `limit(the unit's chunks in the view)` of them: where the view has
    /// drifted from the units serving it. Empty without unit texts.
    pub fn text_drifted(&self, limit: impl Fn(usize) -> usize) -> Vec<u32> {
        self.unit_postings().map_or_else(Vec::new, |t| t.drifted(limit))
    }

    /// Serves the view's chunks that `units` map (each at most once) from those unit
    /// texts instead of the unit or own part that served them; the postings of every
    /// chunk, and so every score, stay the same. Errors: [`IndexError::Inconsistent`] if
    /// the view has no unit texts, a chunk is mapped twice, or a unit chunk's document
    /// count differs from its view chunk's.
    pub fn cover_text_units(&mut self, units: Vec<TextUnit>) -> Result<(), IndexError> {
        let Some(t) = self.unit_postings() else {
            return Err(IndexError::Inconsistent("the view has no unit texts".into()));
        };
        self.text = Some(t.covered_by(units, &self.chunk_lens())?);
        Ok(())
    }

    /// The BM25 part of every chunk, as each chunk's own part holds it (unit texts read
    /// whole): for references, digests and checks. `None` if the BM25 postings are not
    /// loaded; `Err` says why a unit text could not be read.
    pub fn chunk_texts(&self) -> Option<Result<Vec<Arc<TextChunk>>, String>> {
        if let Some(p) = &self.text_parts {
            return Some(Ok(p.clone()));
        }
        self.text.as_ref().map(postings::Postings::chunk_texts)
    }

    /// Heap bytes of the view's BM25 postings (unit heads and resident unit texts, and
    /// the chunk parts it holds), estimated.
    pub fn text_bytes(&self) -> usize {
        self.text.as_ref().map_or(0, postings::Postings::heap_bytes)
    }

    /// Attaches a sparse model's parts (`None` for chunks without vectors of it).
    pub fn set_sparse(&mut self, model: &str, parts: Vec<Option<Arc<SparseChunk>>>) -> Result<(), IndexError> {
        self.set_sparse_from(model, parts, None)
    }

    /// [`CommitIndexes::set_sparse`] for a view assembled from `donor`, whose chunk `i` is
    /// the donor's chunk `from_donor[i]` (the same chunk key) or new: the dimension
    /// directory is derived from the donor's in O(chunks) instead of read from every part.
    pub fn set_sparse_from(
        &mut self,
        model: &str,
        parts: Vec<Option<Arc<SparseChunk>>>,
        donor: Option<(&CommitIndexes, &[Option<usize>])>,
    ) -> Result<(), IndexError> {
        self.check_len("sparse", parts.len())?;
        let keys_of = |c: usize| sparse_keys(parts[c].as_deref());
        let size = |_: &u32| 0;
        let donor = donor.and_then(|(d, map)| Some((d.sparse_dirs.get(model)?, map)));
        let dir = Directory::derive_or_build(donor, parts.len(), keys_of, size);
        self.sparse_dirs.insert(model.to_string(), dir);
        self.sparse.insert(model.to_string(), parts);
        Ok(())
    }

    /// Heap bytes of the view's sparse dimension directories, estimated.
    pub fn directory_bytes(&self) -> usize {
        self.sparse_dirs.values().map(Directory::heap_bytes).sum::<usize>()
    }

    /// Attaches a dense model's parts (`None` for chunks without vectors of it). The
    /// model's dimension is that of its first part; parts of another dimension are left
    /// out (one dimension per model is validated upstream).
    pub fn set_dense(&mut self, model: &str, parts: Vec<Option<Arc<DenseChunk>>>) -> Result<(), IndexError> {
        self.set_dense_from(model, parts, None)
    }

    /// [`CommitIndexes::set_dense`] for a view assembled from a donor, as
    /// [`CommitIndexes::set_sparse_from`]: the row lists the donor's view of the model
    /// remembers are derived for the shared chunks instead of rebuilt (`inherit.rs`).
    pub fn set_dense_from(
        &mut self,
        model: &str,
        parts: Vec<Option<Arc<DenseChunk>>>,
        donor: Option<(&CommitIndexes, &[Option<usize>])>,
    ) -> Result<(), IndexError> {
        self.check_len("dense", parts.len())?;
        let mut view = DenseView::new(model, parts);
        if let Some((d, map)) = donor {
            self.check_len("donor map", map.len())?;
            if let Some(dd) = d.dense.get(model) {
                let inherited = InheritedRows::new(&view, dd, map);
                view.set_inherited(inherited);
            }
        }
        self.dense.insert(model.to_string(), view);
        Ok(())
    }

    /// Attaches a dense model's unit graphs: `(first chunk, chunk count, graph)` per unit,
    /// covering every chunk once, in order.
    pub fn set_graphs(&mut self, model: &str, units: Vec<(usize, usize, Arc<UnitGraph>)>) -> Result<(), IndexError> {
        let view = self
            .dense
            .get_mut(model)
            .ok_or_else(|| IndexError::Inconsistent(format!("unit graphs for `{model}` before its dense parts")))?;
        view.set_units(units, self.chunks.len())
    }

    /// Attaches unit graphs of another commit's node tree (`origin`, its root): the graphs a
    /// commit's approximate search walks when its repository takes them from a base
    /// commit instead of building its own. Every unit's chunks the view has are walked
    /// and returned; those it lacks are walked through, never returned; the view's chunks
    /// no unit covers are scanned exactly ([`DenseView::overlay_chunks`]). So the result
    /// is a function of this view and the base's units. Errors: [`IndexError::Inconsistent`]
    /// if a graph does not cover its parts or a mapped chunk's part is not the view's.
    /// `origin: None` marks the view's own units (every chunk mapped to itself).
    pub fn set_base_graphs(
        &mut self,
        model: &str,
        units: Vec<BaseUnit>,
        origin: Option<Hash>,
    ) -> Result<(), IndexError> {
        let chunks = self.chunks.len();
        let view = self
            .dense
            .get_mut(model)
            .ok_or_else(|| IndexError::Inconsistent(format!("unit graphs for `{model}` before its dense parts")))?;
        view.set_base_units(units, chunks, origin)
    }

    /// Attaches another view's edges (of the same edge trees).
    pub fn set_edge_view(&mut self, edges: Arc<EdgeView>) {
        self.edges = Some(edges);
    }

    /// Attaches the edge chunks (out-edges and in-edges, each in key order).
    pub fn set_edges(&mut self, out: Vec<Arc<EdgeChunk>>, inc: Vec<Arc<EdgeChunk>>) {
        self.edges = Some(Arc::new(EdgeView::new(out, inc)));
    }

    /// True if the parts `needs` names are loaded.
    pub fn satisfies(&self, needs: &IndexNeeds) -> bool {
        (!needs.text || self.text.is_some())
            && needs
                .sparse
                .iter()
                .all(|m| self.sparse.contains_key(m) || !self.has_sparse_model(m))
            && needs
                .dense
                .iter()
                .all(|m| self.dense.contains_key(m) || !self.has_dense_model(m))
            && (!needs.edges || self.edges.is_some())
            && needs
                .graphs
                .iter()
                .all(|m| self.dense.get(m).is_some_and(DenseView::has_units) || !self.has_dense_model(m))
    }

    /// The parameters.
    pub fn params(&self) -> &IndexParams {
        &self.params
    }

    /// The node chunks, in key order.
    pub fn chunks(&self) -> &[Arc<NodeChunk>] {
        &self.chunks
    }

    /// Chunk `c`'s first ordinal.
    pub fn offset(&self, c: usize) -> Ordinal {
        self.offsets[c]
    }

    /// Number of nodes (ordinals are `0..node_count()`).
    pub fn node_count(&self) -> u32 {
        self.offsets.last().copied().unwrap_or(0)
    }

    /// `(chunk, local)` of an ordinal (which must be below [`CommitIndexes::node_count`]).
    pub fn locate(&self, ordinal: Ordinal) -> (usize, Local) {
        let c = chunk_of(&self.offsets, ordinal);
        (c, ordinal - self.offsets[c])
    }

    /// The id at `ordinal`. Panics if out of range (ordinals come from this view).
    pub fn id(&self, ordinal: Ordinal) -> &str {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].ids().get(l as usize)
    }

    /// The length in characters of the id at `ordinal`. Panics if out of range.
    pub fn id_chars(&self, ordinal: Ordinal) -> usize {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].ids().chars(l as usize)
    }

    /// The id at `ordinal`, as a [`NodeId`] (a copy). Panics if out of range.
    pub fn node_id(&self, ordinal: Ordinal) -> NodeId {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].ids().node_id(l as usize)
    }

    /// The object hash of the node at `ordinal`.
    pub fn hash(&self, ordinal: Ordinal) -> Hash {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].hash(l)
    }

    /// The ordinal of `id`, if the commit has that node.
    pub fn ordinal(&self, id: &NodeId) -> Option<Ordinal> {
        let c = self
            .chunks
            .partition_point(|ch| ch.ids().first().is_some_and(|f| f <= id.as_str()));
        let c = c.checked_sub(1)?;
        self.chunks[c].local(id).map(|l| self.offsets[c] + l)
    }

    /// Every id, in ordinal order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.chunks.iter().flat_map(|c| c.ids().iter())
    }

    /// The text of the node at `ordinal` (read from its node object when the view's parts
    /// were stored or loaded). Errors: [`IndexError::UnreadableText`] if it can be read
    /// neither by range nor from its node object whole.
    pub fn text(&self, ordinal: Ordinal) -> Result<std::borrow::Cow<'_, str>, IndexError> {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].text(l).map_err(IndexError::UnreadableText)
    }

    /// The length in characters of the text of the node at `ordinal`.
    pub fn text_chars(&self, ordinal: Ordinal) -> usize {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].text_chars(l)
    }

    /// The labels of the node at `ordinal`, sorted.
    pub fn labels_of(&self, ordinal: Ordinal) -> Vec<&str> {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].labels_of(l)
    }

    /// Property `key` of the node at `ordinal`.
    pub fn prop(&self, ordinal: Ordinal, key: &str) -> Option<&Value> {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].prop(l, key)
    }

    /// Every property of the node at `ordinal`.
    pub fn props_of(&self, ordinal: Ordinal) -> BTreeMap<String, Value> {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].props_of(l)
    }

    /// The `(from, until)` validity bounds of the node at `ordinal` (open ends as
    /// `i64::MIN` / `i64::MAX`).
    pub fn validity(&self, ordinal: Ordinal) -> (i64, i64) {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].validity(l)
    }

    /// The dates the text of the node at `ordinal` mentions, sorted
    /// ([`crate::dates::text_dates`]).
    pub fn text_dates(&self, ordinal: Ordinal) -> &[crate::dates::DaySpan] {
        let (c, l) = self.locate(ordinal);
        self.chunks[c].text_dates(l)
    }

    /// The filter admitting every node.
    pub fn all(&self) -> Filter {
        Filter::all(Arc::clone(&self.offsets))
    }

    /// The filter admitting exactly `ordinals`.
    pub fn filter_of(&self, ordinals: impl IntoIterator<Item = Ordinal>) -> Filter {
        Filter::from_ordinals(Arc::clone(&self.offsets), ordinals)
    }

    /// A filter of one part per chunk, the chunks taken in parallel (a gate's first use
    /// in a view loaded whole makes ~15,600 label bitmaps at 1M nodes); the parts are
    /// collected in chunk order.
    fn filter_by(&self, f: impl Fn(&NodeChunk) -> FilterPart + Sync) -> Filter {
        use rayon::prelude::*;
        Filter::from_parts(
            Arc::clone(&self.offsets),
            self.chunks.par_iter().with_min_len(64).map(|c| f(c)).collect(),
        )
    }

    /// Nodes carrying every label of `labels` (every node if `labels` is empty).
    pub fn labels_all_of(&self, labels: &[String]) -> Filter {
        if labels.is_empty() {
            return self.all();
        }
        self.memo_labels(true, labels, &|c| {
            let mut acc: Option<Arc<roaring::RoaringBitmap>> = None;
            for l in labels {
                match (c.label(l), &mut acc) {
                    (None, _) => return FilterPart::Some(Arc::default()),
                    (Some(b), None) => acc = Some(Arc::clone(b)),
                    (Some(b), Some(a)) => *Arc::make_mut(a) &= &**b,
                }
            }
            FilterPart::Some(acc.unwrap_or_default())
        })
    }

    /// Nodes carrying at least one label of `labels` (none if `labels` is empty).
    pub fn labels_any_of(&self, labels: &[String]) -> Filter {
        self.memo_labels(false, labels, &|c| {
            let mut acc = roaring::RoaringBitmap::new();
            for l in labels {
                if let Some(b) = c.label(l) {
                    acc |= &**b;
                }
            }
            FilterPart::Some(Arc::new(acc))
        })
    }

    /// A label gate from the view's memo, or derived from the donor's (`inherit.rs`), or
    /// built with `part_of` per chunk, and remembered: repeated gates cost a clone (shared
    /// parts) instead of a walk of every chunk.
    fn memo_labels(&self, all: bool, labels: &[String], part_of: &(dyn Fn(&NodeChunk) -> FilterPart + Sync)) -> Filter {
        {
            let memo = self.label_memo.lock();
            if let Some((_, _, f)) = memo.iter().find(|(a, l, _)| *a == all && l.as_slice() == labels) {
                return f.clone();
            }
        }
        let f = self
            .inherited
            .as_ref()
            .and_then(|i| i.gate(self, all, labels, part_of))
            .unwrap_or_else(|| self.filter_by(part_of));
        let mut memo = self.label_memo.lock();
        if memo.len() >= LABEL_MEMO {
            memo.remove(0);
        }
        memo.push((all, labels.to_vec(), f.clone()));
        f
    }

    /// Nodes whose property `key` satisfies `pred`.
    pub fn prop_filter(&self, key: &str, pred: &PropertyPredicate) -> Filter {
        self.filter_by(|c| FilterPart::Some(Arc::new(c.filter_prop(key, pred))))
    }

    /// Nodes valid at `t_ms`, or `None` if every node is always valid.
    pub fn valid_at(&self, t_ms: i64) -> Option<Filter> {
        if self.always_valid {
            return None;
        }
        Some(self.filter_by(|c| match c.valid_at(t_ms) {
            None => FilterPart::All,
            Some(b) => FilterPart::Some(Arc::new(b)),
        }))
    }

    /// Labels of the commit with their node counts, in label order.
    pub fn label_counts(&self) -> Vec<(String, u64)> {
        let mut out: BTreeMap<&str, u64> = BTreeMap::new();
        for c in &self.chunks {
            for (l, n) in c.label_counts() {
                *out.entry(l).or_default() += n;
            }
        }
        out.into_iter().map(|(l, n)| (l.to_string(), n)).collect()
    }

    /// Dense models with vectors in the commit, with their dimension (that of the first
    /// chunk holding the model).
    pub fn dense_models(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for c in &self.chunks {
            for (m, (dim, _)) in c.dense_models() {
                out.entry(m.clone()).or_insert(*dim as usize);
            }
        }
        out
    }

    /// True if some node has a vector of dense model `model`.
    pub fn has_dense_model(&self, model: &str) -> bool {
        self.chunks.iter().any(|c| c.dense_models().contains_key(model))
    }

    /// Sparse models with vectors in the commit.
    pub fn sparse_models(&self) -> BTreeSet<String> {
        self.chunks
            .iter()
            .flat_map(|c| c.sparse_models().keys().cloned())
            .collect()
    }

    /// True if some node has a vector of sparse model `model`.
    pub fn has_sparse_model(&self, model: &str) -> bool {
        self.chunks.iter().any(|c| c.sparse_models().contains_key(model))
    }

    /// True if `model`'s sparse parts are loaded.
    pub fn sparse_loaded(&self, model: &str) -> bool {
        self.sparse.contains_key(model)
    }

    /// Chunk `c`'s BM25 part, if the view holds it: every chunk's, for a view given them
    /// all ([`CommitIndexes::set_text`]); else the parts of the chunks no unit covers
    /// ([`CommitIndexes::chunk_texts`] reads any chunk's).
    pub fn text_part(&self, c: usize) -> Option<&Arc<TextChunk>> {
        match &self.text_parts {
            Some(p) => p.get(c),
            None => self.text.as_ref().and_then(|t| t.own(c)),
        }
    }

    /// Chunk `c`'s sparse part of `model`, if loaded and present.
    pub fn sparse_part(&self, model: &str, c: usize) -> Option<&Arc<SparseChunk>> {
        self.sparse.get(model).and_then(|p| p.get(c)).and_then(Option::as_ref)
    }

    /// Builds and attaches the unit graphs of dense model `model` in memory (the
    /// repository builds, stores and shares them instead): the units of
    /// [`crate::unit`], each graph seeded from its chunks' content.
    pub fn build_unit_graphs(&mut self, model: &str) -> Result<(), IndexError> {
        use crate::unit::{build_unit_graph, unit_seed};
        let dense = self
            .dense
            .get(model)
            .ok_or_else(|| IndexError::NotLoaded(format!("dense:{model}")))?;
        let mut units = Vec::new();
        for (range, key) in self.memory_units() {
            let parts: Vec<&DenseChunk> = range
                .clone()
                .filter_map(|c| dense.part(c).map(|p| p.as_ref()))
                .collect();
            for p in &parts {
                p.check_codes()
                    .map_err(|why| IndexError::BadStoredIndex(format!("dense:{model} part: {why}")))?;
            }
            let seed = unit_seed(&self.params.graph, &key);
            let g = build_unit_graph(&parts, &self.params.graph, seed);
            units.push((range.start, range.len(), Arc::new(g)));
        }
        self.set_graphs(model, units)
    }

    /// The units of [`crate::unit`] over this view's chunks, for units built in memory
    /// (the repository keys its stored units by their chunk keys instead): each as its
    /// range of chunks and a key, blake3 over the chunks' first ids concatenated.
    fn memory_units(&self) -> Vec<(std::ops::Range<usize>, Hash)> {
        use crate::unit::{chunk_levels, unit_ranges};
        fn first(c: &NodeChunk) -> &[u8] {
            c.ids().get(0).as_bytes()
        }
        unit_ranges(&chunk_levels(self.chunks.iter().map(|c| first(c))))
            .into_iter()
            .map(|range| {
                let bytes: Vec<u8> = self.chunks[range.clone()]
                    .iter()
                    .flat_map(|c| first(c).iter().copied())
                    .collect();
                (range, Hash::of(&bytes))
            })
            .collect()
    }

    /// The loaded dense view of `model`.
    pub fn dense(&self, model: &str) -> Option<&DenseView> {
        self.dense.get(model)
    }

    /// The loaded edges.
    pub fn edges(&self) -> Option<&Arc<EdgeView>> {
        self.edges.as_ref()
    }

    /// blake3 over the stored encoding (`persist`, with zero keys) of every loaded part, in
    /// chunk order: equal digests mean equal views, part for part. For tests and tools
    /// that compare views across processes and histories.
    pub fn digest(&self) -> Hash {
        use crate::persist;
        let z = Hash::ZERO;
        let mut h = blake3::Hasher::new();
        // A unit text that cannot be read leaves its chunks' text parts out: such a view's
        // digest differs.
        let texts = self.chunk_texts().and_then(Result::ok);
        for (c, core) in self.chunks.iter().enumerate() {
            let n = core.len() as u32;
            h.update(&persist::encode_node_core(&z, core));
            if let Some(t) = &texts {
                h.update(&persist::encode_text(&z, &t[c]));
            }
            for (m, parts) in &self.sparse {
                if let Some(p) = &parts[c] {
                    h.update(&persist::encode_sparse(&z, m, n, p));
                }
            }
            for (m, d) in &self.dense {
                if let Some(p) = d.part(c) {
                    h.update(&persist::encode_dense(&z, m, n, p));
                }
            }
        }
        if let Some(e) = &self.edges {
            for c in e.out_chunks() {
                h.update(&persist::encode_edges(&z, EdgeDirection::Out, c));
            }
            for c in e.in_chunks() {
                h.update(&persist::encode_edges(&z, EdgeDirection::In, c));
            }
        }
        Hash::from_bytes(*h.finalize().as_bytes())
    }

    /// Builds a complete view in memory (every part loaded) from a commit's nodes (with
    /// their object hashes) and edges — for tests, evaluation and tools; the repository
    /// assembles views from stored chunks instead. Nodes in any order (sorted here; a
    /// repeated id keeps its last entry); chunks are cut by the same rule as the
    /// repository's (`storage-format.md` §7.2), the byte limit counting each node's
    /// canonical encoding. Edges whose endpoints are not nodes are left out.
    ///
    /// ```
    /// use cairn_core::{Hash, Node, NodeId};
    /// use cairn_index::{CommitIndexes, IndexParams};
    /// let nodes: Vec<(Hash, Node)> = ["b", "a"]
    ///     .iter()
    ///     .map(|id| (Hash::of(id.as_bytes()), Node::new(NodeId::new(*id).unwrap()).with_text("wing stall")))
    ///     .collect();
    /// let ix = CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[]);
    /// assert_eq!(ix.node_count(), 2);
    /// assert_eq!(ix.id(0), "a");
    /// assert_eq!(ix.text_search("stall", 10, None).unwrap().len(), 2);
    /// ```
    pub fn build(key: Hash, params: &IndexParams, nodes: &[(Hash, Node)], edges: &[Edge]) -> CommitIndexes {
        let mut sorted: Vec<&(Hash, Node)> = nodes.iter().rev().collect();
        sorted.sort_by(|a, b| a.1.id.cmp(&b.1.id));
        sorted.dedup_by(|later, first| later.1.id == first.1.id);
        let levels: Vec<u8> = sorted
            .iter()
            .map(|(_, n)| key_level(n.id.as_str().as_bytes()))
            .collect();
        let sizes: Vec<usize> = sorted.iter().map(|(_, n)| codec::encode_node(n).len()).collect();
        let rule = SplitRule {
            max_keys: MAX_CHUNK_KEYS,
            max_bytes: MAX_CHUNK_BYTES,
        };
        let mut all_parts = Vec::new();
        for span in spans(&levels, &sizes, CHUNK_LEVEL, rule) {
            let members: Vec<(Hash, &Node)> = sorted[span.range()].iter().map(|(h, n)| (*h, n)).collect();
            all_parts.push(ChunkParts::build(params, &members));
        }
        let mut ix = CommitIndexes::assemble(
            key,
            params.clone(),
            all_parts.iter().map(|p| Arc::new(p.core.clone())).collect(),
        )
        .unwrap_or_else(|e| unreachable!("chunks of a sorted node list: {e}"));
        let text = all_parts.iter().map(|p| Arc::new(p.text.clone())).collect();
        let _ = ix.set_text(text);
        let sparse_models: BTreeSet<String> = all_parts.iter().flat_map(|p| p.sparse.keys().cloned()).collect();
        for m in sparse_models {
            let parts = all_parts
                .iter()
                .map(|p| p.sparse.get(&m).cloned().map(Arc::new))
                .collect();
            let _ = ix.set_sparse(&m, parts);
        }
        let dense_models: BTreeSet<String> = all_parts.iter().flat_map(|p| p.dense.keys().cloned()).collect();
        for m in dense_models {
            let parts = all_parts
                .iter()
                .map(|p| p.dense.get(&m).cloned().map(Arc::new))
                .collect();
            let _ = ix.set_dense(&m, parts);
        }
        let present: BTreeSet<&NodeId> = sorted.iter().map(|(_, n)| &n.id).collect();
        let kept: Vec<&Edge> = edges
            .iter()
            .filter(|e| present.contains(&e.source) && present.contains(&e.target))
            .collect();
        let out = edge_chunks(&kept, EdgeDirection::Out);
        let inc = edge_chunks(&kept, EdgeDirection::In);
        ix.set_edges(out, inc);
        ix
    }
}

/// A sparse part's `(dimension, dimension index, postings)` triples.
fn sparse_keys(p: Option<&SparseChunk>) -> impl Iterator<Item = (&u32, u32, u32)> + '_ {
    p.into_iter().flat_map(|p| {
        p.dims
            .iter()
            .enumerate()
            .map(|(i, d)| (d, i as u32, p.postings_at(i).len() as u32))
    })
}

/// Moves one chunk's touched documents (local ordinals, increasing) with their `f64` sums
/// into `hits` at the chunk's offset `base`, each sum rounded to `f32` once; keeps `hits`
/// bounded by pruning to the best `k` when it grows large.
pub(crate) fn push_chunk_hits(hits: &mut Vec<Hit>, base: Ordinal, touched: &mut Vec<Local>, sums: &[f64], k: usize) {
    hits.extend(touched.drain(..).map(|l| Hit {
        ordinal: base + l,
        score: sums[l as usize] as f32,
    }));
    if hits.len() > 8 * k + 4096 {
        *hits = crate::hit::top_k_vec(std::mem::take(hits), k);
    }
}

/// The edge chunks of an edge set in one direction, cut by the chunk rule over the tree
/// keys (a repeated key keeps its last edge).
fn edge_chunks(edges: &[&Edge], direction: EdgeDirection) -> Vec<Arc<EdgeChunk>> {
    let key = |e: &Edge| match direction {
        EdgeDirection::Out => codec::edge_tree_key(&e.source, &e.kind, &e.target),
        EdgeDirection::In => codec::edge_in_tree_key(&e.source, &e.kind, &e.target),
    };
    let mut keyed: Vec<(Vec<u8>, &Edge)> = edges.iter().rev().map(|e| (key(e), *e)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.dedup_by(|later, first| later.0 == first.0);
    let levels: Vec<u8> = keyed.iter().map(|(k, _)| key_level(k)).collect();
    let sizes: Vec<usize> = keyed.iter().map(|(_, e)| codec::encode_edge(e).len()).collect();
    let rule = SplitRule {
        max_keys: MAX_CHUNK_KEYS,
        max_bytes: MAX_CHUNK_BYTES,
    };
    spans(&levels, &sizes, CHUNK_LEVEL, rule)
        .into_iter()
        .map(|s| {
            let members: Vec<Edge> = keyed[s.range()].iter().map(|(_, e)| (*e).clone()).collect();
            Arc::new(EdgeChunk::build(direction, &members))
        })
        .collect()
}
