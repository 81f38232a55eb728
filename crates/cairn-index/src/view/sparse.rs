//! Sparse-vector search across chunks.
//!
//! A node is a hit iff it has a posting in at least one of the query's dimensions (and is
//! in the filter); its score is then the full dot product, which may be zero or negative.
//! Each product `query weight × stored weight` is formed in `f64` (exact for two `f32`s)
//! and added to the node's `f64` sum in increasing query dimension; the sum is rounded to
//! `f32` once, so scores are reproducible bit for bit and never NaN.

use cairn_core::SparseVector;

use crate::chunk::Local;
use crate::error::IndexError;
use crate::hit::{top_k_vec, Hit};
use crate::view::push_chunk_hits;
use crate::view::{CommitIndexes, Filter};

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
        let admits = |c: usize| !filter.is_some_and(|f| f.part(c).is_none());
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
                if !l.is_empty() && admits(c) {
                    found.push((c as u32, i as u32, l));
                }
            }
        }
        found.sort_unstable_by_key(|&(c, i, _)| (c, i));
        let mut hits = Vec::new();
        let mut sums: Vec<f64> = Vec::new();
        let mut touched: Vec<Local> = Vec::new();
        for group in found.chunk_by(|a, b| a.0 == b.0) {
            let c = group[0].0 as usize;
            let fpart = filter.map(|f| f.part(c));
            sums.clear();
            sums.resize(self.chunks[c].len(), f64::NAN);
            for &(_, i, list) in group {
                let qw = query.values[i as usize];
                for &(l, w) in list {
                    if fpart.is_some_and(|f| !f.contains(l)) {
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
        Ok(top_k_vec(hits, k))
    }
}
