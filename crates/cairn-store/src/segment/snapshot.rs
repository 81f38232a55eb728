//! The index snapshot: every live key of a log's sealed segments with where its record is,
//! sorted by key, in one file (`index.crx` next to the segments). Opening a log with a
//! sound snapshot maps that file and reads only its head — the covered segments and one
//! 16-byte row per block of 64 entries (the block's first key's first 8 bytes, where its
//! keys start, its checksum) — instead of a hint per segment; only the segments the
//! snapshot does not cover (the newest ones) are read as before. So an open costs
//! O(keys / 64), not O(keys): at 10M nodes the old whole-file read was 650 MiB and 0.77 s.
//!
//! A block is checked (its crc32 over its entries and keys, then strictly: key offsets
//! running on, keys increasing into the next block's first, known segments) the first
//! time a lookup touches it, once per process (a bit per block). A block that fails makes
//! the snapshot [`Damaged`]: the log then rebuilds its index from the hints and segments
//! (`Log::recover`), as an open without a snapshot would, and removes the file. Lookups
//! never answer from a block that was not checked.
//!
//! A snapshot covers every segment of the log up to a length each — the newest one up to
//! where it ended when the snapshot was written; the records appended to it since, and
//! any newer segment, are read at open as before (from a hint that holds, or a scan).
//!
//! A snapshot is a cache, like a hint: written (temporary file, then rename) when a log
//! closes and enough bytes were written since the one it has; used only if its head's
//! checksum holds, the head decodes strictly, and every segment it names is on disk with
//! the length it names (the newest: at least that length) while no other segment at or
//! below its newest one is — otherwise ignored (the hints are read). Records are never
//! changed in place, so a snapshot that names the segments right describes their first
//! bytes; garbage collection removes segments, which makes a snapshot stale until the next
//! close writes another.
//!
//! ```text
//! magic       4  b"CRX2"
//! segments    4  u32 LE: covered segments, then for each (increasing id):
//!                { id 4 (u32 LE), len 8 (u64 LE, the bytes covered: the file's length, for the newest its end then),
//!                  total 8 (u64 LE, bytes of its records in them), live 8 (u64 LE, bytes of its live records) }
//! count       8  u64 LE: entries
//! key_bytes   8  u64 LE: length of the key area
//! value_bytes 8  u64 LE: the sum of the entries' value_len
//! ⌈count/64⌉ × { prefix 8 (u64 LE: the block's first key's first 8 bytes, big-endian, zero-padded),
//!                key_at 4 (u32 LE: where the block's keys start in the key area),
//!                crc 4 (u32 LE: crc32 of the block's entries, then its keys) }
//! head_crc    4  crc32 of everything above
//! count × { key_at 4 (u32 LE, in the key area), key_len 2 (u16 LE), segment 4 (u32 LE),
//!           offset 8 (u64 LE), len 4 (u32 LE, the record's), value_len 4 (u32 LE) }
//! key area    key_bytes: the keys, in entry order
//! ```
//!
//! Entries are in strictly increasing key order (bytewise), each key's last record, a put,
//! in a covered segment; block `b` holds entries `64·b ..`; a covered segment's `live` is
//! the sum of its entries' `len` and `value_bytes` the sum of their `value_len` (the writer
//! computes both from the entries; the head's checksum covers them).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;

use super::index::Loc;
use super::log::key_prefix;
use super::record::MAX_KEY;

const MAGIC: [u8; 4] = *b"CRX2";
/// Bytes of one entry.
const ENTRY: usize = 26;
/// Bytes of one covered segment.
const SEGMENT: usize = 28;
/// Bytes of one block's row in the head.
const BLOCK_ROW: usize = 16;
/// Entries per block.
const BLOCK: usize = 64;
/// The file's name in the log's directory.
pub(super) const FILE: &str = "index.crx";

/// A block of the snapshot failed its check: the snapshot cannot answer, and the log
/// rebuilds its index without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Damaged;

/// A covered segment, as the snapshot names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Covered {
    pub id: u32,
    pub len: u64,
    pub total: u64,
    pub live: u64,
}

/// A snapshot whose head was read and checked (the file's bytes, mapped or read).
pub(super) struct Snapshot {
    bytes: Bytes,
    covered: BTreeMap<u32, Covered>,
    /// The covered segments' ids, in order (a block's check looks each entry's up).
    covered_ids: Box<[u32]>,
    /// Offset of block 0's row.
    blocks: usize,
    n_blocks: usize,
    /// Offset of entry 0.
    entries: usize,
    count: usize,
    /// Offset of the key area, and its length.
    keys: usize,
    key_bytes: usize,
    value_bytes: u64,
    /// A bit per block: checked.
    checked: Box<[AtomicU64]>,
    /// A block failed its check.
    damaged: AtomicBool,
    /// Checksums are checked (false only for the fuzz entry point, so that arbitrary
    /// input reaches the structural checks).
    crcs: bool,
}

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
    /// For the fuzz target (`cairn_store::fuzzing::snapshot`): `bytes` as a whole file,
    /// its checksums not checked (so arbitrary input reaches the structural checks), and
    /// the lookups a store makes of what it accepts: a key read from a checked block is
    /// found at its own entry, or the lookup reports damage. True if the head is accepted.
    pub(crate) fn fuzz(bytes: &[u8]) -> bool {
        let Some(s) = Snapshot::decode(Bytes::copy_from_slice(bytes), false) else {
            return false;
        };
        for i in 0..s.count.min(BLOCK * 3) {
            let Ok((key, loc)) = s.entry(i) else { continue };
            let key = key.to_vec();
            if let Ok(found) = s.get(&key) {
                assert_eq!(found, Some(loc), "a key finds its own entry");
            }
        }
        true
    }

    /// The snapshot in `dir`, if there is one and its head decodes (its segments not yet
    /// compared with the files: [`Snapshot::matches`]). The file is mapped (read, where
    /// it cannot be); only its head is read here.
    pub(super) fn read(dir: &Path) -> Option<Snapshot> {
        let file = fs::File::open(path(dir)).ok()?;
        // SAFETY: a snapshot is never changed in place: a new one is written to a
        // temporary file and renamed over it, which leaves this mapping's file as it was.
        // Another program truncating the file under a running process would fault it on
        // access, as with a mapped segment (`storage-format.md` §6.7).
        let bytes = match unsafe { memmap2::Mmap::map(&file) } {
            Ok(map) => Bytes::from_owner(map),
            Err(_) => Bytes::from(fs::read(path(dir)).ok()?),
        };
        Snapshot::decode(bytes, true)
    }

    /// Strict decoding of the head: anything the writer would not write is refused. The
    /// blocks are checked when first used ([`Snapshot::check`]).
    fn decode(bytes: Bytes, crcs: bool) -> Option<Snapshot> {
        let len = bytes.len();
        let mut at = 0usize;
        let mut need = |n: usize| -> Option<usize> {
            let start = at;
            at = at.checked_add(n).filter(|&e| e <= len)?;
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
        let value_bytes = le_u64(&bytes, need(8)?);
        let n_blocks = count.div_ceil(BLOCK);
        let blocks = need(n_blocks.checked_mul(BLOCK_ROW)?)?;
        let head_end = need(4)?;
        if crcs && crc32fast::hash(&bytes[..head_end]) != le_u32(&bytes, head_end) {
            return None;
        }
        let entries = need(count.checked_mul(ENTRY)?)?;
        let keys = need(key_bytes)?;
        if at != len || (count == 0) != (key_bytes == 0) || count > key_bytes {
            return None;
        }
        let snap = Snapshot {
            bytes,
            covered_ids: covered.keys().copied().collect(),
            covered,
            blocks,
            n_blocks,
            entries,
            count,
            keys,
            key_bytes,
            value_bytes,
            checked: (0..n_blocks.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            damaged: AtomicBool::new(false),
            crcs,
        };
        // Blocks' first prefixes never decrease; their keys start at 0 and each block's
        // after the previous one's (every key has at least one byte).
        for b in 0..n_blocks {
            let key_at = snap.block_key_at(b);
            let ok = match b {
                0 => key_at == 0,
                _ => snap.prefix(b) >= snap.prefix(b - 1) && key_at > snap.block_key_at(b - 1),
            };
            if !ok || key_at >= key_bytes {
                return None;
            }
        }
        Some(snap)
    }

    /// Block `b`'s first key's first 8 bytes ([`key_prefix`]).
    fn prefix(&self, b: usize) -> u64 {
        le_u64(&self.bytes, self.blocks + b * BLOCK_ROW)
    }

    /// Where block `b`'s keys start in the key area (the area's end after the last).
    fn block_key_at(&self, b: usize) -> usize {
        match b < self.n_blocks {
            true => le_u32(&self.bytes, self.blocks + b * BLOCK_ROW + 8) as usize,
            false => self.key_bytes,
        }
    }

    /// Entries of block `b`.
    fn block_entries(&self, b: usize) -> std::ops::Range<usize> {
        b * BLOCK..((b + 1) * BLOCK).min(self.count)
    }

    /// True once a block failed its check.
    pub(super) fn is_damaged(&self) -> bool {
        self.damaged.load(Ordering::Relaxed)
    }

    /// Checks block `b` the first time it is used: its checksum, then every entry's key
    /// running on from the block's start to the next block's (at most [`MAX_KEY`] bytes,
    /// at least one), keys strictly increasing and the last below the next block's first,
    /// the first's prefix the head's, every entry in a covered segment with a record.
    fn check(&self, b: usize) -> Result<(), Damaged> {
        let (word, bit) = (&self.checked[b / 64], 1u64 << (b % 64));
        if word.load(Ordering::Acquire) & bit != 0 {
            return Ok(());
        }
        if self.is_damaged() || !self.block_sound(b) {
            self.damaged.store(true, Ordering::Relaxed);
            return Err(Damaged);
        }
        word.fetch_or(bit, Ordering::Release);
        Ok(())
    }

    fn block_sound(&self, b: usize) -> bool {
        let rows = self.block_entries(b);
        let (from, to) = (self.block_key_at(b), self.block_key_at(b + 1));
        if to <= from || to > self.key_bytes {
            return false;
        }
        let entries = &self.bytes[self.entries + rows.start * ENTRY..self.entries + rows.end * ENTRY];
        let keys = &self.bytes[self.keys + from..self.keys + to];
        if self.crcs {
            let mut crc = crc32fast::Hasher::new();
            crc.update(entries);
            crc.update(keys);
            if crc.finalize() != le_u32(&self.bytes, self.blocks + b * BLOCK_ROW + 12) {
                return false;
            }
        }
        let mut next = from;
        let mut last: Option<&[u8]> = None;
        for i in rows {
            let e = self.entries + i * ENTRY;
            let (key_at, key_len) = (le_u32(&self.bytes, e) as usize, le_u16(&self.bytes, e + 4) as usize);
            if key_at != next || !(1..=MAX_KEY).contains(&key_len) || key_at + key_len > to {
                return false;
            }
            next = key_at + key_len;
            let key = &self.bytes[self.keys + key_at..self.keys + next];
            match last {
                None if key_prefix(key) != self.prefix(b) => return false,
                Some(l) if !increasing(l, key) => return false,
                _ => {}
            }
            last = Some(key);
            let loc = self.loc(i);
            if loc.len == 0 || self.covered_ids.binary_search(&loc.segment).is_err() {
                return false;
            }
        }
        // The next block's first key (not yet checked itself: read within bounds) is above
        // this block's last.
        if b + 1 < self.n_blocks {
            let e = self.entries + (b + 1) * BLOCK * ENTRY;
            let key_len = le_u16(&self.bytes, e + 4) as usize;
            let Some(first) = self.bytes.get(self.keys + to..self.keys + to + key_len) else {
                return false;
            };
            if key_len == 0 || !last.is_some_and(|l| increasing(l, first)) {
                return false;
            }
        }
        next == to
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

    /// Entry `i`'s key and location, from a checked block.
    pub(super) fn entry(&self, i: usize) -> Result<(&[u8], Loc), Damaged> {
        self.check(i / BLOCK)?;
        Ok((self.key(i), self.loc(i)))
    }

    /// Entry `i`'s key (its block checked, or being checked).
    fn key(&self, i: usize) -> &[u8] {
        let e = self.entries + i * ENTRY;
        let at = self.keys + le_u32(&self.bytes, e) as usize;
        &self.bytes[at..at + le_u16(&self.bytes, e + 4) as usize]
    }

    /// Entry `i`'s location (its block checked, or being checked).
    fn loc(&self, i: usize) -> Loc {
        let e = self.entries + i * ENTRY + 6;
        Loc {
            segment: le_u32(&self.bytes, e),
            offset: le_u64(&self.bytes, e + 4),
            len: le_u32(&self.bytes, e + 12),
            value_len: le_u32(&self.bytes, e + 16),
        }
    }

    /// The entry of `key`.
    pub(super) fn get(&self, key: &[u8]) -> Result<Option<Loc>, Damaged> {
        let i = self.lower(key)?;
        Ok(self.is_at(i, key)?.then(|| self.loc(i)))
    }

    /// True if entry `i` (if any) holds `key`: its block checked first (`i` may be the
    /// first entry of the block after the one a search ended in).
    fn is_at(&self, i: usize, key: &[u8]) -> Result<bool, Damaged> {
        if i >= self.count {
            return Ok(false);
        }
        self.check(i / BLOCK)?;
        Ok(self.key(i) == key)
    }

    /// The first entry whose key is not below `key`: the blocks whose first keys'
    /// prefixes bracket `key`'s (from the head), a binary search over those blocks' first
    /// keys, then one within a block — each block it reads checked first.
    fn lower(&self, key: &[u8]) -> Result<usize, Damaged> {
        let p = key_prefix(key);
        let first_where = |pred: &dyn Fn(u64) -> bool| {
            let (mut lo, mut hi) = (0, self.n_blocks);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if pred(self.prefix(mid)) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        // Every block before the last whose first prefix is below `p` starts below `key`;
        // the first block whose first prefix is above `p` starts above it.
        let below = first_where(&|f| f < p);
        let above = first_where(&|f| f <= p);
        if above == 0 {
            return Ok(0);
        }
        // The answer lies in block `lo` or at its end: block `lo` starts below `key` (or
        // is block 0), block `hi` (if any) at or above it.
        let (mut lo, mut hi) = (below.saturating_sub(1), above);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            self.check(mid)?;
            if self.key(mid * BLOCK) < key {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.check(lo)?;
        let rows = self.block_entries(lo);
        let (mut a, mut z) = (rows.start, rows.end);
        // Keys compared by their first 8 bytes as one integer first (an order that agrees
        // with the bytes', ties left to the whole keys): most steps then make no call.
        let below = |k: &[u8]| match key_prefix(k).cmp(&p) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => k < key,
        };
        while a < z {
            let mid = a + (z - a) / 2;
            if below(self.key(mid)) {
                a = mid + 1;
            } else {
                z = mid;
            }
        }
        Ok(a)
    }

    /// The first entry whose key is above `key`.
    fn upper(&self, key: &[u8]) -> Result<usize, Damaged> {
        let i = self.lower(key)?;
        Ok(if self.is_at(i, key)? { i + 1 } else { i })
    }

    /// The entries (as indexes) whose keys lie within the bounds.
    pub(super) fn range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Result<std::ops::Range<usize>, Damaged> {
        let from = match start {
            Bound::Unbounded => 0,
            Bound::Included(k) => self.lower(k)?,
            Bound::Excluded(k) => self.upper(k)?,
        };
        let to = match end {
            Bound::Unbounded => self.count,
            Bound::Excluded(k) => self.lower(k)?,
            Bound::Included(k) => self.upper(k)?,
        };
        Ok(from..to.max(from))
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
    // Per block: its first key's prefix and where its keys start.
    let mut starts: Vec<(u64, u32)> = Vec::new();
    let mut live: BTreeMap<u32, u64> = covered.iter().map(|c| (c.0, 0)).collect();
    let (mut count, mut value_bytes) = (0usize, 0u64);
    for (key, loc) in entries {
        let key_at = u32::try_from(keys.len()).map_err(|_| io::Error::other("key area over 4 GiB"))?;
        let Some(l) = live.get_mut(&loc.segment) else {
            return Err(io::Error::other("an entry outside the covered segments"));
        };
        *l += u64::from(loc.len);
        value_bytes += u64::from(loc.value_len);
        if count % BLOCK == 0 {
            starts.push((key_prefix(key), key_at));
        }
        table.extend_from_slice(&key_at.to_le_bytes());
        table.extend_from_slice(&(key.len() as u16).to_le_bytes());
        table.extend_from_slice(&loc.segment.to_le_bytes());
        table.extend_from_slice(&loc.offset.to_le_bytes());
        table.extend_from_slice(&loc.len.to_le_bytes());
        table.extend_from_slice(&loc.value_len.to_le_bytes());
        keys.extend_from_slice(key);
        count += 1;
    }
    let head_len = 32 + covered.len() * SEGMENT + starts.len() * BLOCK_ROW;
    let mut out = Vec::with_capacity(head_len + 4 + table.len() + keys.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(covered.len() as u32).to_le_bytes());
    for &(id, len, total) in covered {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&total.to_le_bytes());
        out.extend_from_slice(&live[&id].to_le_bytes());
    }
    out.extend_from_slice(&(count as u64).to_le_bytes());
    out.extend_from_slice(&(keys.len() as u64).to_le_bytes());
    out.extend_from_slice(&value_bytes.to_le_bytes());
    for (b, &(prefix, key_at)) in starts.iter().enumerate() {
        let rows = b * BLOCK * ENTRY..((b + 1) * BLOCK).min(count) * ENTRY;
        let key_end = starts.get(b + 1).map_or(keys.len(), |s| s.1 as usize);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&table[rows]);
        crc.update(&keys[key_at as usize..key_end]);
        out.extend_from_slice(&prefix.to_le_bytes());
        out.extend_from_slice(&key_at.to_le_bytes());
        out.extend_from_slice(&crc.finalize().to_le_bytes());
    }
    debug_assert_eq!(out.len(), head_len);
    out.extend_from_slice(&crc32fast::hash(&out).to_le_bytes());
    out.extend_from_slice(&table);
    drop(table);
    out.extend_from_slice(&keys);
    drop(keys);
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
        assert_eq!(snap.get(b"ab"), Ok(Some(loc(2, 0))));
        assert_eq!(snap.get(b"aa"), Ok(None));
        assert_eq!(snap.covered()[&1].live, 40);
        assert_eq!(snap.range(Bound::Included(b"a"), Bound::Excluded(b"b")), Ok(0..2));
        assert_eq!(snap.range(Bound::Excluded(b"a"), Bound::Unbounded), Ok(1..3));
        assert_eq!(snap.range(Bound::Included(b"c"), Bound::Unbounded), Ok(3..3));
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
        // Every flipped byte is refused: by the head's checksum at open, or by the
        // block's when a lookup first reads it — never answered from.
        let bytes = fs::read(path(dir.path())).unwrap();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x08;
            let Some(s) = Snapshot::decode(Bytes::from(bad), true) else {
                continue;
            };
            for (k, l) in &entries {
                assert_eq!(s.get(k), Err(Damaged), "flip at {i}, key {k:?} (expected {l:?})");
            }
            assert!(s.is_damaged());
        }
        assert!(Snapshot::decode(Bytes::copy_from_slice(&bytes[..bytes.len() - 1]), true).is_none());
        // A writer handed keys out of order writes nothing a lookup would answer from; one
        // handed keys outside the covered segments writes nothing.
        let unordered = [(&b"b"[..], loc(1, 0)), (&b"a"[..], loc(1, 20))];
        write(dir.path(), &[(1, 100, 60)], unordered.into_iter()).unwrap();
        let s = Snapshot::read(dir.path()).unwrap();
        assert_eq!(s.get(b"a"), Err(Damaged));
        assert!(write(dir.path(), &[(1, 100, 60)], [(&b"a"[..], loc(9, 0))].into_iter()).is_err());
    }

    /// Blocks are checked when first read, each once: a lookup reads a few of them, and a
    /// damaged block is found by the lookup that reaches it while others still answer.
    #[test]
    fn blocks_are_checked_when_first_read() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<Vec<u8>> = (0..1000u32).map(|i| format!("k{i:06}").into_bytes()).collect();
        let total = 20 * keys.len() as u64;
        write(
            dir.path(),
            &[(1, total, total)],
            keys.iter().enumerate().map(|(i, k)| (&k[..], loc(1, 20 * i as u64))),
        )
        .unwrap();
        let checked = |s: &Snapshot| -> u32 { s.checked.iter().map(|w| w.load(Ordering::Relaxed).count_ones()).sum() };
        let snap = Snapshot::read(dir.path()).unwrap();
        assert_eq!(snap.n_blocks, 16);
        assert_eq!(checked(&snap), 0, "an open checks no block");
        assert_eq!(snap.get(&keys[500]), Ok(Some(loc(1, 10_000))));
        assert!((1..=5).contains(&checked(&snap)), "{}", checked(&snap));
        // One key's bytes changed in block 12: the blocks before it still answer.
        let mut bytes = fs::read(path(dir.path())).unwrap();
        let at = bytes.len() - (1000 - 12 * 64 - 3) * 7 + 2;
        bytes[at] ^= 0x01;
        let s = Snapshot::decode(Bytes::from(bytes), true).unwrap();
        assert_eq!(s.get(&keys[10]), Ok(Some(loc(1, 200))));
        assert!(!s.is_damaged());
        assert_eq!(s.get(&keys[12 * 64 + 5]), Err(Damaged));
        assert!(s.is_damaged());
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
        assert!(snap.n_blocks > 20, "many blocks");
        for (k, l) in keys.iter().zip(&locs) {
            assert_eq!(snap.get(k), Ok(Some(*l)), "{}", String::from_utf8_lossy(k));
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
            assert_eq!(snap.lower(p), Ok(expect), "{}", String::from_utf8_lossy(p));
            assert_eq!(snap.get(p).unwrap().is_some(), keys.binary_search(p).is_ok());
        }
    }
}

#[cfg(test)]
mod golden {
    const GOLDEN: &str = "43525832010000000100000064000000000000003c000000000000003c00000000000000020000000000000004000000000000001200000000000000000000000000316b00000000caa224aec8a3fdb70000000002000100000000000000000000001e00000009000000020000000200010000001e000000000000001e000000090000006b316b32";
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
