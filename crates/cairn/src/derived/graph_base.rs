//! Which commit's unit graphs an approximate search walks.
//!
//! A unit's graph is a function of the unit's chunks, so any change inside a unit (one
//! node edited among its ~32k) gives it a new key and a graph to build: about 4 s at 1M
//! nodes on two cores, paid by the next approximate query after every commit. Instead, a
//! commit `C` walks the unit graphs of a **base** commit `B(C)`, one of its first-parent
//! ancestors, chosen by history alone:
//!
//! 1. the candidates are `C`'s first-parent ancestors at `C`'s generation rounded down to
//!    a multiple of each stride of [`BASE_STRIDES`] (512, 64, then 8), then the other ancestors
//!    after the last of those, oldest first (so that after a commit that changes much,
//!    the commits that follow share its graphs instead of each building their own);
//! 2. the first candidate whose chunks differ from `C`'s by at most
//!    [`overlay_limit`]`(C's chunks)` (chunks `C` has that it lacks, plus the reverse) is
//!    the base; if none is, or a candidate holds `C`'s own tree, `C` walks its own units.
//!
//! The search then walks the base's unit graphs over the base's own dense parts, returns
//! only rows of chunks `C` has (a chunk `C` lacks is walked through), and scans `C`'s
//! chunks the base lacks exactly (`cairn_index`'s `set_base_graphs`). So graphs are built
//! only when the base moves (when the preferred candidate moves on, or drifts past the
//! bound), a query after a 1-node commit builds none, and the
//! result is still a function of the commit — its content and its first-parent history
//! — the same bytes in every process. Two commits with the same tree and different
//! histories may choose different bases; the view cache keys graphs by their origin.

use std::sync::Arc;

use cairn_core::{Commit, CommitId, Hash};
use rayon::prelude::*;

use crate::derived::build::Ctx;
use crate::derived::hashed::KeySet;
use crate::derived::keys::TreeKind;
use crate::derived::list::Donor;
use crate::derived::spans::{ChunkList, SpanMemo};
use crate::derived::DerivedData;
use crate::error::Result;

/// Generation strides of base candidates, most preferred first.
pub(crate) const BASE_STRIDES: [u64; 3] = [512, 64, 8];

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

impl DerivedData {
    /// The remembered base root of commit `id`, if decided (`Some(None)`: its own units).
    pub(super) fn known_graph_base(&self, id: &CommitId) -> Option<Option<Hash>> {
        self.graph_bases.lock().get(id).copied()
    }

    /// The base whose units commit `id` (with node chunks `list`) walks (module docs).
    pub(super) fn graph_base(
        &self,
        ctx: &Ctx,
        id: &CommitId,
        list: &Arc<ChunkList>,
        memo: &Arc<SpanMemo>,
        change: Option<&ListChange<'_>>,
    ) -> Result<GraphBase> {
        // A candidate's list takes over from the commit's own every subtree the two trees
        // share (a base is a few hundred commits back at most): at 1M nodes a cold
        // process's first query walked, keyed and matched all ~15,600 chunks of the base's
        // tree again.
        let donor = Donor::of_list(Arc::clone(list), Arc::clone(memo));
        let base_list = |root: Hash| -> Result<Arc<ChunkList>> {
            Ok(self
                .chunk_list_with(ctx, TreeKind::Nodes, Some(root), Some(&donor), None)?
                .0)
        };
        match self.known_graph_base(id) {
            Some(None) => return Ok(None),
            Some(Some(root)) => return Ok(Some((root, base_list(root)?))),
            None => {}
        }
        let c = self.commit(id)?;
        let g = c.generation;
        // The candidates, most preferred first: the strides' multiples, then the rest of
        // the last stride's window, oldest first (at most 7 first-parent steps back).
        let mut roots: Vec<(u64, Option<Hash>)> = self.stride_ancestors(id, &c)?.into_iter().flatten().collect();
        let last = BASE_STRIDES.last().map_or(g, |s| g - g % s);
        let mut window = Vec::new();
        let mut at = Arc::clone(&c);
        while at.generation > last + 1 {
            let Some(p) = at.parents.first().copied() else { break };
            at = self.commit(&p)?;
            window.push((at.generation, at.node_root));
        }
        window.reverse();
        roots.extend(window);
        roots.dedup_by_key(|r| r.0);
        let mut chosen = None;
        for (t, root) in roots {
            // A candidate that is the commit itself, or holds the same tree, means the
            // commit's own units (one missing from a broken chain is not listed).
            if t >= g {
                break;
            }
            if root == c.node_root {
                break;
            }
            let Some(root) = root else { continue };
            let theirs = base_list(root)?;
            let keys = self.candidate_keys(root, &theirs);
            if self.differing(list, c.node_root, root, &keys, change) <= overlay_limit(list.len()) {
                chosen = Some((root, theirs));
                break;
            }
        }
        let mut memo = self.graph_bases.lock();
        if memo.len() >= MEMO {
            memo.clear();
        }
        memo.insert(*id, chosen.as_ref().map(|b| b.0));
        Ok(chosen)
    }
}

impl DerivedData {
    /// Commit `id`'s first-parent ancestors at its generation rounded down to each stride
    /// of [`BASE_STRIDES`] (`None`: the chain is shorter), with their node trees: from the
    /// parent's when known (the same ancestor, unless the commit is itself a multiple),
    /// else by a walk of at most the largest stride.
    fn stride_ancestors(&self, id: &CommitId, c: &Commit) -> Result<StrideAncestors> {
        if let Some(known) = self.stride_ancestors.lock().get(id) {
            return Ok(*known);
        }
        let g = c.generation;
        let targets = BASE_STRIDES.map(|s| g - g % s);
        let parent = c.parents.first().copied();
        let from_parent = parent.and_then(|p| self.stride_ancestors.lock().get(&p).copied());
        let out = match from_parent {
            Some(theirs) => {
                let mut out = theirs;
                for (i, t) in targets.iter().enumerate() {
                    if *t == g {
                        out[i] = Some((g, c.node_root));
                    }
                }
                out
            }
            None => {
                let mut out: StrideAncestors = [None; BASE_STRIDES.len()];
                let oldest = targets.iter().copied().min().unwrap_or(g);
                let mut generation = g;
                let mut root = c.node_root;
                let mut next = parent;
                loop {
                    for (i, t) in targets.iter().enumerate() {
                        if *t == generation {
                            out[i] = Some((generation, root));
                        }
                    }
                    if generation <= oldest {
                        break;
                    }
                    let Some(p) = next else { break };
                    let pc = self.commit(&p)?;
                    (generation, root, next) = (pc.generation, pc.node_root, pc.parents.first().copied());
                }
                out
            }
        };
        let mut memo = self.stride_ancestors.lock();
        if memo.len() >= MEMO {
            memo.clear();
        }
        memo.insert(*id, out);
        Ok(out)
    }
}

/// A commit's ancestor (generation, node tree) per stride of [`BASE_STRIDES`].
pub(crate) type StrideAncestors = [Option<(u64, Option<Hash>)>; BASE_STRIDES.len()];

/// Candidates whose chunk keys a handle keeps: one per stride, and one more.
const KEPT_CANDIDATES: usize = BASE_STRIDES.len() + 1;

impl DerivedData {
    /// The chunk keys of candidate `root` (chunks `list`): the last [`KEPT_CANDIDATES`]
    /// candidates' kept, so that the commits that test the same candidates one after
    /// another (every commit until the base moves: those that drifted too far, then the
    /// base) hash their ~15,600 keys each (at 1M nodes) once, not every commit.
    fn candidate_keys(&self, root: Hash, list: &ChunkList) -> Arc<KeySet> {
        let mut kept = self.candidate_keys.lock();
        if let Some(i) = kept.iter().position(|(r, _)| *r == root) {
            let hit = kept.remove(i);
            kept.push(hit);
        } else {
            if kept.len() == KEPT_CANDIDATES {
                kept.remove(0);
            }
            kept.push((root, Arc::new(list.iter().map(|c| c.key).collect())));
        }
        Arc::clone(&kept.last().expect("just pushed").1)
    }
}

/// How a commit's chunk list came from its donor's (a cached view's list): the donor's
/// tree, its list, and each chunk's position in it (`None`: a chunk the donor lacks).
pub(crate) struct ListChange<'a> {
    pub(crate) donor_root: Option<Hash>,
    pub(crate) donor: &'a ChunkList,
    pub(crate) from_donor: &'a [Option<usize>],
}

/// A list's (its node tree's) count against a candidate's: (list root, candidate root,
/// chunks differing).
pub(crate) type Counted = (Option<Hash>, Hash, usize);

/// Counts kept: a few commits' worth of candidates.
const KEPT_COUNTS: usize = 4 * KEPT_CANDIDATES;

impl DerivedData {
    /// Chunks `list` (of node tree `root`) has that candidate `cand` (its chunk keys
    /// `keys`) lacks, and the reverse. From the donor's count against the same candidate
    /// when it is known, moved by the chunks the commit added and dropped (lookups for the
    /// change only, found by one pass over the donor positions — at 1M nodes a few lookups
    /// instead of ~15,600 every commit); else every chunk looked up, on every core. The
    /// same count either way (debug builds check).
    fn differing(
        &self,
        list: &ChunkList,
        root: Option<Hash>,
        cand: Hash,
        keys: &KeySet,
        change: Option<&ListChange<'_>>,
    ) -> usize {
        let known = |r: Option<Hash>| {
            let counts = self.candidate_counts.lock();
            counts.iter().find(|k| k.0 == r && k.1 == cand).map(|k| k.2)
        };
        let moved = change
            .and_then(|ch| Some((ch, known(ch.donor_root)?)))
            .and_then(|(ch, before)| {
                // d(new) = d(donor) + Σ added (+1 if the candidate lacks it, else −1)
                //                   + Σ dropped (−1 if the candidate lacks it, else +1).
                let mut kept = vec![false; ch.donor.len()];
                let mut d = before as i64;
                for (c, from) in list.iter().zip(ch.from_donor) {
                    match from {
                        Some(i) => {
                            if let Some(k) = kept.get_mut(*i) {
                                *k = true;
                            }
                        }
                        None => d += if keys.contains(&c.key) { -1 } else { 1 },
                    }
                }
                for (c, _) in ch.donor.iter().zip(&kept).filter(|(_, k)| !**k) {
                    d += if keys.contains(&c.key) { 1 } else { -1 };
                }
                // (Never below zero for the donor's own count; were it, counted afresh.)
                usize::try_from(d).ok()
            });
        let n = match moved {
            Some(n) => {
                debug_assert_eq!(n, count_differing(list, keys), "a moved count");
                n
            }
            None => count_differing(list, keys),
        };
        let mut counts = self.candidate_counts.lock();
        if !counts.iter().any(|k| k.0 == root && k.1 == cand) {
            if counts.len() == KEPT_COUNTS {
                counts.remove(0);
            }
            counts.push((root, cand, n));
        }
        n
    }
}

/// Chunks `a` has that candidate `b` (its keys: a list's chunk keys are distinct) lacks,
/// and the reverse. Looked up on every core.
fn count_differing(a: &ChunkList, b: &KeySet) -> usize {
    let shared = a.par_iter().filter(|c| b.contains(&c.key)).count();
    (a.len() - shared) + (b.len() - shared)
}
