//! Spans read off a Merkle search tree's upper levels: the tree-side twin of
//! `cairn_index::chunking` (tested to agree with it).
//!
//! A span at level `L` is a head entry of level ≥ `L` (absent for the leading span) and
//! the gap subtree after it, whose root has a level below `L`. Finding a commit's spans
//! reads only the tree nodes of level ≥ `L` — about one in 8^`L` of them — so listing the
//! chunks of a 100k-node commit reads a couple of hundred tree nodes, most of them shared
//! with (and cached for) its neighbours in history.

use cairn_core::Hash;
use cairn_graph::{mst, GraphError, Objects};

use crate::derived::keys::{chunk_key, TreeKind};

/// One span: its head `(key, value)` and its gap subtree's root.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// The spans at `level` of the tree at `root`, in key order (module docs).
pub(crate) fn top_spans(objs: &Objects, root: Option<Hash>, level: u8) -> Result<Vec<Span>, GraphError> {
    let mut out: Vec<Span> = Vec::new();
    walk(objs, root, level, &mut out)?;
    Ok(out)
}

fn walk(objs: &Objects, node: Option<Hash>, level: u8, out: &mut Vec<Span>) -> Result<(), GraphError> {
    let Some(h) = node else { return Ok(()) };
    let t = objs.tree(&h)?;
    if t.level < level {
        // A gap subtree: it belongs to the last head, or starts the leading span.
        match out.last_mut() {
            Some(s) if s.gap.is_none() && s.head.is_some() => s.gap = Some(h),
            _ => out.push(Span {
                head: None,
                gap: Some(h),
            }),
        }
        return Ok(());
    }
    walk(objs, t.left, level, out)?;
    for e in &t.entries {
        out.push(Span {
            head: Some((e.key.clone(), e.value)),
            gap: None,
        });
        walk(objs, e.right, level, out)?;
    }
    Ok(())
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
