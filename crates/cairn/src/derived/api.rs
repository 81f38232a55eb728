//! The repository's face onto its derived data: [`Repo`]'s index and time-index methods.
//!
//! Each resolves what only the repository knows — a revision, a branch's head — and hands
//! a [`CommitId`] to [`DerivedData`](super::DerivedData), which does the work. Nothing
//! here reads derived state itself.

use std::sync::Arc;

use cairn_core::{CommitId, Hash};
use cairn_index::{CommitIndexes, IndexNeeds, IndexParams};

use crate::derived::{IndexReport, IndexStats};
use crate::error::Result;
use crate::repo::Repo;

impl Repo {
    /// The parameters indexes are built with.
    pub fn index_params(&self) -> &IndexParams {
        self.derived().params()
    }

    /// Sets the memory budget of this handle's derived data (default
    /// [`DEFAULT_MEMORY_BUDGET`](crate::DEFAULT_MEMORY_BUDGET), 1 GiB). It bounds the
    /// index part cache: parts no cached view holds are evicted beyond it (and loaded from
    /// the store again when needed). A quarter of it bounds each dense model's exact `f32`
    /// rows held in memory: beyond that, on a store that reads value ranges (the segment
    /// store), a view keeps the rows' int8 codes and reads each row rescoring needs from
    /// the store; on the segment store those codes stay where the store holds them, read
    /// through a mapping of the file and the page cache, not copied into the process
    /// (storage-format §7.3.4). A view's other parts stay in memory while the view is
    /// used. Results are the same bytes under every budget; shrinking it evicts at once.
    ///
    /// ```
    /// let repo = cairn::Repo::in_memory()?;
    /// repo.set_memory_budget(256 << 20);
    /// assert_eq!(repo.index_stats().memory_budget, 256 << 20);
    /// # Ok::<(), cairn::Error>(())
    /// ```
    pub fn set_memory_budget(&self, bytes: usize) {
        self.derived().set_memory_budget(bytes);
    }

    /// What the index cache holds and what this handle has stored.
    pub fn index_stats(&self) -> IndexStats {
        self.derived().stats()
    }

    /// Builds (or loads) every index part of `rev` — core, text, sparse and dense parts,
    /// edge chunks, and with `graphs` the HNSW unit graphs of every dense model — and
    /// stores what was missing, so later queries (in this or another process) start warm.
    /// Fails with [`Error::Store`](crate::Error::Store) (say `NoSpace`) if what was built
    /// could not be stored; it is then kept in this process's memory only.
    pub fn build_indexes_with(&self, rev: &str, graphs: bool) -> Result<IndexReport> {
        let id = self.resolve(rev)?;
        self.derived().build(id, graphs)
    }

    /// [`Repo::build_indexes_with`] without unit graphs.
    pub fn build_indexes(&self, rev: &str) -> Result<IndexReport> {
        self.build_indexes_with(rev, false)
    }

    /// The whole index of `rev`: every part (text, every dense and sparse model, edges),
    /// built, loaded or cached; unit graphs are left out (see
    /// [`Repo::build_indexes_with`]). A read-only view, a pure function of the commit's
    /// content: [`CommitIndexes::digest`] is the same for the same content in any
    /// repository, history or process. Retrieval ([`Repo::retrieve`]) reads it for you.
    pub fn indexes(&self, rev: &str) -> Result<Arc<CommitIndexes>> {
        let id = self.resolve(rev)?;
        self.derived().whole_view(&id)
    }

    /// The keys of the node chunks `rev`'s index is cut into, in key order: a function of
    /// the commit's nodes and the index parameters alone, the same in every repository
    /// and history holding those nodes (`storage-format.md` §7.2). Builds what it must.
    pub fn index_chunk_keys(&self, rev: &str) -> Result<Vec<Hash>> {
        let id = self.resolve(rev)?;
        self.derived().chunk_keys(&id)
    }

    /// The view of commit `id` with every part `needs` names (built, loaded or cached).
    /// Support for the crate's own tests and benches (the index's internal parts), not
    /// part of the API: use [`Repo::indexes`].
    #[doc(hidden)]
    pub fn indexes_at(&self, id: &CommitId, needs: &IndexNeeds) -> Result<Arc<CommitIndexes>> {
        Ok(self.derived().index_view(id, needs)?.0)
    }

    /// Deletes every derived value the store holds — index chunks, unit graphs, manifests,
    /// time indexes, and those of retired formats — and empties this handle's index
    /// cache; returns how many values were deleted. Objects, refs and the reflog are not
    /// touched, and every query answers as before (after building its indexes again).
    /// For benchmarks of cold builds, and to give back the disk they take (`cairn gc`
    /// then compacts the segments); `cairn index drop` on the command line.
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?).with_text("how wings stall"))?;
    /// tx.commit("a")?;
    /// let before = repo.retrieve().text("stall").execute()?;
    /// assert!(repo.drop_derived()? > 0);
    /// let after = repo.retrieve().text("stall").execute()?;
    /// assert_eq!(before, after);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn drop_derived(&self) -> Result<u64> {
        self.derived().drop_all()
    }

    /// Deletes every damaged derived entry [`Repo::fsck`] would report (they are rebuilt
    /// from the objects on next use) and drops the in-memory index cache; returns the
    /// entries deleted, described as `fsck` describes them.
    pub fn repair_derived(&self) -> Result<Vec<String>> {
        self.derived().repair()
    }

    /// The commit that was the head of `branch` at transaction time `time_ms`: the last
    /// commit on the branch's first-parent chain with timestamp ≤ `time_ms` (`None` if the
    /// branch's first commit is later). O(log n) reads of the branch's time index.
    pub fn as_of(&self, branch: &str, time_ms: i64) -> Result<Option<CommitId>> {
        let Some(head) = self.branch_head(branch)? else {
            return Ok(None);
        };
        self.derived().head_as_of(branch, head, time_ms)
    }
}
