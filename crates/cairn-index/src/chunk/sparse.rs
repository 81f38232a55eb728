//! The sparse-vector part of a node chunk (one per sparse model).

use cairn_core::SparseVector;
use roaring::RoaringBitmap;

use crate::chunk::node::Local;
use crate::chunk::scatter::scatter_by_byte;

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
        let mut entries: Vec<(u32, Local, f32)> = Vec::with_capacity(total);
        let mut docs = RoaringBitmap::new();
        for (l, v) in vectors {
            docs.insert(l);
            entries.extend(v.indices.iter().zip(&v.values).map(|(&d, &w)| (d, l, w)));
        }
        let entries = sort_by_dimension(entries);
        let mut out = SparseChunk {
            docs,
            ..SparseChunk::default()
        };
        out.posts.reserve_exact(entries.len());
        out.starts.push(0);
        for run in entries.chunk_by(|a, b| a.0 == b.0) {
            out.dims.push(run[0].0);
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

/// `entries` sorted by dimension, stably (each dimension's entries keep their input order:
/// local order): least-significant-digit radix passes of 8 bits over the bytes the largest
/// dimension uses (two for dimensions below 65,536), each a count and a scatter — a chunk
/// of 64 nodes with ~45 entries each sorts in a third of a comparison sort's time.
fn sort_by_dimension(mut entries: Vec<(u32, Local, f32)>) -> Vec<(u32, Local, f32)> {
    let max = entries.iter().map(|e| e.0).max().unwrap_or(0);
    let mut other = vec![(0u32, 0 as Local, 0f32); entries.len()];
    let mut shift = 0;
    while shift < 32 && (shift == 0 || max >> shift != 0) {
        scatter_by_byte(&entries, &mut other, |e| (e.0 >> shift) as u8);
        std::mem::swap(&mut entries, &mut other);
        shift += 8;
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_radix_sort_equals_a_stable_sort_by_dimension() {
        let mut rng = cairn_testkit::Rng(0x9e37_79b9_7f4a_7c15);
        for (n, bits) in [(0, 8), (1, 8), (50, 4), (3000, 16), (3000, 24), (500, 32)] {
            let entries: Vec<(u32, Local, f32)> = (0..n)
                .map(|i| {
                    let d = (rng.next() >> 3) as u32;
                    let d = if bits == 32 { d } else { d & ((1u32 << bits) - 1) };
                    (d, i as Local, i as f32)
                })
                .collect();
            let mut expected = entries.clone();
            expected.sort_by_key(|e| e.0);
            assert_eq!(sort_by_dimension(entries), expected, "{n} entries, {bits} bits");
        }
    }
}
