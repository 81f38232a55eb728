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

    /// Rows per micro-kernel tile (and per tile of packed `a`).
    pub fn mr(self) -> usize {
        match self {
            Kernel::Portable => 6,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2Fma => 6,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => 12,
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

/// [`pack_b`] of the `k × n` matrix `b` (`b.data[kk·rs + j·ks]`), with contiguous
/// copies when its rows (`ks == 1`) or its columns (`rs == 1`) are contiguous.
pub(crate) fn pack_b_from(b: Strided<'_>, k: usize, n: usize) -> Vec<f32> {
    let np = n.div_ceil(NR);
    let mut panels = vec![0.0f32; np * k * NR];
    if k == 0 || n == 0 {
        return panels;
    }
    assert!((k - 1) * b.rs + (n - 1) * b.ks < b.data.len(), "pack_b: b is too short");
    for (p, panel) in panels.chunks_exact_mut(k * NR).enumerate() {
        let w = NR.min(n - p * NR);
        if b.ks == 1 {
            for (kk, row) in panel.chunks_exact_mut(NR).enumerate() {
                let at = kk * b.rs + p * NR;
                copy_prefix(row, &b.data[at..at + w], w);
            }
        } else if b.rs == 1 {
            for c in 0..w {
                let at = (p * NR + c) * b.ks;
                for (v, &x) in panel[c..].iter_mut().step_by(NR).zip(&b.data[at..at + k]) {
                    *v = x;
                }
            }
        } else {
            for (kk, row) in panel.chunks_exact_mut(NR).enumerate() {
                for (c, v) in row.iter_mut().enumerate().take(w) {
                    *v = b.data[kk * b.rs + (p * NR + c) * b.ks];
                }
            }
        }
    }
    panels
}

/// A matrix read as `data[i·rs + kk·ks]` (row `i`, column `kk`): row-major when
/// `ks == 1`, column-major (a transposed row-major matrix) when `rs == 1`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strided<'a> {
    pub data: &'a [f32],
    /// Step between rows.
    pub rs: usize,
    /// Step between columns.
    pub ks: usize,
}

impl Strided<'_> {
    /// A row-major matrix whose rows start `lda` apart.
    pub fn rows(data: &[f32], lda: usize) -> Strided<'_> {
        Strided { data, rs: lda, ks: 1 }
    }
}

/// Packs row tiles `first..` of `a` (`m` rows, `k` columns) into `out` (whole tiles):
/// tile `t` holds rows `t·mr .. t·mr + mr`, `k`-major (`out[kk·mr + r]`), zero rows
/// past `m`. Pure copies: packing changes no bit.
pub(crate) fn pack_a(mr: usize, a: Strided<'_>, m: usize, k: usize, first: usize, out: &mut [f32]) {
    assert!(k > 0 && out.len().is_multiple_of(k * mr));
    for (t, tile) in out.chunks_exact_mut(k * mr).enumerate() {
        let i0 = (first + t) * mr;
        let rows = mr.min(m.saturating_sub(i0));
        if rows < mr {
            tile.fill(0.0);
        }
        if rows == 0 {
            continue;
        }
        assert!(
            (i0 + rows - 1) * a.rs + (k - 1) * a.ks < a.data.len(),
            "pack_a: a is too short"
        );
        if a.rs == 1 {
            for (kk, d) in tile.chunks_exact_mut(mr).enumerate() {
                d[..rows].copy_from_slice(&a.data[kk * a.ks + i0..kk * a.ks + i0 + rows]);
            }
        } else if a.ks == 1 {
            // 16 columns at a time: one fixed-size read per row, the writes within a
            // 16 × mr block.
            for (r, i) in (i0..i0 + rows).enumerate() {
                let row = &a.data[i * a.rs..i * a.rs + k];
                let mut chunks = row.chunks_exact(16);
                for (c, src) in (&mut chunks).enumerate() {
                    let src: &[f32; 16] = src.try_into().expect("16 columns");
                    let dst = &mut tile[c * 16 * mr..(c + 1) * 16 * mr];
                    for (j, &v) in src.iter().enumerate() {
                        dst[j * mr + r] = v;
                    }
                }
                let k0 = k - chunks.remainder().len();
                for (j, &v) in chunks.remainder().iter().enumerate() {
                    tile[(k0 + j) * mr + r] = v;
                }
            }
        } else {
            for (kk, d) in tile.chunks_exact_mut(mr).enumerate() {
                for (r, v) in d.iter_mut().enumerate().take(rows) {
                    *v = a.data[(i0 + r) * a.rs + kk * a.ks];
                }
            }
        }
    }
}

/// `c[i][j] = Σₖ a[i][k]·B[k][j] (+ bias[j])` for `i < m`, `j < n`, with `B` packed by
/// [`pack_b`] (`k` rows, `n` columns) and `c` given as its `m` rows (each at least `n`
/// long). One thread; every element by the chain of the module docs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm(
    kern: Kernel,
    a: Strided<'_>,
    m: usize,
    k: usize,
    b: &[f32],
    n: usize,
    bias: Option<&[f32]>,
    c: &mut [&mut [f32]],
) {
    if m == 0 || n == 0 {
        return;
    }
    let mr = kern.mr();
    let mut ap = vec![0.0f32; m.div_ceil(mr) * k * mr];
    pack_a(mr, a, m, k, 0, &mut ap);
    gemm_tiled(kern, TiledA::packed(&ap, k, mr), m, k, b, n, bias, c);
}

/// The left operand as the micro-kernels read it, in tiles of [`Kernel::mr`] rows:
/// row `t·mr + r`, column `kk` is `data[t·tile_step + kk·ks + r]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TiledA<'a> {
    pub data: &'a [f32],
    /// Step between tiles.
    pub tile_step: usize,
    /// Step between columns (at least `mr`).
    pub ks: usize,
}

impl TiledA<'_> {
    /// Tiles packed by [`pack_a`] for `k` columns.
    pub fn packed(data: &[f32], k: usize, mr: usize) -> TiledA<'_> {
        TiledA {
            data,
            tile_step: k * mr,
            ks: mr,
        }
    }
}

/// [`gemm`] with `a` already in tiles (packed by [`pack_a`], or a column-major matrix
/// whose columns are padded to whole tiles: `TiledA { tile_step: mr, ks: ld }`); the
/// values of the tiles' rows past `m` do not matter (those rows are computed and dropped).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_tiled(
    kern: Kernel,
    a: TiledA<'_>,
    m: usize,
    k: usize,
    b: &[f32],
    n: usize,
    bias: Option<&[f32]>,
    c: &mut [&mut [f32]],
) {
    if m == 0 || n == 0 {
        return;
    }
    let mr = kern.mr();
    assert!(
        k > 0 && a.ks >= mr && (m.div_ceil(mr) - 1) * a.tile_step + (k - 1) * a.ks + mr <= a.data.len(),
        "gemm: a is too short"
    );
    assert!(b.len() >= n.div_ceil(NR) * k * NR, "gemm: b is too short");
    assert!(
        c.len() >= m && c.iter().all(|row| row.len() >= n),
        "gemm: c is too short"
    );
    assert!(bias.is_none_or(|b| b.len() >= n), "gemm: bias is too short");
    let g = Gemm { a, m, k, b, n, bias };
    match kern {
        Kernel::Portable => g.run::<6>(1, c, &tile_portable),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2Fma => g.run::<6>(1, c, &|a, ks, b0, _b1, kl, io| {
            // SAFETY: `Kernel::Avx2Fma` is only made after the CPU reported AVX2 and FMA.
            unsafe { x86::tile_avx2(a, ks, b0, kl, io) }
        }),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => g.run::<12>(2, c, &|a, ks, b0, b1, kl, io| {
            let two = !std::ptr::eq(b0, b1);
            // SAFETY: `Kernel::Avx512` is only made after the CPU reported AVX-512F.
            unsafe { x86::tile_avx512(a, ks, b0, b1, kl, two, io) }
        }),
    }
}

/// A micro-kernel call: one block of `kl` steps of the sum for one tile of `MR` rows
/// (`a`: column `kk` at `a[kk·ks ..]`) and one (`b0`) or two (`b0`, `b1`) panels. For
/// each valid element `c[r][c]` of `io`:
/// `c = fma(a[kl−1][r], b[kl−1][c], … fma(a[0][r], b[0][c], init) …)`, where `init` is
/// `+0.0` on the first block, else the value in `c` (the sum so far); plus the bias
/// on the last block.
type Tile<'t, const MR: usize> = dyn Fn(&[f32], usize, &[f32], &[f32], usize, &mut TileIo<'_, '_>) + 't;

/// Where a micro-kernel call reads and writes its sums: columns `c0 .. c0 + width` of
/// `rows` (the tile's valid rows).
pub(crate) struct TileIo<'c, 'r> {
    rows: &'c mut [&'r mut [f32]],
    c0: usize,
    width: usize,
    /// The first block of the sum: start from `+0.0`, not from `rows`.
    first: bool,
    /// On the last block, the bias from column `c0` on.
    bias: Option<&'c [f32]>,
}

impl TileIo<'_, '_> {
    /// Whether the tile is whole: `mr` valid rows, `w` whole panels of columns.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline(always)]
    fn whole(&self, mr: usize, w: usize) -> bool {
        self.rows.len() == mr && self.width == w * NR
    }

    /// The sums so far into `buf` (valid rows and columns only).
    #[inline(always)]
    fn load<const MR: usize>(&self, buf: &mut [[f32; 2 * NR]; MR]) {
        for (acc, row) in buf.iter_mut().zip(self.rows.iter()) {
            copy_prefix(acc, &row[self.c0..], self.width);
        }
    }

    /// `buf` (plus the bias, on the last block) into the valid rows and columns.
    #[inline(always)]
    fn store<const MR: usize>(&mut self, buf: &[[f32; 2 * NR]; MR]) {
        let (c0, width) = (self.c0, self.width);
        for (acc, row) in buf.iter().zip(self.rows.iter_mut()) {
            let out = &mut row[c0..c0 + width];
            match self.bias {
                Some(bias) => {
                    for ((o, &s), &bv) in out.iter_mut().zip(acc).zip(&bias[..width]) {
                        *o = s + bv;
                    }
                }
                None => copy_prefix(out, acc, width),
            }
        }
    }
}

/// Steps of the sum per block (about): a tile of packed `a` (≤ 12 rows) and two weight
/// panels of a block stay in the L1 cache while the row tiles take their turn. Blocking
/// only pauses each element's chain (its running sum waits, exactly, in `c`); the order
/// of the steps is unchanged.
const KC: usize = 192;

/// One product's operands (see [`gemm_tiled`]).
struct Gemm<'a> {
    a: TiledA<'a>,
    m: usize,
    k: usize,
    b: &'a [f32],
    n: usize,
    bias: Option<&'a [f32]>,
}

impl Gemm<'_> {
    /// For every group of ≤ `pw_max` panels, every block of the sum and every row tile:
    /// the micro-kernel, continuing the sums kept in `c` after the first block.
    fn run<const MR: usize>(&self, pw_max: usize, c: &mut [&mut [f32]], tile: &Tile<'_, MR>) {
        let (m, k, n) = (self.m, self.k, self.n);
        let tiles = m.div_ceil(MR);
        let kc = k.div_ceil(k.div_ceil(KC));
        let np = n.div_ceil(NR);
        let (data, step, ks) = (self.a.data, self.a.tile_step, self.a.ks);
        let mut p = 0;
        while p < np {
            let pw = pw_max.min(np - p);
            let c0 = p * NR;
            let width = (pw * NR).min(n - c0);
            let mut k0 = 0;
            while k0 < k {
                let kl = kc.min(k - k0);
                let (first, last) = (k0 == 0, k0 + kl == k);
                let b0 = &self.b[p * k * NR + k0 * NR..p * k * NR + (k0 + kl) * NR];
                let b1 = if pw == 2 {
                    &self.b[(p + 1) * k * NR + k0 * NR..(p + 1) * k * NR + (k0 + kl) * NR]
                } else {
                    b0
                };
                for t in 0..tiles {
                    let i0 = t * MR;
                    let at = t * step + k0 * ks;
                    let a = &data[at..at + (kl - 1) * ks + MR];
                    let mut io = TileIo {
                        rows: &mut c[i0..i0 + MR.min(m - i0)],
                        c0,
                        width,
                        first,
                        bias: self.bias.filter(|_| last).map(|b| &b[c0..]),
                    };
                    tile(a, ks, b0, b1, kl, &mut io);
                }
                k0 += kl;
            }
            p += pw;
        }
    }
}

/// `dst[..len] = src[..len]`, with fixed-size copies for the usual lengths (a
/// variable-length `copy_from_slice` is a call to `memmove`).
#[inline(always)]
fn copy_prefix(dst: &mut [f32], src: &[f32], len: usize) {
    match len {
        32 => dst[..32].copy_from_slice(&src[..32]),
        16 => dst[..16].copy_from_slice(&src[..16]),
        12 => dst[..12].copy_from_slice(&src[..12]),
        6 => dst[..6].copy_from_slice(&src[..6]),
        _ => dst[..len].copy_from_slice(&src[..len]),
    }
}

/// The portable micro-kernel: 6 rows × one panel, `f32::mul_add` in increasing `k`.
fn tile_portable(a: &[f32], ks: usize, b0: &[f32], _b1: &[f32], kl: usize, io: &mut TileIo<'_, '_>) {
    let mut buf = [[0.0f32; 2 * NR]; 6];
    if !io.first {
        io.load(&mut buf);
    }
    for (kk, bk) in b0.chunks_exact(NR).take(kl).enumerate() {
        for (accr, &x) in buf.iter_mut().zip(&a[kk * ks..kk * ks + 6]) {
            for (s, &w) in accr.iter_mut().zip(bk) {
                *s = x.mul_add(w, *s);
            }
        }
    }
    io.store(&buf);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{TileIo, NR};

    /// 6 rows × 16 columns with 12 accumulators: the contract of [`super::Tile`].
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile_avx2(a: &[f32], ks: usize, bp: &[f32], kl: usize, io: &mut TileIo<'_, '_>) {
        assert!(kl > 0 && a.len() > (kl - 1) * ks + 5 && bp.len() >= NR * kl);
        let whole = io.whole(6, 1);
        let mut acc = [[_mm256_setzero_ps(); 2]; 6];
        if !io.first {
            // An edge tile's sums go through a buffer (made only then).
            let mut buf = [[0.0f32; 2 * NR]; 6];
            if !whole {
                io.load(&mut buf);
            }
            for (r, acc) in acc.iter_mut().enumerate() {
                let src = if whole {
                    &io.rows[r][io.c0..io.c0 + NR]
                } else {
                    &buf[r][..NR]
                };
                // SAFETY: `src` is NR = 16 floats long: two 8-float loads at 0 and 8 fit.
                unsafe { *acc = [_mm256_loadu_ps(src.as_ptr()), _mm256_loadu_ps(src.as_ptr().add(8))] };
            }
        }
        for (kk, bk) in bp.chunks_exact(NR).take(kl).enumerate() {
            // SAFETY: `bk` is NR = 16 floats long: two 8-float loads fit.
            let (b0, b1) = unsafe { (_mm256_loadu_ps(bk.as_ptr()), _mm256_loadu_ps(bk.as_ptr().add(8))) };
            for (accr, &x) in acc.iter_mut().zip(&a[kk * ks..kk * ks + 6]) {
                let xv = _mm256_set1_ps(x);
                accr[0] = _mm256_fmadd_ps(xv, b0, accr[0]);
                accr[1] = _mm256_fmadd_ps(xv, b1, accr[1]);
            }
        }
        if whole {
            let (c0, bias) = (io.c0, io.bias);
            for (row, mut v) in io.rows.iter_mut().zip(acc) {
                if let Some(bias) = bias {
                    // SAFETY: `bias` holds the tile's 16 columns: two 8-float loads fit.
                    unsafe {
                        v[0] = _mm256_add_ps(v[0], _mm256_loadu_ps(bias.as_ptr()));
                        v[1] = _mm256_add_ps(v[1], _mm256_loadu_ps(bias[8..16].as_ptr()));
                    }
                }
                let dst = &mut row[c0..c0 + NR];
                // SAFETY: `dst` is 16 floats long: two 8-float stores at 0 and 8 fit.
                unsafe {
                    _mm256_storeu_ps(dst.as_mut_ptr(), v[0]);
                    _mm256_storeu_ps(dst.as_mut_ptr().add(8), v[1]);
                }
            }
        } else {
            let mut buf = [[0.0f32; 2 * NR]; 6];
            for (o, v) in buf.iter_mut().zip(acc) {
                // SAFETY: `o` is 32 floats long: two 8-float stores at 0 and 8 fit.
                unsafe {
                    _mm256_storeu_ps(o.as_mut_ptr(), v[0]);
                    _mm256_storeu_ps(o.as_mut_ptr().add(8), v[1]);
                }
            }
            io.store(&buf);
        }
    }

    /// 12 rows × one (`b0`) or two (`b0`, `b1`) panels of 16 columns, with 12 or 24
    /// accumulators: the contract of [`super::Tile`].
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile_avx512(
        a: &[f32],
        ks: usize,
        b0: &[f32],
        b1: &[f32],
        kl: usize,
        two: bool,
        io: &mut TileIo<'_, '_>,
    ) {
        if two {
            tile_avx512_w::<2>(a, ks, b0, b1, kl, io);
        } else {
            tile_avx512_w::<1>(a, ks, b0, b0, kl, io);
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn tile_avx512_w<const W: usize>(a: &[f32], ks: usize, b0: &[f32], b1: &[f32], kl: usize, io: &mut TileIo<'_, '_>) {
        assert!(kl > 0 && a.len() > (kl - 1) * ks + 11 && b0.len() >= NR * kl && b1.len() >= NR * kl);
        let whole = io.whole(12, W);
        let mut acc = [[_mm512_setzero_ps(); W]; 12];
        if !io.first && whole {
            for (acc, row) in acc.iter_mut().zip(io.rows.iter()) {
                for (w, v) in acc.iter_mut().enumerate() {
                    let src = &row[io.c0 + w * NR..io.c0 + (w + 1) * NR];
                    // SAFETY: `src` is 16 floats long: one 16-float load fits.
                    *v = unsafe { _mm512_loadu_ps(src.as_ptr()) };
                }
            }
        } else if !io.first {
            // An edge tile's sums go through a buffer (made only here and below: zeroing
            // it costs a `memset` call).
            let mut buf = [[0.0f32; 2 * NR]; 12];
            io.load(&mut buf);
            for (acc, o) in acc.iter_mut().zip(&buf) {
                for (w, v) in acc.iter_mut().enumerate() {
                    // SAFETY: `o` is 32 floats long and w < 2: a 16-float load at 16·w fits.
                    *v = unsafe { _mm512_loadu_ps(o.as_ptr().add(w * NR)) };
                }
            }
        }
        // With one panel, `b1` is `b0` and its loads go unused.
        for ((kk, bk0), bk1) in (0..kl).zip(b0.chunks_exact(NR)).zip(b1.chunks_exact(NR)) {
            // SAFETY: `bk0` and `bk1` are NR = 16 floats long: one 16-float load each.
            let bv = unsafe { [_mm512_loadu_ps(bk0.as_ptr()), _mm512_loadu_ps(bk1.as_ptr())] };
            for (accr, &x) in acc.iter_mut().zip(&a[kk * ks..kk * ks + 12]) {
                let xv = _mm512_set1_ps(x);
                for w in 0..W {
                    accr[w] = _mm512_fmadd_ps(xv, bv[w], accr[w]);
                }
            }
        }
        if whole {
            let (c0, bias) = (io.c0, io.bias);
            for (row, v) in io.rows.iter_mut().zip(acc) {
                for (w, mut v) in v.into_iter().enumerate() {
                    if let Some(bias) = bias {
                        let b = &bias[w * NR..(w + 1) * NR];
                        // SAFETY: `b` is 16 floats long: one 16-float load fits.
                        v = _mm512_add_ps(v, unsafe { _mm512_loadu_ps(b.as_ptr()) });
                    }
                    let dst = &mut row[c0 + w * NR..c0 + (w + 1) * NR];
                    // SAFETY: `dst` is 16 floats long: one 16-float store fits.
                    unsafe { _mm512_storeu_ps(dst.as_mut_ptr(), v) };
                }
            }
        } else {
            let mut buf = [[0.0f32; 2 * NR]; 12];
            for (o, v) in buf.iter_mut().zip(acc) {
                for (w, v) in v.into_iter().enumerate() {
                    // SAFETY: `o` is 32 floats long and w < 2: a 16-float store at 16·w fits.
                    unsafe { _mm512_storeu_ps(o.as_mut_ptr().add(w * NR), v) };
                }
            }
            io.store(&buf);
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
        .mul_add(r, 0.5);
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

    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
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
                let mut rows: Vec<&mut [f32]> = c.chunks_mut(ldc).collect();
                gemm(kern, Strided::rows(&a, lda), m, k, &b, n, Some(&bias), &mut rows);
                let same = c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{} kernel, m={m} k={k} n={n}", kern.name());
                // The same `a` stored transposed (column-major).
                let at: Vec<f32> = (0..k * m).map(|x| a[(x % m) * lda + x / m]).collect();
                let mut c = vec![0.0f32; m * ldc];
                let mut rows: Vec<&mut [f32]> = c.chunks_mut(ldc).collect();
                let a_cols = Strided {
                    data: &at,
                    rs: 1,
                    ks: m,
                };
                gemm(kern, a_cols, m, k, &b, n, Some(&bias), &mut rows);
                let same = c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{} kernel, column-major a, m={m} k={k} n={n}", kern.name());
                // Read in place as tiles, the columns padded to whole tiles (with junk).
                let ld = m.div_ceil(12) * 12;
                let ap: Vec<f32> = (0..k * ld)
                    .map(|x| if x % ld < m { at[(x / ld) * m + x % ld] } else { 1e30 })
                    .collect();
                let mut c = vec![0.0f32; m * ldc];
                let mut rows: Vec<&mut [f32]> = c.chunks_mut(ldc).collect();
                let tiled = TiledA {
                    data: &ap,
                    tile_step: kern.mr(),
                    ks: ld,
                };
                gemm_tiled(kern, tiled, m, k, &b, n, Some(&bias), &mut rows);
                let same = c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{} kernel, tiles in place, m={m} k={k} n={n}", kern.name());
            }
        }
    }

    #[test]
    fn pack_b_from_equals_pack_b_in_every_layout() {
        let mut rng = Rng(9);
        for &(k, n) in &[(1, 1), (32, 23), (23, 32), (7, 40)] {
            let w: Vec<f32> = (0..k * n).map(|_| rng.next()).collect();
            let want = pack_b(k, n, |kk, j| w[kk * n + j]);
            let wt: Vec<f32> = (0..n * k).map(|x| w[(x % k) * n + x / k]).collect();
            assert_eq!(pack_b_from(Strided::rows(&w, n), k, n), want);
            let cols = Strided {
                data: &wt,
                rs: 1,
                ks: k,
            };
            assert_eq!(pack_b_from(cols, k, n), want);
            let padded: Vec<f32> = (0..k * (n + 3))
                .map(|x| {
                    if x % (n + 3) < n {
                        w[(x / (n + 3)) * n + x % (n + 3)]
                    } else {
                        0.0
                    }
                })
                .collect();
            let strided = Strided {
                data: &padded,
                rs: n + 3,
                ks: 1,
            };
            assert_eq!(pack_b_from(strided, k, n), want);
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

    /// Single-thread speed of each kernel, the best of 7 short runs (a busy machine only
    /// ever slows a run down): `cargo test -p cairn-embed --release --lib kernel_speed --
    /// --ignored --nocapture`; `CAIRN_EMBED_SPEED_SHAPES=MxKxN,…` picks the shapes.
    #[test]
    #[ignore = "a timing, not a check"]
    fn kernel_speed() {
        let mut rng = Rng(3);
        let shapes = std::env::var("CAIRN_EMBED_SPEED_SHAPES")
            .unwrap_or_else(|_| "96x384x1536,96x1536x384,200x32x200,200x200x32".into());
        for shape in shapes.split(',') {
            let dims: Vec<usize> = shape.split('x').map(|v| v.parse().unwrap()).collect();
            let (m, k, n) = (dims[0], dims[1], dims[2]);
            let a: Vec<f32> = (0..m * k).map(|_| rng.next()).collect();
            let w: Vec<f32> = (0..k * n).map(|_| rng.next()).collect();
            let b = pack_b(k, n, |kk, j| w[kk * n + j]);
            let mut c = vec![0.0f32; m * n];
            for kern in kernels() {
                let reps = (2e8 / (2 * m * k * n) as f64).ceil() as usize;
                let mr = kern.mr();
                let mut ap = vec![0.0f32; m.div_ceil(mr) * k * mr];
                pack_a(mr, Strided::rows(&a, k), m, k, 0, &mut ap);
                let mut rows: Vec<&mut [f32]> = c.chunks_mut(n).collect();
                let mut wall = f64::INFINITY;
                for _ in 0..if kern == Kernel::Portable { 1 } else { 7 } {
                    let w0 = std::time::Instant::now();
                    for _ in 0..reps {
                        gemm_tiled(kern, TiledA::packed(&ap, k, mr), m, k, &b, n, None, &mut rows);
                    }
                    wall = wall.min(w0.elapsed().as_secs_f64());
                }
                let flop = (2 * m * k * n * reps) as f64;
                println!(
                    "{:>9} m={m:<4} k={k:<5} n={n:<5} {:6.1} GFLOP/s",
                    kern.name(),
                    flop / wall * 1e-9
                );
            }
        }
    }
}
