//! The sparse-vector part of a node chunk (one per sparse model).

use cairn_core::SparseVector;
use roaring::RoaringBitmap;

use crate::chunk::node::Local;

/// Postings of one sparse model in one chunk: dimension → `(local, weight)` in local order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SparseChunk {
    /// Dimensions, increasing.
    pub(crate) dims: Vec<u32>,
    /// Dimension `i`'s postings are `posts[starts[i]..starts[i + 1]]`.
    pub(crate) starts: Vec<u32>,
    pub(crate) posts: Vec<(Local, f32)>,
    /// Local ordinals of the nodes that have a vector of this model (possibly empty).
    pub(crate) docs: RoaringBitmap,
}

impl SparseChunk {
    /// Builds from `(local, vector)` in increasing local order (vectors validated upstream).
    pub(crate) fn build<'a>(vectors: impl IntoIterator<Item = (Local, &'a SparseVector)>) -> SparseChunk {
        let vectors: Vec<(Local, &SparseVector)> = vectors.into_iter().collect();
        let total: usize = vectors.iter().map(|(_, v)| v.indices.len()).sum();
        // Each entry keyed by its dimension above its place in input order, so that an
        // unstable sort (in place, no buffer) leaves each dimension's postings in input
        // (local) order, as a stable sort by dimension does.
        let mut pairs: Vec<(u64, Local, f32)> = Vec::with_capacity(total);
        let mut docs = RoaringBitmap::new();
        for (l, v) in vectors {
            docs.insert(l);
            for (&d, &w) in v.indices.iter().zip(&v.values) {
                pairs.push((u64::from(d) << 32 | pairs.len() as u64, l, w));
            }
        }
        pairs.sort_unstable_by_key(|p| p.0);
        let mut out = SparseChunk {
            docs,
            ..SparseChunk::default()
        };
        out.posts.reserve_exact(pairs.len());
        out.starts.push(0);
        for run in pairs.chunk_by(|a, b| a.0 >> 32 == b.0 >> 32) {
            out.dims.push((run[0].0 >> 32) as u32);
            out.posts.extend(run.iter().map(|&(_, l, w)| (l, w)));
            out.starts.push(out.posts.len() as u32);
        }
        out
    }

    /// The postings of dimension `dim`.
    pub fn postings(&self, dim: u32) -> &[(Local, f32)] {
        match self.dims.binary_search(&dim) {
            Ok(i) => &self.posts[self.starts[i] as usize..self.starts[i + 1] as usize],
            Err(_) => &[],
        }
    }

    /// The postings of the dimension at index `i` of [`SparseChunk::dims`].
    pub(crate) fn postings_at(&self, i: usize) -> &[(Local, f32)] {
        &self.posts[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// Local ordinals having a vector of this model.
    pub fn docs(&self) -> &RoaringBitmap {
        &self.docs
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.dims.len() * 8 + self.posts.len() * 8 + self.docs.serialized_size() + 128
    }
}
