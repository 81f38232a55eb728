//! Sparse-vector search across chunks.
//!
//! A node is a hit iff it has a posting in at least one of the query's dimensions (and is
//! in the filter); its score is then the full dot product, which may be zero or negative.
//! Each product `query weight × stored weight` is formed in `f64` (exact for two `f32`s)
//! and added to the node's `f64` sum in increasing query dimension; the sum is rounded to
//! `f32` once, so scores are reproducible bit for bit and never NaN.
//!
//! A query with many postings is scored in contiguous ranges of chunks at once, one per
//! thread and at least [`PARALLEL_POSTINGS`] postings each; each node's sum is formed
//! inside one range, and the ranges' best `k` are merged by `(score desc, ordinal asc)`,
//! so the answer does not depend on the number of ranges.

use cairn_core::SparseVector;
use rayon::prelude::*;

use crate::chunk::Local;
use crate::error::IndexError;
use crate::hit::{top_k_vec, Hit};
use crate::view::filter::admits;
use crate::view::push_chunk_hits;
use crate::view::{CommitIndexes, Filter};

/// Above this many postings per parallel piece, a query's chunks are scored in ranges at
/// once.
const PARALLEL_POSTINGS: usize = 20_000;

impl CommitIndexes {
    /// The `k` best nodes by dot product with `query` among `filter` (module docs).
    ///
    /// Errors: [`IndexError::UnknownModel`] if no node has a vector of `model`,
    /// [`IndexError::BadSparseQuery`] for a query breaking the sparse-vector rules,
    /// [`IndexError::NotLoaded`] if the model's parts are not in this view.
    pub fn sparse_search(
        &self,
        model: &str,
        query: &SparseVector,
        k: usize,
        filter: Option<&Filter>,
    ) -> Result<Vec<Hit>, IndexError> {
        query.check().map_err(|problem| IndexError::BadSparseQuery {
            model: model.to_string(),
            detail: problem.to_string(),
        })?;
        if !self.has_sparse_model(model) {
            return Err(IndexError::UnknownModel {
                kind: "sparse",
                model: model.to_string(),
            });
        }
        let parts = self
            .sparse
            .get(model)
            .ok_or_else(|| IndexError::NotLoaded(format!("sparse:{model}")))?;
        if k == 0 {
            return Ok(Vec::new());
        }
        // The postings of each query dimension, per chunk holding it, through the
        // dimension directory (`directory.rs`): the cost follows the postings.
        let Some(dir) = self.sparse_dirs.get(model) else {
            return Err(IndexError::NotLoaded(format!("sparse:{model}")));
        };
        let bits = filter.map(Filter::bits);
        let admits_any = |c: usize| !filter.is_some_and(|f| f.part(c).is_none());
        // (chunk, query dimension, postings).
        type Found<'p> = (u32, u32, &'p [(Local, f32)]);
        let mut found: Vec<Found> = Vec::new();
        for (i, dim) in query.indices.iter().enumerate() {
            let entries = dir.key(dim);
            let base = entries.iter().filter_map(|(c, slot, _)| {
                let p = parts[c].as_ref()?;
                Some((c, p.postings_at(slot as usize)))
            });
            let overlay = dir
                .overlay()
                .iter()
                .filter_map(|&c| Some((c as usize, parts[c as usize].as_ref()?.postings(*dim))));
            for (c, l) in base.chain(overlay) {
                if !l.is_empty() && admits_any(c) {
                    found.push((c as u32, i as u32, l));
                }
            }
        }
        found.sort_unstable_by_key(|&(c, i, _)| (c, i));
        let groups: Vec<&[Found]> = found.chunk_by(|a, b| a.0 == b.0).collect();
        // The best `k` of a range of chunk groups; a node's sum is formed in its chunk's
        // group alone, in increasing query dimension.
        let score = |groups: &[&[Found]]| -> Vec<Hit> {
            let mut hits = Vec::new();
            let mut sums: Vec<f64> = Vec::new();
            let mut touched: Vec<Local> = Vec::new();
            for group in groups {
                let c = group[0].0 as usize;
                let n = self.chunks[c].len();
                let base = self.offset(c);
                sums.clear();
                sums.resize(n, f64::NAN);
                for &(_, i, list) in *group {
                    let qw = query.values[i as usize];
                    for &(l, w) in list {
                        // The filter's bitset (a roaring lookup per posting costs more
                        // than the posting).
                        if bits.is_some_and(|bits| !admits(bits, base + l)) {
                            continue;
                        }
                        let slot = &mut sums[l as usize];
                        if slot.is_nan() {
                            *slot = 0.0;
                            touched.push(l);
                        }
                        *slot += f64::from(qw) * f64::from(w);
                    }
                }
                touched.sort_unstable();
                push_chunk_hits(&mut hits, self.offset(c), &mut touched, &sums, k);
            }
            top_k_vec(hits, k)
        };
        let postings: usize = found.iter().map(|f| f.2.len()).sum();
        let pieces = rayon::current_num_threads()
            .min(postings / PARALLEL_POSTINGS)
            .min(groups.len() / 64);
        if pieces < 2 {
            return Ok(score(&groups));
        }
        let step = groups.len().div_ceil(pieces);
        let best: Vec<Vec<Hit>> = groups.par_chunks(step).map(score).collect();
        Ok(top_k_vec(best.into_iter().flatten().collect(), k))
    }
}
