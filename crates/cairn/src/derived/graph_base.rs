//! Which commit's unit graphs an approximate search walks.
//!
//! A unit's graph is a function of the unit's chunks, so any change inside a unit (one
//! node edited among its ~32k) gives it a new key and a graph to build: about 4 s at 1M
//! nodes on two cores, paid by the next approximate query after every commit. Instead, a
//! commit `C` walks the unit graphs of a **base** commit `B(C)`, one of its first-parent
//! ancestors, chosen by history alone:
//!
//! 1. the candidates are `C`'s first-parent ancestors at `C`'s generation rounded down to
//!    a multiple of each stride of [`BASE_STRIDES`] (64, then 8), then the other ancestors
//!    after the last of those, oldest first (so that after a commit that changes much,
//!    the commits that follow share its graphs instead of each building their own);
//! 2. the first candidate whose chunks differ from `C`'s by at most
//!    [`overlay_limit`]`(C's chunks)` (chunks `C` has that it lacks, plus the reverse) is
//!    the base; if none is, or a candidate holds `C`'s own tree, `C` walks its own units.
//!
//! The search then walks the base's unit graphs over the base's own dense parts, returns
//! only rows of chunks `C` has (a chunk `C` lacks is walked through), and scans `C`'s
//! chunks the base lacks exactly (`cairn_index`'s `set_base_graphs`). So graphs are built
//! at about one commit in 8 or 64, a query after a 1-node commit builds none, and the
//! result is still a function of the commit — its content and its first-parent history
//! — the same bytes in every process. Two commits with the same tree and different
//! histories may choose different bases; the view cache keys graphs by their origin.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use cairn_core::{CommitId, Hash};

use crate::derived::build::Ctx;
use crate::derived::keys::TreeKind;
use crate::derived::spans::ChunkList;
use crate::error::Result;
use crate::repo::Repo;

/// Generation strides of base candidates, most preferred first.
pub(crate) const BASE_STRIDES: [u64; 2] = [64, 8];

/// The most chunks a commit may differ from its base by (new plus gone): 256, or 1/32 of
/// its chunks on a larger commit (at 1M nodes, ~490 chunks, ~31k rows scanned exactly
/// at most).
pub(crate) fn overlay_limit(chunks: usize) -> usize {
    (chunks / 32).max(256)
}

/// Decisions remembered per commit (they never change: a commit's history is fixed).
const MEMO: usize = 4096;

/// A commit's graph base: `None` when it walks its own units.
pub(crate) type GraphBase = Option<(Hash, Arc<ChunkList>)>;

impl Repo {
    /// The remembered base root of commit `id`, if decided (`Some(None)`: its own units).
    pub(super) fn known_graph_base(&self, id: &CommitId) -> Option<Option<Hash>> {
        self.inner.derived.graph_bases.lock().get(id).copied()
    }

    /// The base whose units commit `id` (with node chunks `list`) walks (module docs).
    pub(super) fn graph_base(&self, ctx: &Ctx, id: &CommitId, list: &ChunkList) -> Result<GraphBase> {
        match self.known_graph_base(id) {
            Some(None) => return Ok(None),
            Some(Some(root)) => return Ok(Some((root, self.chunk_list(ctx, TreeKind::Nodes, Some(root))?))),
            None => {}
        }
        let c = self.commit_shared(id)?;
        let g = c.generation;
        // The candidates' generations, most preferred first: the strides' multiples, then
        // the rest of the last stride's window, oldest first.
        let mut order: Vec<u64> = BASE_STRIDES.iter().map(|s| g - g % s).collect();
        let last = *order.last().unwrap_or(&g);
        order.extend(last + 1..g);
        order.dedup();
        let oldest = order.iter().copied().min().unwrap_or(g);
        // Their trees, walking the first-parent chain down to the oldest.
        let mut roots: HashMap<u64, Option<Hash>> = HashMap::new();
        let mut at = Arc::clone(&c);
        while at.generation > oldest {
            let Some(p) = at.parents.first().copied() else { break };
            at = self.commit_shared(&p)?;
            roots.insert(at.generation, at.node_root);
        }
        let mut chosen = None;
        for t in order {
            // A candidate that is the commit itself, or holds the same tree, means the
            // commit's own units; a missing one (a broken chain) is skipped.
            if t >= g {
                break;
            }
            let Some(root) = roots.get(&t).copied() else { continue };
            if root == c.node_root {
                break;
            }
            let Some(root) = root else { continue };
            let theirs = self.chunk_list(ctx, TreeKind::Nodes, Some(root))?;
            if differing(list, &theirs) <= overlay_limit(list.len()) {
                chosen = Some((root, theirs));
                break;
            }
        }
        let mut memo = self.inner.derived.graph_bases.lock();
        if memo.len() >= MEMO {
            memo.clear();
        }
        memo.insert(*id, chosen.as_ref().map(|b| b.0));
        Ok(chosen)
    }
}

/// Chunks one list has and the other lacks, both ways.
fn differing(a: &ChunkList, b: &ChunkList) -> usize {
    let keys: HashSet<Hash> = a.iter().map(|c| c.key).collect();
    let shared = b.iter().filter(|c| keys.contains(&c.key)).count();
    (a.len() - shared) + (b.len() - shared)
}

/// Each chunk key's position in `list`.
pub(super) fn positions(list: &ChunkList) -> HashMap<Hash, usize> {
    list.iter().enumerate().map(|(i, c)| (c.key, i)).collect()
}
