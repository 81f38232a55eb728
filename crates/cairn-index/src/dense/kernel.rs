//! The dense lane's arithmetic: one dot product with a fixed summation order.
//!
//! Scores must be reproducible bit for bit on every machine, so the kernel is plain Rust
//! arithmetic (no `target-cpu`, no runtime SIMD dispatch, no fused multiply-add: Rust never
//! contracts `a * b + c` on its own) with a summation order fixed by this code:
//!
//! 1. `LANES` = 16 independent `f32` accumulators. Component `i` of the leading
//!    `16 · ⌊n/16⌋` components is added into accumulator `i mod 16`, in increasing `i`:
//!    `acc[l] = (((0 + a[l]b[l]) + a[l+16]b[l+16]) + a[l+32]b[l+32]) + …`, each product
//!    rounded to `f32` before the addition.
//! 2. The accumulators are combined by a fixed pairwise tree: `acc[l] += acc[l + 8]` for
//!    `l < 8`, then `acc[l] += acc[l + 4]` for `l < 4`, then `+ 2`, then `+ 1`.
//! 3. The `n mod 16` trailing components are added to `acc[0]` one by one, in order.
//!
//! The 16 lanes are four SSE2 registers, so the loop vectorises on the baseline x86-64
//! target (and on aarch64's NEON baseline) without changing a single rounding: each lane's
//! sequence of operations is the same whatever width the compiler picks.

/// Number of independent accumulators (see the module docs).
pub(crate) const LANES: usize = 16;

/// The dot product of `a` and `b` in the documented fixed order.
///
/// Only the common prefix is used if the lengths differ (callers check dimensions first).
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; LANES];
    let mut ca = a.chunks_exact(LANES);
    let mut cb = b.chunks_exact(LANES);
    for (x, y) in (&mut ca).zip(&mut cb) {
        // Fixed-size views let the compiler drop bounds checks and keep `acc` in registers.
        if let (Ok(x), Ok(y)) = (<&[f32; LANES]>::try_from(x), <&[f32; LANES]>::try_from(y)) {
            for l in 0..LANES {
                acc[l] += x[l] * y[l];
            }
        }
    }
    let mut width = LANES / 2;
    while width > 0 {
        for l in 0..width {
            acc[l] += acc[l + width];
        }
        width /= 2;
    }
    let mut sum = acc[0];
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        sum += x * y;
    }
    sum
}

/// The documented order written out one operation at a time: the reference the tests hold
/// [`dot`] to, bit for bit.
#[cfg(test)]
pub(crate) fn dot_reference(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let full = n - n % LANES;
    let mut acc = [0.0f32; LANES];
    let mut i = 0;
    while i < full {
        acc[i % LANES] += a[i] * b[i];
        i += 1;
    }
    for width in [8, 4, 2, 1] {
        for l in 0..width {
            acc[l] += acc[l + width];
        }
    }
    let mut sum = acc[0];
    for j in full..n {
        sum += a[j] * b[j];
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    #[test]
    fn dot_matches_the_documented_order_bit_for_bit() {
        let mut s = 7;
        for n in [0usize, 1, 3, 15, 16, 17, 31, 32, 33, 100, 384, 385, 1000] {
            let a: Vec<f32> = (0..n).map(|_| lcg(&mut s) * 3.0).collect();
            let b: Vec<f32> = (0..n).map(|_| lcg(&mut s) * 1e-3).collect();
            assert_eq!(dot(&a, &b).to_bits(), dot_reference(&a, &b).to_bits(), "n = {n}");
            // And it is a dot product: close to the f64 sum.
            let exact: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            assert!(
                (f64::from(dot(&a, &b)) - exact).abs() <= 1e-5 * (1.0 + exact.abs()),
                "n = {n}"
            );
        }
    }

    #[test]
    fn dot_is_symmetric() {
        let mut s = 11;
        let a: Vec<f32> = (0..384).map(|_| lcg(&mut s)).collect();
        let b: Vec<f32> = (0..384).map(|_| lcg(&mut s)).collect();
        assert_eq!(dot(&a, &b).to_bits(), dot(&b, &a).to_bits());
    }
}
