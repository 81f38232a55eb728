//! Progress reports (`Repo::set_progress`): an index build of a multi-chunk commit (by
//! `build_indexes_with` and by a commit's first retrieval), node embedding, `gc` and
//! `fsck` report runs whose `done` only grows and ends at the total; results and stored
//! bytes are identical with and without an observer, with any thread count.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use cairn::{Edge, EmbedderConfig, GcOptions, Node, NodeId, OpenAiSettings, Progress, Repo, SparseVector, Step};
use cairn_core::level::key_level;
use cairn_store::{MemoryStore, Store};

/// The commit time and validity time (fixed, so that results compare equal).
const T: i64 = 1_700_000_000_000;

type Events = Arc<Mutex<Vec<Progress>>>;

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

/// Starts recording every report of `repo`.
fn record(repo: &Repo) -> Events {
    let events: Events = Arc::default();
    let log = Arc::clone(&events);
    repo.set_progress(Some(Arc::new(move |p: &Progress| log.lock().unwrap().push(p.clone()))));
    events
}

fn take(events: &Events) -> Vec<Progress> {
    std::mem::take(&mut *events.lock().unwrap())
}

/// The runs of each step, in order: a run starts at each report with `done == 0`.
fn runs(events: &[Progress]) -> BTreeMap<String, Vec<Vec<Progress>>> {
    let mut out: BTreeMap<String, Vec<Vec<Progress>>> = BTreeMap::new();
    for p in events {
        let runs = out.entry(format!("{:?}", p.step)).or_default();
        if p.done == 0 || runs.is_empty() {
            assert_eq!(p.done, 0, "a run of {:?} starts at 0: {events:?}", p.step);
            runs.push(Vec::new());
        }
        runs.last_mut().unwrap().push(p.clone());
    }
    out
}

/// Every run: one total throughout, `done` grows by at least 1 per report after the
/// first, never passes the total, and the run ends at its total when it has one.
fn assert_well_formed(events: &[Progress]) {
    for (step, runs) in runs(events) {
        for run in runs {
            let total = run[0].total;
            for pair in run.windows(2) {
                assert!(pair[1].done > pair[0].done, "{step}: done goes back or stalls: {run:?}");
                assert_eq!(pair[1].total, total, "{step}: the total changed within a run");
            }
            if let Some(total) = total {
                assert!(run.iter().all(|p| p.done <= total), "{step}: past the total: {run:?}");
                assert_eq!(
                    run.last().unwrap().done,
                    total,
                    "{step}: ends short of the total: {run:?}"
                );
            }
        }
    }
}

fn steps(events: &[Progress]) -> BTreeSet<String> {
    events.iter().map(|p| format!("{:?}", p.step)).collect()
}

/// Node `i`: text, a dense vector `m`, on even `i` a sparse vector `s`.
fn node(i: u32) -> Node {
    let words = ["wing", "stall", "lift", "drag", "flow", "shock", "layer", "vortex"];
    let mut n = Node::new(id(&format!("n{i:04}")))
        .with_label(["Doc", "Note"][(i % 2) as usize])
        .with_text(format!("{} {} {i}", words[i as usize % 8], words[(i as usize / 8) % 8]))
        .with_embedding("m", (0..8).map(|k| ((i * 7 + k) % 5) as f32 - 2.0).collect());
    if i.is_multiple_of(2) {
        n = n.with_sparse("s", SparseVector::new(vec![i % 3, 7], vec![1.0, 0.5]));
    }
    n
}

/// A repository of 3000 nodes in many chunks and several HNSW units, with edges.
fn big_repo(store: Arc<dyn Store>) -> Repo {
    let repo = Repo::with_store(store).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..3000u32 {
        tx.put_node(node(i)).unwrap();
    }
    // Ids of level >= 5 cut the node tree into several units.
    let cuts: Vec<String> = (0..)
        .map(|i| format!("u{i}"))
        .filter(|s| key_level(s.as_bytes()) >= 5)
        .take(3)
        .collect();
    for (j, s) in cuts.iter().enumerate() {
        tx.put_node(Node::new(id(s)).with_embedding("m", vec![j as f32; 8]))
            .unwrap();
    }
    for i in 0..2999u32 {
        let (a, b) = (id(&format!("n{i:04}")), id(&format!("n{:04}", i + 1)));
        tx.put_edge(Edge::new(a, "next", b)).unwrap();
    }
    tx.commit_at("big", T).unwrap();
    repo
}

fn query(repo: &Repo) -> cairn::retrieve::RetrievalResult {
    repo.retrieve()
        .vector("m", &[1.0, 0.0, -1.0, 2.0, 0.0, 1.0, 1.0, -2.0])
        .text("wing layer")
        .expand(cairn::retrieve::GraphExpand::hops(1))
        .limit(10)
        .valid_at(T)
        .execute()
        .unwrap()
}

#[test]
fn an_index_build_reports_every_step_up_to_its_total() {
    let repo = big_repo(Arc::new(MemoryStore::keeping_derived()));
    let events = record(&repo);
    let report = repo.build_indexes_with("HEAD", true).unwrap();
    let events = take(&events);
    assert_well_formed(&events);
    assert_eq!(
        steps(&events),
        ["IndexChunks", "IndexEdges", "IndexGraphs", "IndexParts", "IndexStore"]
            .map(String::from)
            .into()
    );
    let runs = runs(&events);
    // One run of node chunks, counted in chunk spans (a span splits into more chunks
    // only when it is oversize, which these are not).
    let chunks = &runs["IndexChunks"];
    assert_eq!(chunks.len(), 1);
    assert!(report.chunks > 1, "{report:?}");
    assert_eq!(chunks[0].last().unwrap().total, Some(report.chunks as u64));
    // Edges out and in; the unit graphs of the one dense model; text, sparse and dense parts.
    assert_eq!(runs["IndexEdges"].len(), 2);
    let graphs = &runs["IndexGraphs"];
    assert_eq!(graphs.len(), 1);
    assert_eq!(graphs[0].last().unwrap().done, report.dense[0].unit_graphs as u64);
    assert!(report.dense[0].unit_graphs >= 2);
    assert_eq!(runs["IndexParts"].len(), 3);
    let stored: u64 = runs["IndexStore"].iter().map(|r| r.last().unwrap().done).sum();
    assert_eq!(stored, report.stored_values as u64);
    assert!(events.iter().all(|p| p.step.is_index_build()));

    // Built and cached: nothing to report.
    let events = record(&repo);
    repo.build_indexes_with("HEAD", true).unwrap();
    assert_eq!(take(&events), []);
}

#[test]
fn a_commits_first_retrieval_reports_its_index_build_and_later_ones_nothing() {
    let repo = big_repo(Arc::new(MemoryStore::new()));
    let events = record(&repo);
    query(&repo);
    let first = take(&events);
    assert_well_formed(&first);
    let steps = steps(&first);
    assert!(
        steps.contains("IndexChunks") && steps.contains("IndexEdges"),
        "{steps:?}"
    );
    query(&repo);
    assert_eq!(take(&events), []);
}

#[test]
fn results_and_stored_bytes_are_the_same_with_and_without_an_observer_and_any_thread_count() {
    let mut outcomes = Vec::new();
    for (threads, observe) in [(1, false), (1, true), (4, false), (4, true)] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::keeping_derived());
        let repo = big_repo(Arc::clone(&store));
        let events = observe.then(|| record(&repo));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let (result, report) = pool.install(|| (query(&repo), repo.build_indexes_with("HEAD", true).unwrap()));
        let derived: BTreeMap<Vec<u8>, Vec<u8>> = store.scan_derived(b"").unwrap().into_iter().collect();
        let fsck = repo.fsck().unwrap();
        assert!(fsck.is_ok() && fsck.derived_ok(), "{fsck:?}");
        if let Some(events) = events {
            let events = take(&events);
            assert!(!events.is_empty());
            assert_well_formed(&events);
        }
        outcomes.push((format!("{result:?}"), report, derived, fsck));
    }
    for o in &outcomes[1..] {
        assert_eq!(o.0, outcomes[0].0, "retrieval result differs");
        assert_eq!(o.1, outcomes[0].1, "index report differs");
        assert!(o.2 == outcomes[0].2, "stored derived bytes differ");
        assert_eq!(o.3, outcomes[0].3, "fsck report differs");
    }
}

#[test]
fn embedding_nodes_reports_each_batch() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..5 {
        tx.put_node(Node::new(id(&format!("t{i}"))).with_text(format!("text {i}")))
            .unwrap();
    }
    tx.commit("texts").unwrap();
    let stub = cairn_testkit::embed_stub(|text, _| vec![text.len() as f32, 1.0]);
    let settings = OpenAiSettings::new(&stub.url, "stub-model")
        .with_api_key_env("CAIRN_TEST_NO_SUCH_KEY")
        .with_max_retries(0)
        .with_timeout_ms(5000);
    repo.set_embedder("oa", EmbedderConfig::OpenAi(settings)).unwrap();
    let events = record(&repo);
    repo.embed_nodes("oa", 2, "embed", &mut |_, _| {}).unwrap();
    let events = take(&events);
    assert_well_formed(&events);
    let done: Vec<(u64, Option<u64>)> = events
        .iter()
        .filter(|p| p.step == Step::Embed)
        .map(|p| (p.done, p.total))
        .collect();
    assert_eq!(done, [(0, Some(5)), (2, Some(5)), (4, Some(5)), (5, Some(5))]);
}

#[test]
fn an_observer_removed_hears_nothing() {
    let repo = big_repo(Arc::new(MemoryStore::new()));
    let events = record(&repo);
    repo.set_progress(None);
    repo.build_indexes("HEAD").unwrap();
    repo.fsck().unwrap();
    assert_eq!(take(&events), []);
}

#[test]
fn gc_and_fsck_report_their_steps_up_to_their_totals() {
    let repo = big_repo(Arc::new(MemoryStore::new()));
    // A scratch branch's commit, deleted: garbage for gc.
    repo.create_branch("scratch", None).unwrap();
    let mut tx = repo.transaction_on("scratch").unwrap();
    tx.put_node(Node::new(id("draft")).with_text("a draft")).unwrap();
    tx.commit("draft").unwrap();
    repo.delete_branch("scratch").unwrap();

    let events = record(&repo);
    let gc = repo.gc_with(&GcOptions::now()).unwrap();
    let gc_events = take(&events);
    assert_well_formed(&gc_events);
    assert_eq!(steps(&gc_events), ["GcScan", "GcSweep"].map(String::from).into());
    let gc_runs = runs(&gc_events);
    assert!(gc.objects_before > 4096, "{gc:?}"); // more than one report's worth of objects
    assert_eq!(gc_runs["GcScan"][0].last().unwrap().done, gc.objects_before);
    assert!(gc_runs["GcScan"][0].len() > 2);
    assert!(gc.objects_removed > 0, "{gc:?}");
    assert_eq!(gc_runs["GcSweep"][0].last().unwrap().done, gc.objects_removed);

    let fsck = repo.fsck().unwrap();
    assert!(fsck.is_ok(), "{fsck:?}");
    let fsck_events = take(&events);
    assert_well_formed(&fsck_events);
    assert_eq!(
        steps(&fsck_events),
        ["FsckCommits", "FsckDerived", "FsckObjects"].map(String::from).into()
    );
    let fsck_runs = runs(&fsck_events);
    assert_eq!(fsck_runs["FsckObjects"][0].last().unwrap().done, fsck.objects_checked);
    let commits = &fsck_runs["FsckCommits"][0];
    assert_eq!(commits[0].total, None);
    assert_eq!(commits.last().unwrap().done, fsck.commits_checked);
}
