//! Which derived entries live commits use: what `gc` keeps. Computed from the trees' upper
//! levels and the list of stored keys alone — no stored value is read.

use std::collections::HashSet;

use cairn_core::{CommitId, Hash};
use cairn_index::params::CHUNK_LEVEL;
use cairn_index::unit::{chunk_levels, unit_ranges};

use crate::derived::keys::{manifest_key, unit_key, TreeKind};
use crate::derived::spans::{self, Span};
use crate::error::Result;
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
    pub(crate) fn live(
        &self,
        commits: &HashSet<CommitId>,
        is_split: &dyn Fn(&Hash) -> bool,
    ) -> Result<LiveSet> {
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
}
