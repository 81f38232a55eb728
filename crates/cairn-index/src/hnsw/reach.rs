//! How far a graph walk must look to find a point's nearest neighbours: measured on the
//! graph's own rows when a unit's graph is built, so that a query's `ef` follows the data
//! instead of a constant that silently loses recall on hard data.
//!
//! # The measurement
//!
//! [`SAMPLES`] rows, `i·n / SAMPLES` for `i = 0..SAMPLES` (all rows when `n` is smaller),
//! each serve as a query. A sample's truth is its [`K`] nearest other rows by the graph's
//! own distance, ties broken by row. For each `ef` of [`LADDER`] in turn, every sample is
//! searched with that `ef` as if it were not in the graph (never stepped on, so its own
//! neighbour list cannot lead the walk to its neighbours) and the first `K`
//! rows found are compared with the truth; the first `ef` whose mean recall@K reaches
//! [`TARGET`] is the graph's [`Reach::Ef`]. If none does, the graph is
//! [`Reach::Unreachable`], and a query scans the unit exactly: on data with no structure
//! to navigate by (uniform vectors in hundreds of dimensions) a walk that finds the top 10
//! visits most of the unit anyway.
//!
//! The result is a function of the graph and the distances alone (fixed samples, fixed
//! ladder, fixed tie-breaking, sequential), so it is the same on every machine, and a
//! stored graph carries it (`storage-format.md` §7.4).
//!
//! The target is above the recall a query is promised (0.95): even hidden, a row of the
//! unit shaped the graph around it, so it is a slightly easier query than a fresh one.

use crate::hnsw::UnitGraph;

/// Rows used as queries.
pub const SAMPLES: u32 = 32;
/// Neighbours per sample whose recall is measured.
pub const K: usize = 10;
/// The `ef` values tried, in order.
pub const LADDER: [u32; 6] = [16, 32, 64, 128, 256, 512];
/// Mean recall@K a rung must reach.
pub const TARGET: f64 = 0.98;

/// What the measurement found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reach {
    /// Not measured (a graph from [`UnitGraph::build`] alone): a query's `ef` is used as
    /// given.
    #[default]
    Unmeasured,
    /// The smallest `ef` of [`LADDER`] that reached [`TARGET`]: a query walks with at least
    /// this `ef`.
    Ef(u32),
    /// No `ef` of [`LADDER`] reached [`TARGET`]: a query scans the unit exactly.
    Unreachable,
}

impl Reach {
    /// The stored form: `0` unmeasured, `u32::MAX` unreachable, else the `ef`.
    pub fn to_u32(self) -> u32 {
        match self {
            Reach::Unmeasured => 0,
            Reach::Ef(ef) => ef,
            Reach::Unreachable => u32::MAX,
        }
    }

    /// The inverse of [`Reach::to_u32`] (every `u32` names one value).
    pub fn from_u32(v: u32) -> Reach {
        match v {
            0 => Reach::Unmeasured,
            u32::MAX => Reach::Unreachable,
            ef => Reach::Ef(ef),
        }
    }
}

/// Measures `g` (module docs); `dist` must be the distance the graph was built with.
pub fn measure(g: &UnitGraph, dist: impl Fn(u32, u32) -> f32) -> Reach {
    let n = g.len();
    if n as usize <= K + 1 {
        // Every walk with ef ≥ n returns every accepted row.
        return Reach::Ef(LADDER[0]);
    }
    let samples: Vec<u32> = if n <= SAMPLES {
        (0..n).collect()
    } else {
        (0..SAMPLES)
            .map(|i| (u64::from(i) * u64::from(n) / u64::from(SAMPLES)) as u32)
            .collect()
    };
    let truths: Vec<Vec<u32>> = samples
        .iter()
        .map(|&s| {
            let mut all: Vec<(f32, u32)> = (0..n).filter(|&r| r != s).map(|r| (dist(s, r), r)).collect();
            let k = K.min(all.len());
            all.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut top: Vec<u32> = all[..k].iter().map(|p| p.1).collect();
            top.sort_unstable();
            top
        })
        .collect();
    let wanted: usize = truths.iter().map(Vec::len).sum();
    for ef in LADDER {
        if ef >= n {
            // The walk returns every accepted row: exact.
            return Reach::Ef(ef);
        }
        let mut found = 0usize;
        for (&s, truth) in samples.iter().zip(&truths) {
            let got = g.search_hiding(ef as usize, |r| dist(s, r), |_| true, s, |_| {});
            found += got.iter().take(K).filter(|r| truth.binary_search(r).is_ok()).count();
        }
        if found as f64 >= TARGET * wanted as f64 {
            return Reach::Ef(ef);
        }
    }
    Reach::Unreachable
}
