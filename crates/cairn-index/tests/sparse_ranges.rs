//! The sparse lane scores a query with many postings in ranges of chunks at once and merges
//! their best `k`, testing its gate per chunk as bits. Under 1, 2, 3 and 8 threads (so 1 to
//! 8 ranges) every answer equals scoring every node by hand (the dot product in `f64`, in
//! increasing query dimension, rounded once; ties by ordinal), with and without a gate.

use cairn_core::{Hash, Node, NodeId, SparseVector};
use cairn_index::{top_k_vec, CommitIndexes, Hit, IndexParams};

/// Node `i`'s sparse vector: four dimensions every node has (weights that repeat, so
/// scores tie), a filler of five and a rarer one of 97.
fn vector(i: u32) -> Vec<(u32, f32)> {
    vec![
        (0, 1.0 + (i % 4) as f32 * 0.5),
        (1, 0.25 * (i % 3) as f32 + 0.5),
        (2, 1.0),
        (3, (i % 7) as f32 - 3.0),
        (20 + i % 5, 2.0),
        (30 + i % 97, 0.75),
    ]
}

/// Every node scored by hand: those with a posting in the query and in the gate.
fn by_hand(n: u32, query: &[(u32, f32)], gate: Option<&dyn Fn(u32) -> bool>, k: usize) -> Vec<Hit> {
    let hits: Vec<Hit> = (0..n)
        .filter(|&i| gate.is_none_or(|g| g(i)))
        .filter_map(|i| {
            let v = vector(i);
            let mut sum = 0.0f64;
            let mut any = false;
            for &(d, qw) in query {
                if let Some(&(_, w)) = v.iter().find(|p| p.0 == d) {
                    any = true;
                    sum += f64::from(qw) * f64::from(w);
                }
            }
            any.then_some(Hit {
                ordinal: i,
                score: sum as f32,
            })
        })
        .collect();
    top_k_vec(hits, k)
}

#[test]
fn ranges_scored_at_once_give_the_same_answer() {
    // 16,000 nodes (about 250 chunks); a query of the four common dimensions has 64,000
    // postings (two or three ranges of at least 20,000).
    let n = 16_000u32;
    let nodes: Vec<(Hash, Node)> = (0..n)
        .map(|i| {
            let v = vector(i);
            let node = Node::new(NodeId::new(format!("n{i:05}")).unwrap())
                .with_label(if i.is_multiple_of(3) { "A" } else { "B" })
                .with_sparse(
                    "s",
                    SparseVector::new(v.iter().map(|p| p.0).collect(), v.iter().map(|p| p.1).collect()),
                );
            (Hash::of(&i.to_le_bytes()), node)
        })
        .collect();
    let ix = CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[]);
    assert!(ix.chunks().len() >= 128, "enough chunks for several ranges");
    let a = ix.labels_all_of(&["A".to_string()]);
    let in_a = |i: u32| i.is_multiple_of(3);
    let queries: [Vec<(u32, f32)>; 3] = [
        vec![(0, 1.0), (1, 2.0), (2, 0.5), (3, 1.0)],
        vec![(0, 0.5), (1, 1.0), (2, 1.0), (3, -0.5), (22, 3.0), (80, -1.0)],
        vec![(0, 1.0), (1, 1.0), (2, 2.0), (3, 0.25), (21, 0.5), (24, 0.25)],
    ];
    for q in &queries {
        let sq = SparseVector::new(q.iter().map(|p| p.0).collect(), q.iter().map(|p| p.1).collect());
        for k in [1usize, 100, 1000] {
            let want_all = by_hand(n, q, None, k);
            let want_a = by_hand(n, q, Some(&in_a), k);
            assert_eq!(want_all.len(), k);
            for threads in [1, 2, 3, 8] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let (all, gated) = pool.install(|| {
                    (
                        ix.sparse_search("s", &sq, k, None).unwrap(),
                        ix.sparse_search("s", &sq, k, Some(&a)).unwrap(),
                    )
                });
                assert_eq!(all, want_all, "{q:?} k {k}, {threads} threads");
                assert_eq!(gated, want_a, "{q:?} k {k}, {threads} threads, gated");
            }
        }
    }
}
