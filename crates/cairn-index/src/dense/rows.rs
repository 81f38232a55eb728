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
    /// value then looks it up once. `None` (the default, and on any error) reads each
    /// row with [`RowSource::read_at`].
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
            let read = match self.reader.get_or_init(|| self.source.reader(&self.key)) {
                Some(reader) => reader(at, bytes),
                None => self.source.read_at(&self.key, at, bytes),
            };
            match read {
                Ok(true) => {}
                Ok(false) => return Err(format!("row {r} is missing from the stored part")),
                Err(e) => return Err(format!("row {r} could not be read ({e})")),
            }
            if crc32fast::hash(bytes) != self.crcs[r] {
                return Err(format!("row {r} fails its checksum"));
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
