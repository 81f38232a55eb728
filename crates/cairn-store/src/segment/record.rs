//! One record of a segment file, and the scan that reads a segment back.
//!
//! ```text
//! magic      4  b"CRS1"
//! kind       1  1 = put, 2 = delete (a tombstone: no value)
//! key_len    2  u16 LE, 1..=MAX_KEY
//! value_len  4  u32 LE, 0..=MAX_VALUE (0 for a tombstone)
//! head_crc   4  crc32 of the 11 bytes above and the key
//! key        key_len
//! value      value_len
//! value_crc  4  crc32 of the value
//! ```
//!
//! The header and the value have their own checksums so that a damaged value is still
//! found under its key (and reported as that key's corruption), while a damaged header
//! is skipped: the scan looks for the next offset that holds a record whose header
//! checksum holds, and reports the bytes in between as damaged.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The first four bytes of every record.
pub(super) const MAGIC: [u8; 4] = *b"CRS1";
/// Bytes before the key.
pub(super) const HEADER: usize = 15;
/// Bytes after the value.
pub(super) const TRAILER: usize = 4;
/// The longest key (derived-data keys are well under it; object keys are 32 bytes).
pub(super) const MAX_KEY: usize = 4096;
/// The longest value (1 GiB; objects are at most 16 MiB, index parts far less).
pub(super) const MAX_VALUE: usize = 1 << 30;

/// What a record does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Stores the value under the key.
    Put,
    /// Removes the key (a tombstone).
    Delete,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Put => 1,
            Kind::Delete => 2,
        }
    }

    fn of(byte: u8) -> Option<Kind> {
        match byte {
            1 => Some(Kind::Put),
            2 => Some(Kind::Delete),
            _ => None,
        }
    }
}

/// The length of a record with these key and value lengths.
pub(super) fn record_len(key_len: usize, value_len: usize) -> u64 {
    (HEADER + key_len + value_len + TRAILER) as u64
}

/// Appends one record to `out`.
pub(super) fn encode(kind: Kind, key: &[u8], value: &[u8], out: &mut Vec<u8>) {
    encode_head(kind, key, value.len(), out);
    out.extend_from_slice(value);
    out.extend_from_slice(&trailer(value));
}

/// Appends a record's header and key to `out`: what comes before its `value_len` bytes of
/// value, which [`trailer`] follows.
pub(super) fn encode_head(kind: Kind, key: &[u8], value_len: usize, out: &mut Vec<u8>) {
    debug_assert!((1..=MAX_KEY).contains(&key.len()) && value_len <= MAX_VALUE);
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.push(kind.byte());
    out.extend_from_slice(&(key.len() as u16).to_le_bytes());
    out.extend_from_slice(&(value_len as u32).to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&out[start..]);
    crc.update(key);
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(key);
}

/// What follows a record's value: its crc32.
pub(super) fn trailer(value: &[u8]) -> [u8; TRAILER] {
    crc32fast::hash(value).to_le_bytes()
}

/// A header whose checksum holds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Header {
    pub kind: Kind,
    pub key_len: usize,
    pub value_len: usize,
}

/// Checks the header at the start of `bytes` (which must hold the header and the key).
/// `None` if it is not a sound header.
pub(super) fn parse_header(bytes: &[u8]) -> Option<Header> {
    let head: &[u8; HEADER] = bytes.first_chunk()?;
    if head[..4] != MAGIC {
        return None;
    }
    let kind = Kind::of(head[4])?;
    let key_len = u16::from_le_bytes([head[5], head[6]]) as usize;
    let value_len = u32::from_le_bytes([head[7], head[8], head[9], head[10]]) as usize;
    if !(1..=MAX_KEY).contains(&key_len) || value_len > MAX_VALUE || (kind == Kind::Delete && value_len != 0) {
        return None;
    }
    let key = bytes.get(HEADER..HEADER + key_len)?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&head[..11]);
    crc.update(key);
    let stored = u32::from_le_bytes([head[11], head[12], head[13], head[14]]);
    (crc.finalize() == stored).then_some(Header {
        kind,
        key_len,
        value_len,
    })
}

/// Checks a whole record read back from `bytes` (exactly one record) against the key it
/// was indexed under; returns its value, or what is wrong.
pub(super) fn check<'b>(bytes: &'b [u8], key: &[u8]) -> Result<&'b [u8], String> {
    let (value, stored) = framing(bytes, key)?;
    let computed = crc32fast::hash(value);
    if stored != computed.to_le_bytes() {
        return Err(format!(
            "value crc32 mismatch: stored {:08x}, computed {computed:08x} over {} bytes",
            u32::from_le_bytes(stored.try_into().expect("4 bytes")),
            value.len()
        ));
    }
    Ok(value)
}

/// Checks a record's framing — its header's checksum, its key, its length — but not its
/// value's checksum: for a reader that checks the value's pieces against checksums of its
/// own as it reads them (`Store::get_derived_shared_unchecked`). Returns the value.
pub(super) fn check_framing<'b>(bytes: &'b [u8], key: &[u8]) -> Result<&'b [u8], String> {
    framing(bytes, key).map(|(value, _)| value)
}

/// The value and stored value crc32 of a record whose header and key check.
fn framing<'b>(bytes: &'b [u8], key: &[u8]) -> Result<(&'b [u8], &'b [u8]), String> {
    let header = parse_header(bytes).ok_or("the record header fails its checksum")?;
    if &bytes[HEADER..HEADER + header.key_len] != key {
        return Err("the record holds another key".into());
    }
    let value_start = HEADER + header.key_len;
    let value = bytes
        .get(value_start..value_start + header.value_len)
        .ok_or("the record is cut short")?;
    let stored = bytes
        .get(value_start + header.value_len..value_start + header.value_len + TRAILER)
        .ok_or("the record is cut short")?;
    Ok((value, stored))
}

/// What a scan finds, in file order.
#[derive(Debug)]
pub(super) enum Found {
    /// A record with a sound header at `offset` (its value is checked when read).
    Record {
        offset: u64,
        kind: Kind,
        key: Vec<u8>,
        value_len: usize,
    },
    /// Bytes `start..end` hold no sound record header: skipped.
    Damaged { start: u64, end: u64 },
}

/// How a scan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ScanEnd {
    /// The end of the last sound record: where the next record is appended.
    pub good_end: u64,
    /// The file's length; bytes from `good_end` to here are an unfinished tail (a write
    /// cut short by a crash, or damage at the very end).
    pub file_len: u64,
}

/// A read window over a file, refilled as the scan moves.
struct Window<'f> {
    file: &'f File,
    len: u64,
    start: u64,
    bytes: Vec<u8>,
}

/// Size of a scan's read window.
const WINDOW: usize = 1 << 20;

impl<'f> Window<'f> {
    /// Up to `n` bytes at `offset` (fewer at the end of the file).
    fn at(&mut self, offset: u64, n: usize) -> io::Result<&[u8]> {
        let end = (offset + n as u64).min(self.len);
        if offset < self.start || end > self.start + self.bytes.len() as u64 {
            let want = (self.len - offset).min(WINDOW.max(n) as u64) as usize;
            self.bytes.resize(want, 0);
            self.file.read_exact_at(&mut self.bytes, offset)?;
            self.start = offset;
        }
        let from = (offset - self.start) as usize;
        Ok(&self.bytes[from..from + (end - offset) as usize])
    }
}

/// Reads every record of `file` in order, calling `found` for each record and each
/// damaged range. Values are skipped, not read (they are checked when read back).
pub(super) fn scan(file: &File, found: impl FnMut(Found)) -> io::Result<ScanEnd> {
    scan_from(file, 0, found)
}

/// [`scan`] from byte `start` (the end of a record) on.
pub(super) fn scan_from(file: &File, start: u64, mut found: impl FnMut(Found)) -> io::Result<ScanEnd> {
    let len = file.metadata()?.len();
    let mut window = Window {
        file,
        len,
        start: 0,
        bytes: Vec::new(),
    };
    let mut offset = start;
    let mut good_end = start;
    while offset < len {
        if let Some((header, key)) = sound_header(&mut window, offset)? {
            let end = offset + record_len(header.key_len, header.value_len);
            if end > len {
                // A record that runs past the end of the file: a write cut short.
                break;
            }
            found(Found::Record {
                offset,
                kind: header.kind,
                key,
                value_len: header.value_len,
            });
            offset = end;
            good_end = end;
            continue;
        }
        // Damage: look for the next sound header.
        let mut next = offset + 1;
        let resumed = loop {
            if next >= len {
                break None;
            }
            let chunk = window.at(next, WINDOW)?;
            match chunk.windows(MAGIC.len()).position(|w| w == MAGIC) {
                Some(i) => {
                    let at = next + i as u64;
                    if let Some((header, _)) = sound_header(&mut window, at)? {
                        if at + record_len(header.key_len, header.value_len) <= len {
                            break Some(at);
                        }
                    }
                    next = at + 1;
                }
                None => next += (chunk.len().saturating_sub(MAGIC.len() - 1)).max(1) as u64,
            }
        };
        match resumed {
            Some(at) => {
                found(Found::Damaged { start: offset, end: at });
                offset = at;
            }
            None => break,
        }
    }
    Ok(ScanEnd {
        good_end,
        file_len: len,
    })
}

/// The sound header at `offset` and its key, if there is one.
fn sound_header(window: &mut Window<'_>, offset: u64) -> io::Result<Option<(Header, Vec<u8>)>> {
    let head = window.at(offset, HEADER + MAX_KEY)?;
    Ok(parse_header(head).map(|h| (h, head[HEADER..HEADER + h.key_len].to_vec())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    /// Records (offset, key), damaged ranges and the end, as a scan reports them.
    type Scanned = (Vec<(u64, Vec<u8>)>, Vec<(u64, u64)>, ScanEnd);

    fn records(file: &File) -> Scanned {
        let mut recs = Vec::new();
        let mut damage = Vec::new();
        let end = scan(file, |f| match f {
            Found::Record { offset, key, .. } => recs.push((offset, key)),
            Found::Damaged { start, end } => damage.push((start, end)),
        })
        .unwrap();
        (recs, damage, end)
    }

    #[test]
    fn round_trip_and_check() {
        let mut out = Vec::new();
        encode(Kind::Put, b"key", b"value", &mut out);
        assert_eq!(out.len() as u64, record_len(3, 5));
        assert_eq!(check(&out, b"key"), Ok(&b"value"[..]));
        assert!(check(&out, b"kez").is_err());
        let mut bad = out.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(check(&bad, b"key").unwrap_err().contains("crc32"));
        // The framing alone: a value whose checksum fails passes, another key or a damaged
        // header does not.
        assert_eq!(check_framing(&bad, b"key"), Ok(&b"value"[..]));
        let mut flipped = out.clone();
        flipped[HEADER + 3] ^= 1;
        assert!(check(&flipped, b"key").is_err());
        assert_eq!(check_framing(&flipped, b"key"), Ok(&b"walue"[..]));
        assert!(check_framing(&out, b"kez").is_err());
        let mut header = out.clone();
        header[7] ^= 1;
        assert!(check_framing(&header, b"key").is_err());
        assert!(check_framing(&out[..out.len() - 1], b"key").is_err());
    }

    #[test]
    fn a_damaged_header_is_skipped_and_reported_and_the_rest_is_read() {
        let mut out = Vec::new();
        for i in 0..5u8 {
            encode(Kind::Put, &[b'k', i], &[i; 100], &mut out);
        }
        let one = record_len(2, 100);
        let mut damaged = out.clone();
        damaged[one as usize + 6] ^= 0x10; // key_len of record 1
        let (recs, damage, end) = records(&file_of(&damaged));
        let keys: Vec<u8> = recs.iter().map(|(_, k)| k[1]).collect();
        assert_eq!(keys, [0, 2, 3, 4]);
        assert_eq!(damage, [(one, 2 * one)]);
        assert_eq!(end.good_end, out.len() as u64);
    }

    #[test]
    fn a_cut_tail_ends_the_scan_at_the_last_sound_record() {
        let mut out = Vec::new();
        encode(Kind::Put, b"a", b"1", &mut out);
        let first = out.len() as u64;
        encode(Kind::Put, b"b", &[7; 50], &mut out);
        for cut in [first + 3, first + 20, out.len() as u64 - 1] {
            let (recs, damage, end) = records(&file_of(&out[..cut as usize]));
            assert_eq!(recs.len(), 1, "cut at {cut}");
            assert!(damage.is_empty());
            assert_eq!(
                end,
                ScanEnd {
                    good_end: first,
                    file_len: cut
                }
            );
        }
    }

    #[test]
    fn every_single_byte_flip_costs_at_most_the_record_it_hits() {
        let mut out = Vec::new();
        let mut starts = Vec::new();
        for i in 0..6u8 {
            starts.push(out.len());
            encode(Kind::Put, &[b'k', i], &vec![i; 20 + i as usize], &mut out);
        }
        starts.push(out.len());
        for pos in 0..out.len() {
            let mut damaged = out.clone();
            damaged[pos] ^= 0x01;
            let hit = starts.iter().rposition(|&s| s <= pos).unwrap();
            let (recs, _, _) = records(&file_of(&damaged));
            for (i, &start) in starts[..6].iter().enumerate() {
                let present = recs.iter().any(|(o, k)| *o == start as u64 && k[1] == i as u8);
                if i != hit {
                    assert!(present, "flip at {pos} lost record {i}");
                }
            }
            // The hit record is either skipped or, if only its value or trailer changed,
            // indexed and then refused when read.
            if let Some((o, _)) = recs.iter().find(|(o, _)| *o == starts[hit] as u64) {
                let bytes = &damaged[*o as usize..starts[hit + 1]];
                assert!(
                    check(bytes, &[b'k', hit as u8]).is_err(),
                    "flip at {pos} went unnoticed"
                );
            }
        }
    }
}
