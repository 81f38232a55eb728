//! Recall of the approximate dense lane (HNSW unit graphs, every candidate rescored
//! exactly) against the exact answer, on seeded synthetic vectors: uniform on the sphere
//! (the hardest case, no structure to navigate by) and clustered (the shape text
//! embeddings have), at two sizes, with the default settings a query gets
//! ([`AnnOptions::default`]: each graph's measured reach). The bound is the issue's: recall@10 ≥ 0.95. Real
//! embeddings are held to ≥ 0.99 in `eval_dense.rs`.
//!
//! `cargo test --release -p cairn-index --test ann_recall -- --ignored --nocapture` runs
//! the sweep (bigger sets, several `ef`, timings) that chose the defaults.

use std::time::Instant;

use cairn_core::{Hash, Node, NodeId};
use cairn_index::hnsw::Reach;
use cairn_index::{AnnOptions, CommitIndexes, IndexParams};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Approximately normal (sum of four uniforms, centred).
    fn gauss(&mut self) -> f32 {
        (0..4)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32)
            .sum::<f32>()
            - 2.0
    }
}

fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
}

#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Uniform on the unit sphere.
    Uniform,
    /// 200 centres, each point a centre plus noise of this relative size.
    Clustered(f32),
}

fn vectors(shape: Shape, n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut centres_rng = Rng(7);
    let centres: Vec<Vec<f32>> = (0..200)
        .map(|_| {
            let mut c: Vec<f32> = (0..dim).map(|_| centres_rng.gauss()).collect();
            normalise(&mut c);
            c
        })
        .collect();
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = match shape {
                Shape::Uniform => (0..dim).map(|_| rng.gauss()).collect(),
                Shape::Clustered(noise) => {
                    let c = &centres[(rng.next() % 200) as usize];
                    let scale = noise / (dim as f32).sqrt();
                    c.iter().map(|x| x + scale * rng.gauss()).collect()
                }
            };
            normalise(&mut v);
            v
        })
        .collect()
}

fn index(data: &[Vec<f32>]) -> CommitIndexes {
    let nodes: Vec<(Hash, Node)> = data
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let id = format!("n{i:08}");
            (
                Hash::of(id.as_bytes()),
                Node::new(NodeId::new(id).unwrap()).with_embedding("m", v.clone()),
            )
        })
        .collect();
    let mut ix = CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[]);
    ix.build_unit_graphs("m").unwrap();
    ix
}

/// Mean recall@k of the approximate search with `options` against the exact answer.
fn recall(ix: &CommitIndexes, queries: &[Vec<f32>], k: usize, options: &AnnOptions) -> f64 {
    let mut sum = 0.0;
    for q in queries {
        let want = ix.dense_search_reference("m", q, k, None).unwrap();
        let got = ix.dense_search_ann_with("m", q, k, None, options).unwrap();
        sum += got
            .hits
            .iter()
            .filter(|h| want.iter().any(|w| w.ordinal == h.ordinal))
            .count() as f64
            / k as f64;
    }
    sum / queries.len() as f64
}

/// The default settings, but every unit's graph walked wherever its reach allows (no unit
/// scanned for being small or for its gated rows being few).
fn walk_every_graph() -> AnnOptions {
    AnnOptions {
        min_unit_rows: 0,
        exact_scan_factor: 0,
        ..AnnOptions::default()
    }
}

fn check(shape: Shape, n: usize, dim: usize) {
    let data = vectors(shape, n, dim, 11);
    let queries = vectors(shape, 50, dim, 99);
    let ix = index(&data);
    let units = ix.dense("m").unwrap().unit_count();
    let reach: Vec<Reach> = (0..units)
        .map(|u| ix.dense("m").unwrap().unit_graph(u).unwrap().reach())
        .collect();
    // The graphs wherever their reach allows, with the ef a query gets by default.
    let options = walk_every_graph();
    let r = recall(&ix, &queries, 10, &options);
    eprintln!("{shape:?} n={n} dim={dim}: {units} unit(s), reach {reach:?}, recall@10 {r:.4}");
    // These sets are navigable: the graphs are walked, not scanned.
    assert!(reach.iter().all(|r| matches!(r, Reach::Ef(_))), "{reach:?}");
    let walked = ix.dense_search_ann_with("m", &queries[0], 10, None, &options).unwrap();
    assert!(walked.approximate && walked.rescored < n / 2, "{walked:?}");
    assert!(r >= 0.95, "{shape:?} n={n} dim={dim}: recall@10 {r:.4} < 0.95");
}

#[test]
fn uniform_64d_two_sizes() {
    check(Shape::Uniform, 3_000, 64);
    check(Shape::Uniform, 12_000, 64);
}

#[test]
fn clustered_128d_two_sizes() {
    check(Shape::Clustered(1.0), 3_000, 128);
    check(Shape::Clustered(1.0), 12_000, 128);
}

/// Several units, each walked with the floor of many units (`ann_floor`, below 64):
/// recall@10 still ≥ 0.95, uniform and clustered.
#[test]
fn several_units_walked_with_the_lower_floor() {
    for shape in [Shape::Clustered(1.0), Shape::Uniform] {
        let n = 80_000;
        let data = vectors(shape, n, 16, 11);
        let ix = index(&data);
        let units = ix.dense("m").unwrap().unit_count();
        assert!(units >= 2, "{units} unit(s)");
        assert!(cairn_index::view::ann_floor(units) < 64);
        let queries = vectors(shape, 50, 16, 99);
        let r = recall(&ix, &queries, 10, &walk_every_graph());
        eprintln!("{shape:?} n={n} dim=16: {units} units, recall@10 {r:.4}");
        assert!(r >= 0.95, "{shape:?}: recall@10 {r:.4} < 0.95");
    }
}

/// Under a label gate, over several units: every unit scanned gives exactly the exact
/// lane's answer; every unit walked returns only gated rows, with recall@10 ≥ 0.95.
#[test]
fn gated_search_over_several_units() {
    let n = 80_000;
    let data = vectors(Shape::Clustered(1.0), n, 16, 11);
    let nodes: Vec<(Hash, Node)> = data
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let id = format!("n{i:08}");
            let label = if i % 3 == 0 { "A" } else { "B" };
            (
                Hash::of(id.as_bytes()),
                Node::new(NodeId::new(id).unwrap())
                    .with_label(label)
                    .with_embedding("m", v.clone()),
            )
        })
        .collect();
    let mut ix = CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[]);
    ix.build_unit_graphs("m").unwrap();
    assert!(ix.dense("m").unwrap().unit_count() >= 2);
    let gate = ix.labels_all_of(&["A".to_string()]);
    let queries = vectors(Shape::Clustered(1.0), 30, 16, 99);
    let scanned = AnnOptions {
        min_unit_rows: 0,
        exact_scan_factor: usize::MAX,
        ..AnnOptions::default()
    };
    let walked = walk_every_graph();
    let mut overlap = 0.0;
    for q in &queries {
        let exact = ix.dense_search("m", q, 10, Some(&gate)).unwrap().hits;
        let all_scanned = ix.dense_search_ann_with("m", q, 10, Some(&gate), &scanned).unwrap();
        assert!(!all_scanned.approximate);
        assert_eq!(all_scanned.hits, exact);
        let got = ix.dense_search_ann_with("m", q, 10, Some(&gate), &walked).unwrap();
        assert!(got.approximate);
        assert!(
            got.hits.iter().all(|h| gate.contains(h.ordinal)),
            "a row outside the gate"
        );
        overlap += got
            .hits
            .iter()
            .filter(|h| exact.iter().any(|e| e.ordinal == h.ordinal))
            .count() as f64
            / 10.0;
    }
    let r = overlap / queries.len() as f64;
    eprintln!("gated, {} units: recall@10 {r:.4}", ix.dense("m").unwrap().unit_count());
    assert!(r >= 0.95, "gated recall@10 {r:.4}");
}

/// The sweep behind the defaults: recall and time per query across `ef`.
#[test]
#[ignore = "sweep; run with --release --ignored --nocapture"]
fn ann_sweep() {
    let n: usize = std::env::var("ANN_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    // `ANN_SET=i` runs only the i-th set (from 0).
    let only: Option<usize> = std::env::var("ANN_SET").ok().and_then(|v| v.parse().ok());
    let sets = [
        (Shape::Uniform, 64),
        (Shape::Uniform, 384),
        (Shape::Clustered(1.0), 384),
        // About the noise of the `chunked` bench's vectors (0.08 per coordinate in 384-d).
        (Shape::Clustered(1.6), 384),
    ];
    for (i, (shape, dim)) in sets.into_iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let data = vectors(shape, n, dim, 11);
        let queries = vectors(shape, 100, dim, 99);
        let t = Instant::now();
        let ix = index(&data);
        let build = t.elapsed();
        let units = ix.dense("m").unwrap().unit_count();
        let reach: Vec<Reach> = (0..units)
            .map(|u| ix.dense("m").unwrap().unit_graph(u).unwrap().reach())
            .collect();
        let t = Instant::now();
        for q in &queries {
            ix.dense_search("m", q, 10, None).unwrap();
        }
        let exact = t.elapsed() / queries.len() as u32;
        eprintln!("{shape:?} n={n} dim={dim}: {units} units {reach:?}, build {build:.1?}, exact {exact:.2?}/query");
        for ef in [None, Some(32), Some(64), Some(128), Some(256), Some(512)] {
            let options = AnnOptions {
                ef,
                min_unit_rows: 0,
                exact_scan_factor: 0,
            };
            let r = recall(&ix, &queries, 10, &options);
            let t = Instant::now();
            for q in &queries {
                ix.dense_search_ann_with("m", q, 10, None, &options).unwrap();
            }
            let per = t.elapsed() / queries.len() as u32;
            eprintln!("  ef {ef:?}: recall@10 {r:.4}, {per:.2?}/query");
        }
    }
}

/// A graph that reaches no `ef` (uniform vectors in 384 dimensions: nothing to navigate
/// by) is not walked: the unit is scanned exactly, so the answer is the exact one, bit for
/// bit. A stored graph keeps its reach (the `C7` record), so a loaded view decides alike.
#[test]
fn unreachable_graph_is_scanned_exactly() {
    let data = vectors(Shape::Uniform, 16_000, 384, 5);
    let queries = vectors(Shape::Uniform, 10, 384, 6);
    let ix = index(&data);
    let g = ix.dense("m").unwrap().unit_graph(0).unwrap();
    assert_eq!(g.reach(), Reach::Unreachable);
    let key = Hash::of(b"unit");
    let bytes = cairn_index::persist::encode_unit_graph(&key, "m", g);
    let (_, back) = cairn_index::persist::decode_unit_graph(&bytes, &key).unwrap();
    assert_eq!(back.reach(), Reach::Unreachable);
    assert_eq!(&back, g.as_ref());
    let options = AnnOptions {
        min_unit_rows: 0,
        exact_scan_factor: 0,
        ..AnnOptions::default()
    };
    for q in &queries {
        let got = ix.dense_search_ann_with("m", q, 10, None, &options).unwrap();
        assert!(!got.approximate);
        assert_eq!(got.hits, ix.dense_search("m", q, 10, None).unwrap().hits);
        // An explicit ef walks the graph anyway (for measurements like the sweep's).
        let walked = ix
            .dense_search_ann_with(
                "m",
                q,
                10,
                None,
                &AnnOptions {
                    ef: Some(64),
                    ..options
                },
            )
            .unwrap();
        assert!(walked.approximate);
    }
}
