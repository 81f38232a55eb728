//! The chunked index of a repository: over random histories it equals a from-scratch
//! build of the same content, lane by lane; chunk keys do not depend on history; unit
//! graphs do not depend on the thread count; damaged or deleted chunk parts are detected,
//! rebuilt and reported, never returned as data.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn::{CommitId, Edge, Hash, Node, NodeId, Repo, SparseVector, Validity};
use cairn_core::codec::{encode_node, hash_object};
use cairn_core::level::key_level;
use cairn_index::{CommitIndexes, IndexNeeds, IndexParams};
use cairn_store::{MemoryStore, Store};
use proptest::prelude::*;

const WORDS: [&str; 12] = [
    "wing", "stall", "lift", "drag", "flow", "shock", "layer", "vortex", "panel", "heat", "nozzle", "jet",
];

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

/// Node `i` in variant `v`: labels, text, props, vectors and validity all follow `v`, with
/// few distinct values so that scores tie.
fn node(i: u32, v: u8) -> Node {
    let mut n = Node::new(id(&format!("n{i:04}")))
        .with_label(["Doc", "Note", "Fact"][usize::from(v % 3)])
        .with_text(
            (0..(3 + v % 5))
                .map(|k| WORDS[(i as usize + usize::from(v) * 3 + usize::from(k)) % WORDS.len()])
                .collect::<Vec<_>>()
                .join(" "),
        )
        .with_prop("v", i64::from(v % 4))
        .with_embedding(
            "m",
            (0..8)
                .map(|k| f32::from((i as u8).wrapping_mul(3).wrapping_add(v).wrapping_add(k) % 5) - 2.0)
                .collect(),
        );
    if v.is_multiple_of(2) {
        n = n.with_sparse(
            "s",
            SparseVector::new(vec![u32::from(v % 3), 7], vec![1.0, 0.5 + f32::from(v % 2)]),
        );
    }
    if v % 4 == 1 {
        n = n.with_validity(Validity::new(Some(100), Some(200)));
    }
    n
}

fn everything() -> IndexNeeds {
    IndexNeeds {
        text: true,
        dense: ["m".to_string()].into(),
        sparse: ["s".to_string()].into(),
        edges: true,
        graphs: Default::default(),
    }
}

/// The commit's index as the repository serves it, and a from-scratch in-memory build of
/// the commit's content.
fn served_and_fresh(repo: &Repo, at: &CommitId) -> (Arc<CommitIndexes>, CommitIndexes) {
    let served = repo.indexes_at(at, &everything()).unwrap();
    let nodes: Vec<(Hash, Node)> = repo
        .nodes_at(at, None)
        .unwrap()
        .into_iter()
        .map(|n| (hash_object(&encode_node(&n)), n))
        .collect();
    let edges = repo.edges_at(at).unwrap();
    let fresh = CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &edges);
    (served, fresh)
}

/// Every lane of `a` and `b` answers a set of queries identically (hits and score bits).
fn same_answers(a: &CommitIndexes, b: &CommitIndexes) {
    assert_eq!(a.digest(), b.digest(), "parts differ");
    assert_eq!(a.node_count(), b.node_count());
    let labels = a.labels_all_of(&["Doc".to_string()]);
    let filters = [None, Some(&labels)];
    for f in filters {
        for q in ["wing stall", "flow flow layer", "nothing"] {
            assert_eq!(a.text_search(q, 7, f).unwrap(), b.text_search(q, 7, f).unwrap(), "{q}");
            // The served view's term directory was derived along the history: its pruned
            // search equals scoring every posting.
            assert_eq!(a.text_search(q, 7, f).unwrap(), a.text_search_reference(q, 7, f), "{q}");
        }
        let qv = [1.0f32, -2.0, 0.5, 0.0, 2.0, 1.0, -1.0, 0.25];
        assert_eq!(
            a.dense_search("m", &qv, 9, f).ok().map(|r| r.hits),
            b.dense_search("m", &qv, 9, f).ok().map(|r| r.hits)
        );
        let sq = SparseVector::new(vec![0, 2, 7], vec![1.0, 0.5, 2.0]);
        assert_eq!(
            a.sparse_search("s", &sq, 9, f).ok(),
            b.sparse_search("s", &sq, 9, f).ok()
        );
    }
    for t in [150, 250] {
        assert_eq!(
            a.valid_at(t).map(|f| f.iter().collect::<Vec<_>>()),
            b.valid_at(t).map(|f| f.iter().collect())
        );
    }
    for o in (0..a.node_count()).step_by(7) {
        let (mut ea, mut eb) = (Vec::new(), Vec::new());
        a.outgoing(o, &mut ea);
        b.outgoing(o, &mut eb);
        a.incoming(o, &mut ea);
        b.incoming(o, &mut eb);
        assert_eq!(ea, eb);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put(u32, u8),
    Delete(u32),
    Link(u32, u32),
    Unlink(u32, u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u32..400, 0u8..8).prop_map(|(i, v)| Op::Put(i, v)),
        2 => (0u32..400).prop_map(Op::Delete),
        2 => (0u32..400, 0u32..400).prop_map(|(a, b)| Op::Link(a, b)),
        1 => (0u32..400, 0u32..400).prop_map(|(a, b)| Op::Unlink(a, b)),
    ]
}

fn apply(repo: &Repo, ops: &[Op]) -> Option<CommitId> {
    let mut tx = repo.transaction().unwrap();
    for o in ops {
        match *o {
            Op::Put(i, v) => tx.put_node(node(i, v)).unwrap(),
            Op::Delete(i) => {
                let nid = id(&format!("n{i:04}"));
                if tx.node(&nid).unwrap().is_some() {
                    tx.delete_node(&nid).unwrap();
                }
            }
            Op::Link(a, b) | Op::Unlink(a, b) => {
                let (s, t) = (id(&format!("n{a:04}")), id(&format!("n{b:04}")));
                if tx.node(&s).unwrap().is_none() || tx.node(&t).unwrap().is_none() {
                    continue;
                }
                if matches!(o, Op::Link(..)) {
                    tx.put_edge(Edge::new(s, "cites", t)).unwrap();
                } else {
                    let _ = tx.delete_edge(&cairn::EdgeKey {
                        source: s,
                        kind: "cites".into(),
                        target: t,
                    });
                }
            }
        }
    }
    tx.commit("ops").ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// After every commit of a random history, the served index (chunks shared with the
    /// commits before it, some loaded back from the store) equals a from-scratch build.
    #[test]
    fn served_index_equals_a_fresh_build_over_random_histories(
        batches in proptest::collection::vec(proptest::collection::vec(op(), 1..60), 1..8),
        evict in any::<bool>(),
    ) {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::keeping_derived());
        let repo = Repo::with_store(Arc::clone(&store)).unwrap();
        if evict {
            // A tiny cache: parts come back from the store (or are rebuilt) all the time.
            repo.set_memory_budget(64 << 10);
        }
        let mut commits = Vec::new();
        for b in &batches {
            if let Some(c) = apply(&repo, b) {
                commits.push(c);
                let (served, fresh) = served_and_fresh(&repo, &c);
                same_answers(&served, &fresh);
            }
        }
        // Old commits too, in another order, from a new handle on the same store.
        let other = Repo::with_store(store).unwrap();
        for c in commits.iter().rev() {
            let (served, fresh) = served_and_fresh(&other, c);
            same_answers(&served, &fresh);
        }
    }
}

/// Ids whose level is below `below` (so they never cut a span at that level).
fn ids_below_level(below: u8, n: usize, prefix: &str) -> Vec<String> {
    (0..)
        .map(|i| format!("{prefix}{i:06}"))
        .filter(|s| key_level(s.as_bytes()) < below)
        .take(n)
        .collect()
}

/// Splits: more nodes than a chunk holds, or more bytes, between two level-2 keys.
#[test]
fn oversize_spans_split_and_still_equal_a_fresh_build() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    // 4,200 keys of level < 2: one span, over the 4,096-key limit.
    for s in ids_below_level(2, 4200, "k") {
        tx.put_node(
            Node::new(id(&s))
                .with_text("wing stall")
                .with_embedding("m", vec![1.0; 8]),
        )
        .unwrap();
    }
    // 24 nodes of 200 KB text among them: over the 4 MiB limit as well.
    for s in ids_below_level(2, 24, "big") {
        tx.put_node(Node::new(id(&s)).with_text("lift ".repeat(40_000)))
            .unwrap();
    }
    let c = tx.commit("oversize").unwrap();
    let keys = repo.index_chunk_keys("HEAD").unwrap();
    assert!(keys.len() > 2, "the oversize span was split into {} chunks", keys.len());
    let (served, fresh) = served_and_fresh(&repo, &c);
    assert!(served.chunks().iter().all(|ch| ch.len() <= 4096));
    same_answers(&served, &fresh);
    assert_eq!(served.chunks().len(), fresh.chunks().len());
    // An edit inside: still equal, and most chunks are shared with the parent.
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id(&ids_below_level(2, 1, "k")[0])).with_text("edited"))
        .unwrap();
    let c2 = tx.commit("edit").unwrap();
    let keys2 = repo.index_chunk_keys("HEAD").unwrap();
    let shared = keys2.iter().filter(|k| keys.contains(k)).count();
    assert!(shared + 2 >= keys2.len(), "{shared} of {} chunks shared", keys2.len());
    let (served, fresh) = served_and_fresh(&repo, &c2);
    same_answers(&served, &fresh);
}

/// The same content reached by different histories is cut into the same chunks, whose
/// keys are pinned here (golden: a change to the chunk rule, the key derivation or the
/// parameter fingerprint changes them).
#[test]
fn chunk_keys_do_not_depend_on_history() {
    let content: Vec<Node> = (0..600).map(|i| node(i, (i % 8) as u8)).collect();
    // A: one commit.
    let a = Repo::in_memory().unwrap();
    let mut tx = a.transaction().unwrap();
    for n in &content {
        tx.put_node(n.clone()).unwrap();
    }
    tx.commit("all").unwrap();
    // B: reverse order in small commits, with detours (extra nodes, other variants).
    let b = Repo::in_memory().unwrap();
    for chunk in content.iter().rev().collect::<Vec<_>>().chunks(37) {
        let mut tx = b.transaction().unwrap();
        for n in chunk {
            tx.put_node(node(600 + n.id.as_str().len() as u32, 1)).unwrap();
            tx.put_node(node(n.id.as_str()[1..].parse().unwrap(), 7)).unwrap();
        }
        tx.commit("detour").unwrap();
        let mut tx = b.transaction().unwrap();
        for n in chunk {
            tx.put_node((*n).clone()).unwrap();
        }
        tx.delete_node(&id("n0604")).ok();
        tx.delete_node(&id("n0605")).ok();
        tx.commit("back").unwrap();
    }
    let ka = a.index_chunk_keys("HEAD").unwrap();
    let kb = b.index_chunk_keys("HEAD").unwrap();
    assert_eq!(ka, kb);
    assert_eq!(a.indexes("HEAD").unwrap().digest(), b.indexes("HEAD").unwrap().digest());
    let all: Vec<u8> = ka.iter().flat_map(|k| k.as_bytes().to_vec()).collect();
    assert_eq!(
        (ka.len(), ka[0].to_hex(), Hash::of(&all).to_hex()),
        (
            GOLDEN_CHUNKS,
            GOLDEN_FIRST_CHUNK.to_string(),
            GOLDEN_ALL_CHUNKS.to_string()
        ),
        "golden chunk keys (storage-format.md §7.2)"
    );
}

const GOLDEN_CHUNKS: usize = 11;
const GOLDEN_FIRST_CHUNK: &str = "4c631bc243dcc6b2bfd381ba64c996845bb8fc91beef7000046b3658c31ed19e";
const GOLDEN_ALL_CHUNKS: &str = "a1aad6bda2d28d89cd896091aeb8ec37b23448896417c745ca032cf479e5cfcc";

/// A repository whose node tree has several units (ids of level ≥ 5 cut them).
fn units_repo(store: Arc<dyn Store>) -> Repo {
    let repo = Repo::with_store(store).unwrap();
    fill_units(&repo);
    repo
}

/// Commits [`units_repo`]'s content.
fn fill_units(repo: &Repo) {
    let mut tx = repo.transaction().unwrap();
    for i in 0..3000u32 {
        tx.put_node(node(i, (i % 8) as u8)).unwrap();
    }
    let cuts: Vec<String> = (0..)
        .map(|i| format!("u{i}"))
        .filter(|s| key_level(s.as_bytes()) >= 5)
        .take(3)
        .collect();
    for (j, s) in cuts.iter().enumerate() {
        tx.put_node(Node::new(id(s)).with_embedding("m", vec![j as f32; 8]))
            .unwrap();
    }
    tx.commit("units").unwrap();
}

/// After edits across several units, the BM25 lane — served by an earlier commit's unit
/// texts, with the chunks it lacks skipped and the view's new chunks probed — equals a
/// from-scratch build at every commit, in the handle that made them and in a new one;
/// a one-node commit stores no unit text of its own.
#[test]
fn unit_texts_of_a_base_serve_later_commits_exactly() {
    for disk in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let repo = if disk {
            Repo::init(dir.path().join("r")).unwrap()
        } else {
            Repo::with_store(Arc::new(MemoryStore::keeping_derived())).unwrap()
        };
        fill_units(&repo);
        let head = repo.log(Some("HEAD"), Some(1)).unwrap()[0].0;
        let (served, fresh) = served_and_fresh(&repo, &head);
        same_answers(&served, &fresh);
        let unit_texts = || repo.store().derived_keys(b"ut/").unwrap().len();
        let units = unit_texts();
        assert!(units >= 3, "{units} unit texts stored");
        let mut rnd = xorshift(41);
        let mut commits = vec![head];
        for round in 0..10u32 {
            let mut tx = repo.transaction().unwrap();
            let edits = if round % 3 == 0 { 1 } else { 40 };
            for _ in 0..edits {
                let i = rnd(3000) as u32;
                if rnd(4) == 0 {
                    tx.delete_node(&id(&format!("n{i:04}"))).ok();
                } else {
                    tx.put_node(node(i, (rnd(8) + 8) as u8)).unwrap();
                }
            }
            let Ok(c) = tx.commit("edits") else { continue };
            let before = unit_texts();
            let (served, fresh) = served_and_fresh(&repo, &c);
            same_answers(&served, &fresh);
            if edits == 1 {
                assert_eq!(unit_texts(), before, "a one-node commit stored a unit text");
            }
            commits.push(c);
        }
        let other = Repo::with_store(Arc::clone(repo.store())).unwrap();
        for c in commits.iter().rev() {
            let (served, fresh) = served_and_fresh(&other, c);
            same_answers(&served, &fresh);
        }
    }
}

/// A view derived along commits keeps its donor's unit texts, the chunks they lack skipped
/// and its new chunks served by their own parts; once more than 64 (or an eighth) of its
/// chunks are, each unit of its own cut with more of them than a 32nd of its chunks (at
/// least 8) gets its text built, and only those. Every lane equals a from-scratch build at
/// every commit, and the own parts stay few.
#[test]
fn a_drifted_unit_alone_gets_its_text_built_and_answers_stay_exact() {
    let repo = Repo::with_store(Arc::new(MemoryStore::keeping_derived())).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..12_000u32 {
        tx.put_node(node(i, (i % 8) as u8)).unwrap();
    }
    // Ids of level ≥ 5 cut units.
    for s in (0..)
        .map(|i| format!("n{i:05}x"))
        .filter(|s| key_level(s.as_bytes()) >= 5)
        .take(8)
    {
        tx.put_node(Node::new(id(&s)).with_text("cut")).unwrap();
    }
    tx.commit("all").unwrap();
    let head = repo.log(Some("HEAD"), Some(1)).unwrap()[0].0;
    let (served, fresh) = served_and_fresh(&repo, &head);
    same_answers(&served, &fresh);
    let unit_texts = || repo.store().derived_keys(b"ut/").unwrap().len();
    let first = unit_texts();
    assert!(first >= 4, "{first} unit texts");
    let mut rnd = xorshift(7);
    let mut built = 0;
    let mut focused = 0;
    for round in 0..10u32 {
        let before = unit_texts();
        let mut tx = repo.transaction().unwrap();
        // Early rounds edit everywhere; later ones a third of the ids (a few units).
        for _ in 0..40 {
            let i = if round < 3 { rnd(12_000) } else { 2_000 + rnd(4_000) } as u32;
            tx.put_node(node(i, (rnd(8) + 8 + round as u64) as u8)).unwrap();
        }
        let c = tx.commit("edits").unwrap();
        let (served, fresh) = served_and_fresh(&repo, &c);
        same_answers(&served, &fresh);
        // Fewer unit texts than the view has units are built at a time, and edits to a
        // third of the ids build the texts of at most half of them.
        let new = unit_texts() - before;
        if round >= 3 {
            assert!(2 * new <= first, "round {round}: {new} of {first} unit texts built");
            focused += new;
        }
        assert!(new < first, "round {round}: {new} unit texts built");
        built += new;
        assert!(
            served.text_uncovered().len() <= 64 + served.chunks().len() / 8,
            "round {round}: {} chunks on their own parts",
            served.text_uncovered().len()
        );
    }
    assert!(
        built > focused && focused > 0,
        "{built} unit texts built, {focused} for focused edits"
    );
}

/// A stored unit text damaged inside (its head whole, so a view opens it): the query
/// still gives the same answer, from the node texts; the next one reports the repair, and
/// the rebuilt value is whole again.
#[test]
fn a_damaged_unit_text_is_answered_from_the_data_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r");
    let repo = Repo::init(&path).unwrap();
    fill_units(&repo);
    let ask = |repo: &Repo| repo.retrieve().text("wing stall layer").limit(10).execute().unwrap();
    let want = ask(&repo);
    assert!(!want.items.is_empty());
    drop(repo);
    let repo = Repo::open(&path).unwrap();
    let keys = repo.store().derived_keys(b"ut/").unwrap();
    assert!(keys.len() >= 3);
    for k in &keys {
        let mut v = repo.store().get_derived(k).unwrap().unwrap();
        let n = v.len();
        for b in &mut v[n - 64..] {
            *b ^= 0x3c;
        }
        repo.store().put_derived(&[(k.clone(), v)]).unwrap();
    }
    let report = repo.fsck().unwrap();
    assert_eq!(
        report.derived_problems.len(),
        keys.len(),
        "{:?}",
        report.derived_problems
    );
    let got = ask(&repo);
    assert_eq!(got.items, want.items);
    let again = ask(&repo);
    assert_eq!(again.items, want.items);
    let notes = rebuilt_notes(&again);
    assert!(
        !notes.is_empty() && notes.iter().all(|n| n.contains("unit text")),
        "{notes:?}"
    );
    assert!(repo.fsck().unwrap().derived_ok());
    drop(repo);
    let repo = Repo::open(&path).unwrap();
    let whole = ask(&repo);
    assert_eq!(whole.items, want.items);
    assert!(whole
        .warnings
        .iter()
        .all(|w| w.code != cairn::retrieve::WarningCode::DerivedRebuilt));
}

#[test]
fn unit_graphs_are_identical_for_any_thread_count() {
    let mut digests = Vec::new();
    for threads in [1, 2, 8] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::keeping_derived());
        let repo = units_repo(Arc::clone(&store));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let report = pool.install(|| repo.build_indexes_with("HEAD", true)).unwrap();
        assert!(report.dense[0].unit_graphs >= 2, "{report:?}");
        let graphs: BTreeMap<Vec<u8>, Vec<u8>> = store.scan_derived(b"ug/").unwrap().into_iter().collect();
        assert_eq!(graphs.len(), report.dense[0].unit_graphs);
        digests.push(graphs);
    }
    assert_eq!(digests[0], digests[1]);
    assert_eq!(digests[0], digests[2]);
}

/// The messages of a retrieval's "derived data rebuilt" warnings.
fn rebuilt_notes(r: &cairn::retrieve::RetrievalResult) -> Vec<&str> {
    r.warnings
        .iter()
        .filter(|w| w.code == cairn::retrieve::WarningCode::DerivedRebuilt)
        .map(|w| w.message.as_str())
        .collect()
}

fn query(repo: &Repo) -> cairn::retrieve::RetrievalResult {
    repo.retrieve()
        .vector("m", &[1.0, 0.0, -1.0, 2.0, 0.0, 1.0, 1.0, -2.0])
        .text("wing layer")
        .expand(cairn::retrieve::GraphExpand::hops(1))
        .limit(10)
        .execute()
        .unwrap()
}

#[test]
fn damaged_and_deleted_parts_are_rebuilt_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r");
    let repo = Repo::init(&path).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..400u32 {
        tx.put_node(node(i, (i % 8) as u8)).unwrap();
    }
    for i in 0..399u32 {
        tx.put_edge(Edge::new(
            id(&format!("n{i:04}")),
            "cites",
            id(&format!("n{:04}", i + 1)),
        ))
        .unwrap();
    }
    tx.commit("data").unwrap();
    repo.build_indexes("HEAD").unwrap();
    let want = query(&repo);
    assert!(want
        .warnings
        .iter()
        .all(|w| w.code != cairn::retrieve::WarningCode::DerivedRebuilt));
    drop(repo);

    let reopen = || Repo::open(&path).unwrap();
    let repo = reopen();
    let keys = repo.store().derived_keys(b"ck/").unwrap();
    let dense: Vec<&Vec<u8>> = keys.iter().filter(|k| k.len() > 36 && k[35] == 0xC4).collect();
    let core: Vec<&Vec<u8>> = keys.iter().filter(|k| k.len() == 36 && k[35] == 0xC1).collect();
    // A deleted dense part (of a third chunk), a core part holding a hostile length, and
    // garbage.
    let other = dense
        .iter()
        .find(|k| k[3..35] != core[0][3..35] && k[3..35] != core[1][3..35])
        .unwrap();
    repo.store().delete_derived(&[(*other).clone()]).unwrap();
    let mut hostile = repo.store().get_derived(core[0]).unwrap().unwrap();
    hostile.truncate(33);
    hostile.extend_from_slice(&u32::MAX.to_le_bytes());
    hostile.extend_from_slice(&[0xff; 64]);
    repo.store()
        .put_derived(&[(core[0].clone(), hostile), (core[1].clone(), b"garbage".to_vec())])
        .unwrap();
    let report = repo.fsck().unwrap();
    assert!(
        report.is_ok(),
        "derived damage is not data damage: {:?}",
        report.problems
    );
    assert_eq!(report.derived_problems.len(), 2, "{:?}", report.derived_problems);
    drop(repo);

    // A fresh process-like handle: the same answer, with warnings naming the repairs.
    let repo = reopen();
    let got = query(&repo);
    assert_eq!(got.items, want.items);
    let notes = rebuilt_notes(&got);
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("missing")));
    assert_eq!(notes.iter().filter(|n| n.contains("damaged")).count(), 2);
    // Rebuilt parts were stored again: a new handle finds everything whole.
    drop(repo);
    let repo = reopen();
    let again = query(&repo);
    assert!(again
        .warnings
        .iter()
        .all(|w| w.code != cairn::retrieve::WarningCode::DerivedRebuilt));
    assert!(repo.fsck().unwrap().derived_ok());

    // Repair deletes damaged entries at once.
    let k = repo.store().derived_keys(b"ck/").unwrap()[0].clone();
    repo.store().put_derived(&[(k.clone(), vec![0xC1; 40])]).unwrap();
    assert_eq!(repo.repair_derived().unwrap().len(), 1);
    assert!(repo.store().get_derived(&k).unwrap().is_none());
    assert!(repo.fsck().unwrap().derived_ok());
    assert_eq!(query(&repo).items, want.items);
}

#[test]
fn a_one_node_commit_rebuilds_one_chunk_and_shares_the_rest() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::keeping_derived());
    let repo = Repo::with_store(store).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..2000u32 {
        tx.put_node(node(i, (i % 8) as u8)).unwrap();
    }
    tx.commit("bulk").unwrap();
    let before = repo.index_chunk_keys("HEAD").unwrap();
    repo.build_indexes("HEAD").unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(node(1234, 3)).unwrap();
    tx.commit("one").unwrap();
    let stored = repo.index_stats().stored_values;
    let report = repo.build_indexes("HEAD").unwrap();
    let after = repo.index_chunk_keys("HEAD").unwrap();
    assert_eq!(before.len(), after.len());
    assert_eq!(before.iter().zip(&after).filter(|(a, b)| a != b).count(), 1);
    // One chunk's parts (core, text, dense, maybe sparse) and a manifest, nothing else.
    assert!(report.stored_values <= 4, "{report:?}");
    assert!(repo.index_stats().stored_values - stored <= 5);
    // And an edge-only commit touches no node chunk.
    let mut tx = repo.transaction().unwrap();
    tx.put_edge(Edge::new(id("n0001"), "cites", id("n0002"))).unwrap();
    tx.commit("edge").unwrap();
    assert_eq!(repo.index_chunk_keys("HEAD").unwrap(), after);
}

/// A fixed xorshift: `rnd(n)` in `0..n`.
fn xorshift(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut rng = cairn_testkit::Rng(seed);
    move |n| rng.below(n)
}

/// Asserts `repo`'s chunk list at HEAD (taken over from its previous view by the last
/// query) is the list a fresh handle over `store` walks from scratch; the fresh handle.
fn assert_list_as_walked_fresh(repo: &Repo, store: &Arc<dyn Store>, round: u64) -> Repo {
    let taken_over = repo.index_chunk_keys("HEAD").unwrap();
    let fresh = Repo::with_store(Arc::clone(store)).unwrap();
    assert_eq!(taken_over, fresh.index_chunk_keys("HEAD").unwrap(), "round {round}");
    fresh
}

/// A view's chunk list taken over from the previous view (shared subtrees' chunks copied,
/// only the changed path walked) is the list a fresh handle walks from scratch, over a
/// history of edits, inserts and deletes at every position, single and batched; so are the
/// views.
#[test]
fn a_list_taken_over_from_the_previous_view_is_the_list_walked_from_scratch() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::keeping_derived());
    let repo = Repo::with_store(Arc::clone(&store)).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in (0..8000u32).step_by(2) {
        tx.put_node(node(i, (i % 7) as u8)).unwrap();
    }
    tx.commit("base").unwrap();
    repo.retrieve().label("Doc").text("wing").limit(3).execute().unwrap();
    let mut rnd = xorshift(0x51_7c_c1_b7_27_22_0a_95u64);
    for round in 0..60u64 {
        let mut tx = repo.transaction().unwrap();
        for _ in 0..1 + rnd(3) * rnd(4) {
            let i = rnd(8000) as u32;
            match rnd(3) {
                0 => {
                    tx.delete_node(&id(&format!("n{i:04}"))).ok();
                }
                _ => {
                    tx.put_node(node(i, (round % 11) as u8 + 1)).unwrap();
                }
            }
        }
        tx.commit("edit").unwrap();
        // The query assembles the view from the previous one's.
        repo.retrieve().label("Doc").text("wing").limit(3).execute().unwrap();
        let fresh = assert_list_as_walked_fresh(&repo, &store, round);
        if round % 10 == 9 {
            assert_eq!(
                repo.indexes("HEAD").unwrap().digest(),
                fresh.indexes("HEAD").unwrap().digest(),
                "round {round}"
            );
        }
    }
}

/// The same with an oversize span (split into pieces) in the tree: edits inside it, beside it
/// and elsewhere; the taken-over list (pieces copied with their subtree, or re-split when
/// walked) is the list walked from scratch.
#[test]
fn a_list_with_split_spans_taken_over_is_the_list_walked_from_scratch() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::keeping_derived());
    let repo = Repo::with_store(Arc::clone(&store)).unwrap();
    let low = ids_below_level(2, 4200, "k");
    let mut tx = repo.transaction().unwrap();
    for s in &low {
        tx.put_node(Node::new(id(s)).with_text("wing stall")).unwrap();
    }
    for i in (0..3000u32).step_by(2) {
        tx.put_node(node(i, (i % 5) as u8)).unwrap();
    }
    tx.commit("base").unwrap();
    repo.retrieve().text("wing").limit(3).execute().unwrap();
    let pieces = repo.index_chunk_keys("HEAD").unwrap().len();
    let mut rnd = xorshift(0x2545_f491_4f6c_dd1du64);
    for round in 0..12u64 {
        let mut tx = repo.transaction().unwrap();
        match round % 3 {
            0 => {
                let s = &low[rnd(low.len() as u64) as usize];
                tx.put_node(Node::new(id(s)).with_text(format!("edited {round}")))
                    .unwrap();
            }
            1 => {
                tx.delete_node(&id(&low[rnd(low.len() as u64) as usize])).ok();
                tx.put_node(node(rnd(3000) as u32, round as u8 + 1)).unwrap();
            }
            _ => {
                tx.put_node(node(rnd(3000) as u32, round as u8 + 1)).unwrap();
            }
        }
        tx.commit("edit").unwrap();
        repo.retrieve().text("wing").limit(3).execute().unwrap();
        assert_list_as_walked_fresh(&repo, &store, round);
    }
    // ~25 chunks for the 1,500 other nodes; the split span alone gives hundreds of pieces.
    assert!(pieces > 400, "the oversize span was split: {pieces} chunks");
}
