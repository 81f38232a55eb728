//! `mst::entries`: the lazy iterator yields exactly what `for_each` visits, in key order,
//! for trees of every size (empty, one entry, many levels), and a missing tree node ends
//! it with an error.

use std::sync::Arc;

use cairn_core::Hash;
use cairn_graph::{mst, Objects, PendingWrites};
use cairn_store::{MemoryStore, Store};

type Entries = Vec<(Vec<u8>, Hash)>;

/// A tree of `n` entries: its store, an object reader, its root and its entries.
fn tree(n: u32) -> (Arc<MemoryStore>, Objects, Option<Hash>, Entries) {
    let store = Arc::new(MemoryStore::new());
    let objs = Objects::new(Arc::clone(&store) as Arc<dyn Store>);
    let entries: Entries = (0..n)
        .map(|i| {
            let k = format!("key-{i:06}").into_bytes();
            let v = Hash::of(&k);
            (k, v)
        })
        .collect();
    let mut out = PendingWrites::new();
    let root = mst::build(&entries, &mut out);
    out.flush_to(store.as_ref()).unwrap();
    (store, objs, root, entries)
}

#[test]
fn entries_equal_for_each_for_every_size() {
    for n in [0, 1, 2, 3, 10, 64, 65, 500, 5_000] {
        let (_store, objs, root, want) = tree(n);
        let got: Entries = mst::entries(&objs, root).collect::<Result<_, _>>().unwrap();
        assert_eq!(got, want, "{n} entries");
        let mut visited = Vec::new();
        mst::for_each(&objs, root, &mut |k, v| {
            visited.push((k.to_vec(), *v));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, visited);
    }
}

#[test]
fn a_missing_tree_node_ends_the_iteration_with_an_error() {
    let (store, objs, root, _) = tree(2_000);
    // Remove one tree node that is not the root.
    let victim = store
        .object_hashes()
        .unwrap()
        .into_iter()
        .find(|h| Some(*h) != root)
        .unwrap();
    store.delete_objects(&[victim]).unwrap();
    let fresh = Objects::new(Arc::clone(&store) as Arc<dyn Store>);
    drop(objs);
    let results: Vec<_> = mst::entries(&fresh, root).collect();
    assert!(results.last().unwrap().is_err(), "the walk must end with the error");
    assert_eq!(results.iter().filter(|r| r.is_err()).count(), 1);
}
