//! `fsck`: verify every stored object and every reachable reference.

use std::collections::BTreeSet;

use cairn_core::codec;
use cairn_core::{CommitId, Hash};
use serde::Serialize;

use crate::error::Result;
use crate::repo::Repo;

/// What [`Repo::fsck`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FsckReport {
    /// Objects read and verified (crc, blake3, strict decode).
    pub objects_checked: u64,
    /// Commits reachable from branches and tags.
    pub commits_checked: u64,
    /// Problems with the data, one line each (empty: the data is sound).
    pub problems: Vec<String>,
    /// Derived entries (index chunks, unit graphs, manifests) read and decoded.
    pub derived_checked: u64,
    /// Damaged derived entries, one line each. Never a risk to the data: each is rebuilt
    /// from the objects on use, or at once by [`Repo::repair_derived`].
    pub derived_problems: Vec<String>,
}

impl FsckReport {
    /// True if the data is sound (derived damage aside: see [`FsckReport::derived_ok`]).
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// True if every stored derived entry decodes under its key.
    pub fn derived_ok(&self) -> bool {
        self.derived_problems.is_empty()
    }
}

impl Repo {
    /// Checks the whole repository: every object's crc (by the store), blake3 hash and
    /// canonical decoding; every commit reachable from a branch or tag, and every tree
    /// node, node and edge object they reference, is present; and, reported apart, every
    /// stored derived entry decodes under its key. O(size of the repository).
    pub fn fsck(&self) -> Result<FsckReport> {
        let mut report = FsckReport::default();
        let (checked, damage) = self.check_derived()?;
        report.derived_checked = checked;
        report.derived_problems = damage.iter().map(crate::derived::check::describe).collect();
        let store = self.store();
        for h in store.object_hashes()? {
            report.objects_checked += 1;
            match store.get(&h) {
                Ok(Some(bytes)) => {
                    if codec::hash_object(&bytes) != h {
                        report
                            .problems
                            .push(format!("object {h}: content does not match its blake3 hash"));
                    } else if let Err(e) = codec::decode_object(&bytes) {
                        report.problems.push(format!("object {h}: {e}"));
                    }
                }
                Ok(None) => report.problems.push(format!("object {h}: listed but unreadable")),
                Err(e) => report.problems.push(format!("object {h}: {e}")),
            }
        }
        let refs = self.refs();
        let mut heads: Vec<(String, CommitId)> = refs
            .branches()?
            .into_iter()
            .map(|(b, c)| (format!("branch {b}"), c))
            .collect();
        heads.extend(refs.tags()?.into_iter().map(|(t, c)| (format!("tag {t}"), c)));
        let mut seen_commits = BTreeSet::new();
        let mut seen_trees: BTreeSet<Hash> = BTreeSet::new();
        let mut stack: Vec<(String, CommitId)> = heads;
        while let Some((from, id)) = stack.pop() {
            if !seen_commits.insert(id) {
                continue;
            }
            report.commits_checked += 1;
            let c = match self.commit(&id) {
                Ok(c) => c,
                Err(e) => {
                    report
                        .problems
                        .push(format!("commit {id} (reachable from {from}): {e}"));
                    continue;
                }
            };
            for root in [c.node_root, c.edge_root, c.edge_in_root].into_iter().flatten() {
                self.check_tree(root, &mut seen_trees, &mut report);
            }
            for p in c.parents {
                stack.push((from.clone(), p));
            }
        }
        Ok(report)
    }

    fn check_tree(&self, root: Hash, seen: &mut BTreeSet<Hash>, report: &mut FsckReport) {
        let mut stack = vec![root];
        while let Some(h) = stack.pop() {
            if !seen.insert(h) {
                continue;
            }
            match self.objects().tree(&h) {
                Ok(t) => {
                    stack.extend(t.left);
                    for e in &t.entries {
                        stack.extend(e.right);
                        if seen.insert(e.value) {
                            match self.store().contains(&e.value) {
                                Ok(true) => {}
                                Ok(false) => report
                                    .problems
                                    .push(format!("object {} (in tree {h}) is missing", e.value)),
                                Err(err) => report.problems.push(format!("object {}: {err}", e.value)),
                            }
                        }
                    }
                }
                Err(e) => report.problems.push(format!("tree {h}: {e}")),
            }
        }
    }
}
