//! A BERT encoder forward pass in plain Rust, written for bit-for-bit determinism.
//!
//! Every floating-point reduction (matrix products, attention, layer norms, pooling)
//! runs in a fixed order that depends only on the data of one token row or one
//! sequence — never on the batch it is in, the thread count, or the CPU's vector width.
//! Products are chains of fused multiply-adds, and `exp`, `erf` are this crate's own
//! polynomials of fused multiply-adds (see `kernel`): every path (AVX-512, AVX2+FMA,
//! portable `mul_add`) gives the same bits.

pub(crate) mod config;
mod encoder;
mod kernel;
mod linear;
mod weights;

pub(crate) use weights::Weights;

use std::path::Path;

pub(crate) use config::BertConfig;
pub(crate) use encoder::Encoder;
pub(crate) use kernel::Kernel;

use crate::error::ModelError;

/// Reads a whole model file, naming it in the error when absent or unreadable.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, ModelError> {
    if !path.is_file() {
        return Err(ModelError::MissingFile {
            path: path.to_path_buf(),
        });
    }
    std::fs::read(path).map_err(|source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    })
}
