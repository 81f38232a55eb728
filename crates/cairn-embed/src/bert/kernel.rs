//! The arithmetic of the forward pass: a matrix-product kernel and the element-wise
//! functions, each with one fixed sequence of floating-point operations per output
//! number, whichever CPU path runs it.
//!
//! # The contract
//!
//! A product element `c[i][j] = Σₖ a[i][k]·b[k][j] + bias[j]` is computed as
//!
//! ```text
//! acc = +0.0
//! for k in 0..K (increasing):  acc = fma(a[i][k], b[k][j], acc)   // one rounding
//! c[i][j] = acc + bias[j]                                          // (or acc)
//! ```
//!
//! A fused multiply-add is correctly rounded by IEEE 754, so this chain has exactly one
//! result whatever computes it: the AVX-512 and AVX2+FMA micro-kernels (vector lanes run
//! *across* output columns, never along the sum), and the portable kernel
//! ([`f32::mul_add`]: a hardware `fma` on aarch64, the C library's correctly rounded
//! `fmaf` on an x86-64 CPU without FMA). Tiles, edge tiles, zero padding and the way the
//! rows and columns are split between threads change who computes an element, never
//! how: the sum over `k` is never split, reordered or blocked. The element-wise
//! functions ([`exp_le0`], [`erf`], the fixed 8-lane sums) are written once, in plain
//! Rust with `mul_add`, and compiled twice: with AVX2+FMA enabled (vectorised by LLVM,
//! which keeps IEEE semantics: no reassociation, no contraction) and without.
//!
//! # Why not a crate
//!
//! `gemm` and `matrixmultiply` are fast, but they pick micro-kernels (and with them the
//! use of FMA) by CPU at run time, and `gemm` may split the `k` sum between threads or
//! block it differently by size: the bits of a row would depend on the CPU, the thread
//! count and the batch. The kernel here is small, and its one invariant (the chain
//! above) is checked by the tests against the portable path.

use std::sync::OnceLock;

/// Output columns per packed weight panel: one AVX-512 register, two AVX2 registers.
pub(crate) const NR: usize = 16;

/// Forces a kernel: `portable`, `avx2` or `avx512` (a kernel the CPU lacks falls back
/// to the best one below it). Read when a model is loaded.
pub(crate) const KERNEL_ENV: &str = "CAIRN_EMBED_KERNEL";

/// Which copy of the kernels runs. All give the same bits (see the module docs); only
/// the speed differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kernel {
    /// Plain Rust with `f32::mul_add`: any CPU.
    Portable,
    /// 6×16 register tiles with 256-bit FMA. Only made after the CPU reported AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
    /// 12×32 register tiles with 512-bit FMA. Only made after the CPU reported AVX-512F
    /// (and AVX2 and FMA, for the element-wise functions).
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub fn best() -> Kernel {
        static BEST: OnceLock<Kernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                let fma = std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
                if fma && std::arch::is_x86_feature_detected!("avx512f") {
                    return Kernel::Avx512;
                }
                if fma {
                    return Kernel::Avx2Fma;
                }
            }
            Kernel::Portable
        })
    }

    /// [`best`](Self::best), or what [`KERNEL_ENV`] asks for (capped at the best).
    pub fn from_env() -> Kernel {
        let best = Kernel::best();
        let asked = match std::env::var(KERNEL_ENV).ok().as_deref().map(str::trim) {
            Some("portable") => Kernel::Portable,
            #[cfg(target_arch = "x86_64")]
            Some("avx2") => Kernel::Avx2Fma,
            _ => best,
        };
        asked.min(best)
    }

    /// A short name: `portable`, `avx2+fma`, `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2Fma => "avx2+fma",
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => "avx512",
        }
    }

    /// Whether the CPU runs AVX2 and FMA (true for every kernel but the portable one).
    #[cfg(target_arch = "x86_64")]
    pub fn has_fma(self) -> bool {
        self != Kernel::Portable
    }
}

/// Weights packed for the kernel: `ceil(n / NR)` panels of `k × NR` (row `kk` of panel
/// `p` holds `B[kk][p·NR .. p·NR + NR]`; columns past `n` are zero).
pub(crate) fn pack_b(k: usize, n: usize, at: impl Fn(usize, usize) -> f32) -> Vec<f32> {
    let np = n.div_ceil(NR);
    let mut panels = vec![0.0f32; np * k * NR];
    for (p, panel) in panels.chunks_exact_mut(k * NR).enumerate() {
        for (kk, row) in panel.chunks_exact_mut(NR).enumerate() {
            for (c, v) in row.iter_mut().enumerate().take(n - p * NR) {
                *v = at(kk, p * NR + c);
            }
        }
    }
    panels
}

/// `c[i·ldc + j] = Σₖ a[i·lda + k]·B[k][j] (+ bias[j])` for `i < m`, `j < n`, with `B`
/// packed by [`pack_b`] (`k` rows, `n` columns). One thread; every element by the chain
/// of the module docs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm(
    kern: Kernel,
    a: &[f32],
    lda: usize,
    m: usize,
    k: usize,
    b: &[f32],
    n: usize,
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        k > 0 && lda >= k && (m - 1) * lda + k <= a.len(),
        "gemm: a is too short"
    );
    assert!(b.len() >= n.div_ceil(NR) * k * NR, "gemm: b is too short");
    assert!(ldc >= n && (m - 1) * ldc + n <= c.len(), "gemm: c is too short");
    assert!(bias.is_none_or(|b| b.len() >= n), "gemm: bias is too short");
    let g = Gemm {
        a,
        lda,
        m,
        k,
        b,
        n,
        bias,
    };
    match kern {
        Kernel::Portable => g.run::<6>(1, c, ldc, &tile_portable),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2Fma => g.run::<6>(1, c, ldc, &|ap, bp, k, _pw, out| {
            // SAFETY: `Kernel::Avx2Fma` is only made after the CPU reported AVX2 and FMA.
            unsafe { x86::tile_avx2(ap, bp, k, out) }
        }),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => g.run::<12>(2, c, ldc, &|ap, bp, k, pw, out| {
            // SAFETY: `Kernel::Avx512` is only made after the CPU reported AVX-512F.
            unsafe { x86::tile_avx512(ap, bp, k, pw, out) }
        }),
    }
}

/// A micro-kernel: `out[r][c] = Σₖ ap[kk·MR + r] · bp[panel c/NR][kk·NR + c%NR]` for the
/// `pw` panels of `bp` (each `k·NR` long).
type Tile<'t, const MR: usize> = dyn Fn(&[f32], &[f32], usize, usize, &mut [[f32; 2 * NR]; MR]) + 't;

/// One product's operands (see [`gemm`]).
struct Gemm<'a> {
    a: &'a [f32],
    lda: usize,
    m: usize,
    k: usize,
    b: &'a [f32],
    n: usize,
    bias: Option<&'a [f32]>,
}

impl Gemm<'_> {
    /// Packs `a` in tiles of `MR` rows (`k`-major, zero rows past `m`), then runs the
    /// micro-kernel over every (panel group of ≤ `pw_max` panels, row tile) and writes
    /// the valid part of each tile, plus the bias.
    fn run<const MR: usize>(&self, pw_max: usize, c: &mut [f32], ldc: usize, tile: &Tile<'_, MR>) {
        let (m, k, n) = (self.m, self.k, self.n);
        let tiles = m.div_ceil(MR);
        let mut ap = vec![0.0f32; tiles * k * MR];
        for i in 0..m {
            let row = &self.a[i * self.lda..i * self.lda + k];
            let dst = &mut ap[(i / MR) * k * MR..(i / MR + 1) * k * MR];
            for (d, &v) in dst.chunks_exact_mut(MR).zip(row) {
                d[i % MR] = v;
            }
        }
        let np = n.div_ceil(NR);
        let mut buf = [[0.0f32; 2 * NR]; MR];
        let mut p = 0;
        while p < np {
            let pw = pw_max.min(np - p);
            let bp = &self.b[p * k * NR..(p + pw) * k * NR];
            let c0 = p * NR;
            let width = (pw * NR).min(n - c0);
            for (t, at) in ap.chunks_exact(k * MR).enumerate() {
                tile(at, bp, k, pw, &mut buf);
                let i0 = t * MR;
                for (r, acc) in buf.iter().enumerate().take(m - i0) {
                    let out = &mut c[(i0 + r) * ldc + c0..(i0 + r) * ldc + c0 + width];
                    match self.bias {
                        Some(bias) => {
                            for ((o, &s), &bv) in out.iter_mut().zip(acc).zip(&bias[c0..c0 + width]) {
                                *o = s + bv;
                            }
                        }
                        None => out.copy_from_slice(&acc[..width]),
                    }
                }
            }
            p += pw;
        }
    }
}

/// The portable micro-kernel: 6 rows × one panel, `f32::mul_add` in increasing `k`.
fn tile_portable(ap: &[f32], bp: &[f32], k: usize, _pw: usize, out: &mut [[f32; 2 * NR]; 6]) {
    let mut acc = [[0.0f32; NR]; 6];
    for (ak, bk) in ap.chunks_exact(6).zip(bp.chunks_exact(NR)).take(k) {
        for (accr, &x) in acc.iter_mut().zip(ak) {
            for (s, &w) in accr.iter_mut().zip(bk) {
                *s = x.mul_add(w, *s);
            }
        }
    }
    for (o, a) in out.iter_mut().zip(&acc) {
        o[..NR].copy_from_slice(a);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::NR;

    /// 6 rows × 16 columns with 12 accumulators; `acc = fma(a, b, acc)` in increasing `k`.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile_avx2(ap: &[f32], bp: &[f32], k: usize, out: &mut [[f32; 2 * NR]; 6]) {
        assert!(ap.len() >= 6 * k && bp.len() >= NR * k);
        let mut acc = [[_mm256_setzero_ps(); 2]; 6];
        for (ak, bk) in ap.chunks_exact(6).zip(bp.chunks_exact(NR)).take(k) {
            // SAFETY: `bk` is NR = 16 floats long: two 8-float loads fit.
            let (b0, b1) = unsafe { (_mm256_loadu_ps(bk.as_ptr()), _mm256_loadu_ps(bk.as_ptr().add(8))) };
            for (accr, &x) in acc.iter_mut().zip(ak) {
                let xv = _mm256_set1_ps(x);
                accr[0] = _mm256_fmadd_ps(xv, b0, accr[0]);
                accr[1] = _mm256_fmadd_ps(xv, b1, accr[1]);
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            // SAFETY: `o` is 32 floats long: two 8-float stores at 0 and 8 fit.
            unsafe {
                _mm256_storeu_ps(o.as_mut_ptr(), a[0]);
                _mm256_storeu_ps(o.as_mut_ptr().add(8), a[1]);
            }
        }
    }

    /// 12 rows × `pw` (1 or 2) panels of 16 columns; `acc = fma(a, b, acc)` in increasing `k`.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile_avx512(ap: &[f32], bp: &[f32], k: usize, pw: usize, out: &mut [[f32; 2 * NR]; 12]) {
        if pw == 2 {
            tile_avx512_w::<2>(ap, bp, k, out);
        } else {
            tile_avx512_w::<1>(ap, bp, k, out);
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn tile_avx512_w<const W: usize>(ap: &[f32], bp: &[f32], k: usize, out: &mut [[f32; 2 * NR]; 12]) {
        assert!(ap.len() >= 12 * k && bp.len() >= W * NR * k);
        let b0 = &bp[..NR * k];
        // With one panel, the second stream repeats the first (its loads go unused).
        let b1 = if W == 2 { &bp[NR * k..2 * NR * k] } else { b0 };
        let mut acc = [[_mm512_setzero_ps(); W]; 12];
        for ((ak, bk0), bk1) in ap
            .chunks_exact(12)
            .zip(b0.chunks_exact(NR))
            .zip(b1.chunks_exact(NR))
            .take(k)
        {
            // SAFETY: `bk0` and `bk1` are NR = 16 floats long: one 16-float load each.
            let bv = unsafe { [_mm512_loadu_ps(bk0.as_ptr()), _mm512_loadu_ps(bk1.as_ptr())] };
            for (accr, &x) in acc.iter_mut().zip(ak) {
                let xv = _mm512_set1_ps(x);
                for w in 0..W {
                    accr[w] = _mm512_fmadd_ps(xv, bv[w], accr[w]);
                }
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            for (w, v) in a.iter().enumerate() {
                // SAFETY: `o` is 32 floats long and w < 2: a 16-float store at 16·w fits.
                unsafe { _mm512_storeu_ps(o.as_mut_ptr().add(w * NR), *v) };
            }
        }
    }
}

/// Defines `fn NAME(kern: Kernel, ARGS…)` whose body is compiled twice: with AVX2 and FMA
/// enabled (run when `kern` says the CPU has them; LLVM vectorises it) and plain. Both
/// copies do the same IEEE operations, `mul_add` included, so they give the same bits.
macro_rules! fma_fn {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$attr])*
        $vis fn $name(kern: $crate::bert::kernel::Kernel, $($arg: $ty),*) {
            #[inline(always)]
            fn body($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn body_fma($($arg: $ty),*) {
                body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if kern.has_fma() {
                // SAFETY: `has_fma` is true only for kernels made after the CPU reported
                // AVX2 and FMA.
                unsafe { body_fma($($arg),*) };
                return;
            }
            let _ = kern;
            body($($arg),*)
        }
    };
}
pub(crate) use fma_fn;

/// `e^x` for `x ≤ 0` (inputs below −87 give `e^−87`; within 2 ulp of the true value
/// elsewhere): a range reduction `x = n·ln2 + r` and a degree-6 polynomial, all fused
/// multiply-adds, so the same bits on every path.
#[inline(always)]
pub(crate) fn exp_le0(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5·2²³: adding it rounds to an integer
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 0.0);
    let t = x.mul_add(std::f32::consts::LOG2_E, MAGIC);
    let n = t - MAGIC; // an integer in [-126, 0]
    let r = n.mul_add(-LN2_HI, x);
    let r = n.mul_add(-LN2_LO, r);
    let p = 1.987_569_1e-4f32
        .mul_add(r, 1.398_199_9e-3)
        .mul_add(r, 8.333_452e-3)
        .mul_add(r, 4.166_579_6e-2)
        .mul_add(r, 1.666_666_5e-1)
        .mul_add(r, 5.000_000_1e-1);
    let y = p.mul_add(r * r, r) + 1.0;
    let e = (t.to_bits() as i32 - MAGIC.to_bits() as i32 + 127) as u32;
    y * f32::from_bits(e << 23)
}

/// `erf(x)` to within 5e-7 absolute (Abramowitz & Stegun 7.1.26, with [`exp_le0`]).
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / 0.327_591_1f32.mul_add(a, 1.0);
    let r = 1.061_405_4f32
        .mul_add(t, -1.453_152)
        .mul_add(t, 1.421_413_8)
        .mul_add(t, -0.284_496_74)
        .mul_add(t, 0.254_829_6);
    let e = exp_le0(-(a * a));
    (-(r * t)).mul_add(e, 1.0).copysign(x)
}

/// Exact GELU `x·½·(1 + erf(x/√2))`, as `fma(x/2, erf(x/√2), x/2)`.
#[inline(always)]
pub(crate) fn gelu(x: f32) -> f32 {
    let half = 0.5 * x;
    half.mul_add(erf(x * std::f32::consts::FRAC_1_SQRT_2), half)
}

/// `Σ xs` in 8 fixed lanes (`xs[j]` goes to lane `j % 8`, summed in increasing `j`), the
/// lanes then added as `((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7))`.
#[inline(always)]
pub(crate) fn sum8(xs: &[f32]) -> f32 {
    lanes8(xs, |l, v| l + v)
}

/// `Σ xs²` in the lanes of [`sum8`], each step a fused `fma(x, x, lane)`.
#[inline(always)]
pub(crate) fn sum_sq8(xs: &[f32]) -> f32 {
    lanes8(xs, |l, v| v.mul_add(v, l))
}

#[inline(always)]
fn lanes8(xs: &[f32], step: impl Fn(f32, f32) -> f32) -> f32 {
    let mut l = [0.0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (li, &v) in l.iter_mut().zip(c) {
            *li = step(*li, v);
        }
    }
    for (li, &v) in l.iter_mut().zip(chunks.remainder()) {
        *li = step(*li, v);
    }
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        }
    }

    fn kernels() -> Vec<Kernel> {
        let mut v = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if Kernel::best() >= Kernel::Avx2Fma {
                v.push(Kernel::Avx2Fma);
            }
            if Kernel::best() >= Kernel::Avx512 {
                v.push(Kernel::Avx512);
            }
        }
        v
    }

    /// Every kernel, on odd shapes (edge tiles, odd panel counts, strided `a` and `c`),
    /// equals the chain of the module docs written out one element at a time.
    #[test]
    fn every_kernel_computes_the_documented_chain() {
        let mut rng = Rng(7);
        for &(m, k, n) in &[
            (1, 1, 1),
            (5, 3, 17),
            (13, 32, 48),
            (25, 37, 33),
            (7, 384, 64),
            (30, 9, 100),
        ] {
            let lda = k + 3;
            let ldc = n + 5;
            let a: Vec<f32> = (0..m * lda).map(|_| rng.next()).collect();
            let w: Vec<f32> = (0..k * n).map(|_| rng.next()).collect();
            let bias: Vec<f32> = (0..n).map(|_| rng.next()).collect();
            let b = pack_b(k, n, |kk, j| w[kk * n + j]);
            let mut want = vec![0.0f32; m * ldc];
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0.0f32;
                    for kk in 0..k {
                        acc = a[i * lda + kk].mul_add(w[kk * n + j], acc);
                    }
                    want[i * ldc + j] = acc + bias[j];
                }
            }
            for kern in kernels() {
                let mut c = vec![0.0f32; m * ldc];
                gemm(kern, &a, lda, m, k, &b, n, Some(&bias), &mut c, ldc);
                let same = c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{} kernel, m={m} k={k} n={n}", kern.name());
            }
        }
    }

    fma_fn! {
        fn gelu_all(xs: &mut [f32]) {
            for v in xs.iter_mut() {
                *v = gelu(*v);
            }
        }
    }

    #[test]
    fn element_wise_functions_are_accurate_and_the_same_on_every_path() {
        let xs: Vec<f32> = (-4000..=4000).map(|i| i as f32 * 0.0025).collect();
        for &x in &xs {
            let xin = -x.abs() * 8.7;
            let e = exp_le0(xin) as f64;
            let want = (xin as f64).exp();
            assert!((e - want).abs() <= 3e-7 * want, "exp({xin}) = {e}, want {want}");
            let g = erf(x) as f64;
            assert!((g - libm::erf(x as f64)).abs() < 5e-7, "erf({x}) = {g}");
        }
        let plain: Vec<u32> = xs.iter().map(|&x| gelu(x).to_bits()).collect();
        for kern in kernels() {
            let mut v = xs.clone();
            gelu_all(kern, &mut v);
            assert!(
                v.iter().map(|x| x.to_bits()).eq(plain.iter().copied()),
                "{}",
                kern.name()
            );
        }
        assert_eq!(exp_le0(0.0), 1.0);
        assert_eq!(exp_le0(f32::NEG_INFINITY), exp_le0(-87.0));
    }
}
