//! Garbage collection: remove objects no branch or tag reaches, and the derived data
//! (index snapshots, HNSW bases, time indexes) only dead commits or deleted branches used.
//!
//! **Mark.** Commits are walked from every branch and tag head through all parents; the
//! node, edge and reverse edge trees of each are walked, skipping every tree node already
//! marked, so a subtree shared by many commits is read once. Node and edge objects are
//! marked from the tree entries without being read.
//!
//! **Sweep.** Objects stored but not marked are deleted: commits first, then tree nodes,
//! then nodes and edges. So a crash part-way leaves every still-stored commit complete
//! (an object is only deleted once no stored commit can reach it).
//!
//! **Concurrency with writers (one process).** Every writer holds the repository's gc
//! lock for reading from the moment it builds a commit's objects until its ref has moved
//! (transactions, merges, `create_branch`). `gc` runs in two phases:
//! 1. without the lock: list the stored objects (the snapshot), *then* read the refs and
//!    mark; the unmarked snapshot objects are the candidates (their kind and size are read
//!    here too);
//! 2. with the lock held for writing (no writer is between writing objects and moving its
//!    ref): read the refs again, mark what they reach beyond phase 1 (commits already
//!    marked are not walked again: usually a few new commits), and delete the candidates
//!    still unmarked.
//!
//! An object a writer wrote before the snapshot is either reachable from the refs of phase
//! 2 (its commit was published, as phase 2 waits for every writer between writing and
//! publishing) or garbage (its commit lost the compare-and-swap, or was abandoned). An
//! object written after the snapshot is not a candidate. A writer that reuses stored
//! objects (the unchanged subtrees of its base) publishes by compare-and-swap from that
//! base, which is then reachable; a merge also checks, under the lock, that theirs'
//! commit is still stored. Commits only block for phase 2, whose cost is the garbage
//! deleted plus the commits made during phase 1.
//!
//! **Across processes**: an on-disk repository is a sled database, which one process at
//! a time can open (a second open fails with a lock error), so no other process can write
//! while `gc` runs. A store backend shared between processes would need `gc` to run only
//! while no other process writes.
//!
//! **Derived data** is rebuildable, so it is swept after the lock is released: `ix/<key>`
//! entries (commit index snapshots) whose key is no live commit's [`Repo::index_key`],
//! `hb/<key>` entries (HNSW bases) that no live commit's index base names for any dense
//! model of the repository, and `tl/<branch>` time indexes of deleted branches (or naming
//! a dead commit). An index persisted concurrently for a commit made during `gc` may be
//! swept too; it is rebuilt on next use.

use std::collections::{BTreeMap, HashSet};

use cairn_core::codec::ObjectKind;
use cairn_core::{CommitId, Hash};
use serde::Serialize;

use crate::error::Result;
use crate::indexes::{hb_key, ix_key};
use crate::repo::Repo;

/// Objects deleted per store batch.
const DELETE_CHUNK: usize = 10_000;

/// What [`Repo::gc`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    /// Objects stored when `gc` started (the snapshot).
    pub objects_before: u64,
    /// Objects deleted.
    pub objects_removed: u64,
    /// Commits among them.
    pub commits_removed: u64,
    /// Encoded bytes of the deleted objects.
    pub bytes_freed: u64,
    /// Commits reachable from branches and tags (kept).
    pub commits_live: u64,
    /// Derived-data entries deleted (index snapshots, HNSW bases, time-index entries).
    pub derived_removed: u64,
}

/// Everything marked reachable so far. A commit is in `commits` only once its whole
/// closure (trees, values, ancestors) is in `objects`, so a later incremental mark can
/// stop at it.
#[derive(Default)]
struct Marks {
    commits: HashSet<CommitId>,
    objects: HashSet<Hash>,
}

/// An unmarked object of the snapshot.
struct Candidate {
    hash: Hash,
    /// `None`: unreadable (corrupt), deleted last.
    kind: Option<ObjectKind>,
    bytes: u64,
}

impl Repo {
    /// Deletes every object no branch or tag reaches, and the derived data of dead commits
    /// and deleted branches; returns what it removed. Safe to run while other threads of
    /// this process commit (see the [module docs](crate::gc)); reads of reachable commits
    /// are unaffected. Cost: O(reachable tree nodes + objects stored); commits wait only
    /// for the final sweep.
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?))?;
    /// tx.commit("main")?;
    /// repo.create_branch("scratch", None)?;
    /// let mut tx = repo.transaction_on("scratch")?;
    /// tx.put_node(Node::new(NodeId::new("tmp")?).with_text("throwaway"))?;
    /// tx.commit("scratch work")?;
    /// repo.delete_branch("scratch")?;
    ///
    /// let report = repo.gc()?;
    /// assert_eq!(report.commits_removed, 1);
    /// assert!(repo.fsck()?.is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn gc(&self) -> Result<GcReport> {
        let store = self.store();
        // Phase 1: snapshot first, refs after it; writers run on.
        let snapshot = store.object_hashes()?;
        let mut report = GcReport {
            objects_before: snapshot.len() as u64,
            ..GcReport::default()
        };
        let mut marks = Marks::default();
        self.mark_from_refs(&mut marks)?;
        let mut candidates = Vec::new();
        for hash in snapshot {
            if marks.objects.contains(&hash) {
                continue;
            }
            let (kind, bytes) = match store.get(&hash) {
                Ok(Some(b)) => (ObjectKind::of(&b).ok(), b.len() as u64),
                Ok(None) => continue, // deleted meanwhile (another gc)
                Err(_) => (None, 0),  // corrupt and unreachable: garbage all the same
            };
            candidates.push(Candidate { hash, kind, bytes });
        }

        // Phase 2: no writer is between writing its objects and moving its ref.
        {
            let _sweeping = self.inner.gc_lock.write();
            self.mark_from_refs(&mut marks)?;
            candidates.retain(|c| !marks.objects.contains(&c.hash));
            // Commits first, then trees, then nodes, edges and unreadable objects.
            let rank = |k: Option<ObjectKind>| match k {
                Some(ObjectKind::Commit) => 0,
                Some(ObjectKind::Tree) => 1,
                _ => 2,
            };
            candidates.sort_by_key(|c| rank(c.kind));
            for chunk in candidates.chunks(DELETE_CHUNK) {
                let hashes: Vec<Hash> = chunk.iter().map(|c| c.hash).collect();
                store.delete_objects(&hashes)?;
            }
            store.flush()?;
        }
        report.objects_removed = candidates.len() as u64;
        report.commits_removed = candidates.iter().filter(|c| c.kind == Some(ObjectKind::Commit)).count() as u64;
        report.bytes_freed = candidates.iter().map(|c| c.bytes).sum();
        report.commits_live = marks.commits.len() as u64;

        report.derived_removed = self.sweep_derived(&marks.commits)?;
        store.flush()?;
        Ok(report)
    }

    /// Marks everything reachable from the branch and tag heads now, walking only commits
    /// not marked before.
    fn mark_from_refs(&self, marks: &mut Marks) -> Result<()> {
        let refs = self.refs();
        let mut stack: Vec<CommitId> = refs
            .branches()?
            .into_iter()
            .chain(refs.tags()?)
            .map(|(_, c)| c)
            .collect();
        // Depth-first; a commit is recorded as marked only after its trees, and its
        // parents are marked before the walk ends (an error aborts the whole gc).
        while let Some(id) = stack.pop() {
            if marks.commits.contains(&id) {
                continue;
            }
            let c = self.commit(&id)?;
            for root in [c.node_root, c.edge_root, c.edge_in_root].into_iter().flatten() {
                self.mark_tree(root, &mut marks.objects)?;
            }
            marks.objects.insert(*id.hash());
            marks.commits.insert(id);
            stack.extend(c.parents.iter().filter(|p| !marks.commits.contains(p)));
        }
        Ok(())
    }

    fn mark_tree(&self, root: Hash, marked: &mut HashSet<Hash>) -> Result<()> {
        let mut stack = vec![root];
        while let Some(h) = stack.pop() {
            if !marked.insert(h) {
                continue; // shared subtree, walked already
            }
            let t = self.objects().tree(&h)?;
            stack.extend(t.left);
            for e in &t.entries {
                stack.extend(e.right);
                marked.insert(e.value);
            }
        }
        Ok(())
    }

    /// Deletes derived entries only dead commits or deleted branches use; returns how many.
    fn sweep_derived(&self, live: &HashSet<CommitId>) -> Result<u64> {
        let store = self.store();
        let models: Vec<String> = self
            .refs()
            .meta_list("dense-dim/")?
            .into_iter()
            .map(|(k, _)| k.trim_start_matches("dense-dim/").to_string())
            .collect();
        let mut live_ix = HashSet::new();
        let mut base_roots = HashSet::new();
        for id in live {
            let c = self.commit(id)?;
            live_ix.insert(ix_key(&self.index_key_of(id, &c)?));
            if let Some(b) = c.index_base {
                let root = if b.0 == Hash::ZERO || b == *id {
                    c.node_root
                } else {
                    self.commit(&b)?.node_root
                };
                base_roots.insert(root);
            }
        }
        let live_hb: HashSet<Vec<u8>> = base_roots
            .iter()
            .flat_map(|root| models.iter().map(|m| hb_key(&self.hnsw_base_key(*root, m))))
            .collect();

        let mut doomed: Vec<Vec<u8>> = Vec::new();
        for (prefix, keep) in [(&b"ix/"[..], &live_ix), (&b"hb/"[..], &live_hb)] {
            for (k, _) in store.scan_derived(prefix)? {
                // Only well-formed keys are judged: `<prefix><32-byte key>`.
                if k.len() == prefix.len() + 32 && !keep.contains(&k) {
                    doomed.push(k);
                }
            }
        }
        // Time indexes: `tl/<branch>\0<generation u64>` → commit id ‖ timestamp. A
        // branch's whole index goes if the branch is gone or an entry names a dead commit
        // (it is rebuilt from the chain on next use).
        let branches: HashSet<String> = self
            .refs()
            .branches()?
            .into_iter()
            .map(|(b, _)| b.to_string())
            .collect();
        let mut by_branch: BTreeMap<Vec<u8>, (bool, Vec<Vec<u8>>)> = BTreeMap::new();
        for (k, v) in store.scan_derived(b"tl/")? {
            if k.len() < 3 + 1 + 8 || k[k.len() - 9] != 0 {
                continue;
            }
            let name = k[3..k.len() - 9].to_vec();
            let names_live_commit = v
                .get(..32)
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .is_some_and(|b| live.contains(&CommitId(Hash::from_bytes(b))));
            let entry = by_branch.entry(name).or_insert((true, Vec::new()));
            entry.0 &= names_live_commit;
            entry.1.push(k);
        }
        for (name, (all_live, keys)) in by_branch {
            let exists = std::str::from_utf8(&name).is_ok_and(|n| branches.contains(n));
            if !exists || !all_live {
                doomed.extend(keys);
            }
        }
        for chunk in doomed.chunks(DELETE_CHUNK) {
            store.delete_derived(chunk)?;
        }
        Ok(doomed.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use cairn_core::{Node, NodeId};

    use super::*;
    use crate::transaction::HNSW_MIN_NODES;

    /// The HNSW base a live commit names survives gc; one nothing names does not. (Checks
    /// that gc computes base keys as the index layer does, without building a base.)
    #[test]
    fn live_hnsw_bases_are_kept() {
        let repo = Repo::in_memory().unwrap();
        let mut tx = repo.transaction().unwrap();
        for i in 0..HNSW_MIN_NODES {
            tx.put_node(Node::new(NodeId::new(format!("n{i}")).unwrap())).unwrap();
        }
        tx.put_node(Node::new(NodeId::new("v").unwrap()).with_embedding("m", vec![1.0, 0.0]))
            .unwrap();
        let head = tx.commit("big").unwrap();
        let c = repo.commit(&head).unwrap();
        assert_eq!(c.index_base, Some(CommitId(Hash::ZERO)), "the commit is its own base");
        let live = hb_key(&repo.hnsw_base_key(c.node_root, "m"));
        let dead = hb_key(&repo.hnsw_base_key(None, "m"));
        let store = repo.store();
        store
            .put_derived(&[(live.clone(), b"base".to_vec()), (dead.clone(), b"base".to_vec())])
            .unwrap();
        let report = repo.gc().unwrap();
        assert_eq!(report.derived_removed, 1);
        assert!(store.get_derived(&live).unwrap().is_some());
        assert!(store.get_derived(&dead).unwrap().is_none());
    }
}
