//! Reading the BERT tensors out of `model.safetensors`.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use crate::error::ModelError;

/// The tensors of one safetensors file, looked up by their Hugging Face names (with or
/// without the `bert.` prefix of `BertForX` checkpoints), checked against the shapes the
/// config implies.
pub(crate) struct Weights<'a> {
    path: &'a Path,
    st: SafeTensors<'a>,
}

impl<'a> Weights<'a> {
    /// Parses the file's header.
    pub fn parse(path: &'a Path, bytes: &'a [u8]) -> Result<Weights<'a>, ModelError> {
        let st = SafeTensors::deserialize(bytes).map_err(|e| ModelError::BadWeights {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Ok(Weights { path, st })
    }

    fn bad(&self, reason: String) -> ModelError {
        ModelError::BadWeights {
            path: self.path.to_path_buf(),
            reason,
        }
    }

    /// The float32 tensor `name` of exactly `shape`, row-major.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let view = match self.st.tensor(name) {
            Ok(v) => v,
            Err(_) => self
                .st
                .tensor(&format!("bert.{name}"))
                .map_err(|_| self.bad(format!("tensor {name} is missing")))?,
        };
        if view.shape() != shape {
            return Err(self.bad(format!(
                "tensor {name} has shape {:?}, the config implies {:?}",
                view.shape(),
                shape
            )));
        }
        let data = view.data();
        match view.dtype() {
            Dtype::F32 => Ok(data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()),
            Dtype::F16 => Ok(data
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect()),
            Dtype::BF16 => Ok(data
                .chunks_exact(2)
                .map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16))
                .collect()),
            other => Err(self.bad(format!("tensor {name} has dtype {other:?} (F32, F16 or BF16 expected)"))),
        }
    }
}

/// IEEE half → single (exact).
fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // subnormal: value = m · 2⁻²⁴
            let v = m as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}
