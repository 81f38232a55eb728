//! The in-memory cache of derived data: parts by store key (byte-bounded LRU), assembled
//! views by view key, and resolved chunk lists by tree root (both small LRUs). Only ever
//! a cache: an evicted entry is loaded or rebuilt on next use, with the same bytes.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_core::Hash;
use cairn_index::{CommitIndexes, DenseChunk, EdgeChunk, NodeChunk, SparseChunk, TextChunk, UnitGraph, UnitText};
use parking_lot::Mutex;

use crate::derived::hashed::BytesMap;
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

/// A least-recently-used map. A read only stamps its entry with the next tick; the
/// order keeps each key once, under the tick it was put or last moved at, and eviction
/// moves a key whose entry was read since to its entry's tick before it evicts anything:
/// the same entries leave, in the same order, as if each read moved its key (without a
/// key copy and two tree updates per read).
struct Lru<K, V> {
    map: BytesMap<K, Entry<V>>,
    order: BTreeMap<u64, K>,
    tick: u64,
    bytes: usize,
}

struct Entry<V> {
    value: V,
    /// The tick of the last put or read.
    used: u64,
    /// The tick the key is under in the order.
    placed: u64,
    size: usize,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> Lru<K, V> {
    fn new() -> Self {
        Lru {
            map: BytesMap::default(),
            order: BTreeMap::new(),
            tick: 0,
            bytes: 0,
        }
    }

    fn get(&mut self, k: &K) -> Option<V> {
        self.tick += 1;
        let e = self.map.get_mut(k)?;
        e.used = self.tick;
        Some(e.value.clone())
    }

    /// The most recently used entry's key (a scan, for the few views; ticks are unique,
    /// so the map's order does not matter).
    fn last(&self) -> Option<&K> {
        self.map.iter().max_by_key(|(_, e)| e.used).map(|(k, _)| k)
    }

    fn put(&mut self, k: K, v: V, size: usize) {
        self.tick += 1;
        if let Some(e) = self.map.remove(&k) {
            self.order.remove(&e.placed);
            self.bytes -= e.size;
        }
        self.order.insert(self.tick, k.clone());
        self.map.insert(
            k,
            Entry {
                value: v,
                used: self.tick,
                placed: self.tick,
                size,
            },
        );
        self.bytes += size;
    }

    /// Evicts least recently used entries until `fits(bytes, len)`; returns them, for the
    /// caller to drop where it chooses (outside the lock, or on another thread).
    #[must_use = "the evicted entries are dropped where the caller chooses"]
    fn evict(&mut self, fits: impl Fn(usize, usize) -> bool) -> Vec<V> {
        let mut out = Vec::new();
        while !fits(self.bytes, self.map.len()) {
            let Some((_, k)) = self.order.pop_first() else { break };
            let Some(e) = self.map.get_mut(&k) else { continue };
            if e.used != e.placed {
                // Read since it was placed: moved to where the read put it.
                e.placed = e.used;
                self.order.insert(e.used, k);
            } else if let Some(e) = self.map.remove(&k) {
                self.bytes -= e.size;
                out.push(e.value);
            }
        }
        out
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
    /// The node tree `nodes` lists.
    pub(crate) node_root: Option<Hash>,
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

    /// The part under `key`, else [`Part::Split`] if `split` (the chunk's split marker's
    /// key) is cached: both asked under one lock.
    pub(crate) fn part_or_split(&self, key: &Vec<u8>, split: Option<&Vec<u8>>) -> Option<Part> {
        let mut parts = self.parts.lock();
        parts.get(key).or_else(|| parts.get(split?))
    }

    /// Makes room in the part table for `n` more entries (a view about to load whole).
    pub(crate) fn reserve_parts(&self, n: usize) {
        self.parts.lock().map.reserve(n);
    }

    pub(crate) fn put_part(&self, key: Vec<u8>, part: Part) {
        let size = part.bytes() + key.len();
        let cap = *self.capacity.lock();
        let evicted = {
            let mut parts = self.parts.lock();
            parts.put(key, part, size);
            parts.evict(|bytes, _| bytes <= cap)
        };
        // Dropped outside the lock: other threads' lookups do not wait for the frees.
        drop(evicted);
    }

    pub(crate) fn view(&self, key: &Hash) -> Option<ViewEntry> {
        self.views.lock().get(key)
    }

    /// The most recently used view, if any.
    pub(crate) fn recent_view(&self) -> Option<ViewEntry> {
        let views = self.views.lock();
        let k = views.last()?;
        views.map.get(k).map(|e| e.value.clone())
    }

    /// Caches the view under `key`; returns the views it evicted, for the caller to drop off
    /// the query's path (a view of a large commit frees thousands of parts' references).
    #[must_use = "the evicted views are dropped where the caller chooses"]
    pub(crate) fn put_view(&self, key: Hash, entry: ViewEntry) -> Vec<ViewEntry> {
        let mut views = self.views.lock();
        views.put(key, entry, 0);
        views.evict(|_, n| n <= VIEWS)
    }

    pub(crate) fn list(&self, tree: u8, root: &Hash) -> Option<ListEntry> {
        self.lists.lock().get(&(tree, *root))
    }

    pub(crate) fn put_list(&self, tree: u8, root: Hash, list: ListEntry) {
        let evicted = {
            let mut lists = self.lists.lock();
            lists.put((tree, root), list, 0);
            lists.evict(|_, n| n <= CHUNK_LISTS)
        };
        drop(evicted);
    }

    /// Sets the part cache's byte budget (evicting at once if it shrinks).
    pub(crate) fn set_capacity(&self, bytes: usize) {
        *self.capacity.lock() = bytes;
        let evicted = self.parts.lock().evict(|b, _| b <= bytes);
        drop(evicted);
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

#[cfg(test)]
mod tests {
    use super::Lru;

    /// What an LRU that moves each key on every read evicts, for a sequence of puts
    /// (`Some(size)`) and reads (`None`) of keys 0..4, after each step down to `cap` bytes.
    fn reference(ops: &[(u8, Option<usize>)], cap: usize) -> Vec<Vec<u8>> {
        let mut order: Vec<(u8, usize)> = Vec::new();
        let mut out = Vec::new();
        for &(k, op) in ops {
            let at = order.iter().position(|(o, _)| *o == k);
            match (op, at) {
                (Some(size), at) => {
                    if let Some(i) = at {
                        order.remove(i);
                    }
                    order.push((k, size));
                }
                (None, Some(i)) => {
                    let e = order.remove(i);
                    order.push(e);
                }
                (None, None) => {}
            }
            while order.iter().map(|(_, s)| s).sum::<usize>() > cap {
                order.remove(0);
            }
            let mut keys: Vec<u8> = order.iter().map(|(k, _)| *k).collect();
            keys.sort_unstable();
            out.push(keys);
        }
        out
    }

    #[test]
    fn reads_stamp_entries_and_eviction_follows_use() {
        // A fixed pseudo-random sequence of puts and reads over four keys.
        let mut rng = cairn_testkit::Rng(0x2545_f491_4f6c_dd1d);
        let ops: Vec<(u8, Option<usize>)> = (0..400)
            .map(|_| {
                let x = rng.next();
                let k = (x % 4) as u8;
                let op = (x >> 8).is_multiple_of(3);
                (k, op.then_some(1 + ((x >> 16) % 3) as usize))
            })
            .collect();
        for cap in [1, 2, 3, 5, 8] {
            let mut lru: Lru<Vec<u8>, u8> = Lru::new();
            let mut got = Vec::new();
            for &(k, op) in &ops {
                match op {
                    Some(size) => lru.put(vec![k], k, size),
                    None => {
                        if let Some(v) = lru.get(&vec![k]) {
                            assert_eq!(v, k);
                        }
                    }
                }
                let before: Vec<u8> = lru.map.keys().map(|k| k[0]).collect();
                let mut evicted = lru.evict(|bytes, _| bytes <= cap);
                let mut keys: Vec<u8> = lru.map.keys().map(|k| k[0]).collect();
                keys.sort_unstable();
                // What `evict` hands back is exactly what left the map.
                let mut left: Vec<u8> = before.into_iter().filter(|k| !keys.contains(k)).collect();
                left.sort_unstable();
                evicted.sort_unstable();
                assert_eq!(evicted, left);
                got.push(keys);
                assert_eq!(lru.order.len(), lru.map.len());
            }
            assert_eq!(got, reference(&ops, cap), "cap {cap}");
        }
    }
}
