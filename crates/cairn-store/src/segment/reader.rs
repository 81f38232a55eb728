//! [`DerivedReader`]: ranges of one stored derived value, read where the value was found.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Weak};

use super::log::io_error;
use crate::error::StoreError;

/// Reads ranges of one stored value, found once ([`crate::Store::derived_reader`]).
pub struct DerivedReader {
    /// The segment's file, while the log keeps the segment (a reader never keeps a file
    /// compacted away, nor its disk space).
    file: Weak<File>,
    /// Byte offset of the value in its segment.
    start: u64,
    /// The value's length.
    len: u64,
    /// The log's directory, for errors.
    dir: PathBuf,
}

impl DerivedReader {
    pub(super) fn new(file: &Arc<File>, start: u64, len: u64, dir: PathBuf) -> DerivedReader {
        DerivedReader {
            file: Arc::downgrade(file),
            start,
            len,
            dir,
        }
    }

    /// Reads bytes `offset..offset + out.len()` of the value, unchecked (as
    /// [`crate::Store::read_derived_at`]): `Ok(Some(false))` if the value is shorter,
    /// `Ok(None)` if the value has moved since it was found (its segment was compacted
    /// away): read it by key.
    pub fn read_at(&self, offset: u64, out: &mut [u8]) -> Result<Option<bool>, StoreError> {
        match offset.checked_add(out.len() as u64) {
            Some(end) if end <= self.len => {}
            _ => return Ok(Some(false)),
        }
        let Some(file) = self.file.upgrade() else {
            return Ok(None);
        };
        match file.read_exact_at(out, self.start + offset) {
            Ok(()) => Ok(Some(true)),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(Some(false)),
            Err(e) => Err(io_error(&self.dir, "reading part of a record", e)),
        }
    }
}

impl std::fmt::Debug for DerivedReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DerivedReader").field("len", &self.len).finish()
    }
}
