//! Copying the objects a set of commits reaches from one store to another, only those the
//! destination lacks, each verified against its blake3 name as it is read.
//!
//! **Negotiation.** Objects are content-addressed and written before any ref names them,
//! and `gc` deletes only what no ref reaches, so an object present in the destination has
//! its whole closure there too (a commit its ancestors and trees, a tree node its subtree).
//! The walk therefore stops at the first object the destination holds: a one-node change
//! on a million-node repository moves the new commit, the O(log n) tree nodes on the
//! changed path and the node object — a few KiB.
//!
//! **Order.** Objects are written children first: commits oldest first, and for each
//! commit its new tree nodes in post-order (a node's leaves and subtrees before the node)
//! and then the commit. An interrupted transfer therefore leaves only objects whose
//! closure is present, so the rule above keeps holding, and no ref names any of them yet:
//! the destination is as before, plus unreachable objects the next transfer reuses (and
//! `gc` may collect).

use std::collections::HashSet;
use std::sync::Arc;

use cairn_core::codec::{self, ObjectKind};
use cairn_core::{Commit, CommitId, Hash};
use cairn_graph::objects::Objects;
use cairn_graph::GraphError;
use cairn_store::Store;

use crate::error::Result;

/// Bytes buffered before a batch is written.
const BATCH_BYTES: usize = 32 << 20;

/// What a transfer moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransferStats {
    /// Objects written to the destination.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Commits among them.
    pub commits: u64,
}

/// Copies into `to` every object `heads` reach in `from` that `to` lacks (module docs);
/// flushes `to` before returning, so the objects are durable before a ref names them.
pub(crate) fn copy_reachable(from: &Objects, to: &dyn Store, heads: &[CommitId]) -> Result<TransferStats> {
    let mut t = Transfer {
        from,
        to,
        batch: Vec::new(),
        batch_bytes: 0,
        written: HashSet::new(),
        stats: TransferStats::default(),
    };
    for (id, raw, commit) in t.missing_commits(heads)? {
        t.commit(id, &raw, &commit)?;
    }
    t.write_batch()?;
    to.flush()?;
    Ok(t.stats)
}

/// A commit to copy: its id, verified bytes and decoded form.
type ReadCommit = (CommitId, Arc<[u8]>, Commit);

struct Transfer<'a> {
    from: &'a Objects,
    to: &'a dyn Store,
    batch: Vec<(Hash, Vec<u8>)>,
    batch_bytes: usize,
    written: HashSet<Hash>,
    stats: TransferStats,
}

impl Transfer<'_> {
    /// The commits `heads` reach that the destination lacks, oldest first (every commit
    /// after its parents), each with its verified bytes and decoded form (read once).
    fn missing_commits(&self, heads: &[CommitId]) -> Result<Vec<ReadCommit>> {
        let mut order = Vec::new();
        let mut state: HashSet<CommitId> = HashSet::new();
        // Depth-first post-order: a commit is emitted after all its missing parents; the
        // second visit carries what the first one read.
        type Visit = (CommitId, Option<(Arc<[u8]>, Commit)>);
        let mut stack: Vec<Visit> = heads.iter().rev().map(|h| (*h, None)).collect();
        while let Some((id, read)) = stack.pop() {
            if let Some((raw, commit)) = read {
                order.push((id, raw, commit));
                continue;
            }
            if !state.insert(id) || self.to.contains(id.hash())? {
                continue;
            }
            let raw = self.from.raw(id.hash(), ObjectKind::Commit)?;
            let commit = codec::decode_commit(&raw).map_err(|e| corrupt(ObjectKind::Commit, *id.hash(), e))?;
            let parents: Vec<Visit> = commit.parents.iter().rev().map(|p| (*p, None)).collect();
            stack.push((id, Some((raw, commit))));
            stack.extend(parents);
        }
        Ok(order)
    }

    /// Copies commit `id`'s new tree objects (post-order), then the commit (`raw`, `c`).
    fn commit(&mut self, id: CommitId, raw: &[u8], c: &Commit) -> Result<()> {
        for (root, leaf) in [
            (c.node_root, ObjectKind::Node),
            (c.edge_root, ObjectKind::Edge),
            (c.edge_in_root, ObjectKind::Edge),
        ] {
            if let Some(root) = root {
                self.tree(root, leaf)?;
            }
        }
        self.stats.commits += 1;
        self.emit(*id.hash(), raw)
    }

    /// Copies the part of the tree at `root` the destination lacks, children first.
    fn tree(&mut self, root: Hash, leaf: ObjectKind) -> Result<()> {
        let mut stack: Vec<(Hash, Option<Arc<[u8]>>)> = vec![(root, None)];
        while let Some((h, raw)) = stack.pop() {
            if let Some(raw) = raw {
                self.emit(h, &raw)?;
                continue;
            }
            if self.written.contains(&h) || self.to.contains(&h)? {
                continue;
            }
            let raw = self.from.raw(&h, ObjectKind::Tree)?;
            let t = codec::decode_tree(&raw).map_err(|e| corrupt(ObjectKind::Tree, h, e))?;
            stack.push((h, Some(raw)));
            // The node's leaves checked, and the missing ones fetched, at once: one round
            // trip for all of them where the stores are object stores.
            let values: Vec<Hash> = t
                .entries
                .iter()
                .map(|e| e.value)
                .filter(|v| !self.written.contains(v))
                .collect();
            let present = self.to.contains_many(&values)?;
            let missing: HashSet<Hash> = values
                .iter()
                .zip(present)
                .filter(|(_, p)| !p)
                .map(|(v, _)| *v)
                .collect();
            if missing.len() > 1 {
                // A hint: a failure here is met again, and reported, by the read below.
                let _ = self.from.store().prefetch(&missing.iter().copied().collect::<Vec<_>>());
            }
            for e in &t.entries {
                if missing.contains(&e.value) && !self.written.contains(&e.value) {
                    let value = self.from.raw(&e.value, leaf)?;
                    self.emit(e.value, &value)?;
                }
                if let Some(right) = e.right {
                    stack.push((right, None));
                }
            }
            if let Some(left) = t.left {
                stack.push((left, None));
            }
        }
        Ok(())
    }

    fn emit(&mut self, h: Hash, raw: &[u8]) -> Result<()> {
        if !self.written.insert(h) {
            return Ok(());
        }
        self.stats.objects += 1;
        self.stats.bytes += raw.len() as u64;
        self.batch_bytes += raw.len();
        self.batch.push((h, raw.to_vec()));
        if self.batch_bytes >= BATCH_BYTES {
            self.write_batch()?;
        }
        Ok(())
    }

    fn write_batch(&mut self) -> Result<()> {
        if !self.batch.is_empty() {
            self.to.put_batch_owned(std::mem::take(&mut self.batch))?;
            self.batch_bytes = 0;
        }
        Ok(())
    }
}

fn corrupt(kind: ObjectKind, hash: Hash, e: codec::DecodeError) -> crate::Error {
    GraphError::Corrupt {
        kind: kind.name(),
        hash,
        detail: e.to_string(),
    }
    .into()
}
