//! `Repo::drop_derived`: every stored index value goes, nothing else does, and queries
//! answer as before; `index_stats` tells parts loaded from the store from chunks built.

use cairn::{Node, NodeId, Repo};

fn fill(repo: &Repo) {
    let mut tx = repo.transaction().unwrap();
    for i in 0..300 {
        tx.put_node(
            Node::new(NodeId::new(format!("n{i:03}")).unwrap())
                .with_label("Doc")
                .with_text(format!(
                    "note {i} about {}",
                    if i % 3 == 0 { "wings" } else { "nozzles" }
                ))
                .with_embedding("m", vec![(i % 7) as f32 + 1.0, 1.0, (i % 5) as f32]),
        )
        .unwrap();
    }
    tx.commit_at("notes", 1_700_000_000_000).unwrap();
}

fn query(repo: &Repo) -> String {
    let r = repo
        .retrieve()
        .text("wings")
        .vector("m", &[1.0, 1.0, 0.0])
        .label("Doc")
        .limit(5)
        .execute()
        .unwrap();
    serde_json::to_string(&r).unwrap()
}

#[test]
fn dropping_derived_data_loses_nothing_and_stats_tell_loads_from_builds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r");
    let (before, head, stats) = {
        let repo = Repo::init(&path).unwrap();
        fill(&repo);
        let report = repo.build_indexes("HEAD").unwrap();
        let stats = repo.index_stats();
        assert!(stats.chunks_built > 0, "{stats:?}");
        assert_eq!(stats.parts_loaded, 0, "{stats:?}");
        assert!(report.stored_values > 0);
        (query(&repo), repo.head().unwrap(), stats)
    };
    // A fresh handle loads the stored parts and builds nothing.
    let repo = Repo::open(&path).unwrap();
    assert_eq!(query(&repo), before);
    let loaded = repo.index_stats();
    assert!(loaded.parts_loaded > 0, "{loaded:?}");
    assert_eq!(loaded.chunks_built, 0, "{loaded:?}");

    let deleted = repo.drop_derived().unwrap();
    assert!(deleted >= stats.stored_values as u64, "{deleted} < {stats:?}");
    assert!(repo.store().derived_keys(b"").unwrap().is_empty());
    assert_eq!(repo.head().unwrap(), head);
    assert_eq!(repo.index_stats().cached_bytes, 0);
    // Built again from the objects: the same answer.
    assert_eq!(query(&repo), before);
    let rebuilt = repo.index_stats();
    assert!(rebuilt.chunks_built > 0 && rebuilt.parts_loaded == 0, "{rebuilt:?}");
    assert!(repo.fsck().unwrap().is_ok());
}
