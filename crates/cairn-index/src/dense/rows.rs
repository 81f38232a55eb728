//! Dense rows (and node texts, `chunk/node.rs`) left on disk: a part whose exact `f32` rows are read from its stored value,
//! one row at a time, when rescoring needs them (the int8 codes that the scan and the graph
//! walks read stay in memory).
//!
//! A row read this way skips the store's checksum of the whole value, so each row carries
//! its own: the crc32 of the row's little-endian bytes, computed when the part was built or
//! loaded (and checked) whole. A row that cannot be read, or whose bytes fail that
//! checksum, is never scored: its vector is read from the node object instead, and the
//! source is told, so the stored part is rebuilt.

use std::fmt;
use std::sync::{Arc, OnceLock};

use cairn_core::Hash;

/// Where a part's rows are read from: the repository's store (the plugin seam between the
/// index and the store that holds its values).
pub trait RowSource: Send + Sync {
    /// Reads bytes `offset..offset + out.len()` of the stored derived value `key`,
    /// unchecked. `Ok(false)` if the value is absent or shorter.
    fn read_at(&self, key: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, String>;

    /// The vector of dense `model` held by node object `node`, read from the data: what
    /// a row that cannot be read from its part is scored with.
    fn node_vector(&self, node: &Hash, model: &str) -> Result<Vec<f32>, String>;

    /// The text of node object `node`, read from the data: what a text left on disk
    /// that cannot be read from its core part is rendered with.
    fn node_text(&self, node: &Hash) -> Result<String, String>;

    /// A reader of stored value `key`'s ranges that finds the value once, unchecked (as
    /// [`RowSource::read_at`]), if the store has one: a part reading many rows of one
    /// value then looks it up once. A row the reader cannot give, or that fails its
    /// checksum, is read again with [`RowSource::read_at`] before it counts as damage.
    /// `None` (the default, and on any error) reads each row with [`RowSource::read_at`].
    fn reader(&self, key: &[u8]) -> Option<ValueReader> {
        let _ = key;
        None
    }

    /// Told that the stored value `key` has a row that cannot be read (`detail` says
    /// why), so that it is rebuilt from the data.
    fn damaged(&self, key: &[u8], detail: String);
}

/// Reads bytes `offset..offset + out.len()` of one stored value, found once
/// ([`RowSource::reader`]): `Ok(false)` if the value is shorter.
pub type ValueReader = Arc<dyn Fn(u64, &mut [u8]) -> Result<bool, String> + Send + Sync>;

/// The rows of one part, as stored: where they are and each row's checksum.
#[derive(Clone)]
pub(crate) struct StoredRows {
    pub(crate) source: Arc<dyn RowSource>,
    /// The part's store key.
    pub(crate) key: Box<[u8]>,
    /// Byte offset of row 0 in the stored value (rows follow one another, `4 · dim`
    /// bytes each).
    pub(crate) first: u64,
    /// crc32 of each row's bytes.
    pub(crate) crcs: Box<[u32]>,
    /// The stored value's reader, asked of the source by the first row read
    /// ([`RowSource::reader`]; `None`: rows are read by key).
    pub(crate) reader: OnceLock<Option<ValueReader>>,
}

impl fmt::Debug for StoredRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredRows")
            .field("first", &self.first)
            .field("rows", &self.crcs.len())
            .finish()
    }
}

/// crc32 of a row's little-endian bytes.
pub(crate) fn row_crc(v: &[f32]) -> u32 {
    // One pass over a buffer of the row's bytes: feeding the hasher 4 bytes at a time
    // takes its byte-wise path (at 1M rows of 384, a second of a cold load).
    ROW_BYTES.with(|b| {
        let mut b = b.borrow_mut();
        b.clear();
        b.extend(v.iter().flat_map(|x| x.to_le_bytes()));
        crc32fast::hash(&b)
    })
}

thread_local! {
    static ROW_BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

thread_local! {
    static BUF: std::cell::RefCell<(Vec<u8>, Vec<f32>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

impl StoredRows {
    /// Row `r` (of `dim` components), checked, passed to `f`; `Err` says why it could not
    /// be read.
    pub(crate) fn with_row<T>(&self, r: usize, dim: usize, f: impl FnOnce(&[f32]) -> T) -> Result<T, String> {
        let at = self.first + (r * dim * 4) as u64;
        BUF.with(|b| {
            let (bytes, row) = &mut *b.borrow_mut();
            bytes.resize(dim * 4, 0);
            let sound = |bytes: &[u8]| crc32fast::hash(bytes) == self.crcs[r];
            let found = match self.reader.get_or_init(|| self.source.reader(&self.key)) {
                Some(reader) => matches!(reader(at, bytes), Ok(true)) && sound(bytes),
                None => false,
            };
            // By key when there is no reader, or when what it found fails: the record it
            // found may be an older one of the key (a damaged part since rebuilt), and
            // what the key holds now decides.
            if !found {
                match self.source.read_at(&self.key, at, bytes) {
                    Ok(true) => {}
                    Ok(false) => return Err(format!("row {r} is missing from the stored part")),
                    Err(e) => return Err(format!("row {r} could not be read ({e})")),
                }
                if !sound(bytes) {
                    return Err(format!("row {r} fails its checksum"));
                }
            }
            row.clear();
            row.extend(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
            Ok(f(row))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store whose value under the key is `by_key`, and whose reader found `found` (an
    /// older record of the key).
    struct Source {
        by_key: Vec<u8>,
        found: Option<Vec<u8>>,
    }

    fn read(value: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, String> {
        let at = offset as usize;
        match value.get(at..at + out.len()) {
            Some(b) => {
                out.copy_from_slice(b);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    impl RowSource for Source {
        fn read_at(&self, _key: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, String> {
            read(&self.by_key, offset, out)
        }
        fn reader(&self, _key: &[u8]) -> Option<ValueReader> {
            let found = self.found.clone()?;
            Some(Arc::new(move |offset, out: &mut [u8]| read(&found, offset, out)))
        }
        fn node_vector(&self, _node: &Hash, _model: &str) -> Result<Vec<f32>, String> {
            Err("no nodes here".into())
        }
        fn node_text(&self, _node: &Hash) -> Result<String, String> {
            Err("no nodes here".into())
        }
        fn damaged(&self, _key: &[u8], _detail: String) {}
    }

    fn rows(by_key: Vec<u8>, found: Option<Vec<u8>>, good: &[f32]) -> StoredRows {
        StoredRows {
            source: Arc::new(Source { by_key, found }),
            key: Box::from(&b"k"[..]),
            first: 0,
            crcs: Box::new([row_crc(good)]),
            reader: OnceLock::new(),
        }
    }

    #[test]
    fn a_row_the_reader_found_damaged_is_read_by_key() {
        let good = [1.5f32, -2.0, 0.25];
        let bytes: Vec<u8> = good.iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut bad = bytes.clone();
        bad[5] ^= 0x40;
        let row = |s: &StoredRows| s.with_row(0, 3, |r| r.to_vec());
        // Found sound: read through the reader.
        assert_eq!(row(&rows(bad.clone(), Some(bytes.clone()), &good)), Ok(good.to_vec()));
        // Found damaged (an older record of the key), the key's value sound: by key.
        assert_eq!(row(&rows(bytes.clone(), Some(bad.clone()), &good)), Ok(good.to_vec()));
        // Found short, the key's value sound: by key.
        assert_eq!(
            row(&rows(bytes.clone(), Some(bytes[..4].to_vec()), &good)),
            Ok(good.to_vec())
        );
        // Damaged both ways: refused, never returned.
        assert!(row(&rows(bad.clone(), Some(bad.clone()), &good))
            .unwrap_err()
            .contains("checksum"));
        // No reader: by key, checked.
        assert_eq!(row(&rows(bytes.clone(), None, &good)), Ok(good.to_vec()));
        assert!(row(&rows(bad, None, &good)).unwrap_err().contains("checksum"));
        assert!(row(&rows(Vec::new(), None, &good)).unwrap_err().contains("missing"));
    }
}
