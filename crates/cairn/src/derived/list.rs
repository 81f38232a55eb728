//! A tree's resolved chunk list: its spans at the chunk level, each one chunk or (split)
//! its pieces, in key order — and, for a node tree, where each upper tree node's chunks are
//! in it ([`SpanMemo`]), so that the next commit's list takes over every subtree the two
//! trees share instead of walking, keying and matching it again.

use crate::derived::hashed::KeyMap;
use std::sync::Arc;

use cairn_core::Hash;
use cairn_index::params::CHUNK_LEVEL;
use cairn_index::IndexError;
use rayon::prelude::*;

use crate::derived::build::{Ctx, Found, Tick};
use crate::derived::cache::ViewEntry;
use crate::derived::early_units::EarlyUnits;
use crate::derived::keys::{TreeKind, TAG_EDGES, TAG_NODE_CORE};
use crate::derived::spans::{self, ChunkList, ChunkRef, Item, Placed, Span, SpanMemo};
use crate::derived::DerivedData;
use crate::error::{Error, Result};
use crate::progress::{Meter, Step};

/// Top-level spans of a tree resolved (and, when new, built) together before their values
/// are written and released: a build holds at most this window's encoded values, not the
/// whole commit's (at 100k nodes, 325 MiB). Windows follow the span order, and each
/// window's values are written in key order, so the derived log's layout stays a
/// function of what was built.
const BUILD_WINDOW_SPANS: usize = 256;

/// A chunk list a new list can take over subtree by subtree (a cached view's, or another
/// commit's list at hand), with its chunks by key (built when first needed: a list taken
/// over subtree by subtree knows where its chunks come from).
pub(super) struct Donor {
    /// The list, and where each of its tree's upper nodes has its chunks in it.
    pub(super) nodes: Arc<ChunkList>,
    pub(super) memo: Arc<SpanMemo>,
    index: std::sync::OnceLock<KeyMap<usize>>,
}

impl Donor {
    /// The list of a cached view.
    pub(super) fn new(entry: &ViewEntry) -> Donor {
        Donor::of_list(Arc::clone(&entry.nodes), Arc::clone(&entry.memo))
    }

    /// A list and its memo.
    pub(super) fn of_list(nodes: Arc<ChunkList>, memo: Arc<SpanMemo>) -> Donor {
        Donor {
            nodes,
            memo,
            index: std::sync::OnceLock::new(),
        }
    }

    /// The donor's chunks by key.
    pub(super) fn index(&self) -> &KeyMap<usize> {
        self.index.get_or_init(|| spans::positions(&self.nodes))
    }
}

/// Each chunk of a list's position in the donor's list, if the donor has it.
pub(super) type FromDonor = Vec<Option<usize>>;

impl DerivedData {
    /// The resolved chunks of a tree (split spans replaced by their pieces), cached by root.
    pub(super) fn chunk_list(&self, ctx: &Ctx, tree: TreeKind, root: Option<Hash>) -> Result<Arc<ChunkList>> {
        Ok(self.chunk_list_with(ctx, tree, root, None, None)?.0)
    }

    /// The donor's chunks that no copy covers, by key: where a walked span's chunk may be
    /// in the donor (chunks are in key order, so one the donor has lies between the copies
    /// around it). A few dozen for a small commit.
    fn uncovered(donor: &Donor, copies: &[(u32, u32)]) -> KeyMap<usize> {
        let mut sorted = copies.to_vec();
        sorted.sort_unstable();
        let mut out = KeyMap::default();
        let mut at = 0usize;
        for &(a, b) in sorted.iter().chain(std::iter::once(&(donor.nodes.len() as u32, 0))) {
            for i in at..(a as usize).min(donor.nodes.len()) {
                out.insert(donor.nodes[i].key, i);
            }
            at = at.max(b as usize);
        }
        out
    }

    /// [`DerivedData::chunk_list`], and where each upper tree node's chunks are in it
    /// ([`SpanMemo`]), taking over from a donor view (node trees only) every subtree the two
    /// trees share: its chunks are copied from the donor's list, not walked, keyed and
    /// matched again, so a small commit's list costs its changed path. The list is the same
    /// either way (a subtree's chunks are a function of its content). With `early`, a list
    /// walked whole (nothing copied) has the unit texts its windows complete built as it goes
    /// (`early_units.rs`).
    pub(super) fn chunk_list_with(
        &self,
        ctx: &Ctx,
        tree: TreeKind,
        root: Option<Hash>,
        donor: Option<&Donor>,
        early: Option<&EarlyUnits>,
    ) -> Result<(Arc<ChunkList>, Arc<SpanMemo>, Option<FromDonor>)> {
        let Some(r) = root else {
            return Ok((Arc::new(Vec::new()), Arc::default(), None));
        };
        let cache = &self.cache;
        if let Some((l, m)) = cache.list(tree as u8, &r) {
            return Ok((l, m, None));
        }
        let objs = &*self.objects;
        let donor = donor.filter(|_| tree == TreeKind::Nodes);
        let reused = match donor {
            Some(d) => spans::top_items(objs, root, CHUNK_LEVEL, &d.memo)?.map(|x| (d, x)),
            None => None,
        };
        let (from, (mut items, visited)) = match reused {
            Some((d, x)) => (Some(d), x),
            None => {
                let (spans, visited) = spans::top_walk(objs, root, CHUNK_LEVEL)?;
                (None, (spans.into_iter().map(Item::Span).collect(), visited))
            }
        };
        // Where walked spans' chunks may be in the donor: the few chunks no copy covers
        // when the list is taken over, else every chunk.
        let copy_ranges: Vec<(u32, u32)> = items
            .iter()
            .filter_map(|i| match i {
                Item::Copy { start, end } => Some((*start, *end)),
                Item::Span(_) => None,
            })
            .collect();
        let gap_index = from.map(|d| Self::uncovered(d, &copy_ranges));
        // (The donor's whole index only when nothing was copied: built eagerly, it keyed
        // every one of the donor's chunks on every commit.)
        let known = gap_index.as_ref().or_else(|| donor.map(Donor::index));
        let step = match tree {
            TreeKind::Nodes => Step::IndexChunks,
            TreeKind::Edges | TreeKind::EdgesIn => Step::IndexEdges,
        };
        // The spans to resolve, taken out of their items (which then only mark where their
        // chunks go).
        let raw: Vec<Span> = items
            .iter_mut()
            .filter_map(|i| match i {
                Item::Span(s) => Some(std::mem::take(s)),
                Item::Copy { .. } => None,
            })
            .collect();
        let meter = self.meter(step, Some(raw.len() as u64));
        let mut resolved: Vec<ChunkList> = Vec::with_capacity(raw.len());
        let mut stored: Option<Meter> = None;
        let mut raw = raw.into_iter();
        // A window's values are written while the next window builds (one worker writes,
        // the others build): the log gets the same values in the same order, one window
        // after another, and a build holds at most two windows' values.
        let mut written: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        loop {
            let window: Vec<Span> = raw.by_ref().take(BUILD_WINDOW_SPANS).collect();
            if window.is_empty() {
                break;
            }
            let values = std::mem::take(&mut written);
            let store = (!values.is_empty()).then(|| {
                let m = stored.get_or_insert_with(|| self.meter(Step::IndexStore, None));
                &*m
            });
            // The chunks so far, in list order when no subtree was copied (then every item
            // is a span): the units they complete are built beside this window's chunks.
            let so_far = &resolved;
            let early = early.filter(|_| from.is_none());
            let ((), (chunks, ())) = rayon::join(
                || {
                    if let Some(m) = store {
                        self.write_values(ctx, values, m);
                    }
                },
                || {
                    rayon::join(
                        || self.resolve_spans(ctx, tree, window, known, Some(&meter)),
                        || {
                            if let Some(e) = early {
                                e.after_window(self, ctx, so_far);
                            }
                        },
                    )
                },
            );
            resolved.extend(chunks?);
            written = std::mem::take(&mut *ctx.pending.lock());
        }
        if !written.is_empty() {
            let m = stored.get_or_insert_with(|| self.meter(Step::IndexStore, None));
            self.write_values(ctx, written, m);
        }
        // The list in item order: resolved spans, and the donor's chunks of shared subtrees.
        let copied = |start: u32, end: u32| {
            from.and_then(|d| d.nodes.get(start as usize..end as usize))
                .ok_or_else(|| Error::Index(IndexError::Inconsistent("a copied range outside its list".into())))
        };
        let mut list: ChunkList = Vec::with_capacity(from.map_or(resolved.len(), |d| d.nodes.len() + 8));
        let mut starts: Vec<u32> = Vec::with_capacity(items.len() + 1);
        let mut copies: Vec<(u32, u32, u32)> = Vec::new();
        let mut positions: FromDonor = Vec::with_capacity(list.capacity());
        let mut resolved = resolved.into_iter();
        for item in &items {
            starts.push(list.len() as u32);
            match item {
                Item::Span(_) => {
                    let chunks = resolved.next().unwrap_or_default();
                    if let Some(g) = &gap_index {
                        positions.extend(chunks.iter().map(|ch| g.get(&ch.key).copied()));
                    }
                    list.extend(chunks);
                }
                Item::Copy { start, end } => {
                    copies.push((*start, *end, list.len() as u32));
                    list.extend_from_slice(copied(*start, *end)?);
                    positions.extend((*start as usize..*end as usize).map(Some));
                }
            }
        }
        starts.push(list.len() as u32);
        // This list's memo: the nodes walked, and the shared subtrees' (and their
        // descendants') places in the donor's list, moved to where they were copied.
        let mut memo = SpanMemo::with_capacity(visited.len() + from.map_or(0, |d| d.memo.len()));
        for (h, a, b, lead) in visited {
            memo.insert(
                h,
                Placed {
                    start: starts[a],
                    end: starts[b],
                    lead,
                },
            );
        }
        if let Some(d) = from.filter(|_| !copies.is_empty()) {
            copies.sort_unstable();
            for (h, p) in d.memo.iter() {
                let i = copies.partition_point(|c| c.0 <= p.start);
                let Some(&(a, b, at)) = i.checked_sub(1).map(|i| &copies[i]) else {
                    continue;
                };
                if p.end <= b {
                    memo.entry(*h).or_insert(Placed {
                        start: p.start - a + at,
                        end: p.end - a + at,
                        lead: p.lead,
                    });
                }
            }
        }
        let (list, memo) = (Arc::new(list), Arc::new(memo));
        cache.put_list(tree as u8, r, (Arc::clone(&list), Arc::clone(&memo)));
        Ok((list, memo, gap_index.map(|_| positions)))
    }

    /// Each span's chunks: itself, or its pieces if it is split.
    fn resolve_spans(
        &self,
        ctx: &Ctx,
        tree: TreeKind,
        spans: Vec<Span>,
        known: Option<&KeyMap<usize>>,
        meter: Option<&Meter>,
    ) -> Result<Vec<ChunkList>> {
        let core_tag = if tree == TreeKind::Nodes {
            TAG_NODE_CORE
        } else {
            TAG_EDGES
        };
        spans
            .into_par_iter()
            .map(|span| {
                let _tick = meter.map(Tick);
                let ch = ChunkRef {
                    key: span.key(&ctx.fp, tree),
                    span,
                };
                if known.is_some_and(|k| k.contains_key(&ch.key)) {
                    return Ok(vec![ch]);
                }
                match self.lookup(ctx, tree, &ch, core_tag, None)? {
                    Found::Part(_) => Ok(vec![ch]),
                    Found::Split => {
                        let pieces = spans::pieces(&self.objects, &ch.span)?;
                        Ok(self
                            .resolve_spans(ctx, tree, pieces, None, None)?
                            .into_iter()
                            .flatten()
                            .collect())
                    }
                }
            })
            .collect()
    }
}
