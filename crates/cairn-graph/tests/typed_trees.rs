//! The typed trees (`NodeTree`, `EdgeTree`, `ReverseEdgeTree`): they round-trip typed
//! keys, give the same roots as the untyped engine over the encoded keys, diff and scan
//! with decoded keys in tree order, and report a stored key that does not decode as
//! corruption naming the tree and its root.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_core::codec::{edge_in_tree_key, edge_tree_key};
use cairn_core::{EdgeKey, Hash, NodeId};
use cairn_graph::{mst, EdgeTree, GraphError, NodeTree, Objects, PendingWrites, ReverseEdgeTree, TreeChange};
use cairn_store::{MemoryStore, Store};

fn objs() -> Objects {
    Objects::new(Arc::new(MemoryStore::new()))
}

fn flush(o: &Objects, out: PendingWrites) {
    out.flush_to(o.store().as_ref() as &dyn Store).unwrap();
}

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

fn edge(s: &str, kind: &str, t: &str) -> EdgeKey {
    EdgeKey {
        source: id(s),
        kind: kind.into(),
        target: id(t),
    }
}

fn val(s: &str, salt: u8) -> Hash {
    Hash::of(format!("{s}/{salt}").as_bytes())
}

fn node_tree(o: &Objects, base: NodeTree, changes: &BTreeMap<NodeId, Option<Hash>>) -> NodeTree {
    let mut out = PendingWrites::new();
    let t = base.apply(o, changes, None, &mut out).unwrap();
    flush(o, out);
    t
}

fn edge_trees(
    o: &Objects,
    base: (EdgeTree, ReverseEdgeTree),
    changes: &BTreeMap<EdgeKey, Option<Hash>>,
) -> (EdgeTree, ReverseEdgeTree) {
    let mut out = PendingWrites::new();
    let fwd = base.0.apply(o, changes, None, &mut out).unwrap();
    let rev = base.1.apply(o, changes, None, &mut out).unwrap();
    flush(o, out);
    (fwd, rev)
}

/// Edges among ids of different lengths, so tree order and `EdgeKey`'s order differ.
fn sample_edges() -> Vec<EdgeKey> {
    let ids = ["a", "b", "aa", "ab", "ba", "abc", "z"];
    let kinds = ["x", "cites", "y"];
    let mut out = Vec::new();
    for (i, s) in ids.iter().enumerate() {
        for (j, t) in ids.iter().enumerate() {
            if (i + 2 * j) % 3 == 0 {
                out.push(edge(s, kinds[(i + j) % 3], t));
            }
        }
    }
    out
}

#[test]
fn a_node_tree_round_trips_typed_keys_and_matches_the_engine() {
    let o = objs();
    let ids: Vec<NodeId> = (0..500).map(|i| id(&format!("node-{i:04}"))).collect();
    let changes: BTreeMap<NodeId, Option<Hash>> = ids.iter().map(|i| (i.clone(), Some(val(i.as_str(), 0)))).collect();
    let tree = node_tree(&o, NodeTree::EMPTY, &changes);

    // The same root as the untyped engine over the encoded keys.
    let encoded: Vec<(Vec<u8>, Hash)> = changes
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.unwrap()))
        .collect();
    assert_eq!(tree.root(), mst::build(&encoded, &mut PendingWrites::new()));

    let listed: Vec<(NodeId, Hash)> = tree.iter(&o).collect::<Result<_, _>>().unwrap();
    let want: Vec<(NodeId, Hash)> = changes.iter().map(|(k, v)| (k.clone(), v.unwrap())).collect();
    assert_eq!(listed, want);
    assert_eq!(tree.get(&o, &ids[123]).unwrap(), Some(val("node-0123", 0)));
    assert_eq!(tree.get(&o, &id("absent")).unwrap(), None);
    assert_eq!(NodeTree::EMPTY.iter(&o).count(), 0);
}

#[test]
fn apply_with_or_without_a_length_hint_gives_the_same_tree_and_a_no_op_writes_nothing() {
    let o = objs();
    let base: BTreeMap<NodeId, Option<Hash>> = (0..300)
        .map(|i| (id(&format!("n{i:03}")), Some(val(&format!("n{i:03}"), 0))))
        .collect();
    let tree = node_tree(&o, NodeTree::EMPTY, &base);
    // A large change set: the hinted call rebuilds, the other copies paths.
    let big: BTreeMap<NodeId, Option<Hash>> = (0..300)
        .step_by(2)
        .map(|i| {
            let k = format!("n{i:03}");
            (id(&k), if i % 4 == 0 { None } else { Some(val(&k, 1)) })
        })
        .collect();
    let mut a = PendingWrites::new();
    let mut b = PendingWrites::new();
    let hinted = tree.apply(&o, &big, Some(300), &mut a).unwrap();
    let unhinted = tree.apply(&o, &big, None, &mut b).unwrap();
    assert_eq!(hinted, unhinted);
    assert_ne!(hinted, tree);

    // Putting current values and deleting absent ids changes nothing.
    let noop: BTreeMap<NodeId, Option<Hash>> = [(id("n001"), Some(val("n001", 0))), (id("missing"), None)].into();
    let mut out = PendingWrites::new();
    assert_eq!(tree.apply(&o, &noop, Some(300), &mut out).unwrap(), tree);
    assert!(out.is_empty());
}

#[test]
fn a_node_tree_diff_is_typed_and_in_id_order() {
    let o = objs();
    let v1 = node_tree(
        &o,
        NodeTree::EMPTY,
        &[("a", 0), ("b", 0), ("c", 0)]
            .iter()
            .map(|(k, s)| (id(k), Some(val(k, *s))))
            .collect(),
    );
    let v2 = node_tree(
        &o,
        v1,
        &[
            (id("a"), None),
            (id("b"), Some(val("b", 1))),
            (id("d"), Some(val("d", 0))),
        ]
        .into(),
    );
    let d = v1.diff(&o, v2).unwrap();
    assert_eq!(
        d,
        [
            TreeChange {
                key: id("a"),
                before: Some(val("a", 0)),
                after: None
            },
            TreeChange {
                key: id("b"),
                before: Some(val("b", 0)),
                after: Some(val("b", 1))
            },
            TreeChange {
                key: id("d"),
                before: None,
                after: Some(val("d", 0))
            },
        ]
    );
    assert!(v2.diff(&o, v2).unwrap().is_empty());
    // The other way round: befores and afters swap.
    let back = v2.diff(&o, v1).unwrap();
    assert!(back
        .iter()
        .zip(&d)
        .all(|(x, y)| x.key == y.key && x.before == y.after && x.after == y.before));
}

#[test]
fn key_order_is_the_order_of_the_encoded_keys() {
    let mut keys = sample_edges();
    keys.sort_by(EdgeTree::key_order);
    let encoded: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| edge_tree_key(&k.source, &k.kind, &k.target))
        .collect();
    assert!(encoded.windows(2).all(|w| w[0] < w[1]), "edge tree order");
    // Not EdgeKey's own order: a shorter source sorts first.
    assert_eq!(
        EdgeTree::key_order(&edge("b", "x", "a"), &edge("aa", "x", "a")),
        std::cmp::Ordering::Less
    );

    keys.sort_by(ReverseEdgeTree::key_order);
    let encoded: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| edge_in_tree_key(&k.source, &k.kind, &k.target))
        .collect();
    assert!(encoded.windows(2).all(|w| w[0] < w[1]), "reverse edge tree order");

    let mut ids = [id("b"), id("aa"), id("a"), id("ab")];
    ids.sort_by(NodeTree::key_order);
    assert!(ids.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
}

#[test]
fn edge_trees_round_trip_and_scan_one_nodes_edges() {
    let o = objs();
    let keys = sample_edges();
    let changes: BTreeMap<EdgeKey, Option<Hash>> =
        keys.iter().map(|k| (k.clone(), Some(val(&k.to_string(), 0)))).collect();
    let (fwd, rev) = edge_trees(&o, (EdgeTree::EMPTY, ReverseEdgeTree::EMPTY), &changes);

    let mut in_order = keys.clone();
    in_order.sort_by(EdgeTree::key_order);
    let listed: Vec<(EdgeKey, Hash)> = fwd.iter(&o).collect::<Result<_, _>>().unwrap();
    assert_eq!(listed.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), in_order);
    assert!(listed.iter().all(|(k, h)| changes[k] == Some(*h)));

    in_order.sort_by(ReverseEdgeTree::key_order);
    let listed_in: Vec<EdgeKey> = rev
        .iter(&o)
        .map(|e| e.map(|(k, _)| k))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        listed_in, in_order,
        "the reverse tree holds the same edges, source and target in place"
    );

    for k in &keys {
        assert_eq!(fwd.get(&o, k).unwrap(), changes[k]);
        assert_eq!(rev.get(&o, k).unwrap(), changes[k]);
    }
    assert_eq!(fwd.get(&o, &edge("a", "nope", "b")).unwrap(), None);

    // "a" is a prefix of "aa", "ab" and "abc": the scan returns the edges of "a" only.
    for n in ["a", "aa", "ab", "abc", "b", "ba", "z", "absent"] {
        let mut want_out: Vec<EdgeKey> = keys.iter().filter(|k| k.source.as_str() == n).cloned().collect();
        want_out.sort_by(EdgeTree::key_order);
        let got: Vec<EdgeKey> = fwd
            .edges_from(&o, &id(n))
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(got, want_out, "edges from {n}");

        let mut want_in: Vec<EdgeKey> = keys.iter().filter(|k| k.target.as_str() == n).cloned().collect();
        want_in.sort_by(ReverseEdgeTree::key_order);
        let got: Vec<(EdgeKey, Hash)> = rev.edges_to(&o, &id(n)).unwrap();
        assert!(got.iter().all(|(k, h)| changes[k] == Some(*h)));
        assert_eq!(
            got.into_iter().map(|(k, _)| k).collect::<Vec<_>>(),
            want_in,
            "edges to {n}"
        );
    }
}

#[test]
fn an_edge_tree_diff_is_typed_and_in_tree_order() {
    let o = objs();
    let keys = sample_edges();
    let changes: BTreeMap<EdgeKey, Option<Hash>> =
        keys.iter().map(|k| (k.clone(), Some(val(&k.to_string(), 0)))).collect();
    let v1 = edge_trees(&o, (EdgeTree::EMPTY, ReverseEdgeTree::EMPTY), &changes);
    let gone = keys[0].clone();
    let changed = keys[3].clone();
    let added = edge("b", "new", "aa");
    let delta: BTreeMap<EdgeKey, Option<Hash>> = [
        (gone.clone(), None),
        (changed.clone(), Some(val("changed", 1))),
        (added.clone(), Some(val("added", 0))),
    ]
    .into();
    let v2 = edge_trees(&o, v1, &delta);

    let mut want = vec![
        TreeChange {
            key: gone.clone(),
            before: changes[&gone],
            after: None,
        },
        TreeChange {
            key: changed.clone(),
            before: changes[&changed],
            after: Some(val("changed", 1)),
        },
        TreeChange {
            key: added.clone(),
            before: None,
            after: Some(val("added", 0)),
        },
    ];
    want.sort_by(|a, b| EdgeTree::key_order(&a.key, &b.key));
    assert_eq!(v1.0.diff(&o, v2.0).unwrap(), want);
    want.sort_by(|a, b| ReverseEdgeTree::key_order(&a.key, &b.key));
    assert_eq!(v1.1.diff(&o, v2.1).unwrap(), want);
}

/// A one-entry tree holding `key` as stored bytes.
fn tree_with_key(o: &Objects, key: Vec<u8>) -> Option<Hash> {
    let mut out = PendingWrites::new();
    let root = mst::build(&[(key, Hash::of(b"value"))], &mut out);
    flush(o, out);
    root
}

fn assert_corrupt<T: std::fmt::Debug>(r: Result<T, GraphError>, tree: &str, root: Option<Hash>) {
    match r {
        Err(GraphError::Corrupt { kind, hash, detail }) => {
            assert_eq!(kind, tree);
            assert_eq!(Some(hash), root);
            assert!(detail.contains("key"), "{detail}");
        }
        other => panic!("expected corruption of the {tree}, got {other:?}"),
    }
}

#[test]
fn a_stored_key_that_does_not_decode_is_corruption_naming_the_tree_and_root() {
    let o = objs();
    // A node key that is not UTF-8.
    let bad_nodes = NodeTree::new(tree_with_key(&o, vec![0xff, 0xfe]));
    let mut it = bad_nodes.iter(&o);
    assert_corrupt(it.next().unwrap(), "node tree", bad_nodes.root());
    assert!(it.next().is_none(), "an error is the last item");
    assert_corrupt(NodeTree::EMPTY.diff(&o, bad_nodes), "node tree", bad_nodes.root());
    // A removed key is read from the older tree, and names it.
    assert_corrupt(bad_nodes.diff(&o, NodeTree::EMPTY), "node tree", bad_nodes.root());

    // An edge key whose kind length runs past its end; its first id is "a", so the prefix
    // scans of "a" meet it.
    let mut broken = edge_tree_key(&id("a"), "x", &id("b"));
    broken.truncate(5);
    broken[3..5].copy_from_slice(&40u16.to_be_bytes());
    let bad_edges = EdgeTree::new(tree_with_key(&o, broken.clone()));
    assert_corrupt(bad_edges.iter(&o).next().unwrap(), "edge tree", bad_edges.root());
    assert_corrupt(bad_edges.edges_from(&o, &id("a")), "edge tree", bad_edges.root());
    assert_corrupt(EdgeTree::EMPTY.diff(&o, bad_edges), "edge tree", bad_edges.root());

    let bad_in = ReverseEdgeTree::new(tree_with_key(&o, broken));
    assert_corrupt(bad_in.iter(&o).next().unwrap(), "reverse edge tree", bad_in.root());
    assert_corrupt(bad_in.edges_to(&o, &id("a")), "reverse edge tree", bad_in.root());
    assert_corrupt(
        ReverseEdgeTree::EMPTY.diff(&o, bad_in),
        "reverse edge tree",
        bad_in.root(),
    );
}
