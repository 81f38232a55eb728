//! Repositories in object storage, against moto's S3 server on loopback (each test skips,
//! with a message, where moto cannot start): init, commit and retrieve on a bucket; clone,
//! fetch, push and pull between a path and a bucket with byte-identical answers; two
//! writers racing on one branch; damage named; derived data rebuilt.

mod common;

use std::collections::BTreeSet;

use cairn::{CommitId, Error, ErrorKind, Node, NodeId, Repo, StoreKind};
use cairn_store::object_store::ObjectStoreExt;
use common::{answer, commit_one, corpus_commit};

/// A new bucket's repository URL (`None`: moto is not there; the test skips).
fn bucket_repo(tag: &str) -> Option<String> {
    let moto = cairn_testkit::moto()?;
    Some(format!("{}/repo", moto.new_bucket(tag)))
}

#[test]
fn init_commit_and_retrieve_on_a_bucket() {
    let Some(url) = bucket_repo("init") else { return };
    let repo = Repo::init(&url).unwrap();
    assert_eq!(repo.head().unwrap(), None);
    let head = corpus_commit(&repo, 200);
    let first = answer(&repo, "HEAD");
    assert!(repo.fsck().unwrap().problems.is_empty());
    drop(repo);

    // Another handle (as another process would) sees the same commit and answers the same.
    let again = Repo::open(&url).unwrap();
    assert_eq!(again.head().unwrap(), Some(head));
    assert_eq!(answer(&again, "HEAD"), first);
    assert_eq!(again.stats(&head).unwrap().nodes, 200);

    assert!(matches!(Repo::init(&url), Err(Error::AlreadyExists { .. })));
    let empty = format!("{}-nothing-here", url);
    assert!(matches!(Repo::open(&empty), Err(Error::NotARepo { .. })));
    let dir = tempfile::tempdir().unwrap();
    let not_a_url = Repo::init_with(dir.path().join("x"), StoreKind::Object);
    assert!(matches!(not_a_url, Err(Error::InvalidArgument(_))), "{not_a_url:?}");
    assert!(!dir.path().join("x").exists(), "a refused init creates nothing");
}

#[test]
fn clone_fetch_push_and_pull_between_a_path_and_a_bucket() {
    let Some(url) = bucket_repo("sync") else { return };
    let dir = tempfile::tempdir().unwrap();
    let local = Repo::init(dir.path().join("local")).unwrap();
    let head = corpus_commit(&local, 300);

    // Push a path repository into an empty bucket repository.
    drop(Repo::init(&url).unwrap());
    local.remote_add("cloud", &url).unwrap();
    let pushed = local.push("cloud", None, false).unwrap();
    assert_eq!(pushed.new, head);
    assert!(pushed.transfer.objects > 300);
    let cloud = Repo::open(&url).unwrap();
    assert_eq!(cloud.head().unwrap(), Some(head));
    let at_head = answer(&local, "HEAD");
    assert_eq!(answer(&cloud, "HEAD"), at_head, "byte-identical in the bucket");
    assert!(cloud.fsck().unwrap().problems.is_empty());

    // Clone the bucket repository to a path.
    let copy = Repo::clone_from(&url, dir.path().join("copy")).unwrap();
    assert_eq!(copy.head().unwrap(), Some(head));
    assert_eq!(copy.remote("origin").unwrap().url, url);
    assert_eq!(answer(&copy, "HEAD"), at_head, "byte-identical in the clone");

    // A one-node change pushed from the clone moves a few objects…
    let next = commit_one(&copy, "note-1", "one more note about the river stone");
    let small = copy.push("origin", None, false).unwrap();
    assert_eq!((small.old, small.new), (Some(head), next));
    assert!(small.transfer.objects < 20, "{:?}", small.transfer);
    // …and the first path repository fetches and pulls it (a fast-forward).
    let fetched = local.fetch("cloud").unwrap();
    assert_eq!(fetched.updates[0].new, Some(next));
    assert!(fetched.transfer.objects < 20, "{:?}", fetched.transfer);
    assert_eq!(local.resolve("cloud/main").unwrap(), next);
    let (_, merge) = local.pull("cloud", None).unwrap();
    merge.commit("pull").unwrap();
    assert_eq!(local.head().unwrap(), Some(next));
    let at_next = answer(&local, "HEAD");
    assert_eq!(answer(&copy, "HEAD"), at_next);
    assert_eq!(answer(&Repo::open(&url).unwrap(), "HEAD"), at_next);

    // A push that is not a fast-forward is refused with the bucket's head.
    let local_only = commit_one(&local, "note-2", "only here");
    let _ = local_only;
    commit_one(&copy, "note-3", "only in the copy");
    copy.push("origin", None, false).unwrap();
    match local.push("cloud", None, false) {
        Err(e @ Error::NotFastForward { .. }) => assert_eq!(e.kind(), ErrorKind::Conflict),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(cloud.fsck().unwrap().problems.is_empty());
}

#[test]
fn two_writers_racing_on_one_branch_lose_nothing() {
    let Some(url) = bucket_repo("writers") else { return };
    drop(Repo::init(&url).unwrap());
    const EACH: usize = 50;
    let writer = |w: usize| {
        // Its own handle: its own client, caches and runtime, as another machine's.
        let repo = Repo::open(&url).unwrap();
        let (mut acked, mut refused) = (Vec::new(), 0);
        for i in 0..EACH {
            loop {
                let mut tx = repo.transaction().unwrap();
                tx.put_node(Node::new(NodeId::new(format!("w{w}-{i:03}")).unwrap()).with_text("x"))
                    .unwrap();
                match tx.commit(&format!("writer {w} commit {i}")) {
                    Ok(c) => {
                        acked.push(c);
                        break;
                    }
                    Err(e @ Error::Conflict { .. }) => {
                        assert_eq!(e.kind(), ErrorKind::Conflict);
                        refused += 1;
                    }
                    Err(e) => panic!("writer {w}: {e}"),
                }
            }
        }
        (acked, refused)
    };
    let results = std::thread::scope(|s| {
        let a = s.spawn(|| writer(0));
        let b = s.spawn(|| writer(1));
        [a.join().unwrap(), b.join().unwrap()]
    });
    let repo = Repo::open(&url).unwrap();
    let history: BTreeSet<CommitId> = repo.iter_log(None).unwrap().map(|c| c.unwrap().0).collect();
    for (acked, _) in &results {
        for c in acked {
            assert!(history.contains(c), "acknowledged commit {c} is on the branch");
        }
    }
    assert_eq!(history.len(), 2 * EACH);
    let head = repo.head().unwrap().unwrap();
    assert_eq!(repo.stats(&head).unwrap().nodes, 2 * EACH as u64);
    eprintln!("race: {} and {} refused attempts", results[0].1, results[1].1);
}

#[test]
fn a_damaged_object_in_the_bucket_is_detected_and_named() {
    let Some(url) = bucket_repo("damage") else { return };
    let repo = Repo::init(&url).unwrap();
    corpus_commit(&repo, 50);
    let victim = repo
        .store()
        .object_hashes()
        .unwrap()
        .into_iter()
        .find(|h| {
            let bytes = repo.store().get(h).unwrap().unwrap();
            cairn_core::codec::ObjectKind::of(&bytes).ok() == Some(cairn_core::codec::ObjectKind::Node)
        })
        .unwrap();
    drop(repo);
    // Replaced behind the store's back.
    let (bucket, prefix) = url.rsplit_once('/').unwrap();
    let s3 = cairn_store::object_store::aws::AmazonS3Builder::from_env()
        .with_url(bucket)
        .build()
        .unwrap();
    let key = format!("{prefix}/objects/{}", victim.to_hex());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(s3.put(&key.as_str().into(), b"\x01not the node".to_vec().into()))
        .unwrap();

    let repo = Repo::open(&url).unwrap();
    let report = repo.fsck().unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains(&victim.to_hex())),
        "fsck names the damaged object: {:?}",
        report.problems
    );
    let nodes: Result<Vec<_>, _> = repo.iter_nodes_at(&repo.head().unwrap().unwrap()).unwrap().collect();
    let e = nodes.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains(&victim.to_hex()), "{e}");
}

#[test]
fn missing_derived_data_is_rebuilt() {
    let Some(url) = bucket_repo("derived") else { return };
    let repo = Repo::init(&url).unwrap();
    corpus_commit(&repo, 200);
    let before = answer(&repo, "HEAD");
    let keys = repo.store().derived_keys(b"").unwrap();
    assert!(!keys.is_empty(), "the index was cached locally");
    drop(repo);
    // Lost from the local cache (another machine, a cleared cache): rebuilt on use.
    let repo = Repo::open(&url).unwrap();
    repo.store().delete_derived(&keys).unwrap();
    assert_eq!(answer(&repo, "HEAD"), before);
    assert!(!repo.store().derived_keys(b"").unwrap().is_empty());
    assert!(repo.fsck().unwrap().problems.is_empty());
}
