//! Progress of long steps: a repository handle reports how far an index build, an
//! embedding run, `gc` or `fsck` has got to an observer set with [`Repo::set_progress`].
//!
//! Reports are coarse (one per chunk, unit graph, batch or few thousand objects, never
//! one per node), cost nothing while no observer is set, and never change a result: a
//! step computes the same bytes with or without an observer, with any number of threads.
//!
//! Each run of a [`Step`] starts with a report at `done == 0` and, when its total is
//! known and it succeeds, ends with a report at `done == total`; between them `done` only
//! grows (reports from parallel workers are delivered one at a time, in order). A step
//! can run more than once in one call (the edge chunks of each direction, the unit
//! graphs of each dense model, the parts of each kind a query needs), and the
//! index build runs inside a retrieval's first query of a commit as well as in
//! [`Repo::build_indexes_with`].

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::repo::Repo;

/// An observer of [`Progress`] reports (see [`Repo::set_progress`]). It is called from
/// whichever thread does the work, one call at a time, sometimes while the repository
/// holds an internal lock: it should return quickly and must not use the repository.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// A long step that reports its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Step {
    /// A commit's node chunks, each loaded from the store or built from its nodes (every
    /// part of a built chunk at once). Counted in chunk spans of the node tree.
    IndexChunks,
    /// One kind of part (text, a sparse or a dense model) of every node chunk a query
    /// needs, loaded or taken from the chunks just built. Counted in chunks.
    IndexParts,
    /// The HNSW unit graphs of one dense model, loaded or built. Counted in units.
    IndexGraphs,
    /// The edge chunks of one direction (out, then in), loaded or built. Counted in chunk
    /// spans of the edge tree.
    IndexEdges,
    /// Writing the derived values an index build made to the store. Counted in values.
    IndexStore,
    /// Embedding nodes ([`Repo::embed_nodes`]). Counted in nodes.
    Embed,
    /// `gc`: reading every stored object no branch or tag reaches. Counted in objects
    /// (the total is every stored object).
    GcScan,
    /// `gc`: deleting the unreachable objects. Counted in objects.
    GcSweep,
    /// `fsck`: reading and decoding every stored derived entry. Counted in entries.
    FsckDerived,
    /// `fsck`: reading, hashing and decoding every stored object. Counted in objects.
    FsckObjects,
    /// `fsck`: walking every commit a branch or tag reaches and checking its trees.
    /// Counted in commits; no total.
    FsckCommits,
}

impl Step {
    /// A short description (`indexing node chunks`), for progress bars.
    pub fn label(self) -> &'static str {
        match self {
            Step::IndexChunks => "indexing node chunks",
            Step::IndexParts => "loading index parts",
            Step::IndexGraphs => "building HNSW unit graphs",
            Step::IndexEdges => "indexing edge chunks",
            Step::IndexStore => "storing indexes",
            Step::Embed => "embedding nodes",
            Step::GcScan => "gc: reading unreachable objects",
            Step::GcSweep => "gc: deleting unreachable objects",
            Step::FsckDerived => "fsck: checking derived data",
            Step::FsckObjects => "fsck: checking objects",
            Step::FsckCommits => "fsck: checking commits and trees",
        }
    }

    /// True for the steps of an index build (`Index*`).
    pub fn is_index_build(self) -> bool {
        matches!(
            self,
            Step::IndexChunks | Step::IndexParts | Step::IndexGraphs | Step::IndexEdges | Step::IndexStore
        )
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One progress report: how much of a run of `step` is done.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// The step.
    pub step: Step,
    /// Units done so far in this run (0 at its start).
    pub done: u64,
    /// Units in this run, when known beforehand.
    pub total: Option<u64>,
}

impl Repo {
    /// Sets (or, with `None`, removes) the observer this handle and its clones report the
    /// progress of long steps to: index builds (including the one a commit's first
    /// retrieval runs), [`Repo::embed_nodes`], [`Repo::gc`] and [`Repo::fsck`]. See
    /// [`Progress`] for what is reported and when. Results are the same with or without
    /// an observer.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use cairn::{Node, NodeId, Repo, Step};
    ///
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// for i in 0..500 {
    ///     tx.put_node(Node::new(NodeId::new(format!("n{i:04}"))?).with_text("some text"))?;
    /// }
    /// tx.commit("five hundred")?;
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// repo.set_progress(Some(Arc::new(move |p: &cairn::Progress| {
    ///     log.lock().unwrap().push((p.step, p.done, p.total));
    /// })));
    /// repo.build_indexes("HEAD")?;
    /// repo.set_progress(None);
    ///
    /// let seen = seen.lock().unwrap();
    /// let last = seen.iter().rev().find(|(s, ..)| *s == Step::IndexChunks).unwrap();
    /// assert_eq!(Some(last.1), last.2); // the run ended at its total
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_progress(&self, observer: Option<ProgressFn>) {
        self.inner.progress.set(observer);
    }

    /// Starts a run of `step`: reports `done == 0` to the observer, if there is one.
    pub(crate) fn meter(&self, step: Step, total: Option<u64>) -> Meter {
        self.inner.progress.meter(step, total)
    }
}

/// The observer a repository handle, its clones and its derived data report to: one slot,
/// shared, set by [`Repo::set_progress`].
#[derive(Default)]
pub(crate) struct ProgressHook {
    observer: RwLock<Option<ProgressFn>>,
}

impl ProgressHook {
    /// Sets (or removes) the observer.
    pub(crate) fn set(&self, observer: Option<ProgressFn>) {
        *self.observer.write() = observer;
    }

    /// Starts a run of `step`: reports `done == 0` to the observer, if there is one.
    pub(crate) fn meter(&self, step: Step, total: Option<u64>) -> Meter {
        let observer = self.observer.read().clone();
        Meter::new(observer, step, total)
    }
}

/// One run of a step being reported (a no-op without an observer).
pub(crate) struct Meter {
    inner: Option<(ProgressFn, Mutex<u64>)>,
    step: Step,
    total: Option<u64>,
}

impl Meter {
    fn new(observer: Option<ProgressFn>, step: Step, total: Option<u64>) -> Meter {
        if let Some(f) = &observer {
            f(&Progress { step, done: 0, total });
        }
        Meter {
            inner: observer.map(|f| (f, Mutex::new(0))),
            step,
            total,
        }
    }

    /// `n` more units done. Reports from many threads are delivered one at a time, in
    /// order of `done`.
    pub(crate) fn add(&self, n: u64) {
        if let Some((f, done)) = &self.inner {
            let mut done = done.lock();
            *done += n;
            f(&Progress {
                step: self.step,
                done: *done,
                total: self.total,
            });
        }
    }

    /// One more unit done in a sequential loop over many small units: counted in
    /// `pending`, reported every [`COARSE`] units (call [`Meter::flush`] after the loop).
    pub(crate) fn tick(&self, pending: &mut u64) {
        *pending += 1;
        if *pending >= COARSE {
            self.add(std::mem::take(pending));
        }
    }

    /// Reports what [`Meter::tick`] has counted and not reported yet.
    pub(crate) fn flush(&self, pending: &mut u64) {
        if *pending > 0 {
            self.add(std::mem::take(pending));
        }
    }
}

/// Units of a fine-grained loop (objects, derived entries) per report.
pub(crate) const COARSE: u64 = 4096;
