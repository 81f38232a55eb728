//! The in-memory cache of derived data: parts by store key (byte-bounded LRU), assembled
//! views by view key, and resolved chunk lists by tree root (both small LRUs). Only ever
//! a cache: an evicted entry is loaded or rebuilt on next use, with the same bytes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cairn_core::Hash;
use cairn_index::{CommitIndexes, DenseChunk, EdgeChunk, NodeChunk, SparseChunk, TextChunk, UnitGraph, UnitText};
use parking_lot::Mutex;

use crate::derived::spans::{ChunkList, SpanMemo};

/// Default memory budget of a repository handle's derived data, 1 GiB
/// ([`Repo::set_memory_budget`](crate::Repo::set_memory_budget)).
pub const DEFAULT_MEMORY_BUDGET: usize = 1 << 30;
/// Views kept.
const VIEWS: usize = 4;
/// Resolved chunk lists kept.
const CHUNK_LISTS: usize = 16;

/// One cached part.
#[derive(Clone)]
pub(crate) enum Part {
    Core(Arc<NodeChunk>),
    Text(Arc<TextChunk>),
    Sparse(Arc<SparseChunk>),
    Dense(Arc<DenseChunk>),
    Edges(Arc<EdgeChunk>),
    /// The span is oversize: its pieces are the chunks.
    Split,
    Graph(Arc<UnitGraph>),
    /// A unit's text postings (its head alone when read by range).
    UnitText(Arc<UnitText>),
}

impl Part {
    fn bytes(&self) -> usize {
        64 + match self {
            Part::Core(c) => c.heap_bytes(),
            Part::Text(t) => t.heap_bytes(),
            Part::Sparse(s) => s.heap_bytes(),
            Part::Dense(d) => d.heap_bytes(),
            Part::Edges(e) => e.heap_bytes(),
            Part::Split => 0,
            Part::Graph(g) => g.heap_bytes(),
            Part::UnitText(u) => u.heap_bytes(),
        }
    }
}

struct Lru<K, V> {
    map: HashMap<K, (V, u64, usize)>,
    order: BTreeMap<u64, K>,
    tick: u64,
    bytes: usize,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> Lru<K, V> {
    fn new() -> Self {
        Lru {
            map: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
            bytes: 0,
        }
    }

    fn get(&mut self, k: &K) -> Option<V> {
        self.tick += 1;
        let tick = self.tick;
        let (v, t, _) = self.map.get_mut(k)?;
        self.order.remove(t);
        *t = tick;
        self.order.insert(tick, k.clone());
        Some(v.clone())
    }

    fn put(&mut self, k: K, v: V, size: usize) {
        self.tick += 1;
        if let Some((_, t, s)) = self.map.remove(&k) {
            self.order.remove(&t);
            self.bytes -= s;
        }
        self.order.insert(self.tick, k.clone());
        self.map.insert(k, (v, self.tick, size));
        self.bytes += size;
    }

    /// Evicts least recently used entries until `fits(bytes, len)`.
    fn evict(&mut self, fits: impl Fn(usize, usize) -> bool) {
        while !fits(self.bytes, self.map.len()) {
            let Some((_, k)) = self.order.pop_first() else { break };
            if let Some((_, _, s)) = self.map.remove(&k) {
                self.bytes -= s;
            }
        }
    }

    fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
        self.bytes = 0;
    }
}

/// An assembled view with what it was assembled from: the node tree's resolved chunk list
/// and the edge roots (so the next commit's view can take over every part it shares).
#[derive(Clone)]
pub(crate) struct ViewEntry {
    pub(crate) view: Arc<CommitIndexes>,
    pub(crate) nodes: Arc<ChunkList>,
    /// Where each upper node of the node tree has its chunks in `nodes`.
    pub(crate) memo: Arc<SpanMemo>,
    pub(crate) edge_roots: (Option<Hash>, Option<Hash>),
}

/// A tree's resolved chunk list and its upper nodes' places in it.
pub(crate) type ListEntry = (Arc<ChunkList>, Arc<SpanMemo>);

/// The repository's derived-data cache.
pub(crate) struct DerivedCache {
    parts: Mutex<Lru<Vec<u8>, Part>>,
    views: Mutex<Lru<Hash, ViewEntry>>,
    lists: Mutex<Lru<(u8, Hash), ListEntry>>,
    capacity: Mutex<usize>,
    /// Serialises builds, so two queries needing the same missing chunks build them once.
    pub(crate) build: Mutex<()>,
}

impl Default for DerivedCache {
    fn default() -> Self {
        DerivedCache {
            parts: Mutex::new(Lru::new()),
            views: Mutex::new(Lru::new()),
            lists: Mutex::new(Lru::new()),
            capacity: Mutex::new(DEFAULT_MEMORY_BUDGET),
            build: Mutex::new(()),
        }
    }
}

impl DerivedCache {
    pub(crate) fn part(&self, key: &Vec<u8>) -> Option<Part> {
        self.parts.lock().get(key)
    }

    pub(crate) fn put_part(&self, key: Vec<u8>, part: Part) {
        let size = part.bytes() + key.len();
        let cap = *self.capacity.lock();
        let mut parts = self.parts.lock();
        parts.put(key, part, size);
        parts.evict(|bytes, _| bytes <= cap);
    }

    pub(crate) fn view(&self, key: &Hash) -> Option<ViewEntry> {
        self.views.lock().get(key)
    }

    /// The most recently used view, if any.
    pub(crate) fn recent_view(&self) -> Option<ViewEntry> {
        let views = self.views.lock();
        let (_, k) = views.order.last_key_value()?;
        views.map.get(k).map(|e| e.0.clone())
    }

    pub(crate) fn put_view(&self, key: Hash, entry: ViewEntry) {
        let mut views = self.views.lock();
        views.put(key, entry, 0);
        views.evict(|_, n| n <= VIEWS);
    }

    pub(crate) fn list(&self, tree: u8, root: &Hash) -> Option<ListEntry> {
        self.lists.lock().get(&(tree, *root))
    }

    pub(crate) fn put_list(&self, tree: u8, root: Hash, list: ListEntry) {
        let mut lists = self.lists.lock();
        lists.put((tree, root), list, 0);
        lists.evict(|_, n| n <= CHUNK_LISTS);
    }

    /// Sets the part cache's byte budget (evicting at once if it shrinks).
    pub(crate) fn set_capacity(&self, bytes: usize) {
        *self.capacity.lock() = bytes;
        self.parts.lock().evict(|b, _| b <= bytes);
    }

    /// The part cache's byte budget.
    pub(crate) fn capacity(&self) -> usize {
        *self.capacity.lock()
    }

    /// Bytes the part cache holds (estimated).
    pub(crate) fn bytes(&self) -> usize {
        self.parts.lock().bytes
    }

    /// Drops everything (after derived data was deleted or rebuilt).
    pub(crate) fn clear(&self) {
        self.parts.lock().clear();
        self.views.lock().clear();
        self.lists.lock().clear();
    }
}
