//! Random change sequences: deriving a child's indexes from the parent's plus the diff
//! gives exactly what a from-scratch build of the child gives, and persisted indexes
//! decode to themselves.

use std::collections::BTreeMap;

use cairn_core::codec::{encode_node, hash_object};
use cairn_core::{Edge, EdgeKey, Hash, Node, NodeId, SparseVector, Validity, Value};
use cairn_index::persist::{decode_indexes, encode_indexes};
use cairn_index::{CommitIndexes, EdgeDelta, IndexParams, NodeDelta};
use proptest::prelude::*;

const LABELS: [&str; 4] = ["Doc", "Paper", "Person", "Topic"];
const WORDS: [&str; 12] = [
    "the", "wing", "wings", "flow", "flows", "flowing", "of", "boundary", "layer", "Layers", "shock", "é",
];

#[derive(Debug, Clone)]
struct NodeSpec {
    id: String,
    labels: Vec<usize>,
    words: Vec<usize>,
    num: Option<i64>,
    tag: Option<usize>,
    sparse: Vec<(u32, i8)>,
    sparse2: Option<Vec<(u32, i8)>>,
    emb: Option<[i8; 3]>,
    validity: (Option<i64>, Option<i64>),
}

#[derive(Debug, Clone)]
enum Op {
    Upsert(NodeSpec),
    Remove(usize),
    Touch(usize),
    Link(usize, usize, usize, i8),
    Unlink(usize),
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        "[a-f]{1,2}",
        prop::collection::vec(0..LABELS.len(), 0..3),
        prop::collection::vec(0..WORDS.len(), 0..7),
        prop::option::of(-3i64..3),
        prop::option::of(0usize..3),
        prop::collection::vec((0u32..6, -3i8..4), 0..4),
        prop::option::of(prop::collection::vec((0u32..4, -2i8..3), 0..3)),
        prop::option::of(prop::array::uniform3(-3i8..4)),
        (prop::option::of(0i64..10), prop::option::of(10i64..20)),
    )
        .prop_map(
            |(id, labels, words, num, tag, sparse, sparse2, emb, validity)| NodeSpec {
                id,
                labels,
                words,
                num,
                tag,
                sparse,
                sparse2,
                emb,
                validity,
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => node_spec().prop_map(Op::Upsert),
        2 => any::<usize>().prop_map(Op::Remove),
        1 => any::<usize>().prop_map(Op::Touch),
        3 => (any::<usize>(), any::<usize>(), 0usize..3, -2i8..5).prop_map(|(a, b, k, w)| Op::Link(a, b, k, w)),
        1 => any::<usize>().prop_map(Op::Unlink),
    ]
}

fn sparse_vector(entries: &[(u32, i8)]) -> SparseVector {
    let mut m = BTreeMap::new();
    for &(i, v) in entries {
        m.insert(i, f32::from(v) * 0.5);
    }
    SparseVector::new(m.keys().copied().collect(), m.values().copied().collect())
}

fn make_node(s: &NodeSpec) -> Node {
    let mut n = Node::new(NodeId::new(s.id.clone()).unwrap());
    for &l in &s.labels {
        n = n.with_label(LABELS[l]);
    }
    n.text = s.words.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
    if let Some(x) = s.num {
        // Ints and floats mixed, so numeric equality across kinds is exercised.
        n = if x % 2 == 0 {
            n.with_prop("num", x)
        } else {
            n.with_prop("num", x as f64)
        };
    }
    if let Some(t) = s.tag {
        n = n.with_prop("tag", Value::List(vec![Value::String(format!("t{t}")), Value::Null]));
    }
    if !s.sparse.is_empty() {
        n = n.with_sparse("splade", sparse_vector(&s.sparse));
    }
    if let Some(e) = &s.sparse2 {
        n = n.with_sparse("bge-sparse", sparse_vector(e));
    }
    if let Some(e) = s.emb {
        n = n.with_embedding("mini", e.iter().map(|&x| f32::from(x) * 0.25).collect());
    }
    n.with_validity(Validity::new(s.validity.0, s.validity.1))
}

#[derive(Clone, Default)]
struct Graph {
    nodes: BTreeMap<NodeId, Node>,
    edges: BTreeMap<EdgeKey, Edge>,
}

impl Graph {
    fn node_list(&self) -> Vec<(Hash, Node)> {
        self.nodes
            .values()
            .map(|n| (hash_object(&encode_node(n)), n.clone()))
            .collect()
    }
    fn edge_list(&self) -> Vec<Edge> {
        self.edges.values().cloned().collect()
    }
    fn nth_id(&self, i: usize) -> Option<NodeId> {
        (!self.nodes.is_empty())
            .then(|| self.nodes.keys().nth(i % self.nodes.len()).cloned())
            .flatten()
    }
    /// Applies `op`; returns ids touched without a content change (spurious upserts).
    fn apply(&mut self, op: &Op, touched: &mut Vec<NodeId>) {
        match op {
            Op::Upsert(s) => {
                let n = make_node(s);
                self.nodes.insert(n.id.clone(), n);
            }
            Op::Remove(i) => {
                if let Some(id) = self.nth_id(*i) {
                    self.nodes.remove(&id);
                    self.edges.retain(|k, _| k.source != id && k.target != id);
                }
            }
            Op::Touch(i) => touched.extend(self.nth_id(*i)),
            Op::Link(a, b, k, w) => {
                if let (Some(s), Some(t)) = (self.nth_id(*a), self.nth_id(*b)) {
                    let e = Edge::new(s, ["cites", "mentions", "about"][*k], t).with_weight(f64::from(*w));
                    self.edges.insert(e.key(), e);
                }
            }
            Op::Unlink(i) => {
                if !self.edges.is_empty() {
                    let k = self.edges.keys().nth(i % self.edges.len()).cloned().unwrap();
                    self.edges.remove(&k);
                }
            }
        }
    }
}

/// The diff between two graphs, as the Repo would compute it from the trees.
fn diff(parent: &Graph, child: &Graph, touched: &[NodeId]) -> (NodeDelta, EdgeDelta) {
    let mut nd = NodeDelta::default();
    for id in parent.nodes.keys() {
        if !child.nodes.contains_key(id) {
            nd.removed.push(id.clone());
        }
    }
    for (id, n) in &child.nodes {
        if parent.nodes.get(id) != Some(n) || touched.contains(id) {
            nd.upserted.push((hash_object(&encode_node(n)), n.clone()));
        }
    }
    // Unsorted input must be accepted.
    nd.upserted.reverse();
    let mut ed = EdgeDelta::default();
    for k in parent.edges.keys() {
        if !child.edges.contains_key(k) {
            ed.removed.push(k.clone());
        }
    }
    for (k, e) in &child.edges {
        if parent.edges.get(k) != Some(e) {
            ed.upserted.push(e.clone());
        }
    }
    ed.upserted.reverse();
    (nd, ed)
}

fn key_of(step: usize) -> Hash {
    Hash::of(format!("commit {step}").as_bytes())
}

fn build(g: &Graph, key: Hash, params: &IndexParams) -> CommitIndexes {
    CommitIndexes::build(key, params, &g.node_list(), &g.edge_list())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn derive_equals_build(
        init in prop::collection::vec(op(), 0..25),
        steps in prop::collection::vec(prop::collection::vec(op(), 1..6), 1..7),
        stem in any::<bool>(),
    ) {
        let mut params = IndexParams::default();
        params.bm25.analyzer.stem = stem;
        let mut g = Graph::default();
        for o in &init {
            g.apply(o, &mut Vec::new());
        }
        let mut idx = build(&g, key_of(0), &params);
        for (i, ops) in steps.iter().enumerate() {
            let mut child = g.clone();
            let mut touched = Vec::new();
            for o in ops {
                child.apply(o, &mut touched);
            }
            let (nd, ed) = diff(&g, &child, &touched);
            let key = key_of(i + 1);
            let derived = CommitIndexes::derive(&idx, key, &params, &nd, &ed).unwrap();
            let built = build(&child, key, &params);
            prop_assert_eq!(&derived.nodes, &built.nodes);
            prop_assert_eq!(&derived.labels, &built.labels);
            prop_assert_eq!(&derived.validity, &built.validity);
            prop_assert_eq!(&derived.props, &built.props);
            prop_assert_eq!(&derived.sparse, &built.sparse);
            prop_assert_eq!(&derived.bm25, &built.bm25);
            prop_assert_eq!(&derived.adjacency, &built.adjacency);
            prop_assert_eq!(&derived.dense, &built.dense);
            prop_assert_eq!(&derived, &built);

            // What is persisted decodes to itself, and only under its own key.
            let bytes = encode_indexes(&derived);
            prop_assert_eq!(&decode_indexes(&bytes, &key).unwrap(), &derived);
            prop_assert!(decode_indexes(&bytes, &key_of(999)).is_err());
            prop_assert_eq!(encode_indexes(&built), bytes);

            idx = derived;
            g = child;
        }
    }

    #[test]
    fn decode_never_panics_on_damaged_bytes(
        init in prop::collection::vec(op(), 0..20),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..8),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8),
    ) {
        let mut g = Graph::default();
        for o in &init {
            g.apply(o, &mut Vec::new());
        }
        let key = key_of(0);
        let bytes = encode_indexes(&build(&g, key, &IndexParams::default()));
        for c in &cuts {
            let cut = c.index(bytes.len());
            prop_assert!(decode_indexes(&bytes[..cut], &key).is_err());
        }
        for (at, x) in &flips {
            let mut b = bytes.clone();
            b[at.index(bytes.len())] ^= x;
            // Either refused or decoded; never a panic, never another key.
            if let Ok(d) = decode_indexes(&b, &key) {
                prop_assert_eq!(d.key, key);
            }
        }
    }
}
