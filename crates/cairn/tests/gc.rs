//! Garbage collection: unreachable objects and the derived data of dead commits go,
//! everything a branch or tag reaches stays, and a concurrent committer loses nothing.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cairn::{CommitId, Error, MergeStrategy, Node, NodeId, Repo};
use cairn_graph::{BranchName, Refs};

fn id(s: &str) -> NodeId {
    NodeId::new(s).expect("valid id")
}

fn commit(repo: &Repo, branch: &str, f: impl FnOnce(&mut cairn::Transaction<'_>)) -> CommitId {
    let mut tx = repo.transaction_on(branch).expect("tx");
    f(&mut tx);
    tx.commit("c").expect("commit")
}

fn snapshot(repo: &Repo, branch: &str) -> BTreeMap<NodeId, Node> {
    let head = repo.branch_head(branch).unwrap().unwrap();
    repo.nodes_at(&head, None)
        .unwrap()
        .into_iter()
        .map(|n| (n.id.clone(), n))
        .collect()
}

fn assert_fsck(repo: &Repo) {
    let report = repo.fsck().expect("fsck");
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// main: 3 commits over 50 nodes; feature (from main's 2nd commit): 3 commits of its own.
fn two_branch_repo(repo: &Repo) -> Vec<CommitId> {
    commit(repo, "main", |tx| {
        for i in 0..50 {
            tx.put_node(Node::new(id(&format!("n{i}"))).with_text(format!("node {i}")))
                .unwrap();
        }
    });
    commit(repo, "main", |tx| {
        tx.put_node(Node::new(id("n1")).with_text("edited")).unwrap()
    });
    repo.create_branch("feature", None).unwrap();
    commit(repo, "main", |tx| {
        tx.put_node(Node::new(id("n2")).with_text("edited")).unwrap()
    });
    (0..3)
        .map(|i| {
            commit(repo, "feature", |tx| {
                tx.put_node(Node::new(id(&format!("f{i}"))).with_text(format!("feature only {i}")))
                    .unwrap();
                tx.put_node(Node::new(id("n3")).with_text(format!("feature edit {i}")))
                    .unwrap();
            })
        })
        .collect()
}

#[test]
fn a_deleted_branch_loses_its_unique_objects_and_main_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repo::init(dir.path().join("r")).unwrap();
    let feature_commits = two_branch_repo(&repo);
    let main_head = repo.head().unwrap().unwrap();
    let feature_head = *feature_commits.last().unwrap();
    // Objects only feature holds: its commits, its new nodes and its edits of n3.
    let feature_values: Vec<_> = repo
        .diff(&main_head, &feature_head)
        .unwrap()
        .nodes
        .iter()
        .filter(|c| c.id.as_str() != "n2") // feature holds n2's older value, which main's history has
        .filter_map(|c| c.after)
        .collect();
    assert!(feature_values.len() >= 4);
    let main_before = snapshot(&repo, "main");
    let stats_before = repo.store().stats().unwrap();

    // Nothing is garbage while the branch exists.
    let report = repo.gc_with(&cairn::GcOptions::now()).unwrap();
    assert_eq!(report.objects_removed, 0);
    assert_eq!(report.objects_before, stats_before.objects);
    assert_eq!(report.commits_live, 6);

    repo.delete_branch("feature").unwrap();
    let report = repo.gc_with(&cairn::GcOptions::now()).unwrap();
    let stats_after = repo.store().stats().unwrap();
    assert_eq!(report.commits_removed, 3);
    assert_eq!(report.commits_live, 3);
    assert_eq!(report.objects_removed, stats_before.objects - stats_after.objects);
    assert_eq!(report.bytes_freed, stats_before.object_bytes - stats_after.object_bytes);
    assert!(report.bytes_freed > 0);
    for c in &feature_commits {
        assert!(!repo.store().contains(c.hash()).unwrap(), "dead commit {c} kept");
        assert!(repo.commit(c).is_err());
    }
    for h in &feature_values {
        assert!(!repo.store().contains(h).unwrap(), "feature-only node {h} kept");
    }
    assert_fsck(&repo);
    assert_eq!(snapshot(&repo, "main"), main_before, "main reads the same");
    for (c, _) in repo.log(None, None).unwrap() {
        repo.nodes_at(&c, None).unwrap();
    }
    // Idempotent.
    let again = repo.gc_with(&cairn::GcOptions::now()).unwrap();
    assert_eq!(again.objects_removed, 0);
    assert_eq!(again.derived_removed, 0);

    // Still a working repository after reopening.
    drop(repo);
    let repo = Repo::open(dir.path().join("r")).unwrap();
    assert_eq!(snapshot(&repo, "main"), main_before);
    commit(&repo, "main", |tx| tx.put_node(Node::new(id("after-gc"))).unwrap());
    assert_fsck(&repo);
}

#[test]
fn tags_keep_their_commits() {
    let repo = Repo::in_memory().unwrap();
    let feature_commits = two_branch_repo(&repo);
    let tagged = feature_commits[1];
    let refs = Refs::new(repo.store().as_ref());
    refs.cas_tag(&BranchName::new("v1").unwrap(), None, Some(tagged))
        .unwrap()
        .unwrap();
    repo.delete_branch("feature").unwrap();
    let report = repo.gc_with(&cairn::GcOptions::now()).unwrap();
    assert_eq!(report.commits_removed, 1, "only the commit after the tag goes");
    assert!(repo.commit(&tagged).is_ok());
    assert!(repo.commit(&feature_commits[2]).is_err());
    assert_eq!(repo.nodes_at(&tagged, None).unwrap().len(), 52);
    assert_fsck(&repo);
}

#[test]
fn derived_data_of_dead_commits_and_branches_is_removed() {
    let store: Arc<dyn cairn_store::Store> = Arc::new(cairn_store::MemoryStore::keeping_derived());
    let repo = Repo::with_store(Arc::clone(&store)).unwrap();
    let feature_commits = two_branch_repo(&repo);
    assert!(!feature_commits.is_empty());
    let main_only = repo.build_indexes("main").unwrap();
    assert!(main_only.stored_values > 0);
    let chunks_of_main = store.derived_keys(b"ck/").unwrap().len();
    let feature = repo.build_indexes("feature").unwrap();
    assert!(feature.stored_values > 0, "feature has chunks of its own");
    let chunks_of_both = store.derived_keys(b"ck/").unwrap().len();
    assert!(chunks_of_both > chunks_of_main);
    // The time index of feature exists (commits record it; as_of uses it).
    assert_eq!(repo.as_of("feature", 0).unwrap(), None); // builds feature's time index
    assert_eq!(store.scan_derived(b"tl/feature\0").unwrap().len(), 5);
    // Stray entries: retired spaces, and a chunk no commit cuts.
    let bogus_hb = [b"hb/".to_vec(), vec![7u8; 32]].concat();
    let bogus_ix = [b"ix/".to_vec(), vec![9u8; 32]].concat();
    let bogus_ck = [b"ck/".to_vec(), vec![5u8; 32], vec![0xC1]].concat();
    store
        .put_derived(&[
            (bogus_hb.clone(), b"x".to_vec()),
            (bogus_ix.clone(), b"x".to_vec()),
            (bogus_ck.clone(), b"x".to_vec()),
        ])
        .unwrap();
    let main_tl = store.scan_derived(b"tl/main\0").unwrap().len();
    assert!(main_tl > 0);

    repo.delete_branch("feature").unwrap();
    let report = repo.gc_with(&cairn::GcOptions::now()).unwrap();
    // Feature's own chunk parts and manifests, its time index (5) and the 3 strays.
    let feature_only = chunks_of_both - chunks_of_main;
    assert!(report.derived_removed >= (feature_only + 5 + 3) as u64, "{report:?}");
    assert_eq!(store.derived_keys(b"ck/").unwrap().len(), chunks_of_main);
    for k in [&bogus_hb, &bogus_ix, &bogus_ck] {
        assert!(store.get_derived(k).unwrap().is_none());
    }
    assert!(store.scan_derived(b"tl/feature\0").unwrap().is_empty());
    assert_eq!(store.scan_derived(b"tl/main\0").unwrap().len(), main_tl);
    // Main's index is whole: nothing to store again, nothing repaired, from a new handle.
    let reopened = Repo::with_store(Arc::clone(&store)).unwrap();
    let again = reopened.build_indexes("main").unwrap();
    assert_eq!((again.stored_values, again.repaired.len()), (0, 0), "{again:?}");
    // Retrieval and as_of on main still work.
    let main_ts = repo.commit(&repo.head().unwrap().unwrap()).unwrap().timestamp_ms;
    assert_eq!(repo.as_of("main", main_ts).unwrap(), repo.head().unwrap());
    let r = repo.retrieve().text("edited").limit(5).execute().unwrap();
    assert_eq!(r.items.len(), 2);
}

#[test]
fn gc_during_concurrent_commits_and_merges_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repo::init(dir.path().join("r")).unwrap();
    commit(&repo, "main", |tx| tx.put_node(Node::new(id("seed"))).unwrap());
    let done = Arc::new(AtomicBool::new(false));

    // Commits one node at a time to main, retrying when a merge moved the branch.
    let committer = {
        let repo = repo.clone();
        std::thread::spawn(move || {
            let mut made = Vec::new();
            for i in 0..40 {
                loop {
                    let mut tx = repo.transaction().unwrap();
                    tx.put_node(Node::new(id(&format!("c{i}")))).unwrap();
                    match tx.commit("c") {
                        Ok(c) => {
                            made.push((c, id(&format!("c{i}"))));
                            break;
                        }
                        Err(Error::Conflict { .. }) => continue,
                        Err(e) => panic!("commit failed: {e}"),
                    }
                }
            }
            made
        })
    };
    // Makes garbage (a branch committed to, then deleted) and, every third round, merges
    // the branch into main first: its commit must then survive as the merge's parent.
    let garbage = {
        let repo = repo.clone();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            for i in 0..15 {
                let name = format!("tmp{i}");
                repo.create_branch(&name, Some("main")).unwrap();
                let node = id(&format!("g{i}"));
                let c = commit(&repo, &name, |tx| tx.put_node(Node::new(node.clone())).unwrap());
                if i % 3 == 0 {
                    loop {
                        let merge = repo.merge_with("main", &name, MergeStrategy::Ours).unwrap();
                        match merge.commit("merge tmp") {
                            Ok(m) => {
                                kept.push((m, node.clone()));
                                kept.push((c, node.clone()));
                                break;
                            }
                            Err(Error::Conflict { .. }) => continue,
                            Err(e) => panic!("merge failed: {e}"),
                        }
                    }
                }
                repo.delete_branch(&name).unwrap();
            }
            kept
        })
    };
    let gcs = {
        let repo = repo.clone();
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut runs = 0;
            let mut removed = 0;
            while !done.load(Ordering::SeqCst) {
                removed += repo.gc_with(&cairn::GcOptions::now()).expect("gc").objects_removed;
                runs += 1;
            }
            (runs, removed)
        })
    };
    let made = committer.join().unwrap();
    let kept = garbage.join().unwrap();
    done.store(true, Ordering::SeqCst);
    let (runs, removed) = gcs.join().unwrap();
    repo.gc_with(&cairn::GcOptions::now()).unwrap();
    eprintln!("{runs} gc runs removed {removed} objects during the writes");
    assert!(runs > 0);

    assert_fsck(&repo);
    for (c, node) in made.iter().chain(&kept) {
        let n = repo
            .node_at(c, node)
            .unwrap_or_else(|e| panic!("commit {c} unreadable: {e}"));
        assert!(n.is_some(), "{node} missing at {c}");
        repo.nodes_at(c, None).unwrap();
    }
    let head = repo.head().unwrap().unwrap();
    let nodes = repo.nodes_at(&head, None).unwrap();
    assert_eq!(nodes.len(), 1 + 40 + 5, "seed, every committed node, every merged one");
}

#[test]
fn gc_keeps_recent_unreachable_commits_for_the_grace_period() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new("base").unwrap())).unwrap();
    tx.commit_at("base", 1_000).unwrap();
    // Two side branches, one with an ancient commit, one with a recent one; both deleted.
    for (name, ts) in [("ancient", 2_000), ("recent", i64::MAX / 2)] {
        repo.create_branch(name, None).unwrap();
        let mut tx = repo.transaction_on(name).unwrap();
        tx.put_node(Node::new(NodeId::new(name).unwrap()).with_text(name))
            .unwrap();
        tx.commit_at(name, ts).unwrap();
        repo.delete_branch(name).unwrap();
    }
    // As if the branch refs had been lost to damage, which leaves no reflog entry: only
    // the commits' own timestamps keep them (the reflog's part is tests/reflog.rs).
    repo.store().retain_ref_log(&|_| false).unwrap();
    let report = repo.gc().unwrap();
    assert_eq!(report.commits_removed, 1, "{report:?}");
    assert_eq!(report.commits_kept_recent, 1, "{report:?}");
    let fsck = repo.fsck().unwrap();
    assert!(fsck.is_ok(), "{:?}", fsck.problems);
    assert_eq!(fsck.dangling_commits.len(), 1);
    // The kept commit reads whole and can be brought back.
    let kept = fsck.dangling_commits[0];
    assert!(repo.node_at(&kept, &NodeId::new("recent").unwrap()).unwrap().is_some());
    repo.create_branch("recovered", Some(&kept.to_hex())).unwrap();
    // With no grace, what nothing reaches goes.
    repo.delete_branch("recovered").unwrap();
    let report = repo.gc_with(&cairn::GcOptions::now()).unwrap();
    assert_eq!(report.commits_removed, 1);
    assert!(repo.fsck().unwrap().dangling_commits.is_empty());
}
