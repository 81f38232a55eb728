//! [`Transaction`]: a set of changes to one branch, validated as they are made and
//! committed atomically with compare-and-swap.

use std::collections::BTreeMap;

use cairn_core::codec::{decode_node, encode_edge, encode_node, hash_object};
use cairn_core::{Commit, CommitId, Edge, EdgeKey, Hash, Node, NodeId, Subject, ValidationError};
use cairn_graph::refs::BranchName;
use cairn_graph::{EdgeTree, NodeTree, PendingWrites, ReverseEdgeTree};

use crate::embed_on_write::OnWrite;
use crate::error::{Error, Result};
use crate::repo::Repo;
use crate::writer::{self, ChangeSet, CommitHeader};

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
    /// Pending node changes: the put node's hash and canonical encoding (encoded at put
    /// time), or a deletion. The bytes are `None` once written to the store ahead of the
    /// commit ([`SPILL_BYTES`]).
    nodes: BTreeMap<NodeId, Option<Staged>>,
    /// Nodes put since the last write ahead, and their encoded bytes.
    unwritten: Vec<NodeId>,
    unwritten_bytes: usize,
    /// The pin set of the objects written ahead (`pins.rs`), once there are any.
    pins: Option<u64>,
    edges: BTreeMap<EdgeKey, Option<Edge>>,
    /// The dimension of every dense model the put nodes carry, with the first node put
    /// with it (named if the registration fails): registered on commit (`writer.rs`).
    dims: BTreeMap<String, (usize, NodeId)>,
    /// Dimensions already registered in the repo, read once per model.
    known_dims: BTreeMap<String, Option<usize>>,
    author: String,
    /// Embedding on write (`embed_on_write.rs`): the nodes waiting for vectors.
    on_write: OnWrite,
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

/// A put node: its hash, and its encoding until it is written ahead of the commit.
type Staged = (Hash, Option<Vec<u8>>);

/// Encoded node bytes a transaction holds before it writes them to the store ahead of its
/// commit (pinned against `gc` until the commit lands or the transaction is dropped): a
/// bulk import holds at most this much of its input, plus a hash per node.
const SPILL_BYTES: usize = 64 << 20;

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
            unwritten: Vec::new(),
            unwritten_bytes: 0,
            pins: None,
            edges: BTreeMap::new(),
            dims: BTreeMap::new(),
            known_dims: BTreeMap::new(),
            author: "cairn".into(),
            on_write: OnWrite::new(),
        })
    }

    /// The commit this transaction is based on (`None` on an empty branch).
    pub fn base(&self) -> Option<CommitId> {
        self.base
    }

    /// Sets the commit author (default `cairn`). [`Error::InvalidArgument`] if it is empty
    /// (or only whitespace) or over 1 KiB.
    pub fn set_author(&mut self, author: impl Into<String>) -> Result<()> {
        self.author = writer::checked_author(author.into())?;
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

    /// True if committing would leave the node and edge roots as the base has them: every
    /// pending change puts a node or edge exactly as the base holds it (same canonical
    /// bytes), or deletes one the base lacks. Imports (`cairn import`, `POST /import`, MCP
    /// `remember`) make no commit then; [`Transaction::commit`] itself still commits.
    ///
    /// ```
    /// # fn main() -> Result<(), cairn::Error> {
    /// use cairn::{Node, NodeId, Repo};
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a").unwrap()))?;
    /// assert!(!tx.changes_nothing()?);
    /// tx.commit("add a")?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a").unwrap()))?; // the same node again
    /// assert!(tx.changes_nothing()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn changes_nothing(&self) -> Result<bool> {
        // A node waiting for its vectors gains one: a change.
        if self.on_write.has_waiting() {
            return Ok(false);
        }
        let objs = self.repo.objects();
        let nodes = NodeTree::new(self.base_node_root());
        for (id, pending) in &self.nodes {
            if nodes.get(objs, id)? != pending.as_ref().map(|(h, _)| *h) {
                return Ok(false);
            }
        }
        let edges = self.base_commit.as_ref().map_or(EdgeTree::EMPTY, EdgeTree::of);
        for (key, pending) in &self.edges {
            let after = pending.as_ref().map(|e| hash_object(&encode_edge(e)));
            if edges.get(objs, key)? != after {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn base_node_root(&self) -> Option<Hash> {
        self.base_commit.as_ref().and_then(|c| c.node_root)
    }

    /// The node `id` as this transaction sees it (pending changes over the base).
    pub fn node(&self, id: &NodeId) -> Result<Option<Node>> {
        if let Some(pending) = self.nodes.get(id) {
            return match pending {
                None => Ok(None),
                Some((h, Some(bytes))) => decode_node(bytes).map(Some).map_err(|e| {
                    Error::Graph(cairn_graph::GraphError::Corrupt {
                        kind: "node",
                        hash: *h,
                        detail: format!("a pending node does not decode: {e}"),
                    })
                }),
                Some((h, None)) => Ok(Some(self.repo.objects().node(h)?)),
            };
        }
        self.repo.node_in_root(self.base_node_root(), id)
    }

    /// The edge `key` as this transaction sees it (pending changes over the base).
    pub fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>> {
        if let Some(pending) = self.edges.get(key) {
            return Ok(pending.clone());
        }
        match &self.base {
            Some(base) => self.repo.edge_at(base, key),
            None => Ok(None),
        }
    }

    /// [`Error::NodeNotFound`] for `id` at this transaction's base.
    pub(crate) fn node_not_found(&self, id: &NodeId) -> Error {
        Error::NodeNotFound {
            id: id.clone(),
            at: self.base,
        }
    }

    fn node_exists(&self, id: &NodeId) -> Result<bool> {
        if let Some(pending) = self.nodes.get(id) {
            return Ok(pending.is_some());
        }
        Ok(NodeTree::new(self.base_node_root())
            .get(self.repo.objects(), id)?
            .is_some())
    }

    fn base_edge_exists(&self, key: &EdgeKey) -> Result<bool> {
        let tree = self.base_commit.as_ref().map_or(EdgeTree::EMPTY, EdgeTree::of);
        Ok(tree.get(self.repo.objects(), key)?.is_some())
    }

    /// Turns embedding on write off (or on again) for this transaction: with it on (the
    /// default), a node put with text gets the vectors of the repository's embedders in
    /// this commit (see `Repo::set_embedder`; the rules are in the README's "Embedding on
    /// write"). Nodes already waiting for vectors still get them.
    pub fn embed_on_write(&mut self, on: bool) {
        self.on_write.set_enabled(on);
    }

    /// Adds or replaces a node (a put replaces the whole node). `-0.0` is stored as
    /// `+0.0`. Refused with [`Error::Validation`] for NaN/inf, a dimension that differs
    /// from the model's, bad sparse vectors, empty validity, oversize values.
    ///
    /// With embedding on write ([`Transaction::embed_on_write`]), a node that needs
    /// vectors waits for them: [`Transaction::node`] shows it without them until its
    /// batch is embedded (at the latest by the commit). A batch's embedder failing fails
    /// this put with [`Error::Embedder`]; the node is then put and waiting, and the
    /// commit fails the same way unless the embedder recovers.
    pub fn put_node(&mut self, mut node: Node) -> Result<()> {
        node.canonicalize();
        node.validate()?;
        let repo = self.repo;
        let root = self.base_node_root();
        let base = move |id: &NodeId| repo.node_in_root(root, id);
        match self.on_write.prepare(repo, &base, node)? {
            Ok(node) => {
                let id = node.id.clone();
                self.stage(node)?;
                // Put again with what it needs: an earlier put's wait is over.
                self.on_write.forget(&id);
                Ok(())
            }
            Err((node, models)) => {
                self.stage_waiting(node.clone())?;
                if self.on_write.wait(node, models) {
                    self.embed_waiting()?;
                }
                Ok(())
            }
        }
    }

    /// Embeds the nodes waiting for vectors and stages them. On failure every one of
    /// them keeps waiting (and the transaction as it was).
    fn embed_waiting(&mut self) -> Result<()> {
        let nodes = self.on_write.embed_waiting(self.repo)?;
        let mut fresh: BTreeMap<String, (usize, NodeId)> = BTreeMap::new();
        for node in &nodes {
            for (model, (d, id)) in self.check_dims(node)? {
                match fresh.get(&model) {
                    Some((first, _)) => {
                        check_dimension(&id, &model, Some(*first), d)?;
                    }
                    None => {
                        fresh.insert(model, (d, id));
                    }
                }
            }
        }
        self.dims.extend(fresh);
        for node in nodes {
            self.stage_encoded(node);
        }
        self.on_write.staged();
        Ok(())
    }

    /// Encodes a final node and stages it, to be written ahead with the others.
    fn stage_encoded(&mut self, node: Node) {
        let bytes = encode_node(&node);
        let hash = hash_object(&bytes);
        self.unwritten_bytes += bytes.len();
        self.unwritten.push(node.id.clone());
        self.nodes.insert(node.id, Some((hash, Some(bytes))));
    }

    /// A node waiting for vectors, put as it is meanwhile (so it exists for edges and
    /// reads); never written ahead (its final bytes come with its vectors).
    fn stage_waiting(&mut self, node: Node) -> Result<()> {
        let fresh = self.check_dims(&node)?;
        self.dims.extend(fresh);
        let bytes = encode_node(&node);
        let hash = hash_object(&bytes);
        self.nodes.insert(node.id, Some((hash, Some(bytes))));
        Ok(())
    }

    /// The dimension check of every vector of `node`: the models it carries first in
    /// this transaction, with their dimension (to register on commit).
    fn check_dims(&mut self, node: &Node) -> Result<Vec<(String, (usize, NodeId))>> {
        let mut fresh = Vec::new();
        for (model, v) in &node.embeddings {
            let expected = match self.dims.get(model) {
                Some((d, _)) => Some(*d),
                None => match self.known_dims.get(model) {
                    Some(d) => *d,
                    None => {
                        let d = match self.repo.dense_dim(model)? {
                            Some(d) => Some(d),
                            None => self.committed_dim(model)?,
                        };
                        self.known_dims.insert(model.clone(), d);
                        d
                    }
                },
            };
            check_dimension(&node.id, model, expected, v.len())?;
            if !self.dims.contains_key(model) && !fresh.iter().any(|(m, _)| m == model) {
                fresh.push((model.clone(), (v.len(), node.id.clone())));
            }
        }
        Ok(fresh)
    }

    /// The dimension of `model`'s vectors in the base commit, for a model the repository
    /// has no dimension record of: a new model (`None`), or a record that was lost — then
    /// it is recovered from what was committed (and written again by the commit), never
    /// re-learned from this write's vectors. Reads the base's index core parts (built or
    /// loaded as a query would), once per model and transaction, and only for a model
    /// without a record.
    fn committed_dim(&self, model: &str) -> Result<Option<usize>> {
        let Some(base) = self.base else { return Ok(None) };
        let (view, _) = self
            .repo
            .derived()
            .index_view(&base, &cairn_index::IndexNeeds::default())?;
        Ok(view.dense_models().get(model).copied())
    }

    /// Stages a node that is final (needs no more vectors).
    fn stage(&mut self, node: Node) -> Result<()> {
        let fresh = self.check_dims(&node)?;
        // Written ahead first: if that fails, the put is refused with the transaction as
        // it was.
        if self.unwritten_bytes >= SPILL_BYTES {
            self.write_ahead()?;
        }
        // Only once every model has passed: a refused put leaves the transaction as it was.
        self.dims.extend(fresh);
        self.stage_encoded(node);
        Ok(())
    }

    /// Writes the nodes put since the last call to the store (not flushed: the commit
    /// flushes before it moves the ref), pinned against `gc`, and lets go of their bytes.
    /// On failure nothing is let go (what was written is an unreachable orphan).
    fn write_ahead(&mut self) -> Result<()> {
        let ids = std::mem::take(&mut self.unwritten);
        let mut batch: Vec<(Hash, Vec<u8>)> = ids
            .iter()
            .filter_map(|id| match self.nodes.get(id) {
                Some(Some((h, Some(bytes)))) => Some((*h, bytes.clone())),
                _ => None,
            })
            .collect();
        // In hash order, as a commit writes its objects: the segment hints then list keys
        // in runs of increasing order, which the next open indexes several times faster.
        batch.sort_unstable_by_key(|(h, _)| *h);
        let pins = &self.repo.inner.pins;
        let set = *self.pins.get_or_insert_with(|| pins.open());
        pins.add(set, batch.iter().map(|(h, _)| *h));
        if let Err(e) = self.repo.store().put_batch_owned(batch) {
            self.unwritten = ids;
            return Err(e.into());
        }
        for id in &ids {
            if let Some(Some((_, bytes))) = self.nodes.get_mut(id) {
                *bytes = None;
            }
        }
        self.unwritten_bytes = 0;
        Ok(())
    }

    /// Deletes a node and its incident edges. [`Error::NodeNotFound`] if it does not exist.
    pub fn delete_node(&mut self, id: &NodeId) -> Result<()> {
        if !self.node_exists(id)? {
            return Err(self.node_not_found(id));
        }
        // Incident edges: pending ones, and the base's out- and in-edges.
        let mut doomed: Vec<EdgeKey> = self
            .edges
            .iter()
            .filter(|(k, v)| v.is_some() && (&k.source == id || &k.target == id))
            .map(|(k, _)| k.clone())
            .collect();
        if let Some(c) = &self.base_commit {
            // A key that does not decode is damage, reported, never skipped.
            let objs = self.repo.objects();
            let out = EdgeTree::of(c).edges_from(objs, id)?;
            let into = ReverseEdgeTree::of(c).edges_to(objs, id)?;
            doomed.extend(out.into_iter().chain(into).map(|(k, _)| k));
        }
        for key in doomed {
            if matches!(self.edges.get(&key), Some(None)) {
                continue;
            }
            self.edges.insert(key, None);
        }
        self.nodes.insert(id.clone(), None);
        self.on_write.forget(id);
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
        let ts = writer::now_ms().max(parent_ms);
        self.commit_at(message, ts)
    }

    /// Commits with an explicit timestamp (ms since the epoch). Refused with
    /// [`Error::TimestampBeforeParent`] if it is earlier than the parent's.
    pub fn commit_at(mut self, message: &str, timestamp_ms: i64) -> Result<CommitId> {
        writer::check_message(message)?;
        if let Some(p) = &self.base_commit {
            if timestamp_ms < p.timestamp_ms {
                return Err(Error::TimestampBeforeParent {
                    timestamp_ms,
                    parent_ms: p.timestamp_ms,
                });
            }
        }
        // The nodes still waiting for vectors get them first (no lock is held while an
        // embedder runs); a failure commits nothing.
        self.embed_waiting()?;
        // Held until the ref has moved: gc never collects the objects of a commit being
        // published (see gc.rs).
        let publishing = self.repo.inner.gc_lock.read();
        let mut out = PendingWrites::new();
        let mut change = ChangeSet {
            dims: std::mem::take(&mut self.dims),
            ..ChangeSet::default()
        };
        // Nodes, encoded when they were put.
        for (id, staged) in std::mem::take(&mut self.nodes) {
            let after = staged.map(|(hash, bytes)| {
                if let Some(bytes) = bytes {
                    out.add_encoded(hash, bytes);
                }
                hash
            });
            change.nodes.insert(id, after);
        }
        for (key, edge) in &self.edges {
            change.edges.insert(key.clone(), edge.as_ref().map(|e| out.add_edge(e)));
        }
        let header = CommitHeader {
            parents: self.base.into_iter().collect(),
            base: self.base_commit.as_ref(),
            author: &self.author,
            message,
            timestamp_ms,
        };
        writer::write_commit(self.repo, &publishing, &self.branch, &change, out, header)
    }
}

impl Drop for Transaction<'_> {
    /// Unpins what was written ahead: committed, it is reachable from the branch; dropped,
    /// it is garbage.
    fn drop(&mut self) {
        if let Some(set) = self.pins {
            self.repo.inner.pins.release(set);
        }
    }
}
