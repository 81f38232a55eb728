//! A process that stays open derives each view's unit texts from the previous view's and
//! never reads the unit texts of the commit its text lane is based on; its background
//! thread stores them (`derived/base_texts.rs`), so that a fresh process's first text query
//! of a later commit finds them instead of building them from every chunk's text part.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cairn::{Node, NodeId, Repo};

const N: usize = 12_000;
const T: i64 = 1_700_000_000_000;

const WORDS: [&str; 12] = [
    "wing", "stall", "lift", "drag", "flow", "shock", "layer", "vortex", "panel", "heat", "nozzle", "jet",
];

fn node(i: usize, edit: usize) -> Node {
    let text: Vec<String> = (0..4)
        .map(|k| {
            format!(
                "{}{}",
                WORDS[(i / (k + 1) + k * 5 + edit) % WORDS.len()],
                (i * 7 + k + edit) % 31
            )
        })
        .collect();
    Node::new(NodeId::new(format!("n{i:05}")).unwrap())
        .with_label("Doc")
        .with_text(text.join(" "))
}

fn text_query(repo: &Repo, q: &str) -> String {
    let r = repo.retrieve().text(q).valid_at(T).limit(20).execute().unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    serde_json::to_string(&r.items).unwrap()
}

/// The three text queries the test compares, as JSON.
fn answers(repo: &Repo) -> Vec<String> {
    ["wing3 drag", "shock7 layer", "nozzle12 jet"]
        .iter()
        .map(|q| text_query(repo, q))
        .collect()
}

/// Waits until the handle's background threads have no work (they always end: a few jobs).
fn settle(repo: &Repo) {
    let start = Instant::now();
    while repo.index_stats().background_busy {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the background thread never ended"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A repository at `path` of the import and 70 ten-node commits, each followed by a text
/// query in the returned handle: past generation 64, its views read their text through the
/// commit at 64 (`graph_base.rs`: the import's chunks differ too much by then), whose units
/// this process never builds. Also its answers to [`answers`]; returned once its background
/// threads have no work left.
fn moved_base(path: &std::path::Path) -> (Repo, Vec<String>) {
    let repo = Repo::init(path).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..N {
        tx.put_node(node(i, 0)).unwrap();
    }
    tx.commit_at("import", T).unwrap();
    text_query(&repo, "wing3 drag");
    for e in 1..=70 {
        let mut tx = repo.transaction().unwrap();
        for k in 0..10 {
            tx.put_node(node((e * 977 + k * 1201) % N, e)).unwrap();
        }
        tx.commit_at(&format!("edit {e}"), T + e as i64).unwrap();
        text_query(&repo, "wing3 drag");
    }
    let warm = answers(&repo);
    settle(&repo);
    (repo, warm)
}

#[test]
fn a_fresh_process_finds_the_unit_texts_of_the_base_an_open_process_moved_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    let (repo, warm) = moved_base(&path);
    drop(repo);

    // A fresh process answers the same, and stores nothing: every unit text it reads is
    // stored (before, it built the base's and stored it).
    let fresh = Repo::open(&path).unwrap();
    let again = answers(&fresh);
    assert_eq!(again, warm);
    assert!(warm.iter().all(|a| a.contains("\"id\"")), "the queries find nodes");
    let stats = fresh.index_stats();
    assert_eq!(
        stats.stored_values, 0,
        "the fresh process built derived values: {stats:?}"
    );
    assert!(stats.parts_loaded > 0);
    let stored: BTreeMap<Vec<u8>, Vec<u8>> = fresh.store().scan_derived(b"ut/").unwrap().into_iter().collect();

    // The unit texts the background stored are those an assembly stores: with every unit
    // text deleted, a fresh process builds the ones it reads, each under a key the
    // background used, with the same bytes.
    fresh
        .store()
        .delete_derived(&stored.keys().cloned().collect::<Vec<_>>())
        .unwrap();
    drop(fresh);
    let rebuilt = Repo::open(&path).unwrap();
    let rebuilt_answers = answers(&rebuilt);
    assert_eq!(rebuilt_answers, warm);
    let built: BTreeMap<Vec<u8>, Vec<u8>> = rebuilt.store().scan_derived(b"ut/").unwrap().into_iter().collect();
    assert!(!built.is_empty(), "the fresh process read no unit text");
    for (key, bytes) in &built {
        assert_eq!(
            stored.get(key),
            Some(bytes),
            "a unit text the background did not store alike"
        );
    }
}

/// The unit texts are owed to later processes: a handle closed before its background thread
/// stored them (here: they are deleted under it after it did) stores them as it closes,
/// and a fresh process again builds nothing.
#[test]
fn a_closing_handle_stores_the_unit_texts_it_owes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    let (repo, warm) = moved_base(&path);
    let owed: Vec<Vec<u8>> = repo
        .store()
        .scan_derived(b"ut/")
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert!(!owed.is_empty());
    repo.store().delete_derived(&owed).unwrap();
    drop(repo);
    let fresh = Repo::open(&path).unwrap();
    assert_eq!(answers(&fresh), warm);
    let stats = fresh.index_stats();
    assert_eq!(
        stats.stored_values, 0,
        "the fresh process built derived values: {stats:?}"
    );
}
