//! Why a model directory could not be loaded.

use std::path::PathBuf;

use cairn_retrieve::EmbedError;

/// Why [`MiniLm::open`](crate::MiniLm::open) could not load a model directory.
///
/// Each variant names the file at fault. Converts into the
/// [`EmbedError`] that [`MiniLm::load`](crate::MiniLm::load) returns (its message is
/// this error's `Display`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A required file is not in the model directory.
    #[error("model file missing: {path} (a model directory needs config.json, tokenizer.json and model.safetensors)")]
    MissingFile {
        /// The path that was looked for.
        path: PathBuf,
    },
    /// A file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `config.json` is not valid JSON or lacks a field, or describes a model this
    /// embedder does not run.
    #[error("bad model config {path}: {reason}")]
    BadConfig {
        /// The config file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `tokenizer.json` could not be parsed.
    #[error("bad tokenizer {path}: {reason}")]
    BadTokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// What the tokenizer library reported.
        reason: String,
    },
    /// `model.safetensors` is not a valid safetensors file, lacks a tensor, or a
    /// tensor has the wrong shape or dtype for the config.
    #[error("bad weights {path}: {reason}")]
    BadWeights {
        /// The weights file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl From<ModelError> for EmbedError {
    fn from(e: ModelError) -> EmbedError {
        EmbedError::new(e.to_string())
    }
}
