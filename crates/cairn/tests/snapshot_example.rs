//! The README's snapshot-test recipe, run: an agent's memory built with fixed commit
//! times (`commit_at`), so commit ids, `valid_at` and every score are the same on every
//! run and machine, and a retrieval is pinned with insta. A change to ranking, packing or
//! the result format shows up as a snapshot diff.

use cairn::{Node, NodeId, Repo, Validity, Value};

fn memory() -> cairn::Result<Repo> {
    let repo = Repo::in_memory()?;
    let mut tx = repo.transaction()?;
    tx.set_author("snapshot-test")?;
    let fact = |id: &str, text: &str, from: i64, until: Option<i64>| -> cairn::Result<Node> {
        Ok(Node::new(NodeId::new(id)?)
            .with_label("Fact")
            .with_prop("topic", Value::from("residence"))
            .with_text(text)
            .with_validity(Validity::new(Some(from), until)))
    };
    tx.put_node(fact(
        "alice-paris",
        "Alice lives in Paris",
        1_600_000_000_000,
        Some(1_700_000_000_000),
    )?)?;
    tx.put_node(fact("alice-lyon", "Alice lives in Lyon", 1_700_000_000_000, None)?)?;
    tx.put_node(
        Node::new(NodeId::new("alice")?)
            .with_label("Person")
            .with_text("Alice, an engineer"),
    )?;
    tx.commit_at("what we know about Alice", 1_750_000_000_000)?;
    Ok(repo)
}

#[test]
fn where_alice_lives_now_and_then() -> cairn::Result<()> {
    let repo = memory()?;
    let now = repo
        .retrieve()
        .text("where does Alice live")
        .label("Fact")
        .limit(3)
        .execute()?;
    insta::assert_json_snapshot!("alice_now", now);
    let then = repo
        .retrieve()
        .text("where does Alice live")
        .label("Fact")
        .valid_at(1_650_000_000_000)
        .limit(3)
        .execute()?;
    insta::assert_json_snapshot!("alice_in_2022", then);
    Ok(())
}
