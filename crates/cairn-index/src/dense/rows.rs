//! Dense rows (and node texts, `chunk/node.rs`) read from their node objects. A dense part
//! stores no `f32` rows (since index format 7): each row names its node object and where the
//! vector starts in the object's encoding, and rescoring reads the row from there, one row
//! at a time (the int8 codes that the scan and the graph walks read stay in memory); a
//! process that keeps a model's rows in memory reads each row the same way the first time
//! it is rescored, or when a background fill gets to it ([`crate::DenseChunk::read_held_rows`]),
//! and holds it from then on (a cold query reads the rows it rescores, not those of every
//! part it loads).
//!
//! A row read this way skips the store's checksum of the whole object, so each row carries
//! its own: the crc32 of the row's little-endian bytes, computed when the part was built.
//! A row that cannot be read, or whose bytes fail that checksum, is never scored: its
//! vector is read from the node object whole (checked) instead, and the source is told, so
//! the stored part is rebuilt.

use std::fmt;
use std::sync::{Arc, OnceLock};

use cairn_core::Hash;

/// Where rows and texts are read from: the repository's store (the plugin
/// seam between the index and the store that holds its objects and values).
pub trait RowSource: Send + Sync {
    /// Reads bytes `offset..offset + out.len()` of the stored derived value `key`,
    /// unchecked. `Ok(false)` if the value is absent or shorter.
    fn read_at(&self, key: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, String>;

    /// Reads bytes `offset..offset + out.len()` of node object `node`'s encoding,
    /// unchecked. `Ok(false)` if the object is absent or shorter.
    fn read_object_at(&self, node: &Hash, offset: u64, out: &mut [u8]) -> Result<bool, String>;

    /// The vector of dense `model` held by node object `node`, read from the data (the
    /// object whole, checked): what a row that cannot be read by range is scored with.
    fn node_vector(&self, node: &Hash, model: &str) -> Result<Vec<f32>, String>;

    /// The text of node object `node`, read from the data: what a text left on disk
    /// that cannot be read from its core part is rendered with.
    fn node_text(&self, node: &Hash) -> Result<String, String>;

    /// Told that the stored value `key` has a row that cannot be read (`detail` says
    /// why), so that it is rebuilt from the data.
    fn damaged(&self, key: &[u8], detail: String);
}

/// The rows of a part that holds them once read, by row: each set when first read.
pub(crate) type HeldRows = Box<[OnceLock<Box<[f32]>>]>;

/// A dense part's rows left in their node objects: the source they are read through, the
/// part's store key (to report it damaged), and — for a part that holds its rows in memory
/// — the rows read so far.
#[derive(Clone)]
pub(crate) struct StoredRows {
    pub(crate) source: Arc<dyn RowSource>,
    /// The part's store key.
    pub(crate) key: Box<[u8]>,
    /// `Some` if the part holds its rows in memory once read: each row is read, checked,
    /// the first time it is scored, and kept (one that cannot be read is not kept, and is
    /// scored from its node object whole).
    pub(crate) held: Option<HeldRows>,
}

impl fmt::Debug for StoredRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredRows")
            .field("key", &self.key.len())
            .field(
                "held",
                &self
                    .held
                    .as_ref()
                    .map(|h| h.iter().filter(|r| r.get().is_some()).count()),
            )
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

/// Where one row is: its node object, the vector's offset in the object's encoding, its
/// dimension and its crc32.
#[derive(Clone, Copy)]
pub(crate) struct RowAt {
    pub(crate) node: Hash,
    pub(crate) offset: u32,
    pub(crate) dim: usize,
    pub(crate) crc: u32,
}

/// Row `at`, read from its node object through `source` and checked against its crc32
/// (finite components too), passed to `f`; `Err` says why it could not be read.
pub(crate) fn with_row<T>(source: &dyn RowSource, at: RowAt, f: impl FnOnce(&[f32]) -> T) -> Result<T, String> {
    BUF.with(|b| {
        let (bytes, row) = &mut *b.borrow_mut();
        bytes.resize(at.dim * 4, 0);
        match source.read_object_at(&at.node, u64::from(at.offset), bytes) {
            Ok(true) => {}
            Ok(false) => return Err(format!("node {} does not hold the row", at.node.short())),
            Err(e) => return Err(format!("the row could not be read ({e})")),
        }
        if crc32fast::hash(bytes) != at.crc {
            return Err(format!("the row read from node {} fails its checksum", at.node.short()));
        }
        row.clear();
        row.extend(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        if row.iter().any(|x| !x.is_finite()) {
            return Err(format!("the row read from node {} is not finite", at.node.short()));
        }
        Ok(f(row))
    })
}

/// The crate's tests' row source: node objects by hash, read by range (none read whole),
/// no derived values; empty, a source with nothing behind it.
#[cfg(test)]
pub(crate) struct ObjectRanges(pub(crate) Vec<(Hash, Vec<u8>)>);

#[cfg(test)]
impl RowSource for ObjectRanges {
    fn read_at(&self, _key: &[u8], _offset: u64, _out: &mut [u8]) -> Result<bool, String> {
        Ok(false)
    }
    fn read_object_at(&self, node: &Hash, offset: u64, out: &mut [u8]) -> Result<bool, String> {
        let Some((_, value)) = self.0.iter().find(|(h, _)| h == node) else {
            return Ok(false);
        };
        let at = offset as usize;
        Ok(value.get(at..at + out.len()).map(|b| out.copy_from_slice(b)).is_some())
    }
    fn node_vector(&self, _node: &Hash, _model: &str) -> Result<Vec<f32>, String> {
        Err("no vectors here".into())
    }
    fn node_text(&self, _node: &Hash) -> Result<String, String> {
        Err("no texts here".into())
    }
    fn damaged(&self, _key: &[u8], _detail: String) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_read_from_its_object_and_checked() {
        let good = [1.5f32, -2.0, 0.25];
        let bytes: Vec<u8> = good.iter().flat_map(|x| x.to_le_bytes()).collect();
        let (a, b, c) = (Hash::of(b"a"), Hash::of(b"b"), Hash::of(b"c"));
        let mut object = vec![9u8; 5];
        object.extend(&bytes);
        let mut bad = object.clone();
        bad[7] ^= 0x40;
        let mut inf = vec![9u8; 5];
        inf.extend([1.0f32, f32::INFINITY, 0.0].iter().flat_map(|x| x.to_le_bytes()));
        let source = ObjectRanges(vec![(a, object), (b, bad), (c, inf.clone())]);
        let crc = crc32fast::hash(&bytes);
        let row = |node: &Hash, offset: u32, crc: u32| {
            with_row(
                &source,
                RowAt {
                    node: *node,
                    offset,
                    dim: 3,
                    crc,
                },
                |r| r.to_vec(),
            )
        };
        assert_eq!(row(&a, 5, crc), Ok(good.to_vec()));
        assert!(row(&b, 5, crc).unwrap_err().contains("checksum"));
        assert!(row(&a, 4, crc).unwrap_err().contains("checksum"));
        assert!(row(&a, 6, crc).unwrap_err().contains("does not hold"));
        assert!(row(&Hash::of(b"d"), 5, crc).unwrap_err().contains("does not hold"));
        assert!(row(&c, 5, crc32fast::hash(&inf[5..])).unwrap_err().contains("finite"));
    }
}
