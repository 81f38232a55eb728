//! Dense lane benchmarks at 100,000 × 384 over a chunked index view: the plain `f32`
//! scan (the reference), the default exact search (int8 scan with a proven bound, exact
//! rescoring) unfiltered and with a 0.1 % filter, the HNSW unit graphs (build time with 1, 2
//! and all threads — byte-identical — recall@10 against exact, query latency), the
//! decode time of the stored dense parts, and the exact search over parts decoded from
//! their stored bytes (each row's codes checked when first read, or trusted as a checking
//! store's).
//!
//! Data: synthetic clustered unit vectors (256 seeded random centres, each point a centre
//! plus uniform noise, normalised).
//!
//! `cargo bench --bench dense -- --sample-size 10`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::{Hash, Node, NodeId};
use cairn_index::{persist, AnnOptions, CommitIndexes, IndexParams};
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

fn view_of(vectors: &[f32]) -> CommitIndexes {
    let nodes: Vec<(Hash, Node)> = vectors
        .chunks_exact(DIM)
        .enumerate()
        .map(|(i, v)| {
            let id = NodeId::new(format!("doc-{i:07}")).unwrap();
            (
                Hash::of(id.as_str().as_bytes()),
                Node::new(id).with_embedding("bench", v.to_vec()),
            )
        })
        .collect();
    CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[])
}

/// The rows of a built view's dense parts, as their node objects would hold them: the
/// parts decoded from their stored bytes read them from here.
struct Rows(std::collections::HashMap<(Hash, u32), Vec<u8>>);

impl Rows {
    fn of(view: &CommitIndexes) -> Rows {
        let d = view.dense("bench").unwrap();
        let mut rows = std::collections::HashMap::new();
        for p in (0..view.chunks().len()).filter_map(|c| d.part(c)) {
            for r in 0..p.len() {
                let bytes = p.vector(r).unwrap().iter().flat_map(|x| x.to_le_bytes()).collect();
                rows.insert(p.row_place(r).unwrap(), bytes);
            }
        }
        Rows(rows)
    }
}

impl cairn_index::RowSource for Rows {
    fn read_at(&self, _key: &[u8], _offset: u64, _out: &mut [u8]) -> Result<bool, String> {
        Ok(false)
    }
    fn read_object_at(&self, node: &Hash, offset: u64, out: &mut [u8]) -> Result<bool, String> {
        let Some(row) = self.0.get(&(*node, offset as u32)) else {
            return Ok(false);
        };
        out.copy_from_slice(row);
        Ok(true)
    }
    fn node_vector(&self, _node: &Hash, _model: &str) -> Result<Vec<f32>, String> {
        Err("not here".into())
    }
    fn node_text(&self, _node: &Hash) -> Result<String, String> {
        Err("not here".into())
    }
    fn damaged(&self, key: &[u8], detail: String) {
        panic!("part {key:?} reported damaged: {detail}");
    }
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

fn graph_digest(view: &CommitIndexes) -> Hash {
    let mut bytes = Vec::new();
    let z = Hash::ZERO;
    for u in 0..view.dense("bench").unwrap().unit_count() {
        bytes.extend_from_slice(&persist::encode_unit_graph(
            &z,
            "bench",
            view.dense("bench").unwrap().unit_graph(u).unwrap(),
        ));
    }
    Hash::of(&bytes)
}

fn bench_dense(c: &mut Criterion) {
    let t = Instant::now();
    let vectors = clustered(N, 1);
    let queries = clustered(200, 2);
    let view = view_of(&vectors);
    println!(
        "[dense] built a view of {N} × {DIM} in {:?} ({} chunks)",
        t.elapsed(),
        view.chunks().len()
    );
    let rare = view.filter_of((0..N as u32).filter(|o| o % 1000 == 0));

    let (reference, _) = latency_ms(&queries, 1, |q| {
        black_box(view.dense_search_reference("bench", q, 10, None).unwrap());
    });
    let mut rescored = Vec::new();
    let (exact, exact_cpu) = latency_ms(&queries, 3, |q| {
        let r = view.dense_search("bench", q, 10, None).unwrap();
        rescored.push(r.rescored as f64);
        black_box(r);
    });
    let (exact_1000, _) = latency_ms(&queries, 1, |q| {
        black_box(view.dense_search("bench", q, 1000, None).unwrap());
    });
    let (rare_ms, _) = latency_ms(&queries, 3, |q| {
        black_box(view.dense_search("bench", q, 10, Some(&rare)).unwrap());
    });
    rescored.sort_by(f64::total_cmp);
    println!(
        "[dense] p50 ms: f32 scan k=10 {reference:.2}; exact (int8 bound + rescoring) k=10 {exact:.2} (CPU {exact_cpu:.2}, \
         {:.0} rows rescored at p50), k=1000 {exact_1000:.2}; 0.1 % filter k=10 {rare_ms:.3}",
        rescored[rescored.len() / 2]
    );

    // Unit graphs: build with 1, 2 and all threads; the bytes must not differ.
    let mut digests = Vec::new();
    let mut graphs_view = None;
    for threads in [1usize, 2, 0] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut v = view.clone();
        let t = Instant::now();
        let cpu = cpu_seconds();
        pool.install(|| v.build_unit_graphs("bench").unwrap());
        println!(
            "[dense] unit graphs ({} units) with {} threads: {:.2} s wall, {:.2} CPU s",
            v.dense("bench").unwrap().unit_count(),
            if threads == 0 {
                pool.current_num_threads()
            } else {
                threads
            },
            t.elapsed().as_secs_f64(),
            cpu_seconds() - cpu
        );
        digests.push(graph_digest(&v));
        graphs_view = Some(v);
    }
    assert!(
        digests.windows(2).all(|w| w[0] == w[1]),
        "unit graphs differ across thread counts"
    );
    let gv = graphs_view.unwrap();
    let mut overlap = 0.0;
    for q in queries.chunks_exact(DIM) {
        let want = gv.dense_search_reference("bench", q, 10, None).unwrap();
        let got = gv.dense_search_ann("bench", q, 10, None).unwrap();
        overlap += got.hits.iter().filter(|h| want.contains(h)).count() as f64 / 10.0;
    }
    let (ann, ann_cpu) = latency_ms(&queries, 3, |q| {
        black_box(gv.dense_search_ann("bench", q, 10, None).unwrap());
    });
    let (ann_100, _) = latency_ms(&queries, 3, |q| {
        black_box(
            gv.dense_search_ann_with("bench", q, 100, None, &AnnOptions::default())
                .unwrap(),
        );
    });
    println!(
        "[dense] ANN k=10: recall@10 vs exact {:.4}, p50 {ann:.3} ms (CPU {ann_cpu:.3}); k=100 p50 {ann_100:.3} ms",
        overlap / 200.0
    );

    // Loading: decode every stored dense part.
    let z = Hash::ZERO;
    let dense = view.dense("bench").unwrap();
    let encoded: Vec<Option<Vec<u8>>> = (0..view.chunks().len())
        .map(|c| {
            dense
                .part(c)
                .map(|p| persist::encode_dense(&z, "bench", view.chunks()[c].len() as u32, p))
        })
        .collect();
    let stored: Vec<&Vec<u8>> = encoded.iter().flatten().collect();
    let t = Instant::now();
    for b in &stored {
        black_box(persist::decode_dense(b, &z).unwrap());
    }
    println!(
        "[dense] decode of the {} stored dense parts ({:.0} MiB): {:.0} ms",
        stored.len(),
        stored.iter().map(|b| b.len()).sum::<usize>() as f64 / 1048576.0,
        t.elapsed().as_secs_f64() * 1e3
    );

    // The same parts as a fresh process loads them: decoded from their stored bytes, rows
    // read from where the parts say they are, and each row's codes checked against its
    // crc32 the first time a scan reads them (index format 9: the first pass over the
    // queries checks the rows they score; later passes test one bit a row) — or trusted,
    // as from a store that checked each value whole as it read it.
    let rows: Arc<dyn cairn_index::RowSource> = Arc::new(Rows::of(&view));
    let decoded = |checked: persist::Checked| {
        let mut v = view.clone();
        let parts = encoded
            .iter()
            .map(|b| {
                b.as_ref().map(|b| {
                    let head = persist::decode_dense_checked(b, &z, checked).unwrap().2;
                    Arc::new(head.into_rows_held(Arc::clone(&rows), b"bench"))
                })
            })
            .collect();
        v.set_dense("bench", parts).unwrap();
        v
    };
    let loaded = decoded(persist::Checked::No);
    let (first_pass, _) = latency_ms(&queries, 1, |q| {
        black_box(loaded.dense_search("bench", q, 10, None).unwrap());
    });
    let (loaded_exact, loaded_cpu) = latency_ms(&queries, 3, |q| {
        black_box(loaded.dense_search("bench", q, 10, None).unwrap());
    });
    let (loaded_rare, _) = latency_ms(&queries, 3, |q| {
        black_box(loaded.dense_search("bench", q, 10, Some(&rare)).unwrap());
    });
    let trusted = decoded(persist::Checked::ByStore);
    latency_ms(&queries, 1, |q| {
        black_box(trusted.dense_search("bench", q, 10, None).unwrap());
    });
    let (trusted_exact, trusted_cpu) = latency_ms(&queries, 3, |q| {
        black_box(trusted.dense_search("bench", q, 10, None).unwrap());
    });

    println!(
        "[dense] parts decoded from their stored bytes, exact k=10 p50 ms: first pass over the queries \
         (codes checked as read, rows read) {first_pass:.2}; then {loaded_exact:.2} (CPU {loaded_cpu:.2}; built parts: \
         {exact:.2}); 0.1 % filter {loaded_rare:.3} (built: {rare_ms:.3}); checked by the store instead: \
         {trusted_exact:.2} (CPU {trusted_cpu:.2})"
    );

    let q: Vec<f32> = queries[..DIM].to_vec();
    let mut group = c.benchmark_group("dense");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("exact_k10", |b| {
        b.iter(|| view.dense_search("bench", &q, 10, None).unwrap())
    });
    group.bench_function("exact_k1000", |b| {
        b.iter(|| view.dense_search("bench", &q, 1000, None).unwrap())
    });
    group.bench_function("reference_f32_k10", |b| {
        b.iter(|| view.dense_search_reference("bench", &q, 10, None).unwrap())
    });
    group.bench_function("exact_rare_filter_k10", |b| {
        b.iter(|| view.dense_search("bench", &q, 10, Some(&rare)).unwrap())
    });
    group.bench_function("ann_k10", |b| {
        b.iter(|| gv.dense_search_ann("bench", &q, 10, None).unwrap())
    });
    group.finish();
    let _ = Arc::new(());
}

criterion_group!(benches, bench_dense);
criterion_main!(benches);
