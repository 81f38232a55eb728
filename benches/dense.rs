//! Dense lane benchmarks: the exact scan at 100,000 × 384 (unfiltered and with a 0.1 %
//! label filter), an HNSW base (build time, recall@10 against the exact scan, query
//! latency) and the load (decode) time of a persisted index.
//!
//! Data: synthetic clustered unit vectors (256 seeded random centres, each point a centre
//! plus uniform noise, normalised). The base is built over `CAIRN_BENCH_HNSW_N` vectors
//! (default 20,000; 100,000 takes minutes on one core).
//!
//! `cargo bench --bench dense -- --sample-size 10`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::NodeId;
use cairn_index::dense::{decode_dense, encode_dense, INT8_RESCORE};
use cairn_index::hnsw::{decode_hnsw, encode_hnsw, HnswParams};
use cairn_index::DenseIndex;
use criterion::{criterion_group, criterion_main, Criterion};
use rng::Lcg;

const DIM: usize = 384;
const N: usize = 100_000;

mod rng {
    /// A seeded 64-bit LCG: the bench data is the same on every run.
    pub struct Lcg(pub u64);
    impl Lcg {
        pub fn unit(&mut self) -> f32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        }
        pub fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }
}

fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    for x in v {
        *x /= norm;
    }
}

/// `n` clustered unit vectors, row-major.
fn clustered(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Lcg(0xC1A5_7E85);
    let centres: Vec<Vec<f32>> = (0..256)
        .map(|_| {
            let mut c: Vec<f32> = (0..DIM).map(|_| rng.unit()).collect();
            normalise(&mut c);
            c
        })
        .collect();
    let mut rng = Lcg(seed);
    let mut out = Vec::with_capacity(n * DIM);
    for _ in 0..n {
        let c = &centres[rng.below(centres.len())];
        let mut v: Vec<f32> = c.iter().map(|x| x + 0.06 * rng.unit()).collect();
        normalise(&mut v);
        out.extend_from_slice(&v);
    }
    out
}

fn index_of(vectors: &[f32]) -> DenseIndex {
    let n = vectors.len() / DIM;
    DenseIndex::build(
        "bench",
        DIM,
        n as u32,
        vectors.chunks_exact(DIM).enumerate().map(|(i, v)| (i as u32, v)),
    )
}

fn ids(n: usize) -> Vec<NodeId> {
    (0..n).map(|i| NodeId::new(format!("doc-{i:07}")).unwrap()).collect()
}

/// CPU seconds this process has used (user + system, `/proc/self/stat`, 10 ms ticks; 0 where
/// unavailable). The bench machines are shared, so CPU time is reported beside wall time.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let f: Vec<&str> = after.split(' ').collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

/// `(p50 wall ms, mean CPU ms)` of `f` over the queries (run `rounds` times).
fn latency_ms(queries: &[f32], rounds: usize, mut f: impl FnMut(&[f32])) -> (f64, f64) {
    let mut t: Vec<f64> = Vec::new();
    let cpu = cpu_seconds();
    for _ in 0..rounds {
        for q in queries.chunks_exact(DIM) {
            let s = Instant::now();
            f(q);
            t.push(s.elapsed().as_secs_f64() * 1e3);
        }
    }
    let cpu_ms = (cpu_seconds() - cpu) * 1e3 / t.len() as f64;
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], cpu_ms)
}

fn bench_dense(c: &mut Criterion) {
    let t = Instant::now();
    let vectors = clustered(N, 1);
    let queries = clustered(200, 2);
    let full = index_of(&vectors);
    eprintln!(
        "[dense] data + exact index of {N} x {DIM}: {:.2} s",
        t.elapsed().as_secs_f64()
    );
    // A label held by 0.1 % of the nodes.
    // (The root package does not depend on `roaring`: a cleared copy of the index's own
    // bitmap gives the type.)
    let mut rng = Lcg(3);
    let mut label = full.present().clone();
    label.clear();
    while label.len() < (N / 1000) as u64 {
        label.insert(rng.below(N) as u32);
    }

    eprintln!(
        "[dense] exact k=10 at {N} (p50 wall ms, mean CPU ms): unfiltered {:.3?}, 0.1% filter ({} nodes) {:.4?}",
        latency_ms(&queries, 1, |q| {
            black_box(full.search(q, 10, None).unwrap());
        }),
        label.len(),
        latency_ms(&queries, 50, |q| {
            black_box(full.search(q, 10, Some(&label)).unwrap());
        })
    );
    // The int8 scan with exact rescoring (codes made by the first call).
    full.search_int8(&queries[..DIM], 10, INT8_RESCORE, None).unwrap();
    for rescore in [20, 50, INT8_RESCORE] {
        let mut overlap = 0usize;
        for q in queries.chunks_exact(DIM) {
            let want = full.search(q, 10, None).unwrap().hits;
            let got = full.search_int8(q, 10, rescore, None).unwrap().hits;
            overlap += got.iter().filter(|h| want.contains(h)).count();
        }
        eprintln!(
            "[dense] int8 scan k=10 at {N}, {rescore} rescored: recall@10 {:.4}, (p50 wall ms, mean CPU ms) {:.3?}",
            overlap as f64 / (10 * queries.len() / DIM) as f64,
            latency_ms(&queries, 1, |q| {
                black_box(full.search_int8(q, 10, rescore, None).unwrap());
            })
        );
    }
    let mut q = queries.chunks_exact(DIM).cycle();
    c.bench_function("dense/int8_100k_k10", |b| {
        b.iter(|| full.search_int8(q.next().unwrap(), 10, INT8_RESCORE, None).unwrap())
    });
    c.bench_function("dense/exact_100k_k10", |b| {
        b.iter(|| full.search(q.next().unwrap(), 10, None).unwrap())
    });
    c.bench_function("dense/exact_100k_k10_filter_0.1pct", |b| {
        b.iter(|| full.search(q.next().unwrap(), 10, Some(&label)).unwrap())
    });

    // HNSW base.
    let hn: usize = std::env::var("CAIRN_BENCH_HNSW_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let sub = index_of(&vectors[..hn * DIM]);
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let base = sub.build_base(&ids(hn), &HnswParams::default()).unwrap();
    let (build_s, build_cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let base = Arc::new(base);
    let with_base = sub.with_base(base.clone());
    let mut overlap = 0usize;
    for q in queries.chunks_exact(DIM) {
        let want = sub.search(q, 10, None).unwrap().hits;
        let got = with_base.search(q, 10, None).unwrap();
        assert!(got.approximate);
        overlap += got
            .hits
            .iter()
            .filter(|h| want.iter().any(|w| w.ordinal == h.ordinal))
            .count();
    }
    let mut sub_label = label.clone();
    sub_label.remove_range(hn as u32..);
    eprintln!(
        "[dense] HNSW base of {hn}: build {build_s:.2} s wall / {build_cpu:.2} CPU s (1 thread), recall@10 {:.4}; \
         k=10 (p50 wall ms, mean CPU ms): graph {:.3?}, exact {:.3?}, 0.1% filter through the base index {:.4?}",
        overlap as f64 / (10 * queries.len() / DIM) as f64,
        latency_ms(&queries, 2, |q| {
            black_box(with_base.search(q, 10, None).unwrap());
        }),
        latency_ms(&queries, 2, |q| {
            black_box(sub.search(q, 10, None).unwrap());
        }),
        latency_ms(&queries, 50, |q| {
            black_box(with_base.search(q, 10, Some(&sub_label)).unwrap());
        }),
    );
    c.bench_function(&format!("dense/hnsw_{hn}_k10"), |b| {
        b.iter(|| with_base.search(q.next().unwrap(), 10, None).unwrap())
    });

    // Load time of a persisted index: the base (graph + key check) and the exact part.
    let base_bytes = encode_hnsw(&base).unwrap();
    let dense_bytes = encode_dense(&full);
    let sub_bytes = encode_dense(&with_base);
    eprintln!(
        "[dense] persisted sizes: base of {hn} {:.1} MB, exact index of {N} {:.1} MB",
        base_bytes.len() as f64 / 1e6,
        dense_bytes.len() as f64 / 1e6
    );
    let cpu = cpu_seconds();
    for _ in 0..5 {
        black_box(decode_hnsw(&base_bytes).unwrap());
    }
    let hnsw_cpu = (cpu_seconds() - cpu) / 5.0;
    let cpu = cpu_seconds();
    for _ in 0..5 {
        black_box(decode_dense(&dense_bytes).unwrap());
    }
    eprintln!(
        "[dense] load, mean CPU s: decode_hnsw({hn}) {hnsw_cpu:.3}, decode_dense({N}) {:.3}",
        (cpu_seconds() - cpu) / 5.0
    );
    let mut group = c.benchmark_group("dense/load");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    group.bench_function(format!("decode_hnsw_{hn}"), |b| {
        b.iter(|| decode_hnsw(&base_bytes).unwrap())
    });
    group.bench_function(format!("decode_dense_{N}"), |b| {
        b.iter(|| decode_dense(&dense_bytes).unwrap())
    });
    group.bench_function(format!("decode_dense_{hn}_and_attach_base"), |b| {
        b.iter(|| decode_dense(&sub_bytes).unwrap().into_with_base(base.clone()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5));
    targets = bench_dense
}
criterion_main!(benches);
