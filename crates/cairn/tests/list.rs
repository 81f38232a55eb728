//! List mode: the nodes that pass the gates, in id order, paged by `after` — across many
//! index chunks, with label, property and validity gates.

use cairn::retrieve::RetrieveError;
use cairn::{Node, NodeId, Repo, Validity, Value};

/// 700 nodes (about a dozen chunks) with scrambled ids; every third a `Fact` about a
/// topic, some of them ended.
fn repo() -> (Repo, Vec<(String, bool, i64, bool)>) {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    let mut truth = Vec::new();
    for i in 0..700u64 {
        let id = format!("n{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let fact = i % 3 == 0;
        let topic = (i % 4) as i64;
        let ended = i % 5 == 0;
        let mut node = Node::new(NodeId::new(id.clone()).unwrap())
            .with_label(if fact { "Fact" } else { "Other" })
            .with_prop("topic", Value::from(topic))
            .with_text(format!("node {i}"));
        if ended {
            node = node.with_validity(Validity::new(None, Some(1_000)));
        }
        tx.put_node(node).unwrap();
        truth.push((id, fact, topic, ended));
    }
    tx.commit_at("seed", 5_000).unwrap();
    (repo, truth)
}

fn page(repo: &Repo, after: Option<&str>, limit: usize, all_time: bool) -> Vec<String> {
    let mut r = repo
        .retrieve()
        .list()
        .label("Fact")
        .where_eq("topic", Value::from(1i64))
        .limit(limit);
    if let Some(a) = after {
        r = r.after(a);
    }
    if all_time {
        r = r.all_time();
    }
    let result = r.execute().unwrap();
    for item in &result.items {
        assert!(item.lanes.is_empty() && item.labels == ["Fact"], "{item:?}");
    }
    result.items.into_iter().map(|i| i.id.as_str().to_owned()).collect()
}

#[test]
fn a_listing_pages_through_the_gated_nodes_in_id_order() {
    let (repo, truth) = repo();
    for all_time in [false, true] {
        let mut want: Vec<String> = truth
            .iter()
            .filter(|(_, fact, topic, ended)| *fact && *topic == 1 && (all_time || !*ended))
            .map(|(id, ..)| id.clone())
            .collect();
        want.sort();
        assert!(want.len() > 20, "{}", want.len());
        let mut got = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let p = page(&repo, after.as_deref(), 7, all_time);
            if p.is_empty() {
                break;
            }
            after = p.last().cloned();
            got.extend(p);
        }
        assert_eq!(got, want, "all_time {all_time}");
        // `after` need not be an id of the commit.
        let mid = format!("{}~", &want[want.len() / 2]);
        assert_eq!(
            page(&repo, Some(&mid), 1000, all_time),
            want[want.len() / 2 + 1..].to_vec()
        );
    }
}

#[test]
fn a_listing_takes_no_lane_and_a_ranking_no_after() {
    let (repo, _) = repo();
    let err = repo.retrieve().list().text("node").execute().unwrap_err();
    assert!(
        matches!(err, RetrieveError::InvalidSetting { ref field, .. } if field == "list"),
        "{err}"
    );
    let err = repo.retrieve().text("node").after("x").execute().unwrap_err();
    assert!(
        matches!(err, RetrieveError::InvalidSetting { ref field, .. } if field == "after"),
        "{err}"
    );
    assert!(matches!(repo.retrieve().execute().unwrap_err(), RetrieveError::NoLane));
}

#[test]
fn typed_revisions_and_times_equal_their_string_and_ms_forms() {
    let (repo, _) = repo();
    let head = repo.head().unwrap().unwrap();
    let by_string = repo
        .retrieve()
        .text("node")
        .at(head.to_hex())
        .valid_at(6_000)
        .execute()
        .unwrap();
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(6_000);
    let typed = repo
        .retrieve()
        .text("node")
        .at_commit(&head)
        .valid_at_time(t)
        .execute()
        .unwrap();
    assert_eq!(
        serde_json::to_string(&by_string).unwrap(),
        serde_json::to_string(&typed).unwrap()
    );
}

/// An empty memory's first recall: a retrieval at the head of a branch with no commits
/// answers with no items and an `EmptyRepository` warning (`commit` is `None`), after
/// checking its settings; an explicit revision still fails.
#[test]
fn retrieval_on_an_empty_repository_is_empty_not_an_error() {
    use cairn::retrieve::{RetrieveError, WarningCode};
    let repo = cairn::Repo::in_memory().unwrap();
    for r in [
        repo.retrieve().text("anything").limit(3),
        repo.retrieve().text("anything").at("HEAD"),
    ] {
        let got = r.execute().unwrap();
        assert_eq!(got.commit, None);
        assert!(got.items.is_empty());
        assert_eq!(got.lanes.len(), 1);
        assert_eq!(got.lanes[0].hits, 0);
        assert_eq!(
            got.warnings.iter().map(|w| w.code).collect::<Vec<_>>(),
            vec![WarningCode::EmptyRepository]
        );
    }
    assert!(matches!(
        repo.retrieve().text("x").limit(0).execute(),
        Err(RetrieveError::InvalidSetting { .. })
    ));
    assert!(repo.retrieve().text("x").at("HEAD~1").execute().is_err());
}
