//! The index snapshot: every live key of a log's sealed segments with where its record is,
//! sorted by key, in one checked file (`index.crx` next to the segments). Opening a log
//! with a sound snapshot reads that one file — a few dozen bytes per key, read and
//! checked in one pass, no per-key parsing or allocation — instead of a hint per segment,
//! and only the segments the snapshot does not cover (the newest ones) are read as
//! before. Lookups binary-search it, first through a fence of every 64th key's first 8
//! bytes (made in the open's checking pass, memory only), then within one block.
//!
//! A snapshot covers every segment of the log up to a length each — the newest one up to
//! where it ended when the snapshot was written; the records appended to it since, and
//! any newer segment, are read at open as before (from a hint that holds, or a scan).
//!
//! A snapshot is a cache, like a hint: written (temporary file, then rename) when a log
//! closes and enough bytes were written since the one it has; used only if its checksum
//! holds, it decodes strictly, and every segment it names is on disk with the length it
//! names (the newest: at least that length) while no other segment at or below its newest
//! one is — otherwise ignored (the hints are read). Records are never changed in place,
//! so a snapshot that names the segments right describes their first bytes; garbage
//! collection removes segments, which makes a snapshot stale until the next close writes
//! another.
//!
//! ```text
//! magic       4  b"CRX1"
//! segments    4  u32 LE: covered segments, then for each (increasing id):
//!                { id 4 (u32 LE), len 8 (u64 LE, the bytes covered: the file's length, for the newest its end then),
//!                  total 8 (u64 LE, bytes of its records in them), live 8 (u64 LE, bytes of its live records) }
//! count       8  u64 LE: entries
//! key_bytes   8  u64 LE: length of the key area
//! count × { key_at 4 (u32 LE, in the key area), key_len 2 (u16 LE), segment 4 (u32 LE),
//!           offset 8 (u64 LE), len 4 (u32 LE, the record's), value_len 4 (u32 LE) }
//! key area    key_bytes: the keys, in entry order
//! crc         4  crc32 of everything above
//! ```
//!
//! Entries are in strictly increasing key order (bytewise), each key's last record, a put,
//! in a covered segment; a covered segment's `live` is the sum of its entries' `len`.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use super::index::Loc;
use super::log::key_prefix;
use super::record::MAX_KEY;

const MAGIC: [u8; 4] = *b"CRX1";
/// Bytes of one entry.
const ENTRY: usize = 26;
/// Bytes of one covered segment.
const SEGMENT: usize = 28;
/// The file's name in the log's directory.
pub(super) const FILE: &str = "index.crx";

/// A covered segment, as the snapshot names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Covered {
    pub id: u32,
    pub len: u64,
    pub total: u64,
    pub live: u64,
}

/// A decoded snapshot (the file's bytes, held).
pub(super) struct Snapshot {
    bytes: Vec<u8>,
    covered: BTreeMap<u32, Covered>,
    /// Offset of entry 0.
    entries: usize,
    count: usize,
    /// Offset of the key area.
    keys: usize,
    /// Sum of the entries' value lengths.
    value_bytes: u64,
    /// The first 8 bytes ([`key_prefix`]) of every [`FENCE`]th entry's key: a
    /// lookup narrows to one block of entries here, in one small array, before it reads
    /// any entry — a binary search over all the entries cost two cache misses (the entry,
    /// then its key) at each of ~17 steps at 100k keys.
    fence: Vec<u64>,
}

/// Entries per block of [`Snapshot::lower`]'s first search.
const FENCE: usize = 64;

/// The snapshot file of the log in `dir`.
pub(super) fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// `a < b`, bytewise: most keys differ in their first 8 bytes, compared as one number.
fn increasing(a: &[u8], b: &[u8]) -> bool {
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x < y;
        }
    }
    a < b
}

impl Snapshot {
    /// For the fuzz target (`cairn_store::fuzzing::snapshot`): `body` with its crc32
    /// appended (so arbitrary input reaches the parser) through the strict decoder, and
    /// the lookups a store makes of what it accepts. True if accepted.
    pub(crate) fn fuzz(body: &[u8]) -> bool {
        let mut bytes = body.to_vec();
        bytes.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
        let Some(s) = Snapshot::decode(bytes) else {
            return false;
        };
        let (keys, _) = s.count();
        for i in 0..keys.min(64) as usize {
            let key = s.key(i).to_vec();
            assert_eq!(
                s.get(&key).map(|l| l.offset),
                Some(s.loc(i).offset),
                "a key finds its own entry"
            );
        }
        true
    }

    /// The snapshot in `dir`, if there is one and it decodes (its segments not yet
    /// compared with the files: [`Snapshot::matches`]).
    pub(super) fn read(dir: &Path) -> Option<Snapshot> {
        Snapshot::decode(fs::read(path(dir)).ok()?)
    }

    /// Strict decoding: anything the writer would not write is refused.
    fn decode(bytes: Vec<u8>) -> Option<Snapshot> {
        let (body, crc) = bytes.split_last_chunk::<4>()?;
        if crc32fast::hash(body) != u32::from_le_bytes(*crc) {
            return None;
        }
        let body_len = body.len();
        let mut at = 0usize;
        let mut need = |n: usize| -> Option<usize> {
            let start = at;
            at = at.checked_add(n).filter(|&e| e <= body_len)?;
            Some(start)
        };
        let m = need(4)?;
        if bytes[m..m + 4] != MAGIC {
            return None;
        }
        let n_seg = le_u32(&bytes, need(4)?) as usize;
        let mut covered = BTreeMap::new();
        let mut last_id = None;
        for _ in 0..n_seg {
            let s = need(SEGMENT)?;
            let c = Covered {
                id: le_u32(&bytes, s),
                len: le_u64(&bytes, s + 4),
                total: le_u64(&bytes, s + 12),
                live: le_u64(&bytes, s + 20),
            };
            if last_id.is_some_and(|l| l >= c.id) || c.live > c.total || c.total > c.len {
                return None;
            }
            last_id = Some(c.id);
            covered.insert(c.id, c);
        }
        let count = usize::try_from(le_u64(&bytes, need(8)?)).ok()?;
        let key_bytes = usize::try_from(le_u64(&bytes, need(8)?)).ok()?;
        let entries = need(count.checked_mul(ENTRY)?)?;
        let keys = need(key_bytes)?;
        if at != body_len {
            return None;
        }
        // Every entry: its key inside the key area, keys in order and strictly
        // increasing, in a covered segment; the segments' live bytes add up.
        let mut snap = Snapshot {
            bytes,
            covered,
            entries,
            count,
            keys,
            value_bytes: 0,
            fence: Vec::with_capacity(count.div_ceil(FENCE)),
        };
        // Covered segment of each id from the first: a table (ids are dense), the
        // check of every entry's segment one load.
        let first = snap.covered.keys().next().copied().unwrap_or(0);
        let span = snap.covered.keys().next_back().map_or(0, |l| (l - first) as usize + 1);
        let ids: Vec<u32> = snap.covered.keys().copied().collect();
        let dense = span <= 4 * n_seg + 4096;
        let mut slot = vec![u32::MAX; if dense { span } else { 0 }];
        for (s, id) in ids.iter().enumerate().filter(|_| dense) {
            slot[(id - first) as usize] = s as u32;
        }
        let slot_of = |id: u32| -> Option<usize> {
            match dense {
                true => id
                    .checked_sub(first)
                    .and_then(|d| slot.get(d as usize))
                    .filter(|&&s| s != u32::MAX)
                    .map(|&s| s as usize),
                false => ids.binary_search(&id).ok(),
            }
        };
        let mut live = vec![0u64; n_seg];
        let mut next_key = 0usize;
        let mut value_bytes = 0u64;
        for i in 0..count {
            let e = entries + i * ENTRY;
            let key_at = le_u32(&snap.bytes, e) as usize;
            let key_len = le_u16(&snap.bytes, e + 4) as usize;
            if key_at != next_key || !(1..=MAX_KEY).contains(&key_len) || key_at + key_len > key_bytes {
                return None;
            }
            next_key = key_at + key_len;
            if i > 0 && !increasing(snap.key(i - 1), snap.key(i)) {
                return None;
            }
            if i % FENCE == 0 {
                let p = key_prefix(snap.key(i));
                snap.fence.push(p);
            }
            let loc = snap.loc(i);
            let s = slot_of(loc.segment)?;
            if loc.len == 0 {
                return None;
            }
            live[s] += u64::from(loc.len);
            value_bytes += u64::from(loc.value_len);
        }
        if next_key != key_bytes {
            return None;
        }
        // The stored live bytes must be the entries'.
        if snap.covered.values().zip(&live).any(|(c, &l)| c.live != l) {
            return None;
        }
        snap.value_bytes = value_bytes;
        Some(snap)
    }

    /// True if the files agree with it: every covered segment is in `on_disk` (id →
    /// length) with its length — the newest may have grown since (it was being appended
    /// to) — and no other segment at or below the newest covered one is.
    pub(super) fn matches(&self, on_disk: &BTreeMap<u32, u64>) -> bool {
        let Some(&newest) = self.covered.keys().next_back() else {
            return false;
        };
        self.covered.values().all(|c| match on_disk.get(&c.id) {
            Some(&len) if c.id == newest => len >= c.len,
            Some(&len) => len == c.len,
            None => false,
        }) && on_disk.range(..=newest).all(|(id, _)| self.covered.contains_key(id))
    }

    /// The covered segments.
    pub(super) fn covered(&self) -> &BTreeMap<u32, Covered> {
        &self.covered
    }

    /// Number of entries, and the sum of their value lengths.
    pub(super) fn count(&self) -> (u64, u64) {
        (self.count as u64, self.value_bytes)
    }

    /// Entry `i`'s key.
    pub(super) fn key(&self, i: usize) -> &[u8] {
        let e = self.entries + i * ENTRY;
        let at = self.keys + le_u32(&self.bytes, e) as usize;
        &self.bytes[at..at + le_u16(&self.bytes, e + 4) as usize]
    }

    /// Entry `i`'s location.
    pub(super) fn loc(&self, i: usize) -> Loc {
        let e = self.entries + i * ENTRY + 6;
        Loc {
            segment: le_u32(&self.bytes, e),
            offset: le_u64(&self.bytes, e + 4),
            len: le_u32(&self.bytes, e + 12),
            value_len: le_u32(&self.bytes, e + 16),
        }
    }

    /// The entry of `key`.
    pub(super) fn get(&self, key: &[u8]) -> Option<Loc> {
        let i = self.lower(key);
        (i < self.count && self.key(i) == key).then(|| self.loc(i))
    }

    /// The first entry whose key is not below `key`: the blocks of [`Snapshot::fence`]
    /// whose first keys' prefixes bracket `key`'s, then a binary search within them.
    fn lower(&self, key: &[u8]) -> usize {
        let p = key_prefix(key);
        // Every block before the last whose first prefix is below `p` starts below `key`;
        // the first block whose first prefix is above `p` starts above it.
        let below = self.fence.partition_point(|&f| f < p);
        let above = self.fence.partition_point(|&f| f <= p);
        let (mut lo, mut hi) = (below.saturating_sub(1) * FENCE, (above * FENCE).min(self.count));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The first entry whose key is above `key`.
    fn upper(&self, key: &[u8]) -> usize {
        let i = self.lower(key);
        if i < self.count && self.key(i) == key {
            i + 1
        } else {
            i
        }
    }

    /// The entries (as indexes) whose keys lie within the bounds.
    pub(super) fn range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> std::ops::Range<usize> {
        let from = match start {
            Bound::Unbounded => 0,
            Bound::Included(k) => self.lower(k),
            Bound::Excluded(k) => self.upper(k),
        };
        let to = match end {
            Bound::Unbounded => self.count,
            Bound::Excluded(k) => self.lower(k),
            Bound::Included(k) => self.upper(k),
        };
        from..to.max(from)
    }
}

/// Writes the snapshot of `entries` (strictly increasing keys, each in a `covered`
/// segment) into `dir`: a temporary file renamed into place, so a reader sees the old
/// snapshot, none, or the whole new one. `covered` gives each segment's length and total
/// bytes; the live bytes are summed here.
pub(super) fn write<'a>(
    dir: &Path,
    covered: &[(u32, u64, u64)],
    entries: impl Iterator<Item = (&'a [u8], Loc)>,
) -> io::Result<()> {
    let mut table = Vec::new();
    let mut keys = Vec::new();
    let mut live: BTreeMap<u32, u64> = covered.iter().map(|c| (c.0, 0)).collect();
    let mut count = 0u64;
    for (key, loc) in entries {
        let key_at = u32::try_from(keys.len()).map_err(|_| io::Error::other("key area over 4 GiB"))?;
        let Some(l) = live.get_mut(&loc.segment) else {
            return Err(io::Error::other("an entry outside the covered segments"));
        };
        *l += u64::from(loc.len);
        table.extend_from_slice(&key_at.to_le_bytes());
        table.extend_from_slice(&(key.len() as u16).to_le_bytes());
        table.extend_from_slice(&loc.segment.to_le_bytes());
        table.extend_from_slice(&loc.offset.to_le_bytes());
        table.extend_from_slice(&loc.len.to_le_bytes());
        table.extend_from_slice(&loc.value_len.to_le_bytes());
        keys.extend_from_slice(key);
        count += 1;
    }
    let mut out = Vec::with_capacity(32 + covered.len() * SEGMENT + table.len() + keys.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(covered.len() as u32).to_le_bytes());
    for &(id, len, total) in covered {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&total.to_le_bytes());
        out.extend_from_slice(&live[&id].to_le_bytes());
    }
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(keys.len() as u64).to_le_bytes());
    out.extend_from_slice(&table);
    drop(table);
    out.extend_from_slice(&keys);
    drop(keys);
    out.extend_from_slice(&crc32fast::hash(&out).to_le_bytes());
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(&out)?;
    tmp.persist(path(dir)).map_err(|e| e.error)?;
    Ok(())
}

/// Removes the snapshot of the log in `dir`, if any.
pub(super) fn remove(dir: &Path) {
    let _ = fs::remove_file(path(dir));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(segment: u32, offset: u64) -> Loc {
        Loc {
            segment,
            offset,
            len: 20,
            value_len: 3,
        }
    }

    #[test]
    fn round_trip_lookups_ranges_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let entries: Vec<(Vec<u8>, Loc)> = vec![
            (b"a".to_vec(), loc(1, 0)),
            (b"ab".to_vec(), loc(2, 0)),
            (b"b".to_vec(), loc(1, 20)),
        ];
        write(
            dir.path(),
            &[(1, 100, 60), (2, 50, 40)],
            entries.iter().map(|(k, l)| (&k[..], *l)),
        )
        .unwrap();
        let snap = Snapshot::read(dir.path()).unwrap();
        assert_eq!(snap.count(), (3, 9));
        assert_eq!(snap.get(b"ab"), Some(loc(2, 0)));
        assert_eq!(snap.get(b"aa"), None);
        assert_eq!(snap.covered()[&1].live, 40);
        assert_eq!(snap.range(Bound::Included(b"a"), Bound::Excluded(b"b")), 0..2);
        assert_eq!(snap.range(Bound::Excluded(b"a"), Bound::Unbounded), 1..3);
        assert_eq!(snap.range(Bound::Included(b"c"), Bound::Unbounded), 3..3);
        let disk: BTreeMap<u32, u64> = [(1, 100), (2, 50), (3, 7)].into();
        assert!(snap.matches(&disk));
        assert!(snap.matches(&[(1, 100), (2, 51)].into()), "the newest grew");
        assert!(!snap.matches(&[(1, 100), (2, 49)].into()), "the newest shrank");
        assert!(!snap.matches(&[(1, 101), (2, 50)].into()), "an older one changed");
        assert!(!snap.matches(&[(2, 50)].into()), "a covered segment gone");
        assert!(
            !snap.matches(&[(0, 9), (1, 100), (2, 50)].into()),
            "an uncovered older segment"
        );
        let bytes = fs::read(path(dir.path())).unwrap();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x08;
            assert!(Snapshot::decode(bad).is_none(), "flip at {i}");
        }
        assert!(Snapshot::decode(bytes[..bytes.len() - 1].to_vec()).is_none());
        // A writer handed keys out of order or outside the covered segments writes
        // nothing a reader would take.
        let unordered = [(&b"b"[..], loc(1, 0)), (&b"a"[..], loc(1, 20))];
        write(dir.path(), &[(1, 100, 60)], unordered.into_iter()).unwrap();
        assert!(Snapshot::read(dir.path()).is_none());
        assert!(write(dir.path(), &[(1, 100, 60)], [(&b"a"[..], loc(9, 0))].into_iter()).is_err());
    }

    /// Lookups through the fence agree with a sorted list over many blocks: keys sharing
    /// long prefixes (whole blocks of one 8-byte prefix), keys shorter than 8 bytes and
    /// prefixes of one another, and probes between, before and after them all.
    #[test]
    fn fenced_lookups_equal_a_sorted_list() {
        let dir = tempfile::tempdir().unwrap();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for i in 0..700u32 {
            keys.push(format!("ck/{:08x}", i.wrapping_mul(2_654_435_761)).into_bytes());
            keys.push(format!("ck/same-8b/{i:05}").into_bytes());
        }
        for i in 0..40u32 {
            keys.push(format!("k{i}").into_bytes());
            keys.push(vec![b'z'; 1 + i as usize]);
        }
        keys.sort();
        keys.dedup();
        let locs: Vec<Loc> = (0..keys.len()).map(|i| loc(1, 20 * i as u64)).collect();
        let total = 20 * keys.len() as u64;
        write(
            dir.path(),
            &[(1, total, total)],
            keys.iter().zip(&locs).map(|(k, l)| (&k[..], *l)),
        )
        .unwrap();
        let snap = Snapshot::read(dir.path()).unwrap();
        assert!(snap.fence.len() > 20, "many blocks");
        for (k, l) in keys.iter().zip(&locs) {
            assert_eq!(snap.get(k), Some(*l), "{}", String::from_utf8_lossy(k));
        }
        let mut probes: Vec<Vec<u8>> = vec![Vec::new(), b"a".to_vec(), b"ck/".to_vec(), vec![0xff; 9]];
        for k in &keys {
            let mut longer = k.clone();
            longer.push(0);
            probes.push(longer);
            probes.push(k[..k.len() - 1].to_vec());
        }
        for p in &probes {
            let expect = keys.partition_point(|k| k < p);
            assert_eq!(snap.lower(p), expect, "{}", String::from_utf8_lossy(p));
            assert_eq!(snap.get(p).is_some(), keys.binary_search(p).is_ok());
        }
    }
}

#[cfg(test)]
mod golden {
    const GOLDEN: &str = "43525831010000000100000064000000000000003c000000000000003c00000000000000020000000000000004000000000000000000000002000100000000000000000000001e00000009000000020000000200010000001e000000000000001e000000090000006b316b328942e5c1";
    use super::*;

    /// The bytes of storage-format §6.8.1's example: keys `k1` and `k2` in segment 1 (of
    /// 100 bytes, 60 of records) at offsets 0 and 30, records of 30 bytes with 9-byte values.
    #[test]
    fn golden_snapshot_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let loc = |offset| Loc {
            segment: 1,
            offset,
            len: 30,
            value_len: 9,
        };
        write(
            dir.path(),
            &[(1, 100, 60)],
            [(&b"k1"[..], loc(0)), (&b"k2"[..], loc(30))].into_iter(),
        )
        .unwrap();
        let hex: String = fs::read(path(dir.path()))
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, GOLDEN);
    }
}
