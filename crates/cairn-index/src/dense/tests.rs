use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::hnsw::{decode_hnsw, encode_hnsw};

fn lcg_vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n * dim)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn node_ids(n: usize) -> Vec<NodeId> {
    (0..n).map(|i| NodeId::new(format!("n{i:06}")).unwrap()).collect()
}

/// Every node has a vector: ordinal = row.
fn full_index(vectors: &[f32], dim: usize) -> DenseIndex {
    let n = vectors.len() / dim;
    DenseIndex::build(
        "m",
        dim,
        n as u32,
        vectors.chunks_exact(dim).enumerate().map(|(i, v)| (i as u32, v)),
    )
}

/// The naive answer: score every present vector with the documented order, sort fully.
fn naive(index: &DenseIndex, q: &[f32], k: usize, filter: Option<&RoaringBitmap>) -> Vec<Hit> {
    let mut all: Vec<Hit> = index
        .ordinals
        .iter()
        .enumerate()
        .filter(|(_, o)| filter.is_none_or(|f| f.contains(**o)))
        .map(|(r, &o)| Hit {
            ordinal: o,
            score: kernel::dot_reference(q, index.row(r)),
        })
        .collect();
    all.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.ordinal.cmp(&b.ordinal)));
    all.truncate(k);
    all
}

fn bits(hits: &[Hit]) -> Vec<(u32, u32)> {
    hits.iter().map(|h| (h.ordinal, h.score.to_bits())).collect()
}

#[test]
fn exact_search_equals_the_naive_reference() {
    let dim = 37;
    let v = lcg_vectors(500, dim, 1);
    // Every third node has no vector.
    let index = DenseIndex::build(
        "m",
        dim,
        750,
        v.chunks_exact(dim).enumerate().map(|(i, x)| ((i + i / 2) as u32, x)),
    );
    assert_eq!(index.len(), 500);
    let filter: RoaringBitmap = (0..750).filter(|o| o % 7 == 0).collect();
    let small: RoaringBitmap = [3u32, 4, 5, 700, 749].into_iter().collect();
    for (qi, q) in lcg_vectors(5, dim, 99).chunks_exact(dim).enumerate() {
        for k in [0, 1, 10, 499, 500, 1000] {
            for f in [None, Some(&filter), Some(&small)] {
                let got = index.search(q, k, f).unwrap();
                assert!(!got.approximate);
                assert_eq!(bits(&got.hits), bits(&naive(&index, q, k, f)), "query {qi} k {k}");
            }
        }
    }
}

#[test]
fn ties_break_by_ordinal() {
    let index = DenseIndex::build(
        "m",
        2,
        4,
        [
            (0, &[1.0, 0.0][..]),
            (1, &[0.0, 1.0]),
            (2, &[1.0, 0.0]),
            (3, &[2.0, 0.0]),
        ],
    );
    let got = index.search(&[1.0, 0.0], 4, None).unwrap();
    let ords: Vec<u32> = got.hits.iter().map(|h| h.ordinal).collect();
    assert_eq!(ords, vec![3, 0, 2, 1]);
}

#[test]
fn bad_queries_are_typed_errors() {
    let index = full_index(&lcg_vectors(10, 4, 2), 4);
    assert_eq!(
        index.search(&[1.0; 3], 5, None),
        Err(IndexError::DimensionMismatch {
            model: "m".into(),
            expected: 4,
            got: 3
        })
    );
    assert_eq!(
        index.search(&[1.0, f32::NAN, 0.0, 0.0], 5, None),
        Err(IndexError::NonFiniteQuery {
            model: "m".into(),
            position: 1
        })
    );
    assert!(matches!(
        index.search(&[1.0, 0.0, f32::INFINITY, 0.0], 5, None),
        Err(IndexError::NonFiniteQuery { position: 2, .. })
    ));
    // Checked even when there is nothing to return.
    assert!(index.search(&[f32::NAN; 4], 0, None).is_err());
    let empty = DenseIndex::build("m", 4, 0, std::iter::empty());
    assert!(empty.search(&[1.0; 5], 1, None).is_err());
    assert!(empty.search(&[1.0; 4], 1, None).unwrap().hits.is_empty());
}

#[test]
fn round_trip_is_identical() {
    let dim = 5;
    let v = lcg_vectors(40, dim, 3);
    let index = DenseIndex::build(
        "minilm",
        dim,
        90,
        v.chunks_exact(dim).enumerate().map(|(i, x)| ((2 * i) as u32, x)),
    );
    let bytes = encode_dense(&index);
    let back = decode_dense(&bytes).unwrap();
    assert_eq!(back, index);
    assert_eq!(encode_dense(&back), bytes);
    // Refusals.
    assert!(decode_dense(&bytes[..bytes.len() - 1]).is_err());
    let mut t = bytes.clone();
    t.push(0);
    assert!(decode_dense(&t).is_err());
    assert!(decode_dense(&[]).is_err());
    let mut tag = bytes.clone();
    tag[0] = 0;
    assert!(decode_dense(&tag).is_err());
    let mut huge = bytes.clone();
    huge[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(decode_dense(&huge).is_err());
    let mut nan = bytes.clone();
    let at = nan.len() - 4;
    nan[at..].copy_from_slice(&f32::NAN.to_le_bytes());
    assert!(matches!(decode_dense(&nan), Err(IndexError::BadStoredIndex(_))));
}

#[test]
fn base_answers_approximately_and_finds_its_points() {
    let (n, dim) = (2000, 16);
    let v = lcg_vectors(n, dim, 4);
    let exact = full_index(&v, dim);
    let base = Arc::new(exact.build_base(&node_ids(n), &HnswParams::default()).unwrap());
    let index = exact.with_base(base.clone());
    assert_eq!(index.delta_len(), 0);
    assert_eq!(index.stale_base_len(), 0);
    assert_eq!(index, exact.with_base(base));
    let mut found = 0;
    for i in (0..n).step_by(37) {
        let q = &v[i * dim..(i + 1) * dim];
        let got = index.search(q, 10, None).unwrap();
        assert!(got.approximate);
        let want = exact.search(q, 10, None).unwrap();
        assert!(!want.approximate);
        // Scores are exact, bit for bit, whichever path found the node.
        for h in &got.hits {
            assert_eq!(
                h.score.to_bits(),
                kernel::dot_reference(q, exact.vector(h.ordinal).unwrap()).to_bits()
            );
        }
        if got.hits[0].ordinal == want.hits[0].ordinal {
            found += 1;
        }
    }
    assert_eq!(found, (0..n).step_by(37).count());
    // k over ef_search / OVERFETCH: exact.
    let q = &v[..dim];
    let big = index.search(q, 33, None).unwrap();
    assert!(!big.approximate);
    assert_eq!(big, exact.search(q, 33, None).unwrap());
}

#[test]
fn selective_filters_with_a_base_return_k_results() {
    let (n, dim) = (4000, 8);
    let v = lcg_vectors(n, dim, 5);
    let exact = full_index(&v, dim);
    let base = Arc::new(exact.build_base(&node_ids(n), &HnswParams::default()).unwrap());
    let index = exact.with_base(base);
    // A label held by 0.1 % of the nodes.
    let label: RoaringBitmap = (0..n as u32).filter(|o| o % 1000 == 123).collect();
    assert_eq!(label.len(), 4);
    // A filter with ordinals that have no vector, and one with fewer than k members.
    let mut wider = label.clone();
    wider.insert(10_000);
    for q in lcg_vectors(20, dim, 6).chunks_exact(dim) {
        for (f, k, want) in [(&label, 4, 4), (&label, 10, 4), (&wider, 3, 3), (&wider, 10, 4)] {
            let got = index.search(q, k, Some(f)).unwrap();
            assert_eq!(got.hits.len(), want);
            assert!(got.hits.iter().all(|h| label.contains(h.ordinal)));
            assert_eq!(got.hits, exact.search(q, k, Some(f)).unwrap().hits);
        }
        // A broad filter goes through the graph and still returns k, all inside it.
        let half: RoaringBitmap = (0..n as u32).filter(|o| o % 2 == 0).collect();
        let got = index.search(q, 10, Some(&half)).unwrap();
        assert!(got.approximate);
        assert_eq!(got.hits.len(), 10);
        assert!(got.hits.iter().all(|h| half.contains(h.ordinal)));
    }
}

#[test]
fn persisted_index_with_base_loads_identically() {
    let (n, dim) = (600, 8);
    let v = lcg_vectors(n, dim, 7);
    let exact = full_index(&v, dim);
    let base = Arc::new(exact.build_base(&node_ids(n), &HnswParams::default()).unwrap());
    // Change a few nodes after the base so the delta is not empty.
    let remap = OrdinalRemap {
        old_to_new: (0..n as u32).map(|o| (o % 50 != 0).then_some(o)).collect(),
        new_len: n as u32,
    };
    let fresh = lcg_vectors(n / 50, dim, 8);
    let upserted: Vec<(u32, &[f32])> = fresh
        .chunks_exact(dim)
        .enumerate()
        .map(|(i, x)| ((i * 50) as u32, x))
        .collect();
    let index = DenseIndex::derive(&exact.with_base(base.clone()), &remap, upserted);
    assert_eq!(index.delta_len(), n / 50);
    assert_eq!(index.stale_base_len(), n / 50);
    let dense_bytes = encode_dense(&index);
    let base_bytes = encode_hnsw(&base).unwrap();
    let loaded = decode_dense(&dense_bytes).unwrap();
    assert_eq!(loaded.named_base_key(), Some(base.key));
    assert_eq!(loaded.base_key(), None);
    assert!(loaded.base().is_none());
    assert_eq!(loaded, index);
    let loaded_base = Arc::new(decode_hnsw(&base_bytes).unwrap());
    assert_eq!(loaded_base.key, loaded.named_base_key().unwrap());
    let copy = loaded.with_base(loaded_base.clone());
    let loaded = loaded.into_with_base(loaded_base);
    assert_eq!(loaded.base_key(), Some(base.key));
    assert_eq!(loaded, index);
    assert_eq!(copy, loaded);
    assert_eq!(copy.cover.row_point, loaded.cover.row_point);
    assert_eq!(encode_dense(&loaded), dense_bytes);
    for q in lcg_vectors(10, dim, 9).chunks_exact(dim) {
        assert_eq!(loaded.search(q, 10, None).unwrap(), index.search(q, 10, None).unwrap());
    }
}

#[test]
fn two_builds_of_a_base_are_byte_identical() {
    let (n, dim) = (1500, 24);
    let v = lcg_vectors(n, dim, 10);
    let exact = full_index(&v, dim);
    let a = encode_hnsw(&exact.build_base(&node_ids(n), &HnswParams::default()).unwrap()).unwrap();
    let b = encode_hnsw(&exact.build_base(&node_ids(n), &HnswParams::default()).unwrap()).unwrap();
    assert_eq!(a, b);
}

// ---------------------------------------------------------------------------------------
// derive == build, over random change sequences.

/// A node of the model commit: its vector (if it has one) and a revision (a change that
/// keeps the vector still changes the node's hash).
#[derive(Debug, Clone, PartialEq)]
struct Doc {
    vector: Option<Vec<f32>>,
    rev: u32,
}

type State = BTreeMap<u8, Doc>;

fn build_state(state: &State, dim: usize) -> DenseIndex {
    let rows: Vec<(u32, &[f32])> = state
        .values()
        .enumerate()
        .filter_map(|(o, d)| d.vector.as_deref().map(|v| (o as u32, v)))
        .collect();
    DenseIndex::build("m", dim, state.len() as u32, rows)
}

fn derive_state(parent_index: &DenseIndex, parent: &State, child: &State) -> DenseIndex {
    let child_ord: BTreeMap<u8, u32> = child.keys().enumerate().map(|(o, k)| (*k, o as u32)).collect();
    let old_to_new = parent
        .iter()
        .map(|(k, d)| match child.get(k) {
            Some(c) if c == d => Some(child_ord[k]),
            _ => None,
        })
        .collect();
    let remap = OrdinalRemap {
        old_to_new,
        new_len: child.len() as u32,
    };
    let upserted: Vec<(u32, &[f32])> = child
        .iter()
        .filter(|(k, d)| parent.get(k) != Some(d))
        .filter_map(|(k, d)| d.vector.as_deref().map(|v| (child_ord[k], v)))
        .collect();
    DenseIndex::derive(parent_index, &remap, upserted)
}

#[derive(Debug, Clone)]
enum Op {
    Remove(u8),
    SetVector(u8, Vec<f32>),
    Touch(u8),
    DropVector(u8),
}

const DIM: usize = 3;

/// Components from a small set, so equal vectors (shared base points) are common.
fn vector() -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(prop::sample::select(vec![-1.0f32, -0.5, 0.0, 0.5, 1.0, 2.0]), DIM)
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0u8..24;
    prop_oneof![
        id.clone().prop_map(Op::Remove),
        (id.clone(), vector()).prop_map(|(i, v)| Op::SetVector(i, v)),
        id.clone().prop_map(Op::Touch),
        id.prop_map(Op::DropVector),
    ]
}

fn apply(state: &mut State, op: &Op) {
    match op {
        Op::Remove(i) => {
            state.remove(i);
        }
        Op::SetVector(i, v) => {
            let d = state.entry(*i).or_insert(Doc { vector: None, rev: 0 });
            d.vector = Some(v.clone());
            d.rev += 1;
        }
        Op::Touch(i) => {
            let d = state.entry(*i).or_insert(Doc { vector: None, rev: 0 });
            d.rev += 1;
        }
        Op::DropVector(i) => {
            if let Some(d) = state.get_mut(i) {
                d.vector = None;
                d.rev += 1;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn derive_equals_build(
        initial in prop::collection::vec((0u8..24, prop::option::of(vector())), 0..24),
        commits in prop::collection::vec(prop::collection::vec(op(), 0..6), 1..6),
        queries in prop::collection::vec(vector(), 3),
        with_base in any::<bool>(),
    ) {
        let mut state = State::new();
        for (i, v) in initial {
            state.insert(i, Doc { vector: v, rev: 0 });
        }
        let mut index = build_state(&state, DIM);
        let base = if with_base {
            let ids: Vec<NodeId> = state.keys().map(|k| NodeId::new(format!("k{k:03}")).unwrap()).collect();
            let b = Arc::new(index.build_base(&ids, &HnswParams::default()).unwrap());
            index = index.with_base(b.clone());
            Some(b)
        } else {
            None
        };
        for ops in commits {
            let parent = state.clone();
            for op in &ops {
                apply(&mut state, op);
            }
            let derived = derive_state(&index, &parent, &state);
            let mut scratch = build_state(&state, DIM);
            if let Some(b) = &base {
                scratch = scratch.with_base(b.clone());
            }
            prop_assert_eq!(&derived, &scratch);
            prop_assert_eq!(derived.delta_len(), scratch.delta_len());
            prop_assert_eq!(derived.stale_base_len(), scratch.stale_base_len());
            prop_assert_eq!(derived.cover.row_point.clone(), scratch.cover.row_point.clone());
            for q in &queries {
                for k in [1, 3, 30] {
                    let a = derived.search(q, k, None).unwrap();
                    prop_assert_eq!(&a, &scratch.search(q, k, None).unwrap());
                    prop_assert_eq!(a.hits.len(), k.min(derived.len()));
                }
            }
            index = derived;
        }
    }
}

#[test]
fn int8_scan_rescores_exactly() {
    let (n, dim) = (3000, 48);
    let v = lcg_vectors(n, dim, 11);
    let index = full_index(&v, dim);
    let filter: RoaringBitmap = (0..n as u32).filter(|o| o % 3 == 0).collect();
    let mut overlap = 0;
    let queries = lcg_vectors(20, dim, 12);
    for q in queries.chunks_exact(dim) {
        for f in [None, Some(&filter)] {
            let want = index.search(q, 10, f).unwrap();
            let got = index.search_int8(q, 10, INT8_RESCORE, f).unwrap();
            assert!(got.approximate);
            assert_eq!(got.hits.len(), 10);
            for h in &got.hits {
                assert!(f.is_none_or(|f| f.contains(h.ordinal)));
                assert_eq!(
                    h.score.to_bits(),
                    kernel::dot_reference(q, index.vector(h.ordinal).unwrap()).to_bits()
                );
                overlap += usize::from(want.hits.contains(h));
            }
            // Rescoring everything is the exact answer.
            let all = index.search_int8(q, 10, n, f).unwrap();
            assert!(!all.approximate);
            assert_eq!(all.hits, want.hits);
        }
    }
    assert!(
        overlap as f64 >= 0.95 * 400.0,
        "int8 recall@10 {}",
        overlap as f64 / 400.0
    );
    assert!(index.search_int8(&[0.0; 3], 1, 10, None).is_err());
}
