//! Unit texts built while a commit's chunks are built (the first text query after a bulk
//! import, `derived/early_units.rs`) are the unit texts a later build makes from the
//! chunks' text parts: the same keys and bytes under `ut/` and `ck/`, and the same text results.
//!
//! The repository is large enough for the early path to run: more chunks than two build
//! windows (256 spans each) and several units (a unit is ~680 chunks).

use std::collections::BTreeMap;

use cairn::{Node, NodeId, Repo};

const WORDS: [&str; 16] = [
    "wing", "stall", "lift", "drag", "flow", "shock", "layer", "vortex", "panel", "heat", "nozzle", "jet", "plate",
    "mach", "boundary", "wake",
];

/// `n` nodes with short texts (the word mix follows `i`, so most terms are in many units).
fn nodes(n: u32) -> Vec<Node> {
    (0..n)
        .map(|i| {
            let text: Vec<String> = (0..4u32)
                .map(|k| {
                    let w = WORDS[((i / (k + 1)) as usize + k as usize * 5) % WORDS.len()];
                    format!("{w}{}", (i.wrapping_mul(2_654_435_761) >> (8 * k)) % 97)
                })
                .collect();
            Node::new(NodeId::new(format!("n{i:07}")).unwrap())
                .with_label(["Doc", "Note"][(i % 2) as usize])
                .with_text(text.join(" "))
        })
        .collect()
}

fn import(path: &std::path::Path, nodes: &[Node]) -> Repo {
    let repo = Repo::init(path).unwrap();
    let mut tx = repo.transaction().unwrap();
    for n in nodes {
        tx.put_node(n.clone()).unwrap();
    }
    tx.commit("import").unwrap();
    repo
}

/// A text query's items as JSON (the commit id differs between the two repositories: their
/// commits were made at different times).
fn text_query(repo: &Repo, q: &str) -> String {
    let r = repo
        .retrieve()
        .text(q)
        .valid_at(1_700_000_000_000)
        .limit(50)
        .execute()
        .unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    serde_json::to_string(&r.items).unwrap()
}

fn derived(repo: &Repo, prefix: &[u8]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    repo.store().scan_derived(prefix).unwrap().into_iter().collect()
}

#[test]
fn early_unit_texts_equal_those_built_after_the_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let data = nodes(150_000);
    let queries = ["wing3 drag", "shock40 layer7 vortex", "mach boundary96", "nozzle12"];

    // The first query reads text: its chunks and unit texts are built together.
    let early = import(&dir.path().join("early"), &data);
    let early_answers: Vec<String> = queries.iter().map(|q| text_query(&early, q)).collect();

    // The chunks are built first by a view that asks for no lane (`build_indexes`' probe),
    // then the unit texts from their parts.
    let after = import(&dir.path().join("after"), &data);
    after.build_indexes("main").unwrap();
    let after_answers: Vec<String> = queries.iter().map(|q| text_query(&after, q)).collect();

    let (early_units, after_units) = (derived(&early, b"ut/"), derived(&after, b"ut/"));
    let (early_chunks, after_chunks) = (derived(&early, b"ck/"), derived(&after, b"ck/"));
    assert!(
        early_units.len() >= 3,
        "{} units: too few for the early path",
        early_units.len()
    );
    assert!(early_chunks.len() > 3 * 512, "{} chunk parts", early_chunks.len());
    assert!(early_units == after_units, "unit texts differ");
    assert!(early_chunks == after_chunks, "chunk parts differ");
    assert_eq!(early_answers, after_answers);
    assert!(
        early_answers.iter().all(|a| a.contains("\"id\"")),
        "the queries find nodes"
    );

    // A fresh process reads the stored unit texts of either and answers the same.
    drop(early);
    let reopened = Repo::open(dir.path().join("early")).unwrap();
    let reread: Vec<String> = queries.iter().map(|q| text_query(&reopened, q)).collect();
    assert_eq!(reread, after_answers);
}
