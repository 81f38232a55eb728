//! Fixtures the quality tests share: a commit built in memory from nodes and edges.

use std::sync::Arc;

use cairn_core::{CommitId, Edge, Hash, Node};
use cairn_index::{CommitIndexes, IndexParams};
use cairn_retrieve::ResolvedCommit;

/// A resolved commit over `nodes` and `edges`, its indexes built in memory.
pub fn resolved(name: &str, ts: i64, nodes: Vec<Node>, edges: &[Edge]) -> ResolvedCommit {
    let mut with_hashes: Vec<(Hash, Node)> = nodes.into_iter().map(|n| (Hash::of(n.id.as_bytes()), n)).collect();
    with_hashes.sort_by(|a, b| a.1.id.cmp(&b.1.id));
    let indexes = CommitIndexes::build(Hash::of(name.as_bytes()), &IndexParams::default(), &with_hashes, edges);
    ResolvedCommit {
        commit: CommitId(Hash::of(format!("commit:{name}").as_bytes())),
        timestamp_ms: ts,
        indexes: Arc::new(indexes),
        repairs: Vec::new(),
    }
}
