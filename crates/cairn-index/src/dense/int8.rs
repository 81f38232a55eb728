//! int8 codes of the vectors, for a scan that reads a quarter of the bytes of the exact
//! one (the exact scan is memory-bound: at 100,000 × 384 it streams 154 MB per query).
//!
//! Quantisation is per vector and symmetric: `scale = max|x| / 127`, `y = x · (127 /
//! max|x|)` and `code = round(y)` (to nearest, ties to even, computed as `(y + 1.5·2²³)`'s
//! low bits), so every code is in `-127..=127`; a zero vector has scale 0 and zero codes. The approximate score of a row is
//! `(Σ qᵢ·rᵢ as i32) as f32 · (scale_q · scale_r)`: the integer sum is exact in any order and
//! the rest is a fixed sequence of `f32` operations, so it is the same on every machine.
//! It only chooses candidates; hits are always rescored with the exact kernel.

/// int8 codes of a set of vectors, row-major, with one scale per row.
#[derive(Debug, Clone, Default)]
pub(crate) struct Int8Codes {
    pub(crate) codes: Vec<i8>,
    pub(crate) scales: Vec<f32>,
}

impl Int8Codes {
    /// Codes of `vectors` (rows of `dim`).
    pub(crate) fn new(vectors: &[f32], dim: usize) -> Int8Codes {
        let rows = vectors.len() / dim.max(1);
        let mut out = Int8Codes {
            codes: vec![0; rows * dim],
            scales: Vec::with_capacity(rows),
        };
        for (v, c) in vectors.chunks_exact(dim).zip(out.codes.chunks_exact_mut(dim)) {
            out.scales.push(quantize(v, c));
        }
        out
    }

    /// Row `r`'s codes.
    pub(crate) fn row(&self, r: usize, dim: usize) -> &[i8] {
        &self.codes[r * dim..(r + 1) * dim]
    }
}

/// Writes `v`'s codes into `out` and returns its scale.
pub(crate) fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
    let (inv, scale) = scales(v);
    for (c, &x) in out.iter_mut().zip(v) {
        *c = code(x, inv);
    }
    scale
}

/// `(127 / max|x|, max|x| / 127)`, or zeros for a zero (or non-finite) vector.
pub(crate) fn scales(v: &[f32]) -> (f32, f32) {
    // Eight explicit lanes of `if a > m { a } else { m }` (a `maxps`): a fold over
    // `f32::max`, or over one accumulator, stays scalar. Inputs are finite.
    let mut lanes = [0.0f32; 8];
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        for (m, x) in lanes.iter_mut().zip(c) {
            let a = x.abs();
            *m = if a > *m { a } else { *m };
        }
    }
    let max = chunks
        .remainder()
        .iter()
        .chain(&lanes)
        .fold(0.0f32, |m, x| if x.abs() > m { x.abs() } else { m });
    if max == 0.0 || !max.is_finite() {
        return (0.0, 0.0);
    }
    (127.0 / max, max / 127.0)
}

/// `1.5 · 2²³`: adding it to `|y| < 2²²` leaves `round(y)` (to nearest, ties to even) in the
/// low bits of the sum.
const ROUNDER: f32 = 12_582_912.0;

/// The code of `x` given `inv = 127 / max|x|`: `y = x · inv` rounded to nearest (ties to
/// even) by adding [`ROUNDER`] — two IEEE operations and an integer subtraction, which
/// vectorise on SSE2, unlike `f32::round` (a libm call there) or a saturating cast.
#[inline]
pub(crate) fn code(x: f32, inv: f32) -> i8 {
    let y = x * inv; // |y| <= 127 up to the rounding of `inv`
    let r = (y + ROUNDER).to_bits() as i32 - ROUNDER.to_bits() as i32;
    r.clamp(-127, 127) as i8
}

/// The exact integer dot product of two code vectors (|sum| < 2³¹ for any dimension up to
/// 4096 · 127² ≈ 6.6·10⁷). 16 lanes so the compiler widens and multiplies with SIMD.
#[inline]
pub(crate) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    const L: usize = 16;
    let mut acc = [0i32; L];
    let mut ca = a.chunks_exact(L);
    let mut cb = b.chunks_exact(L);
    for (x, y) in (&mut ca).zip(&mut cb) {
        if let (Ok(x), Ok(y)) = (<&[i8; L]>::try_from(x), <&[i8; L]>::try_from(y)) {
            for l in 0..L {
                acc[l] += i32::from(x[l]) * i32::from(y[l]);
            }
        }
    }
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    acc.iter().sum::<i32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_scores() {
        let v = [0.5f32, -1.0, 0.25, 0.0];
        let mut c = [0i8; 4];
        let s = quantize(&v, &mut c);
        assert_eq!(c, [64, -127, 32, 0]); // 63.5 → 64 (even), 31.75 → 32
        assert_eq!(code(0.5, 1.0), 0); // ties to even
        assert_eq!(code(1.5, 1.0), 2);
        assert_eq!(code(-2.5, 1.0), -2);
        assert_eq!(code(-126.6, 1.0), -127);
        assert_eq!(s, 1.0 / 127.0);
        assert_eq!(quantize(&[0.0; 4], &mut c), 0.0);
        assert_eq!(c, [0; 4]);
        let a: Vec<i8> = (0..37).map(|i| (i * 7 % 255 - 127) as i8).collect();
        let b: Vec<i8> = (0..37).map(|i| (i * 13 % 255 - 127) as i8).collect();
        let want: i32 = a.iter().zip(&b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
        assert_eq!(dot_i8(&a, &b), want);
        assert_eq!(dot_i8(&[-127; 4096], &[-127; 4096]), 4096 * 127 * 127);
    }
}
