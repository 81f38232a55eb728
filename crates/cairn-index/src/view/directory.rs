//! [`Directory`]: which chunks of a view hold a key (a BM25 term, a sparse dimension), so
//! a lane reads the chunks its query's postings are in instead of probing every chunk.
//!
//! A directory is memory only (never stored) and changes no score: a lane reads the same
//! postings through it as it would by probing every chunk, in the same order, so results
//! equal a probe of every chunk bit for bit. It has two layers:
//!
//! * a **base**: for each key (sorted), the `(chunk, slot)` entries holding it, where
//!   `chunk` indexes the chunk list the base was built over and `slot` is the key's
//!   position inside that chunk's part (term index, dimension index);
//! * an **overlay** naming what changed since: each base chunk's position in this view
//!   (or that it is gone), and the view's chunks the base has never seen (`added`),
//!   which a lookup probes one by one.
//!
//! A view assembled from a donor (its parent's view, usually) derives its directory from
//! the donor's in O(chunks) integer work — no key is touched — and a one-node commit adds
//! one or two chunks to the overlay. Once the overlay holds more than
//! `REBUILD_MIN_ADDED + chunks / REBUILD_DIVISOR` chunks the base is rebuilt from the
//! view, so a lookup never probes more than that many chunks beyond its postings'.
//! The layering depends on history; the entries a lookup yields do not.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::Arc;

use rayon::prelude::*;

use crate::fast_hash::FastMap;

/// Overlay chunks always tolerated before a rebuild.
pub(crate) const REBUILD_MIN_ADDED: usize = 64;
/// … plus one per this many chunks of the view.
pub(crate) const REBUILD_DIVISOR: usize = 32;

/// `u32::MAX`: a base chunk absent from the view.
const GONE: u32 = u32::MAX;

/// One chunk holding a key: the chunk (of the base), and the key's slot in the chunk's
/// part with its posting count there, packed in one word (slot above [`COUNT_BITS`]) when
/// the slot is below `2^19 − 1` and the count below `2^13` — always, for chunks of at most
/// 4,096 nodes and half a million distinct keys — else [`ESCAPED`], with the pair in
/// [`Base::escaped`]. Eight bytes an entry instead of twelve: at 1M nodes the term
/// directory holds ~21M entries.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    chunk: u32,
    packed: u32,
}

/// Bits of [`Entry::packed`] holding the count.
const COUNT_BITS: u32 = 13;
/// [`Entry::packed`] of an entry whose slot and count are in [`Base::escaped`] (never a
/// packed pair: a packed slot is below `2^19 − 1`).
const ESCAPED: u32 = u32::MAX;

impl Entry {
    /// The entry, and whether its pair must be kept aside (escaped).
    fn new(chunk: u32, slot: u32, count: u32) -> (Entry, bool) {
        if slot < (1 << (32 - COUNT_BITS)) - 1 && count < 1 << COUNT_BITS {
            let packed = slot << COUNT_BITS | count;
            (Entry { chunk, packed }, false)
        } else {
            (Entry { chunk, packed: ESCAPED }, true)
        }
    }
}

/// Every key of every chunk at build time, as a compressed table.
#[derive(Debug)]
struct Base<K> {
    /// Distinct keys, increasing.
    keys: Vec<K>,
    /// Key `i`'s entries are `entries[starts[i]..starts[i + 1]]`.
    starts: Vec<u32>,
    /// Increasing by chunk within a key.
    entries: Vec<Entry>,
    /// `(slot, count)` of the entries (by index) that do not pack ([`Entry`]).
    escaped: FastMap<u32, (u32, u32)>,
    /// Estimated heap bytes of the keys.
    key_bytes: usize,
}

impl<K> Base<K> {
    /// `(slot, count)` of the entry at index `j`.
    #[inline]
    fn slot_count(&self, j: usize, e: &Entry) -> (u32, u32) {
        if e.packed == ESCAPED {
            self.escaped.get(&(j as u32)).copied().unwrap_or_default()
        } else {
            (e.packed >> COUNT_BITS, e.packed & ((1 << COUNT_BITS) - 1))
        }
    }
}

impl<K: Ord> Base<K> {
    /// Builds over `chunks` chunks, `keys_of(c)` listing chunk `c`'s `(key, slot, count)`
    /// triples (each key once per chunk); `size(k)` estimates a key's heap bytes.
    ///
    /// Each key is hashed once: contiguous ranges of chunks intern their keys in parallel
    /// (a local id per key), the ranges' keys are merged in range order and sorted once,
    /// and a counting pass places every entry — chunk by chunk, so each key's entries are
    /// in chunk order. The ranges change the speed, never the table.
    fn build<'a, Q, I>(chunks: usize, keys_of: impl Fn(usize) -> I + Sync, size: impl Fn(&Q) -> usize) -> Base<K>
    where
        Q: ?Sized + Ord + Hash + Sync + ToOwned<Owned = K> + 'a,
        I: Iterator<Item = (&'a Q, u32, u32)>,
    {
        /// One range's keys in first-seen order, and each of its entries' local key id.
        struct Piece<'q, Q: ?Sized> {
            keys: Vec<&'q Q>,
            ids: Vec<u32>,
        }
        let pieces_n = (rayon::current_num_threads() * 4).clamp(1, chunks.max(1));
        let bounds: Vec<usize> = (0..=pieces_n).map(|p| p * chunks / pieces_n).collect();
        let pieces: Vec<Piece<'a, Q>> = (0..pieces_n)
            .into_par_iter()
            .map(|p| {
                let mut local: FastMap<&Q, u32> = FastMap::default();
                let mut keys = Vec::new();
                let mut ids = Vec::new();
                for c in bounds[p]..bounds[p + 1] {
                    for (k, _, _) in keys_of(c) {
                        let id = *local.entry(k).or_insert_with(|| {
                            keys.push(k);
                            keys.len() as u32 - 1
                        });
                        ids.push(id);
                    }
                }
                Piece { keys, ids }
            })
            .collect();
        // Every piece's local ids as global ones (first seen in piece order).
        let mut global: FastMap<&Q, u32> = FastMap::default();
        let mut keys: Vec<&Q> = Vec::new();
        let to_global: Vec<Vec<u32>> = pieces
            .iter()
            .map(|piece| {
                piece
                    .keys
                    .iter()
                    .map(|k| {
                        *global.entry(*k).or_insert_with(|| {
                            keys.push(*k);
                            keys.len() as u32 - 1
                        })
                    })
                    .collect()
            })
            .collect();
        drop(global);
        // Global id → its rank among the sorted keys.
        let mut order: Vec<u32> = (0..keys.len() as u32).collect();
        order.sort_unstable_by(|a, b| keys[*a as usize].cmp(keys[*b as usize]));
        let mut rank = vec![0u32; keys.len()];
        for (r, g) in order.iter().enumerate() {
            rank[*g as usize] = r as u32;
        }
        let to_rank: Vec<Vec<u32>> = to_global
            .into_iter()
            .map(|m| m.into_iter().map(|g| rank[g as usize]).collect())
            .collect();
        let mut counts = vec![0u32; keys.len()];
        for (piece, map) in pieces.iter().zip(&to_rank) {
            for id in &piece.ids {
                counts[map[*id as usize] as usize] += 1;
            }
        }
        let mut starts = Vec::with_capacity(keys.len() + 1);
        let mut at = 0u32;
        for n in &counts {
            starts.push(at);
            at += n;
        }
        starts.push(at);
        drop(counts);
        // Fill, chunk by chunk (the ids follow the same iteration as pass 1).
        let mut cursor: Vec<u32> = starts[..starts.len() - 1].to_vec();
        let mut entries = vec![Entry::default(); at as usize];
        let mut escaped = FastMap::default();
        for (p, (piece, map)) in pieces.iter().zip(&to_rank).enumerate() {
            let mut ids = piece.ids.iter();
            for c in bounds[p]..bounds[p + 1] {
                for ((_, slot, count), id) in keys_of(c).zip(ids.by_ref()) {
                    let rank = map[*id as usize] as usize;
                    let w = &mut cursor[rank];
                    let (entry, aside) = Entry::new(c as u32, slot, count);
                    entries[*w as usize] = entry;
                    if aside {
                        escaped.insert(*w, (slot, count));
                    }
                    *w += 1;
                }
            }
        }
        drop(cursor);
        let key_bytes = keys.iter().map(|k| size(k)).sum();
        Base {
            keys: order.iter().map(|g| keys[*g as usize].to_owned()).collect(),
            starts,
            entries,
            escaped,
            key_bytes,
        }
    }

    /// The index of `key`.
    fn position<Q: Ord + ?Sized>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
    {
        self.keys.binary_search_by(|k| k.borrow().cmp(key)).ok()
    }

    /// Key `i`'s entries, and the index of the first.
    fn entries_of(&self, i: usize) -> (&[Entry], usize) {
        let first = self.starts[i] as usize;
        (&self.entries[first..self.starts[i + 1] as usize], first)
    }

    fn heap_bytes(&self) -> usize {
        self.key_bytes
            + self.keys.len() * (std::mem::size_of::<K>() + 12)
            + self.entries.len() * std::mem::size_of::<Entry>()
            + self.escaped.len() * 24
    }
}

/// Key → the chunks of one view holding it (module docs). Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Directory<K> {
    base: Arc<Base<K>>,
    /// Base chunk → its chunk in this view, or [`GONE`]; `None`: the identity.
    to_view: Option<Arc<[u32]>>,
    /// Base chunks absent from this view, increasing.
    gone: Arc<[u32]>,
    /// This view's chunks the base does not cover, increasing.
    added: Arc<[u32]>,
    /// This view's chunk count.
    chunks: usize,
}

/// What a directory knows of one key in a view.
pub(crate) struct KeyEntries<'a, K> {
    dir: &'a Directory<K>,
    /// The key's base entries (empty if the base lacks it).
    entries: &'a [Entry],
    /// The index of the first in the base.
    first: usize,
}

impl<K> KeyEntries<'_, K> {
    /// `(chunk of this view, slot, count)` of every base entry still in the view, chunks
    /// increasing. The overlay's chunks ([`Directory::overlay`]) are not among them.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, u32, u32)> + '_ {
        self.entries.iter().enumerate().filter_map(move |(j, e)| {
            let c = match &self.dir.to_view {
                Some(t) => t[e.chunk as usize],
                None => e.chunk,
            };
            let (slot, count) = self.dir.base.slot_count(self.first + j, e);
            (c != GONE).then_some((c as usize, slot, count))
        })
    }
}

impl<K: Ord> Directory<K> {
    /// A directory over `chunks` chunks, `keys_of(c)` listing chunk `c`'s `(key, slot,
    /// posting count)` triples; `size(k)` estimates a key's heap bytes.
    pub(crate) fn build<'a, Q, I>(
        chunks: usize,
        keys_of: impl Fn(usize) -> I + Sync,
        size: impl Fn(&Q) -> usize,
    ) -> Directory<K>
    where
        Q: ?Sized + Ord + Hash + Sync + ToOwned<Owned = K> + 'a,
        I: Iterator<Item = (&'a Q, u32, u32)>,
    {
        Directory {
            base: Arc::new(Base::build(chunks, keys_of, size)),
            to_view: None,
            gone: Arc::from(Vec::new()),
            added: Arc::from(Vec::new()),
            chunks,
        }
    }

    /// [`Directory::derive`] from `donor` (a donor view's directory and each of this
    /// view's `chunks` chunks' position in it) when it maps every chunk, else
    /// [`Directory::build`].
    pub(crate) fn derive_or_build<'a, Q, I>(
        donor: Option<(&Directory<K>, &[Option<usize>])>,
        chunks: usize,
        keys_of: impl Fn(usize) -> I + Sync,
        size: impl Fn(&Q) -> usize,
    ) -> Directory<K>
    where
        Q: ?Sized + Ord + Hash + Sync + ToOwned<Owned = K> + 'a,
        I: Iterator<Item = (&'a Q, u32, u32)>,
    {
        match donor {
            Some((dir, map)) if map.len() == chunks => dir.derive(map, keys_of, size),
            _ => Directory::build(chunks, keys_of, size),
        }
    }

    /// The directory of a view of `from_donor.len()` chunks whose chunk `i` is this
    /// (the donor's) directory's chunk `from_donor[i]` (same key, so the same part) or
    /// new; built from scratch (`keys_of`) when the overlay would grow past its bound.
    pub(crate) fn derive<'a, Q, I>(
        &self,
        from_donor: &[Option<usize>],
        keys_of: impl Fn(usize) -> I + Sync,
        size: impl Fn(&Q) -> usize,
    ) -> Directory<K>
    where
        Q: ?Sized + Ord + Hash + Sync + ToOwned<Owned = K> + 'a,
        I: Iterator<Item = (&'a Q, u32, u32)>,
    {
        let chunks = from_donor.len();
        let mut donor_to_view = vec![GONE; self.chunks];
        let mut added: Vec<u32> = Vec::new();
        for (i, d) in from_donor.iter().enumerate() {
            match d {
                Some(d) if *d < self.chunks => donor_to_view[*d] = i as u32,
                _ => added.push(i as u32),
            }
        }
        added.extend(
            self.added
                .iter()
                .map(|&a| donor_to_view[a as usize])
                .filter(|&v| v != GONE),
        );
        if added.len() > REBUILD_MIN_ADDED + chunks / REBUILD_DIVISOR {
            return Directory::build(chunks, keys_of, size);
        }
        added.sort_unstable();
        let base_chunks = self.to_view.as_ref().map_or(self.chunks, |t| t.len());
        let to_view: Vec<u32> = (0..base_chunks)
            .map(|b| {
                let d = match &self.to_view {
                    Some(t) => t[b],
                    None => b as u32,
                };
                if d == GONE {
                    GONE
                } else {
                    donor_to_view[d as usize]
                }
            })
            .collect();
        let gone: Vec<u32> = (0..base_chunks as u32)
            .filter(|&b| to_view[b as usize] == GONE)
            .collect();
        Directory {
            base: Arc::clone(&self.base),
            to_view: Some(to_view.into()),
            gone: gone.into(),
            added: added.into(),
            chunks,
        }
    }

    /// What the base knows of `key` in this view: its entries.
    pub(crate) fn key<Q: Ord + ?Sized>(&self, key: &Q) -> KeyEntries<'_, K>
    where
        K: Borrow<Q>,
    {
        let (entries, first) = match self.base.position(key) {
            Some(i) => self.base.entries_of(i),
            None => (&[][..], 0),
        };
        KeyEntries {
            dir: self,
            entries,
            first,
        }
    }

    /// The view's chunks the base does not cover, increasing: a lookup probes them itself.
    pub(crate) fn overlay(&self) -> &[u32] {
        &self.added
    }

    /// Approximate heap bytes (the base counted in full: views share it).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.base.heap_bytes()
            + self.to_view.as_ref().map_or(0, |t| t.len() * 4)
            + (self.gone.len() + self.added.len()) * 4
            + 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks as key sets; the directory's answer for `key` as sorted chunk indices, and
    /// the key's posting count (each chunk counts the key's value as its postings).
    fn lookup(d: &Directory<u64>, chunks: &[Vec<u64>], key: u64) -> (Vec<usize>, u64) {
        let mut out = Vec::new();
        let e = d.key(&key);
        let mut count = 0;
        for (c, slot, n) in e.iter() {
            assert_eq!(chunks[c][slot as usize], key);
            assert_eq!(u64::from(n), key + 1);
            count += u64::from(n);
            out.push(c);
        }
        for &c in d.overlay() {
            if chunks[c as usize].contains(&key) {
                out.push(c as usize);
                count += key + 1;
            }
        }
        out.sort_unstable();
        (out, count)
    }

    fn keys_of<'a>(chunks: &'a [Vec<u64>]) -> impl Fn(usize) -> std::vec::IntoIter<(&'a u64, u32, u32)> + 'a {
        move |c| {
            chunks[c]
                .iter()
                .enumerate()
                .map(|(s, k)| (k, s as u32, *k as u32 + 1))
                .collect::<Vec<_>>()
                .into_iter()
        }
    }

    fn truth(chunks: &[Vec<u64>], key: u64) -> (Vec<usize>, u64) {
        let holding: Vec<usize> = (0..chunks.len()).filter(|&c| chunks[c].contains(&key)).collect();
        let count = holding.len() as u64 * (key + 1);
        (holding, count)
    }

    #[test]
    fn a_build_is_the_same_table_for_any_thread_count() {
        let mut rng = cairn_testkit::Rng(0x2545_f491_4f6c_dd1d);
        let chunks: Vec<Vec<u64>> = (0..300)
            .map(|_| {
                let mut k: Vec<u64> = (0..1 + rng.0 % 9).map(|_| rng.below(500)).collect();
                k.sort_unstable();
                k.dedup();
                k
            })
            .collect();
        let table = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let d: Directory<u64> = pool.install(|| Directory::build(chunks.len(), keys_of(&chunks), |_: &u64| 8));
            let b = &d.base;
            let entries: Vec<(u32, u32, u32)> = b
                .entries
                .iter()
                .enumerate()
                .map(|(j, e)| {
                    let (slot, count) = b.slot_count(j, e);
                    (e.chunk, slot, count)
                })
                .collect();
            (b.keys.clone(), b.starts.clone(), entries, b.key_bytes)
        };
        let one = table(1);
        assert_eq!(
            one.0.len(),
            chunks.iter().flatten().collect::<std::collections::BTreeSet<_>>().len()
        );
        for threads in [2, 3, 8] {
            assert!(table(threads) == one, "{threads} threads");
        }
        let d: Directory<u64> = Directory::build(chunks.len(), keys_of(&chunks), |_: &u64| 8);
        for key in 0..500 {
            assert_eq!(lookup(&d, &chunks, key), truth(&chunks, key), "key {key}");
        }
    }

    #[test]
    fn slots_and_counts_that_do_not_pack_are_kept_aside() {
        // Counts from 8,151 (key + 1) cross the 13 bits of a packed count; one chunk of
        // 524,300 keys has slots past the packed range.
        let mut chunks: Vec<Vec<u64>> = (0..40u64).map(|c| (8150 + c..8150 + c + 60).collect()).collect();
        chunks.insert(7, (0..524_300).collect());
        let d: Directory<u64> = Directory::build(chunks.len(), keys_of(&chunks), |_: &u64| 8);
        assert!(!d.base.escaped.is_empty());
        for key in (8140..8260).chain(524_280..524_300) {
            assert_eq!(lookup(&d, &chunks, key), truth(&chunks, key), "key {key}");
        }
        // A derived directory (chunk 3 gone) subtracts an escaped count.
        let map: Vec<Option<usize>> = (0..chunks.len()).filter(|&c| c != 3).map(Some).collect();
        let mut after = chunks.clone();
        after.remove(3);
        let d = d.derive(&map, keys_of(&after), |_: &u64| 8);
        for key in 8150..8260 {
            assert_eq!(lookup(&d, &after, key), truth(&after, key), "key {key} after");
        }
    }

    #[test]
    fn derived_directories_answer_as_a_fresh_build_across_many_edits() {
        // Chunks are identified by a serial number; an edit replaces, inserts or removes
        // one. A fixed xorshift drives it.
        let mut rng = cairn_testkit::Rng(0x9e37_79b9_7f4a_7c15);
        let mut rnd = move |n: u64| rng.below(n);
        let mut serial = 0u64;
        let mut make = |rnd: &mut dyn FnMut(u64) -> u64| -> (u64, Vec<u64>) {
            serial += 1;
            let mut k: Vec<u64> = (0..1 + rnd(6)).map(|_| rnd(40)).collect();
            k.sort_unstable();
            k.dedup();
            (serial, k)
        };
        let mut chunks: Vec<(u64, Vec<u64>)> = (0..50).map(|_| make(&mut rnd)).collect();
        let plain = |c: &[(u64, Vec<u64>)]| c.iter().map(|x| x.1.clone()).collect::<Vec<_>>();
        let kc = plain(&chunks);
        let mut dir: Directory<u64> = Directory::build(kc.len(), keys_of(&kc), |_: &u64| 0);
        let mut rebuilt = 0;
        for _ in 0..400 {
            let old = chunks.clone();
            match rnd(3) {
                0 => {
                    let i = rnd(chunks.len() as u64) as usize;
                    chunks[i] = make(&mut rnd);
                }
                1 => {
                    let i = rnd(chunks.len() as u64 + 1) as usize;
                    let c = make(&mut rnd);
                    chunks.insert(i, c);
                }
                _ if chunks.len() > 2 => {
                    let i = rnd(chunks.len() as u64) as usize;
                    chunks.remove(i);
                }
                _ => {}
            }
            let from_donor: Vec<Option<usize>> = chunks
                .iter()
                .map(|(id, _)| old.iter().position(|(o, _)| o == id))
                .collect();
            let kc = plain(&chunks);
            dir = dir.derive(&from_donor, keys_of(&kc), |_: &u64| 0);
            if dir.to_view.is_none() {
                rebuilt += 1;
            }
            for key in 0..40 {
                assert_eq!(lookup(&dir, &kc, key), truth(&kc, key), "key {key}");
            }
        }
        assert!(rebuilt > 0, "the overlay bound never forced a rebuild");
    }
}
