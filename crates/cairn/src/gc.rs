//! Garbage collection ([`Repo::gc`]; how it works is documented there).

use std::collections::HashSet;

use cairn_core::codec::ObjectKind;
use cairn_core::{CommitId, Hash};
use serde::Serialize;

use crate::error::Result;
use crate::repo::Repo;

/// Objects deleted per store batch.
const DELETE_CHUNK: usize = 10_000;

/// How long a commit no branch or tag reaches is kept by default: 14 days, as git keeps
/// unreachable objects (`gc.pruneExpire`).
pub const DEFAULT_GRACE: std::time::Duration = std::time::Duration::from_secs(14 * 24 * 3600);

/// Settings of [`Repo::gc_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcOptions {
    /// Unreachable commits are kept, with everything they reach, if a reflog entry
    /// younger than this names them (counted from the move's time), or if their own
    /// timestamp is within this long of now: a deleted branch, a head moved past, or a
    /// branch ref lost to damage stays recoverable that long (`cairn reflog` and `fsck`
    /// name such commits; `cairn branch create NAME --at COMMIT` brings one back).
    /// Reflog entries older than this are dropped.
    pub grace: std::time::Duration,
}

impl Default for GcOptions {
    fn default() -> GcOptions {
        GcOptions { grace: DEFAULT_GRACE }
    }
}

impl GcOptions {
    /// No grace: everything no branch or tag reaches goes now (`cairn gc --now`).
    pub fn now() -> GcOptions {
        GcOptions {
            grace: std::time::Duration::ZERO,
        }
    }
}

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
    /// Commits kept: reachable from branches and tags, or kept as recent (below).
    pub commits_live: u64,
    /// Commits no branch or tag reaches, kept because a reflog entry younger than the
    /// grace period names them or their timestamp is within it ([`GcOptions::grace`]).
    pub commits_kept_recent: u64,
    /// Derived-data entries deleted (index snapshots, HNSW bases, time-index entries).
    pub derived_removed: u64,
    /// Reflog entries dropped as older than the grace period.
    pub reflog_removed: u64,
    /// Bytes of the repository's files when `gc` started (0 for a repository kept in
    /// memory).
    pub disk_bytes_before: u64,
    /// Bytes of the repository's files when it ended (see *Disk space* on [`Repo::gc`]).
    pub disk_bytes_after: u64,
    /// Bytes given back to the file system: `disk_bytes_before - disk_bytes_after`, or 0
    /// if the files grew (a commit made during `gc` adds its bytes).
    pub bytes_returned: u64,
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
    /// A tree node's level (0 for the other kinds): a node's subtrees have lower levels.
    level: u8,
}

impl Repo {
    /// Deletes every object no branch or tag reaches — except commits a branch pointed to
    /// within the default grace period ([`DEFAULT_GRACE`], 14 days, per the reflog) or
    /// whose timestamp is within it, and what they reach — and the derived data of dead
    /// commits and deleted branches; drops reflog entries older than the grace period;
    /// returns what it removed. Safe to run while other threads of
    /// this process commit (see *How gc works* below); reads of reachable commits
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
    /// // Within the grace period (14 days by default) the commit is kept, recoverable...
    /// assert_eq!(repo.gc()?.commits_kept_recent, 1);
    /// // ...and without one it goes.
    /// let report = repo.gc_with(&cairn::GcOptions::now())?;
    /// assert_eq!(report.commits_removed, 1);
    /// assert!(repo.fsck()?.is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # How gc works
    ///
    /// **Mark.** Commits are walked from every branch and tag head through all parents; the
    /// node, edge and reverse edge trees of each are walked, skipping every tree node already
    /// marked, so a subtree shared by many commits is read once. Node and edge objects are
    /// marked from the tree entries without being read.
    ///
    /// **Grace.** Unreachable commits are marked too, with everything they reach, if a
    /// [reflog](Repo::reflog) entry younger than the grace period ([`GcOptions::grace`], 14
    /// days by default) names them (as a branch's head before or after a move: what a deleted
    /// branch, a merge or a commit left behind), or if their own timestamp is within the grace
    /// period (a branch ref lost to damage, which leaves no entry). So whatever a branch
    /// pointed to stays recoverable that long. Reflog entries older than the grace period are
    /// dropped at the end of `gc` (with `--now`, every entry: no grace, no safety net).
    /// Phase 1 (below) reads the reflog after the refs, so a head moved past after that read
    /// was marked as a head.
    ///
    /// **Sweep.** Objects stored but not marked are deleted: commits first, then tree nodes
    /// from the top level down (a node before its subtrees), then nodes and edges. So a
    /// crash part-way leaves every still-stored object complete — a commit its trees, a
    /// tree node its subtrees — which fetch and push rely on when they stop at an object
    /// the destination holds.
    ///
    /// **Concurrency with writers (one process).** Every writer holds the repository's gc
    /// lock for reading from the moment it builds a commit's objects until its ref has moved
    /// (transactions, merges, `create_branch`). `gc` runs in two phases:
    /// 1. without the lock: list the stored objects (the snapshot), *then* read the refs and
    ///    mark; the unmarked snapshot objects are the candidates (their kind and size are read
    ///    here too);
    /// 2. with the lock held for writing (no writer is between writing objects and moving its
    ///    ref): read the refs again, mark what they reach beyond phase 1 (commits already
    ///    marked are not walked again: usually a few new commits), and delete the candidates
    ///    still unmarked.
    ///
    /// An object a writer wrote before the snapshot is either reachable from the refs of phase
    /// 2 (its commit was published, as phase 2 waits for every writer between writing and
    /// publishing) or garbage (its commit lost the compare-and-swap, or was abandoned). An
    /// object written after the snapshot is not a candidate. A writer that reuses stored
    /// objects (the unchanged subtrees of its base) publishes by compare-and-swap from that
    /// base, which is then reachable; a merge also checks, under the lock, that theirs'
    /// commit is still stored. Commits only block for phase 2, whose cost is the garbage
    /// deleted plus the commits made during phase 1.
    ///
    /// **Across processes**: an on-disk repository (a segment or sled store) is open in one
    /// process at a time (a second open fails with a lock error), so no other process can
    /// write while `gc` runs. A store backend shared between processes would need `gc` to run only
    /// while no other process writes.
    ///
    /// **Derived data** is rebuildable, so it is swept after the lock is released, by key
    /// alone (no stored value is read): chunk parts (`ck/`) of chunks no live commit's trees
    /// cut, unit graphs (`ug/`) of units no live commit has, manifests (`cm/`) of trees no live
    /// commit has, every entry of a retired space (`ix/`, `hb/`: index format 1), and
    /// `tl/<branch>` time indexes of deleted branches (or naming a dead commit). A chunk that
    /// only a live commit shares with dead ones is kept: chunks belong to content, not to
    /// commits. Derived data stored concurrently for a commit made during `gc` may be swept
    /// too; it is rebuilt on next use.
    ///
    /// # Disk space
    ///
    /// Deleting appends tombstones; the space comes back when segments are compacted
    /// (`storage-format.md` §6.10). Last, `gc` compacts fully ([`Store::compact`]): every
    /// segment of the object and derived logs fewer than half of whose bytes are live, and
    /// the newest one too — sealed and copied — when its copy would keep fewer than half of
    /// it. So, with no writes meanwhile, after `gc` each log holds at most **twice its live
    /// bytes plus twice the bytes of the tombstones it still needs** (a tombstone stays
    /// while an older segment, itself at least half live, holds a put of its key: 51 bytes
    /// each for an object), and a hint per sealed segment. A log that fits in one 64 MiB
    /// segment, as most do, has no older segment: it ends at most twice its live bytes,
    /// and at its live bytes whenever `gc` found it mostly dead. A crash at any point of a
    /// compaction loses nothing live and brings back nothing deleted.
    /// [`GcReport::bytes_returned`] is what the repository's files shrank by.
    ///
    /// [`Store::compact`]: cairn_store::Store::compact
    pub fn gc(&self) -> Result<GcReport> {
        self.gc_with(&GcOptions::default())
    }

    /// [`Repo::gc`] with explicit settings: `GcOptions::now()` collects unreachable
    /// commits however recent.
    pub fn gc_with(&self, options: &GcOptions) -> Result<GcReport> {
        let store = self.store();
        let grace_ms = i64::try_from(options.grace.as_millis()).unwrap_or(i64::MAX);
        let cutoff = crate::writer::now_ms().saturating_sub(grace_ms);
        refuse_damaged_heads(store.as_ref())?;
        // Phase 1: snapshot first, refs after it; writers run on.
        let disk_bytes_before = store.disk_bytes()?.unwrap_or(0);
        let snapshot = store.object_hashes()?;
        let mut report = GcReport {
            objects_before: snapshot.len() as u64,
            disk_bytes_before,
            ..GcReport::default()
        };
        let mut marks = Marks::default();
        self.mark_from_refs(&mut marks)?;
        let mut candidates = Vec::new();
        let scan = self.meter(crate::Step::GcScan, Some(snapshot.len() as u64));
        let mut scanned = 0;
        for hash in snapshot {
            scan.tick(&mut scanned);
            if marks.objects.contains(&hash) {
                continue;
            }
            let (kind, bytes, level) = match store.get(&hash) {
                Ok(Some(b)) => {
                    let kind = ObjectKind::of(&b).ok();
                    let level = match kind {
                        Some(ObjectKind::Tree) => cairn_core::codec::decode_tree(&b).map_or(0, |t| t.level),
                        _ => 0,
                    };
                    (kind, b.len() as u64, level)
                }
                Ok(None) => continue,   // deleted meanwhile (another gc)
                Err(_) => (None, 0, 0), // corrupt and unreachable: garbage all the same
            };
            candidates.push(Candidate {
                hash,
                kind,
                bytes,
                level,
            });
        }
        scan.flush(&mut scanned);
        // Recent unreachable commits are kept, with all they reach: those a recent reflog
        // entry names, and those with a recent timestamp.
        let mut recent = Vec::new();
        if grace_ms > 0 {
            let named = self.reflog_named(cutoff)?;
            for c in candidates.iter().filter(|c| c.kind == Some(ObjectKind::Commit)) {
                let id = CommitId(c.hash);
                if named.contains(&id) || self.commit(&id).is_ok_and(|commit| commit.timestamp_ms >= cutoff) {
                    recent.push(id);
                }
            }
            self.mark_from(recent.clone(), &mut marks)?;
            candidates.retain(|c| !marks.objects.contains(&c.hash));
        }

        // Phase 2: no writer is between writing its objects and moving its ref.
        {
            let _sweeping = self.inner.gc_lock.write();
            refuse_damaged_heads(store.as_ref())?;
            self.mark_from_refs(&mut marks)?;
            // Objects open transactions wrote ahead of their commit (`pins.rs`).
            let pinned = self.inner.pins.all();
            candidates.retain(|c| !marks.objects.contains(&c.hash) && !pinned.contains(&c.hash));
            // Commits first, then trees from the top level down, then nodes, edges and
            // unreadable objects: every object is deleted before what it references, so a
            // sweep cut short (a crash keeps a prefix of the deletes) leaves no object
            // without its closure — what fetch and push rely on when they stop at an
            // object the destination holds (`remote/transfer.rs`).
            let rank = |k: Option<ObjectKind>| match k {
                Some(ObjectKind::Commit) => 0,
                Some(ObjectKind::Tree) => 1,
                _ => 2,
            };
            candidates.sort_by_key(|c| (rank(c.kind), std::cmp::Reverse(c.level)));
            let sweep = self.meter(crate::Step::GcSweep, Some(candidates.len() as u64));
            for chunk in candidates.chunks(DELETE_CHUNK) {
                let hashes: Vec<Hash> = chunk.iter().map(|c| c.hash).collect();
                store.delete_objects(&hashes)?;
                sweep.add(chunk.len() as u64);
            }
            // A collected commit is no longer readable through this handle's commit cache
            // (cleared after the deletes: a read racing them can no longer refill it).
            self.inner.commits.clear();
            store.flush()?;
        }
        report.objects_removed = candidates.len() as u64;
        report.commits_removed = candidates.iter().filter(|c| c.kind == Some(ObjectKind::Commit)).count() as u64;
        report.bytes_freed = candidates.iter().map(|c| c.bytes).sum();
        report.commits_live = marks.commits.len() as u64;
        report.commits_kept_recent = recent.len() as u64;

        report.derived_removed = self.derived().sweep(&marks.commits)?;
        report.reflog_removed = self.expire_reflog(cutoff)?;
        // The deletes above compacted only large sealed segments; now every mostly dead
        // one, the newest included, gives its space back.
        store.compact()?;
        store.flush()?;
        report.disk_bytes_after = store.disk_bytes()?.unwrap_or(0);
        report.bytes_returned = report.disk_bytes_before.saturating_sub(report.disk_bytes_after);
        Ok(report)
    }

    /// The commits reflog entries younger than the grace period (made after `cutoff`, ms)
    /// name.
    fn reflog_named(&self, cutoff: i64) -> Result<HashSet<CommitId>> {
        let (entries, _) = crate::reflog::read_all(self)?;
        Ok(entries
            .iter()
            .filter(|e| e.time_ms > cutoff)
            .flat_map(|e| e.commits())
            .collect())
    }

    /// Drops reflog entries as old as the grace period or older (made at or before
    /// `cutoff`, ms; with no grace, every entry made before `gc` started); returns how
    /// many went. A record that
    /// does not decode is kept (it may be a later version's; `fsck` names it); one the
    /// store finds damaged goes with the rewrite.
    fn expire_reflog(&self, cutoff: i64) -> Result<u64> {
        let (entries, _) = crate::reflog::read_all(self)?;
        let expired = entries.iter().filter(|e| e.time_ms <= cutoff).count() as u64;
        if expired == 0 {
            return Ok(0);
        }
        // Judged again as the store rewrites: an entry appended meanwhile is recent.
        self.store().retain_ref_log(&|record| {
            crate::reflog::RefLogEntry::decode(record).map_or(true, |e| e.time_ms > cutoff)
        })?;
        Ok(expired)
    }

    /// Marks everything reachable from the branch, tag and remote-tracking heads now,
    /// walking only commits
    /// not marked before.
    fn mark_from_refs(&self, marks: &mut Marks) -> Result<()> {
        let refs = self.refs();
        let roots: Vec<CommitId> = refs
            .branches()?
            .into_iter()
            .chain(refs.tags()?)
            .chain(refs.all_remote_branches()?)
            .map(|(_, c)| c)
            .collect();
        self.mark_from(roots, marks)
    }

    /// Marks everything reachable from `roots`, walking only commits not marked before.
    fn mark_from(&self, roots: Vec<CommitId>, marks: &mut Marks) -> Result<()> {
        let mut stack = roots;
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
}

/// Fails (with the ref's own error, which names it) if any branch or tag ref is damaged:
/// a damaged one is left out of listings and could be the only way to its commits, so gc
/// must not mark without it. Checked before the snapshot and again under the sweep lock.
fn refuse_damaged_heads(store: &dyn cairn_store::Store) -> Result<()> {
    for name in store.damaged_refs("refs/")? {
        store.get_ref(&name)?;
    }
    Ok(())
}
