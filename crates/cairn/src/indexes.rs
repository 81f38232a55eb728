//! Per-commit indexes: built on first use, derived from an ancestor's when one is at
//! hand, cached in memory (bounded), persisted as derived data.
//!
//! An index is keyed by [`Repo::index_key`]: blake3 over the commit's node root, edge
//! root, the index parameters' fingerprint and its dense base's node root. The key is
//! stored inside the persisted bytes and checked on load, so an index can never be served
//! for other content. Lookup order for a commit:
//! 1. the in-memory cache;
//! 2. the persisted index (`ix/<key>` in the store's derived space);
//! 3. the nearest first-parent ancestor (up to [`MAX_DERIVE_STEPS`] back) whose index is
//!    cached or persisted, then derived forward commit by commit from tree diffs (no full
//!    scan: cost follows the size of the changes);
//! 4. a full build from every node and edge.
//!
//! Indexes built from scratch (and every [`Repo::build_indexes`]) are persisted; derived
//! ones are persisted when the chain walked was long, so reopening never rebuilds.
//!
//! Dense (HNSW) bases: a commit names the commit whose node set its base is built over
//! (`Commit::index_base`). The base graph for (that node set, model, parameters) is built
//! once — in a one-thread pool, so it is a function of its input alone — persisted under
//! `hb/<key>`, and attached to every index that names it. Builds run without holding the
//! cache lock: readers of other commits are never blocked.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use cairn_core::codec::split_edge_tree_key;
use cairn_core::{Commit, CommitId, EdgeKey, Hash, Node, NodeId};
use cairn_graph::mst;
use cairn_index::dense::DenseIndex;
use cairn_index::hnsw::{decode_hnsw, encode_hnsw, HnswBase, HNSW_MIN_NODES};
use cairn_index::persist::{decode_indexes, encode_indexes};
use cairn_index::{CommitIndexes, EdgeDelta, IndexParams, NodeDelta};
use cairn_retrieve::{NodeLoader, ResolvedCommit, RetrievalSource, SourceError};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::repo::Repo;

/// How far back [`Repo::indexes_at`] looks for an ancestor's index to derive from.
pub const MAX_DERIVE_STEPS: usize = 64;
/// Derived indexes are persisted when at least this many steps were derived.
const PERSIST_AFTER_STEPS: usize = 16;
/// Commit indexes kept in memory.
const CACHE_ENTRIES: usize = 8;

/// The in-memory index cache of a repository.
pub(crate) struct IndexCache {
    params: IndexParams,
    entries: Mutex<VecDeque<(Hash, Arc<CommitIndexes>)>>,
    bases: Mutex<BTreeMap<Hash, Arc<HnswBase>>>,
}

impl Default for IndexCache {
    fn default() -> Self {
        IndexCache {
            params: IndexParams::default(),
            entries: Mutex::new(VecDeque::new()),
            bases: Mutex::new(BTreeMap::new()),
        }
    }
}

impl IndexCache {
    fn get(&self, key: &Hash) -> Option<Arc<CommitIndexes>> {
        let mut e = self.entries.lock();
        let pos = e.iter().position(|(k, _)| k == key)?;
        let entry = e.remove(pos)?;
        let ix = Arc::clone(&entry.1);
        e.push_front(entry);
        Some(ix)
    }

    fn put(&self, key: Hash, ix: Arc<CommitIndexes>) {
        let mut e = self.entries.lock();
        if let Some(pos) = e.iter().position(|(k, _)| *k == key) {
            e.remove(pos);
        }
        e.push_front((key, ix));
        e.truncate(CACHE_ENTRIES);
    }
}

/// What [`Repo::build_indexes`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IndexReport {
    /// The commit.
    pub commit: CommitId,
    /// The index key.
    pub key: Hash,
    /// Nodes indexed.
    pub nodes: u32,
    /// Dense models, with whether an HNSW base is attached.
    pub dense: Vec<(String, bool)>,
}

pub(crate) fn ix_key(key: &Hash) -> Vec<u8> {
    let mut k = b"ix/".to_vec();
    k.extend_from_slice(key.as_bytes());
    k
}

pub(crate) fn hb_key(key: &Hash) -> Vec<u8> {
    let mut k = b"hb/".to_vec();
    k.extend_from_slice(key.as_bytes());
    k
}

impl Repo {
    /// The parameters indexes are built with.
    pub fn index_params(&self) -> &IndexParams {
        &self.inner.indexes.params
    }

    fn base_commit_of(&self, id: &CommitId, c: &Commit) -> Option<CommitId> {
        c.index_base.map(|b| if b.0 == Hash::ZERO { *id } else { b })
    }

    /// The key of a commit's indexes: blake3 over `cairn-commit-indexes`, the node root,
    /// edge root (32 zero bytes when empty), the parameters' fingerprint and the dense
    /// base commit's node root (zeros without a base).
    pub fn index_key(&self, id: &CommitId) -> Result<Hash> {
        let c = self.commit(id)?;
        self.index_key_of(id, &c)
    }

    pub(crate) fn index_key_of(&self, id: &CommitId, c: &Commit) -> Result<Hash> {
        let base_root = match self.base_commit_of(id, c) {
            Some(b) if b == *id => c.node_root,
            Some(b) => self.commit(&b)?.node_root,
            None => None,
        };
        let mut bytes = b"cairn-commit-indexes".to_vec();
        for h in [
            c.node_root,
            c.edge_root,
            Some(self.index_params().fingerprint()),
            base_root,
        ] {
            bytes.extend_from_slice(h.unwrap_or(Hash::ZERO).as_bytes());
        }
        bytes.push(u8::from(c.index_base.is_some()));
        Ok(Hash::of(&bytes))
    }

    /// The indexes of the commit `rev` names (built, derived or loaded as needed).
    pub fn indexes(&self, rev: &str) -> Result<Arc<CommitIndexes>> {
        let id = self.resolve(rev)?;
        self.indexes_at(&id)
    }

    /// Builds (or loads) the indexes of `rev`, including HNSW bases, and persists them:
    /// call ahead of queries so that the first query does not pay for the build.
    pub fn build_indexes(&self, rev: &str) -> Result<IndexReport> {
        let id = self.resolve(rev)?;
        let ix = self.indexes_at(&id)?;
        let key = ix.key;
        let store = self.store();
        if store.get_derived(&ix_key(&key))?.is_none() {
            store.put_derived(&[(ix_key(&key), encode_indexes(&ix))])?;
            store.flush()?;
        }
        Ok(IndexReport {
            commit: id,
            key,
            nodes: ix.node_count(),
            dense: ix.dense.iter().map(|(m, d)| (m.clone(), d.base().is_some())).collect(),
        })
    }

    /// The indexes of commit `id`.
    pub fn indexes_at(&self, id: &CommitId) -> Result<Arc<CommitIndexes>> {
        let c = self.commit(id)?;
        let key = self.index_key_of(id, &c)?;
        if let Some(ix) = self.inner.indexes.get(&key) {
            return Ok(ix);
        }
        let ix = match self.load_persisted(&key)? {
            Some(ix) => ix,
            None => self.derive_or_build(id, &c, key)?,
        };
        let ix = Arc::new(self.attach_bases(id, &c, ix)?);
        self.inner.indexes.put(key, Arc::clone(&ix));
        Ok(ix)
    }

    fn load_persisted(&self, key: &Hash) -> Result<Option<CommitIndexes>> {
        match self.store().get_derived(&ix_key(key))? {
            // A persisted index that fails to decode is derived data: rebuild it.
            Some(bytes) => Ok(decode_indexes(&bytes, key).ok()),
            None => Ok(None),
        }
    }

    /// Finds the nearest ancestor with an index at hand and derives forward; else builds.
    fn derive_or_build(&self, id: &CommitId, c: &Commit, key: Hash) -> Result<CommitIndexes> {
        let mut chain: Vec<(CommitId, Commit)> = vec![(*id, c.clone())];
        let mut start: Option<CommitIndexes> = None;
        for _ in 0..MAX_DERIVE_STEPS {
            let Some(p) = chain.last().and_then(|(_, c)| c.parents.first().copied()) else {
                break;
            };
            let pc = self.commit(&p)?;
            let pkey = self.index_key_of(&p, &pc)?;
            if let Some(ix) = self.inner.indexes.get(&pkey) {
                start = Some((*ix).clone());
            } else if let Some(ix) = self.load_persisted(&pkey)? {
                start = Some(ix);
            }
            chain.push((p, pc));
            if start.is_some() {
                break;
            }
        }
        let params = self.index_params().clone();
        let Some(mut ix) = start else {
            let built = self.build_from_scratch(c, key, &params)?;
            self.store().put_derived(&[(ix_key(&key), encode_indexes(&built))])?;
            return Ok(built);
        };
        // chain = [id, parent, ..., ancestor-with-index]; derive from the end forward.
        let steps = chain.len() - 1;
        for w in (0..steps).rev() {
            let (child_id, child) = &chain[w];
            let (_, parent) = &chain[w + 1];
            let child_key = self.index_key_of(child_id, child)?;
            let (nodes, edges) = self.deltas(parent, child)?;
            ix = match CommitIndexes::derive(&ix, child_key, &params, &nodes, &edges) {
                Ok(d) => d,
                Err(_) => self.build_from_scratch(child, child_key, &params)?,
            };
        }
        if steps >= PERSIST_AFTER_STEPS {
            self.store().put_derived(&[(ix_key(&key), encode_indexes(&ix))])?;
        }
        Ok(ix)
    }

    fn deltas(&self, parent: &Commit, child: &Commit) -> Result<(NodeDelta, EdgeDelta)> {
        let objs = self.objects();
        let mut nodes = NodeDelta::default();
        for ch in mst::diff(objs, parent.node_root, child.node_root)? {
            match ch.after {
                Some(h) => nodes.upserted.push((h, objs.node(&h)?)),
                None => nodes.removed.push(node_id_of(&ch.key)?),
            }
        }
        let mut edges = EdgeDelta::default();
        for ch in mst::diff(objs, parent.edge_root, child.edge_root)? {
            match ch.after {
                Some(h) => edges.upserted.push(objs.edge(&h)?),
                None => {
                    let (source, kind, target) = split_edge_tree_key(&ch.key)
                        .ok_or_else(|| Error::InvalidArgument("edge tree holds a malformed key".into()))?;
                    edges.removed.push(EdgeKey { source, kind, target });
                }
            }
        }
        Ok((nodes, edges))
    }

    fn build_from_scratch(&self, c: &Commit, key: Hash, params: &IndexParams) -> Result<CommitIndexes> {
        let objs = self.objects();
        let mut nodes: Vec<(Hash, Node)> = Vec::with_capacity(c.node_count as usize);
        mst::for_each(objs, c.node_root, &mut |_, h| {
            nodes.push((*h, objs.node(h)?));
            Ok(())
        })?;
        let mut edges = Vec::with_capacity(c.edge_count as usize);
        mst::for_each(objs, c.edge_root, &mut |_, h| {
            edges.push(objs.edge(h)?);
            Ok(())
        })?;
        Ok(CommitIndexes::build(key, params, &nodes, &edges))
    }

    /// Attaches the HNSW base the commit names to each dense index large enough to use one.
    fn attach_bases(&self, id: &CommitId, c: &Commit, mut ix: CommitIndexes) -> Result<CommitIndexes> {
        let Some(base_commit) = self.base_commit_of(id, c) else {
            return Ok(ix);
        };
        let models: Vec<String> = ix.dense.keys().cloned().collect();
        for model in models {
            let dense = Arc::clone(&ix.dense[&model]);
            if dense.len() < HNSW_MIN_NODES {
                continue;
            }
            let base = if base_commit == *id {
                self.hnsw_base(c, &model, || Ok(Arc::clone(&dense)), ix.nodes.ids())?
            } else {
                let bc = self.commit(&base_commit)?;
                self.hnsw_base(
                    &bc,
                    &model,
                    || {
                        let bix = self.indexes_at(&base_commit)?;
                        bix.dense
                            .get(&model)
                            .cloned()
                            .ok_or_else(|| Error::InvalidArgument(format!("base commit lacks model {model}")))
                    },
                    &[],
                )?
            };
            if dense.base_key() != Some(base.key) {
                ix.dense.insert(model, Arc::new(dense.with_base(base)));
            }
        }
        Ok(ix)
    }

    /// The key of the HNSW base over the node set at `base_node_root` for `model` (its
    /// derived entry is `hb/<key>`; `gc` keeps the ones live commits name).
    pub(crate) fn hnsw_base_key(&self, base_node_root: Option<Hash>, model: &str) -> Hash {
        let mut kb = b"cairn-hnsw-base".to_vec();
        kb.extend_from_slice(base_node_root.unwrap_or(Hash::ZERO).as_bytes());
        kb.extend_from_slice(self.index_params().fingerprint().as_bytes());
        kb.extend_from_slice(model.as_bytes());
        Hash::of(&kb)
    }

    /// The HNSW base over commit `bc`'s vectors of `model`: cached, persisted, or built.
    fn hnsw_base(
        &self,
        bc: &Commit,
        model: &str,
        dense: impl FnOnce() -> Result<Arc<DenseIndex>>,
        ids_hint: &[NodeId],
    ) -> Result<Arc<HnswBase>> {
        let params = &self.index_params().hnsw;
        let key = self.hnsw_base_key(bc.node_root, model);
        if let Some(b) = self.inner.indexes.bases.lock().get(&key) {
            return Ok(Arc::clone(b));
        }
        let base = match self
            .store()
            .get_derived(&hb_key(&key))?
            .and_then(|b| decode_hnsw(&b).ok())
        {
            Some(b) => Arc::new(b),
            None => {
                let dense = dense()?;
                let ids: Vec<NodeId> = if ids_hint.is_empty() {
                    let mut ids = Vec::with_capacity(bc.node_count as usize);
                    mst::for_each(self.objects(), bc.node_root, &mut |k, _| {
                        ids.push(node_id_of(k).map_err(|_| cairn_graph::GraphError::BadRef {
                            name: "node tree".into(),
                            detail: "key is not a node id".into(),
                        })?);
                        Ok(())
                    })?;
                    ids
                } else {
                    ids_hint.to_vec()
                };
                let built = Arc::new(dense.build_base(&ids, params)?);
                self.store().put_derived(&[(hb_key(&key), encode_hnsw(&built)?)])?;
                built
            }
        };
        self.inner.indexes.bases.lock().insert(key, Arc::clone(&base));
        Ok(base)
    }
}

fn node_id_of(key: &[u8]) -> Result<NodeId> {
    String::from_utf8(key.to_vec())
        .ok()
        .and_then(|s| NodeId::new(s).ok())
        .ok_or_else(|| Error::InvalidArgument("node tree holds a key that is not a node id".into()))
}

/// Loads nodes of one commit for rendering retrieved items.
struct CommitNodes {
    repo: Repo,
    root: Option<Hash>,
}

impl NodeLoader for CommitNodes {
    fn load(&self, id: &NodeId) -> Result<Node, SourceError> {
        self.repo
            .node_in_root(self.root, id)
            .map_err(|e| SourceError::Storage(e.to_string()))?
            .ok_or_else(|| SourceError::NodeNotFound(id.clone()))
    }
}

impl RetrievalSource for Repo {
    fn resolve(&self, at: Option<&str>) -> Result<ResolvedCommit, SourceError> {
        let to_source = |rev: &str, e: Error| match e {
            Error::UnknownRevision { rev, detail } => SourceError::UnknownRevision { rev, detail },
            Error::AmbiguousRevision { prefix, count } => SourceError::UnknownRevision {
                rev: prefix,
                detail: format!("ambiguous: matches {count} commits"),
            },
            Error::UnknownBranch(b) => SourceError::UnknownRevision {
                rev: rev.to_string(),
                detail: format!("unknown branch `{b}`"),
            },
            other => SourceError::Storage(other.to_string()),
        };
        let id = match at {
            Some(rev) => Repo::resolve(self, rev).map_err(|e| to_source(rev, e))?,
            None => self
                .head()
                .map_err(|e| to_source("HEAD", e))?
                .ok_or_else(|| SourceError::UnknownRevision {
                    rev: "HEAD".into(),
                    detail: "the current branch has no commits yet".into(),
                })?,
        };
        let c = self.commit(&id).map_err(|e| to_source(&id.to_hex(), e))?;
        let indexes = self.indexes_at(&id).map_err(|e| SourceError::Storage(e.to_string()))?;
        Ok(ResolvedCommit {
            commit: id,
            timestamp_ms: c.timestamp_ms,
            indexes,
            nodes: Arc::new(CommitNodes {
                repo: self.clone(),
                root: c.node_root,
            }),
        })
    }
}

impl Repo {
    /// Starts a retrieval over this repository (at the current head unless `.at(rev)`).
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?).with_label("Doc").with_text("how wings stall"))?;
    /// tx.put_node(Node::new(NodeId::new("b")?).with_label("Doc").with_text("rocket nozzles"))?;
    /// tx.commit("docs")?;
    /// let result = repo.retrieve().label("Doc").text("wing stall").limit(1).execute()?;
    /// assert_eq!(result.items[0].id.as_str(), "a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn retrieve(&self) -> cairn_retrieve::Retrieval<&Repo> {
        cairn_retrieve::Retrieval::new(self)
    }
}
