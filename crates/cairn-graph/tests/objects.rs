//! `Objects::nodes_sized`: a batch of node reads answers in the order asked, each node
//! checked as `Objects::node` checks it, and fails with the first missing or damaged node
//! in that order — on a store that re-hashes nothing (memory) and on the segment store,
//! whose records carry their own checksums.

use std::sync::Arc;

use cairn_core::codec::{encode_node, hash_object};
use cairn_core::{Hash, Node, NodeId};
use cairn_graph::{GraphError, Objects};
use cairn_store::{MemoryStore, SegmentStore, Store};

fn node(i: usize) -> (Hash, Node, Vec<u8>) {
    let n = Node::new(NodeId::new(format!("n{i}")).unwrap()).with_text(format!("node number {i}"));
    let bytes = encode_node(&n);
    (hash_object(&bytes), n, bytes)
}

#[test]
fn a_batch_answers_in_order_and_names_the_first_failure() {
    let store = Arc::new(MemoryStore::new());
    let nodes: Vec<_> = (0..4).map(node).collect();
    store
        .put_batch(&nodes.iter().map(|(h, _, b)| (*h, b.clone())).collect::<Vec<_>>())
        .unwrap();
    // Bytes stored under a hash they do not have: only the re-hash can tell.
    let (bad_hash, _, _) = node(100);
    store.put_batch(&[(bad_hash, nodes[0].2.clone())]).unwrap();
    let missing = node(200).0;
    let objs = Objects::new(store);

    let asked = [nodes[2].0, nodes[0].0, nodes[2].0, nodes[3].0];
    let got = objs.nodes_sized(&asked).unwrap();
    let want: Vec<_> = [2, 0, 2, 3]
        .iter()
        .map(|&i| (nodes[i].1.clone(), nodes[i].2.len()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(objs.nodes_sized(&[]).unwrap(), vec![]);
    for (i, h) in asked.iter().enumerate() {
        assert_eq!(objs.node_sized(h).unwrap(), want[i], "one at a time");
    }

    let first_missing = objs.nodes_sized(&[nodes[1].0, missing, bad_hash]).unwrap_err();
    assert!(
        matches!(first_missing, GraphError::NotFound { hash, .. } if hash == missing),
        "{first_missing:?}"
    );
    let first_damaged = objs.nodes_sized(&[nodes[1].0, bad_hash, missing]).unwrap_err();
    assert!(
        matches!(&first_damaged, GraphError::Corrupt { hash, .. } if *hash == bad_hash),
        "{first_damaged:?}"
    );
}

#[test]
fn a_damaged_record_in_a_segment_store_batch_is_named_after_the_missing_ones_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let nodes: Vec<_> = (0..3).map(node).collect();
    {
        let store = SegmentStore::open(dir.path()).unwrap();
        store
            .put_batch(&nodes.iter().map(|(h, _, b)| (*h, b.clone())).collect::<Vec<_>>())
            .unwrap();
        store.flush().unwrap();
    }
    // Flip a byte of node 1's value in the object log (its record's value crc then fails).
    let seg = std::fs::read_dir(dir.path().join("objects"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes.windows(nodes[1].2.len()).position(|w| w == nodes[1].2).unwrap();
    bytes[at + 3] ^= 0x20;
    std::fs::write(&seg, bytes).unwrap();

    let objs = Objects::new(Arc::new(SegmentStore::open(dir.path()).unwrap()));
    let missing = node(200).0;
    let err = objs.nodes_sized(&[nodes[0].0, nodes[1].0, nodes[2].0]).unwrap_err();
    assert!(
        matches!(&err, GraphError::Corrupt { hash, .. } if *hash == nodes[1].0),
        "{err:?}"
    );
    let err = objs.nodes_sized(&[nodes[0].0, missing, nodes[1].0]).unwrap_err();
    assert!(
        matches!(&err, GraphError::NotFound { hash, .. } if *hash == missing),
        "{err:?}"
    );
    assert_eq!(
        objs.nodes_sized(&[nodes[2].0, nodes[0].0]).unwrap(),
        vec![
            (nodes[2].1.clone(), nodes[2].2.len()),
            (nodes[0].1.clone(), nodes[0].2.len())
        ]
    );
}
