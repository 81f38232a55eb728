//! Remotes over `cairn serve` (`http://` URLs): clone, fetch, push and pull through the
//! sync routes; only missing objects move; every object is checked on arrival; a push
//! that loses a race is refused with the remote's head; a broken transfer moves no ref.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;

use cairn::{Error, Node, NodeId, Repo};
use cairn_server::{Repos, ServerOptions};
use common::start;

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

/// A repository at `dir/name` holding `n` corpus nodes in one commit.
fn upstream(dir: &Path, name: &str, n: usize) -> Repo {
    let repo = Repo::init(dir.join(name)).unwrap();
    let mut tx = repo.transaction().unwrap();
    for node in cairn_testkit::corpus(n) {
        tx.put_node(node).unwrap();
    }
    tx.commit("corpus").unwrap();
    repo
}

fn commit_one(repo: &Repo, node: &str, text: &str) -> cairn::CommitId {
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id(node)).with_label("Note").with_text(text))
        .unwrap();
    tx.commit(&format!("put {node}")).unwrap()
}

/// The same query's result JSON, at `rev`.
fn answer(repo: &Repo, rev: &str) -> String {
    let q = cairn_testkit::corpus(3)[2].embeddings["minilm"].clone();
    let r = repo
        .retrieve()
        .at(rev)
        .vector("minilm", &q)
        .text("the river stone")
        .limit(10)
        .execute()
        .unwrap();
    serde_json::to_string(&r).unwrap()
}

#[test]
fn clone_push_fetch_and_pull_through_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path(), "up", 400);
    let head = up.head().unwrap().unwrap();
    let server = start(Repos::Single(up), ServerOptions::default());
    let url = server.url();

    // Clone: every commit, the embedder settings, the same answers.
    let a = Repo::clone_from(&url, dir.path().join("a")).unwrap();
    assert_eq!(a.head().unwrap(), Some(head));
    assert_eq!(a.resolve("origin/main").unwrap(), head);
    assert_eq!(a.remotes().unwrap()[0].url, url);
    assert!(a.fsck().unwrap().problems.is_empty());

    // A one-node push moves a handful of objects.
    let c1 = commit_one(&a, "note-1", "a note pushed over http");
    let pushed = a.push("origin", None, false).unwrap();
    assert_eq!((pushed.old, pushed.new), (Some(head), c1));
    assert!(
        pushed.transfer.objects <= 12 && pushed.transfer.bytes < 64 << 10,
        "a one-node push moves its path: {:?}",
        pushed.transfer
    );
    assert_eq!(pushed.transfer.commits, 1);

    // A second clone sees it; a fetch there moves only the new objects.
    let b = Repo::clone_from(&url, dir.path().join("b")).unwrap();
    assert_eq!(b.head().unwrap(), Some(c1));
    let c2 = commit_one(&a, "note-2", "another note");
    a.push("origin", None, false).unwrap();
    let fetched = b.fetch("origin").unwrap();
    assert_eq!(fetched.updates.len(), 1);
    assert_eq!(fetched.updates[0].new, Some(c2));
    assert!(fetched.transfer.objects <= 12, "{:?}", fetched.transfer);
    assert_eq!(b.head().unwrap(), Some(c1), "a fetch moves no local branch");
    let (_, merge) = b.pull("origin", None).unwrap();
    merge.commit("pull").unwrap();
    assert_eq!(b.head().unwrap(), Some(c2), "a fast-forward");
    let (a_answer, b_answer) = (answer(&a, "HEAD"), answer(&b, "HEAD"));
    assert_eq!(a_answer, b_answer);

    // Nothing to push: nothing moves.
    let again = a.push("origin", None, false).unwrap();
    assert_eq!(again.transfer.objects, 0);

    // The server's repository, opened after the server stops: the same commit and answer.
    server.shutdown().unwrap();
    drop((a, b));
    let up = Repo::open(dir.path().join("up")).unwrap();
    assert_eq!(up.head().unwrap(), Some(c2));
    assert_eq!(
        answer(&up, "HEAD"),
        a_answer,
        "byte-identical retrieval on the server's copy"
    );
    assert!(up.fsck().unwrap().problems.is_empty());
}

#[test]
fn a_push_that_loses_the_race_is_refused_with_the_remote_head() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path(), "up", 50);
    let server = start(Repos::Single(up), ServerOptions::default());
    let url = server.url();
    let a = Repo::clone_from(&url, dir.path().join("a")).unwrap();
    let b = Repo::clone_from(&url, dir.path().join("b")).unwrap();
    let ca = commit_one(&a, "from-a", "a");
    commit_one(&b, "from-b", "b");
    a.push("origin", None, false).unwrap();
    match b.push("origin", None, false) {
        Err(Error::NotFastForward { remote_head, .. }) => assert_eq!(remote_head, ca.to_hex()),
        other => panic!("expected NotFastForward, got {other:?}"),
    }
    // Fetch, merge, push again: accepted, and both commits are on the remote.
    let (_, merge) = b.pull("origin", None).unwrap();
    let merged = merge.commit("merge origin/main").unwrap();
    b.push("origin", None, false).unwrap();
    let c = Repo::clone_from(&url, dir.path().join("c")).unwrap();
    assert_eq!(c.head().unwrap(), Some(merged));
    assert!(c.node(&id("from-a")).unwrap().is_some());
    assert!(c.node(&id("from-b")).unwrap().is_some());
}

#[test]
fn racing_pushers_lose_no_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path(), "up", 20);
    let server = start(Repos::Single(up), ServerOptions::default());
    let url = server.url();
    let writers: Vec<Repo> = (0..2)
        .map(|w| Repo::clone_from(&url, dir.path().join(format!("w{w}"))).unwrap())
        .collect();
    let acknowledged: Vec<Vec<cairn::CommitId>> = std::thread::scope(|s| {
        let handles: Vec<_> = writers
            .iter()
            .enumerate()
            .map(|(w, repo)| {
                s.spawn(move || {
                    let mut acked = Vec::new();
                    let mut refused = 0;
                    for i in 0..8 {
                        commit_one(repo, &format!("w{w}-{i}"), "racing");
                        loop {
                            match repo.push("origin", None, false) {
                                Ok(p) => {
                                    acked.push(p.new);
                                    break;
                                }
                                Err(Error::NotFastForward { .. }) => {
                                    refused += 1;
                                    let (_, merge) = repo.pull("origin", None).unwrap();
                                    merge.commit("merge").unwrap();
                                }
                                Err(e) => panic!("push: {e}"),
                            }
                        }
                    }
                    let _ = refused;
                    acked
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let check = Repo::clone_from(&url, dir.path().join("check")).unwrap();
    let history: std::collections::HashSet<cairn::CommitId> = check
        .log(Some("HEAD"), None)
        .unwrap()
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    for c in acknowledged.iter().flatten() {
        assert!(history.contains(c), "acknowledged commit {c} is on the remote");
    }
    for w in 0..2 {
        for i in 0..8 {
            assert!(check.node(&id(&format!("w{w}-{i}"))).unwrap().is_some());
        }
    }
}

#[test]
fn a_push_cut_short_moves_no_ref_and_leaves_the_remote_sound() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path(), "up", 30);
    let head = up.head().unwrap().unwrap();
    let options = ServerOptions {
        max_body_bytes: 64 << 10,
        ..ServerOptions::default()
    };
    let server = start(Repos::Single(up), options);
    let a = Repo::clone_from(&server.url(), dir.path().join("a")).unwrap();
    // A commit too large for one upload under this server's body limit: the push fails
    // part-way (some batches stored, the last refused).
    let mut tx = a.transaction().unwrap();
    for i in 0..400 {
        tx.put_node(Node::new(id(&format!("big-{i:04}"))).with_text("x".repeat(2000)))
            .unwrap();
    }
    tx.commit("big").unwrap();
    let err = a.push("origin", None, false).unwrap_err();
    // The server answers 413, or closes the connection before the body is all sent.
    assert!(
        matches!(
            err,
            Error::Remote {
                status: Some(413) | None,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(a.resolve("origin/main").unwrap(), head, "no tracking ref moved");
    server.shutdown().unwrap();
    let up = Repo::open(dir.path().join("up")).unwrap();
    assert_eq!(up.head().unwrap(), Some(head), "the remote's branch did not move");
    assert!(up.fsck().unwrap().problems.is_empty());
}

#[test]
fn the_server_refuses_objects_sent_before_their_children_and_branches_to_missing_commits() {
    let dir = tempfile::tempdir().unwrap();
    let src = upstream(dir.path(), "src", 5);
    let head = src.head().unwrap().unwrap();
    let commit_bytes = src.store().get(head.hash()).unwrap().unwrap();
    let dst = Repo::init(dir.path().join("dst")).unwrap();
    // hash ‖ u32le(len) ‖ bytes: the commit alone, its trees not sent.
    let mut body = head.hash().as_bytes().to_vec();
    body.extend_from_slice(&(commit_bytes.len() as u32).to_le_bytes());
    body.extend_from_slice(&commit_bytes);
    let err = dst.sync_server().put(&body).unwrap_err();
    assert_eq!(err.kind(), cairn::ErrorKind::InvalidInput, "{err}");
    assert!(!dst.store().contains(head.hash()).unwrap(), "nothing stored");
    // A damaged object (one byte flipped) is refused by its name.
    let mut bad = body.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let err = dst.sync_server().put(&bad).unwrap_err();
    assert!(err.to_string().contains("do not match"), "{err}");
    // A branch moved to a commit the server lacks.
    let err = dst
        .sync_server()
        .branch(&cairn::SyncBranch {
            branch: "main".into(),
            old: None,
            new: head.to_hex(),
            dims: Default::default(),
        })
        .unwrap_err();
    assert_eq!(err.kind(), cairn::ErrorKind::InvalidInput, "{err}");
    assert_eq!(dst.head().unwrap(), None);
    // A dimension record that is not a dimension is refused before anything moves.
    for bad in ["0300", "00000000", "01000000ff"] {
        let err = dst
            .sync_server()
            .branch(&cairn::SyncBranch {
                branch: "main".into(),
                old: None,
                new: head.to_hex(),
                dims: [("dense-dim/m".to_string(), bad.to_string())].into(),
            })
            .unwrap_err();
        assert_eq!(err.kind(), cairn::ErrorKind::InvalidInput, "{bad}: {err}");
    }
    assert!(dst.dense_dim("m").unwrap().is_none(), "no record registered");
}

/// A fake server that answers `/sync/refs` with one branch and `/sync/get` with damaged
/// bytes: a fetch names the object and moves no ref.
#[test]
fn an_object_damaged_in_flight_is_named_and_moves_no_ref() {
    let dir = tempfile::tempdir().unwrap();
    let src = upstream(dir.path(), "src", 5);
    let head = src.head().unwrap().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let refs = serde_json::json!({
        "current": "main",
        "branches": {"main": head.to_hex()},
        "dims": {},
        "settings": {},
    })
    .to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let mut length = 0usize;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let answer: Vec<u8> = if line.starts_with("GET /sync/refs") {
                refs.clone().into_bytes()
            } else {
                // One frame per hash asked: the right length, the wrong bytes.
                let mut out = Vec::new();
                for _ in 0..body.len() / 32 {
                    out.extend_from_slice(&4u32.to_le_bytes());
                    out.extend_from_slice(b"\x41bad");
                }
                out
            };
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                answer.len()
            );
            let _ = stream.write_all(&answer);
        }
    });
    let mine = Repo::init(dir.path().join("mine")).unwrap();
    mine.remote_add("origin", &url).unwrap();
    let err = mine.fetch("origin").unwrap_err();
    assert!(
        matches!(&err, Error::Remote { .. }) && err.to_string().contains(&head.to_hex()),
        "the damaged object is named: {err}"
    );
    assert!(mine.remote_branches("origin").unwrap().is_empty(), "no tracking ref");
    assert!(!mine.store().contains(head.hash()).unwrap());
}

/// One history through all three URL kinds: a path served by `cairn serve`, cloned over
/// `http://`, pushed to a bucket (`s3://`, moto on loopback; skipped where moto cannot
/// start), cloned from the bucket, changed there and carried back to the server — the same
/// commit answers byte for byte in every copy.
#[test]
fn a_history_through_a_path_a_server_and_a_bucket() {
    let Some(moto) = cairn_testkit::moto() else { return };
    let bucket = format!("{}/repo", moto.new_bucket("sync-three"));
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path(), "up", 200);
    let server = start(Repos::Single(up), ServerOptions::default());
    let c = Repo::clone_from(&server.url(), dir.path().join("c")).unwrap();
    drop(Repo::init(&bucket).unwrap());
    c.remote_add("bucket", &bucket).unwrap();
    c.push("bucket", None, false).unwrap();
    let d = Repo::clone_from(&bucket, dir.path().join("d")).unwrap();
    assert_eq!(d.head().unwrap(), c.head().unwrap());
    let changed = commit_one(&d, "from-d", "written beside the bucket");
    d.push("origin", None, false).unwrap();
    c.fetch("bucket").unwrap();
    let (_, merge) = c.pull("bucket", None).unwrap();
    merge.commit("pull bucket").unwrap();
    assert_eq!(c.head().unwrap(), Some(changed));
    c.push("origin", None, false).unwrap();
    let want = answer(&c, "HEAD");
    assert_eq!(answer(&d, "HEAD"), want);
    server.shutdown().unwrap();
    drop((c, d));
    let served = Repo::open(dir.path().join("up")).unwrap();
    assert_eq!(served.head().unwrap(), Some(changed));
    assert_eq!(answer(&served, "HEAD"), want, "the server's copy");
    let in_bucket = Repo::open(&bucket).unwrap();
    assert_eq!(answer(&in_bucket, "HEAD"), want, "the bucket's copy");
    assert!(in_bucket.fsck().unwrap().problems.is_empty());
}

/// Objects larger in all than one `get` answer holds (`SYNC_MAX_ANSWER_BYTES`) arrive over
/// several answers: a clone of them is complete.
#[test]
fn a_clone_of_large_objects_takes_several_answers() {
    let dir = tempfile::tempdir().unwrap();
    let up = Repo::init(dir.path().join("up")).unwrap();
    let mut tx = up.transaction().unwrap();
    // Texts near their 1 MiB cap: 100 of them are more than one answer's 64 MiB.
    let big = (1 << 20) - 64;
    let n = cairn::SYNC_MAX_ANSWER_BYTES.div_ceil(big) + 36;
    for i in 0..n {
        let text: String = (0..big).map(|j| (b'a' + ((i + j) % 26) as u8) as char).collect();
        tx.put_node(Node::new(id(&format!("big-{i:02}"))).with_text(text))
            .unwrap();
    }
    let head = tx.commit("big nodes").unwrap();
    let server = start(Repos::Single(up), ServerOptions::default());
    let copy = Repo::clone_from(&server.url(), dir.path().join("copy")).unwrap();
    assert_eq!(copy.head().unwrap(), Some(head));
    assert!(copy.fsck().unwrap().problems.is_empty());
    assert_eq!(
        copy.node(&id(&format!("big-{:02}", n - 1)))
            .unwrap()
            .unwrap()
            .text
            .len(),
        big
    );
}
