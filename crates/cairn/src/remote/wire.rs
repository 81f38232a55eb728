//! The sync protocol a `cairn serve` remote speaks (storage-format §5.3): what each
//! request and answer body holds, and the serving side over a [`Repo`] ([`SyncServer`]).
//! The client is [`super::http`]; both sides encode through this file, so the format is
//! defined once.
//!
//! | request | body | answer |
//! |---|---|---|
//! | `GET /sync/refs` | — | JSON [`SyncRefs`] |
//! | `POST /sync/missing` | hashes | one byte per hash: 1 missing here, 0 present |
//! | `POST /sync/get` | hashes | per hash, in order, `u32le(len) ‖ bytes` (404 if one is absent); the answer stops after the object that passes [`MAX_ANSWER_BYTES`] (never before the first), and the client asks again for the rest |
//! | `POST /sync/put` | objects: per object `hash (32) ‖ u32le(len) ‖ bytes` | JSON `{"objects": n}` |
//! | `POST /sync/branch` | JSON [`SyncBranch`] | JSON `{"old": hex or null, "new": hex}`; 409 if the branch moved |
//!
//! *Hashes* are 32 raw bytes each, at most [`MAX_BATCH`] in one body. Every object is
//! checked against its blake3 name by the side that receives it, and `put` makes the
//! objects durable before it answers; a branch moves only by compare-and-swap from the
//! head the pusher read, after the pusher sent every object its new head reaches (the
//! client writes children before parents, so an object the server holds has its closure).

use std::collections::BTreeMap;

use cairn_core::codec;
use cairn_core::{CommitId, Hash};
use cairn_graph::refs::BranchName;
use serde::{Deserialize, Serialize};

use crate::dense_dims::DENSE_DIM_META;
use crate::error::{Error, Result};
use crate::repo::Repo;
use crate::writer;

/// Most hashes (or objects) in one request.
pub const MAX_BATCH: usize = 8192;

/// A `get` answer stops after the object that passes this many bytes (module docs), so an
/// answer stays bounded however large the objects asked for are.
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

/// A remote's refs, as `GET /sync/refs` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncRefs {
    /// The remote's current branch (a clone checks it out).
    pub current: String,
    /// Every branch and its head (full hex id), in name order.
    pub branches: BTreeMap<String, String>,
    /// The dense-dimension records (`dense-dim/<model>` → hex of the stored bytes).
    pub dims: BTreeMap<String, String>,
    /// The settings a clone copies (`embedders` → hex of the stored bytes).
    pub settings: BTreeMap<String, String>,
}

/// `POST /sync/branch`: move `branch` from `old` to `new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncBranch {
    /// The branch.
    pub branch: String,
    /// The head the pusher read (`None`: the branch does not exist yet).
    pub old: Option<String>,
    /// The new head (its objects already sent).
    pub new: String,
    /// The pusher's dense-dimension records (registered first; one that disagrees with
    /// the remote's refuses the move).
    #[serde(default)]
    pub dims: BTreeMap<String, String>,
}

pub(crate) use cairn_core::ids::hex;

/// The bytes of lowercase or uppercase hex `s`.
pub(crate) fn unhex(s: &str) -> Result<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return Err(Error::InvalidArgument(format!("{s:?}: odd-length hex")));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| Error::InvalidArgument(format!("{s:?}: not hex")))
        })
        .collect()
}

/// Encodes a list of hashes.
pub(crate) fn encode_hashes(hashes: &[Hash]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hashes.len() * 32);
    for h in hashes {
        out.extend_from_slice(h.as_bytes());
    }
    out
}

/// Decodes a list of hashes (at most [`MAX_BATCH`]).
pub(crate) fn decode_hashes(body: &[u8]) -> Result<Vec<Hash>> {
    if !body.len().is_multiple_of(32) {
        return Err(Error::InvalidArgument(format!(
            "a hash list of {} bytes: expected a multiple of 32",
            body.len()
        )));
    }
    let n = body.len() / 32;
    if n > MAX_BATCH {
        return Err(Error::InvalidArgument(format!(
            "{n} hashes in one request: at most {MAX_BATCH}"
        )));
    }
    Ok(body
        .chunks_exact(32)
        .map(|c| Hash::from_bytes(<[u8; 32]>::try_from(c).unwrap_or([0; 32])))
        .collect())
}

/// Appends `u32le(len) ‖ bytes`.
fn put_frame(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads one `u32le(len) ‖ bytes` frame at `*at`.
fn take_frame<'a>(body: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let len = u32::from_le_bytes(body.get(*at..*at + 4)?.try_into().ok()?) as usize;
    let bytes = body.get(*at + 4..(*at + 4).checked_add(len)?)?;
    *at += 4 + len;
    Some(bytes)
}

/// Encodes objects for `POST /sync/put`.
pub(crate) fn encode_objects(objects: &[(Hash, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(objects.iter().map(|(_, b)| 36 + b.len()).sum());
    for (h, bytes) in objects {
        out.extend_from_slice(h.as_bytes());
        put_frame(&mut out, bytes);
    }
    out
}

/// Decodes a `POST /sync/put` body, checking each object against its name.
pub(crate) fn decode_objects(body: &[u8]) -> Result<Vec<(Hash, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let start = at;
        let bad = || Error::InvalidArgument(format!("object list: a truncated entry at byte {start}"));
        let h = body.get(at..at + 32).ok_or_else(bad)?;
        let h = Hash::from_bytes(<[u8; 32]>::try_from(h).map_err(|_| bad())?);
        at += 32;
        let bytes = take_frame(body, &mut at).ok_or_else(bad)?;
        if codec::hash_object(bytes) != h {
            return Err(Error::InvalidArgument(format!(
                "object {}: its bytes do not match its blake3 name",
                h.to_hex()
            )));
        }
        out.push((h, bytes.to_vec()));
        if out.len() > MAX_BATCH {
            return Err(Error::InvalidArgument(format!(
                "more than {MAX_BATCH} objects in one request"
            )));
        }
    }
    Ok(out)
}

/// Decodes a `POST /sync/get` answer for `asked` hashes: the first 1..=`asked` objects, in
/// order (the client checks each, and asks again for the rest).
pub(crate) fn decode_got(body: &[u8], asked: usize) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() && out.len() < asked {
        out.push(take_frame(body, &mut at)?.to_vec());
    }
    (at == body.len() && !out.is_empty()).then_some(out)
}

/// The serving side of the sync protocol over one repository (what `cairn serve`'s
/// `/sync/*` routes call): [`Repo::sync_server`].
pub struct SyncServer<'a> {
    repo: &'a Repo,
}

impl Repo {
    /// The serving side of the sync protocol (module docs of `remote::wire`): a
    /// `cairn serve` remote answers clones, fetches and pushes through it.
    ///
    /// ```
    /// let repo = cairn::Repo::in_memory()?;
    /// let refs = repo.sync_server().refs()?;
    /// assert_eq!(refs.current, "main");
    /// assert!(refs.branches.is_empty());
    /// # Ok::<(), cairn::Error>(())
    /// ```
    pub fn sync_server(&self) -> SyncServer<'_> {
        SyncServer { repo: self }
    }
}

impl SyncServer<'_> {
    /// `GET /sync/refs`.
    pub fn refs(&self) -> Result<SyncRefs> {
        let refs = self.repo.refs();
        let branches = refs
            .branches()?
            .into_iter()
            .map(|(b, c)| (b.to_string(), c.to_hex()))
            .collect();
        let dims = refs
            .meta_list(DENSE_DIM_META)?
            .into_iter()
            .map(|(k, v)| (k, hex(&v)))
            .collect();
        let mut settings = BTreeMap::new();
        for key in super::CLONED_META {
            if let Some(v) = refs.meta(key)? {
                settings.insert(key.to_string(), hex(&v));
            }
        }
        Ok(SyncRefs {
            current: self.repo.current_branch()?.to_string(),
            branches,
            dims,
            settings,
        })
    }

    /// `POST /sync/missing`: one byte per hash of `body`, 1 if this repository lacks it.
    pub fn missing(&self, body: &[u8]) -> Result<Vec<u8>> {
        let hashes = decode_hashes(body)?;
        let held = self.repo.store().contains_many(&hashes)?;
        Ok(held.into_iter().map(|h| u8::from(!h)).collect())
    }

    /// `POST /sync/get`: the objects `body` names, in order, each checked against its name
    /// here (a damaged one is reported, never sent), stopping after the object that passes
    /// [`MAX_ANSWER_BYTES`]; one this repository lacks is [`Error::Graph`] `NotFound`.
    pub fn get(&self, body: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for h in decode_hashes(body)? {
            let bytes = self.repo.objects().raw_named(&h, "object")?;
            put_frame(&mut out, &bytes);
            if out.len() >= MAX_ANSWER_BYTES {
                break;
            }
        }
        Ok(out)
    }

    /// `POST /sync/put`: stores the objects of `body` (each checked against its name; a
    /// body with one bad object stores none) and makes them durable. Returns how many.
    ///
    /// Each object's children (a commit's parents and tree roots, a tree node's subtrees
    /// and values) must be here already or earlier in the body: what the server holds
    /// keeps its closure, which every later transfer's walk relies on.
    pub fn put(&self, body: &[u8]) -> Result<usize> {
        let objects = decode_objects(body)?;
        let n = objects.len();
        let store = self.repo.store();
        let mut batch: std::collections::HashSet<Hash> = std::collections::HashSet::with_capacity(n);
        for (h, bytes) in &objects {
            let object = codec::decode_object(bytes)
                .map_err(|e| Error::InvalidArgument(format!("object {}: {e}", h.to_hex())))?;
            for child in children(&object) {
                if !batch.contains(&child) && !store.contains(&child)? {
                    return Err(Error::InvalidArgument(format!(
                        "object {} names {}, which was not sent before it and is not on the remote: send children first",
                        h.to_hex(),
                        child.to_hex()
                    )));
                }
            }
            batch.insert(*h);
        }
        store.put_batch_owned(objects)?;
        store.flush_objects()?;
        Ok(n)
    }

    /// `POST /sync/branch`: registers the pusher's dimension records (refused if one
    /// disagrees), then moves the branch by compare-and-swap from `old` to `new` (whose
    /// objects must all be here). Returns the old head; a branch found elsewhere than
    /// `old` is [`Error::Conflict`], nothing changed.
    pub fn branch(&self, req: &SyncBranch) -> Result<Option<CommitId>> {
        let branch = BranchName::new(&req.branch)?;
        let old = req.old.as_deref().map(CommitId::from_hex).transpose()?;
        let new = CommitId::from_hex(&req.new)?;
        let dims: Vec<(String, Vec<u8>)> = req
            .dims
            .iter()
            .map(|(k, v)| {
                if !k.starts_with(DENSE_DIM_META) {
                    return Err(Error::InvalidArgument(format!(
                        "`dims`: {k:?} is not a dimension record"
                    )));
                }
                let bytes = unhex(v)?;
                // `u32le(dimension)`, as the commit writer records it (storage-format §5).
                match <[u8; 4]>::try_from(bytes.as_slice()).map(u32::from_le_bytes) {
                    Ok(d) if (1..=cairn_core::limits::MAX_EMBEDDING_DIM as u32).contains(&d) => Ok((k.clone(), bytes)),
                    _ => Err(Error::InvalidArgument(format!(
                        "`dims`: {k:?} is not a dimension (u32le, 1..={})",
                        cairn_core::limits::MAX_EMBEDDING_DIM
                    ))),
                }
            })
            .collect::<Result<_>>()?;
        super::sync::check_dims(self.repo, &dims, "the pusher")?;
        if !self.repo.store().contains(new.hash())? {
            return Err(Error::InvalidArgument(format!(
                "commit {} is not on the remote: send its objects before moving a branch to it",
                new.to_hex()
            )));
        }
        let commit = self.repo.commit(&new)?;
        let _publishing = self.repo.inner.gc_lock.read();
        super::sync::register_dims(self.repo, &dims)?;
        writer::move_branch(self.repo, &branch, old, new, &commit, &BTreeMap::new())?;
        self.repo.store().flush()?;
        Ok(old)
    }
}

/// The objects `object` names: a commit's parents and tree roots, a tree node's left
/// subtree, entries' values and right subtrees.
pub(crate) fn children(object: &codec::Object) -> Vec<Hash> {
    match object {
        codec::Object::Commit(c) => c
            .parents
            .iter()
            .map(|p| *p.hash())
            .chain([c.node_root, c.edge_root, c.edge_in_root].into_iter().flatten())
            .collect(),
        codec::Object::Tree(t) => t
            .left
            .into_iter()
            .chain(t.entries.iter().flat_map(|e| std::iter::once(e.value).chain(e.right)))
            .collect(),
        _ => Vec::new(),
    }
}
