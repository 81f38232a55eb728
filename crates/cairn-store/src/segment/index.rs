//! [`Index`]: where each live key's record is. Two layers: the log's
//! [`Snapshot`](super::snapshot) of its sealed segments as read at open (absent when
//! there was none that held), and an in-memory map of every record written or read
//! since — the records of the segments the snapshot does not cover, then this process's
//! writes. The map decides for every key it holds (a `None` hides the snapshot's entry:
//! the key was deleted since), the snapshot for the rest.
//!
//! The records read at open beyond the snapshot are a sorted array (built by one sort,
//! looked up by binary search, no empty buckets); this process's writes since go to a hash
//! map over both, where a point lookup (every object read) costs a probe or two — a B-tree
//! of a million freshly imported keys walked six levels of 32-byte key comparisons (~4 % of
//! a 1M first retrieve's samples). The ordered reads — listing a range, a range's last key,
//! the snapshot's entries — sort the map's keys in the range on each call; they serve
//! maintenance (gc, drop, checks, writing a snapshot), not queries.
//!
//! A snapshot entry naming a segment that compaction has removed is always hidden: a
//! compaction copies every live record of a segment before removing it, and the copy's
//! location goes into the map.
//!
//! Whatever reads the snapshot may find one of its blocks damaged ([`Damaged`]): it then
//! changes nothing, and the log rebuilds the index without the snapshot.

use std::collections::HashMap;
use std::ops::{Bound, RangeBounds};

use super::log::LogKey;
use super::snapshot::{Damaged, Snapshot};

/// Where a live record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Loc {
    pub segment: u32,
    /// The record's first byte.
    pub offset: u64,
    /// The record's length.
    pub len: u32,
    /// Its value's length.
    pub value_len: u32,
}

/// Where each live key's record is (module docs).
pub(super) struct Index<K> {
    base: Option<Snapshot>,
    /// Each key's last record read at open beyond the snapshot, sorted by key (`None`: a
    /// deletion; without a snapshot, live keys only). Decides over `base`.
    opened: Vec<(K, Option<Loc>)>,
    /// This process's writes since open. Decides over `opened` and `base`.
    map: HashMap<K, Option<Loc>>,
    /// Live keys, and the sum of their value lengths.
    count: u64,
    value_bytes: u64,
}

impl<K: LogKey> Index<K> {
    /// The index of `base` under `opened` (sorted by key; with no base, it holds no
    /// `None`); `superseded` is told of each snapshot entry a key of `opened` hides.
    pub(super) fn new(
        base: Option<Snapshot>,
        opened: Vec<(K, Option<Loc>)>,
        mut superseded: impl FnMut(Loc),
    ) -> Result<Index<K>, Damaged> {
        debug_assert!(opened.windows(2).all(|w| w[0].0 < w[1].0));
        let (mut count, mut value_bytes) = base.as_ref().map_or((0, 0), Snapshot::count);
        for (k, loc) in &opened {
            if let Some(old) = base.as_ref().map(|b| b.get(k.bytes())).transpose()?.flatten() {
                count -= 1;
                value_bytes -= u64::from(old.value_len);
                superseded(old);
            }
            if let Some(l) = loc {
                count += 1;
                value_bytes += u64::from(l.value_len);
            }
        }
        Ok(Index {
            base,
            opened,
            map: HashMap::new(),
            count,
            value_bytes,
        })
    }

    /// The keys the map decides — each an entry an open reads beyond the snapshot, or
    /// every key without one — and the snapshot's entries (0 without one).
    pub(super) fn beyond_snapshot(&self) -> (u64, u64) {
        // A key both read at open and written since counts twice: a bound, for a heuristic.
        (
            (self.opened.len() + self.map.len()) as u64,
            self.base.as_ref().map_or(0, |b| b.count().0),
        )
    }

    /// The snapshot under the map, if any.
    pub(super) fn base(&self) -> Option<&Snapshot> {
        self.base.as_ref()
    }

    /// Where `key`'s record is.
    pub(super) fn get(&self, key: &K) -> Result<Option<Loc>, Damaged> {
        match self.map.get(key) {
            Some(loc) => Ok(*loc),
            None => self.below_map(key),
        }
    }

    /// Where `key`'s record is by `opened` and `base` alone.
    fn below_map(&self, key: &K) -> Result<Option<Loc>, Damaged> {
        if let Ok(i) = self.opened.binary_search_by(|e| e.0.cmp(key)) {
            return Ok(self.opened[i].1);
        }
        match &self.base {
            Some(b) => b.get(key.bytes()),
            None => Ok(None),
        }
    }

    /// True if `opened` or the map decides for `key` (the snapshot's entry, if any, does not
    /// count).
    fn decided_above_base(&self, key: &K) -> bool {
        self.map.contains_key(key) || self.opened.binary_search_by(|e| e.0.cmp(key)).is_ok()
    }

    /// True if `key` has a record.
    pub(super) fn contains(&self, key: &K) -> Result<bool, Damaged> {
        Ok(self.get(key)?.is_some())
    }

    /// Points `key` at `loc`; the location it had, if any.
    pub(super) fn insert(&mut self, key: K, loc: Loc) -> Result<Option<Loc>, Damaged> {
        let old = self.get(&key)?;
        self.account(old, Some(loc));
        self.map.insert(key, Some(loc));
        Ok(old)
    }

    /// Removes `key`; the location it had, if any.
    pub(super) fn remove(&mut self, key: &K) -> Result<Option<Loc>, Damaged> {
        let old = self.get(key)?;
        let live_below = self.below_map(key)?.is_some();
        self.account(old, None);
        if live_below {
            self.map.insert(key.clone(), None);
        } else {
            self.map.remove(key);
        }
        Ok(old)
    }

    fn account(&mut self, old: Option<Loc>, new: Option<Loc>) {
        if let Some(o) = old {
            self.count -= 1;
            self.value_bytes -= u64::from(o.value_len);
        }
        if let Some(n) = new {
            self.count += 1;
            self.value_bytes += u64::from(n.value_len);
        }
    }

    /// Live keys, and the sum of their value lengths.
    pub(super) fn count(&self) -> (u64, u64) {
        (self.count, self.value_bytes)
    }

    /// Every live key in `range` with its location, in key order.
    pub(super) fn entries(&self, range: impl RangeBounds<K>) -> Result<Vec<(K, Loc)>, Damaged> {
        let mut out = Vec::new();
        self.merge(&range, |k, l| out.push((k, l)))?;
        Ok(out)
    }

    /// Every live key in `range`, in order.
    pub(super) fn keys(&self, range: impl RangeBounds<K>) -> Result<Vec<K>, Damaged> {
        let mut out = Vec::new();
        self.merge(&range, |k, _| out.push(k))?;
        Ok(out)
    }

    /// The last live key in `range`.
    pub(super) fn last_key(&self, range: impl RangeBounds<K>) -> Result<Option<K>, Damaged> {
        let from_map = self
            .upper(&range)
            .into_iter()
            .rev()
            .find(|(_, l)| l.is_some())
            .map(|(k, _)| k.clone());
        let mut from_base = None;
        if let Some(b) = &self.base {
            for i in b
                .range(bytes_bound(range.start_bound()), bytes_bound(range.end_bound()))?
                .rev()
            {
                let Some(k) = K::from_bytes(b.entry(i)?.0) else {
                    continue;
                };
                if !self.decided_above_base(&k) {
                    from_base = Some(k);
                    break;
                }
            }
        }
        Ok(from_map.max(from_base))
    }

    /// What `opened` and the map decide for the keys of `range`, the map first, in key
    /// order.
    fn upper(&self, range: &impl RangeBounds<K>) -> Vec<(&K, Option<Loc>)> {
        let mut upper: Vec<(&K, Option<Loc>)> = self
            .opened
            .iter()
            .filter(|(k, _)| range.contains(k) && !self.map.contains_key(k))
            .map(|(k, l)| (k, *l))
            .collect();
        upper.extend(
            self.map
                .iter()
                .filter(|(k, _)| range.contains(*k))
                .map(|(k, l)| (k, *l)),
        );
        upper.sort_unstable_by(|a, b| a.0.cmp(b.0));
        upper
    }

    /// Calls `f` with every live key in `range` and its location, in key order.
    fn merge(&self, range: &impl RangeBounds<K>, mut f: impl FnMut(K, Loc)) -> Result<(), Damaged> {
        let mut map = self
            .upper(range)
            .into_iter()
            .filter_map(|(k, l)| l.map(|l| (k, l)))
            .peekable();
        if let Some(b) = &self.base {
            for i in b.range(bytes_bound(range.start_bound()), bytes_bound(range.end_bound()))? {
                let (key, loc) = b.entry(i)?;
                let Some(key) = K::from_bytes(key) else { continue };
                while let Some((k, l)) = map.next_if(|(k, _)| **k < key) {
                    f(k.clone(), l);
                }
                if !self.decided_above_base(&key) {
                    f(key, loc);
                }
            }
        }
        for (k, l) in map {
            f(k.clone(), l);
        }
        Ok(())
    }
}

fn bytes_bound<K: LogKey>(b: Bound<&K>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.bytes()),
        Bound::Excluded(k) => Bound::Excluded(k.bytes()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests {
    use super::super::snapshot;
    use super::*;

    fn loc(segment: u32, offset: u64) -> Loc {
        Loc {
            segment,
            offset,
            len: 20,
            value_len: 5,
        }
    }

    fn k(s: &str) -> Box<[u8]> {
        s.as_bytes().into()
    }

    /// Every live key with its record's segment, in key order.
    fn segments(index: &Index<Box<[u8]>>) -> Vec<(Box<[u8]>, u32)> {
        index
            .entries(..)
            .unwrap()
            .into_iter()
            .map(|(k, l)| (k, l.segment))
            .collect()
    }

    /// A snapshot in `dir` of keys `a`, `c`, `e` in segment 1.
    fn ace_snapshot(dir: &std::path::Path) -> Snapshot {
        let base: Vec<(&[u8], Loc)> = vec![(b"a", loc(1, 0)), (b"c", loc(1, 20)), (b"e", loc(1, 40))];
        snapshot::write(dir, &[(1, 100, 60)], base.into_iter()).unwrap();
        Snapshot::read(dir).unwrap()
    }

    #[test]
    fn the_map_decides_over_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let snap = ace_snapshot(dir.path());
        let mut index: Index<Box<[u8]>> = Index::new(Some(snap), vec![(k("b"), Some(loc(2, 0)))], |_| {}).unwrap();
        assert_eq!(index.count(), (4, 20));
        assert_eq!(index.remove(&k("c")), Ok(Some(loc(1, 20))));
        assert_eq!(index.remove(&k("zz")), Ok(None));
        assert_eq!(index.insert(k("e"), loc(2, 20)), Ok(Some(loc(1, 40))));
        assert_eq!(index.insert(k("d"), loc(2, 40)), Ok(None));
        assert_eq!(index.get(&k("c")), Ok(None));
        assert_eq!(index.get(&k("a")), Ok(Some(loc(1, 0))));
        assert_eq!(index.count(), (4, 20));
        assert_eq!(
            segments(&index),
            vec![(k("a"), 1), (k("b"), 2), (k("d"), 2), (k("e"), 2)]
        );
        let some: Vec<_> = index
            .entries(k("b")..k("e"))
            .unwrap()
            .into_iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(some, vec![k("b"), k("d")]);
        assert_eq!(index.last_key(..k("d")), Ok(Some(k("b"))));
        assert_eq!(index.last_key(..), Ok(Some(k("e"))));
        assert_eq!(index.remove(&k("e")), Ok(Some(loc(2, 20))));
        assert_eq!(index.last_key(..), Ok(Some(k("d"))));
        assert_eq!(index.remove(&k("b")), Ok(Some(loc(2, 0))));
        assert_eq!(index.get(&k("b")), Ok(None), "a key only the map had is gone");
    }

    /// Three layers: the snapshot, the records read at open (a deletion among them hides
    /// the snapshot's entry), and this process's writes over both.
    #[test]
    fn writes_decide_over_records_read_at_open_which_decide_over_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let snap = ace_snapshot(dir.path());
        let opened = vec![(k("b"), Some(loc(2, 0))), (k("c"), None), (k("f"), Some(loc(2, 20)))];
        let mut superseded = Vec::new();
        let mut index: Index<Box<[u8]>> = Index::new(Some(snap), opened, |l| superseded.push(l)).unwrap();
        assert_eq!(superseded, vec![loc(1, 20)]);
        assert_eq!(index.count(), (4, 20));
        assert_eq!(index.get(&k("c")), Ok(None), "deleted since the snapshot");
        assert_eq!(index.get(&k("b")), Ok(Some(loc(2, 0))));
        // Removing a key only read at open leaves a deletion that hides nothing else.
        assert_eq!(index.remove(&k("f")), Ok(Some(loc(2, 20))));
        assert_eq!(index.get(&k("f")), Ok(None));
        // Writing a key the open layer deleted brings it back; removing it again hides the
        // snapshot's entry again.
        assert_eq!(index.insert(k("c"), loc(3, 0)), Ok(None));
        assert_eq!(index.get(&k("c")), Ok(Some(loc(3, 0))));
        assert_eq!(index.insert(k("a"), loc(3, 20)), Ok(Some(loc(1, 0))));
        assert_eq!(
            segments(&index),
            vec![(k("a"), 3), (k("b"), 2), (k("c"), 3), (k("e"), 1)]
        );
        assert_eq!(index.last_key(..k("e")), Ok(Some(k("c"))));
        assert_eq!(index.remove(&k("c")), Ok(Some(loc(3, 0))));
        assert_eq!(index.get(&k("c")), Ok(None));
        assert_eq!(index.keys(..).unwrap(), vec![k("a"), k("b"), k("e")]);
        assert_eq!(index.count(), (3, 15));
    }
}
