//! `cairn ls` (= `cairn retrieve --list`): the nodes that pass the gates, in id order, a
//! page at a time; and the errors of mixing a listing with a ranking.

mod common;

use common::{item_ids, Sandbox};

#[test]
fn ls_pages_through_the_gated_nodes_in_id_order() {
    let s = Sandbox::sample();
    let all = item_ids(&s.json(&["ls", "--label", "Concept", "--limit", "100", "--json"]));
    assert_eq!(all.len(), 11, "{all:?}");
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted);
    // Pages of 4 put together are the whole listing.
    let mut paged = Vec::new();
    loop {
        let mut args = vec!["ls", "--label", "Concept", "--limit", "4", "--json"];
        let after;
        if let Some(last) = paged.last() {
            after = String::clone(last);
            args.extend(["--after", after.as_str()]);
        }
        let page = item_ids(&s.json(&args));
        if page.is_empty() {
            break;
        }
        paged.extend(page);
    }
    assert_eq!(paged, all);
    // The human form lists ids, says how many pass the gates, and shows no scores.
    let human = s.ok(&["ls", "--label", "Concept", "--limit", "2"]);
    assert!(human.contains("pass the gates 11"), "{human}");
    assert!(human.contains(&format!("  1. {}\n", all[0])), "{human}");
    // `retrieve --list` is the same.
    assert_eq!(
        item_ids(&s.json(&["retrieve", "--list", "--label", "Concept", "--limit", "100", "--json"])),
        all
    );
}

#[test]
fn a_listing_with_a_lane_or_a_ranking_with_after_is_refused() {
    let s = Sandbox::sample();
    let (_, err) = s.fails(&["retrieve", "--list", "--text", "stall"], 1);
    assert!(err.contains("list"), "{err}");
    let (_, err) = s.fails(&["retrieve", "--text", "stall", "--after", "x"], 1);
    assert!(err.contains("after"), "{err}");
}

#[test]
fn ls_offers_only_the_options_a_listing_honours() {
    let s = Sandbox::sample();
    let help = s.ok(&["ls", "--help"]);
    for honoured in [
        "--label",
        "--any-label",
        "--where",
        "--where-range",
        "--valid-at",
        "--all-time",
        "--at",
        "--limit",
        "--after",
        "--token-budget",
        "--text-cap",
        "--render-prop",
        "--explain",
        "--json",
    ] {
        assert!(help.contains(honoured), "{honoured} missing from:\n{help}");
    }
    for ranking in [
        "--text <",
        "--vector-",
        "--sparse",
        "--embedder",
        "--no-embed",
        "--fusion",
        "--weight",
        "--rrf-k",
        "--expand-",
        "--ann",
        "--exact",
        "--depth",
        "--no-planner",
        "--spec <",
        "--batch <",
        "--list ",
    ] {
        assert!(!help.contains(ranking), "{ranking} in:\n{help}");
    }
    // A ranking option is a usage error of `ls`, before anything runs.
    let (_, err) = s.fails(&["ls", "--text", "stall"], 2);
    assert!(err.contains("--text"), "{err}");
    // Every honoured option still reaches the listing.
    let r = s.json(&[
        "ls",
        "--label",
        "Concept",
        "--all-time",
        "--at",
        "HEAD",
        "--limit",
        "2",
        "--text-cap",
        "5",
        "--render-prop",
        "year",
        "--json",
    ]);
    assert_eq!(item_ids(&r).len(), 2);
    assert_eq!(r["valid_at"], serde_json::Value::Null);
}
