//! Copying the objects a set of commits reaches from one repository to another, only those
//! the destination lacks, each verified against its blake3 name as it is read. The two
//! ends are repositories on this machine or `cairn serve` remotes ([`End`]); the walk is
//! the same for both, and asks in batches, one round trip per level.
//!
//! **Negotiation.** Objects are content-addressed and written before any ref names them,
//! and `gc` deletes only what no ref reaches, so an object present in the destination has
//! its whole closure there too (a commit its ancestors and trees, a tree node its subtree).
//! The walk therefore stops at the first object the destination holds: a one-node change
//! on a million-node repository moves the new commit, the O(log n) tree nodes on the
//! changed path and the node object — a few KiB. It goes level by level: the missing
//! commits from the heads down their parents, then their trees from the roots down, each
//! level one `missing` question and one `get` of the missing objects.
//!
//! **Order.** Objects are written children first: the leaves (nodes and edges) as they
//! arrive, then the tree nodes in post-order (a node after its subtrees), then the commits
//! parents first. An interrupted transfer therefore leaves only objects whose closure is
//! present, so the rule above keeps holding, and no ref names any of them yet: the
//! destination is as before, plus unreachable objects the next transfer reuses (and `gc`
//! may collect).

use std::collections::{HashMap, HashSet};

use cairn_core::codec::{self, ObjectKind};
use cairn_core::{Commit, CommitId, Hash, TreeNode};
use cairn_graph::GraphError;

use super::http::HttpRemote;
use crate::error::Result;
use crate::repo::Repo;

/// Bytes buffered before a batch is written.
const BATCH_BYTES: usize = 16 << 20;

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

/// One end of a transfer.
#[derive(Clone, Copy)]
pub(crate) enum End<'a> {
    /// A repository on this machine.
    Local(&'a Repo),
    /// A `cairn serve` remote.
    Http(&'a HttpRemote),
}

impl End<'_> {
    /// Which of `hashes` this end lacks.
    fn missing(&self, hashes: &[Hash]) -> Result<Vec<bool>> {
        match self {
            // One question for the level: a store whose checks are round trips (an object
            // store) asks them concurrently.
            End::Local(r) => Ok(r.store().contains_many(hashes)?.into_iter().map(|p| !p).collect()),
            End::Http(h) => h.missing(hashes),
        }
    }

    /// The verified bytes of `hashes` (objects of `kind`, as errors name them).
    fn get(&self, hashes: &[Hash], kind: ObjectKind) -> Result<Vec<Vec<u8>>> {
        match self {
            End::Local(r) => {
                // A hint: an object store fetches the level at once; a failure there is met
                // again, and reported, by the reads.
                if hashes.len() > 1 {
                    let _ = r.store().prefetch(hashes);
                }
                hashes.iter().map(|h| Ok(r.objects().raw(h, kind)?.to_vec())).collect()
            }
            End::Http(h) => h.get(hashes),
        }
    }

    /// Stores `objects` in order; durable when this returns for a remote, at
    /// [`End::flush`] for a local repository.
    fn put(&self, objects: Vec<(Hash, Vec<u8>)>) -> Result<()> {
        match self {
            End::Local(r) => Ok(r.store().put_batch_owned(objects)?),
            End::Http(h) => h.put(&objects),
        }
    }

    /// The end's path or URL, for errors.
    fn name(&self) -> String {
        match self {
            End::Local(r) => r
                .path()
                .map_or_else(|| "a repository in memory".to_string(), |p| p.display().to_string()),
            End::Http(h) => h.url().to_string(),
        }
    }

    fn flush(&self) -> Result<()> {
        match self {
            End::Local(r) => Ok(r.store().flush()?),
            End::Http(_) => Ok(()),
        }
    }
}

/// Copies into `to` every object `heads` reach in `from` that `to` lacks (module docs);
/// flushes `to` before returning, so the objects are durable before a ref names them.
pub(crate) fn copy_reachable(from: End<'_>, to: End<'_>, heads: &[CommitId]) -> Result<TransferStats> {
    let mut t = Transfer {
        from,
        to,
        seen: HashSet::new(),
        batch: Vec::new(),
        batch_bytes: 0,
        stats: TransferStats::default(),
    };
    let commits = t.missing_commits(heads)?;
    let trees = t.missing_trees(&commits)?;
    for (h, bytes) in tree_order(trees) {
        t.emit(h, bytes)?;
    }
    for (h, bytes) in commit_order(commits) {
        t.stats.commits += 1;
        t.emit(h, bytes)?;
    }
    t.write_batch()?;
    to.flush()?;
    Ok(t.stats)
}

/// A missing commit: its id, bytes and decoded form.
type Missing<T> = (Hash, Vec<u8>, T);

struct Transfer<'a> {
    from: End<'a>,
    to: End<'a>,
    /// Every object the walk has met (so each is asked about once).
    seen: HashSet<Hash>,
    batch: Vec<(Hash, Vec<u8>)>,
    batch_bytes: usize,
    stats: TransferStats,
}

impl Transfer<'_> {
    /// Of `level`, the objects the destination lacks, read from the source.
    fn fetch_missing(&self, level: &[Hash], kind: ObjectKind) -> Result<Vec<(Hash, Vec<u8>)>> {
        if level.is_empty() {
            return Ok(Vec::new());
        }
        let want: Vec<Hash> = level
            .iter()
            .zip(self.to.missing(level)?)
            .filter(|(_, m)| *m)
            .map(|(h, _)| *h)
            .collect();
        let got = self.from.get(&want, kind)?;
        if got.len() != want.len() {
            return Err(crate::Error::Remote {
                url: self.from.name(),
                status: None,
                detail: format!("asked for {} objects, {} arrived", want.len(), got.len()),
            });
        }
        Ok(want.into_iter().zip(got).collect())
    }

    /// The commits `heads` reach that the destination lacks, in the order met.
    fn missing_commits(&mut self, heads: &[CommitId]) -> Result<Vec<Missing<Commit>>> {
        let mut out = Vec::new();
        let mut level: Vec<Hash> = heads
            .iter()
            .map(|c| *c.hash())
            .filter(|h| self.seen.insert(*h))
            .collect();
        while !level.is_empty() {
            let mut next = Vec::new();
            for (h, bytes) in self.fetch_missing(&level, ObjectKind::Commit)? {
                let c = codec::decode_commit(&bytes).map_err(|e| corrupt(ObjectKind::Commit, h, e))?;
                next.extend(c.parents.iter().map(|p| *p.hash()).filter(|p| self.seen.insert(*p)));
                out.push((h, bytes, c));
            }
            level = next;
        }
        Ok(out)
    }

    /// The tree nodes of `commits` the destination lacks (the leaves they name that it
    /// lacks are copied on the way, in batches).
    fn missing_trees(&mut self, commits: &[Missing<Commit>]) -> Result<Vec<Missing<TreeNode>>> {
        let mut out = Vec::new();
        // (tree node, the kind of its leaves)
        let mut level: Vec<(Hash, ObjectKind)> = Vec::new();
        for (_, _, c) in commits {
            for (root, leaf) in [
                (c.node_root, ObjectKind::Node),
                (c.edge_root, ObjectKind::Edge),
                (c.edge_in_root, ObjectKind::Edge),
            ] {
                if let Some(r) = root.filter(|r| self.seen.insert(*r)) {
                    level.push((r, leaf));
                }
            }
        }
        while !level.is_empty() {
            let kinds: HashMap<Hash, ObjectKind> = level.iter().copied().collect();
            let hashes: Vec<Hash> = level.iter().map(|(h, _)| *h).collect();
            let mut next = Vec::new();
            let mut leaves: Vec<(Hash, ObjectKind)> = Vec::new();
            for (h, bytes) in self.fetch_missing(&hashes, ObjectKind::Tree)? {
                let t = codec::decode_tree(&bytes).map_err(|e| corrupt(ObjectKind::Tree, h, e))?;
                let leaf = kinds[&h];
                for sub in t.left.into_iter().chain(t.entries.iter().filter_map(|e| e.right)) {
                    if self.seen.insert(sub) {
                        next.push((sub, leaf));
                    }
                }
                for e in &t.entries {
                    if self.seen.insert(e.value) {
                        leaves.push((e.value, leaf));
                    }
                }
                out.push((h, bytes, t));
            }
            self.copy_leaves(&leaves)?;
            level = next;
        }
        Ok(out)
    }

    /// Copies the leaves (nodes, edges) the destination lacks: they name nothing, so each
    /// is written as it arrives.
    fn copy_leaves(&mut self, leaves: &[(Hash, ObjectKind)]) -> Result<()> {
        for kind in [ObjectKind::Node, ObjectKind::Edge] {
            let of_kind: Vec<Hash> = leaves.iter().filter(|(_, k)| *k == kind).map(|(h, _)| *h).collect();
            for batch in of_kind.chunks(super::wire::MAX_BATCH) {
                for (h, bytes) in self.fetch_missing(batch, kind)? {
                    self.emit(h, bytes)?;
                }
            }
        }
        Ok(())
    }

    fn emit(&mut self, h: Hash, bytes: Vec<u8>) -> Result<()> {
        self.stats.objects += 1;
        self.stats.bytes += bytes.len() as u64;
        self.batch_bytes += bytes.len();
        self.batch.push((h, bytes));
        if self.batch_bytes >= BATCH_BYTES || self.batch.len() >= super::wire::MAX_BATCH {
            self.write_batch()?;
        }
        Ok(())
    }

    fn write_batch(&mut self) -> Result<()> {
        if !self.batch.is_empty() {
            self.to.put(std::mem::take(&mut self.batch))?;
            self.batch_bytes = 0;
        }
        Ok(())
    }
}

/// `trees` in post-order: every node after the nodes of its subtrees that are among them.
fn tree_order(trees: Vec<Missing<TreeNode>>) -> Vec<(Hash, Vec<u8>)> {
    children_first(trees, |t| {
        t.left
            .into_iter()
            .chain(t.entries.iter().filter_map(|e| e.right))
            .collect()
    })
}

/// `commits` parents first (each after those of its parents that are among them).
fn commit_order(commits: Vec<Missing<Commit>>) -> Vec<(Hash, Vec<u8>)> {
    children_first(commits, |c| c.parents.iter().map(|p| *p.hash()).collect())
}

/// `items` ordered so that each comes after those of `named(item)` that are among them
/// (an iterative depth-first post-order; the objects form a DAG, so it always exists).
fn children_first<T>(items: Vec<Missing<T>>, named: impl Fn(&T) -> Vec<Hash>) -> Vec<(Hash, Vec<u8>)> {
    let index: HashMap<Hash, usize> = items.iter().enumerate().map(|(i, (h, _, _))| (*h, i)).collect();
    let mut done = vec![false; items.len()];
    let mut order = Vec::with_capacity(items.len());
    for start in 0..items.len() {
        // (item, whether the items it names were pushed)
        let mut stack = vec![(start, false)];
        while let Some((i, expanded)) = stack.pop() {
            if done[i] {
                continue;
            }
            if expanded {
                done[i] = true;
                order.push(i);
                continue;
            }
            stack.push((i, true));
            for h in named(&items[i].2) {
                if let Some(&j) = index.get(&h) {
                    if !done[j] {
                        stack.push((j, false));
                    }
                }
            }
        }
    }
    let mut slots: Vec<Option<(Hash, Vec<u8>)>> = items.into_iter().map(|(h, b, _)| Some((h, b))).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

fn corrupt(kind: ObjectKind, hash: Hash, e: codec::DecodeError) -> crate::Error {
    GraphError::Corrupt {
        kind: kind.name(),
        hash,
        detail: e.to_string(),
    }
    .into()
}
