//! `fsck`'s check of the Merkle search tree invariants, which no decoder can check alone:
//! every key of a tree node has the node's level; keys increase; every subtree has a
//! lower level and lies in its gap; a node tree's keys are the ids of the nodes they map
//! to, an edge tree's keys the (source, kind, target) of their edges and the reverse
//! tree's the (target, kind, source); and each commit's counts match its trees, with
//! the reverse edge tree holding exactly the edges of the forward one.
//!
//! Each tree node is summarised once (memoised by hash), so checking a whole history
//! costs the number of distinct tree nodes, not commits × size.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use cairn_core::level::key_level;
use cairn_core::{Commit, Hash};

use crate::repo::Repo;

/// The keys a node or edge object must be stored under.
pub(super) enum ValueKeys {
    /// A node: its id's bytes.
    Node(Vec<u8>),
    /// An edge: its forward and reverse tree keys.
    Edge { forward: Vec<u8>, reverse: Vec<u8> },
}

/// Which of a commit's three trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Tree {
    Nodes,
    Edges,
    EdgesIn,
}

impl Tree {
    fn name(self) -> &'static str {
        match self {
            Tree::Nodes => "node tree",
            Tree::Edges => "edge tree",
            Tree::EdgesIn => "reverse edge tree",
        }
    }
}

/// What a sound subtree looks like from above.
struct Summary {
    level: u8,
    min: Vec<u8>,
    max: Vec<u8>,
    count: u64,
    /// Wrapping sum of the first 16 bytes of every value hash: equal for two trees that
    /// hold the same values, whatever their keys (compares the edge tree with its mirror).
    digest: u128,
}

/// Checks the trees of many commits, sharing work between them.
pub(super) struct TreeChecker<'a> {
    repo: &'a Repo,
    values: &'a HashMap<Hash, ValueKeys>,
    memo: HashMap<(Tree, Hash), Option<Rc<Summary>>>,
    reported_values: HashSet<Hash>,
    /// Every node object a checked node tree names.
    pub(super) reached_nodes: HashSet<Hash>,
}

impl<'a> TreeChecker<'a> {
    /// A checker; `values` maps every readable node and edge object to its keys.
    pub(super) fn new(repo: &'a Repo, values: &'a HashMap<Hash, ValueKeys>) -> TreeChecker<'a> {
        TreeChecker {
            repo,
            values,
            memo: HashMap::new(),
            reported_values: HashSet::new(),
            reached_nodes: HashSet::new(),
        }
    }

    /// Checks commit `c`'s three trees and counts; appends problems.
    pub(super) fn check_commit(&mut self, id: &str, c: &Commit, problems: &mut Vec<String>) {
        let mut root = |tree: Tree, root: Option<Hash>, problems: &mut Vec<String>| match root {
            None => Some((0, 0)),
            Some(h) => self.summarize(tree, h, problems).map(|s| (s.count, s.digest)),
        };
        let nodes = root(Tree::Nodes, c.node_root, problems);
        let edges = root(Tree::Edges, c.edge_root, problems);
        let edges_in = root(Tree::EdgesIn, c.edge_in_root, problems);
        if let Some((count, _)) = nodes {
            if count != c.node_count {
                problems.push(format!(
                    "commit {id}: node_count is {} but its node tree holds {count} nodes",
                    c.node_count
                ));
            }
        }
        for (tree, summary) in [(Tree::Edges, edges), (Tree::EdgesIn, edges_in)] {
            if let Some((count, _)) = summary {
                if count != c.edge_count {
                    problems.push(format!(
                        "commit {id}: edge_count is {} but its {} holds {count} edges",
                        c.edge_count,
                        tree.name()
                    ));
                }
            }
        }
        if let (Some((_, forward)), Some((_, reverse))) = (edges, edges_in) {
            if forward != reverse {
                problems.push(format!(
                    "commit {id}: the reverse edge tree does not hold the same edges as the edge tree"
                ));
            }
        }
    }

    /// The summary of the subtree at `h`, or `None` (with its problems reported) if it
    /// breaks an invariant or cannot be read.
    fn summarize(&mut self, tree: Tree, h: Hash, problems: &mut Vec<String>) -> Option<Rc<Summary>> {
        if let Some(done) = self.memo.get(&(tree, h)) {
            return done.clone();
        }
        let summary = self.summarize_uncached(tree, h, problems).map(Rc::new);
        self.memo.insert((tree, h), summary.clone());
        summary
    }

    fn summarize_uncached(&mut self, tree: Tree, h: Hash, problems: &mut Vec<String>) -> Option<Summary> {
        let name = tree.name();
        let node = match self.repo.objects().tree(&h) {
            Ok(node) => node,
            Err(e) => {
                problems.push(format!("{name} node {h}: {e}"));
                return None;
            }
        };
        let bad = |what: String, problems: &mut Vec<String>| {
            problems.push(format!("{name} node {h}: {what}"));
        };
        let Some(first) = node.entries.first() else {
            bad("has no entries".into(), problems);
            return None;
        };
        let mut sound = true;
        let mut count = node.entries.len() as u64;
        let mut digest = 0u128;
        let mut min = first.key.clone();
        let mut max = node.entries.last().map(|e| e.key.clone()).unwrap_or_default();
        // Subtrees: `left` before the first key, each entry's `right` after its key.
        let gaps = std::iter::once((node.left, None, Some(&first.key))).chain(
            node.entries
                .iter()
                .enumerate()
                .map(|(i, e)| (e.right, Some(&e.key), node.entries.get(i + 1).map(|n| &n.key))),
        );
        for (sub, lo, hi) in gaps {
            let Some(sub) = sub else { continue };
            let Some(s) = self.summarize(tree, sub, problems) else {
                sound = false;
                continue;
            };
            if s.level >= node.level {
                bad(
                    format!("subtree {sub} has level {}, not below {}", s.level, node.level),
                    problems,
                );
                sound = false;
            }
            if lo.is_some_and(|lo| s.min <= *lo) || hi.is_some_and(|hi| s.max >= *hi) {
                bad(format!("subtree {sub} holds keys outside its gap"), problems);
                sound = false;
            }
            if lo.is_none() {
                min = s.min.clone();
            }
            if hi.is_none() {
                max = s.max.clone();
            }
            count += s.count;
            digest = digest.wrapping_add(s.digest);
        }
        for (i, entry) in node.entries.iter().enumerate() {
            let level = key_level(&entry.key);
            if level != node.level {
                bad(
                    format!(
                        "key {} has level {level}, the node's is {}",
                        hex(&entry.key),
                        node.level
                    ),
                    problems,
                );
                sound = false;
            }
            if i > 0 && node.entries[i - 1].key >= entry.key {
                bad("keys are not strictly increasing".into(), problems);
                sound = false;
            }
            if tree == Tree::Nodes {
                self.reached_nodes.insert(entry.value);
            }
            let expected = match (tree, self.values.get(&entry.value)) {
                (Tree::Nodes, Some(ValueKeys::Node(id))) => Some(id),
                (Tree::Edges, Some(ValueKeys::Edge { forward, .. })) => Some(forward),
                (Tree::EdgesIn, Some(ValueKeys::Edge { reverse, .. })) => Some(reverse),
                _ => None,
            };
            match expected {
                Some(key) if *key == entry.key => {}
                Some(_) => {
                    bad(
                        format!(
                            "key {} maps to object {}, stored under another key",
                            hex(&entry.key),
                            entry.value
                        ),
                        problems,
                    );
                    sound = false;
                }
                None => {
                    if self.reported_values.insert(entry.value) {
                        let kind = if tree == Tree::Nodes { "node" } else { "edge" };
                        bad(
                            format!(
                                "object {} (key {}) is missing or not a readable {kind}",
                                entry.value,
                                hex(&entry.key)
                            ),
                            problems,
                        );
                    }
                    sound = false;
                }
            }
            let mut low = [0u8; 16];
            low.copy_from_slice(&entry.value.as_bytes()[..16]);
            digest = digest.wrapping_add(u128::from_le_bytes(low));
        }
        sound.then_some(Summary {
            level: node.level,
            min,
            max,
            count,
            digest,
        })
    }
}

/// Lowercase hex of a key, cut to 64 characters for messages.
fn hex(key: &[u8]) -> String {
    cairn_core::ids::hex(&key[..key.len().min(32)])
}
