//! Remotes over paths: clone, fetch, push, pull; only missing objects move, every object is
//! verified, refs move only after the objects are durable, and refusals change nothing.

mod common;

use std::path::Path;

use cairn::{Error, ErrorKind, GcOptions, Node, NodeId, Repo};
use common::{answer, commit_one, corpus_commit};

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

/// A repository at `dir/name` holding `n` corpus nodes (text and a 384-d vector) in one
/// commit, then closed.
fn upstream(dir: &Path, name: &str, n: usize) -> cairn::CommitId {
    corpus_commit(&Repo::init(dir.join(name)).unwrap(), n)
}

fn url(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

#[test]
fn clone_gives_the_same_commits_and_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let head = upstream(dir.path(), "up", 600);
    let clone = Repo::clone_from(&url(dir.path(), "up"), dir.path().join("copy")).unwrap();
    assert_eq!(clone.head().unwrap(), Some(head));
    assert_eq!(clone.resolve("origin/main").unwrap(), head);
    assert_eq!(clone.remotes().unwrap()[0].name, "origin");
    assert!(clone.fsck().unwrap().problems.is_empty());
    let mine = answer(&clone, "HEAD");
    drop(clone);
    let up = Repo::open(dir.path().join("up")).unwrap();
    assert_eq!(answer(&up, "HEAD"), mine, "byte-identical retrieval at the same commit");
    // No staging directory is left beside the clone.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // Cloning onto an existing path is refused.
    drop(up);
    let again = Repo::clone_from(&url(dir.path(), "up"), dir.path().join("copy"));
    assert!(matches!(again, Err(Error::AlreadyExists { .. })));
}

#[test]
fn a_one_node_change_moves_a_few_objects() {
    let dir = tempfile::tempdir().unwrap();
    upstream(dir.path(), "up", 2000);
    let clone = Repo::clone_from(&url(dir.path(), "up"), dir.path().join("copy")).unwrap();
    let up = Repo::open(dir.path().join("up")).unwrap();
    let next = commit_one(&up, "note-1", "one more note");
    drop(up);
    let report = clone.fetch("origin").unwrap();
    assert_eq!(report.updates.len(), 1);
    assert_eq!(report.updates[0].new, Some(next));
    assert_eq!(report.transfer.commits, 1);
    // The commit, the node object and the changed path of the node tree (2,001 keys:
    // a handful of levels); nothing of the other 2,000 nodes.
    assert!(
        report.transfer.objects <= 12,
        "{} objects moved",
        report.transfer.objects
    );
    assert!(
        report.transfer.bytes < 16 * 1024,
        "{} bytes moved",
        report.transfer.bytes
    );
    // Fetch moved no local branch; a second fetch moves nothing.
    assert_ne!(clone.head().unwrap(), Some(next));
    let again = clone.fetch("origin").unwrap();
    assert!(again.updates.is_empty());
    assert_eq!(again.transfer.objects, 0);
}

#[test]
fn push_fast_forwards_and_refuses_what_would_lose_a_commit() {
    let dir = tempfile::tempdir().unwrap();
    upstream(dir.path(), "up", 50);
    let a = Repo::clone_from(&url(dir.path(), "up"), dir.path().join("a")).unwrap();
    let b = Repo::clone_from(&url(dir.path(), "up"), dir.path().join("b")).unwrap();
    // a pushes first: a fast-forward.
    let from_a = commit_one(&a, "from-a", "written on a");
    let pushed = a.push("origin", None, false).unwrap();
    assert_eq!(pushed.new, from_a);
    assert!(pushed.transfer.objects > 0);
    assert_eq!(a.resolve("origin/main").unwrap(), from_a);
    {
        let up = Repo::open(dir.path().join("up")).unwrap();
        assert_eq!(up.head().unwrap(), Some(from_a));
        assert!(up.fsck().unwrap().problems.is_empty());
        assert_eq!(
            up.reflog("main").unwrap()[0].new,
            Some(from_a),
            "the push is in the remote's reflog"
        );
    }
    // b has not seen it: its push would drop a's commit, so it is refused, naming the
    // remote's head, and the remote is unchanged.
    let from_b = commit_one(&b, "from-b", "written on b");
    match b.push("origin", None, false) {
        Err(e @ Error::NotFastForward { .. }) => {
            assert_eq!(e.kind(), ErrorKind::Conflict);
            assert!(e.to_string().contains(&from_a.to_hex()), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(Repo::open(dir.path().join("up")).unwrap().head().unwrap(), Some(from_a));
    // Pull (a three-way merge, no conflicts), then the push goes through.
    let (fetched, merge) = b.pull("origin", None).unwrap();
    assert_eq!(fetched.updates[0].new, Some(from_a));
    let merged = merge.commit("merge origin/main").unwrap();
    assert_eq!(b.commit(&merged).unwrap().parents, vec![from_b, from_a]);
    b.push("origin", None, false).unwrap();
    let up = Repo::open(dir.path().join("up")).unwrap();
    assert_eq!(up.head().unwrap(), Some(merged));
    assert!(up.view("HEAD").unwrap().node(&id("from-a")).unwrap().is_some());
    assert!(up.view("HEAD").unwrap().node(&id("from-b")).unwrap().is_some());
    drop(up);
    // A pull that is a fast-forward for a.
    let (_, ff) = a.pull("origin", None).unwrap();
    assert_eq!(ff.kind(), cairn::MergeKind::FastForward);
    assert_eq!(ff.commit("pull").unwrap(), merged);
    // --force replaces the remote's branch (b's commit line is dropped there).
    let lone = commit_one(&b, "lone", "x");
    let c = Repo::clone_from(&url(dir.path(), "up"), dir.path().join("c")).unwrap();
    let other = commit_one(&c, "other", "y");
    c.push("origin", None, false).unwrap();
    assert!(matches!(
        b.push("origin", None, false),
        Err(Error::NotFastForward { .. })
    ));
    let forced = b.push("origin", None, true).unwrap();
    assert_eq!((forced.old, forced.new), (Some(other), lone));
}

#[test]
fn remote_configuration_errors_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    upstream(dir.path(), "up", 5);
    let repo = Repo::init(dir.path().join("mine")).unwrap();
    repo.remote_add("origin", &url(dir.path(), "up")).unwrap();
    assert!(matches!(
        repo.remote_add("origin", &url(dir.path(), "up")),
        Err(Error::RemoteExists(_))
    ));
    assert!(matches!(repo.fetch("nope"), Err(Error::UnknownRemote(_))));
    for bad in [
        "s3://",
        "s3:///prefix",
        "https://localhost:7700",
        "http://",
        "http:///path",
        "",
    ] {
        let e = repo.remote_add("x", bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}: {e}");
    }
    // A server that does not answer: a typed failure naming it, nothing changed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    repo.remote_add("down", &format!("http://127.0.0.1:{port}")).unwrap();
    let e = repo.fetch("down").unwrap_err();
    assert!(
        matches!(&e, Error::Remote { status: None, url, .. } if url.contains(&port.to_string())),
        "{e}"
    );
    assert!(repo.remote_branches("down").unwrap().is_empty());
    repo.remote_remove("down").unwrap();
    // An object-store URL is a remote (tests/object_store.rs moves commits through one).
    repo.remote_add("cloud", "s3://bucket/prefix").unwrap();
    repo.remote_remove("cloud").unwrap();
    assert!(repo.remote_add("a/b", &url(dir.path(), "up")).is_err());
    assert!(repo.remote_add("self", &url(dir.path(), "mine")).is_err());
    // A remote path without a repository fails at fetch, naming it.
    repo.remote_add("gone", &url(dir.path(), "nothing-here")).unwrap();
    assert!(matches!(repo.fetch("gone"), Err(Error::NotARepo { .. })));
    repo.remote_remove("gone").unwrap();
    assert_eq!(repo.remotes().unwrap().len(), 1);
    // Removing a remote removes its tracking refs.
    repo.fetch("origin").unwrap();
    assert!(repo.resolve("origin/main").is_ok());
    repo.remote_remove("origin").unwrap();
    assert!(repo.resolve("origin/main").is_err());
}

#[test]
fn gc_keeps_what_only_a_tracking_ref_reaches() {
    let dir = tempfile::tempdir().unwrap();
    let head = upstream(dir.path(), "up", 40);
    let repo = Repo::init(dir.path().join("mine")).unwrap();
    repo.remote_add("origin", &url(dir.path(), "up")).unwrap();
    repo.fetch("origin").unwrap();
    repo.gc_with(&GcOptions::now()).unwrap();
    let view = repo.view("origin/main").unwrap();
    assert_eq!(repo.resolve("origin/main").unwrap(), head);
    assert!(view.node(&id("doc-0000007")).unwrap().is_some());
    let problems = repo.fsck().unwrap().problems;
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn a_damaged_or_missing_remote_object_is_named_and_nothing_moves() {
    let dir = tempfile::tempdir().unwrap();
    upstream(dir.path(), "up", 30);
    // Damage one node object of the remote: the same hash, other bytes.
    let victim = {
        let up = Repo::open(dir.path().join("up")).unwrap();
        let node = up.view("HEAD").unwrap().node(&id("doc-0000011")).unwrap().unwrap();
        let hash = cairn_core::codec::hash_object(&cairn_core_bytes(&node));
        up.store().delete_objects(&[hash]).unwrap();
        up.store().flush().unwrap();
        hash
    };
    let repo = Repo::init(dir.path().join("mine")).unwrap();
    repo.remote_add("origin", &url(dir.path(), "up")).unwrap();
    let e = repo.fetch("origin").unwrap_err();
    assert!(e.to_string().contains(&victim.to_hex()), "{e}");
    assert!(
        repo.resolve("origin/main").is_err(),
        "no tracking ref after a failed fetch"
    );
    // Put garbage under its name: detected by hash.
    {
        let up = Repo::open(dir.path().join("up")).unwrap();
        up.store().put_batch(&[(victim, b"not the node".to_vec())]).unwrap();
        up.store().flush().unwrap();
    }
    let e = repo.fetch("origin").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains(&victim.to_hex()), "{e}");
    assert!(repo.resolve("origin/main").is_err());
    // A clone of the damaged remote fails the same way and leaves nothing behind.
    let e = Repo::clone_from(&url(dir.path(), "up"), dir.path().join("copy")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// The stored bytes of a node object (its hash is theirs).
fn cairn_core_bytes(node: &Node) -> Vec<u8> {
    cairn_core::codec::encode_node(node)
}

#[test]
fn a_model_at_another_dimension_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    upstream(dir.path(), "up", 5); // minilm at 384
    let repo = Repo::init(dir.path().join("mine")).unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("x")).with_embedding("minilm", vec![1.0, 0.0, 0.0]))
        .unwrap();
    tx.commit("3-d minilm").unwrap();
    repo.remote_add("origin", &url(dir.path(), "up")).unwrap();
    let e = repo.fetch("origin").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("minilm"), "{e}");
    assert!(repo.resolve("origin/main").is_err());
}

/// Two writers, each with its own clone, push 25 commits each to one upstream at the same
/// time; a refused push pulls (fetch + merge) and pushes again. No acknowledged commit is
/// lost: every node written is in upstream's head at the end.
#[test]
fn two_racing_writers_lose_no_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    upstream(dir.path(), "up", 10);
    let writers: Vec<Repo> = ["w0", "w1"]
        .iter()
        .map(|w| Repo::clone_from(&url(dir.path(), "up"), dir.path().join(w)).unwrap())
        .collect();
    let refused: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = writers
            .iter()
            .enumerate()
            .map(|(w, repo)| {
                scope.spawn(move || {
                    let mut refused = 0;
                    for i in 0..25 {
                        commit_one(repo, &format!("w{w}-{i:02}"), "racing");
                        loop {
                            match repo.push("origin", None, false) {
                                Ok(_) => break,
                                Err(Error::NotFastForward { .. }) => {
                                    refused += 1;
                                    let (_, merge) = repo.pull("origin", None).unwrap();
                                    merge.commit("merge origin/main").unwrap();
                                }
                                Err(e) => panic!("writer {w}: {e}"),
                            }
                        }
                    }
                    refused
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    drop(writers);
    let up = Repo::open(dir.path().join("up")).unwrap();
    let view = up.view("HEAD").unwrap();
    for w in 0..2 {
        for i in 0..25 {
            assert!(
                view.node(&id(&format!("w{w}-{i:02}"))).unwrap().is_some(),
                "w{w}-{i:02} lost ({refused} pushes were refused and retried)"
            );
        }
    }
    assert!(up.fsck().unwrap().problems.is_empty());
}
