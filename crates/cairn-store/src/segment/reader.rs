//! [`DerivedReader`]: ranges of one stored derived value, read where the value was found.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
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
        let Some(file) = self.file.upgrade() else {
            return Ok(None);
        };
        read_range(&file, self.start, self.len, offset, out, &self.dir).map(Some)
    }
}

/// Reads bytes `offset..offset + out.len()` of the value at `start..start + len` of a
/// segment file, unchecked: `Ok(false)` if the value (or the file) is shorter. The one
/// positional read of a value's range, by key ([`super::log::Log::read_at`]) or through
/// a [`DerivedReader`].
pub(super) fn read_range(
    file: &File,
    start: u64,
    len: u64,
    offset: u64,
    out: &mut [u8],
    dir: &Path,
) -> Result<bool, StoreError> {
    match offset.checked_add(out.len() as u64) {
        Some(end) if end <= len => {}
        _ => return Ok(false),
    }
    match file.read_exact_at(out, start + offset) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(io_error(dir, "reading part of a record", e)),
    }
}

impl std::fmt::Debug for DerivedReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DerivedReader").field("len", &self.len).finish()
    }
}
