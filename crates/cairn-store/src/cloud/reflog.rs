//! The ref log in an object store: numbered records, each one object written once with
//! `PutMode::Create`, so concurrent appenders never overwrite each other.
//!
//! A record object is a [frame](crate::frame) of: a kind byte (1: a record, 2: a
//! checkpoint), a 16-byte write nonce, then the body — a record's bytes, or for a
//! checkpoint every record it keeps (each a u32 little-endian length and the bytes).
//! The log is the last readable checkpoint's records, then every record numbered after
//! it. [`RefLog::retain`] writes a checkpoint (one conditional create: the log is the old
//! one or the new one, whatever fails) and then deletes the objects before it.
//!
//! Records are immutable once written, so each is read once per process and kept.

use std::collections::BTreeMap;
use std::sync::Arc;

use object_store::PutMode;
use parking_lot::Mutex;

use super::bucket::{Bucket, Put};
use super::keys;
use super::refs::{nonce, NONCE_LEN};
use crate::error::StoreError;
use crate::frame::{frame, unframe};

const RECORD: u8 = 1;
const CHECKPOINT: u8 = 2;

/// Attempts of one append that keeps losing its number to other appenders.
const APPEND_ATTEMPTS: usize = 1000;

/// A decoded ref-log object.
#[derive(Debug)]
enum Entry {
    Record(Vec<u8>),
    Checkpoint(Vec<Vec<u8>>),
}

fn encode(kind: u8, nonce: &[u8; NONCE_LEN], body: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(1 + NONCE_LEN + body.len());
    payload.push(kind);
    payload.extend_from_slice(nonce);
    payload.extend_from_slice(body);
    frame(&payload)
}

/// Decodes a ref-log object: the entry and its write nonce, or what is wrong with it.
fn decode(bytes: &[u8]) -> Result<(Entry, [u8; NONCE_LEN]), String> {
    let payload = unframe(bytes)?;
    let Some((&kind, rest)) = payload.split_first() else {
        return Err("no kind byte".into());
    };
    let (nonce, body) = rest
        .split_first_chunk::<NONCE_LEN>()
        .ok_or("shorter than its write nonce")?;
    let entry = match kind {
        RECORD if !body.is_empty() => Entry::Record(body.to_vec()),
        CHECKPOINT => {
            let mut records = Vec::new();
            let mut rest = body;
            while !rest.is_empty() {
                let (len, tail) = rest
                    .split_first_chunk::<4>()
                    .ok_or("a checkpoint cut inside a length")?;
                let len = u32::from_le_bytes(*len) as usize;
                let record = tail.get(..len).ok_or("a checkpoint cut inside a record")?;
                records.push(record.to_vec());
                rest = &tail[len..];
            }
            Entry::Checkpoint(records)
        }
        k => return Err(format!("unknown kind byte {k}")),
    };
    Ok((entry, *nonce))
}

/// The ref log of one repository in an object store.
pub(super) struct RefLog {
    /// Entries read so far, by number (immutable once written).
    read: Mutex<BTreeMap<u64, Arc<Entry>>>,
    /// The number the next append tries first (`None`: not known yet: list).
    next: Mutex<Option<u64>>,
    /// Objects that failed their checks at the last read, one line each.
    damage: Mutex<Vec<String>>,
}

impl RefLog {
    pub(super) fn new() -> RefLog {
        RefLog {
            read: Mutex::new(BTreeMap::new()),
            next: Mutex::new(None),
            damage: Mutex::new(Vec::new()),
        }
    }

    /// The numbers of the log's objects, ascending.
    fn numbers(&self, bucket: &Bucket) -> Result<Vec<u64>, StoreError> {
        let mut seqs: Vec<u64> = bucket
            .list(keys::REFLOG)?
            .into_iter()
            .filter_map(|(file, _)| keys::reflog_seq(&file))
            .collect();
        seqs.sort_unstable();
        Ok(seqs)
    }

    /// Writes a new object of `kind` at the first free number from the hint on; returns
    /// its number.
    fn create(&self, bucket: &Bucket, kind: u8, body: &[u8]) -> Result<u64, StoreError> {
        let mut next = self.next.lock();
        let mut seq = match *next {
            Some(n) => n,
            None => self.numbers(bucket)?.last().map_or(0, |n| n + 1),
        };
        for _ in 0..APPEND_ATTEMPTS {
            let ours = nonce();
            let key = keys::reflog(seq);
            let landed = match bucket.put(&key, encode(kind, &ours, body), PutMode::Create) {
                Ok(Put::Done) => true,
                // Taken — by another appender, or by a retried request of ours whose
                // first attempt landed: the nonce tells.
                Ok(Put::Refused) => self.is_ours(bucket, &key, &ours)?,
                // Unknown outcome: read it back.
                Err(e) => match bucket.get(&key) {
                    Ok(Some((bytes, _))) if decode(&bytes).is_ok_and(|(_, n)| n == ours) => true,
                    Ok(None) => return Err(e),
                    Ok(Some(_)) => false,
                    Err(_) => return Err(e),
                },
            };
            if landed {
                *next = Some(seq + 1);
                return Ok(seq);
            }
            seq = self.numbers(bucket)?.last().map_or(seq, |n| n + 1).max(seq + 1);
        }
        Err(StoreError::Backend(format!(
            "{}: could not append to the ref log after {APPEND_ATTEMPTS} attempts (too many concurrent appenders)",
            bucket.location()
        )))
    }

    fn is_ours(&self, bucket: &Bucket, key: &str, ours: &[u8; NONCE_LEN]) -> Result<bool, StoreError> {
        Ok(match bucket.get(key)? {
            Some((bytes, _)) => decode(&bytes).is_ok_and(|(_, n)| n == *ours),
            None => false,
        })
    }

    /// [`Store::append_ref_log`](crate::Store::append_ref_log) (the record is checked by
    /// the caller).
    pub(super) fn append(&self, bucket: &Bucket, record: &[u8]) -> Result<(), StoreError> {
        self.create(bucket, RECORD, record).map(drop)
    }

    /// The log's records with the number of the last object read (`None`: empty).
    fn records(&self, bucket: &Bucket) -> Result<(Vec<Vec<u8>>, Option<u64>), StoreError> {
        let seqs = self.numbers(bucket)?;
        let missing: Vec<u64> = {
            let read = self.read.lock();
            seqs.iter().copied().filter(|s| !read.contains_key(s)).collect()
        };
        let fetched = bucket.get_many(&missing.iter().map(|s| keys::reflog(*s)).collect::<Vec<_>>())?;
        let mut damage = Vec::new();
        let mut read = self.read.lock();
        for (seq, bytes) in missing.into_iter().zip(fetched) {
            // Gone since the listing: a retain deleted it behind a new checkpoint.
            let Some(bytes) = bytes else { continue };
            match decode(&bytes) {
                Ok((entry, _)) => {
                    read.insert(seq, Arc::new(entry));
                }
                Err(detail) => damage.push(format!("ref-log object {}: {detail} (skipped)", keys::reflog(seq))),
            }
        }
        // Forget what a retain deleted.
        read.retain(|s, _| seqs.binary_search(s).is_ok());
        let mut records = Vec::new();
        for entry in read.values() {
            match entry.as_ref() {
                Entry::Record(r) => records.push(r.clone()),
                Entry::Checkpoint(kept) => records.clone_from(kept),
            }
        }
        *self.damage.lock() = damage;
        Ok((records, seqs.last().copied()))
    }

    /// [`Store::ref_log`](crate::Store::ref_log).
    pub(super) fn all(&self, bucket: &Bucket) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self.records(bucket)?.0)
    }

    /// [`Store::retain_ref_log`](crate::Store::retain_ref_log) (module docs).
    pub(super) fn retain(&self, bucket: &Bucket, keep: &dyn Fn(&[u8]) -> bool) -> Result<(), StoreError> {
        for _ in 0..APPEND_ATTEMPTS {
            let (records, last) = self.records(bucket)?;
            let Some(last) = last else { return Ok(()) };
            let mut body = Vec::new();
            for r in records.iter().filter(|r| keep(r)) {
                body.extend_from_slice(&(r.len() as u32).to_le_bytes());
                body.extend_from_slice(r);
            }
            // The checkpoint must directly follow what it judged: a record appended in
            // between would fall before it and be lost. So it takes number `last + 1`
            // or tries again.
            *self.next.lock() = Some(last + 1);
            let seq = {
                let ours = nonce();
                let key = keys::reflog(last + 1);
                match bucket.put(&key, encode(CHECKPOINT, &ours, &body), PutMode::Create)? {
                    Put::Done => last + 1,
                    Put::Refused if self.is_ours(bucket, &key, &ours)? => last + 1,
                    Put::Refused => continue,
                }
            };
            *self.next.lock() = Some(seq + 1);
            let doomed = self
                .numbers(bucket)?
                .into_iter()
                .filter(|s| *s < seq)
                .map(keys::reflog)
                .collect();
            bucket.delete_many(doomed)?;
            return Ok(());
        }
        Err(StoreError::Backend(format!(
            "{}: could not rewrite the ref log (too many concurrent appenders)",
            bucket.location()
        )))
    }

    /// Damage the last read found.
    pub(super) fn damage(&self) -> Vec<String> {
        self.damage.lock().clone()
    }
}
