//! A view assembled from a donor takes over the donor's remembered label gates and dense
//! row lists for the chunks the two share (`view/inherit.rs`). Whatever it takes over, its
//! gates equal a fresh view's part for part, and its gated dense and BM25 searches (the
//! latter through the gate's bitset, copied from the donor's) equal a fresh view's hit for
//! hit, over random edits (label changes, inserts, deletions) in a row. Its chunk offsets
//! and validity flag, taken from the donor for the chunks it shares, are a fresh view's.

use std::sync::Arc;

use cairn_core::{Hash, Node, NodeId, Validity};
use cairn_index::{CommitIndexes, IndexParams};
use proptest::prelude::*;

const DIM: usize = 8;
const LABELS: [&str; 3] = ["A", "B", "C"];

fn node(i: u64, version: u64) -> (Hash, Node) {
    let id = NodeId::new(format!("n{i:05}")).unwrap();
    let mix = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ version.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    let v: Vec<f32> = (0..DIM).map(|d| ((mix >> (d * 7)) % 97) as f32 / 48.0 - 1.0).collect();
    let text = format!("w{} w{} w{}", mix % 7, (mix >> 4) % 5, (mix >> 9) % 11);
    let mut n = Node::new(id.clone()).with_embedding("m", v).with_text(text);
    n = n.with_label(LABELS[(mix % 3) as usize]);
    if mix.is_multiple_of(5) {
        n = n.with_label(LABELS[((mix >> 8) % 3) as usize]);
    }
    // A few nodes valid from some time on: views with and without them.
    if (mix >> 20).is_multiple_of(301) {
        n = n.with_validity(Validity {
            valid_from_ms: Some(1_000),
            valid_until_ms: None,
        });
    }
    (Hash::of(format!("{i}/{version}").as_bytes()), n)
}

/// `next` assembled from `donor` the way a repository does: chunks equal to a donor chunk
/// are the donor's (so are their dense parts), the others are `fresh`'s.
fn derive(donor: &CommitIndexes, fresh: &CommitIndexes) -> CommitIndexes {
    let from_donor: Vec<Option<usize>> = fresh
        .chunks()
        .iter()
        .map(|c| donor.chunks().iter().position(|d| **d == **c))
        .collect();
    let cores = fresh
        .chunks()
        .iter()
        .zip(&from_donor)
        .map(|(c, d)| d.map_or_else(|| Arc::clone(c), |j| Arc::clone(&donor.chunks()[j])))
        .collect();
    let mut view = CommitIndexes::assemble_after(fresh.key, fresh.params().clone(), cores, donor, &from_donor).unwrap();
    assert_eq!(view.node_count(), fresh.node_count());
    for c in 0..=fresh.chunks().len() {
        assert_eq!(view.offset(c), fresh.offset(c), "offset of chunk {c}");
    }
    assert_eq!(view.valid_at(500), fresh.valid_at(500));
    view.inherit_gates(donor, &from_donor).unwrap();
    let dd = donor.dense("m").unwrap();
    let fd = fresh.dense("m").unwrap();
    let parts = from_donor
        .iter()
        .enumerate()
        .map(|(i, d)| d.map_or_else(|| fd.part(i).cloned(), |j| dd.part(j).cloned()))
        .collect();
    view.set_dense_from("m", parts, Some((donor, &from_donor))).unwrap();
    // BM25 postings are a function of the chunks: the fresh view's serve.
    view.set_text(fresh.chunk_texts().unwrap().unwrap()).unwrap();
    view
}

/// Every gate the test asks for: each label alone, all of two, any of two.
fn gates(view: &CommitIndexes) -> Vec<cairn_index::Filter> {
    vec![
        view.labels_all_of(&["A".to_string()]),
        view.labels_all_of(&["B".to_string()]),
        view.labels_all_of(&["A".to_string(), "B".to_string()]),
        view.labels_any_of(&["B".to_string(), "C".to_string()]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Each commit's view is assembled from the last and asked for one gate, in turn (as
    /// an agent asking each turn with another of a few labels): a gate last used several
    /// commits ago is derived through the pending entries the views carried forward.
    #[test]
    fn inherited_gates_and_rows_equal_a_fresh_view(
        n in 200u64..1500,
        edits in proptest::collection::vec((0u64..1600, 0u8..3), 1..6),
        rounds in 1usize..10,
    ) {
        let params = IndexParams::default();
        let mut nodes: std::collections::BTreeMap<u64, (Hash, Node)> = (0..n).map(|i| (i, node(i, 0))).collect();
        let list = |m: &std::collections::BTreeMap<u64, (Hash, Node)>| m.values().cloned().collect::<Vec<_>>();
        let mut donor = CommitIndexes::build(Hash::ZERO, &params, &list(&nodes), &[]);
        let query: Vec<f32> = (0..DIM).map(|d| d as f32 / 4.0 - 1.0).collect();
        // The first view remembers every gate and its row list.
        // Its BM25 lane makes each gate's bitset, which the next view's derived gates copy
        // for the chunks they share.
        for g in gates(&donor) {
            donor.dense_search("m", &query, 10, Some(&g)).unwrap();
            donor.text_search("w1 w3 w4", 10, Some(&g)).unwrap();
        }
        for round in 0..rounds {
            for (e, (i, op)) in edits.iter().enumerate() {
                let version = 1 + (round * 100 + e) as u64;
                match op {
                    0 => { nodes.remove(i); }
                    _ => { nodes.insert(*i, node(*i, version)); }
                }
            }
            prop_assume!(!nodes.is_empty());
            let fresh = CommitIndexes::build(Hash::ZERO, &params, &list(&nodes), &[]);
            let next = derive(&donor, &fresh);
            let which = round % 4;
            let got = &gates_one(&next, which);
            let want = &gates_one(&fresh, which);
            prop_assert_eq!(got, want);
            let a = next.dense_search("m", &query, 25, Some(got)).unwrap();
            let b = fresh.dense_search("m", &query, 25, Some(want)).unwrap();
            prop_assert_eq!(&a.hits, &b.hits);
            prop_assert_eq!(a.rescored, b.rescored);
            // The BM25 lane reads the gate as a bitset: derived from the donor's, it admits
            // what the fresh view's admits.
            let a = next.text_search("w1 w3 w4", 25, Some(got)).unwrap();
            let b = fresh.text_search("w1 w3 w4", 25, Some(want)).unwrap();
            prop_assert_eq!(a, b);
            donor = next;
        }
    }
}

/// Gate number `which` of [`gates`], asked alone.
fn gates_one(view: &CommitIndexes, which: usize) -> cairn_index::Filter {
    match which {
        0 => view.labels_all_of(&["A".to_string()]),
        1 => view.labels_all_of(&["B".to_string()]),
        2 => view.labels_all_of(&["A".to_string(), "B".to_string()]),
        _ => view.labels_any_of(&["B".to_string(), "C".to_string()]),
    }
}

/// A view assembled after a donor still reads the chunks it does not take over: a chunk
/// out of key order is refused whether the donor lent it or not, unless it and the chunk
/// before it are neighbours in the donor (checked when the donor was assembled).
#[test]
fn assemble_after_checks_what_it_does_not_take_over() {
    let params = IndexParams::default();
    let nodes: Vec<(Hash, Node)> = (0..600).map(|i| node(i, 0)).collect();
    let donor = CommitIndexes::build(Hash::ZERO, &params, &nodes, &[]);
    let n = donor.chunks().len();
    assert!(n >= 3, "{n} chunks");
    let lent: Vec<Option<usize>> = (0..n).map(Some).collect();
    // All taken over: the donor's view again.
    let same =
        CommitIndexes::assemble_after(Hash::ZERO, params.clone(), donor.chunks().to_vec(), &donor, &lent).unwrap();
    assert_eq!(same.node_count(), donor.node_count());
    // Two of the donor's chunks swapped: lent, but not neighbours in that order.
    let mut swapped = donor.chunks().to_vec();
    swapped.swap(0, 1);
    let mut map = lent.clone();
    map.swap(0, 1);
    let err = CommitIndexes::assemble_after(Hash::ZERO, params.clone(), swapped.clone(), &donor, &map).unwrap_err();
    assert!(err.to_string().contains("out of key order"), "{err}");
    // The same chunks, said to be new (copies, not the donor's parts): read, refused.
    let copies: Vec<_> = swapped.iter().map(|c| Arc::new((**c).clone())).collect();
    let err = CommitIndexes::assemble_after(Hash::ZERO, params.clone(), copies, &donor, &lent).unwrap_err();
    assert!(err.to_string().contains("out of key order"), "{err}");
    // A map of another length is refused.
    let err =
        CommitIndexes::assemble_after(Hash::ZERO, params, donor.chunks().to_vec(), &donor, &lent[1..]).unwrap_err();
    assert!(err.to_string().contains("donor map"), "{err}");
}
