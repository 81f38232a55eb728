//! Spans read off a Merkle search tree's upper levels: the tree-side twin of
//! `cairn_index::chunking` (tested to agree with it).
//!
//! A span at level `L` is a head entry of level ≥ `L` (absent for the leading span) and
//! the gap subtree after it, whose root has a level below `L`. Finding a commit's spans
//! reads only the tree nodes of level ≥ `L` — about one in 8^`L` of them — so listing the
//! chunks of a 100k-node commit reads a couple of hundred tree nodes, most of them shared
//! with (and cached for) its neighbours in history. A walk that has the previous list's
//! [`SpanMemo`] stops at every subtree the two trees share and copies its chunks
//! ([`top_items`]): a one-node commit walks its changed path (at 1M nodes, ~50 items instead
//! of 15,600 spans).

use std::collections::HashMap;

use cairn_core::Hash;
use cairn_graph::{mst, GraphError, Objects};

use crate::derived::keys::{chunk_key, TreeKind};

/// One span: its head `(key, value)` and its gap subtree's root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) head: Option<(Vec<u8>, Hash)>,
    pub(crate) gap: Option<Hash>,
}

impl Span {
    /// The span's chunk key.
    pub(crate) fn key(&self, fingerprint: &Hash, tree: TreeKind) -> Hash {
        chunk_key(fingerprint, tree, self.head.as_ref().map(|h| h.1), self.gap)
    }
}

/// A resolved chunk of a tree: its key and span (pieces of split spans included).
#[derive(Debug, Clone)]
pub(crate) struct ChunkRef {
    pub(crate) key: Hash,
    pub(crate) span: Span,
}

/// A tree's chunks, in key order.
pub(crate) type ChunkList = Vec<ChunkRef>;

/// Each chunk key's position in `list`.
pub(crate) fn positions(list: &[ChunkRef]) -> crate::derived::hashed::KeyMap<usize> {
    list.iter().enumerate().map(|(i, c)| (c.key, i)).collect()
}

/// Where one tree node's spans (those headed by its entries and its descendants' of level ≥
/// `L`) are in its tree's resolved chunk list: chunks `start..end`. `lead` is the gap the
/// node's walk emits before them (its leftmost descent below `L`), which the span before the
/// node takes as its gap. A function of the node's content alone, so any tree holding the
/// node holds these chunks, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placed {
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) lead: Option<Hash>,
}

/// [`Placed`] for every tree node of level ≥ `L` of one tree, by node hash: what lets the
/// next commit's list copy the chunks of every subtree the two trees share instead of
/// walking, keying and matching them again.
pub(crate) type SpanMemo = HashMap<Hash, Placed>;

/// One step of a walk that reuses an earlier list: a span to resolve, or chunks
/// `start..end` of the earlier list (a shared subtree's).
#[derive(Debug, Clone)]
pub(crate) enum Item {
    Span(Span),
    Copy { start: u32, end: u32 },
}

/// A node the walk visited (not found in the memo): its hash, the items `start..end` of its
/// spans, and its lead.
pub(crate) type Visited = (Hash, usize, usize, Option<Hash>);

/// A walk's items and the nodes it visited.
pub(crate) type Walked = (Vec<Item>, Vec<Visited>);

/// The spans at `level` of the tree at `root` as [`top_walk`] lists them, except that each
/// subtree `memo` knows is one [`Item::Copy`] of its chunks in the list `memo` describes; and
/// the nodes visited. `None` if the tree does not have the shape this relies on (a gap
/// directly after a copied subtree), for the caller to walk without the memo.
pub(crate) fn top_items(
    objs: &Objects,
    root: Option<Hash>,
    level: u8,
    memo: &SpanMemo,
) -> Result<Option<Walked>, GraphError> {
    let mut out = Vec::new();
    let mut visited = Vec::new();
    Ok(walk_items(objs, root, level, memo, &mut out, &mut visited)?.map(|_| (out, visited)))
}

/// Attaches gap `g` to the last span (a head without its gap yet), or starts the leading
/// span with it; false if the last item is a copy.
fn attach_gap(out: &mut Vec<Item>, g: Hash) -> bool {
    match out.last_mut() {
        Some(Item::Copy { .. }) => return false,
        Some(Item::Span(s)) if s.gap.is_none() && s.head.is_some() => s.gap = Some(g),
        _ => out.push(Item::Span(Span {
            head: None,
            gap: Some(g),
        })),
    }
    true
}

/// Walks `node`: a subtree `memo` knows is copied, a gap subtree (level below `level`)
/// belongs to the last head or starts the leading span, and a node of `level` or above
/// gives its left subtree, then each entry's span and its right subtree. `Some(lead)` of the
/// node, `None` if the shape is not supported.
fn walk_items(
    objs: &Objects,
    node: Option<Hash>,
    level: u8,
    memo: &SpanMemo,
    out: &mut Vec<Item>,
    visited: &mut Vec<Visited>,
) -> Result<Option<Option<Hash>>, GraphError> {
    let Some(h) = node else { return Ok(Some(None)) };
    if let Some(p) = memo.get(&h) {
        if let Some(g) = p.lead {
            if !attach_gap(out, g) {
                return Ok(None);
            }
        }
        out.push(Item::Copy {
            start: p.start,
            end: p.end,
        });
        return Ok(Some(p.lead));
    }
    let t = objs.tree(&h)?;
    if t.level < level {
        return Ok(attach_gap(out, h).then_some(Some(h)));
    }
    // A subtree's root is below its parent's level (§4 of storage-format.md), so under a
    // node of the chunk level every subtree is a gap: attached unread, as the walk would
    // after reading its root (at 1M nodes, ~15,600 tree reads of a cold walk's ~18,000).
    let below = t.level == level;
    let child = |c: Option<Hash>, out: &mut Vec<Item>, visited: &mut Vec<Visited>| match c {
        Some(g) if below => Ok(attach_gap(out, g).then_some(Some(g))),
        _ => walk_items(objs, c, level, memo, out, visited),
    };
    // The node's chunks start after its lead: a gap attached to the span before, or a
    // leading span (no head) pushed for it.
    let before = out.len();
    let Some(lead) = child(t.left, out, visited)? else {
        return Ok(None);
    };
    let start = match out.get(before) {
        Some(Item::Span(Span { head: None, .. })) => before + 1,
        _ => before,
    };
    for e in &t.entries {
        out.push(Item::Span(Span {
            head: Some((e.key.clone(), e.value)),
            gap: None,
        }));
        if child(e.right, out, visited)?.is_none() {
            return Ok(None);
        }
    }
    visited.push((h, start, out.len(), lead));
    Ok(Some(lead))
}

/// The spans at `level` of the tree at `root`, in key order (module docs), with the nodes
/// visited: [`top_items`] without a memo, so every item is a span.
pub(crate) fn top_walk(objs: &Objects, root: Option<Hash>, level: u8) -> Result<(Vec<Span>, Vec<Visited>), GraphError> {
    let mut out = Vec::new();
    let mut visited = Vec::new();
    prefetch_upper(objs, root, level);
    // Only a copy can refuse a gap, and without a memo nothing is copied.
    if walk_items(objs, root, level, &SpanMemo::new(), &mut out, &mut visited)?.is_none() {
        return Err(GraphError::Corrupt {
            kind: "tree",
            hash: root.unwrap_or(Hash::ZERO),
            detail: "the span walk refused a tree it copied nothing of".into(),
        });
    }
    let spans = out
        .into_iter()
        .filter_map(|i| match i {
            Item::Span(s) => Some(s),
            Item::Copy { .. } => None,
        })
        .collect();
    Ok((spans, visited))
}

/// Tree nodes a whole walk reads: at 1M nodes ~2,400 (the walk itself reads them one at a
/// time, depth first, on one thread: ~15 ms of a fresh handle's first query).
const PREFETCH_MOST: usize = 16_384;

/// Reads the tree nodes a walk to `level` will read — level by level from the root, each
/// level's nodes in parallel — into the object cache (`Objects::tree`), so that the walk
/// that follows finds them decoded. Only a cache: a node that fails to read is left to the
/// walk, which reports it; levels are read while the nodes read stay within
/// [`PREFETCH_MOST`] (a fraction of the cache), and the walk reads the rest itself.
fn prefetch_upper(objs: &Objects, root: Option<Hash>, level: u8) {
    use rayon::prelude::*;
    let mut frontier: Vec<Hash> = root.into_iter().collect();
    let mut read = 0;
    while !frontier.is_empty() && read + frontier.len() <= PREFETCH_MOST {
        read += frontier.len();
        frontier = frontier
            .par_iter()
            .with_min_len(8)
            .flat_map_iter(|h| {
                // Under a node of the chunk level every subtree is a gap the walk does not
                // read (`walk_items`).
                let t = objs.tree(h).ok().filter(|t| t.level > level);
                t.map(|t| {
                    t.left
                        .into_iter()
                        .chain(t.entries.iter().filter_map(|e| e.right))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
            })
            .collect();
    }
}

/// The spans at `level` of the tree at `root`, in key order (module docs).
pub(crate) fn top_spans(objs: &Objects, root: Option<Hash>, level: u8) -> Result<Vec<Span>, GraphError> {
    Ok(top_walk(objs, root, level)?.0)
}

/// The pieces of a span with a gap: the gap root's `left` under the span's head, then
/// each of the root's entries with its `right` subtree (`cairn_index::chunking::pieces`).
pub(crate) fn pieces(objs: &Objects, span: &Span) -> Result<Vec<Span>, GraphError> {
    let Some(g) = span.gap else {
        return Ok(vec![span.clone()]);
    };
    let t = objs.tree(&g)?;
    let mut out = Vec::with_capacity(t.entries.len() + 1);
    if span.head.is_some() || t.left.is_some() {
        out.push(Span {
            head: span.head.clone(),
            gap: t.left,
        });
    }
    for e in &t.entries {
        out.push(Span {
            head: Some((e.key.clone(), e.value)),
            gap: e.right,
        });
    }
    Ok(out)
}

/// Every `(key, value)` of a span, in key order.
pub(crate) fn entries(objs: &Objects, span: &Span) -> Result<Vec<(Vec<u8>, Hash)>, GraphError> {
    let mut out = Vec::new();
    if let Some(h) = &span.head {
        out.push(h.clone());
    }
    mst::for_each(objs, span.gap, &mut |k, v| {
        out.push((k.to_vec(), *v));
        Ok(())
    })?;
    Ok(out)
}
