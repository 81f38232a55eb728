//! The BERT encoder: embeddings, transformer layers, mean pooling, L2 normalisation.
//!
//! Sequences run as one *packed* batch: their token rows are stacked without padding
//! (`[total tokens, hidden]`), and attention is restricted to each sequence's own span
//! — the same result as padding every sequence to the longest and masking the padding
//! out, without computing the padding. A row's bits depend only on its own sequence.

use rayon::prelude::*;

use super::config::BertConfig;
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

    /// Normalises every row of `x` in place (rows in parallel; each row sequentially).
    fn apply(&self, x: &mut [f32]) {
        let h = self.gamma.len();
        x.par_chunks_mut(h).for_each(|row| {
            let mean = row.iter().fold(0.0f32, |s, &v| s + v) / h as f32;
            for v in row.iter_mut() {
                *v -= mean;
            }
            let var = row.iter().fold(0.0f32, |s, &v| s + v * v) / h as f32;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = *v * inv * g + b;
            }
        });
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
        })
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
        self.emb_ln.apply(&mut x);

        for layer in &self.layers {
            let qkv = layer.qkv.forward(&x, total);
            let ctx = self.attention(&qkv, &spans, total);
            let mut a = layer.attn_out.forward(&ctx, total);
            add_in_place(&mut a, &x);
            layer.ln1.apply(&mut a);
            let mut inter = layer.inter.forward(&a, total);
            gelu_in_place(&mut inter);
            let mut o = layer.out.forward(&inter, total);
            add_in_place(&mut o, &a);
            layer.ln2.apply(&mut o);
            x = o;
        }

        spans
            .iter()
            .map(|&(off, n)| pool(&x[off * h..(off + n) * h], h))
            .collect()
    }

    /// Multi-head self-attention of each sequence over its own tokens.
    /// `qkv` is `[total, 3h]` (`q | k | v`); returns the context `[total, h]`.
    fn attention(&self, qkv: &[f32], spans: &[(usize, usize)], total: usize) -> Vec<f32> {
        let h = self.cfg.hidden_size;
        let nh = self.cfg.num_attention_heads;
        let hd = self.cfg.head_dim();
        let scale = 1.0f32 / (hd as f32).sqrt();
        let units: Vec<(usize, usize)> = (0..spans.len())
            .flat_map(|s| (0..nh).map(move |head| (s, head)))
            .collect();
        let parts: Vec<Vec<f32>> = units
            .par_iter()
            .map(|&(s, head)| {
                let (off, n) = spans[s];
                let row = |t: usize, which: usize| {
                    let base = (off + t) * 3 * h + which * h + head * hd;
                    &qkv[base..base + hd]
                };
                let mut out = vec![0.0f32; n * hd];
                let mut p = vec![0.0f32; n];
                for i in 0..n {
                    let q = row(i, 0);
                    for (j, pj) in p.iter_mut().enumerate() {
                        let k = row(j, 1);
                        let dot = q.iter().zip(k).fold(0.0f32, |a, (x, y)| a + x * y);
                        *pj = dot * scale;
                    }
                    let max = p.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
                    for v in p.iter_mut() {
                        *v = libm::expf(*v - max);
                    }
                    let sum = p.iter().fold(0.0f32, |a, &v| a + v);
                    let o = &mut out[i * hd..(i + 1) * hd];
                    for (j, &pj) in p.iter().enumerate() {
                        let w = pj / sum;
                        for (od, vd) in o.iter_mut().zip(row(j, 2)) {
                            *od += w * vd;
                        }
                    }
                }
                out
            })
            .collect();
        let mut ctx = vec![0.0f32; total * h];
        for (&(s, head), part) in units.iter().zip(&parts) {
            let (off, n) = spans[s];
            for i in 0..n {
                ctx[(off + i) * h + head * hd..(off + i) * h + (head + 1) * hd]
                    .copy_from_slice(&part[i * hd..(i + 1) * hd]);
            }
        }
        ctx
    }
}

/// `a += b` element-wise.
fn add_in_place(a: &mut [f32], b: &[f32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// Exact GELU, `0.5·x·(1 + erf(x/√2))`, element-wise (in parallel chunks).
fn gelu_in_place(x: &mut [f32]) {
    x.par_chunks_mut(4096).for_each(|c| {
        for v in c {
            let g = libm::erff(*v * std::f32::consts::FRAC_1_SQRT_2) + 1.0;
            *v = g * *v * 0.5;
        }
    });
}

/// Mean over the token rows, then L2 normalisation (sequential sums).
fn pool(rows: &[f32], h: usize) -> Vec<f32> {
    let n = rows.len() / h;
    let mut acc = vec![0.0f32; h];
    for r in rows.chunks_exact(h) {
        for (a, v) in acc.iter_mut().zip(r) {
            *a += v;
        }
    }
    for a in acc.iter_mut() {
        *a /= n as f32;
    }
    let norm = acc.iter().fold(0.0f32, |s, &v| s + v * v).sqrt().max(1e-12);
    for a in acc.iter_mut() {
        *a /= norm;
    }
    acc
}
