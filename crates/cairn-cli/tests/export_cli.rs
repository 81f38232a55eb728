//! `cairn export` round-trips through `cairn import`: the same node and edge roots, at the
//! head and at an older revision; `-o` writes a whole file or none.

mod common;

use common::Sandbox;

fn roots(s: &Sandbox, rev: &str) -> (serde_json::Value, serde_json::Value) {
    let stats = s.json(&["stats", "--at", rev, "--json"]);
    (stats["node_root"].clone(), stats["edge_root"].clone())
}

#[test]
fn export_then_import_gives_the_same_roots() {
    let s = Sandbox::sample();
    for rev in ["HEAD", "HEAD~1"] {
        let file = s.dir.path().join(format!("export-{}.jsonl", rev.replace('~', "-")));
        let out = s.ok(&["export", rev, "-o", file.to_str().unwrap()]);
        assert!(out.contains("to "), "{out}");
        let copy = Sandbox::init();
        copy.ok(&["import", file.to_str().unwrap()]);
        assert_eq!(roots(&copy, "HEAD"), roots(&s, rev), "{rev}");
        // Standard output carries the same lines.
        assert_eq!(s.ok(&["export", rev]), std::fs::read_to_string(&file).unwrap());
    }
}

#[test]
fn an_unknown_revision_writes_no_file() {
    let s = Sandbox::sample();
    let file = s.dir.path().join("never.jsonl");
    let (_, err) = s.fails(&["export", "no-such-rev", "-o", file.to_str().unwrap()], 1);
    assert!(err.contains("unknown revision"), "{err}");
    assert!(!file.exists());
    assert_eq!(
        std::fs::read_dir(s.dir.path())
            .unwrap()
            .filter(|e| { e.as_ref().unwrap().file_name().to_string_lossy().contains("never") })
            .count(),
        0,
        "no temporary file left behind"
    );
}
