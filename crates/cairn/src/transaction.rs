//! [`Transaction`]: a set of changes to one branch, validated as they are made and
//! committed atomically with compare-and-swap.

use std::collections::BTreeMap;

use cairn_core::codec::{decode_node, edge_key_prefix, edge_tree_key, encode_node, hash_object, split_edge_tree_key};
use cairn_core::limits::MAX_MESSAGE_BYTES;
use cairn_core::{Commit, CommitId, Edge, EdgeKey, Hash, Node, NodeId, Subject, ValidationError};
use cairn_graph::refs::BranchName;
use cairn_graph::{mst, Mutation, PendingWrites};

use crate::error::{Error, Result};
use crate::repo::Repo;

/// A set of changes to one branch.
///
/// Every `put_*`/`delete_*` validates at once and, on error, leaves the transaction as it
/// was. [`Transaction::commit`] writes all objects, flushes them, then moves the branch by
/// compare-and-swap from the head the transaction started at: if another writer moved it
/// first, the commit fails with [`Error::Conflict`] and the branch is untouched.
///
/// Deleting a node deletes its incident edges (in the commit it is based on and those put
/// earlier in this transaction).
pub struct Transaction<'r> {
    repo: &'r Repo,
    branch: BranchName,
    base: Option<CommitId>,
    base_commit: Option<Commit>,
    /// Pending node changes: the put node's canonical encoding and hash (encoded at put
    /// time, so a bulk transaction holds its nodes once, as bytes), or a deletion.
    nodes: BTreeMap<NodeId, Option<Encoded>>,
    edges: BTreeMap<EdgeKey, Option<Edge>>,
    /// Dimensions registered by this transaction (written as repo metadata on commit).
    /// With the first node put with the model (named if the registration fails).
    new_dims: BTreeMap<String, (usize, NodeId)>,
    /// Dimensions already registered in the repo, read once per model.
    known_dims: BTreeMap<String, Option<usize>>,
    author: String,
}

/// Checks a `got`-dimensional vector of `model` on node `id` against the model's
/// dimension `expected` (`None`: the model is new). `Ok(true)` if it matches, `Ok(false)`
/// if the model is new, else [`ValidationError::DimensionMismatch`]. The one dimension
/// rule, shared by transactions and merge resolutions.
pub(crate) fn check_dimension(id: &NodeId, model: &str, expected: Option<usize>, got: usize) -> Result<bool> {
    match expected {
        Some(d) if d != got => Err(ValidationError::DimensionMismatch {
            subject: Subject::Node(id.clone()),
            model: model.to_string(),
            expected: d,
            got,
        }
        .into()),
        Some(_) => Ok(true),
        None => Ok(false),
    }
}

/// An encoded object and its hash.
type Encoded = (Hash, Vec<u8>);

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl<'r> Transaction<'r> {
    pub(crate) fn begin(repo: &'r Repo, branch: BranchName) -> Result<Transaction<'r>> {
        let base = repo.refs().branch(&branch)?;
        let base_commit = base.map(|b| repo.commit(&b)).transpose()?;
        Ok(Transaction {
            repo,
            branch,
            base,
            base_commit,
            nodes: BTreeMap::new(),
            edges: BTreeMap::new(),
            new_dims: BTreeMap::new(),
            known_dims: BTreeMap::new(),
            author: "cairn".into(),
        })
    }

    /// The commit this transaction is based on (`None` on an empty branch).
    pub fn base(&self) -> Option<CommitId> {
        self.base
    }

    /// Sets the commit author (default `cairn`).
    pub fn set_author(&mut self, author: impl Into<String>) -> Result<()> {
        let author = author.into();
        if author.len() > cairn_core::limits::MAX_AUTHOR_BYTES {
            return Err(Error::InvalidArgument("author is over 1 KiB".into()));
        }
        self.author = author;
        Ok(())
    }

    /// Number of pending node and edge changes.
    pub fn len(&self) -> usize {
        self.nodes.len() + self.edges.len()
    }

    /// True if nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn base_node_root(&self) -> Option<Hash> {
        self.base_commit.as_ref().and_then(|c| c.node_root)
    }

    /// The node `id` as this transaction sees it (pending changes over the base).
    pub fn node(&self, id: &NodeId) -> Result<Option<Node>> {
        if let Some(pending) = self.nodes.get(id) {
            return match pending {
                None => Ok(None),
                Some((h, bytes)) => decode_node(bytes).map(Some).map_err(|e| {
                    Error::Graph(cairn_graph::GraphError::Corrupt {
                        kind: "node",
                        hash: *h,
                        detail: format!("a pending node does not decode: {e}"),
                    })
                }),
            };
        }
        self.repo.node_in_root(self.base_node_root(), id)
    }

    fn node_exists(&self, id: &NodeId) -> Result<bool> {
        if let Some(pending) = self.nodes.get(id) {
            return Ok(pending.is_some());
        }
        Ok(mst::get(self.repo.objects(), self.base_node_root(), id.as_bytes())?.is_some())
    }

    fn base_edge_exists(&self, key: &EdgeKey) -> Result<bool> {
        let root = self.base_commit.as_ref().and_then(|c| c.edge_root);
        let k = edge_tree_key(&key.source, &key.kind, &key.target);
        Ok(mst::get(self.repo.objects(), root, &k)?.is_some())
    }

    /// Adds or replaces a node (a put replaces the whole node). `-0.0` is stored as
    /// `+0.0`. Refused with [`Error::Validation`] for NaN/inf, a dimension that differs
    /// from the model's, bad sparse vectors, empty validity, oversize values.
    pub fn put_node(&mut self, mut node: Node) -> Result<()> {
        node.canonicalize();
        node.validate()?;
        let mut fresh = Vec::new();
        for (model, v) in &node.embeddings {
            let expected = match self.new_dims.get(model) {
                Some((d, _)) => Some(*d),
                None => match self.known_dims.get(model) {
                    Some(d) => *d,
                    None => {
                        let d = self.repo.dense_dim(model)?;
                        self.known_dims.insert(model.clone(), d);
                        d
                    }
                },
            };
            if !check_dimension(&node.id, model, expected, v.len())? {
                fresh.push((model.clone(), (v.len(), node.id.clone())));
            }
        }
        self.new_dims.extend(fresh);
        let bytes = encode_node(&node);
        let hash = hash_object(&bytes);
        self.nodes.insert(node.id, Some((hash, bytes)));
        Ok(())
    }

    /// Deletes a node and its incident edges. [`Error::NodeNotFound`] if it does not exist.
    pub fn delete_node(&mut self, id: &NodeId) -> Result<()> {
        if !self.node_exists(id)? {
            return Err(Error::NodeNotFound {
                id: id.clone(),
                at: self.base,
            });
        }
        // Incident edges: pending ones, and the base's out- and in-edges.
        let mut doomed: Vec<EdgeKey> = self
            .edges
            .iter()
            .filter(|(k, v)| v.is_some() && (&k.source == id || &k.target == id))
            .map(|(k, _)| k.clone())
            .collect();
        if let Some(c) = &self.base_commit {
            let prefix = edge_key_prefix(id);
            for (root, reversed) in [(c.edge_root, false), (c.edge_in_root, true)] {
                for (k, _) in self.repo.edge_keys_with_prefix(root, &prefix)? {
                    if let Some((a, kind, b)) = split_edge_tree_key(&k) {
                        let (source, target) = if reversed { (b, a) } else { (a, b) };
                        doomed.push(EdgeKey { source, kind, target });
                    }
                }
            }
        }
        for key in doomed {
            if matches!(self.edges.get(&key), Some(None)) {
                continue;
            }
            self.edges.insert(key, None);
        }
        self.nodes.insert(id.clone(), None);
        Ok(())
    }

    /// Adds or replaces an edge. Both endpoints must exist (in the base or put earlier in
    /// this transaction), else [`ValidationError::MissingEndpoint`].
    pub fn put_edge(&mut self, mut edge: Edge) -> Result<()> {
        edge.canonicalize();
        edge.validate()?;
        for end in [&edge.source, &edge.target] {
            if !self.node_exists(end)? {
                return Err(ValidationError::MissingEndpoint {
                    subject: Subject::Edge(Box::new(edge.key())),
                    missing: end.clone(),
                }
                .into());
            }
        }
        self.edges.insert(edge.key(), Some(edge));
        Ok(())
    }

    /// Deletes an edge. [`Error::EdgeNotFound`] if it does not exist.
    pub fn delete_edge(&mut self, key: &EdgeKey) -> Result<()> {
        let exists = match self.edges.get(key) {
            Some(p) => p.is_some(),
            None => self.base_edge_exists(key)?,
        };
        if !exists {
            return Err(Error::EdgeNotFound { key: key.clone() });
        }
        self.edges.insert(key.clone(), None);
        Ok(())
    }

    /// Commits with the current time as timestamp — clamped to the parent's timestamp if
    /// the clock is behind it, so timestamps on a branch never go backwards.
    pub fn commit(self, message: &str) -> Result<CommitId> {
        let parent_ms = self.base_commit.as_ref().map_or(i64::MIN, |c| c.timestamp_ms);
        let ts = now_ms().max(parent_ms);
        self.commit_at(message, ts)
    }

    /// Commits with an explicit timestamp (ms since the epoch). Refused with
    /// [`Error::TimestampBeforeParent`] if it is earlier than the parent's.
    pub fn commit_at(mut self, message: &str, timestamp_ms: i64) -> Result<CommitId> {
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(Error::InvalidArgument("commit message is over 64 KiB".into()));
        }
        if let Some(p) = &self.base_commit {
            if timestamp_ms < p.timestamp_ms {
                return Err(Error::TimestampBeforeParent {
                    timestamp_ms,
                    parent_ms: p.timestamp_ms,
                });
            }
        }
        // Held until the ref has moved: gc never collects the objects of a commit being
        // published (see gc.rs).
        let _publishing = self.repo.inner.gc_lock.read();
        let objs = self.repo.objects();
        let base = self.base_commit.clone();
        let (node_root, edge_root, edge_in_root, node_count, edge_count) = match &base {
            Some(c) => (c.node_root, c.edge_root, c.edge_in_root, c.node_count, c.edge_count),
            None => (None, None, None, 0, 0),
        };
        let mut out = PendingWrites::new();

        // Nodes, encoded when they were put.
        let encoded = std::mem::take(&mut self.nodes);
        let mut node_muts = BTreeMap::new();
        let mut node_count = node_count as i64;
        for (id, enc) in encoded {
            let before = match node_root {
                Some(_) => mst::get(objs, node_root, id.as_bytes())?,
                None => None,
            };
            let m = match enc {
                Some((h, bytes)) => {
                    out.add_encoded(h, bytes);
                    Mutation::Put(h)
                }
                None => Mutation::Delete,
            };
            let after = match m {
                Mutation::Put(h) => Some(h),
                Mutation::Delete => None,
            };
            if before != after {
                node_count += after.is_some() as i64 - before.is_some() as i64;
            }
            node_muts.insert(id.as_bytes().to_vec(), m);
        }
        let new_node_root = mst::apply(objs, node_root, &node_muts, Some(node_count.max(0) as u64), &mut out)?;

        // Edges: the forward and reverse trees map to the same edge objects.
        let mut fwd = BTreeMap::new();
        let mut rev = BTreeMap::new();
        let mut edge_count = edge_count as i64;
        for (key, change) in &self.edges {
            let k = edge_tree_key(&key.source, &key.kind, &key.target);
            let before = mst::get(objs, edge_root, &k)?;
            let m = match change {
                Some(e) => Mutation::Put(out.add_edge(e)),
                None => Mutation::Delete,
            };
            let after = match m {
                Mutation::Put(h) => Some(h),
                Mutation::Delete => None,
            };
            edge_count += after.is_some() as i64 - before.is_some() as i64;
            rev.insert(Repo::in_key(key), m);
            fwd.insert(k, m);
        }
        let new_edge_root = mst::apply(objs, edge_root, &fwd, Some(edge_count.max(0) as u64), &mut out)?;
        let new_edge_in_root = mst::apply(objs, edge_in_root, &rev, Some(edge_count.max(0) as u64), &mut out)?;

        let node_count = node_count.max(0) as u64;

        let commit = Commit {
            parents: self.base.into_iter().collect(),
            node_root: new_node_root,
            edge_root: new_edge_root,
            edge_in_root: new_edge_in_root,
            node_count,
            edge_count: edge_count.max(0) as u64,
            author: self.author.clone(),
            message: message.to_string(),
            timestamp_ms,
            generation: base.as_ref().map_or(0, |c| c.generation + 1),
            // Retired with index format 1 (storage-format.md §3.4): always None / 0.
            index_base: None,
            changes_since_base: 0,
        };
        let id = out.add_commit(&commit);

        // Durability order: objects, flush, then the ref (the CAS flushes).
        let store = self.repo.store();
        out.flush_to(store.as_ref())?;
        store.flush()?;
        let refs = self.repo.refs();
        for (model, (dim, introduced_by)) in &self.new_dims {
            let stored = refs.set_meta_once(&format!("dense-dim/{model}"), &(*dim as u32).to_le_bytes())?;
            let stored_dim = <[u8; 4]>::try_from(stored.as_slice())
                .map(u32::from_le_bytes)
                .unwrap_or(0) as usize;
            if stored_dim != *dim {
                // A concurrent writer registered another dimension first.
                return Err(ValidationError::DimensionMismatch {
                    subject: Subject::Node(introduced_by.clone()),
                    model: model.clone(),
                    expected: stored_dim,
                    got: *dim,
                }
                .into());
            }
        }
        match refs.cas_branch(&self.branch, self.base, Some(id))? {
            Ok(()) => {
                // The time index is derived data: if recording fails, it is rebuilt from
                // the chain on next use, so the (already durable) commit still stands.
                let _ = self.repo.record_head(self.branch.as_str(), &id, &commit);
                Ok(id)
            }
            Err(actual) => Err(Error::Conflict {
                branch: self.branch.to_string(),
                expected: self.base.map_or("none".into(), |c| c.to_hex()),
                actual: actual.map_or("none".into(), |c| c.to_hex()),
            }),
        }
    }
}
