//! A dense layer `y = x·Wᵀ + b` whose every output is summed in one fixed order.
//!
//! Each output element is `fma(x_{K-1}, w_{K-1}, … fma(x₁, w₁, fma(x₀, w₀, 0)) …) + b`:
//! the chain of [`kernel`](super::kernel), one fused multiply-add per input in
//! increasing order. The work is split between threads by blocks of rows and of output
//! columns, never along the sum — so the bits of a row's output depend on that row
//! alone: not on the other rows in the batch, the thread count, or which kernel ran.

use rayon::prelude::*;

use super::kernel::{gemm, pack_b, Kernel, NR};

/// Most rows one task takes (a multiple of every kernel's tile height, 6 and 12).
const MAX_BLOCK_ROWS: usize = 96;

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

    /// `y[m, dout] = x[m, din] · Wᵀ + b`, row-major.
    pub fn forward(&self, kern: Kernel, x: &[f32], m: usize) -> Vec<f32> {
        let (din, dout) = (self.din, self.dout);
        assert_eq!(x.len(), m * din);
        let mut y = vec![0.0f32; m * dout];
        if m == 0 {
            return y;
        }
        // Tasks: row blocks (equal, multiples of 12) × column groups (whole, even panel
        // counts), about 8 per thread. The split changes who computes an element,
        // never how it is computed.
        let threads = rayon::current_num_threads().max(1);
        let row_blocks = m.div_ceil(MAX_BLOCK_ROWS);
        let rows = m.div_ceil(row_blocks).div_ceil(12) * 12;
        let row_blocks = m.div_ceil(rows);
        let np = dout.div_ceil(NR);
        let groups = (8 * threads).div_ceil(row_blocks).clamp(1, np.div_ceil(2));
        let group_panels = np.div_ceil(groups).div_ceil(2) * 2;
        let groups = np.div_ceil(group_panels);
        if groups == 1 {
            y.par_chunks_mut(rows * dout)
                .zip(x.par_chunks(rows * din))
                .for_each(|(yb, xb)| {
                    let mb = xb.len() / din;
                    gemm(kern, xb, din, mb, din, &self.panels, dout, Some(&self.bias), yb, dout);
                });
            return y;
        }
        // Each task writes its own `rows × width` block; the blocks are then copied into
        // place, row block by row block in parallel.
        let tasks: Vec<(usize, usize)> = (0..row_blocks).flat_map(|r| (0..groups).map(move |g| (r, g))).collect();
        let blocks: Vec<Vec<f32>> = tasks
            .par_iter()
            .map(|&(r, g)| {
                let xb = &x[r * rows * din..((r + 1) * rows).min(m) * din];
                let mb = xb.len() / din;
                let c0 = g * group_panels * NR;
                let width = (group_panels * NR).min(dout - c0);
                let panels = &self.panels[g * group_panels * din * NR..];
                let mut out = vec![0.0f32; mb * width];
                gemm(
                    kern,
                    xb,
                    din,
                    mb,
                    din,
                    panels,
                    width,
                    Some(&self.bias[c0..]),
                    &mut out,
                    width,
                );
                out
            })
            .collect();
        y.par_chunks_mut(rows * dout)
            .zip(blocks.par_chunks(groups))
            .for_each(|(yb, row_blocks)| {
                for (g, block) in row_blocks.iter().enumerate() {
                    let c0 = g * group_panels * NR;
                    let width = (group_panels * NR).min(dout - c0);
                    for (yr, br) in yb.chunks_exact_mut(dout).zip(block.chunks_exact(width)) {
                        yr[c0..c0 + width].copy_from_slice(br);
                    }
                }
            });
        y
    }
}
