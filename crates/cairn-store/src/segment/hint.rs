//! Hint files: the list of a sealed segment's records, so that opening a store reads a
//! few bytes per record instead of scanning every segment. A hint is a cache: written
//! when a segment is sealed (or first scanned whole), used only if its checksum holds and
//! it describes a segment of the length found on disk, and otherwise ignored.
//!
//! ```text
//! magic       4  b"CRH1"
//! seg_len     8  u64 LE: the segment's length when the hint was written
//! count       4  u32 LE
//! count × { kind 1 (1 put, 2 delete), key_len 2 (u16 LE), key, offset 8 (u64 LE), value_len 4 (u32 LE) }
//! crc         4  crc32 of everything above
//! ```

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::record::{Kind, MAX_KEY};

const MAGIC: [u8; 4] = *b"CRH1";

/// One record of a segment, as a hint lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub kind: Kind,
    pub key: Vec<u8>,
    /// The record's first byte in the segment.
    pub offset: u64,
    pub value_len: u32,
}

/// The hint file of segment `id`.
pub(super) fn path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("{id:08}.hint"))
}

/// The hint of segment `id`, if it exists, is sound and matches `segment`'s length.
pub(super) fn read(dir: &Path, id: u32, segment: &File) -> Option<Vec<Entry>> {
    let bytes = fs::read(path(dir, id)).ok()?;
    let seg_len = segment.metadata().ok()?.len();
    decode(&bytes, seg_len)
}

fn decode(bytes: &[u8], seg_len: u64) -> Option<Vec<Entry>> {
    let (body, crc) = bytes.split_last_chunk::<4>()?;
    if crc32fast::hash(body) != u32::from_le_bytes(*crc) {
        return None;
    }
    let mut r = body.strip_prefix(&MAGIC)?;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, rest) = r.split_at_checked(n)?;
        r = rest;
        Some(head)
    };
    if u64::from_le_bytes(take(8)?.try_into().ok()?) != seg_len {
        return None;
    }
    let count = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
    let mut entries = Vec::with_capacity(count.min(1 << 20));
    for _ in 0..count {
        let kind = match take(1)?[0] {
            1 => Kind::Put,
            2 => Kind::Delete,
            _ => return None,
        };
        let key_len = u16::from_le_bytes(take(2)?.try_into().ok()?) as usize;
        if !(1..=MAX_KEY).contains(&key_len) {
            return None;
        }
        let key = take(key_len)?.to_vec();
        let offset = u64::from_le_bytes(take(8)?.try_into().ok()?);
        let value_len = u32::from_le_bytes(take(4)?.try_into().ok()?);
        entries.push(Entry {
            kind,
            key,
            offset,
            value_len,
        });
    }
    r.is_empty().then_some(entries)
}

fn encode(seg_len: u64, entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + entries.len() * 50);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&seg_len.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for e in entries {
        out.push(match e.kind {
            Kind::Put => 1,
            Kind::Delete => 2,
        });
        out.extend_from_slice(&(e.key.len() as u16).to_le_bytes());
        out.extend_from_slice(&e.key);
        out.extend_from_slice(&e.offset.to_le_bytes());
        out.extend_from_slice(&e.value_len.to_le_bytes());
    }
    out.extend_from_slice(&crc32fast::hash(&out).to_le_bytes());
    out
}

/// Writes the hint of segment `id` (a temporary file renamed into place, so a reader
/// sees the old hint, none, or the whole new one).
pub(super) fn write(dir: &Path, id: u32, seg_len: u64, entries: &[Entry]) -> io::Result<()> {
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(&encode(seg_len, entries))?;
    tmp.persist(path(dir, id)).map_err(|e| e.error)?;
    Ok(())
}

/// Removes the hint of segment `id`, if any (`true`: there was one, and it is gone).
pub(super) fn remove(dir: &Path, id: u32) -> bool {
    fs::remove_file(path(dir, id)).is_ok()
}

/// For the fuzz target (`cairn_store::fuzzing::hint`): `body` with its crc32 appended
/// (so arbitrary input reaches the parser) through the strict decoder; what it accepts
/// must encode back to the same bytes. True if accepted.
pub(crate) fn fuzz(body: &[u8], seg_len: u64) -> bool {
    let mut bytes = body.to_vec();
    bytes.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    match decode(&bytes, seg_len) {
        Some(entries) => {
            assert_eq!(encode(seg_len, &entries), bytes, "an accepted hint encodes back");
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let entries = vec![
            Entry {
                kind: Kind::Put,
                key: b"k1".to_vec(),
                offset: 0,
                value_len: 10,
            },
            Entry {
                kind: Kind::Delete,
                key: vec![7; 32],
                offset: 31,
                value_len: 0,
            },
        ];
        let bytes = encode(99, &entries);
        assert_eq!(decode(&bytes, 99), Some(entries));
        assert_eq!(decode(&bytes, 100), None, "another segment length");
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x04;
            assert_eq!(decode(&bad, 99), None, "flip at {i}");
        }
        assert_eq!(decode(&bytes[..bytes.len() - 1], 99), None);
    }
}
