//! The default dense search (int8 scan with a proven bound, exact rescoring) equals the
//! plain exact scan — hits, order and score bits — over random vectors with many ties,
//! zero vectors, wide ranges of magnitude, filters and depths.

use cairn_core::{Hash, Node, NodeId};
use cairn_index::{CommitIndexes, IndexParams, EXACT_SCAN_ROWS};
use proptest::prelude::*;

fn view(vectors: &[Vec<f32>]) -> CommitIndexes {
    let nodes: Vec<(Hash, Node)> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let id = NodeId::new(format!("v{i:05}")).unwrap();
            (
                Hash::of(id.as_str().as_bytes()),
                Node::new(id).with_embedding("m", v.clone()),
            )
        })
        .collect();
    CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[])
}

/// Vectors from a few patterns (so scores tie), scaled, some zero.
fn vectors(n: usize, dim: usize, seed: u64, spread: f32) -> Vec<Vec<f32>> {
    let mut rng = cairn_testkit::Rng(seed | 1);
    let mut next = move || rng.next();
    let patterns: Vec<Vec<f32>> = (0..7)
        .map(|_| (0..dim).map(|_| (next() % 2001) as f32 / 1000.0 - 1.0).collect())
        .collect();
    (0..n)
        .map(|_| {
            let r = next();
            match r % 10 {
                0 => vec![0.0; dim],
                1..=4 => patterns[(r / 10 % 7) as usize].clone(),
                _ => {
                    let scale = spread.powf((r / 10 % 5) as f32 - 2.0);
                    (0..dim)
                        .map(|_| ((next() % 2001) as f32 / 1000.0 - 1.0) * scale)
                        .collect()
                }
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn int8_bounded_search_equals_the_exact_scan(
        seed in any::<u64>(),
        dim in prop_oneof![Just(3usize), Just(16), Just(33), Just(96)],
        n in (EXACT_SCAN_ROWS + 1)..(EXACT_SCAN_ROWS + 1500),
        spread in prop_oneof![Just(1.0f32), Just(10.0), Just(1000.0)],
        k in prop_oneof![Just(1usize), Just(10), Just(100), Just(1000), Just(5000)],
        keep in 1u64..12,
    ) {
        let vs = vectors(n, dim, seed, spread);
        let ix = view(&vs);
        let queries = vectors(4, dim, seed ^ 0xabcd, spread);
        let filter = ix.filter_of((0..n as u32).filter(|o| (u64::from(*o) * 2654435761) % 12 < keep));
        for q in &queries {
            for f in [None, Some(&filter)] {
                let got = ix.dense_search("m", q, k, f).unwrap();
                let want = ix.dense_search_reference("m", q, k, f).unwrap();
                prop_assert!(!got.approximate);
                prop_assert_eq!(got.hits.len(), want.len());
                for (g, w) in got.hits.iter().zip(&want) {
                    prop_assert_eq!(g.ordinal, w.ordinal);
                    prop_assert_eq!(g.score.to_bits(), w.score.to_bits());
                }
            }
        }
    }
}

#[test]
fn the_bound_prunes_on_clustered_vectors() {
    // 6,000 vectors in 20 clusters: the estimate should leave far fewer than all rows to
    // rescore (the bound is useful, not only correct).
    let vs: Vec<Vec<f32>> = vectors(6000, 64, 7, 1.0)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            v.iter().map(|x| x / n + (i % 20) as f32 * 0.01).collect()
        })
        .collect();
    let ix = view(&vs);
    let q = &vs[123];
    let got = ix.dense_search("m", q, 10, None).unwrap();
    assert_eq!(got.hits, ix.dense_search_reference("m", q, 10, None).unwrap());
    assert!(got.rescored < 6000 / 2, "rescored {} of 6000", got.rescored);
}

/// Many rows scoring close to the top (unit vectors around one centre, as text embeddings
/// of one topic are): the int8 bounds of hundreds of rows overlap the k-th score, and the
/// rescoring, highest upper bound first, stops at the bar of exact scores long before it
/// reads them all — still the exact answer.
#[test]
fn rescoring_stops_at_the_bar_of_exact_scores() {
    let dim = 384;
    let mut rng = cairn_testkit::Rng(0x9e37_79b9_7f4a_7c15);
    let mut next = move || rng.below(2001) as f32 / 1000.0 - 1.0;
    let unit = |v: Vec<f32>| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    let centre: Vec<f32> = (0..dim).map(|_| next()).collect();
    let mut around = || unit(centre.iter().map(|c| c + 0.5 * next()).collect());
    let vs: Vec<Vec<f32>> = (0..6000).map(|_| around()).collect();
    let ix = view(&vs);
    let q = around();
    let got = ix.dense_search("m", &q, 10, None).unwrap();
    assert_eq!(got.hits, ix.dense_search_reference("m", &q, 10, None).unwrap());
    // 167 rows have an upper bound above the 10th best lower bound (what the search
    // rescored before the bar); 44 of them reach the bar of exact scores.
    assert!(got.rescored <= 64, "rescored {}", got.rescored);
}

/// The view remembers the row list of recent filters (by their shared parts): cycling
/// through more label gates than it remembers, each asked twice in a row, every answer is
/// the one computed from the vectors by hand — never another filter's rows.
#[test]
fn remembered_rows_never_serve_another_filter() {
    let data = vectors(6_000, 16, 9, 2.0);
    let labels = 24;
    let nodes: Vec<(Hash, Node)> = data
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let id = NodeId::new(format!("v{i:05}")).unwrap();
            (
                Hash::of(id.as_str().as_bytes()),
                Node::new(id)
                    .with_label(format!("L{}", i % labels))
                    .with_embedding("m", v.clone()),
            )
        })
        .collect();
    let ix = CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[]);
    let query: Vec<f32> = (0..16).map(|d| (d as f32 * 0.37).sin()).collect();
    let score = |v: &[f32]| v.iter().zip(&query).map(|(a, b)| a * b).sum::<f32>();
    for round in 0..3 {
        for l in (0..labels).map(|l| (l * 7 + round) % labels) {
            let filter = ix.labels_all_of(&[format!("L{l}")]);
            for _ in 0..2 {
                let got = ix.dense_search("m", &query, 5, Some(&filter)).unwrap();
                assert_eq!(got.hits.len(), 5);
                for h in &got.hits {
                    let i: usize = ix.id(h.ordinal)[1..].parse().unwrap();
                    assert_eq!(i % labels, l, "a hit outside label L{l}");
                }
                // The best hit is the best of the label's vectors (scores agree to f32
                // rounding: the kernel sums in another order).
                let best = (0..data.len())
                    .filter(|i| i % labels == l)
                    .map(|i| score(&data[i]))
                    .fold(f32::NEG_INFINITY, f32::max);
                assert!((got.hits[0].score - best).abs() <= 1e-4 * best.abs().max(1.0));
            }
        }
    }
}
