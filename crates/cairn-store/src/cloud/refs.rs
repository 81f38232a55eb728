//! Refs in an object store: each ref one object (`refs/<escaped name>`), moved by
//! compare-and-swap on the service's conditional writes.
//!
//! **Encoding.** A ref object is a [frame](crate::frame) (crc32, then the payload) of: one
//! byte (1: the ref holds a value, 0: a tombstone — the ref was deleted), a 16-byte write
//! nonce, then the value. A delete writes a tombstone rather than deleting the object,
//! because only writes are conditional on every service: a delete that raced a writer
//! could otherwise remove its value unseen. The nonce, new on every write, makes every
//! write's bytes (and so its ETag) distinct, so a writer can tell its own write from
//! another's that stored the same value.
//!
//! **Compare-and-swap.** Read the ref with its version (ETag, and version id where the
//! service has one); compare its value with the expected one; write with `PutMode::Update`
//! of that version (`If-Match`), or `PutMode::Create` (`If-None-Match: *`) when there is no
//! object. A write refused by its condition means another writer moved the ref: read again
//! and compare again. A write whose outcome is unknown (the connection dropped, the
//! service failed after the retries) is resolved by reading the ref back: our nonce there
//! means it landed; the version we read there unchanged means it did not.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use object_store::{PutMode, UpdateVersion};
use parking_lot::Mutex;

use super::bucket::{Bucket, Put};
use super::keys;
use crate::backend::CasOutcome;
use crate::error::StoreError;
use crate::frame::{frame, unframe};

/// Tag byte of a ref that holds a value.
const VALUE: u8 = 1;
/// Tag byte of a deleted ref.
const TOMBSTONE: u8 = 0;
/// Bytes of the write nonce.
pub(super) const NONCE_LEN: usize = 16;

/// Attempts of one compare-and-swap whose writes keep being refused while the ref keeps
/// holding the expected value (writers replacing it with equal values): then it reports
/// a conflict.
const CAS_ATTEMPTS: usize = 64;

/// A fresh write nonce: unique per write in this process, and (through the process id,
/// the clock and the host's randomness in `RandomState`) across processes.
pub(super) fn nonce() -> [u8; NONCE_LEN] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = blake3::Hasher::new();
    h.update(&std::process::id().to_le_bytes());
    h.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.update(&now.to_le_bytes());
    {
        use std::hash::{BuildHasher, Hasher};
        let mut s = std::collections::hash_map::RandomState::new().build_hasher();
        s.write_u64(0);
        h.update(&s.finish().to_le_bytes());
    }
    let mut out = [0; NONCE_LEN];
    out.copy_from_slice(&h.finalize().as_bytes()[..NONCE_LEN]);
    out
}

/// A ref as read: its value (`None`: absent or deleted), the nonce of the write that put
/// it there, and the object's version (`None`: no object at all).
#[derive(Debug, Clone)]
struct Read {
    value: Option<Vec<u8>>,
    nonce: Option<[u8; NONCE_LEN]>,
    version: Option<UpdateVersion>,
}

/// Encodes a ref object.
fn encode(value: Option<&[u8]>, nonce: &[u8; NONCE_LEN]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(1 + NONCE_LEN + value.map_or(0, <[u8]>::len));
    payload.push(if value.is_some() { VALUE } else { TOMBSTONE });
    payload.extend_from_slice(nonce);
    payload.extend_from_slice(value.unwrap_or_default());
    frame(&payload)
}

/// Decodes a ref object: value (`None`: tombstone) and nonce.
fn decode(name: &str, key: &str, bytes: &[u8]) -> Result<(Option<Vec<u8>>, [u8; NONCE_LEN]), StoreError> {
    let bad = |detail: String| StoreError::corrupt_ref(name, format!("object {key}: {detail}"));
    let payload = unframe(bytes).map_err(bad)?;
    let Some((&tag, rest)) = payload.split_first() else {
        return Err(bad("no tag byte".into()));
    };
    let Some((nonce, value)) = rest.split_first_chunk::<NONCE_LEN>() else {
        return Err(bad("shorter than its write nonce".into()));
    };
    match tag {
        VALUE => Ok((Some(value.to_vec()), *nonce)),
        TOMBSTONE if value.is_empty() => Ok((None, *nonce)),
        t => Err(bad(format!("unknown tag byte {t}"))),
    }
}

/// A ref's value as a listing last read it (`None`: a tombstone), with the ETag of the
/// version read.
type Listed = (String, Option<Vec<u8>>);

/// The refs of one repository in an object store.
pub(super) struct Refs {
    /// Values last read by a listing, by ref name: a listing reads again only the refs
    /// whose ETag changed.
    listed: Mutex<HashMap<String, Listed>>,
}

impl Refs {
    pub(super) fn new() -> Refs {
        Refs {
            listed: Mutex::new(HashMap::new()),
        }
    }

    fn read(&self, bucket: &Bucket, name: &str, key: &str) -> Result<Read, StoreError> {
        match bucket.get(key)? {
            None => Ok(Read {
                value: None,
                nonce: None,
                version: None,
            }),
            Some((bytes, version)) => {
                let (value, nonce) = decode(name, key, &bytes)?;
                Ok(Read {
                    value,
                    nonce: Some(nonce),
                    version: Some(version),
                })
            }
        }
    }

    /// [`Store::get_ref`](crate::Store::get_ref).
    pub(super) fn get(&self, bucket: &Bucket, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = keys::reference(name)?;
        Ok(self.read(bucket, name, &key)?.value)
    }

    /// [`Store::cas_ref`](crate::Store::cas_ref) (module docs).
    pub(super) fn cas(
        &self,
        bucket: &Bucket,
        name: &str,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome, StoreError> {
        let key = keys::reference(name)?;
        let mut cur = self.read(bucket, name, &key)?;
        for _ in 0..CAS_ATTEMPTS {
            if cur.value.as_deref() != expected {
                return Ok(CasOutcome::Conflict { current: cur.value });
            }
            if expected == new {
                // Nothing to change (a delete of an absent ref, or a value set to itself).
                return Ok(CasOutcome::Swapped);
            }
            let ours = nonce();
            let mode = match &cur.version {
                Some(v) => PutMode::Update(v.clone()),
                None => PutMode::Create,
            };
            match bucket.put(&key, encode(new, &ours), mode) {
                Ok(Put::Done) => return Ok(CasOutcome::Swapped),
                Ok(Put::Refused) => {
                    // Another writer moved it — or a retried request of ours was refused
                    // because its first attempt landed: the nonce tells.
                    let now = self.read(bucket, name, &key)?;
                    if now.nonce == Some(ours) {
                        return Ok(CasOutcome::Swapped);
                    }
                    cur = now;
                }
                Err(e) => {
                    // The outcome is unknown: read the ref back.
                    let now = self.read(bucket, name, &key).map_err(|_| unknown(bucket, &key, &e))?;
                    if now.nonce == Some(ours) {
                        return Ok(CasOutcome::Swapped);
                    }
                    if now.version == cur.version {
                        // Not applied: nothing changed.
                        return Err(e);
                    }
                    cur = now;
                }
            }
        }
        Ok(CasOutcome::Conflict { current: cur.value })
    }

    /// Lists refs starting with `prefix`: the sound ones (in name order) and the names of
    /// the damaged ones.
    pub(super) fn list(&self, bucket: &Bucket, prefix: &str) -> Result<RefListing, StoreError> {
        let mut wanted = Vec::new();
        for (file, meta) in bucket.list(keys::REFS)? {
            let Some(name) = keys::reference_name(&file) else {
                continue;
            };
            if name.starts_with(prefix) {
                wanted.push((name, format!("{}/{file}", keys::REFS), meta.e_tag));
            }
        }
        let mut listing = RefListing::default();
        let mut to_read = Vec::new();
        {
            let listed = self.listed.lock();
            for (name, key, etag) in wanted {
                match (etag.as_ref(), listed.get(&name)) {
                    (Some(e), Some((seen, value))) if e == seen => {
                        if let Some(v) = value {
                            listing.refs.push((name, v.clone()));
                        }
                    }
                    _ => to_read.push((name, key, etag)),
                }
            }
        }
        let keys: Vec<String> = to_read.iter().map(|(_, k, _)| k.clone()).collect();
        let read = bucket.get_many(&keys)?;
        let mut listed = self.listed.lock();
        for ((name, key, etag), bytes) in to_read.into_iter().zip(read) {
            // Gone since the listing: deleted by another writer's repair.
            let Some(bytes) = bytes else { continue };
            match decode(&name, &key, &bytes) {
                Ok((value, _)) => {
                    if let Some(e) = etag {
                        // The ETag is the listing's; the bytes read may be newer. Either
                        // way they are right to remember under it: every write has a new
                        // nonce, so that ETag never comes back once the object changed.
                        listed.insert(name.clone(), (e, value.clone()));
                    }
                    if let Some(v) = value {
                        listing.refs.push((name, v));
                    }
                }
                Err(_) => {
                    listed.remove(&name);
                    listing.damaged.push(name);
                }
            }
        }
        listing.refs.sort();
        listing.damaged.sort();
        Ok(listing)
    }

    /// [`Store::remove_damaged_ref`](crate::Store::remove_damaged_ref).
    pub(super) fn remove_damaged(&self, bucket: &Bucket, name: &str) -> Result<bool, StoreError> {
        let key = keys::reference(name)?;
        match self.read(bucket, name, &key) {
            Ok(_) => Ok(false),
            Err(StoreError::Corrupt { .. }) => {
                bucket.delete_many(vec![key])?;
                self.listed.lock().remove(name);
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }
}

/// Refs a listing found.
#[derive(Debug, Default)]
pub(super) struct RefListing {
    /// Sound refs with values, in name order.
    pub(super) refs: Vec<(String, Vec<u8>)>,
    /// Names of refs whose objects fail their checks, in name order.
    pub(super) damaged: Vec<String>,
}

/// The error of a ref write whose outcome could not be read back either.
fn unknown(bucket: &Bucket, key: &str, e: &StoreError) -> StoreError {
    crate::error::ServiceError {
        location: bucket.location().to_owned(),
        op: "compare-and-swap (outcome unknown: the ref could not be read back)",
        key: key.to_owned(),
        kind: "Unknown",
        status: None,
        detail: e.to_string(),
    }
    .into_store_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_damage_is_named() {
        let n = nonce();
        assert_ne!(n, nonce());
        let bytes = encode(Some(b"abc"), &n);
        assert_eq!(decode("r", "refs/r", &bytes).unwrap(), (Some(b"abc".to_vec()), n));
        assert_eq!(decode("r", "refs/r", &encode(None, &n)).unwrap(), (None, n));
        let mut bad = bytes.clone();
        *bad.last_mut().unwrap() ^= 1;
        let e = decode("r", "refs/r", &bad).unwrap_err();
        assert!(
            matches!(&e, StoreError::Corrupt { space: "ref", key, .. } if key == "r"),
            "{e}"
        );
    }
}
