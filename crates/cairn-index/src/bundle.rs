//! All indexes of one commit, built from scratch or derived from a parent's plus a diff.

use std::collections::BTreeMap;
use std::sync::Arc;

use std::collections::BTreeSet;

use cairn_core::{Edge, EdgeKey, Hash, Node, NodeId, SparseVector};
use roaring::RoaringBitmap;

use crate::adjacency::Adjacency;
use crate::analyzer::Analyzer;
use crate::bm25::{Bm25Index, Bm25Params};
use crate::dense::{DenseIndex, DenseSearch};
use crate::error::IndexError;
use crate::hit::{Hit, Ordinal};
use crate::hnsw::HnswParams;
use crate::labels::LabelIndex;
use crate::node_table::NodeTable;
use crate::props::PropertyIndex;
use crate::sparse::SparseIndex;
use crate::validity::ValidityColumn;

/// Version of the index algorithms and layout, hashed into every
/// [`IndexParams::fingerprint`]: bump it when the same content and parameters would give
/// different indexes, so stale persisted indexes are never served.
pub const INDEX_FORMAT_VERSION: u32 = 1;

/// Parameters that shape the indexes (part of every index key).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexParams {
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// HNSW parameters.
    pub hnsw: HnswParams,
}

impl Default for IndexParams {
    /// [`Bm25Params::default`] and [`HnswParams::default`].
    fn default() -> Self {
        IndexParams {
            bm25: Bm25Params::default(),
            hnsw: HnswParams::default(),
        }
    }
}

impl IndexParams {
    /// blake3 over a fixed byte encoding of every parameter, for index keys.
    ///
    /// The bytes, in order: the ASCII string `cairn-index-params`; [`INDEX_FORMAT_VERSION`]
    /// as u32 LE; BM25 `k1` and `b` as the little-endian bits of their `f32`s; the
    /// analyzer's `stem` as one byte (0 or 1); HNSW `seed`, `ef_construction` and
    /// `ef_search` as u64 LE; HNSW `heuristic` as one byte.
    pub fn fingerprint(&self) -> Hash {
        // Destructured so that a new parameter fails to compile here until it is hashed.
        let Bm25Params {
            k1,
            b,
            analyzer: Analyzer { stem },
        } = self.bm25;
        let HnswParams {
            seed,
            ef_construction,
            ef_search,
            heuristic,
        } = self.hnsw;
        let mut bytes = Vec::with_capacity(64);
        bytes.extend_from_slice(b"cairn-index-params");
        bytes.extend_from_slice(&INDEX_FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&k1.to_bits().to_le_bytes());
        bytes.extend_from_slice(&b.to_bits().to_le_bytes());
        bytes.push(u8::from(stem));
        bytes.extend_from_slice(&seed.to_le_bytes());
        bytes.extend_from_slice(&(ef_construction as u64).to_le_bytes());
        bytes.extend_from_slice(&(ef_search as u64).to_le_bytes());
        bytes.push(u8::from(heuristic));
        Hash::of(&bytes)
    }
}

/// Node changes between a parent commit and a child: ids removed, and nodes added or
/// replaced (with their object hashes). Each id appears at most once in total.
#[derive(Debug, Clone, Default)]
pub struct NodeDelta {
    /// Ids present in the parent and absent in the child.
    pub removed: Vec<NodeId>,
    /// Nodes added or changed in the child.
    pub upserted: Vec<(Hash, Node)>,
}

/// Edge changes between a parent commit and a child.
#[derive(Debug, Clone, Default)]
pub struct EdgeDelta {
    /// Edges present in the parent and absent in the child.
    pub removed: Vec<EdgeKey>,
    /// Edges added or changed in the child.
    pub upserted: Vec<Edge>,
}

/// Every index of one commit. `key` is the hash of what it was derived from (node root,
/// edge root, parameters); a cache lookup compares it, so an index can never be served
/// for another commit's content.
///
/// Equality (`==`) compares every index's content (dense indexes by their own
/// [`PartialEq`]: vectors bitwise and the base key).
#[derive(Debug, Clone, PartialEq)]
pub struct CommitIndexes {
    /// What the indexes were derived from.
    pub key: Hash,
    /// Ordinal ↔ id.
    pub nodes: NodeTable,
    /// Labels.
    pub labels: LabelIndex,
    /// Validity intervals.
    pub validity: ValidityColumn,
    /// Property columns.
    pub props: PropertyIndex,
    /// Dense index per model.
    pub dense: BTreeMap<String, Arc<DenseIndex>>,
    /// Sparse index per model.
    pub sparse: BTreeMap<String, Arc<SparseIndex>>,
    /// BM25 over node text.
    pub bm25: Arc<Bm25Index>,
    /// Edges by ordinal.
    pub adjacency: Arc<Adjacency>,
}

impl CommitIndexes {
    /// Builds every index of a commit from its full content.
    ///
    /// `nodes` are the commit's nodes with their object hashes, sorted by id, strictly
    /// increasing (if they are not, they are sorted here and a repeated id keeps its last
    /// entry). Every node is indexed, whatever its validity (gates apply at query time).
    /// Models: one dense index per embedding model and one sparse index per sparse model
    /// that at least one node has; a dense model's dimension is that of its first vector
    /// in ordinal order (one dimension per model is validated upstream; a vector of
    /// another length is left out). Edges whose endpoints are not nodes are left out.
    pub fn build(key: Hash, params: &IndexParams, nodes: &[(Hash, Node)], edges: &[Edge]) -> CommitIndexes {
        let sorted = nodes.windows(2).all(|w| w[0].1.id < w[1].1.id);
        let entries: Vec<&(Hash, Node)> = if sorted {
            nodes.iter().collect()
        } else {
            let mut v: Vec<&(Hash, Node)> = nodes.iter().rev().collect();
            v.sort_by(|a, b| a.1.id.cmp(&b.1.id));
            v.dedup_by(|later, first| later.1.id == first.1.id);
            v
        };
        let refs: Vec<&Node> = entries.iter().map(|e| &e.1).collect();
        let table = NodeTable::from_sorted(
            refs.iter().map(|n| n.id.clone()).collect(),
            entries.iter().map(|e| e.0).collect(),
        );
        let n = refs.len() as u32;
        let indexed = || refs.iter().enumerate().map(|(o, node)| (o as Ordinal, *node));

        let mut sparse = BTreeMap::new();
        for model in refs.iter().flat_map(|n| n.sparse.keys()).collect::<BTreeSet<_>>() {
            let idx = SparseIndex::build(indexed().filter_map(|(o, node)| Some((o, node.sparse.get(model)?))));
            sparse.insert(model.clone(), Arc::new(idx));
        }
        let mut dense = BTreeMap::new();
        for model in refs.iter().flat_map(|n| n.embeddings.keys()).collect::<BTreeSet<_>>() {
            let Some(dim) = refs.iter().find_map(|n| n.embeddings.get(model)).map(Vec::len) else {
                continue;
            };
            let vectors = indexed().filter_map(|(o, node)| {
                let v = node.embeddings.get(model)?;
                (v.len() == dim).then_some((o, v.as_slice()))
            });
            dense.insert(model.clone(), Arc::new(DenseIndex::build(model, dim, n, vectors)));
        }
        CommitIndexes {
            key,
            labels: LabelIndex::build(&refs),
            validity: ValidityColumn::build(&refs),
            props: PropertyIndex::build(&refs),
            dense,
            sparse,
            bm25: Arc::new(Bm25Index::build(params.bm25, refs.iter().map(|n| n.text.as_str()))),
            adjacency: Arc::new(Adjacency::build(&table, edges)),
            nodes: table,
        }
    }

    /// Derives a child commit's indexes from its parent's and the diff between them,
    /// without reading the store: the child's [`NodeTable`] and the ordinal remap come
    /// from one merge of the parent's table with the diff, then every index moves the
    /// parent's unchanged entries and adds the upserted nodes'. The result equals
    /// [`CommitIndexes::build`] over the child's full content (tested), except that a
    /// dense index keeps its parent's HNSW base (see [`DenseIndex::derive`]).
    ///
    /// Errors: [`IndexError::Inconsistent`] if the diff does not fit the parent (a removed
    /// node or edge the parent lacks, an id or edge key twice, an edge left with a missing
    /// endpoint) or `params` has other BM25 parameters than the parent's index; the caller
    /// then builds from scratch.
    pub fn derive(
        parent: &CommitIndexes,
        key: Hash,
        params: &IndexParams,
        nodes: &NodeDelta,
        edges: &EdgeDelta,
    ) -> Result<CommitIndexes, IndexError> {
        if parent.bm25.params != params.bm25 {
            return Err(IndexError::Inconsistent(
                "BM25 parameters differ from the parent index's".to_string(),
            ));
        }
        let ups: Vec<(&NodeId, Hash)> = nodes.upserted.iter().map(|(h, n)| (&n.id, *h)).collect();
        let d = parent.nodes.derive(&nodes.removed, &ups)?;
        let remap = &d.remap;
        let upserts: Vec<(Ordinal, &Node)> = d.upserted.iter().map(|&(o, i)| (o, &nodes.upserted[i].1)).collect();

        let mut sparse = BTreeMap::new();
        let sparse_models: BTreeSet<&String> = parent
            .sparse
            .keys()
            .chain(upserts.iter().flat_map(|(_, n)| n.sparse.keys()))
            .collect();
        for model in sparse_models {
            let added = upserts.iter().filter_map(|(o, n)| Some((*o, n.sparse.get(model)?)));
            let idx = match parent.sparse.get(model) {
                Some(p) => SparseIndex::derive(p, remap, added)?,
                None => SparseIndex::build(added),
            };
            if !idx.is_empty() {
                sparse.insert(model.clone(), Arc::new(idx));
            }
        }
        let mut dense = BTreeMap::new();
        let dense_models: BTreeSet<&String> = parent
            .dense
            .keys()
            .chain(upserts.iter().flat_map(|(_, n)| n.embeddings.keys()))
            .collect();
        for model in dense_models {
            let parent_idx = parent.dense.get(model);
            let dim = match parent_idx {
                Some(p) => p.dim(),
                None => match upserts.iter().find_map(|(_, n)| n.embeddings.get(model)) {
                    Some(v) => v.len(),
                    None => continue,
                },
            };
            let added = upserts.iter().filter_map(|(o, n)| {
                let v = n.embeddings.get(model)?;
                (v.len() == dim).then_some((*o, v.as_slice()))
            });
            let idx = match parent_idx {
                Some(p) => DenseIndex::derive(p, remap, added),
                None => DenseIndex::build(model, dim, remap.new_len, added),
            };
            if !idx.is_empty() {
                dense.insert(model.clone(), Arc::new(idx));
            }
        }
        let same_ordinals =
            d.table.len() == parent.nodes.len() && d.id_remap.iter().enumerate().all(|(i, m)| *m == Some(i as Ordinal));
        let adjacency = if edges.removed.is_empty() && edges.upserted.is_empty() && same_ordinals {
            Arc::clone(&parent.adjacency)
        } else {
            Arc::new(Adjacency::derive(
                &parent.adjacency,
                &parent.nodes,
                &d.table,
                &d.id_remap,
                &edges.removed,
                &edges.upserted,
            )?)
        };
        Ok(CommitIndexes {
            key,
            labels: LabelIndex::derive(&parent.labels, remap, &upserts)?,
            validity: ValidityColumn::derive(&parent.validity, remap, &upserts)?,
            props: PropertyIndex::derive(&parent.props, remap, &upserts),
            dense,
            sparse,
            bm25: Arc::new(Bm25Index::derive(
                &parent.bm25,
                remap,
                upserts.iter().map(|(o, n)| (*o, n.text.as_str())),
            )),
            adjacency,
            nodes: d.table,
        })
    }

    /// Number of nodes (ordinals are `0..node_count()`).
    pub fn node_count(&self) -> u32 {
        self.nodes.len() as u32
    }

    /// Sparse search in `model`'s index ([`SparseIndex::search`]);
    /// [`IndexError::UnknownModel`] if no node of the commit has a vector of that model.
    pub fn sparse_search(
        &self,
        model: &str,
        query: &SparseVector,
        k: usize,
        filter: Option<&RoaringBitmap>,
    ) -> Result<Vec<Hit>, IndexError> {
        let idx = self.sparse.get(model).ok_or_else(|| IndexError::UnknownModel {
            kind: "sparse",
            model: model.to_string(),
        })?;
        idx.search(model, query, k, filter)
    }

    /// Dense search in `model`'s index ([`DenseIndex::search`]);
    /// [`IndexError::UnknownModel`] if no node of the commit has a vector of that model.
    pub fn dense_search(
        &self,
        model: &str,
        query: &[f32],
        k: usize,
        filter: Option<&RoaringBitmap>,
    ) -> Result<DenseSearch, IndexError> {
        let idx = self.dense.get(model).ok_or_else(|| IndexError::UnknownModel {
            kind: "dense",
            model: model.to_string(),
        })?;
        idx.search(query, k, filter)
    }
}
