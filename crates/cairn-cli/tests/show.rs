//! `cairn show --edges`: a node's edges listed, in text and JSON.

mod common;

use common::Sandbox;

#[test]
fn show_edges_lists_out_and_in_edges() {
    let s = Sandbox::sample();
    let human = s.ok(&["show", "person-weber", "--edges", "--at", "HEAD~1"]);
    assert!(human.contains("<- [authored_by] doc-11"), "{human}");
    assert!(human.contains("<- [authored_by] doc-14"), "{human}");
    let json = s.json(&["show", "doc-14", "--edges", "--json"]);
    let out: Vec<String> = json["edges"]["out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}->{}", e["kind"].as_str().unwrap(), e["target"].as_str().unwrap()))
        .collect();
    assert!(out.contains(&"authored_by->person-weber".to_string()), "{out:?}");
    // Without --edges, JSON has no edges field (the node's own fields only).
    assert!(s.json(&["show", "doc-14", "--json"]).get("edges").is_none());
}

#[test]
fn retrieve_explain_prints_why_and_the_path() {
    let s = Sandbox::sample();
    let out = s.ok(&[
        "retrieve",
        "--text",
        "stall",
        "--label",
        "Document",
        "--expand-hops",
        "1",
        "--limit",
        "6",
        "--explain",
    ]);
    assert!(
        out.contains("why: score (dense as cosine, others min-max): text #1"),
        "{out}"
    );
    assert!(out.contains("gates: labels, all of: Document"), "{out}");
    assert!(out.contains("path: ") && out.contains("-[cites]-"), "{out}");
    let json = s.json(&["retrieve", "--text", "stall", "--limit", "2", "--explain", "--json"]);
    let terms = &json["items"][0]["explain"]["terms"];
    assert_eq!(terms[0]["lane"], "text", "{json}");
    let plain = s.json(&["retrieve", "--text", "stall", "--limit", "2", "--json"]);
    assert!(plain["items"][0].get("explain").is_none());
}
