//! Integer codes of vectors, and the bound that lets an int8 scan skip rows without ever
//! changing an exact answer (`view/dense.rs`).
//!
//! **Rows** are quantised per vector, symmetric: `scale = max|x| / 127`, `code =
//! round(x · 127 / max|x|)` (to nearest, ties to even, computed as `(y + 1.5·2²³)`'s low
//! bits), every code in `-127..=127`; a zero vector has scale 0 and zero codes.
//! **Queries** are quantised the same way to `-16383..=16383` (15 bits: nearly exact), so
//! the query's own rounding hardly widens the bound.
//!
//! For a query `q = s_q·c_q + e_q` and a row `x = s_r·c_r + e_r` (the residuals `e` are
//! what the codes miss), in exact arithmetic
//!
//! ```text
//! q·x = s_q·s_r·(c_q·c_r) + s_r·(e_q·c_r) + q·e_r
//! |q·x − s_q·s_r·(c_q·c_r)| ≤ ‖e_q‖·(s_r·‖c_r‖) + ‖q‖·‖e_r‖          (Cauchy–Schwarz)
//! ```
//!
//! and the exact kernel's `f32` result differs from `q·x` by at most `γ·‖q‖·‖x‖`, where
//! `γ = 1.01 · m · 2⁻²⁴` and `m = ⌈dim/16⌉ + 20` bounds the roundings on any product's path
//! through its fixed summation tree (`dense/kernel.rs`). So with, per row, `u = ‖e_r‖ +
//! γ·‖x‖` and `v = s_r·‖c_r‖` (computed in `f64`, rounded up to `f32`) and, per query,
//! `‖q‖` and `‖e_q‖` (rounded up), the kernel score lies within `a ± B`, where `a =
//! s_q·s_r·(c_q·c_r)` and `B = ‖q‖·u + ‖e_q‖·v` (widened by a relative `10⁻⁶` and
//! `10⁻⁹·|a|` for the `f64` arithmetic of the bound itself).
//!
//! The integer dot product is exact in any order, so it may use any instruction set: it
//! is compiled twice, for the baseline target and for AVX2, and picked at run time.

use crate::dense::kernel;

/// Largest magnitude of a row code.
pub(crate) const ROW_MAX: f32 = 127.0;
/// Largest magnitude of a query code.
pub(crate) const QUERY_MAX: f32 = 16383.0;

/// `1.5 · 2²³`: adding it to `|y| < 2²²` leaves `round(y)` (to nearest, ties to even) in the
/// low bits of the sum.
const ROUNDER: f32 = 12_582_912.0;

/// `round(x · inv)` (to nearest, ties to even), clamped to `±limit`.
#[inline]
fn code(x: f32, inv: f32, limit: i32) -> i32 {
    let y = x * inv;
    let r = (y + ROUNDER).to_bits() as i32 - ROUNDER.to_bits() as i32;
    r.clamp(-limit, limit)
}

/// The largest `|x|` of `v` (0 for an empty or zero vector).
fn max_abs(v: &[f32]) -> f32 {
    // Eight explicit lanes of `if a > m { a } else { m }` (a `maxps`). Inputs are finite.
    let mut lanes = [0.0f32; 8];
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        for (m, x) in lanes.iter_mut().zip(c) {
            let a = x.abs();
            *m = if a > *m { a } else { *m };
        }
    }
    chunks
        .remainder()
        .iter()
        .chain(&lanes)
        .fold(0.0f32, |m, x| if x.abs() > m { x.abs() } else { m })
}

/// `x` rounded up to an `f32` after a relative widening of `10⁻⁹` (for `f64` rounding).
pub(crate) fn up32(x: f64) -> f32 {
    let x = x * (1.0 + 1e-9);
    let f = x as f32;
    if f64::from(f) < x {
        f.next_up()
    } else {
        f
    }
}

/// The row codes of `v` written to `out`, and the row's scale.
pub(crate) fn quantize_row(v: &[f32], out: &mut [i8]) -> f32 {
    let max = max_abs(v);
    if max == 0.0 || !max.is_finite() {
        out.iter_mut().for_each(|c| *c = 0);
        return 0.0;
    }
    let inv = ROW_MAX / max;
    for (c, &x) in out.iter_mut().zip(v) {
        *c = code(x, inv, 127) as i8;
    }
    max / ROW_MAX
}

/// `γ` of the module docs for a dimension.
pub(crate) fn kernel_gamma(dim: usize) -> f64 {
    let m = dim.div_ceil(kernel::LANES) + 20;
    1.01 * m as f64 * f64::from(f32::EPSILON) / 2.0
}

/// A row's bound terms `(u, v)` (module docs) from its vector, codes and scale.
pub(crate) fn row_terms(v: &[f32], codes: &[i8], scale: f32, gamma: f64) -> (f32, f32) {
    let s = f64::from(scale);
    let (mut e2, mut x2, mut c2) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &c) in v.iter().zip(codes) {
        let x = f64::from(x);
        let c = f64::from(c);
        let e = x - s * c;
        e2 += e * e;
        x2 += x * x;
        c2 += c * c;
    }
    (up32(e2.sqrt() + gamma * x2.sqrt()), up32(s * c2.sqrt()))
}

/// A query's codes, scale and norms (module docs).
#[derive(Debug, Clone)]
pub(crate) struct QueryCodes {
    pub(crate) codes: Vec<i16>,
    pub(crate) scale: f32,
    /// `‖q‖`, rounded up.
    pub(crate) norm: f64,
    /// `‖e_q‖`, rounded up.
    pub(crate) resid: f64,
}

impl QueryCodes {
    /// Quantises a (finite) query.
    pub(crate) fn new(q: &[f32]) -> QueryCodes {
        let max = max_abs(q);
        let (inv, scale) = if max == 0.0 {
            (0.0, 0.0)
        } else {
            (QUERY_MAX / max, max / QUERY_MAX)
        };
        let codes: Vec<i16> = q.iter().map(|&x| code(x, inv, QUERY_MAX as i32) as i16).collect();
        let s = f64::from(scale);
        let (mut e2, mut q2) = (0.0f64, 0.0f64);
        for (&x, &c) in q.iter().zip(&codes) {
            let x = f64::from(x);
            let e = x - s * f64::from(c);
            e2 += e * e;
            q2 += x * x;
        }
        QueryCodes {
            codes,
            scale,
            norm: f64::from(up32(q2.sqrt())),
            resid: f64::from(up32(e2.sqrt())),
        }
    }

    /// `(lower, upper)` bounds of the exact kernel's score of a row, from its codes, scale
    /// and bound terms.
    #[inline]
    pub(crate) fn bounds(&self, row_codes: &[i8], row_scale: f32, u: f32, v: f32) -> (f64, f64) {
        let dot = dot_i16_i8(&self.codes, row_codes);
        let a = dot as f64 * f64::from(self.scale) * f64::from(row_scale);
        let b = (self.norm * f64::from(u) + self.resid * f64::from(v)) * (1.0 + 1e-6) + a.abs() * 1e-9 + 1e-30;
        (a - b, a + b)
    }
}

/// `Σ qᵢ·cᵢ`, exact (`|qᵢ| ≤ 16383`, `|cᵢ| ≤ 127`, dimension ≤ 4096: every 32-bit lane stays
/// below 2³¹).
#[inline]
pub(crate) fn dot_i16_i8(q: &[i16], c: &[i8]) -> i64 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512_vnni() {
            // SAFETY: the CPU has AVX-512F/BW and AVX-512 VNNI (checked just above).
            return unsafe { dot_i16_i8_avx512(q, c) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above); the function is safe Rust
            // compiled with AVX2 enabled, and integer sums are exact in any order.
            return unsafe { dot_i16_i8_avx2(q, c) };
        }
    }
    dot_i16_i8_body(q, c)
}

/// Whether the CPU has AVX-512F, AVX-512BW and AVX-512 VNNI (`vpdpwssd`): the integer
/// kernels' widest path. Integer sums are exact in any order, so every path gives the
/// same value; only the speed differs.
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512_vnni() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// AVX-512: 32 codes per step, widened to 16 bits and multiplied pairwise into 16 lanes of
/// 32 bits with one `vpdpwssd` (multiply, add pairs, accumulate). Each lane adds at most
/// ⌈4096/32⌉ pairs of `2 · 16383 · 127`, below 2³¹ (`vpdpwssd` wraps, it never saturates,
/// and nothing here comes near); the lanes are summed in 64 bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn dot_i16_i8_avx512(q: &[i16], c: &[i8]) -> i64 {
    use std::arch::x86_64::*;
    let n = q.len().min(c.len());
    let mut acc = _mm512_setzero_si512();
    let mut i = 0;
    while i + 32 <= n {
        // SAFETY: `i + 32 <= n` and both slices hold at least `n` elements, so the loads
        // read 32 `i16`s of `q` (64 bytes) and 32 `i8`s of `c` in bounds; unaligned loads
        // accept any address.
        let (qv, cv) = unsafe {
            (
                _mm512_loadu_si512(q.as_ptr().add(i).cast()),
                _mm256_loadu_si256(c.as_ptr().add(i).cast()),
            )
        };
        acc = _mm512_dpwssd_epi32(acc, qv, _mm512_cvtepi8_epi16(cv));
        i += 32;
    }
    let mut lanes = [0i32; 16];
    // SAFETY: `lanes` is 64 writable bytes: one unaligned 64-byte store fits.
    unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), acc) };
    lanes.iter().map(|&a| i64::from(a)).sum::<i64>() + dot_i16_i8_body(&q[i..n], &c[i..n])
}

/// AVX2: 16 codes per step, widened to 16 bits and multiplied pairwise into 8 lanes of 32
/// bits (`vpmaddwd`); each lane adds at most ⌈4096/16⌉ pairs of `2 · 16383 · 127`, below
/// 2³¹. The compiler does not find `vpmaddwd` in the portable loop, hence the intrinsics.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i16_i8_avx2(q: &[i16], c: &[i8]) -> i64 {
    use std::arch::x86_64::*;
    let n = q.len().min(c.len());
    let (mut acc0, mut acc1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let mut i = 0;
    while i + 32 <= n {
        // SAFETY: `i + 32 <= n` and both slices hold at least `n` elements, so the loads
        // read 32 `i16`s of `q` (two 32-byte loads) and 32 `i8`s of `c` in bounds;
        // unaligned loads accept any address.
        let (q0, q1, c0, c1) = unsafe {
            (
                _mm256_loadu_si256(q.as_ptr().add(i).cast()),
                _mm256_loadu_si256(q.as_ptr().add(i + 16).cast()),
                _mm_loadu_si128(c.as_ptr().add(i).cast()),
                _mm_loadu_si128(c.as_ptr().add(i + 16).cast()),
            )
        };
        acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(q0, _mm256_cvtepi8_epi16(c0)));
        acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(q1, _mm256_cvtepi8_epi16(c1)));
        i += 32;
    }
    let mut lanes = [0i32; 16];
    // SAFETY: `lanes` is 64 writable bytes, two unaligned 32-byte stores fit.
    unsafe {
        _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc0);
        _mm256_storeu_si256(lanes.as_mut_ptr().add(8).cast(), acc1);
    }
    lanes.iter().map(|&a| i64::from(a)).sum::<i64>() + dot_i16_i8_body(&q[i..n], &c[i..n])
}

/// 16 lanes, each summing a *pair* of products per step: the shape of `pmaddwd` (two
/// 16-bit products added into one 32-bit lane), which the compiler emits for it on SSE2 and
/// AVX2 alike. Each lane adds at most ⌈4096/32⌉ pairs of `2 · 16383 · 127`: below 2³¹.
#[inline(always)]
fn dot_i16_i8_body(q: &[i16], c: &[i8]) -> i64 {
    const L: usize = 16;
    let n = q.len().min(c.len());
    let (q, c) = (&q[..n], &c[..n]);
    let mut acc = [0i32; L];
    let mut cq = q.chunks_exact(2 * L);
    let mut cc = c.chunks_exact(2 * L);
    for (x, y) in (&mut cq).zip(&mut cc) {
        if let (Ok(x), Ok(y)) = (<&[i16; 2 * L]>::try_from(x), <&[i8; 2 * L]>::try_from(y)) {
            for l in 0..L {
                let a = i32::from(x[2 * l]) * i32::from(i16::from(y[2 * l]));
                let b = i32::from(x[2 * l + 1]) * i32::from(i16::from(y[2 * l + 1]));
                acc[l] += a + b;
            }
        }
    }
    let tail: i64 = cq
        .remainder()
        .iter()
        .zip(cc.remainder())
        .map(|(x, y)| i64::from(*x) * i64::from(*y))
        .sum();
    acc.iter().map(|&a| i64::from(a)).sum::<i64>() + tail
}

/// `Σ aᵢ·bᵢ` of two row code vectors, exact (for graph navigation).
#[inline]
pub(crate) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512_vnni() {
            // SAFETY: as in `dot_i16_i8`.
            return unsafe { dot_i8_avx512(a, b) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as in `dot_i16_i8`.
            return unsafe { dot_i8_avx2(a, b) };
        }
    }
    dot_i8_body(a, b)
}

/// AVX-512, as [`dot_i16_i8_avx512`] with both sides widened from 8 bits (each lane adds at
/// most ⌈4096/32⌉ pairs of `2 · 127²`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn dot_i8_avx512(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let mut acc = _mm512_setzero_si512();
    let mut i = 0;
    while i + 32 <= n {
        // SAFETY: `i + 32 <= n` and both slices hold at least `n` elements: each load reads
        // 32 in-bounds bytes; unaligned loads accept any address.
        let (x, y) = unsafe {
            (
                _mm256_loadu_si256(a.as_ptr().add(i).cast()),
                _mm256_loadu_si256(b.as_ptr().add(i).cast()),
            )
        };
        acc = _mm512_dpwssd_epi32(acc, _mm512_cvtepi8_epi16(x), _mm512_cvtepi8_epi16(y));
        i += 32;
    }
    _mm512_reduce_add_epi32(acc) + dot_i8_body(&a[i..n], &b[i..n])
}

/// AVX2, as [`dot_i16_i8_avx2`] with both sides widened from 8 bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let mut acc = _mm256_setzero_si256();
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: `i + 16 <= n` and both slices hold at least `n` elements: each load reads
        // 16 in-bounds bytes; unaligned loads accept any address.
        let (x, y) = unsafe {
            (
                _mm_loadu_si128(a.as_ptr().add(i).cast()),
                _mm_loadu_si128(b.as_ptr().add(i).cast()),
            )
        };
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_cvtepi8_epi16(x), _mm256_cvtepi8_epi16(y)));
        i += 16;
    }
    let mut lanes = [0i32; 8];
    // SAFETY: `lanes` is 32 writable bytes.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
    lanes.iter().sum::<i32>() + dot_i8_body(&a[i..n], &b[i..n])
}

/// The same pair-per-lane shape as [`dot_i16_i8_body`], both sides widened from 8 bits.
#[inline(always)]
fn dot_i8_body(a: &[i8], b: &[i8]) -> i32 {
    const L: usize = 16;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0i32; L];
    let mut ca = a.chunks_exact(2 * L);
    let mut cb = b.chunks_exact(2 * L);
    for (x, y) in (&mut ca).zip(&mut cb) {
        if let (Ok(x), Ok(y)) = (<&[i8; 2 * L]>::try_from(x), <&[i8; 2 * L]>::try_from(y)) {
            for l in 0..L {
                let p = i32::from(i16::from(x[2 * l])) * i32::from(i16::from(y[2 * l]));
                let q = i32::from(i16::from(x[2 * l + 1])) * i32::from(i16::from(y[2 * l + 1]));
                acc[l] += p + q;
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

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    #[test]
    fn codes_round_to_nearest_even() {
        let mut c = [0i8; 4];
        let s = quantize_row(&[0.5, -1.0, 0.25, 0.0], &mut c);
        assert_eq!(c, [64, -127, 32, 0]); // 63.5 → 64 (even), 31.75 → 32
        assert_eq!(s, 1.0 / 127.0);
        assert_eq!(quantize_row(&[0.0; 4], &mut c), 0.0);
        assert_eq!(c, [0; 4]);
        assert_eq!(code(0.5, 1.0, 127), 0);
        assert_eq!(code(1.5, 1.0, 127), 2);
        assert_eq!(code(-2.5, 1.0, 127), -2);
        assert_eq!(code(-126.6, 1.0, 127), -127);
    }

    #[test]
    fn integer_kernels_are_exact_on_every_path() {
        let mut s = 5;
        for n in [0usize, 1, 15, 16, 17, 31, 32, 33, 100, 384, 4096] {
            let a: Vec<i8> = (0..n).map(|_| (lcg(&mut s) * 127.0) as i8).collect();
            let b: Vec<i8> = (0..n).map(|_| (lcg(&mut s) * 127.0) as i8).collect();
            let q: Vec<i16> = (0..n).map(|_| (lcg(&mut s) * 16383.0) as i16).collect();
            let want8: i64 = a.iter().zip(&b).map(|(x, y)| i64::from(*x) * i64::from(*y)).sum();
            let want16: i64 = q.iter().zip(&a).map(|(x, y)| i64::from(*x) * i64::from(*y)).sum();
            assert_eq!(i64::from(dot_i8(&a, &b)), want8);
            assert_eq!(i64::from(dot_i8_body(&a, &b)), want8);
            assert_eq!(dot_i16_i8(&q, &a), want16);
            assert_eq!(dot_i16_i8_body(&q, &a), want16);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is present (checked above).
                unsafe {
                    assert_eq!(dot_i16_i8_avx2(&q, &a), want16);
                    assert_eq!(i64::from(dot_i8_avx2(&a, &b)), want8);
                }
            }
            #[cfg(target_arch = "x86_64")]
            if has_avx512_vnni() {
                // SAFETY: AVX-512F/BW/VNNI are present (checked above).
                unsafe {
                    assert_eq!(dot_i16_i8_avx512(&q, &a), want16);
                    assert_eq!(i64::from(dot_i8_avx512(&a, &b)), want8);
                }
            }
        }
        let q = vec![-16383i16; 4096];
        let c = vec![-127i8; 4096];
        assert_eq!(dot_i16_i8(&q, &c), 4096 * 16383 * 127);
        assert_eq!(dot_i8(&c, &c), 4096 * 127 * 127);
        #[cfg(target_arch = "x86_64")]
        if has_avx512_vnni() {
            // SAFETY: AVX-512F/BW/VNNI are present (checked above).
            unsafe {
                assert_eq!(dot_i16_i8_avx512(&q, &c), 4096 * 16383 * 127);
                assert_eq!(dot_i8_avx512(&c, &c), 4096 * 127 * 127);
            }
        }
    }

    #[test]
    fn bounds_hold_the_kernel_score() {
        let mut s = 9;
        for dim in [1usize, 7, 16, 33, 384, 1000] {
            let gamma = kernel_gamma(dim);
            for scale in [1e-3f32, 1.0, 1e3] {
                let q: Vec<f32> = (0..dim).map(|_| lcg(&mut s) * scale).collect();
                let qc = QueryCodes::new(&q);
                for _ in 0..50 {
                    let x: Vec<f32> = (0..dim).map(|_| lcg(&mut s) * (1.0 / scale)).collect();
                    let mut c = vec![0i8; dim];
                    let rs = quantize_row(&x, &mut c);
                    let (u, v) = row_terms(&x, &c, rs, gamma);
                    let (lo, hi) = qc.bounds(&c, rs, u, v);
                    let k = f64::from(kernel::dot(&q, &x));
                    assert!(lo <= k && k <= hi, "dim {dim}: {lo} <= {k} <= {hi}");
                    // and the bound is useful: far narrower than the norms' product
                    assert!(hi - lo < 0.2 * qc.norm * f64::from(kernel::dot(&x, &x)).sqrt() + 1e-6);
                }
            }
        }
    }
}
