//! The BERT encoder: embeddings, transformer layers, mean pooling, L2 normalisation.
//!
//! Sequences run as one *packed* batch: their token rows are stacked without padding
//! (`[total tokens, hidden]`), and attention is restricted to each sequence's own span
//! — the same result as padding every sequence to the longest and masking the padding
//! out, without computing the padding. A row's bits depend only on its own sequence.

use rayon::prelude::*;

use super::config::BertConfig;
use super::kernel::{exp_le0, fma_fn, gelu, gemm, gemm_tiled, pack_b_from, sum8, sum_sq8, Kernel, Strided, TiledA};
use super::linear::Linear;
use super::weights::Weights;
use crate::error::ModelError;

/// Layer normalisation over the last dimension.
#[derive(Debug, Clone)]
struct LayerNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    fn load(w: &Weights<'_>, prefix: &str, h: usize, eps: f32) -> Result<LayerNorm, ModelError> {
        Ok(LayerNorm {
            gamma: w.get(&format!("{prefix}.weight"), &[h])?,
            beta: w.get(&format!("{prefix}.bias"), &[h])?,
            eps,
        })
    }

    /// Normalises every row of `x` in place (rows in parallel; each row by
    /// [`layer_norm_row`]).
    fn apply(&self, kern: Kernel, x: &mut [f32]) {
        let h = self.gamma.len();
        x.par_chunks_mut(h)
            .for_each(|row| layer_norm_row(kern, row, &self.gamma, &self.beta, self.eps));
    }
}

fma_fn! {
    /// `(x − mean)/√(var + eps)·γ + β` for one row: mean and variance in the fixed
    /// lanes of [`sum8`], the scaling as `fma(d·inv, γ, β)`.
    fn layer_norm_row(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
        let h = row.len() as f32;
        let mean = sum8(row) / h;
        for v in row.iter_mut() {
            *v -= mean;
        }
        let var = sum_sq8(row) / h;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v * inv).mul_add(*g, *b);
        }
    }
}

/// One transformer layer (post-norm BERT).
#[derive(Debug, Clone)]
struct Layer {
    /// Query, key and value projections fused: output `[q | k | v]`.
    qkv: Linear,
    attn_out: Linear,
    ln1: LayerNorm,
    inter: Linear,
    out: Linear,
    ln2: LayerNorm,
}

/// A loaded BERT encoder with sentence-embedding pooling.
#[derive(Debug, Clone)]
pub(crate) struct Encoder {
    cfg: BertConfig,
    word: Vec<f32>,
    pos: Vec<f32>,
    /// Token-type 0 row (single-sentence inputs).
    type0: Vec<f32>,
    emb_ln: LayerNorm,
    layers: Vec<Layer>,
    /// Which copy of the kernels runs (all give the same bits).
    kernel: Kernel,
}

impl Encoder {
    /// Builds the encoder from the tensors of `model.safetensors`.
    pub fn load(cfg: BertConfig, w: &Weights<'_>) -> Result<Encoder, ModelError> {
        let h = cfg.hidden_size;
        let i = cfg.intermediate_size;
        let eps = cfg.layer_norm_eps as f32;
        let word = w.get("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
        let pos = w.get(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, h],
        )?;
        let types = w.get("embeddings.token_type_embeddings.weight", &[cfg.type_vocab_size, h])?;
        let emb_ln = LayerNorm::load(w, "embeddings.LayerNorm", h, eps)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let mut qkv_w = Vec::with_capacity(3 * h * h);
            let mut qkv_b = Vec::with_capacity(3 * h);
            for n in ["query", "key", "value"] {
                qkv_w.extend(w.get(&format!("{p}.attention.self.{n}.weight"), &[h, h])?);
                qkv_b.extend(w.get(&format!("{p}.attention.self.{n}.bias"), &[h])?);
            }
            let dense = |name: &str, dout: usize, din: usize| -> Result<Linear, ModelError> {
                Ok(Linear::new(
                    &w.get(&format!("{p}.{name}.weight"), &[dout, din])?,
                    w.get(&format!("{p}.{name}.bias"), &[dout])?,
                    dout,
                    din,
                ))
            };
            layers.push(Layer {
                qkv: Linear::new(&qkv_w, qkv_b, 3 * h, h),
                attn_out: dense("attention.output.dense", h, h)?,
                ln1: LayerNorm::load(w, &format!("{p}.attention.output.LayerNorm"), h, eps)?,
                inter: dense("intermediate.dense", i, h)?,
                out: dense("output.dense", h, i)?,
                ln2: LayerNorm::load(w, &format!("{p}.output.LayerNorm"), h, eps)?,
            });
        }
        Ok(Encoder {
            type0: types[..h].to_vec(),
            cfg,
            word,
            pos,
            emb_ln,
            layers,
            kernel: Kernel::from_env(),
        })
    }

    /// The kernel that runs.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Runs `kernel` from now on (any kernel gives the same bits; for tests).
    pub fn set_kernel(&mut self, kernel: Kernel) {
        self.kernel = kernel;
    }

    /// The hidden size (= embedding dimension).
    pub fn dim(&self) -> usize {
        self.cfg.hidden_size
    }

    /// Vocabulary size (token ids must be below it).
    pub fn vocab_size(&self) -> usize {
        self.cfg.vocab_size
    }

    /// Sentence embeddings (mean-pooled, L2-normalised) of token-id sequences, in
    /// order. Each sequence must be non-empty, no longer than the position table, with
    /// ids below
    /// [`vocab_size`](Self::vocab_size) (the caller checks).
    pub fn embed(&self, seqs: &[&[u32]]) -> Vec<Vec<f32>> {
        let h = self.cfg.hidden_size;
        let mut spans = Vec::with_capacity(seqs.len());
        let mut total = 0usize;
        for s in seqs {
            spans.push((total, s.len()));
            total += s.len();
        }
        // Embeddings: (word + position) + type, then layer norm.
        let mut x = vec![0.0f32; total * h];
        for (s, &(off, _)) in seqs.iter().zip(&spans) {
            for (i, &id) in s.iter().enumerate() {
                let row = &mut x[(off + i) * h..(off + i + 1) * h];
                let wv = &self.word[id as usize * h..(id as usize + 1) * h];
                let pv = &self.pos[i * h..(i + 1) * h];
                for d in 0..h {
                    row[d] = wv[d] + pv[d] + self.type0[d];
                }
            }
        }
        let kern = self.kernel;
        self.emb_ln.apply(kern, &mut x);

        // Buffers reused by every layer (no allocation, no zeroing after the first).
        let (mut ap, mut qkv, mut ctx) = (Vec::new(), Vec::new(), Vec::new());
        let (mut a, mut inter, mut o) = (Vec::new(), Vec::new(), Vec::new());
        for layer in &self.layers {
            layer.qkv.forward_into(kern, &x, total, &mut ap, &mut qkv);
            self.attention(&qkv, &spans, &mut ctx);
            layer.attn_out.forward_into(kern, &ctx, total, &mut ap, &mut a);
            add_in_place(&mut a, &x);
            layer.ln1.apply(kern, &mut a);
            layer.inter.forward_into(kern, &a, total, &mut ap, &mut inter);
            inter.par_chunks_mut(4096).for_each(|c| gelu_slice(kern, c));
            layer.out.forward_into(kern, &inter, total, &mut ap, &mut o);
            add_in_place(&mut o, &a);
            layer.ln2.apply(kern, &mut o);
            std::mem::swap(&mut x, &mut o);
        }

        spans
            .iter()
            .map(|&(off, n)| {
                let mut v = vec![0.0f32; h];
                pool(kern, &x[off * h..(off + n) * h], &mut v);
                v
            })
            .collect()
    }

    /// Multi-head self-attention of each sequence over its own tokens.
    /// `qkv` is `[total, 3h]` (`q | k | v`); the context `[total, h]` goes to `ctx`.
    fn attention(&self, qkv: &[f32], spans: &[(usize, usize)], ctx: &mut Vec<f32>) {
        let h = self.cfg.hidden_size;
        let nh = self.cfg.num_attention_heads;
        let hd = self.cfg.head_dim();
        let scale = 1.0f32 / (hd as f32).sqrt();
        // One task per (sequence, head), each writing its rows' `hd` columns of `ctx`
        // (disjoint borrows).
        ctx.resize(qkv.len() / 3, 0.0);
        let mut units: Vec<(usize, usize, Vec<&mut [f32]>)> = (0..spans.len())
            .flat_map(|s| (0..nh).map(move |head| (s, head, Vec::with_capacity(spans[s].1))))
            .collect();
        let mut s = 0;
        for (t, row) in ctx.chunks_mut(h).enumerate() {
            while t >= spans[s].0 + spans[s].1 {
                s += 1;
            }
            for (head, seg) in row.chunks_mut(hd).enumerate() {
                units[s * nh + head].2.push(seg);
            }
        }
        let kern = self.kernel;
        units.into_par_iter().for_each(|(s, head, mut out)| {
            let (off, n) = spans[s];
            let seq = &qkv[off * 3 * h..(off + n) * 3 * h];
            let col = |which: usize| which * h + head * hd;
            // Scores transposed, Sᵀ = K·Qᵀ (row j: key j; column i: query i), with Qᵀ
            // packed in panels of NR queries.
            let q_cols = Strided {
                data: &seq[col(0)..],
                rs: 1,
                ks: 3 * h,
            };
            let queries = pack_b_from(q_cols, hd, n);
            // Rows padded to whole row tiles of P, which P·V reads in place.
            let ld = n.div_ceil(12) * 12;
            let mut st = SCORES.take();
            st.resize(n * ld, 0.0);
            let keys = Strided::rows(&seq[col(1)..], 3 * h);
            gemm(
                kern,
                keys,
                n,
                hd,
                &queries,
                n,
                None,
                &mut st.chunks_mut(ld).collect::<Vec<_>>(),
            );
            softmax_columns(kern, &mut st, n, ld, scale);
            // Context P·V (n × hd) into `ctx`: P read column-major out of Pᵀ, V packed in
            // panels of NR dimensions.
            let values = pack_b_from(Strided::rows(&seq[col(2)..], 3 * h), n, hd);
            let p = TiledA {
                data: &st,
                tile_step: kern.mr(),
                ks: ld,
            };
            gemm_tiled(kern, p, n, n, &values, hd, None, &mut out);
            SCORES.set(st);
        });
    }
}

thread_local! {
    /// A thread's buffer for one head's scores (reused: no allocation per head). Its
    /// padding columns hold whatever an earlier head left: P·V computes rows from them
    /// that are dropped, and no lane mixes with another.
    static SCORES: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `a += b` element-wise.
fn add_in_place(a: &mut [f32], b: &[f32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

fma_fn! {
    /// Exact GELU ([`gelu`]) element-wise.
    fn gelu_slice(x: &mut [f32]) {
        for v in x.iter_mut() {
            *v = gelu(*v);
        }
    }
}

fma_fn! {
    /// Softmax over each column of the `n × n` transposed scores `st` (row `j`: key `j`,
    /// `ld` apart; column `i`: query `i`), after scaling by `scale`: `e^(s − max) / Σ e^(s − max)`,
    /// every column's max and sum taken over the keys in increasing `j` (vectorised
    /// across the columns).
    fn softmax_columns(st: &mut [f32], n: usize, ld: usize, scale: f32) {
        let mut max = vec![f32::NEG_INFINITY; n];
        for row in st.chunks_exact_mut(ld) {
            for (v, m) in row[..n].iter_mut().zip(max.iter_mut()) {
                *v *= scale;
                *m = if *v > *m { *v } else { *m };
            }
        }
        let mut sum = vec![0.0f32; n];
        for row in st.chunks_exact_mut(ld) {
            for ((v, m), s) in row[..n].iter_mut().zip(&max).zip(sum.iter_mut()) {
                *v = exp_le0(*v - m);
                *s += *v;
            }
        }
        for row in st.chunks_exact_mut(ld) {
            for (v, s) in row[..n].iter_mut().zip(&sum) {
                *v /= s;
            }
        }
    }
}

fma_fn! {
    /// Mean over the token rows (each column summed in row order), then L2
    /// normalisation (the norm by [`sum_sq8`]) into `out`.
    fn pool(rows: &[f32], out: &mut [f32]) {
        let h = out.len();
        let n = rows.len() / h;
        out.fill(0.0);
        for r in rows.chunks_exact(h) {
            for (a, v) in out.iter_mut().zip(r) {
                *a += v;
            }
        }
        for a in out.iter_mut() {
            *a /= n as f32;
        }
        let norm = sum_sq8(out).sqrt().max(1e-12);
        for a in out.iter_mut() {
            *a /= norm;
        }
    }
}
