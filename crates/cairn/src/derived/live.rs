//! Which derived entries live commits use — what `gc` keeps — and the sweep of the others.
//! Computed from the trees' upper levels and the list of stored keys alone (no stored
//! chunk, graph or manifest value is read).

use std::collections::{BTreeMap, HashSet};

use cairn_core::{CommitId, Hash};
use cairn_index::params::CHUNK_LEVEL;
use cairn_index::unit::{chunk_levels, unit_ranges};

use crate::derived::keys::{manifest_key, split_marker_chunk, time_index_branch, unit_key, Space, TreeKind, SPACES};
use crate::derived::spans::{self, Span};
use crate::error::Result;

/// Derived keys deleted per store call.
const DELETE_BATCH: usize = 10_000;
use crate::derived::DerivedData;

/// The derived keys live commits use.
#[derive(Debug, Default)]
pub(crate) struct LiveSet {
    /// Chunk keys (and split markers' keys: a split span's key stays live with its pieces).
    pub(crate) chunks: HashSet<Hash>,
    /// Unit keys.
    pub(crate) units: HashSet<Hash>,
    /// Manifest keys.
    pub(crate) manifests: HashSet<Hash>,
}

impl DerivedData {
    /// The derived keys `commits` use. `is_split(chunk key)` says whether a split marker is
    /// stored for a span (then its pieces are chunks too).
    fn live(&self, commits: &HashSet<CommitId>, is_split: &dyn Fn(&Hash) -> bool) -> Result<LiveSet> {
        let fp = self.fingerprint;
        let mut live = LiveSet::default();
        let mut roots_seen: HashSet<(u8, Hash)> = HashSet::new();
        for id in commits {
            let c = self.commit(id)?;
            for (tree, root) in [
                (TreeKind::Nodes, c.node_root),
                (TreeKind::Edges, c.edge_root),
                (TreeKind::EdgesIn, c.edge_in_root),
            ] {
                live.manifests.insert(manifest_key(&fp, tree, root));
                let Some(r) = root else { continue };
                if !roots_seen.insert((tree as u8, r)) {
                    continue;
                }
                let mut leaves: Vec<(Hash, Vec<u8>)> = Vec::new();
                for span in spans::top_spans(&self.objects, root, CHUNK_LEVEL)? {
                    self.mark_span(&fp, tree, span, is_split, &mut live, &mut leaves)?;
                }
                if tree == TreeKind::Nodes {
                    let levels = chunk_levels(leaves.iter().map(|l| l.1.as_slice()));
                    for range in unit_ranges(&levels) {
                        let keys: Vec<Hash> = leaves[range].iter().map(|l| l.0).collect();
                        live.units.insert(unit_key(&fp, &keys));
                    }
                }
            }
        }
        Ok(live)
    }

    fn mark_span(
        &self,
        fp: &Hash,
        tree: TreeKind,
        span: Span,
        is_split: &dyn Fn(&Hash) -> bool,
        live: &mut LiveSet,
        leaves: &mut Vec<(Hash, Vec<u8>)>,
    ) -> Result<()> {
        let key = span.key(fp, tree);
        live.chunks.insert(key);
        if span.gap.is_some() && is_split(&key) {
            for piece in spans::pieces(&self.objects, &span)? {
                self.mark_span(fp, tree, piece, is_split, live, leaves)?;
            }
        } else {
            // The chunk's first key: its head, or (the leading span) its gap's first key,
            // which only matters as "the first chunk" (`chunk_levels`).
            let first = span.head.as_ref().map(|h| h.0.clone()).unwrap_or_default();
            leaves.push((key, first));
        }
        Ok(())
    }

    /// Deletes the derived entries only dead commits or deleted branches use (`gc`'s sweep
    /// of derived data, [`Repo::gc`](crate::Repo::gc)); returns how many. `live`: the
    /// commits `gc` keeps.
    /// Judges chunk, unit-graph, unit-text and manifest entries by their keys alone (no value is
    /// read); entries of retired spaces go entirely.
    pub(crate) fn sweep(&self, live: &HashSet<CommitId>) -> Result<u64> {
        let store = &self.store;
        let chunk_keys = store.derived_keys(Space::Chunk.prefix())?;
        let split: HashSet<Hash> = chunk_keys.iter().filter_map(|k| split_marker_chunk(k)).collect();
        let keep = self.live(live, &|h| split.contains(h))?;
        let mut doomed: Vec<Vec<u8>> = Vec::new();
        for space in SPACES {
            let set = match space {
                Space::Chunk => &keep.chunks,
                Space::Graph | Space::UnitText => &keep.units,
                Space::Manifest => &keep.manifests,
                Space::TimeIndex => continue,
                Space::Retired(_) => {
                    doomed.extend(store.derived_keys(space.prefix())?);
                    continue;
                }
            };
            let keys = if space == Space::Chunk {
                chunk_keys.clone()
            } else {
                store.derived_keys(space.prefix())?
            };
            for k in keys {
                // A key that does not name a live entry, or is malformed, is garbage.
                if space.hash_of(&k).is_none_or(|h| !set.contains(&h)) {
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
        for (k, v) in store.scan_derived(Space::TimeIndex.prefix())? {
            let Some(name) = time_index_branch(&k).map(<[u8]>::to_vec) else {
                continue;
            };
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
        for chunk in doomed.chunks(DELETE_BATCH) {
            store.delete_derived(chunk)?;
        }
        Ok(doomed.len() as u64)
    }
}
