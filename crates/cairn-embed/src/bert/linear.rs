//! A dense layer `y = x·Wᵀ + b` whose every output is summed in one fixed order.
//!
//! Each output element is `((x₀w₀ + x₁w₁) + x₂w₂) + … + b`: a strictly sequential sum
//! over the input dimension, one rounding per multiply and per add (no fused
//! multiply-add). Vectorisation runs *across* output columns, never along the sum, and
//! the rows are split between threads, never the sum — so the bits of a row's output
//! depend on that row alone: not on the other rows in the batch, the thread count, or
//! whether the AVX or the baseline SSE copy of the kernel ran.

use rayon::prelude::*;

/// Output columns per packed weight panel (and per kernel tile).
const NR: usize = 16;
/// Rows per kernel tile.
const MR: usize = 4;
/// Most rows one thread takes at a time (keeps its input rows in cache).
const MAX_BLOCK_ROWS: usize = 64;

/// A linear layer with its weight packed in column panels for the kernel.
#[derive(Debug, Clone)]
pub(crate) struct Linear {
    din: usize,
    dout: usize,
    /// `ceil(dout / NR)` panels, each `din × NR` (row `k` holds `W[c][k]` for the
    /// panel's columns `c`; columns past `dout` are zero).
    panels: Vec<f32>,
    bias: Vec<f32>,
}

impl Linear {
    /// From a PyTorch-layout weight `[dout, din]` (row-major) and a bias `[dout]`.
    pub fn new(weight: &[f32], bias: Vec<f32>, dout: usize, din: usize) -> Linear {
        assert_eq!(weight.len(), dout * din);
        assert_eq!(bias.len(), dout);
        let npanels = dout.div_ceil(NR);
        let mut panels = vec![0.0f32; npanels * din * NR];
        for p in 0..npanels {
            let panel = &mut panels[p * din * NR..(p + 1) * din * NR];
            for c in 0..NR {
                let col = p * NR + c;
                if col >= dout {
                    break;
                }
                let wrow = &weight[col * din..(col + 1) * din];
                for (k, &w) in wrow.iter().enumerate() {
                    panel[k * NR + c] = w;
                }
            }
        }
        Linear {
            din,
            dout,
            panels,
            bias,
        }
    }

    /// `y[m, dout] = x[m, din] · Wᵀ + b`, row-major.
    pub fn forward(&self, x: &[f32], m: usize) -> Vec<f32> {
        assert_eq!(x.len(), m * self.din);
        let mut y = vec![0.0f32; m * self.dout];
        if m == 0 {
            return y;
        }
        // Rows per task: enough tasks for the pool, a multiple of MR, capped. The split
        // changes who computes a row, never how it is computed.
        let threads = rayon::current_num_threads().max(1);
        let per = m.div_ceil(2 * threads).div_ceil(MR) * MR;
        let block = per.clamp(MR, MAX_BLOCK_ROWS);
        y.par_chunks_mut(block * self.dout)
            .zip(x.par_chunks(block * self.din))
            .for_each(|(yb, xb)| self.block(xb, yb));
        y
    }

    /// One block of rows, with the fastest kernel copy this CPU runs.
    fn block(&self, x: &[f32], y: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx") {
                // SAFETY: the CPU supports AVX (checked just above).
                unsafe { self.block_avx(x, y) };
                return;
            }
        }
        self.block_impl(x, y);
    }

    /// The same code as [`block_impl`](Self::block_impl), compiled for AVX (wider
    /// registers, no FMA: separate multiply and add, so the same bits).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    unsafe fn block_avx(&self, x: &[f32], y: &mut [f32]) {
        self.block_impl(x, y);
    }

    #[inline(always)]
    fn block_impl(&self, x: &[f32], y: &mut [f32]) {
        let (din, dout) = (self.din, self.dout);
        let rows = x.len() / din;
        for (p, panel) in self.panels.chunks_exact(din * NR).enumerate() {
            let c0 = p * NR;
            let width = NR.min(dout - c0);
            let mut r = 0;
            while r + MR <= rows {
                let acc = tile::<MR>(&x[r * din..(r + MR) * din], din, panel);
                for (i, a) in acc.iter().enumerate() {
                    let out = &mut y[(r + i) * dout + c0..(r + i) * dout + c0 + width];
                    for c in 0..width {
                        out[c] = a[c] + self.bias[c0 + c];
                    }
                }
                r += MR;
            }
            while r < rows {
                let acc = tile::<1>(&x[r * din..(r + 1) * din], din, panel);
                let out = &mut y[r * dout + c0..r * dout + c0 + width];
                for c in 0..width {
                    out[c] = acc[0][c] + self.bias[c0 + c];
                }
                r += 1;
            }
        }
    }
}

/// `R` rows of `x` (each `din` long) times one panel: `acc[r][c] = Σₖ x[r][k]·panel[k][c]`,
/// summed in increasing `k`.
#[inline(always)]
fn tile<const R: usize>(x: &[f32], din: usize, panel: &[f32]) -> [[f32; NR]; R] {
    let mut acc = [[0.0f32; NR]; R];
    let rows: [&[f32]; R] = std::array::from_fn(|r| &x[r * din..(r + 1) * din]);
    for (k, w) in panel.chunks_exact(NR).enumerate() {
        let w: &[f32; NR] = w.try_into().expect("panel row");
        for r in 0..R {
            let xv = rows[r][k];
            for c in 0..NR {
                acc[r][c] += xv * w[c];
            }
        }
    }
    acc
}
