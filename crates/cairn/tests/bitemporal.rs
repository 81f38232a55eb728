//! Bitemporal reads against a naive model: random commits (explicit, increasing
//! timestamps) put, delete and close the validity of nodes and edges; for random
//! (transaction time T, valid time V), what `as_of(T)` + validity filtering shows, and what
//! a retrieval at `main@{T}` with `valid_at(V)` returns, equal the model's answer.

use std::collections::{BTreeMap, BTreeSet};

use cairn::{Edge, Node, NodeId, Repo, Transaction, Validity};
use proptest::prelude::*;

const NODES: u8 = 8;
const COMMIT_STEP_MS: i64 = 1_000;

#[derive(Debug, Clone)]
enum Op {
    PutNode(u8, Validity),
    DeleteNode(u8),
    /// Put the node again with `valid_until` set (closes its validity).
    CloseNode(u8, i64),
    PutEdge(u8, u8, Validity),
    DeleteEdge(u8, u8),
    CloseEdge(u8, u8, i64),
}

/// Non-empty validity intervals over 0..60 ms, ends open or not.
fn validity() -> impl Strategy<Value = Validity> {
    (proptest::option::of(0i64..40), proptest::option::of(1i64..20))
        .prop_map(|(from, len)| Validity::new(from, len.map(|l| from.unwrap_or(0) + l)))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..NODES, validity()).prop_map(|(n, v)| Op::PutNode(n, v)),
        1 => (0..NODES).prop_map(Op::DeleteNode),
        1 => (0..NODES, 0i64..60).prop_map(|(n, t)| Op::CloseNode(n, t)),
        2 => (0..NODES, 0..NODES, validity()).prop_map(|(a, b, v)| Op::PutEdge(a, b, v)),
        1 => (0..NODES, 0..NODES).prop_map(|(a, b)| Op::DeleteEdge(a, b)),
        1 => (0..NODES, 0..NODES, 0i64..60).prop_map(|(a, b, t)| Op::CloseEdge(a, b, t)),
    ]
}

fn nid(n: u8) -> NodeId {
    NodeId::new(format!("n{n}")).expect("valid id")
}

fn node(n: u8, v: Validity) -> Node {
    Node::new(nid(n))
        .with_label("Fact")
        .with_text("common fact")
        .with_validity(v)
}

fn edge(a: u8, b: u8, v: Validity) -> Edge {
    Edge::new(nid(a), "rel", nid(b)).with_validity(v)
}

/// The graph at one commit: validity per node and per edge.
#[derive(Debug, Clone, Default)]
struct State {
    nodes: BTreeMap<u8, Validity>,
    edges: BTreeMap<(u8, u8), Validity>,
}

/// `v` with its end moved to `until`, if that leaves it non-empty.
fn closed(v: Validity, until: i64) -> Option<Validity> {
    let c = Validity::new(v.valid_from_ms, Some(until));
    c.check().ok().map(|_| c)
}

/// Applies `op` to the model and the transaction alike; ops that are invalid in the
/// current state (deleting what is absent, an edge to a missing node) are skipped.
fn apply(state: &mut State, tx: &mut Transaction<'_>, op: &Op) {
    match *op {
        Op::PutNode(n, v) => {
            tx.put_node(node(n, v)).unwrap();
            state.nodes.insert(n, v);
        }
        Op::DeleteNode(n) => {
            if state.nodes.remove(&n).is_some() {
                tx.delete_node(&nid(n)).unwrap();
                state.edges.retain(|(a, b), _| *a != n && *b != n);
            }
        }
        Op::CloseNode(n, t) => {
            if let Some(v) = state.nodes.get(&n).and_then(|v| closed(*v, t)) {
                tx.put_node(node(n, v)).unwrap();
                state.nodes.insert(n, v);
            }
        }
        Op::PutEdge(a, b, v) => {
            if state.nodes.contains_key(&a) && state.nodes.contains_key(&b) {
                tx.put_edge(edge(a, b, v)).unwrap();
                state.edges.insert((a, b), v);
            }
        }
        Op::DeleteEdge(a, b) => {
            if state.edges.remove(&(a, b)).is_some() {
                tx.delete_edge(&edge(a, b, Validity::ALWAYS).key()).unwrap();
            }
        }
        Op::CloseEdge(a, b, t) => {
            if let Some(v) = state.edges.get(&(a, b)).and_then(|v| closed(*v, t)) {
                tx.put_edge(edge(a, b, v)).unwrap();
                state.edges.insert((a, b), v);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn as_of_and_valid_at_match_a_naive_model(
        commits in proptest::collection::vec(proptest::collection::vec(op(), 1..8), 1..8),
        queries in proptest::collection::vec((0i64..9_000, -5i64..65), 10),
    ) {
        let repo = Repo::in_memory().unwrap();
        let mut state = State::default();
        // (commit time, state after the commit), in commit order.
        let mut history: Vec<(i64, State)> = Vec::new();
        for (k, ops) in commits.iter().enumerate() {
            let mut tx = repo.transaction().unwrap();
            for op in ops {
                apply(&mut state, &mut tx, op);
            }
            let ts = COMMIT_STEP_MS * (k as i64 + 1);
            tx.commit_at("step", ts).unwrap();
            history.push((ts, state.clone()));
        }

        for (t, v) in queries {
            let expected = history.iter().rev().find(|(ts, _)| *ts <= t).map(|(_, s)| s);
            let at = repo.as_of("main", t).unwrap();
            prop_assert_eq!(at.is_some(), expected.is_some(), "T={}", t);
            let retrieval = repo
                .retrieve()
                .at(format!("main@{{{t}}}"))
                .valid_at(v)
                .label("Fact")
                .text("common")
                .limit(64)
                .depth(64)
                .execute();
            let (Some(at), Some(expected)) = (at, expected) else {
                prop_assert!(retrieval.is_err(), "T={} is before the first commit", t);
                continue;
            };
            let want_nodes: BTreeSet<NodeId> = expected
                .nodes
                .iter()
                .filter(|(_, validity)| validity.contains(v))
                .map(|(n, _)| nid(*n))
                .collect();
            let want_edges: BTreeSet<(NodeId, NodeId)> = expected
                .edges
                .iter()
                .filter(|(_, validity)| validity.contains(v))
                .map(|((a, b), _)| (nid(*a), nid(*b)))
                .collect();

            let got_nodes: BTreeSet<NodeId> = repo
                .nodes_at(&at, None)
                .unwrap()
                .into_iter()
                .filter(|n| n.validity.contains(v))
                .map(|n| n.id)
                .collect();
            prop_assert_eq!(&got_nodes, &want_nodes, "nodes_at, T={} V={}", t, v);
            let got_edges: BTreeSet<(NodeId, NodeId)> = repo
                .edges_at(&at)
                .unwrap()
                .into_iter()
                .filter(|e| e.validity.contains(v))
                .map(|e| (e.source, e.target))
                .collect();
            prop_assert_eq!(&got_edges, &want_edges, "edges_at, T={} V={}", t, v);

            let result = retrieval.unwrap();
            prop_assert_eq!(result.commit, Some(at));
            let retrieved: BTreeSet<NodeId> = result.items.into_iter().map(|i| i.id).collect();
            prop_assert_eq!(&retrieved, &want_nodes, "retrieve, T={} V={}", t, v);
        }
    }
}
