//! The local MiniLM (BERT) embedder.

use std::path::Path;

use cairn_retrieve::{EmbedError, Embedder};
use tokenizers::{Tokenizer, TruncationParams};

use crate::bert::{self, BertConfig, Encoder};
use crate::error::ModelError;

/// Inputs are truncated to this many word pieces, `[CLS]` and `[SEP]` included
/// (all-MiniLM-L6-v2's `max_seq_length`).
pub const MAX_TOKENS: usize = 256;

/// Most tokens one forward pass of [`Embedder::embed_batch`] packs together (bounds the
/// activations to ~12 MB per layer); longer
/// batches run as several passes (which changes no bit of the result).
const TOKENS_PER_PASS: usize = 2048;

/// A sentence-embedding BERT model (all-MiniLM-L6-v2 or any BERT encoder in the same
/// layout) run in process.
///
/// [`load`](MiniLm::load) reads a Hugging Face model directory: `config.json` (BERT
/// hyper-parameters), `tokenizer.json` (WordPiece) and `model.safetensors` (float32,
/// float16 or bfloat16 weights). An embedding is: tokenise with `[CLS]`/`[SEP]`,
/// truncate to [`MAX_TOKENS`], run the encoder, average the last hidden states over the
/// tokens, L2-normalise — the all-MiniLM-L6-v2 sentence-transformers pipeline
/// (Transformer → Pooling(mean) → Normalize).
///
/// Determinism: the forward pass is this crate's own (not a BLAS), written so that each
/// number is summed in a fixed order that depends only on its own text: the same text
/// gives the same bytes in every process, with any `RAYON_NUM_THREADS`, alone or in any
/// batch, and on every CPU — every product is a chain of fused multiply-adds in a fixed
/// order, run by an AVX-512 or AVX2+FMA kernel where the CPU has one and by a portable
/// `f32::mul_add` kernel elsewhere, all with the same bits
/// (`CAIRN_EMBED_KERNEL=portable|avx2|avx512` forces one). [`embed_batch`](Embedder::embed_batch) runs the texts as one packed batch
/// (one matrix product per layer for all tokens, attention masked to each text's own
/// tokens) and equals the one-by-one results bit for bit. Work is spread over the
/// global rayon pool.
///
/// ```no_run
/// use cairn_embed::MiniLm;
/// use cairn_retrieve::Embedder;
///
/// let model = MiniLm::load("/models/all-MiniLM-L6-v2")?;
/// let v = model.embed("flutter of a swept wing")?;
/// assert_eq!(v.len(), 384);
/// # Ok::<(), cairn_retrieve::EmbedError>(())
/// ```
pub struct MiniLm {
    tokenizer: Tokenizer,
    encoder: Encoder,
    max_tokens: usize,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("dim", &self.encoder.dim())
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

impl MiniLm {
    /// Loads the model in `dir`; errors as an [`EmbedError`] whose message names the
    /// file at fault. See [`open`](MiniLm::open) for the typed error.
    ///
    /// ```no_run
    /// let model = cairn_embed::MiniLm::load("/models/all-MiniLM-L6-v2")?;
    /// assert_eq!(model.dim(), 384);
    /// # Ok::<(), cairn_retrieve::EmbedError>(())
    /// ```
    pub fn load(dir: impl AsRef<Path>) -> Result<MiniLm, EmbedError> {
        Ok(MiniLm::open(dir)?)
    }

    /// Loads the model in `dir` with a typed error: [`ModelError::MissingFile`] when
    /// `config.json`, `tokenizer.json` or `model.safetensors` is absent,
    /// [`ModelError::BadConfig`], [`ModelError::BadTokenizer`] or
    /// [`ModelError::BadWeights`] when one is malformed or they disagree (a tensor's
    /// shape against the config).
    pub fn open(dir: impl AsRef<Path>) -> Result<MiniLm, ModelError> {
        let dir = dir.as_ref();
        let config_path = dir.join("config.json");
        let tokenizer_path = dir.join("tokenizer.json");
        let weights_path = dir.join("model.safetensors");
        for p in [&config_path, &tokenizer_path, &weights_path] {
            if !p.is_file() {
                return Err(ModelError::MissingFile { path: p.clone() });
            }
        }
        let cfg = BertConfig::read(&config_path)?;
        let max_tokens = MAX_TOKENS.min(cfg.max_position_embeddings);

        let bad_tok = |reason: String| ModelError::BadTokenizer {
            path: tokenizer_path.clone(),
            reason,
        };
        let tok_bytes = bert::read_file(&tokenizer_path)?;
        let mut tokenizer = Tokenizer::from_bytes(&tok_bytes).map_err(|e| bad_tok(e.to_string()))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| bad_tok(e.to_string()))?;

        let bytes = bert::read_file(&weights_path)?;
        let weights = bert::Weights::parse(&weights_path, &bytes)?;
        let encoder = Encoder::load(cfg, &weights)?;
        Ok(MiniLm {
            tokenizer,
            encoder,
            max_tokens,
        })
    }

    /// The name of the matrix kernel this model runs: `avx512`, `avx2+fma` or
    /// `portable` (all give the same bits). Chosen at load from the CPU, or forced with
    /// `CAIRN_EMBED_KERNEL=portable|avx2|avx512`.
    #[doc(hidden)]
    pub fn kernel_name(&self) -> &'static str {
        self.encoder.kernel().name()
    }

    /// Runs the portable kernel (plain Rust, `f32::mul_add`) from now on: for tests that
    /// pin its bits and compare them with the SIMD kernels'.
    #[doc(hidden)]
    pub fn use_portable_kernel(&mut self) {
        self.encoder.set_kernel(bert::Kernel::Portable);
    }

    /// The embedding dimension (the model's hidden size; 384 for all-MiniLM-L6-v2).
    pub fn dim(&self) -> usize {
        self.encoder.dim()
    }

    /// The word-piece limit inputs are truncated to: [`MAX_TOKENS`], or less if the
    /// model's position table is shorter.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The token ids the model sees for `text` (`[CLS] … [SEP]`, truncated to
    /// [`max_tokens`](MiniLm::max_tokens)).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| EmbedError::new(format!("tokenizer failed: {e}")))?;
        let ids = enc.get_ids().to_vec();
        if ids.is_empty() {
            return Err(EmbedError::new(
                "the tokenizer produced no tokens (tokenizer.json has no [CLS]/[SEP] template?)",
            ));
        }
        if ids.len() > self.max_tokens {
            return Err(EmbedError::new(format!(
                "the tokenizer produced {} tokens, more than the limit {}",
                ids.len(),
                self.max_tokens
            )));
        }
        let vocab = self.encoder.vocab_size();
        if let Some(&bad) = ids.iter().find(|&&id| id as usize >= vocab) {
            return Err(EmbedError::new(format!(
                "token id {bad} is outside the model's vocabulary of {vocab} (tokenizer.json does not match config.json)"
            )));
        }
        Ok(ids)
    }
}

impl Embedder for MiniLm {
    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let ids = self.token_ids(text)?;
        Ok(self.encoder.embed(&[&ids]).pop().expect("one vector per sequence"))
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let ids = texts.iter().map(|t| self.token_ids(t)).collect::<Result<Vec<_>, _>>()?;
        let mut out = Vec::with_capacity(texts.len());
        let mut start = 0;
        while start < ids.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < ids.len() && (end == start || tokens + ids[end].len() <= TOKENS_PER_PASS) {
                tokens += ids[end].len();
                end += 1;
            }
            let seqs: Vec<&[u32]> = ids[start..end].iter().map(Vec::as_slice).collect();
            out.extend(self.encoder.embed(&seqs));
            start = end;
        }
        Ok(out)
    }
}
