//! A dense layer `y = x·Wᵀ + b` whose every output is summed in one fixed order.
//!
//! Each output element is `fma(x_{K-1}, w_{K-1}, … fma(x₁, w₁, fma(x₀, w₀, 0)) …) + b`:
//! the chain of [`kernel`](super::kernel), one fused multiply-add per input in
//! increasing order. The work is split between threads by blocks of rows and of output
//! columns, never along the sum — so the bits of a row's output depend on that row
//! alone: not on the other rows in the batch, the thread count, or which kernel ran.

use rayon::prelude::*;

use super::kernel::{gemm_tiled, pack_a, pack_b, Kernel, Strided, TiledA, NR};

/// Most rows one task takes (a multiple of every kernel's tile height, 6 and 12): each
/// block of weights a task loads serves up to this many rows, and the task's packed
/// rows (≤ 192 × 1536 floats) stay in a 2 MB L2 cache.
const MAX_BLOCK_ROWS: usize = 192;

/// A linear layer with its weight packed once, at load, in column panels for the kernel.
#[derive(Debug, Clone)]
pub(crate) struct Linear {
    din: usize,
    dout: usize,
    /// `ceil(dout / NR)` panels, each `din × NR` (see [`pack_b`]).
    panels: Vec<f32>,
    bias: Vec<f32>,
}

impl Linear {
    /// From a PyTorch-layout weight `[dout, din]` (row-major) and a bias `[dout]`.
    pub fn new(weight: &[f32], bias: Vec<f32>, dout: usize, din: usize) -> Linear {
        assert_eq!(weight.len(), dout * din);
        assert_eq!(bias.len(), dout);
        Linear {
            din,
            dout,
            panels: pack_b(din, dout, |k, c| weight[c * din + k]),
            bias,
        }
    }

    /// `y[m, dout] = x[m, din] · Wᵀ + b`, row-major, into `y` (resized to `m·dout`);
    /// `ap` is scratch space for the packed `x` (grown as needed, reused across calls).
    pub fn forward_into(&self, kern: Kernel, x: &[f32], m: usize, ap: &mut Vec<f32>, y: &mut Vec<f32>) {
        let (din, dout) = (self.din, self.dout);
        assert_eq!(x.len(), m * din);
        y.resize(m * dout, 0.0);
        if m == 0 {
            return;
        }
        // Tasks: row blocks (equal, multiples of 12 = every kernel's tile height) ×
        // column groups (whole, even panel counts), about 8 per thread, each writing its
        // own part of `y`. The split changes who computes an element, never how.
        let threads = rayon::current_num_threads().max(1);
        let row_blocks = m.div_ceil(MAX_BLOCK_ROWS);
        let rows = m.div_ceil(row_blocks).div_ceil(12) * 12;
        let row_blocks = m.div_ceil(rows);
        let np = dout.div_ceil(NR);
        let groups = (8 * threads).div_ceil(row_blocks).clamp(1, np.div_ceil(2));
        let group_panels = np.div_ceil(groups).div_ceil(2) * 2;
        let groups = np.div_ceil(group_panels);

        // `x` packed once, in row tiles (a row block is a whole number of tiles).
        let mr = kern.mr();
        let tile = din * mr;
        let need = m.div_ceil(mr) * tile;
        if ap.len() < need {
            ap.resize(need, 0.0);
        }
        let ap = &mut ap[..need];
        ap.par_chunks_mut(rows / mr * tile)
            .enumerate()
            .for_each(|(r, out)| pack_a(mr, Strided::rows(x, din), m, din, r * rows / mr, out));
        let ap = &*ap;
        let block = |r: usize| {
            let mb = rows.min(m - r * rows);
            (TiledA::packed(&ap[r * rows / mr * tile..], din, mr), mb)
        };

        // Each task gets its rows' segments of `y` for its columns (disjoint borrows).
        let width = group_panels * NR;
        let mut tasks: Vec<(usize, usize, Vec<&mut [f32]>)> = (0..row_blocks)
            .flat_map(|r| (0..groups).map(move |g| (r, g, Vec::with_capacity(rows))))
            .collect();
        for (i, row) in y.chunks_mut(dout).enumerate() {
            for (g, seg) in row.chunks_mut(width).enumerate() {
                tasks[(i / rows) * groups + g].2.push(seg);
            }
        }
        tasks.into_par_iter().for_each(|(r, g, mut out)| {
            let (apb, mb) = block(r);
            let c0 = g * width;
            let panels = &self.panels[c0 * din..];
            let bias = &self.bias[c0..];
            gemm_tiled(kern, apb, mb, din, panels, out[0].len(), Some(bias), &mut out);
        });
    }
}
