//! Chunks: the unit of derived data. A node chunk covers one span of the node tree
//! ([`crate::chunking`]) and has *parts* — the core columns ([`NodeChunk`]), BM25 postings
//! ([`TextChunk`]), and one [`SparseChunk`] / [`DenseChunk`] per model — each cached and
//! stored under its own key, so a query loads only the parts its lanes read. An edge chunk
//! ([`EdgeChunk`]) covers one span of the edge tree or of the reverse edge tree.
//!
//! Every part is a pure function of its span's content and the index parameters.

pub mod dense;
pub mod edges;
mod ids;
mod models;
pub mod node;
mod offsets;
pub(crate) mod row_fields;
mod scatter;
pub mod sparse;
pub mod text;
mod token_table;

use std::collections::{BTreeMap, BTreeSet};

use cairn_core::{Hash, Node};

use dense::BuiltRow;
pub use dense::{DenseChunk, DenseHead};
pub use edges::{EdgeChunk, EdgeDirection, EdgeRec};
pub use ids::Ids;
pub use models::Models;
pub use node::{Local, NodeChunk};
pub use sparse::SparseChunk;
pub use text::{Posting, TextChunk};

use crate::params::IndexParams;

/// Every part of one node chunk, as a build produces them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChunkParts {
    /// The core columns.
    pub core: NodeChunk,
    /// BM25 postings.
    pub text: TextChunk,
    /// Per sparse model.
    pub sparse: BTreeMap<String, SparseChunk>,
    /// Per dense model.
    pub dense: BTreeMap<String, DenseChunk>,
}

impl ChunkParts {
    /// Builds every part of a chunk from its nodes (sorted by id, strictly increasing,
    /// with their object hashes).
    ///
    /// A dense model's dimension in the chunk is that of its first vector in id order; a
    /// vector of another length is left out (one dimension per model is validated when
    /// nodes are written, so this never happens in a repository).
    pub fn build(params: &IndexParams, nodes: &[(Hash, &Node)]) -> ChunkParts {
        debug_assert!(nodes.windows(2).all(|w| w[0].1.id < w[1].1.id));
        let mut core = NodeChunk::build(nodes);
        let text = TextChunk::build(params.bm25.analyzer, nodes.iter().map(|(_, n)| n.text.as_str()));
        let indexed = || nodes.iter().enumerate().map(|(l, (_, n))| (l as Local, *n));
        let mut sparse = BTreeMap::new();
        for model in nodes.iter().flat_map(|(_, n)| n.sparse.keys()).collect::<BTreeSet<_>>() {
            let part = SparseChunk::build(indexed().filter_map(|(l, n)| Some((l, n.sparse.get(model)?))));
            core.sparse_models.insert(model.clone(), part.docs.len() as u32);
            sparse.insert(model.clone(), part);
        }
        let mut dense = BTreeMap::new();
        for model in nodes
            .iter()
            .flat_map(|(_, n)| n.embeddings.keys())
            .collect::<BTreeSet<_>>()
        {
            let Some(dim) = nodes.iter().find_map(|(_, n)| n.embeddings.get(model)).map(Vec::len) else {
                continue;
            };
            let built: Vec<BuiltRow<'_>> = nodes
                .iter()
                .enumerate()
                .filter_map(|(l, (h, n))| {
                    let vector = n.embeddings.get(model).filter(|v| v.len() == dim)?;
                    // An object is at most `MAX_OBJECT_BYTES` (16 MiB): the offset fits.
                    let offset = cairn_core::codec::node_vector_offset(n, model)? as u32;
                    Some(BuiltRow {
                        local: l as Local,
                        node: *h,
                        offset,
                        vector,
                    })
                })
                .collect();
            core.dense_models
                .insert(model.clone(), (dim as u32, built.len() as u32));
            dense.insert(model.clone(), DenseChunk::from_rows(dim, built.into_iter()));
        }
        ChunkParts {
            core,
            text,
            sparse,
            dense,
        }
    }
}
