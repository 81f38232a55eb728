//! Sparse-vector inverted index (one per sparse model).

use std::collections::BTreeMap;

use cairn_core::SparseVector;
use roaring::RoaringBitmap;

use crate::error::IndexError;
use crate::hit::{Accumulator, Hit, Ordinal};
use crate::node_table::{merge_postings, OrdinalRemap};

/// Posting lists: dimension → `(ordinal, weight)` in ordinal order. Score = dot product,
/// accumulated in query-dimension order (fixed), exact top-k.
///
/// Arithmetic: each product `query weight × stored weight` is formed in `f64` (exact for
/// two `f32`s) and added to the node's `f64` sum in increasing query dimension; the sum is
/// rounded to `f32` once, so scores are reproducible bit for bit and never NaN.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SparseIndex {
    pub(crate) postings: BTreeMap<u32, Vec<(Ordinal, f32)>>,
    /// Ordinals of the nodes that have a vector of this model (possibly an empty one).
    pub(crate) docs: RoaringBitmap,
}

impl SparseIndex {
    /// Builds from `(ordinal, vector)` pairs in increasing ordinal order (vectors
    /// validated upstream: strictly increasing indices, finite weights).
    pub fn build<'a>(vectors: impl IntoIterator<Item = (Ordinal, &'a SparseVector)>) -> SparseIndex {
        let mut idx = SparseIndex::default();
        for (o, v) in vectors {
            idx.add(o, v);
        }
        idx
    }

    fn add(&mut self, o: Ordinal, v: &SparseVector) {
        self.docs.insert(o);
        for (&dim, &w) in v.indices.iter().zip(&v.values) {
            self.postings.entry(dim).or_default().push((o, w));
        }
    }

    /// Derives a child's index: the parent's postings moved by `remap`, plus `upserted`
    /// (child ordinals, increasing; the added or changed nodes that have a vector of this
    /// model). Equal to [`SparseIndex::build`] over the child's vectors.
    pub fn derive<'a>(
        parent: &SparseIndex,
        remap: &OrdinalRemap,
        upserted: impl IntoIterator<Item = (Ordinal, &'a SparseVector)>,
    ) -> Result<SparseIndex, IndexError> {
        let added = SparseIndex::build(upserted);
        let mut docs = remap.remap_bitmap(&parent.docs)?;
        docs |= &added.docs;
        let mut added_postings = added.postings;
        let mut postings = BTreeMap::new();
        for (dim, list) in &parent.postings {
            let kept = remap.remap_postings(list);
            let merged = merge_postings(kept, added_postings.remove(dim).unwrap_or_default());
            if !merged.is_empty() {
                postings.insert(*dim, merged);
            }
        }
        postings.append(&mut added_postings);
        Ok(SparseIndex { postings, docs })
    }

    /// Number of nodes with a vector of this model.
    pub fn len(&self) -> usize {
        self.docs.len() as usize
    }

    /// True if no node has a vector of this model.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Ordinals of the nodes that have a vector of this model.
    pub fn docs(&self) -> &RoaringBitmap {
        &self.docs
    }

    /// The `k` best nodes by dot product with `query` among `filter`, exact. Nodes with a
    /// zero dot product (no shared dimension) are not hits.
    ///
    /// Precisely: a node is a hit iff it has a posting in at least one of the query's
    /// dimensions (and is in `filter`); its score is then the full dot product, which may
    /// be zero or negative. The query must follow the sparse-vector rules (equal lengths,
    /// strictly increasing indices, finite weights, at most `MAX_SPARSE_NNZ` entries),
    /// else [`IndexError::BadSparseQuery`]; `model` only names the model in that error.
    pub fn search(
        &self,
        model: &str,
        query: &SparseVector,
        k: usize,
        filter: Option<&RoaringBitmap>,
    ) -> Result<Vec<Hit>, IndexError> {
        query.check().map_err(|problem| IndexError::BadSparseQuery {
            model: model.to_string(),
            detail: problem.to_string(),
        })?;
        if k == 0 {
            return Ok(Vec::new());
        }
        let n = self.docs.max().map_or(0, |m| m as usize + 1);
        let lists: Vec<(&[(Ordinal, f32)], f64)> = query
            .indices
            .iter()
            .zip(&query.values)
            .filter_map(|(dim, &qw)| Some((self.postings.get(dim)?.as_slice(), f64::from(qw))))
            .collect();
        let mut acc = Accumulator::new(n, lists.iter().map(|(l, _)| l.len()).sum());
        for (list, qw) in lists {
            for &(o, w) in list {
                if filter.is_none_or(|f| f.contains(o)) {
                    acc.add(o, qw * f64::from(w));
                }
            }
        }
        Ok(acc.top_k(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sv(i: &[u32], v: &[f32]) -> SparseVector {
        SparseVector::new(i.to_vec(), v.to_vec())
    }

    fn idx() -> SparseIndex {
        let vs = [
            sv(&[1, 5], &[1.0, 2.0]),
            sv(&[], &[]),
            sv(&[5, 9], &[0.5, 4.0]),
            sv(&[2], &[3.0]),
        ];
        SparseIndex::build(vs.iter().enumerate().map(|(o, v)| (o as u32, v)))
    }

    #[test]
    fn dot_products_ranked() {
        let idx = idx();
        assert_eq!(idx.len(), 4);
        let hits = idx.search("m", &sv(&[5, 9], &[1.0, 1.0]), 10, None).unwrap();
        assert_eq!(
            hits,
            vec![Hit { ordinal: 2, score: 4.5 }, Hit { ordinal: 0, score: 2.0 }]
        );
        let hits = idx.search("m", &sv(&[2, 5], &[1.0, -1.0]), 10, None).unwrap();
        assert_eq!(
            hits,
            vec![
                Hit { ordinal: 3, score: 3.0 },
                Hit {
                    ordinal: 2,
                    score: -0.5
                },
                Hit {
                    ordinal: 0,
                    score: -2.0
                }
            ]
        );
        assert!(idx.search("m", &sv(&[7], &[1.0]), 10, None).unwrap().is_empty());
        let mut f = RoaringBitmap::new();
        f.insert(0);
        let hits = idx.search("m", &sv(&[5, 9], &[1.0, 1.0]), 1, Some(&f)).unwrap();
        assert_eq!(hits, vec![Hit { ordinal: 0, score: 2.0 }]);
    }

    #[test]
    fn bad_queries_are_typed_errors() {
        let idx = idx();
        for q in [
            sv(&[1, 2], &[1.0]),
            sv(&[2, 1], &[1.0, 1.0]),
            sv(&[1, 1], &[1.0, 1.0]),
            sv(&[1], &[f32::NAN]),
            sv(&[1], &[f32::INFINITY]),
        ] {
            let e = idx.search("splade", &q, 10, None).unwrap_err();
            assert!(
                matches!(&e, IndexError::BadSparseQuery { model, .. } if model == "splade"),
                "{e}"
            );
        }
    }
}
