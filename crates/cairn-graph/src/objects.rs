//! Typed, verified access to stored objects, and the buffer of objects a write is about
//! to store.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cairn_core::codec::{self, ObjectKind};
use cairn_core::limits::MAX_OBJECT_BYTES;
use cairn_core::{Commit, CommitId, Edge, Hash, Node, TreeNode};
use cairn_store::{Store, StoreError};
use parking_lot::Mutex;

use crate::error::GraphError;

/// How many decoded tree nodes [`Objects`] keeps (about 2–4 KiB each).
const TREE_CACHE_CAPACITY: usize = 65_536;

/// Reads objects from a [`Store`], verifying every one: the store checks its crc, and
/// this layer re-hashes the bytes with blake3 and decodes them strictly, so damaged bytes
/// are reported as [`GraphError::Corrupt`] naming the object, never returned as data.
///
/// Decoded tree nodes are cached (bounded): tree walks read the same upper levels again
/// and again.
pub struct Objects {
    store: Arc<dyn Store>,
    trees: Mutex<HashMap<Hash, Arc<TreeNode>>>,
}

impl Objects {
    /// Wraps a store.
    pub fn new(store: Arc<dyn Store>) -> Objects {
        Objects {
            store,
            trees: Mutex::new(HashMap::new()),
        }
    }

    /// The underlying store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The verified bytes of an object of the given kind.
    pub fn raw(&self, hash: &Hash, kind: ObjectKind) -> Result<Arc<[u8]>, GraphError> {
        self.raw_named(hash, kind.name())
    }

    /// The verified bytes of an object whose kind the caller does not know (a remote's
    /// request names hashes only), named `name` in errors.
    pub fn raw_named(&self, hash: &Hash, name: &'static str) -> Result<Arc<[u8]>, GraphError> {
        let bytes = self
            .store
            .get(hash)
            .map_err(|e| GraphError::from_store(e, name, *hash))?
            .ok_or(GraphError::NotFound {
                kind: name,
                hash: *hash,
            })?;
        self.verify(hash, name, &bytes)?;
        Ok(bytes)
    }

    /// Checks that `bytes`, read from the store under `hash`, are the object `hash` names
    /// (re-hashed: a record whose crc was forged with it is caught here).
    fn verify(&self, hash: &Hash, name: &'static str, bytes: &[u8]) -> Result<(), GraphError> {
        if codec::hash_object(bytes) != *hash {
            return Err(GraphError::Corrupt {
                kind: name,
                hash: *hash,
                detail: "content does not match its blake3 hash".into(),
            });
        }
        Ok(())
    }

    /// `f` of the verified bytes of an object of the given kind, lent by the store
    /// ([`Store::with_objects`]: no copy into an allocation of their own), with their length.
    fn decode<T>(
        &self,
        hash: &Hash,
        kind: ObjectKind,
        f: impl Fn(&[u8]) -> Result<T, codec::DecodeError>,
    ) -> Result<(T, usize), GraphError> {
        let name = kind.name();
        let mut out = None;
        self.store
            .with_objects(std::slice::from_ref(hash), &mut |_, bytes| {
                out = Some(self.decode_lent(hash, name, bytes, &f));
            })
            .map_err(|e| GraphError::from_store(e, name, *hash))?;
        out.unwrap_or(Err(GraphError::NotFound {
            kind: name,
            hash: *hash,
        }))
    }

    /// `f` of `bytes`, lent by the store for object `hash`, once they are verified; with
    /// their length.
    fn decode_lent<T>(
        &self,
        hash: &Hash,
        name: &'static str,
        bytes: &[u8],
        f: impl Fn(&[u8]) -> Result<T, codec::DecodeError>,
    ) -> Result<(T, usize), GraphError> {
        self.verify(hash, name, bytes)?;
        f(bytes).map(|t| (t, bytes.len())).map_err(|e| GraphError::Corrupt {
            kind: name,
            hash: *hash,
            detail: e.to_string(),
        })
    }

    /// [`Objects::decode`] of each of `hashes`, read as one batch, in their order; the
    /// error is that of the first object (in that order) that is missing or fails.
    fn decode_many<T>(
        &self,
        hashes: &[Hash],
        kind: ObjectKind,
        f: impl Fn(&[u8]) -> Result<T, codec::DecodeError>,
    ) -> Result<Vec<(T, usize)>, GraphError> {
        let name = kind.name();
        let mut out: Vec<Option<Result<(T, usize), GraphError>>> = (0..hashes.len()).map(|_| None).collect();
        // Once one fails, later ones are not decoded (the first failure is the answer).
        let mut failed = false;
        let read = self.store.with_objects(hashes, &mut |i, bytes| {
            if failed {
                return;
            }
            let r = self.decode_lent(&hashes[i], name, bytes, &f);
            failed = r.is_err();
            out[i] = Some(r);
        });
        // A store error ends the batch at its object: a damaged record names its key, and
        // objects before it that were missing (or failed) come first; any other error (an
        // I/O failure: which objects it kept from being read is unknown) is the answer.
        let stopped = read.err().map(|e| {
            let at = match &e {
                StoreError::Corrupt { key, .. } => hashes.iter().position(|h| h.to_hex() == *key),
                _ => None,
            };
            let at = at.unwrap_or(0);
            (
                at,
                GraphError::from_store(e, name, hashes.get(at).copied().unwrap_or(Hash::ZERO)),
            )
        });
        let end = stopped.as_ref().map_or(hashes.len(), |(at, _)| *at);
        let mut objects = Vec::with_capacity(hashes.len());
        for (i, r) in out.into_iter().enumerate().take(end) {
            match r {
                Some(r) => objects.push(r?),
                None => {
                    return Err(GraphError::NotFound {
                        kind: name,
                        hash: hashes[i],
                    })
                }
            }
        }
        match stopped {
            Some((_, e)) => Err(e),
            None => Ok(objects),
        }
    }

    /// A node object.
    pub fn node(&self, hash: &Hash) -> Result<Node, GraphError> {
        self.decode(hash, ObjectKind::Node, codec::decode_node).map(|(n, _)| n)
    }

    /// A node object and the length of its stored encoding.
    pub fn node_sized(&self, hash: &Hash) -> Result<(Node, usize), GraphError> {
        self.decode(hash, ObjectKind::Node, codec::decode_node)
    }

    /// Node objects and the lengths of their stored encodings, in the order of `hashes`,
    /// read as one batch ([`Store::with_objects`]) and each checked as by
    /// [`Objects::node`]; the error is that of the first (in that order) missing or
    /// damaged.
    pub fn nodes_sized(&self, hashes: &[Hash]) -> Result<Vec<(Node, usize)>, GraphError> {
        self.decode_many(hashes, ObjectKind::Node, codec::decode_node)
    }

    /// An edge object and the length of its stored encoding.
    pub fn edge_sized(&self, hash: &Hash) -> Result<(Edge, usize), GraphError> {
        self.decode(hash, ObjectKind::Edge, codec::decode_edge)
    }

    /// An edge object.
    pub fn edge(&self, hash: &Hash) -> Result<Edge, GraphError> {
        self.decode(hash, ObjectKind::Edge, codec::decode_edge).map(|(e, _)| e)
    }

    /// A commit object.
    pub fn commit(&self, id: &CommitId) -> Result<Commit, GraphError> {
        self.decode(id.hash(), ObjectKind::Commit, codec::decode_commit)
            .map(|(c, _)| c)
    }

    /// A tree node (cached).
    pub fn tree(&self, hash: &Hash) -> Result<Arc<TreeNode>, GraphError> {
        if let Some(t) = self.trees.lock().get(hash) {
            return Ok(Arc::clone(t));
        }
        let t = Arc::new(self.decode(hash, ObjectKind::Tree, codec::decode_tree)?.0);
        let mut cache = self.trees.lock();
        if cache.len() >= TREE_CACHE_CAPACITY {
            // Crude but bounded; the cache only saves decoding, never changes a result.
            cache.clear();
        }
        cache.insert(*hash, Arc::clone(&t));
        Ok(t)
    }
}

/// Objects encoded by a write that has not reached the store yet, keyed by hash (so a
/// value written twice is stored once). [`PendingWrites::flush_to`] writes them as one
/// batch.
#[derive(Default)]
pub struct PendingWrites {
    objects: BTreeMap<Hash, Vec<u8>>,
    /// The first object added over `MAX_OBJECT_BYTES` (kind, size): reported by
    /// [`PendingWrites::flush_to`] before anything is written.
    oversize: Option<(&'static str, usize)>,
}

impl PendingWrites {
    /// An empty buffer.
    pub fn new() -> PendingWrites {
        PendingWrites::default()
    }

    /// Adds encoded bytes; returns their hash.
    pub fn add(&mut self, bytes: Vec<u8>) -> Hash {
        let h = codec::hash_object(&bytes);
        self.objects.entry(h).or_insert(bytes);
        h
    }

    /// Adds bytes whose hash the caller already computed with
    /// [`codec::hash_object`] (e.g. in parallel). Debug builds re-check the hash.
    pub fn add_encoded(&mut self, hash: Hash, bytes: Vec<u8>) {
        debug_assert_eq!(codec::hash_object(&bytes), hash);
        self.objects.entry(hash).or_insert(bytes);
    }

    /// Encodes and adds a node.
    pub fn add_node(&mut self, node: &Node) -> Hash {
        self.add(codec::encode_node(node))
    }

    /// Encodes and adds an edge.
    pub fn add_edge(&mut self, edge: &Edge) -> Hash {
        self.add(codec::encode_edge(edge))
    }

    /// Encodes and adds a tree node.
    pub fn add_tree(&mut self, t: &TreeNode) -> Hash {
        let bytes = codec::encode_tree(t);
        if bytes.len() > MAX_OBJECT_BYTES && self.oversize.is_none() {
            self.oversize = Some(("tree node", bytes.len()));
        }
        self.add(bytes)
    }

    /// Encodes and adds a commit.
    pub fn add_commit(&mut self, c: &Commit) -> CommitId {
        CommitId(self.add(codec::encode_commit(c)))
    }

    /// Number of objects buffered.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// True if nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Total encoded bytes buffered.
    pub fn byte_len(&self) -> usize {
        self.objects.values().map(Vec::len).sum()
    }

    /// Writes everything to the store as one batch (not flushed). Refused with
    /// [`GraphError::TooLarge`], writing nothing, if a tree node is over the object limit.
    pub fn flush_to(self, store: &dyn Store) -> Result<(), GraphError> {
        if let Some((kind, bytes)) = self.oversize {
            return Err(GraphError::TooLarge {
                kind,
                bytes,
                max: MAX_OBJECT_BYTES,
            });
        }
        if self.objects.is_empty() {
            return Ok(());
        }
        let batch: Vec<(Hash, Vec<u8>)> = self.objects.into_iter().collect();
        store.put_batch_owned(batch)?;
        Ok(())
    }
}
