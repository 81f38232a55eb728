//! Three-way merge of two lines of history ([`Repo::merge`]; the rules are documented there).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use cairn_core::{CommitId, Edge, EdgeKey, Hash, Node, NodeId, Subject, ValidationError};
use cairn_graph::refs::BranchName;
use cairn_graph::{history, EdgeTree, GraphError, NodeTree, PendingWrites, ReverseEdgeTree, TreeChange};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::repo::Repo;
use crate::transaction::check_dimension;
use crate::writer::{self, ChangeSet, CommitHeader};

/// What kind of merge [`Repo::merge`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeKind {
    /// Theirs is already contained in ours: committing changes nothing.
    UpToDate,
    /// Ours is an ancestor of theirs: committing moves the branch to theirs' head.
    FastForward,
    /// Both sides have changes: committing writes a merge commit with two parents.
    ThreeWay,
}

/// How [`Repo::merge_with`] settles conflicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeStrategy {
    /// Leave conflicts for the caller to [`MergeOutcome::resolve`].
    #[default]
    Manual,
    /// Every conflict takes ours' version.
    Ours,
    /// Every conflict takes theirs' version.
    Theirs,
}

/// A node or edge both sides changed differently. `None` means absent (never existed on
/// that side, or deleted).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Conflict {
    /// A node.
    Node {
        /// The node.
        id: NodeId,
        /// Its version in the merge base.
        base: Option<Node>,
        /// Ours' version.
        ours: Option<Node>,
        /// Theirs' version.
        theirs: Option<Node>,
    },
    /// An edge.
    Edge {
        /// The edge.
        key: EdgeKey,
        /// Its version in the merge base.
        base: Option<Edge>,
        /// Ours' version.
        ours: Option<Edge>,
        /// Theirs' version.
        theirs: Option<Edge>,
    },
}

/// How to settle one [`Conflict`].
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Keep ours' version (possibly absent).
    Ours,
    /// Take theirs' version (possibly absent).
    Theirs,
    /// Go back to the merge base's version (possibly absent).
    Base,
    /// A new value for a node conflict (`None`: delete the node). Its id must be the
    /// conflict's; it is validated like a transaction's `put_node`.
    Node(Option<Node>),
    /// A new value for an edge conflict (`None`: delete the edge). Its key must be the
    /// conflict's; it is validated like a transaction's `put_edge` (an endpoint the merge
    /// deletes makes it a dropped edge).
    Edge(Option<Edge>),
}

#[derive(Debug)]
struct Slot {
    conflict: Conflict,
    base: Option<Hash>,
    theirs: Option<Hash>,
    resolution: Option<Resolution>,
}

/// A computed merge, not yet committed: the changes it makes to ours, its conflicts, and
/// their resolutions so far. [`MergeOutcome::commit`] refuses with
/// [`Error::MergeConflicts`] while a conflict is unresolved.
///
/// ```
/// use cairn::{Error, MergeKind, Node, NodeId, Repo, Resolution};
///
/// let repo = Repo::in_memory()?;
/// let (a, b) = (NodeId::new("a")?, NodeId::new("b")?);
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(a.clone()).with_text("base"))?;
/// tx.commit("base")?;
/// repo.create_branch("feature", None)?;
///
/// // Each side edits `a` differently; feature also adds `b`.
/// let mut tx = repo.transaction_on("feature")?;
/// tx.put_node(Node::new(a.clone()).with_text("theirs"))?;
/// tx.put_node(Node::new(b.clone()).with_text("new"))?;
/// tx.commit("feature work")?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(a.clone()).with_text("ours"))?;
/// tx.commit("main work")?;
///
/// let mut merge = repo.merge("main", "feature")?;
/// assert_eq!(merge.kind(), MergeKind::ThreeWay);
/// assert_eq!(merge.conflicts().len(), 1); // `a`; `b` merges cleanly
/// assert!(matches!(merge.commit("merge"), Err(Error::MergeConflicts(1))));
///
/// merge.resolve(0, Resolution::Node(Some(Node::new(a.clone()).with_text("both"))))?;
/// let id = merge.commit("merge feature")?;
/// assert_eq!(repo.commit(&id)?.parents.len(), 2);
/// assert_eq!(repo.node(&a)?.unwrap().text, "both");
/// assert_eq!(repo.node(&b)?.unwrap().text, "new");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MergeOutcome {
    repo: Repo,
    branch: BranchName,
    kind: MergeKind,
    ours: Option<CommitId>,
    theirs: CommitId,
    base: Option<CommitId>,
    nodes: BTreeMap<NodeId, Option<Hash>>,
    edges: BTreeMap<EdgeKey, Option<Hash>>,
    slots: Vec<Slot>,
    conflicts: Vec<Conflict>,
    author: String,
}

/// The result of merging one key: take theirs' value, or a conflict.
enum KeyMerge<K> {
    Take {
        key: K,
        after: Option<Hash>,
    },
    Conflict {
        key: K,
        base: Option<Hash>,
        ours: Option<Hash>,
        theirs: Option<Hash>,
    },
}

/// Three-way merge of two diffs against one base, both in the tree order `order`. Keys
/// only ours changed need nothing (the result is built on ours), so only theirs' keys
/// produce output.
fn three_way<K>(
    ours: Vec<TreeChange<K>>,
    theirs: Vec<TreeChange<K>>,
    order: fn(&K, &K) -> Ordering,
) -> Vec<KeyMerge<K>> {
    let mut out = Vec::new();
    let mut o = ours.into_iter().peekable();
    for t in theirs {
        while o.next_if(|c| order(&c.key, &t.key) == Ordering::Less).is_some() {}
        match o.next_if(|c| order(&c.key, &t.key) == Ordering::Equal) {
            Some(c) if c.after == t.after => {} // the same change on both sides
            Some(c) => out.push(KeyMerge::Conflict {
                key: t.key,
                base: t.before,
                ours: c.after,
                theirs: t.after,
            }),
            None => out.push(KeyMerge::Take {
                key: t.key,
                after: t.after,
            }),
        }
    }
    out
}

impl Repo {
    /// Merges revision `theirs` (a branch, commit or any revision [`Repo::resolve`]
    /// accepts) into branch `ours`, without committing: see [`MergeOutcome`] and
    /// *How merging works* below for the rules. Cost: the two tree diffs against the
    /// merge base plus finding the base, independent of the size of untouched data.
    ///
    /// # How merging works
    ///
    /// Three-way merge of two lines of history, at node and edge granularity.
    ///
    /// [`Repo::merge`] compares both sides with their merge base
    /// ([`cairn_graph::history::merge_base`]) using structural tree diffs ([`NodeTree::diff`],
    /// [`EdgeTree::diff`], which skip every subtree the two trees share; the trees are never
    /// scanned whole):
    ///
    /// | base → ours | base → theirs | result |
    /// | --- | --- | --- |
    /// | unchanged | changed (put or delete) | theirs' change is taken |
    /// | changed | unchanged | ours is kept |
    /// | changed to X | changed to X | taken once (ours already has it) |
    /// | changed to X | changed to Y ≠ X | a [`Conflict`] carrying base, ours and theirs |
    ///
    /// A deletion is a change like any other: delete vs unchanged deletes (the other side does
    /// not resurrect it), delete vs change conflicts.
    ///
    /// **Edges whose endpoint the merge deletes are dropped**, never left dangling and never
    /// reported as conflicts: a node deleted by one side takes its incident edges with it,
    /// including edges the other side added or changed — the same cascade a transaction's
    /// `delete_node` applies. The dropped edges are listed by [`MergeOutcome::dropped_edges`]
    /// before committing, so nothing disappears unseen. (A conflict would have only one valid
    /// resolution, "drop", unless the node conflict is resolved to keep the node, which
    /// this rule already handles: the check runs on the resolved result.)
    ///
    /// The merged change set is applied on top of ours' trees ([`NodeTree::apply`],
    /// [`EdgeTree::apply`], [`ReverseEdgeTree::apply`]), so everything the merge does not
    /// touch — embeddings, sparse vectors, validity, untouched edges — is carried over by
    /// hash, never re-encoded. The merge commit has parents `[ours, theirs]`,
    /// `generation = ours.generation + 1`, exact node and edge counts, and an index base
    /// chosen by the transactions' rule. It moves the ours branch by compare-and-swap from the
    /// head the merge started at.
    ///
    /// Special cases: if ours is an ancestor of theirs the merge is a **fast-forward** (the
    /// branch is moved to theirs' head; no commit is made); if theirs is an ancestor of ours
    /// (or equal) the merge is **up to date** (nothing to do). Disjoint histories merge against
    /// an empty base.
    pub fn merge(&self, ours: &str, theirs: &str) -> Result<MergeOutcome> {
        let branch = BranchName::new(ours)?;
        let ours_head = self.branch_head(ours)?;
        let theirs_head = self.resolve(theirs)?;
        let objs = self.objects();
        let mut outcome = MergeOutcome {
            repo: self.clone(),
            branch,
            kind: MergeKind::ThreeWay,
            ours: ours_head,
            theirs: theirs_head,
            base: None,
            nodes: BTreeMap::new(),
            edges: BTreeMap::new(),
            slots: Vec::new(),
            conflicts: Vec::new(),
            author: "cairn".into(),
        };
        let Some(ours_head) = ours_head else {
            outcome.kind = MergeKind::FastForward;
            return Ok(outcome);
        };
        let base = history::merge_base(objs, ours_head, theirs_head)?;
        outcome.base = base;
        if base == Some(theirs_head) {
            outcome.kind = MergeKind::UpToDate;
            return Ok(outcome);
        }
        if base == Some(ours_head) {
            outcome.kind = MergeKind::FastForward;
            return Ok(outcome);
        }
        let bc = base.map(|b| self.commit(&b)).transpose()?;
        let (oc, tc) = (self.commit(&ours_head)?, self.commit(&theirs_head)?);
        let (base_nodes, base_edges) = bc.as_ref().map_or((NodeTree::EMPTY, EdgeTree::EMPTY), |c| {
            (NodeTree::of(c), EdgeTree::of(c))
        });

        let node_merge = three_way(
            base_nodes.diff(objs, NodeTree::of(&oc))?,
            base_nodes.diff(objs, NodeTree::of(&tc))?,
            NodeTree::key_order,
        );
        let load_node = |h: Option<Hash>| h.map(|h| objs.node(&h)).transpose();
        for m in node_merge {
            match m {
                KeyMerge::Take { key, after } => {
                    outcome.nodes.insert(key, after);
                }
                KeyMerge::Conflict {
                    key,
                    base,
                    ours,
                    theirs,
                } => outcome.push_conflict(
                    Conflict::Node {
                        id: key,
                        base: load_node(base)?,
                        ours: load_node(ours)?,
                        theirs: load_node(theirs)?,
                    },
                    base,
                    theirs,
                ),
            }
        }
        let edge_merge = three_way(
            base_edges.diff(objs, EdgeTree::of(&oc))?,
            base_edges.diff(objs, EdgeTree::of(&tc))?,
            EdgeTree::key_order,
        );
        let load_edge = |h: Option<Hash>| h.map(|h| objs.edge(&h)).transpose();
        for m in edge_merge {
            match m {
                KeyMerge::Take { key, after } => {
                    outcome.edges.insert(key, after);
                }
                KeyMerge::Conflict {
                    key,
                    base,
                    ours,
                    theirs,
                } => outcome.push_conflict(
                    Conflict::Edge {
                        key,
                        base: load_edge(base)?,
                        ours: load_edge(ours)?,
                        theirs: load_edge(theirs)?,
                    },
                    base,
                    theirs,
                ),
            }
        }
        Ok(outcome)
    }

    /// [`Repo::merge`], then settles every conflict with `strategy`
    /// ([`MergeStrategy::Manual`] leaves them to the caller).
    ///
    /// ```
    /// use cairn::{MergeStrategy, Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let a = NodeId::new("a")?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(a.clone()).with_text("base"))?;
    /// tx.commit("base")?;
    /// repo.create_branch("feature", None)?;
    /// let mut tx = repo.transaction_on("feature")?;
    /// tx.put_node(Node::new(a.clone()).with_text("theirs"))?;
    /// tx.commit("theirs")?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(a.clone()).with_text("ours"))?;
    /// tx.commit("ours")?;
    ///
    /// repo.merge_with("main", "feature", MergeStrategy::Theirs)?.commit("take theirs")?;
    /// assert_eq!(repo.node(&a)?.unwrap().text, "theirs");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge_with(&self, ours: &str, theirs: &str, strategy: MergeStrategy) -> Result<MergeOutcome> {
        let mut outcome = self.merge(ours, theirs)?;
        outcome.apply_strategy(strategy);
        Ok(outcome)
    }
}

/// What a merge did, as `cairn merge --json` and the server's `POST /merge` print it
/// ([`MergeOutcome::summary`]).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct MergeSummary {
    /// The kind of merge.
    pub kind: MergeKind,
    /// The branch merged into.
    pub branch: String,
    /// Ours' head when the merge started.
    pub ours: Option<CommitId>,
    /// Theirs' head.
    pub theirs: CommitId,
    /// The merge base.
    pub base: Option<CommitId>,
    /// The branch's new head; `None` when conflicts stopped the merge.
    pub commit: Option<CommitId>,
    /// Nodes the merge changed on ours, counted as `cairn diff OURS COMMIT` counts them
    /// (resolved conflicts included); before a commit, the clean changes.
    pub node_changes: usize,
    /// Edges, likewise.
    pub edge_changes: usize,
    /// Edges dropped because the merge deletes an endpoint.
    pub dropped_edges: Vec<EdgeKey>,
    /// Every conflict, in full.
    pub conflicts: Vec<Conflict>,
}

/// The change set a merge commit applies to ours, after resolutions and dropped edges.
struct Plan {
    nodes: BTreeMap<NodeId, Option<Hash>>,
    edges: BTreeMap<EdgeKey, Option<Hash>>,
    dropped: Vec<EdgeKey>,
    out: PendingWrites,
}

impl MergeOutcome {
    fn push_conflict(&mut self, conflict: Conflict, base: Option<Hash>, theirs: Option<Hash>) {
        self.conflicts.push(conflict.clone());
        self.slots.push(Slot {
            conflict,
            base,
            theirs,
            resolution: None,
        });
    }

    /// The kind of merge.
    pub fn kind(&self) -> MergeKind {
        self.kind
    }

    /// The branch the merge commits to.
    pub fn branch(&self) -> &str {
        self.branch.as_str()
    }

    /// Ours' head when the merge started (`None`: the branch had no commits).
    pub fn ours(&self) -> Option<CommitId> {
        self.ours
    }

    /// Theirs' head.
    pub fn theirs(&self) -> CommitId {
        self.theirs
    }

    /// The merge base (`None`: disjoint histories, or an empty ours).
    pub fn base(&self) -> Option<CommitId> {
        self.base
    }

    /// The nodes the merge changes cleanly on ours: id → theirs' object hash (`None`:
    /// deleted). Empty for a fast-forward or an up-to-date merge.
    pub fn node_changes(&self) -> &BTreeMap<NodeId, Option<Hash>> {
        &self.nodes
    }

    /// The edges the merge changes cleanly on ours, like [`MergeOutcome::node_changes`].
    pub fn edge_changes(&self) -> &BTreeMap<EdgeKey, Option<Hash>> {
        &self.edges
    }

    /// Every conflict, in key order (nodes, then edges). Indexes into this slice name
    /// conflicts in [`MergeOutcome::resolve`].
    pub fn conflicts(&self) -> &[Conflict] {
        &self.conflicts
    }

    /// The resolution chosen for conflict `index`, if any.
    pub fn resolution(&self, index: usize) -> Option<&Resolution> {
        self.slots.get(index).and_then(|s| s.resolution.as_ref())
    }

    /// Number of conflicts not resolved yet.
    pub fn unresolved(&self) -> usize {
        self.slots.iter().filter(|s| s.resolution.is_none()).count()
    }

    /// Sets the merge commit's author (default `cairn`).
    pub fn set_author(&mut self, author: impl Into<String>) -> Result<()> {
        self.author = writer::checked_author(author.into())?;
        Ok(())
    }

    /// Resolves every unresolved conflict with `strategy` (`Manual`: none).
    pub fn apply_strategy(&mut self, strategy: MergeStrategy) {
        let r = match strategy {
            MergeStrategy::Manual => return,
            MergeStrategy::Ours => Resolution::Ours,
            MergeStrategy::Theirs => Resolution::Theirs,
        };
        for s in &mut self.slots {
            s.resolution.get_or_insert_with(|| r.clone());
        }
    }

    /// Resolves conflict `index` (replacing an earlier resolution). A new value is
    /// canonicalised and validated now, like a transaction's put, including the
    /// repository's dimension per dense model; [`Error::InvalidArgument`] for an index out
    /// of range, a node value for an edge conflict (or the reverse), or a value whose id
    /// or key is not the conflict's.
    pub fn resolve(&mut self, index: usize, resolution: Resolution) -> Result<()> {
        let count = self.slots.len();
        let slot = self
            .slots
            .get(index)
            .ok_or_else(|| Error::InvalidArgument(format!("no conflict {index}: the merge has {count}")))?;
        let resolution = match (resolution, &slot.conflict) {
            (Resolution::Node(Some(mut n)), Conflict::Node { id, .. }) => {
                if &n.id != id {
                    return Err(Error::InvalidArgument(format!(
                        "conflict {index} is about node {id:?}, the value is node {:?}",
                        n.id
                    )));
                }
                n.canonicalize();
                n.validate()?;
                self.check_dims(index, &n)?;
                Resolution::Node(Some(n))
            }
            (Resolution::Edge(Some(mut e)), Conflict::Edge { key, .. }) => {
                if &e.key() != key {
                    return Err(Error::InvalidArgument(format!(
                        "conflict {index} is about edge {key}, the value is edge {}",
                        e.key()
                    )));
                }
                e.canonicalize();
                e.validate()?;
                Resolution::Edge(Some(e))
            }
            (r @ (Resolution::Node(None) | Resolution::Edge(None)), c) => {
                let fits = matches!(
                    (&r, c),
                    (Resolution::Node(_), Conflict::Node { .. }) | (Resolution::Edge(_), Conflict::Edge { .. })
                );
                if !fits {
                    return Err(Error::InvalidArgument(format!(
                        "conflict {index} is about {}, the resolution is for the other kind",
                        c.subject()
                    )));
                }
                r
            }
            (Resolution::Node(Some(_)) | Resolution::Edge(Some(_)), c) => {
                return Err(Error::InvalidArgument(format!(
                    "conflict {index} is about {}, the resolution is for the other kind",
                    c.subject()
                )))
            }
            (r @ (Resolution::Ours | Resolution::Theirs | Resolution::Base), _) => r,
        };
        self.slots[index].resolution = Some(resolution);
        Ok(())
    }

    /// Resolves the conflict on node `id`; [`Error::InvalidArgument`] (`no conflict on node
    /// ID`, whether or not the node exists) if the merge has no conflict on it.
    pub fn resolve_node(&mut self, id: &NodeId, resolution: Resolution) -> Result<()> {
        let index = self
            .conflicts
            .iter()
            .position(|c| matches!(c, Conflict::Node { id: i, .. } if i == id))
            .ok_or_else(|| self.no_conflict(format!("node {id}")))?;
        self.resolve(index, resolution)
    }

    /// Resolves the conflict on edge `key`; [`Error::InvalidArgument`] (`no conflict on edge
    /// (SRC)-[KIND]->(DST)`, whether or not the edge exists) if the merge has no conflict on
    /// it.
    pub fn resolve_edge(&mut self, key: &EdgeKey, resolution: Resolution) -> Result<()> {
        let index = self
            .conflicts
            .iter()
            .position(|c| matches!(c, Conflict::Edge { key: k, .. } if k == key))
            .ok_or_else(|| self.no_conflict(format!("edge {key}")))?;
        self.resolve(index, resolution)
    }

    /// The error for resolving `what` (`node ID` or `edge KEY`), on which the merge has no
    /// conflict.
    fn no_conflict(&self, what: String) -> Error {
        let has = match self.conflicts.len() {
            0 => "the merge has no conflicts".to_string(),
            n => format!("the merge has {n} conflict(s), on {}", self.conflict_list()),
        };
        Error::InvalidArgument(format!("no conflict on {what}: {has}"))
    }

    /// The conflicts' subjects, comma-separated (at most five, then a count).
    fn conflict_list(&self) -> String {
        const SHOWN: usize = 5;
        let mut list: Vec<String> = self.conflicts.iter().take(SHOWN).map(Conflict::subject).collect();
        if self.conflicts.len() > SHOWN {
            list.push(format!("{} more", self.conflicts.len() - SHOWN));
        }
        list.join(", ")
    }

    /// The per-model dimension rule for a node value resolving conflict `index`: the
    /// repository's dimension, or the one another value resolution introduces.
    fn check_dims(&self, index: usize, n: &Node) -> Result<()> {
        for (model, v) in &n.embeddings {
            let mut expected = self.repo.dense_dim(model)?;
            if expected.is_none() {
                expected = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != index)
                    .find_map(|(_, s)| match &s.resolution {
                        Some(Resolution::Node(Some(other))) => other.embeddings.get(model).map(Vec::len),
                        _ => None,
                    });
            }
            if let Some(d) = expected.filter(|d| *d != v.len()) {
                return Err(ValidationError::DimensionMismatch {
                    subject: Subject::Node(n.id.clone()),
                    model: model.clone(),
                    expected: d,
                    got: v.len(),
                }
                .into());
            }
        }
        Ok(())
    }

    /// What the merge did, for output: its kind and heads, the commit it made (`None`
    /// when conflicts stopped it), the change counts — after a commit, those of
    /// [`Repo::diff`] from ours' head to it, so resolved conflicts count — the
    /// `dropped_edges` (from [`MergeOutcome::dropped_edges`]) and the conflicts.
    pub fn summary(&self, commit: Option<CommitId>, dropped_edges: Vec<EdgeKey>) -> Result<MergeSummary> {
        let (node_changes, edge_changes) = match (self.ours, commit) {
            (Some(before), Some(after)) => {
                let d = self.repo.diff(&before, &after)?;
                (d.nodes.len(), d.edges.len())
            }
            _ => (self.nodes.len(), self.edges.len()),
        };
        Ok(MergeSummary {
            kind: self.kind,
            branch: self.branch.to_string(),
            ours: self.ours,
            theirs: self.theirs,
            base: self.base,
            commit,
            node_changes,
            edge_changes,
            dropped_edges,
            conflicts: self.conflicts.clone(),
        })
    }

    /// The edges committing now would drop because the merge deletes an endpoint (see
    /// [`Repo::merge`]), in key order. Unresolved conflicts count as
    /// ours' version. Cost: O(changes × log n).
    pub fn dropped_edges(&self) -> Result<Vec<EdgeKey>> {
        if self.kind != MergeKind::ThreeWay {
            return Ok(Vec::new());
        }
        Ok(self.plan()?.dropped)
    }

    /// The final change set on ours: clean changes, resolutions (unresolved conflicts
    /// keep ours), then edges whose endpoint is absent dropped.
    fn plan(&self) -> Result<Plan> {
        let repo = &self.repo;
        let objs = repo.objects();
        let ours = match self.ours {
            Some(o) => Some(repo.commit(&o)?),
            None => None,
        };
        let (node_tree, edge_tree, edge_in_tree) = ours
            .as_ref()
            .map_or((NodeTree::EMPTY, EdgeTree::EMPTY, ReverseEdgeTree::EMPTY), |c| {
                (NodeTree::of(c), EdgeTree::of(c), ReverseEdgeTree::of(c))
            });
        let mut nodes = self.nodes.clone();
        let mut edges = self.edges.clone();
        let mut out = PendingWrites::new();
        for slot in &self.slots {
            let value = match &slot.resolution {
                None | Some(Resolution::Ours) => continue,
                Some(Resolution::Theirs) => slot.theirs,
                Some(Resolution::Base) => slot.base,
                Some(Resolution::Node(v)) => v.as_ref().map(|n| out.add_node(n)),
                Some(Resolution::Edge(v)) => v.as_ref().map(|e| out.add_edge(e)),
            };
            match &slot.conflict {
                Conflict::Node { id, .. } => nodes.insert(id.clone(), value),
                Conflict::Edge { key, .. } => edges.insert(key.clone(), value),
            };
        }
        let exists = |id: &NodeId| -> Result<bool> {
            Ok(match nodes.get(id) {
                Some(v) => v.is_some(),
                None => node_tree.get(objs, id)?.is_some(),
            })
        };
        // Edges the merge puts whose endpoint is absent from the result.
        let mut dropped = Vec::new();
        for (key, value) in edges.iter_mut() {
            if value.is_some() && !(exists(&key.source)? && exists(&key.target)?) {
                *value = None;
                dropped.push(key.clone());
            }
        }
        // Ours' edges incident to nodes the merge deletes: the delete_node cascade.
        for (id, value) in &nodes {
            if value.is_some() {
                continue;
            }
            let leaving = edge_tree.edges_from(objs, id)?;
            let arriving = edge_in_tree.edges_to(objs, id)?;
            for (key, _) in leaving.into_iter().chain(arriving) {
                if edges.get(&key).is_some_and(Option::is_none) {
                    continue; // deleted by the merge already (or dropped above)
                }
                edges.insert(key.clone(), None);
                dropped.push(key);
            }
        }
        dropped.sort();
        dropped.dedup();
        Ok(Plan {
            nodes,
            edges,
            dropped,
            out,
        })
    }

    /// Commits the merge with the current time as timestamp (clamped to be no earlier
    /// than either parent's). See [`MergeOutcome::commit_at`].
    pub fn commit(&self, message: &str) -> Result<CommitId> {
        let mut ts = writer::now_ms();
        for c in self.ours.iter().chain([&self.theirs]) {
            ts = ts.max(self.repo.commit(c)?.timestamp_ms);
        }
        self.commit_at(message, ts)
    }

    /// Commits the merge with an explicit timestamp; returns the branch's new head.
    ///
    /// - [`MergeKind::UpToDate`]: changes nothing; returns ours' head.
    /// - [`MergeKind::FastForward`]: moves the branch to theirs' head (no commit is made;
    ///   `message` and the timestamp are unused).
    /// - [`MergeKind::ThreeWay`]: refused with [`Error::MergeConflicts`] while conflicts
    ///   are unresolved and with [`Error::TimestampBeforeParent`] for a timestamp before
    ///   either parent's; otherwise writes a commit with parents `[ours, theirs]`.
    ///
    /// The branch moves by compare-and-swap from the head the merge started at:
    /// [`Error::Conflict`] if another writer moved it since (merge again).
    pub fn commit_at(&self, message: &str, timestamp_ms: i64) -> Result<CommitId> {
        writer::check_message(message)?;
        match self.kind {
            MergeKind::UpToDate => Ok(self.ours.expect("an up-to-date merge has ours' head")),
            MergeKind::FastForward => {
                let _publishing = self.repo.inner.gc_lock.read();
                self.ensure_present(self.theirs)?;
                let c = self.repo.commit(&self.theirs)?;
                writer::move_branch(&self.repo, &self.branch, self.ours, self.theirs, &c, &BTreeMap::new())
            }
            MergeKind::ThreeWay => self.commit_three_way(message, timestamp_ms),
        }
    }

    /// Theirs' commit (and so, as gc deletes commits before what they reference, all it
    /// references) must still be stored: it may have become unreachable and collected
    /// since the merge was computed.
    fn ensure_present(&self, id: CommitId) -> Result<()> {
        if self.repo.store().contains(id.hash())? {
            Ok(())
        } else {
            Err(GraphError::NotFound {
                kind: "commit",
                hash: *id.hash(),
            }
            .into())
        }
    }

    fn commit_three_way(&self, message: &str, timestamp_ms: i64) -> Result<CommitId> {
        let unresolved = self.unresolved();
        if unresolved > 0 {
            return Err(Error::MergeConflicts(unresolved));
        }
        let repo = &self.repo;
        let ours_id = self.ours.expect("a three-way merge has ours' head");
        let oc = repo.commit(&ours_id)?;
        let tc = repo.commit(&self.theirs)?;
        let parent_ms = oc.timestamp_ms.max(tc.timestamp_ms);
        if timestamp_ms < parent_ms {
            return Err(Error::TimestampBeforeParent {
                timestamp_ms,
                parent_ms,
            });
        }
        let dims = self.resolution_dims()?;

        // Held until the ref has moved: gc never collects the objects of a commit being
        // published (see gc.rs).
        let publishing = repo.inner.gc_lock.read();
        self.ensure_present(self.theirs)?;
        if let Some(b) = self.base {
            self.ensure_present(b)?;
        }
        let Plan { nodes, edges, out, .. } = self.plan()?;
        let change = ChangeSet { nodes, edges, dims };
        let header = CommitHeader {
            parents: vec![ours_id, self.theirs],
            base: Some(&oc),
            author: &self.author,
            message,
            timestamp_ms,
        };
        writer::write_commit(repo, &publishing, &self.branch, &change, out, header)
    }

    /// Dense models the resolution values carry: model → (dimension, a node carrying
    /// it), registered on commit. Checked against the registry again here: it may have
    /// changed since `resolve`.
    fn resolution_dims(&self) -> Result<BTreeMap<String, (usize, NodeId)>> {
        let mut dims: BTreeMap<String, (usize, NodeId)> = BTreeMap::new();
        for slot in &self.slots {
            let Some(Resolution::Node(Some(n))) = &slot.resolution else {
                continue;
            };
            for (model, v) in &n.embeddings {
                let expected = match self.repo.dense_dim(model)? {
                    Some(d) => Some(d),
                    None => dims.get(model).map(|(d, _)| *d),
                };
                check_dimension(&n.id, model, expected, v.len())?;
                dims.entry(model.clone()).or_insert((v.len(), n.id.clone()));
            }
        }
        Ok(dims)
    }
}

impl Conflict {
    /// What the conflict is about: `node ID` or `edge (SOURCE)-[KIND]->(TARGET)`.
    pub fn subject(&self) -> String {
        match self {
            Conflict::Node { id, .. } => format!("node {id}"),
            Conflict::Edge { key, .. } => format!("edge {key}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(b: u8) -> Option<Hash> {
        Some(Hash::from_bytes([b; 32]))
    }

    fn ch(key: &str, before: Option<Hash>, after: Option<Hash>) -> TreeChange<String> {
        TreeChange {
            key: key.to_string(),
            before,
            after,
        }
    }

    /// (key, Ok(after)) for a take, (key, Err((base, ours, theirs))) for a conflict.
    type Out = (
        String,
        std::result::Result<Option<Hash>, (Option<Hash>, Option<Hash>, Option<Hash>)>,
    );

    fn run(ours: Vec<TreeChange<String>>, theirs: Vec<TreeChange<String>>) -> Vec<Out> {
        three_way(ours, theirs, String::cmp)
            .into_iter()
            .map(|m| match m {
                KeyMerge::Take { key, after } => (key, Ok(after)),
                KeyMerge::Conflict {
                    key,
                    base,
                    ours,
                    theirs,
                } => (key, Err((base, ours, theirs))),
            })
            .collect()
    }

    #[test]
    fn only_theirs_changes_are_taken() {
        let got = run(
            vec![ch("a", h(1), h(2))],
            vec![ch("b", None, h(3)), ch("c", h(4), None)],
        );
        assert_eq!(got, [("b".to_string(), Ok(h(3))), ("c".to_string(), Ok(None))]);
    }

    #[test]
    fn the_same_change_on_both_sides_is_no_conflict_and_needs_nothing() {
        let got = run(
            vec![ch("a", h(1), h(2)), ch("d", h(5), None)],
            vec![ch("a", h(1), h(2)), ch("d", h(5), None)],
        );
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn different_changes_to_one_key_conflict_with_all_three_values() {
        let got = run(
            vec![ch("a", h(1), h(2)), ch("b", h(3), None), ch("c", None, h(6))],
            vec![ch("a", h(1), h(9)), ch("b", h(3), h(4)), ch("c", None, h(7))],
        );
        assert_eq!(
            got,
            [
                ("a".to_string(), Err((h(1), h(2), h(9)))),
                ("b".to_string(), Err((h(3), None, h(4)))),
                ("c".to_string(), Err((None, h(6), h(7)))),
            ]
        );
    }

    #[test]
    fn interleaved_keys_are_matched_in_order() {
        // Ours' keys before, between and after theirs' are skipped; equal keys meet.
        let got = run(
            vec![
                ch("a", None, h(1)),
                ch("c", None, h(2)),
                ch("e", None, h(3)),
                ch("z", None, h(4)),
            ],
            vec![
                ch("b", None, h(5)),
                ch("c", None, h(2)),
                ch("d", None, h(6)),
                ch("e", None, h(7)),
            ],
        );
        assert_eq!(
            got,
            [
                ("b".to_string(), Ok(h(5))),
                ("d".to_string(), Ok(h(6))),
                ("e".to_string(), Err((None, h(3), h(7)))),
            ]
        );
    }

    #[test]
    fn empty_sides() {
        assert!(run(vec![ch("a", None, h(1))], vec![]).is_empty());
        assert_eq!(run(vec![], vec![ch("a", None, h(1))]), [("a".to_string(), Ok(h(1)))]);
    }
}
