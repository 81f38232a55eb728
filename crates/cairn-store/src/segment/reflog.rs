//! The ref log of a segment store: one append-only file, `reflog`, of checksummed
//! records (every byte is described in `storage-format.md` §6.11).
//!
//! ```text
//! magic     4  b"CRL1"
//! len       4  u32 LE, the payload's length, 1..=MAX_REF_LOG_RECORD
//! head_crc  4  crc32 of the 8 bytes above
//! payload   len
//! crc       4  crc32 of the payload
//! ```
//!
//! A record is written at the end of the file with one `write` and no sync of its own; it
//! is synced by the store's next flush. Reading walks the records from the start: a
//! record whose payload fails its checksum is skipped (its length is trusted, as its
//! header checksum held); bytes that hold no sound header are skipped up to the next
//! offset that does. Either costs only the records in those bytes, and is reported. A
//! torn record at the end of the file (a crash mid-append) is reported the same way and
//! cut off before the next append, so new records never follow garbage.
//!
//! [`RefLogFile::retain`] writes the records to keep into a temporary file, syncs it,
//! renames it over `reflog` and syncs the directory: a crash leaves the old log or the
//! new one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::log::{io_error, sync_dir};
use crate::backend::{check_ref_log_record, MAX_REF_LOG_RECORD};
use crate::error::StoreError;

/// The file's name in the store directory.
pub(super) const FILE: &str = "reflog";
/// The first four bytes of every record.
const MAGIC: [u8; 4] = *b"CRL1";
/// Bytes before the payload.
const HEADER: usize = 12;
/// Bytes after the payload.
const TRAILER: usize = 4;

/// Appends one record to `out`.
pub(super) fn encode(payload: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let head_crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&head_crc.to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
}

/// The payload length a sound header at the start of `bytes` announces.
fn header_len(bytes: &[u8]) -> Option<usize> {
    let head = bytes.get(..HEADER)?;
    if head[..4] != MAGIC {
        return None;
    }
    let stored = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    if crc32fast::hash(&head[..8]) != stored {
        return None;
    }
    let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
    (1..=MAX_REF_LOG_RECORD).contains(&len).then_some(len)
}

/// What a scan of the file found.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// The sound records' payloads, in file order.
    pub records: Vec<Vec<u8>>,
    /// One line per stretch of damage.
    pub damage: Vec<String>,
    /// Where the next record goes: the end of the last sound record, or of the last
    /// damaged stretch followed by a sound record (a torn tail is cut off).
    pub end: u64,
}

/// Reads every record of `bytes` (the whole file).
pub(super) fn scan(bytes: &[u8]) -> Scan {
    let mut out = Scan::default();
    let mut at = 0usize;
    // Start of a stretch of bytes holding no sound header, if in one.
    let mut bad_from: Option<usize> = None;
    while at < bytes.len() {
        let Some(len) = header_len(&bytes[at..]) else {
            bad_from.get_or_insert(at);
            at += 1;
            continue;
        };
        let total = HEADER + len + TRAILER;
        if at + total > bytes.len() {
            // A sound header whose record runs past the end: torn by a crash mid-append.
            // It is the tail; whatever the header lies about, nothing sound follows.
            bad_from.get_or_insert(at);
            break;
        }
        if let Some(from) = bad_from.take() {
            out.damage
                .push(format!("ref log: bytes {from}..{at} hold no readable record (skipped)"));
        }
        let payload = &bytes[at + HEADER..at + HEADER + len];
        let stored = u32::from_le_bytes(bytes[at + HEADER + len..at + total].try_into().expect("4 bytes"));
        if crc32fast::hash(payload) == stored {
            out.records.push(payload.to_vec());
        } else {
            out.damage.push(format!(
                "ref log: the record at byte {at} ({len} bytes) fails its checksum (skipped)"
            ));
        }
        at += total;
        out.end = at as u64;
    }
    if let Some(from) = bad_from {
        out.damage.push(format!(
            "ref log: bytes {from}..{} at the end hold no whole record (a write cut short; dropped at the next append)",
            bytes.len()
        ));
    }
    out
}

/// The ref log file of a store.
pub(super) struct RefLogFile {
    dir: PathBuf,
    path: PathBuf,
    state: Mutex<State>,
}

struct State {
    /// Where the next record goes (see [`Scan::end`]).
    end: u64,
    /// The open file, once a record was appended (kept open for the next ones).
    file: Option<File>,
    /// Records appended since the last sync.
    dirty: bool,
    /// When the file was last synced (or opened).
    synced_at: Instant,
    /// Damage found by the last full read, one line each.
    damage: Vec<String>,
}

impl RefLogFile {
    /// Opens the ref log of the store in `dir` (an absent file is an empty log). Reads the
    /// file once to find its end and any damage; writes nothing.
    pub(super) fn open(dir: &Path) -> Result<RefLogFile, StoreError> {
        let path = dir.join(FILE);
        let bytes = read_or_empty(dir, &path)?;
        let scan = scan(&bytes);
        Ok(RefLogFile {
            dir: dir.to_path_buf(),
            path,
            state: Mutex::new(State {
                end: scan.end,
                file: None,
                dirty: false,
                synced_at: Instant::now(),
                damage: scan.damage,
            }),
        })
    }

    /// Appends one record (not synced: see [`RefLogFile::sync`]).
    pub(super) fn append(&self, payload: &[u8]) -> Result<(), StoreError> {
        check_ref_log_record(payload)?;
        let err = |e: io::Error| io_error(&self.dir, "appending to the ref log", e);
        let mut record = Vec::with_capacity(HEADER + payload.len() + TRAILER);
        encode(payload, &mut record);
        let mut state = self.state.lock();
        if state.file.is_none() {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)
                .map_err(err)?;
            // A torn tail (or damage running to the end) is cut off, so the new record
            // does not follow garbage.
            if file.metadata().map_err(err)?.len() > state.end {
                file.set_len(state.end).map_err(err)?;
            }
            state.file = Some(file);
        }
        let end = state.end;
        let file = state.file.as_ref().expect("opened above");
        if let Err(e) = file.write_all_at(&record, end) {
            // Whatever part was written lies past `end`: the next append overwrites it.
            let _ = file.set_len(end);
            return Err(err(e));
        }
        state.end += record.len() as u64;
        state.dirty = true;
        Ok(())
    }

    /// Makes every appended record durable.
    pub(super) fn sync(&self) -> Result<(), StoreError> {
        self.sync_unless_within(Duration::ZERO)
    }

    /// Syncs the records appended since the last sync, unless that sync is less than
    /// `interval` ago: the commit path's bound on what a power loss can take from the log
    /// without an fsync per move.
    pub(super) fn sync_unless_within(&self, interval: Duration) -> Result<(), StoreError> {
        let mut state = self.state.lock();
        if !state.dirty || (!interval.is_zero() && state.synced_at.elapsed() < interval) {
            return Ok(());
        }
        if let Some(file) = &state.file {
            file.sync_data()
                .map_err(|e| io_error(&self.dir, "syncing the ref log", e))?;
        }
        state.dirty = false;
        state.synced_at = Instant::now();
        Ok(())
    }

    /// Every sound record, in order; the damage found is kept for [`RefLogFile::damage`].
    pub(super) fn read(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut state = self.state.lock();
        let bytes = read_or_empty(&self.dir, &self.path)?;
        let scan = scan(&bytes);
        state.damage = scan.damage;
        Ok(scan.records)
    }

    /// Damage found by the last read (at open, or since).
    pub(super) fn damage(&self) -> Vec<String> {
        self.state.lock().damage.clone()
    }

    /// Rewrites the log with the records `keep` accepts (see the module docs).
    pub(super) fn retain(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<(), StoreError> {
        let err = |e: io::Error| io_error(&self.dir, "rewriting the ref log", e);
        let mut state = self.state.lock();
        let bytes = read_or_empty(&self.dir, &self.path)?;
        let scan = scan(&bytes);
        let mut out = Vec::new();
        for record in scan.records.iter().filter(|r| keep(r)) {
            encode(record, &mut out);
        }
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(err)?;
        tmp.write_all(&out)
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(err)?;
        tmp.persist(&self.path).map_err(|e| err(e.error))?;
        sync_dir(&self.dir).map_err(err)?;
        // The old handle names the replaced file: the next append opens the new one.
        state.file = None;
        state.end = out.len() as u64;
        state.dirty = false;
        state.damage.clear();
        Ok(())
    }
}

/// The file's bytes, or none if it does not exist.
fn read_or_empty(dir: &Path, path: &Path) -> Result<Vec<u8>, StoreError> {
    match fs::read(path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io_error(dir, "reading the ref log", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_costs_one_record() {
        let mut bytes = Vec::new();
        for p in [&b"one"[..], b"two", b"three"] {
            encode(p, &mut bytes);
        }
        let scan_all = scan(&bytes);
        assert_eq!(
            scan_all.records,
            vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
        assert!(scan_all.damage.is_empty());
        assert_eq!(scan_all.end, bytes.len() as u64);
        // A payload byte of the second record: that record goes.
        let mut damaged = bytes.clone();
        damaged[HEADER + 3 + TRAILER + HEADER] ^= 1;
        let s = scan(&damaged);
        assert_eq!(s.records, vec![b"one".to_vec(), b"three".to_vec()]);
        assert_eq!(s.damage.len(), 1);
        // A header byte of the second record: skipped up to the third.
        let mut damaged = bytes.clone();
        damaged[HEADER + 3 + TRAILER + 5] ^= 1;
        let s = scan(&damaged);
        assert_eq!(s.records, vec![b"one".to_vec(), b"three".to_vec()]);
        assert_eq!(s.damage.len(), 1);
        // A torn tail: the last record cut short.
        let s = scan(&bytes[..bytes.len() - 2]);
        assert_eq!(s.records, vec![b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(s.end, (2 * (HEADER + 3 + TRAILER)) as u64);
        assert_eq!(s.damage.len(), 1);
    }

    #[test]
    fn golden_record() {
        let mut out = Vec::new();
        encode(b"ab", &mut out);
        // "CRL1", len 2 (u32 LE), crc32 of those 8 bytes (LE), "ab", crc32("ab") (LE).
        assert_eq!(
            out,
            [
                0x43, 0x52, 0x4c, 0x31, 0x02, 0x00, 0x00, 0x00, 0x53, 0x71, 0xa8, 0x38, 0x61, 0x62, 0x6d, 0x48, 0x83,
                0x9e
            ]
        );
    }
}
