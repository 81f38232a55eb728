//! A BM25 posting packs a term frequency below `TF_LIMIT` (`cairn_index::chunk::Posting`):
//! every text within `MAX_TEXT_BYTES` fits, and a view built over a node that skipped
//! validation (a longer text) counts `TF_LIMIT − 1` instead of failing.

use cairn_core::limits::MAX_TEXT_BYTES;
use cairn_core::{Hash, Node, NodeId};
use cairn_index::chunk::text::TF_LIMIT;
use cairn_index::{CommitIndexes, IndexParams};

fn view(text: String) -> CommitIndexes {
    let id = NodeId::new("n").unwrap();
    let nodes = vec![(Hash::of(b"n"), Node::new(id).with_text(text))];
    CommitIndexes::build(Hash::ZERO, &IndexParams::default(), &nodes, &[])
}

#[test]
fn the_longest_valid_text_keeps_its_exact_frequency() {
    // One token per two bytes: the most a text within the limit can hold.
    let text = "b ".repeat(MAX_TEXT_BYTES / 2);
    assert!(text.len() <= MAX_TEXT_BYTES);
    let v = view(text);
    let p = v.text_part(0).unwrap().postings("b");
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].tf() as usize, MAX_TEXT_BYTES / 2);
    assert!(p[0].tf() < TF_LIMIT);
}

#[test]
fn a_text_past_the_limit_counts_the_largest_frequency() {
    let v = view("b ".repeat(TF_LIMIT as usize + 10));
    let p = v.text_part(0).unwrap().postings("b");
    assert_eq!(p[0].tf(), TF_LIMIT - 1);
    assert_eq!(p[0].local(), 0);
}
