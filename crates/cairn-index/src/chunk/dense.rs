//! The dense part of a node chunk (one per dense model): the exact vectors, and what the
//! int8 scan reads — codes, scales and the bound terms of `dense/int8.rs`, all computed
//! from the vectors (only the vectors are stored).

use crate::chunk::node::Local;
use crate::dense::int8::{kernel_gamma, quantize_row, row_terms};
use crate::dense::kernel;

/// Vectors of one model in one chunk: row `r` is local ordinal `rows[r]` (increasing).
#[derive(Debug, Clone, Default)]
pub struct DenseChunk {
    pub(crate) dim: usize,
    pub(crate) rows: Vec<Local>,
    /// `rows.len() · dim` components.
    pub(crate) vectors: Vec<f32>,
    pub(crate) codes: Vec<i8>,
    pub(crate) scales: Vec<f32>,
    /// Bound terms per row (`dense/int8.rs`).
    pub(crate) bound_u: Vec<f32>,
    pub(crate) bound_v: Vec<f32>,
    /// True if row `r` is local ordinal `r` for every row (every node of the chunk has a
    /// vector up to the last row): rows are then found without a search.
    pub(crate) identity: bool,
}

/// Bitwise equality of the stored content (rows and vector bits; the rest is derived).
impl PartialEq for DenseChunk {
    fn eq(&self, other: &Self) -> bool {
        self.dim == other.dim
            && self.rows == other.rows
            && self.vectors.len() == other.vectors.len()
            && self
                .vectors
                .iter()
                .zip(&other.vectors)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl DenseChunk {
    /// Builds from rows (increasing local ordinals) and their vectors (`rows.len() · dim`
    /// finite components).
    pub(crate) fn from_rows(dim: usize, rows: Vec<Local>, vectors: Vec<f32>) -> DenseChunk {
        debug_assert_eq!(rows.len() * dim, vectors.len());
        let n = rows.len();
        let mut codes = vec![0i8; n * dim];
        let mut scales = Vec::with_capacity(n);
        let mut bound_u = Vec::with_capacity(n);
        let mut bound_v = Vec::with_capacity(n);
        let gamma = kernel_gamma(dim);
        if dim > 0 {
            for (v, c) in vectors.chunks_exact(dim).zip(codes.chunks_exact_mut(dim)) {
                let s = quantize_row(v, c);
                let (u, w) = row_terms(v, c, s, gamma);
                scales.push(s);
                bound_u.push(u);
                bound_v.push(w);
            }
        }
        let identity = rows.iter().enumerate().all(|(r, &l)| r as Local == l);
        DenseChunk {
            dim,
            rows,
            vectors,
            codes,
            scales,
            bound_u,
            bound_v,
            identity,
        }
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of rows (nodes with a vector of this model).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True if no node of the chunk has a vector of this model.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The local ordinals of the rows.
    pub fn rows(&self) -> &[Local] {
        &self.rows
    }

    /// Row `r`'s vector.
    pub fn vector(&self, r: usize) -> &[f32] {
        &self.vectors[r * self.dim..(r + 1) * self.dim]
    }

    /// Row `r`'s codes.
    pub(crate) fn codes(&self, r: usize) -> &[i8] {
        &self.codes[r * self.dim..(r + 1) * self.dim]
    }

    /// The row of local ordinal `local`, if it has a vector.
    pub fn row_of(&self, local: Local) -> Option<usize> {
        if self.identity {
            return ((local as usize) < self.rows.len()).then_some(local as usize);
        }
        self.rows.binary_search(&local).ok()
    }

    /// The exact kernel score of row `r` for `query`.
    #[inline]
    pub(crate) fn score(&self, query: &[f32], r: usize) -> f32 {
        kernel::dot(query, self.vector(r))
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.rows.len() * (4 + 4 + 4 + 4) + self.vectors.len() * 4 + self.codes.len() + 128
    }
}
