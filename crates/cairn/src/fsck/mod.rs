//! `fsck`: verify every stored object and every reachable reference.

mod branches;
mod dims;
mod refs;
mod trees;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cairn_core::codec::{self, Object};
use cairn_core::CommitId;
use serde::Serialize;

use crate::error::Result;
use crate::repo::Repo;

use self::trees::{TreeChecker, ValueKeys};

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
    /// Commits stored but reachable from no branch or tag, newest of each line only
    /// (none of them is a parent of another): what a deleted branch, or a branch ref lost
    /// to damage, leaves. Not a problem by itself; `cairn branch create <name> --at <commit>`
    /// makes one reachable again, and `gc` collects them.
    pub dangling_commits: Vec<CommitId>,
    /// Reflog damage, one line each: records the store could not read or that do not
    /// decode (skipped by [`Repo::reflog`]), and entries naming a commit that is not
    /// stored. Never a risk to the data (the branches stand without their history), so
    /// not counted by [`FsckReport::is_ok`].
    pub reflog_problems: Vec<String>,
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

    /// True if every reflog record reads and names stored commits.
    pub fn reflog_ok(&self) -> bool {
        self.reflog_problems.is_empty()
    }
}

impl Repo {
    /// Checks the whole repository: every object's crc (by the store), blake3 hash and
    /// canonical decoding; every commit reachable from a branch or tag, and every tree
    /// node, node and edge object they reference, is present; the trees keep the Merkle
    /// search tree invariants (key levels, order, gaps, keys matching their values, the
    /// reverse edge tree mirroring the forward one, counts matching the commit); and,
    /// reported apart, every stored derived entry decodes under its key and every reflog
    /// record reads and names stored commits. O(size of the
    /// repository): each distinct tree node is checked once, however many commits share it.
    pub fn fsck(&self) -> Result<FsckReport> {
        Ok(self.fsck_with_dims()?.0)
    }

    /// [`Repo::fsck`], and each dense model's vector lengths among the node objects the
    /// branches and tags reach (and their history), for the dimension records' repair.
    fn fsck_with_dims(&self) -> Result<(FsckReport, dims::Dims)> {
        let mut report = FsckReport::default();
        let (checked, damage) = self.derived().check()?;
        report.derived_checked = checked;
        report.derived_problems = damage.iter().map(crate::derived::check::describe).collect();
        // Damage the store found in its own files (bytes that held no readable record).
        let store_damage = self.store().damage();
        report.problems.extend(store_damage.data);
        report.derived_problems.extend(store_damage.derived);
        let store = self.store();
        // Read before the store's own reflog damage is taken: reading notes it.
        let (reflog_entries, reflog_problems) = crate::reflog::read_all(self)?;
        report.reflog_problems.extend(store.damage().ref_log);
        report.reflog_problems.extend(reflog_problems);
        // The keys every readable node and edge must be stored under in the trees.
        let mut values = HashMap::new();
        // Each dense model's vector lengths, against the dimension records: over every
        // stored node, and per node (those with vectors) for the reachable ones.
        let mut node_dims = dims::NodeDims::new();
        let mut vector_dims: HashMap<cairn_core::Hash, Vec<(String, usize)>> = HashMap::new();
        let mut stored_commits: BTreeMap<CommitId, Vec<CommitId>> = BTreeMap::new();
        let hashes = store.object_hashes()?;
        let objects = self.meter(crate::Step::FsckObjects, Some(hashes.len() as u64));
        let mut pending = 0;
        for h in hashes {
            objects.tick(&mut pending);
            report.objects_checked += 1;
            match store.get(&h) {
                Ok(Some(bytes)) => {
                    if codec::hash_object(&bytes) != h {
                        report
                            .problems
                            .push(format!("object {h}: content does not match its blake3 hash"));
                    } else {
                        match codec::decode_object(&bytes) {
                            Ok(Object::Node(n)) => {
                                dims::add_node_dims(&mut node_dims, &n);
                                if !n.embeddings.is_empty() {
                                    vector_dims
                                        .insert(h, n.embeddings.iter().map(|(m, v)| (m.clone(), v.len())).collect());
                                }
                                values.insert(h, ValueKeys::Node(n.id.as_bytes().to_vec()));
                            }
                            Ok(Object::Edge(e)) => {
                                let forward = codec::edge_tree_key(&e.source, &e.kind, &e.target);
                                let reverse = codec::edge_in_tree_key(&e.source, &e.kind, &e.target);
                                values.insert(h, ValueKeys::Edge { forward, reverse });
                            }
                            Ok(Object::Commit(c)) => {
                                stored_commits.insert(CommitId(h), c.parents);
                            }
                            Ok(Object::Tree(_)) => {}
                            Err(e) => report.problems.push(format!("object {h}: {e}")),
                        }
                    }
                }
                Ok(None) => report.problems.push(format!("object {h}: listed but unreadable")),
                Err(e) => report.problems.push(format!("object {h}: {e}")),
            }
        }
        objects.flush(&mut pending);
        self.check_own_refs(&mut report.problems);
        // Damaged refs, each named once. Branches and tags are left out of the listings
        // below, and while any is damaged no commit is judged dangling (it may be that
        // ref's). HEAD, the format marker and dimension records have checks of their own.
        let mut damaged_heads = Vec::new();
        for name in store.damaged_refs("")? {
            let own = name == cairn_graph::refs::HEAD
                || name == format!("meta/{}", crate::repo::FORMAT_META)
                || name
                    .strip_prefix("meta/")
                    .is_some_and(|n| n.starts_with(crate::dense_dims::DENSE_DIM_META));
            if own {
                continue;
            }
            let why = store
                .get_ref(&name)
                .err()
                .map_or_else(|| "its bytes fail their checksum".into(), |e| e.to_string());
            if name.starts_with("refs/") {
                report.problems.push(format!(
                    "ref {name} is damaged: {why} (the other refs are checked; commits are not judged dangling until it is repaired)"
                ));
                damaged_heads.push(name);
            } else {
                report.problems.push(format!("ref {name} is damaged: {why}"));
            }
        }
        let restorable = self.check_branches(&reflog_entries, &mut report.problems)?;
        let refs = self.refs();
        // A damaged branch or tag ref is reported; the commits of the others are still
        // checked only if the listing itself could be read.
        let mut heads: Vec<(String, CommitId)> = Vec::new();
        match refs.branches() {
            Ok(branches) => heads.extend(branches.into_iter().map(|(b, c)| (format!("branch {b}"), c))),
            Err(e) => report.problems.push(format!("branches: {e}")),
        }
        match refs.tags() {
            Ok(tags) => heads.extend(tags.into_iter().map(|(t, c)| (format!("tag {t}"), c))),
            Err(e) => report.problems.push(format!("tags: {e}")),
        }
        match refs.all_remote_branches() {
            Ok(remote) => heads.extend(
                remote
                    .into_iter()
                    .map(|(r, c)| (format!("remote-tracking branch {r}"), c)),
            ),
            Err(e) => report.problems.push(format!("remote-tracking branches: {e}")),
        }
        let mut seen_commits = BTreeSet::new();
        let mut trees = TreeChecker::new(self, &values);
        let mut stack: Vec<(String, CommitId)> = heads;
        let commits = self.meter(crate::Step::FsckCommits, None);
        while let Some((from, id)) = stack.pop() {
            if !seen_commits.insert(id) {
                continue;
            }
            report.commits_checked += 1;
            commits.add(1);
            // From the store, never the handle's commit cache: fsck checks the bytes.
            let c = match self.objects().commit(&id).map_err(crate::Error::from) {
                Ok(c) => c,
                Err(e) => {
                    report
                        .problems
                        .push(format!("commit {id} (reachable from {from}): {e}"));
                    continue;
                }
            };
            trees.check_commit(&format!("{id} (reachable from {from})"), &c, &mut report.problems);
            for p in c.parents {
                stack.push((from.clone(), p));
            }
        }
        let mut reached_dims = dims::NodeDims::new();
        for (model, len) in trees.reached_nodes.iter().filter_map(|h| vector_dims.get(h)).flatten() {
            reached_dims.entry(model.clone()).or_default().insert(*len);
        }
        drop(trees);
        self.check_dims(&node_dims, &reached_dims, &mut report.problems);
        let any_commit = !stored_commits.is_empty();
        let unreachable: BTreeMap<_, _> = stored_commits
            .into_iter()
            .filter(|(id, _)| !seen_commits.contains(id))
            .collect();
        let parents: BTreeSet<CommitId> = unreachable.values().flatten().copied().collect();
        if damaged_heads.is_empty() {
            report.dangling_commits = unreachable.into_keys().filter(|id| !parents.contains(id)).collect();
        }
        // A repository holding commits whose current branch has none: every read of HEAD
        // fails, so fsck does not pass (a new, empty repository is sound, and so is one
        // that has only fetched: its commits are a remote's, named by tracking refs).
        let only_fetched = refs.all_remote_branches().is_ok_and(|r| !r.is_empty());
        if let Ok(branch) = self.current_branch() {
            let named = restorable.contains(branch.as_str());
            if !named && any_commit && !only_fetched && matches!(refs.branch(&branch), Ok(None)) {
                report.problems.push(format!(
                    "HEAD names branch {branch}, which has no ref, while commits are stored (`cairn branch switch <branch>` works on another branch; `cairn branch create {branch} --at <commit>` brings it back)"
                ));
            }
        }
        let mut missing = BTreeSet::new();
        for entry in &reflog_entries {
            for id in entry.commits() {
                if !store.contains(id.hash())? && missing.insert((entry.branch.clone(), id)) {
                    report.reflog_problems.push(format!(
                        "reflog of branch {}: names commit {id}, which is not stored",
                        entry.branch
                    ));
                }
            }
        }
        Ok((
            report,
            dims::Dims {
                stored: node_dims,
                reached: reached_dims,
            },
        ))
    }
}
