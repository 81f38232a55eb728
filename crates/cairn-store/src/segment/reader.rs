//! The one positional read of a stored value's range.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::log::io_error;
use crate::error::StoreError;

/// Reads bytes `offset..offset + out.len()` of the value at `start..start + len` of a
/// segment file, unchecked: `Ok(false)` if the value (or the file) is shorter
/// ([`super::log::Log::read_at`]).
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
