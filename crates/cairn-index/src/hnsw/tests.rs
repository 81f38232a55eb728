//! Tests of the unit graph (`hnsw/mod.rs`).
use super::*;
use std::sync::OnceLock;
use std::time::Instant;

// ---- test data ---------------------------------------------------------------------

/// xorshift64* — deterministic test data.
struct XorShift(u64);
impl XorShift {
    fn new(seed: u64) -> Self {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Irwin–Hall(4), rescaled to unit variance.
    fn gauss(&mut self) -> f32 {
        let s: f32 = (0..4).map(|_| self.unit()).sum();
        (s - 2.0) * 3f32.sqrt()
    }
}

struct Data {
    dim: usize,
    v: Vec<f32>,
}
impl Data {
    fn row(&self, i: u32) -> &[f32] {
        &self.v[i as usize * self.dim..(i as usize + 1) * self.dim]
    }
    fn len(&self) -> u32 {
        (self.v.len() / self.dim) as u32
    }
}

fn normalise(x: &mut [f32]) {
    let norm = x.iter().map(|a| a * a).sum::<f32>().sqrt();
    if norm > 0.0 {
        x.iter_mut().for_each(|a| *a /= norm);
    }
}

/// `n` points around `clusters` Gaussian centres (centres from `centre_seed`, so data and
/// queries share them), noise `sigma`, L2-normalised.
fn clustered(n: usize, dim: usize, clusters: usize, sigma: f32, centre_seed: u64, seed: u64) -> Data {
    let mut cr = XorShift::new(centre_seed);
    let centres: Vec<f32> = (0..clusters * dim).map(|_| cr.gauss()).collect();
    let mut r = XorShift::new(seed);
    let mut v = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let c = (r.next() % clusters as u64) as usize;
        let start = v.len();
        for j in 0..dim {
            v.push(centres[c * dim + j] + sigma * r.gauss());
        }
        normalise(&mut v[start..]);
    }
    Data { dim, v }
}

/// `n` points uniform on the unit sphere (the hardest case: no cluster structure).
fn sphere(n: usize, dim: usize, seed: u64) -> Data {
    let mut r = XorShift::new(seed);
    let mut v: Vec<f32> = (0..n * dim).map(|_| r.gauss()).collect();
    v.chunks_mut(dim).for_each(normalise);
    Data { dim, v }
}

/// The benchmark sets: (name, data, queries).
fn sets() -> Vec<(&'static str, Data, Data)> {
    vec![
        (
            "clustered sigma=1.0",
            clustered(N20K, 64, 200, 1.0, 7, 11),
            clustered(200, 64, 200, 1.0, 7, 99),
        ),
        (
            "clustered sigma=1.5",
            clustered(N20K, 64, 200, 1.5, 7, 11),
            clustered(200, 64, 200, 1.5, 7, 99),
        ),
        ("uniform sphere", sphere(N20K, 64, 5), sphere(200, 64, 6)),
    ]
}

/// Plain fixed-order f32 dot product (one sequential accumulator).
fn dot_plain(a: &[f32], b: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

/// Fixed-order f32 dot product with 8 accumulators (deterministic; lets the compiler
/// pipeline/vectorise). Used by the tests to keep them fast in the dev profile.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        let (x, y): (&[f32; 8], &[f32; 8]) = (x.try_into().unwrap(), y.try_into().unwrap());
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

fn graph_dist(d: &Data) -> impl Fn(u32, u32) -> f32 + '_ {
    move |a, b| -dot(d.row(a), d.row(b))
}

fn brute(d: &Data, q: &[f32], k: usize, accept: &dyn Fn(u32) -> bool) -> Vec<u32> {
    let mut all: Vec<Cand> = (0..d.len())
        .filter(|&i| accept(i))
        .map(|i| Cand {
            d: -dot(q, d.row(i)),
            id: i,
        })
        .collect();
    if all.len() > k {
        all.select_nth_unstable(k);
        all.truncate(k);
    }
    all.sort_unstable();
    all.into_iter().map(|c| c.id).collect()
}

/// Mean recall@k of `search(ef)` over `queries`.
fn recall(g: &UnitGraph, d: &Data, queries: &Data, k: usize, ef: usize, accept: &dyn Fn(u32) -> bool) -> f64 {
    let truth: Vec<Vec<u32>> = (0..queries.len())
        .map(|qi| brute(d, queries.row(qi), k, accept))
        .collect();
    recall_with(g, d, queries, &truth, k, ef, accept)
}

/// Mean recall@k of `search(ef)` against precomputed ground truth.
fn recall_with(
    g: &UnitGraph,
    d: &Data,
    queries: &Data,
    truth: &[Vec<u32>],
    k: usize,
    ef: usize,
    accept: &dyn Fn(u32) -> bool,
) -> f64 {
    let mut hit = 0usize;
    let mut total = 0usize;
    for qi in 0..queries.len() {
        let q = queries.row(qi);
        let truth = &truth[qi as usize];
        let got = g.search(ef, |r| -dot(q, d.row(r)), accept);
        assert!(got.iter().all(|&r| accept(r)), "returned a rejected row");
        let got = &got[..got.len().min(k)];
        hit += truth.iter().filter(|t| got.contains(t)).count();
        total += truth.len();
    }
    hit as f64 / total.max(1) as f64
}

/// Mean number of `dist_q` calls per unfiltered query.
fn search_calls(g: &UnitGraph, d: &Data, queries: &Data, ef: usize) -> f64 {
    let calls = std::cell::Cell::new(0u64);
    for qi in 0..queries.len() {
        let q = queries.row(qi);
        g.search(
            ef,
            |r| {
                calls.set(calls.get() + 1);
                -dot(q, d.row(r))
            },
            |_| true,
        );
    }
    calls.get() as f64 / queries.len() as f64
}

fn reachable(g: &UnitGraph, layer: usize) -> (usize, usize) {
    let Some(entry) = g.entry_point() else {
        return (0, 0);
    };
    let on_layer = (0..g.len()).filter(|&r| g.level(r).unwrap() as usize >= layer).count();
    let mut seen = vec![false; g.len() as usize];
    let mut stack = vec![entry];
    seen[entry as usize] = true;
    let mut count = 1;
    while let Some(x) = stack.pop() {
        for &y in g.neighbours(layer, x).unwrap() {
            if !seen[y as usize] {
                seen[y as usize] = true;
                count += 1;
                stack.push(y);
            }
        }
    }
    (count, on_layer)
}

fn assert_all_reachable(g: &UnitGraph) {
    for l in 0..=g.top as usize {
        let (r, t) = reachable(g, l);
        assert_eq!(r, t, "layer {l}: {r} of {t} nodes reachable");
    }
}

fn accept_10pct(r: u32) -> bool {
    (r.wrapping_mul(0x9E37_79B1) >> 16) % 10 == 3
}

// ---- shared 20k fixture ----------------------------------------------------------------

const N20K: usize = 20_000;
struct Fixture {
    data: Data,
    queries: Data,
    graph: UnitGraph,
    /// Brute-force top-10 per query: unfiltered, and with `accept_10pct`.
    truth_all: Vec<Vec<u32>>,
    truth_10pct: Vec<Vec<u32>>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let data = clustered(N20K, 64, 200, 1.0, 7, 11);
        let queries = clustered(200, 64, 200, 1.0, 7, 99);
        let t = Instant::now();
        let (graph, stats) =
            build_with_options(data.len(), &GraphParams::default(), DEFAULT_OPTIONS, graph_dist(&data));
        eprintln!(
            "build 20k x 64: {:?}, {} dist calls ({} select, {} re-select), repaired {} (swapped {}), {} heap bytes, {} encoded bytes",
            t.elapsed(),
            stats.dist_calls,
            stats.select_calls,
            stats.reselect_calls,
            stats.repaired,
            stats.swapped,
            graph.heap_bytes(),
            graph.encode().len()
        );
        let truth = |accept: &dyn Fn(u32) -> bool| -> Vec<Vec<u32>> {
            (0..queries.len()).map(|qi| brute(&data, queries.row(qi), 10, accept)).collect()
        };
        let truth_all = truth(&|_| true);
        let truth_10pct = truth(&accept_10pct);
        Fixture { data, queries, graph, truth_all, truth_10pct }
    })
}

#[test]
fn recall_clustered_20k() {
    let f = fixture();
    assert_all_reachable(&f.graph);
    let all = |_: u32| true;
    let mut r64 = 0.0;
    for ef in [10, 16, 32, 64, 128] {
        let t = Instant::now();
        let r = recall_with(&f.graph, &f.data, &f.queries, &f.truth_all, 10, ef, &all);
        eprintln!("recall@10 ef={ef}: {r:.4} ({:?} for 200 queries)", t.elapsed());
        if ef == 64 {
            r64 = r;
        }
    }
    assert!(r64 >= 0.99, "recall@10 at ef=64 = {r64}");
}

#[test]
fn filtered_recall_10pct() {
    let f = fixture();
    let accepted = (0..f.data.len()).filter(|&r| accept_10pct(r)).count();
    assert!((1800..2200).contains(&accepted), "{accepted}");
    let mut r128 = 0.0;
    for ef in [32, 64, 128] {
        let r = recall_with(&f.graph, &f.data, &f.queries, &f.truth_10pct, 10, ef, &accept_10pct);
        eprintln!("filtered (10%) recall@10 ef={ef}: {r:.4}");
        if ef == 128 {
            r128 = r;
        }
    }
    assert!(r128 >= 0.9, "filtered recall@10 at ef=128 = {r128}");
    // A filter that accepts nothing returns nothing; one that accepts 3 rows returns those 3.
    let q = f.queries.row(0);
    assert!(f.graph.search(50, |r| -dot(q, f.data.row(r)), |_| false).is_empty());
    let mut got = f.graph.search(50, |r| -dot(q, f.data.row(r)), |r| r % 7000 == 5);
    got.sort_unstable();
    assert_eq!(got, vec![5, 7005, 14005]);
}

#[test]
fn search_results_are_sorted_and_unique() {
    let f = fixture();
    let q = f.queries.row(3);
    let got = f.graph.search(100, |r| -dot(q, f.data.row(r)), |_| true);
    assert_eq!(got.len(), 100);
    let cands: Vec<Cand> = got
        .iter()
        .map(|&r| Cand {
            d: -dot(q, f.data.row(r)),
            id: r,
        })
        .collect();
    assert!(cands.windows(2).all(|w| w[0] < w[1]));
}

/// Compares construction variants (run with --release -- --ignored --nocapture).
#[test]
#[ignore]
fn variants_recall() {
    let all = |_: u32| true;
    for (name, data, queries) in sets() {
        for (keep_pruned, select_2m_layer0) in [(true, false), (false, false), (true, true), (false, true)] {
            let opts = BuildOptions {
                keep_pruned,
                select_2m_layer0,
                repair: true,
                incremental: true,
            };
            let t = Instant::now();
            let (g, st) = build_with_options(data.len(), &GraphParams::default(), opts, graph_dist(&data));
            let bt = t.elapsed();
            let edges: usize = g.layers[0].ids.len();
            let rs: Vec<String> = [32, 64, 128]
                .iter()
                .map(|&ef| {
                    format!(
                        "{:.4} ({:.0}) / {:.4}",
                        recall(&g, &data, &queries, 10, ef, &all),
                        search_calls(&g, &data, &queries, ef),
                        recall(&g, &data, &queries, 10, ef, &accept_10pct)
                    )
                })
                .collect();
            eprintln!(
                "| {name} | {keep_pruned} | {} | {:.1?} | {:.1}M ({:.1}M sel, {:.1}M resel) | {} | {:.1} | {} |",
                if select_2m_layer0 { "2m" } else { "m" },
                bt,
                st.dist_calls as f64 / 1e6,
                st.select_calls as f64 / 1e6,
                st.reselect_calls as f64 / 1e6,
                st.repaired,
                edges as f64 / data.len() as f64,
                rs.join(" | ")
            );
        }
    }
}

/// Bigger / harder recall runs with the default options (run with --release -- --ignored).
#[test]
#[ignore]
fn recall_harder_sets() {
    let all = |_: u32| true;
    for (name, data, queries) in sets() {
        let t = Instant::now();
        let g = UnitGraph::build(data.len(), &GraphParams::default(), graph_dist(&data));
        let bt = t.elapsed();
        let rs: Vec<String> = [16, 32, 64, 128, 256]
            .iter()
            .map(|&ef| format!("ef{ef}={:.4}", recall(&g, &data, &queries, 10, ef, &all)))
            .collect();
        eprintln!("{name}: build {bt:?} | {}", rs.join(" "));
    }
}

/// Writes the benchmark sets to /tmp for an external cross-check (hnswlib).
#[test]
#[ignore]
fn dump_sets() {
    let write = |name: String, d: &Data| {
        let bytes: Vec<u8> = d.v.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(format!("/tmp/ug_{name}.f32"), bytes).unwrap();
    };
    for (i, (_, data, queries)) in sets().iter().enumerate() {
        write(format!("{i}_data"), data);
        write(format!("{i}_q"), queries);
    }
}

/// Timing for the brief: 32,768 x 384, f32 dot in a plain loop, release mode.
/// `cargo test --release -- --ignored --nocapture bench_build_32k_384`
#[test]
#[ignore]
fn bench_build_32k_384() {
    let n = 32_768;
    let data = clustered(n, 384, 512, 1.0, 3, 4);
    let queries = clustered(200, 384, 512, 1.0, 3, 5);
    type DotFn = fn(&[f32], &[f32]) -> f32;
    let dots: [(&str, DotFn); 2] = [("plain loop", dot_plain), ("8 accumulators", dot)];
    for (name, dotf) in dots {
        let t = Instant::now();
        let (g, st) = build_with_options(n as u32, &GraphParams::default(), DEFAULT_OPTIONS, |a, b| {
            -dotf(data.row(a), data.row(b))
        });
        let bt = t.elapsed();
        eprintln!(
            "[{name}] build 32768 x 384: {bt:.2?}; {:.1}M dist calls ({:.1}M select, {:.1}M re-select), {:.0} ns/call amortised; repaired {}; heap {} B; encoded {} B",
            st.dist_calls as f64 / 1e6,
            st.select_calls as f64 / 1e6,
            st.reselect_calls as f64 / 1e6,
            bt.as_nanos() as f64 / st.dist_calls as f64,
            st.repaired,
            g.heap_bytes(),
            g.encode().len(),
        );
        let all = |_: u32| true;
        for ef in [10, 32, 64, 100, 128] {
            let t = Instant::now();
            let mut total = 0usize;
            for qi in 0..queries.len() {
                let q = queries.row(qi);
                total += g.search(ef, |r| -dotf(q, data.row(r)), all).len();
            }
            let per = t.elapsed() / queries.len();
            let calls = std::cell::Cell::new(0u64);
            for qi in 0..queries.len() {
                let q = queries.row(qi);
                g.search(
                    ef,
                    |r| {
                        calls.set(calls.get() + 1);
                        -dotf(q, data.row(r))
                    },
                    all,
                );
            }
            let rec = recall(&g, &data, &queries, 10, ef, &all);
            let frec = recall(&g, &data, &queries, 10, ef, &accept_10pct);
            eprintln!(
                "[{name}]   ef={ef}: {per:.1?}/query, {:.0} dist calls/query, recall@10 {rec:.4}, filtered(10%) {frec:.4} ({total})",
                calls.get() as f64 / queries.len() as f64
            );
        }
    }
}

// ---- determinism -------------------------------------------------------------------------

#[test]
fn deterministic_bytes_and_threads() {
    let data = clustered(1500, 32, 30, 0.4, 1, 2);
    let p = GraphParams {
        m: 12,
        ef_construction: 64,
        seed: 42,
    };
    let a = UnitGraph::build(data.len(), &p, graph_dist(&data)).encode();
    let b = UnitGraph::build(data.len(), &p, graph_dist(&data)).encode();
    assert_eq!(a, b);
    let results: Vec<Vec<u8>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..3)
            .map(|_| s.spawn(|| UnitGraph::build(data.len(), &p, graph_dist(&data)).encode()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in &results {
        assert_eq!(r, &a);
    }
    // Every param matters.
    for p2 in [
        GraphParams { seed: 43, ..p },
        GraphParams { m: 13, ..p },
        GraphParams {
            ef_construction: 65,
            ..p
        },
    ] {
        assert_ne!(
            UnitGraph::build(data.len(), &p2, graph_dist(&data)).encode(),
            a,
            "{p2:?}"
        );
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// Golden hashes of the encoding of a few builds: the graph is part of a cache key, so any
/// change of the algorithm or format must be deliberate (bump the magic's version).
#[test]
fn encoding_pinned() {
    let data = clustered(3000, 32, 30, 0.8, 1, 2);
    let p = GraphParams {
        m: 12,
        ef_construction: 64,
        seed: 42,
    };
    let a = fnv1a(&UnitGraph::build(data.len(), &p, graph_dist(&data)).encode());
    let ties = fnv1a(
        &UnitGraph::build(
            700,
            &GraphParams {
                m: 6,
                ef_construction: 30,
                seed: 1,
            },
            |_, _| 0.5,
        )
        .encode(),
    );
    let base = clustered(30, 16, 30, 0.1, 5, 6);
    let idx = |r: u32| (r.wrapping_mul(2654435761) >> 7) % 30;
    let dups = fnv1a(
        &UnitGraph::build(2100, &GraphParams::default(), |a, b| {
            -dot(base.row(idx(a)), base.row(idx(b)))
        })
        .encode(),
    );
    let f = fnv1a(&fixture().graph.encode());
    eprintln!("pinned: {a:#018x} {ties:#018x} {dups:#018x} {f:#018x}");
    assert_eq!([a, ties, dups, f], PINNED);
}
const PINNED: [u64; 4] = [
    0xacbf69425177640f,
    0x0cbacfe72c299a8c,
    0x3e81d327d4d838b2,
    0xa3a6f4489329e410,
];

/// The reach measurement (`reach.rs`) of fixed graphs, and the `C7` record that carries it
/// (`storage-format.md` §7.4): a change to the samples, the ladder, the target, the hidden
/// walk or the record's layout shows here.
#[test]
fn reach_and_record_pinned() {
    let data = clustered(3000, 32, 30, 0.8, 1, 2);
    let p = GraphParams {
        m: 12,
        ef_construction: 64,
        seed: 42,
    };
    let g = UnitGraph::build(data.len(), &p, graph_dist(&data));
    let clustered_reach = super::reach::measure(&g, graph_dist(&data));
    let sphere_data = sphere(3000, 64, 3);
    let hard = UnitGraph::build(sphere_data.len(), &p, graph_dist(&sphere_data));
    let sphere_reach = super::reach::measure(&hard, graph_dist(&sphere_data));
    let fixture_reach = super::reach::measure(&fixture().graph, graph_dist(&fixture().data));
    eprintln!("reach: {clustered_reach:?} {sphere_reach:?} {fixture_reach:?}");
    assert_eq!(
        [clustered_reach, sphere_reach, fixture_reach],
        [PINNED_REACH[0], PINNED_REACH[1], PINNED_REACH[2]]
    );
    let mut g = g;
    g.set_reach(clustered_reach);
    let record = crate::persist::encode_unit_graph(&cairn_core::Hash::of(b"unit"), "m", &g);
    // Tag, key, str("m") (u64le length), rows, reach: the fixed-layout head of the record.
    let head: Vec<u8> = record[..1 + 32 + 8 + 1 + 4 + 4].to_vec();
    let reach_bytes = clustered_reach.to_u32().to_le_bytes();
    assert_eq!(&head[head.len() - 4..], &reach_bytes);
    assert_eq!(&head[head.len() - 8..head.len() - 4], &3000u32.to_le_bytes());
    let h = fnv1a(&record);
    eprintln!("record: {h:#018x}");
    assert_eq!(h, PINNED_RECORD);
    let (_, back) = crate::persist::decode_unit_graph(&record, &cairn_core::Hash::of(b"unit")).unwrap();
    assert_eq!(back.reach(), clustered_reach);
    assert_eq!(back, g);
    // A reach the measurement never writes is refused (the record is damaged), every
    // value it does write is read back.
    let at = head.len() - 4;
    for (v, ok) in [(7u32, false), (1000, false), (0, true), (u32::MAX, true), (512, true)] {
        let mut bad = record.clone();
        bad[at..at + 4].copy_from_slice(&v.to_le_bytes());
        let got = crate::persist::decode_unit_graph(&bad, &cairn_core::Hash::of(b"unit"));
        assert_eq!(got.is_ok(), ok, "reach {v}");
    }
}
const PINNED_REACH: [Reach; 3] = [Reach::Ef(16), Reach::Ef(128), Reach::Ef(32)];
const PINNED_RECORD: u64 = 0x7f21ce8e856c4dad;

/// The incremental re-selection must give exactly the same graph as re-running the
/// heuristic from scratch, with fewer distance calls.
#[test]
fn incremental_reselect_is_exact() {
    let scratch = BuildOptions {
        incremental: false,
        ..DEFAULT_OPTIONS
    };
    let check = |name: &str, n: u32, p: &GraphParams, d: &dyn Fn(u32, u32) -> f32| {
        let (a, sa) = build_with_options(n, p, DEFAULT_OPTIONS, d);
        let (b, sb) = build_with_options(n, p, scratch, d);
        assert!(a.encode() == b.encode(), "{name}: incremental differs from scratch");
        eprintln!(
            "{name}: re-select dist calls {} (incremental) vs {} (scratch)",
            sa.reselect_calls, sb.reselect_calls
        );
        assert!(sa.reselect_calls <= sb.reselect_calls);
    };
    let data = clustered(2500, 24, 20, 0.8, 1, 2);
    for m in [2usize, 3, 16] {
        let p = GraphParams {
            m,
            ef_construction: 40,
            seed: m as u64,
        };
        check(&format!("clustered m={m}"), data.len(), &p, &graph_dist(&data));
    }
    // Many exact ties: integer points on a line / small grid.
    let xs: Vec<i32> = (0..3000).map(|i| i * 7919 % 211).collect();
    check(
        "line ties",
        3000,
        &GraphParams {
            m: 5,
            ef_construction: 30,
            seed: 3,
        },
        &|a, b| (xs[a as usize] - xs[b as usize]).abs() as f32,
    );
    let grid = |r: u32| ((r % 13) as f32, (r / 13 % 11) as f32);
    check(
        "grid ties",
        2500,
        &GraphParams {
            m: 4,
            ef_construction: 20,
            seed: 9,
        },
        &|a, b| {
            let (pa, pb) = (grid(a), grid(b));
            (pa.0 - pb.0).abs() + (pa.1 - pb.1).abs()
        },
    );
    check(
        "all identical",
        800,
        &GraphParams {
            m: 6,
            ef_construction: 30,
            seed: 1,
        },
        &|_, _| 0.5,
    );
}

/// Pins the level generator (so an accidental change of the PRNG or rule is caught).
#[test]
fn levels_pinned() {
    let lv = assign_levels(100_000, 16, 0);
    let mut hist = [0usize; 17];
    lv.iter().for_each(|&l| hist[l as usize] += 1);
    // Expect roughly n * (15/16) * 16^-k at each level.
    assert!((93_000..94_500).contains(&hist[0]), "{hist:?}");
    assert!((5_600..6_100).contains(&hist[1]), "{hist:?}");
    let mut rng = SplitMix64(0);
    // Reference value of SplitMix64 with seed 0.
    assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
    let small = assign_levels(40, 2, 12345);
    let enc: String = small.iter().map(|l| char::from(b'0' + *l)).collect();
    eprintln!("levels m=2 seed=12345: {enc}");
    assert_eq!(small, assign_levels(40, 2, 12345));
    assert!(assign_levels(1000, 2, 1).iter().all(|&l| l <= MAX_LEVEL));
}

#[test]
fn level_cap_is_16() {
    // m = 2: P(level >= 16) = 2^-16; with 2^20 draws we expect ~16 capped nodes.
    let lv = assign_levels(1 << 20, 2, 9);
    assert!(lv.iter().all(|&l| l <= 16));
    assert!(lv.contains(&16));
}

// ---- encode / decode ---------------------------------------------------------------------

fn small_graph(n: u32) -> (Data, UnitGraph) {
    let data = clustered(n as usize, 16, 5, 0.5, 3, 4);
    let g = UnitGraph::build(
        n,
        &GraphParams {
            m: 4,
            ef_construction: 20,
            seed: 7,
        },
        graph_dist(&data),
    );
    (data, g)
}

#[test]
fn round_trip() {
    for n in [0u32, 1, 2, 3, 17, 300] {
        let (data, g) = small_graph(n);
        let bytes = g.encode();
        let h = UnitGraph::decode(&bytes).unwrap_or_else(|e| panic!("n={n}: {e}"));
        assert_eq!(h, g);
        assert_eq!(h.encode(), bytes);
        assert_eq!(h.len(), n);
        if n > 0 {
            let q = data.row(n - 1);
            assert_eq!(
                h.search(7, |r| -dot(q, data.row(r)), |_| true),
                g.search(7, |r| -dot(q, data.row(r)), |_| true)
            );
        }
    }
    let f = fixture();
    let bytes = f.graph.encode();
    assert_eq!(UnitGraph::decode(&bytes).unwrap().encode(), bytes);
}

/// Byte offset of layer-0 list of `row` (its u16 count).
fn list_offset(bytes: &[u8], n: u32, row: u32) -> usize {
    let mut off = HEADER_LEN + n as usize;
    for _ in 0..row {
        let c = u16::from_le_bytes([bytes[off], bytes[off + 1]]) as usize;
        off += 2 + 4 * c;
    }
    off
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn decode_rejects() {
    let n = 60u32;
    let (_, g) = small_graph(n);
    let good = g.encode();
    assert!(UnitGraph::decode(&good).is_ok());
    let err = |b: &[u8]| UnitGraph::decode(b).expect_err("must be rejected").to_string();

    // Every strict prefix is rejected.
    for len in 0..good.len() {
        err(&good[..len]);
    }
    // Trailing bytes.
    let mut t = good.clone();
    t.push(0);
    assert!(err(&t).contains("trailing"));
    // Magic / version.
    let mut t = good.clone();
    t[3] = b'2';
    assert!(err(&t).contains("magic"));

    let o = list_offset(&good, n, 5);
    let c = u16::from_le_bytes([good[o], good[o + 1]]);
    assert!(c >= 2);
    let first = o + 2;
    // Neighbour out of range.
    let mut t = good.clone();
    put_u32(&mut t, first, n);
    assert!(err(&t).contains(">= n"), "{}", err(&t));
    // Self-loop (must keep order valid: node 5's smallest neighbour replaced by 5 only if
    // smaller than the second; use a list check independent of order by trying both).
    let mut t = good.clone();
    put_u32(&mut t, first, 5);
    let e = err(&t);
    assert!(e.contains("self-loop") || e.contains("sorted"), "{e}");
    // Self-loop at node 0, whose list is ascending and > 0: putting 0 first stays sorted.
    let o0 = list_offset(&good, n, 0) + 2;
    let mut t = good.clone();
    put_u32(&mut t, o0, 0);
    assert!(err(&t).contains("self-loop"));
    // Duplicate.
    let second = u32::from_le_bytes(good[first + 4..first + 8].try_into().unwrap());
    let mut t = good.clone();
    put_u32(&mut t, first, second);
    assert!(err(&t).contains("duplicate"));
    // Unsorted.
    let first_id = u32::from_le_bytes(good[first..first + 4].try_into().unwrap());
    let mut t = good.clone();
    put_u32(&mut t, first, second);
    put_u32(&mut t, first + 4, first_id);
    assert!(err(&t).contains("sorted"));
    // Count above the cap (2m = 8): claims 9, and more than the remaining bytes too.
    let mut t = good.clone();
    t[o..o + 2].copy_from_slice(&9u16.to_le_bytes());
    assert!(err(&t).contains("cap"));
    let mut t = good.clone();
    t[o..o + 2].copy_from_slice(&u16::MAX.to_le_bytes());
    err(&t);
    // Node level above 16, and top/entry inconsistencies.
    let mut t = good.clone();
    t[HEADER_LEN] = 17;
    err(&t);
    let mut t = good.clone();
    t[28] = g.top + 1;
    err(&t);
    let mut t = good.clone();
    let other = (0..n).find(|&r| g.level(r).unwrap() < g.top).unwrap();
    put_u32(&mut t, 24, other);
    assert!(err(&t).contains("entry"));
    let mut t = good.clone();
    put_u32(&mut t, 24, n);
    err(&t);
    // m out of range.
    for bad_m in [0u32, 1, 40_000] {
        let mut t = good.clone();
        put_u32(&mut t, 8, bad_m);
        err(&t);
    }
    // Empty graph variants.
    let empty = UnitGraph::build(0, &GraphParams::default(), |_, _| 0.0).encode();
    assert_eq!(empty.len(), HEADER_LEN);
    let mut t = empty.clone();
    put_u32(&mut t, 24, 0);
    err(&t);
    let mut t = empty.clone();
    t.push(0);
    err(&t);
}

#[test]
fn decode_rejects_neighbour_not_on_layer() {
    // Find an upper-layer list and point one entry at a layer-0-only node.
    let n = 400u32;
    let (_, g) = small_graph(n);
    assert!(g.top >= 1);
    let mut bytes = g.encode();
    // Offset of layer 1: after all layer-0 lists.
    let mut off = list_offset(&bytes, n, n);
    let first_l1 = (0..n).find(|&r| g.level(r).unwrap() >= 1).unwrap();
    let c = u16::from_le_bytes([bytes[off], bytes[off + 1]]);
    assert!(c >= 1, "first layer-1 node has an empty list");
    off += 2;
    let low = (0..n).find(|&r| g.level(r).unwrap() == 0 && r != first_l1).unwrap();
    let old = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap());
    if low < old {
        put_u32(&mut bytes, off, low);
        let e = UnitGraph::decode(&bytes).unwrap_err().to_string();
        assert!(e.contains("not on layer"), "{e}");
    }
}

#[test]
fn decode_huge_counts_is_fast_and_small() {
    let mut h = Vec::new();
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&(1u32 << 31).to_le_bytes());
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&100u32.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.push(0);
    h.extend_from_slice(&[0u8; 64]);
    let t = Instant::now();
    for n in [u32::MAX, 1 << 31, 1 << 20, 100] {
        put_u32(&mut h, 4, n);
        assert!(UnitGraph::decode(&h).is_err());
    }
    assert!(t.elapsed().as_millis() < 50, "{:?}", t.elapsed());
}

// ---- edge cases ----------------------------------------------------------------------------

#[test]
fn tiny_graphs() {
    let p = GraphParams::default();
    let g0 = UnitGraph::build(0, &p, |_, _| unreachable!());
    assert!(g0.is_empty());
    assert_eq!(g0.len(), 0);
    assert_eq!(g0.entry_point(), None);
    assert!(g0.search(10, |_| unreachable!(), |_| true).is_empty());
    assert_eq!(UnitGraph::decode(&g0.encode()).unwrap(), g0);

    let g1 = UnitGraph::build(1, &p, |_, _| unreachable!());
    assert_eq!(g1.len(), 1);
    assert_eq!(g1.search(10, |_| 1.0, |_| true), vec![0]);
    assert!(g1.search(10, |_| 1.0, |_| false).is_empty());
    assert!(g1.search(0, |_| 1.0, |_| true).is_empty());
    assert_eq!(g1.search(usize::MAX, |_| 1.0, |_| true), vec![0]);

    let xs = [0.0f32, 1.0];
    let g2 = UnitGraph::build(2, &p, |a, b| (xs[a as usize] - xs[b as usize]).abs());
    assert_eq!(g2.neighbours(0, 0), Some(&[1u32][..]));
    assert_eq!(g2.neighbours(0, 1), Some(&[0u32][..]));
    assert_eq!(g2.search(10, |r| (xs[r as usize] - 0.9).abs(), |_| true), vec![1, 0]);
    assert_eq!(g2.search(1, |r| (xs[r as usize] - 0.1).abs(), |_| true), vec![0]);
    assert_eq!(g2.search(10, |r| (xs[r as usize] - 0.9).abs(), |r| r == 0), vec![0]);
    assert_all_reachable(&g2);
    let b = g2.encode();
    assert_eq!(UnitGraph::decode(&b).unwrap().encode(), b);
}

#[test]
fn all_points_identical() {
    let p = GraphParams {
        m: 8,
        ef_construction: 40,
        seed: 3,
    };
    for (n, c) in [(3u32, 0.0f32), (100, -1.0), (1500, 0.0)] {
        let g = UnitGraph::build(n, &p, |_, _| c);
        assert_all_reachable(&g);
        for ef in [1usize, 10, 64, 2000] {
            let got = g.search(ef, |_| c, |_| true);
            assert_eq!(got.len(), ef.min(n as usize), "n={n} ef={ef}");
            let mut s = got.clone();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), got.len());
            let acc = (0..n).filter(|&r| accept_10pct(r)).count();
            let got = g.search(ef, |_| c, accept_10pct);
            assert_eq!(got.len(), ef.min(acc), "filtered n={n} ef={ef}");
            assert!(got.iter().all(|&r| accept_10pct(r)));
        }
        // Deterministic too.
        assert_eq!(UnitGraph::build(n, &p, |_, _| c).encode(), g.encode());
    }
}

#[test]
fn many_duplicates() {
    // 30 distinct points, each repeated ~70 times, interleaved.
    let base = clustered(30, 16, 30, 0.1, 5, 6);
    let n = 2100u32;
    let idx = |r: u32| (r.wrapping_mul(2654435761) >> 7) % 30;
    let d = |a: u32, b: u32| -dot(base.row(idx(a)), base.row(idx(b)));
    let (g, st) = build_with_options(n, &GraphParams::default(), DEFAULT_OPTIONS, d);
    eprintln!("duplicates: repaired {} swapped {}", st.repaired, st.swapped);
    assert_all_reachable(&g);
    // The 70-odd exact duplicates of a point are found with a large enough ef.
    let target = 4;
    let q = base.row(target);
    let dups = (0..n).filter(|&r| idx(r) == target).count();
    let got = g.search(dups, |r| -dot(q, base.row(idx(r))), |_| true);
    assert_eq!(got.len(), dups);
    assert!(got.iter().all(|&r| idx(r) == target));
}

#[test]
fn repair_leaves_ordinary_graphs_connected() {
    let f = fixture();
    assert_all_reachable(&f.graph);
    // Degree caps hold.
    let m = f.graph.params().m;
    for r in 0..f.graph.len() {
        for l in 0..=f.graph.level(r).unwrap() as usize {
            let cap = if l == 0 { 2 * m } else { m };
            assert!(f.graph.neighbours(l, r).unwrap().len() <= cap);
        }
    }
}

#[test]
fn negative_and_mixed_sign_distances() {
    // 1-d points on a line, distance = |x - y| - 10 (all negative): same graph as |x - y|
    // up to the constant shift? Not necessarily bitwise, but search must still be exact-ish.
    let xs: Vec<f32> = (0..500).map(|i| ((i * 7919) % 1000) as f32).collect();
    let g = UnitGraph::build(500, &GraphParams::default(), |a, b| {
        (xs[a as usize] - xs[b as usize]).abs() - 10.0
    });
    assert_all_reachable(&g);
    let got = g.search(5, |r| (xs[r as usize] - 500.0).abs() - 10.0, |_| true);
    let mut want: Vec<Cand> = (0..500u32)
        .map(|r| Cand {
            d: (xs[r as usize] - 500.0).abs() - 10.0,
            id: r,
        })
        .collect();
    want.sort_unstable();
    assert_eq!(got, want[..5].iter().map(|c| c.id).collect::<Vec<_>>());
}

#[test]
#[should_panic(expected = "GraphParams::m")]
fn m_below_two_panics() {
    UnitGraph::build(
        10,
        &GraphParams {
            m: 1,
            ..Default::default()
        },
        |_, _| 0.0,
    );
}

#[test]
fn heap_bytes_reasonable() {
    let (_, g) = small_graph(300);
    let hb = g.heap_bytes();
    let enc = g.encode().len();
    assert!(hb >= enc / 2 && hb <= enc * 4, "heap {hb} enc {enc}");
}

// ---- fuzz ----------------------------------------------------------------------------------

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn valid_bytes() -> Vec<u8> {
        static B: OnceLock<Vec<u8>> = OnceLock::new();
        B.get_or_init(|| small_graph(40).1.encode()).clone()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = UnitGraph::decode(&bytes);
        }

        #[test]
        fn decode_never_panics_with_valid_header(n in 0u32..64, top in 0u8..3, tail in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut b = Vec::new();
            b.extend_from_slice(&MAGIC);
            b.extend_from_slice(&n.to_le_bytes());
            b.extend_from_slice(&3u32.to_le_bytes());
            b.extend_from_slice(&10u32.to_le_bytes());
            b.extend_from_slice(&0u64.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
            b.push(top);
            b.extend_from_slice(&tail);
            if let Ok(g) = UnitGraph::decode(&b) {
                prop_assert_eq!(g.encode(), b);
                let _ = g.search(5, |r| r as f32, |_| true);
            }
        }

        /// Mutations of a valid encoding: never panic; anything accepted is canonical
        /// (re-encodes to the same bytes) and searchable.
        #[test]
        fn mutated_valid_encoding(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4), cut in any::<usize>(), do_cut in any::<bool>()) {
            let mut b = valid_bytes();
            for (at, v) in edits {
                let i = at % b.len();
                b[i] = v;
            }
            if do_cut {
                b.truncate(cut % (b.len() + 1));
            }
            if let Ok(g) = UnitGraph::decode(&b) {
                prop_assert_eq!(g.encode(), b);
                let got = g.search(8, |r| (r as f32 - 20.0).abs(), |r| r % 2 == 0);
                prop_assert!(got.len() <= 8);
            }
        }
    }
}
