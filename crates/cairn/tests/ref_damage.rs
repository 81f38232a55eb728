//! Any single-byte flip or truncation of any ref or metadata file (issue 22): the
//! repository opens, `fsck` names the damage (it does not pass), and every read of a branch
//! whose ref is undamaged returns the undamaged answer.

use std::collections::BTreeMap;
use std::path::Path;

use cairn::{Node, NodeId, Repo, StoreKind};

/// Nodes and a text retrieval at `branch`, as JSON.
fn answer(repo: &Repo, branch: &str) -> String {
    let head = repo.branch_head(branch).unwrap().unwrap();
    let nodes = repo.nodes_at(&head, None).unwrap();
    let found = repo
        .retrieve()
        .at(branch)
        .text("wing stall")
        .limit(5)
        .valid_at(10)
        .execute()
        .unwrap();
    format!(
        "{}\n{}",
        serde_json::to_string(&nodes).unwrap(),
        serde_json::to_string(&found.items).unwrap()
    )
}

/// main (two commits, a dense model), a tag, and side (one commit of its own).
fn build(path: &Path) -> BTreeMap<String, String> {
    let repo = Repo::init_with(path, StoreKind::Segment).unwrap();
    for c in 0..2 {
        let mut tx = repo.transaction().unwrap();
        for i in 0..6 {
            let words = ["wing stall", "boundary layer", "stall warning"][(i + c) % 3];
            tx.put_node(
                Node::new(NodeId::new(format!("n{c}{i}")).unwrap())
                    .with_text(format!("{words} {c}{i}"))
                    .with_embedding("m", vec![i as f32, c as f32, 1.0]),
            )
            .unwrap();
        }
        tx.commit_at(&format!("main {c}"), 1 + c as i64).unwrap();
    }
    repo.create_tag("v1", None).unwrap();
    repo.create_branch("side", None).unwrap();
    let mut tx = repo.transaction_on("side").unwrap();
    tx.put_node(Node::new(NodeId::new("s").unwrap()).with_text("wing stall on side"))
        .unwrap();
    tx.commit_at("side", 5).unwrap();
    repo.store().flush().unwrap();
    ["main", "side"]
        .into_iter()
        .map(|b| (b.to_string(), answer(&repo, b)))
        .collect()
}

#[test]
fn any_flip_or_truncation_of_a_ref_file_is_named_and_costs_only_that_ref() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean");
    let expected = build(&clean);
    let refs: Vec<_> = std::fs::read_dir(clean.join("refs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(refs.len() >= 6, "{refs:?}");
    let mut cases = 0;
    for file in &refs {
        let bytes = std::fs::read(clean.join("refs").join(file)).unwrap();
        let name: String = file
            .to_str()
            .unwrap()
            .as_bytes()
            .chunks(2)
            .map(|h| u8::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap() as char)
            .collect();
        let mut damages: Vec<(String, Vec<u8>)> = Vec::new();
        for at in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            let mut b = bytes.clone();
            b[at] ^= 0x10;
            damages.push((format!("{name}: flip at {at}"), b));
        }
        for len in [0, bytes.len() / 2, bytes.len() - 1] {
            damages.push((format!("{name}: cut to {len}"), bytes[..len].to_vec()));
        }
        for (what, damaged) in damages {
            cases += 1;
            let case = dir.path().join(format!("case{cases}"));
            copy_dir(&clean, &case);
            std::fs::write(case.join("refs").join(file), &damaged).unwrap();
            let repo = Repo::open(&case).unwrap_or_else(|e| panic!("{what}: open: {e}"));
            let report = repo.fsck().unwrap_or_else(|e| panic!("{what}: fsck: {e}"));
            assert!(!report.is_ok(), "{what}: fsck passed");
            for (branch, answer_then) in &expected {
                if name == format!("refs/heads/{branch}") {
                    continue;
                }
                assert_eq!(&answer(&repo, branch), answer_then, "{what}: branch {branch}");
            }
        }
    }
    assert!(cases >= 40, "{cases}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}
