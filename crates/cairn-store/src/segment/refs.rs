//! Refs as files: one file per ref in `refs/`, named by the hex of the ref's name and
//! holding its [frame](crate::frame) (crc32 + value). A ref moves by writing a temporary
//! file, syncing it, renaming it over the old one and syncing the directory, so a crash
//! leaves the old value or the new one, and damage to one ref's file touches no other.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use super::log::{io_error, sync_dir};
use crate::backend::CasOutcome;
use crate::error::{hex, StoreError};
use crate::frame::{frame, unframe};

/// The ref files of a store.
pub(super) struct RefFiles {
    dir: PathBuf,
    /// Serialises compare-and-swaps (other processes are kept out by the store's lock).
    swap: Mutex<()>,
}

/// The ref name a file name stands for (`None`: not a ref file, e.g. a temporary one).
fn name_of(file: &str) -> Option<String> {
    if !file.len().is_multiple_of(2) || file.is_empty() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..file.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(file.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

impl RefFiles {
    pub(super) fn new(dir: &Path) -> RefFiles {
        RefFiles {
            dir: dir.to_path_buf(),
            swap: Mutex::new(()),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(hex(name.as_bytes()))
    }

    /// A ref's value.
    pub(super) fn get(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match fs::read(self.path(name)) {
            Ok(bytes) => unframe(&bytes)
                .map(|v| Some(v.to_vec()))
                .map_err(|detail| StoreError::Corrupt {
                    space: "ref",
                    key: name.to_owned(),
                    detail,
                }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&self.dir, &format!("reading ref `{name}`"), e)),
        }
    }

    /// Compare-and-swap, durable when it returns `Swapped`.
    pub(super) fn cas(
        &self,
        name: &str,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome, StoreError> {
        let _swap = self.swap.lock();
        let current = self.get(name)?;
        if current.as_deref() != expected {
            return Ok(CasOutcome::Conflict { current });
        }
        let what = format!("moving ref `{name}`");
        let err = |e: io::Error| io_error(&self.dir, &what, e);
        match new {
            Some(value) => {
                let mut tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(err)?;
                tmp.write_all(&frame(value)).map_err(err)?;
                tmp.as_file().sync_data().map_err(err)?;
                tmp.persist(self.path(name)).map_err(|e| err(e.error))?;
            }
            None if current.is_some() => fs::remove_file(self.path(name)).map_err(err)?,
            None => return Ok(CasOutcome::Swapped),
        }
        sync_dir(&self.dir).map_err(err)?;
        Ok(CasOutcome::Swapped)
    }

    /// Removes a ref whose file fails its checksum (`true`: removed).
    pub(super) fn remove_damaged(&self, name: &str) -> Result<bool, StoreError> {
        let _swap = self.swap.lock();
        match self.get(name) {
            Err(StoreError::Corrupt { .. }) => {
                let err = |e: io::Error| io_error(&self.dir, &format!("removing damaged ref `{name}`"), e);
                fs::remove_file(self.path(name)).map_err(err)?;
                sync_dir(&self.dir).map_err(err)?;
                Ok(true)
            }
            Err(e) => Err(e),
            Ok(_) => Ok(false),
        }
    }

    /// The names of the refs starting with `prefix`, in name order.
    fn names(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let err = |e: io::Error| io_error(&self.dir, "listing refs", e);
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(err)? {
            let file = entry.map_err(err)?.file_name();
            if let Some(name) = file.to_str().and_then(name_of) {
                if name.starts_with(prefix) {
                    names.push(name);
                }
            }
        }
        names.sort();
        Ok(names)
    }

    /// Refs whose names start with `prefix`, in name order. A ref whose file fails its
    /// checksum is left out (damage to one ref costs that ref): [`RefFiles::damaged`]
    /// names it.
    pub(super) fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let mut out = Vec::new();
        for name in self.names(prefix)? {
            match self.get(&name) {
                Ok(Some(value)) => out.push((name, value)),
                // Removed since the listing, or damaged: left out.
                Ok(None) | Err(StoreError::Corrupt { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The refs starting with `prefix` whose files fail their checksum, in name order.
    pub(super) fn damaged(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for name in self.names(prefix)? {
            if let Err(StoreError::Corrupt { .. }) = self.get(&name) {
                out.push(name);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_file_names() {
        for name in ["HEAD", "heads/main", "meta/dense-dim/m", "é"] {
            assert_eq!(name_of(&hex(name.as_bytes())).as_deref(), Some(name));
        }
        assert_eq!(name_of(".tmpAbc12"), None);
        assert_eq!(name_of("abc"), None);
        assert_eq!(name_of(""), None);
    }
}
