//! Where a view's BM25 postings are: [unit texts](crate::unit_text) for the chunks a unit
//! covers, and chunk parts ([`TextChunk`]) for the rest.
//!
//! A view's units need not be its own: the repository gives a commit the unit texts of a
//! **base** commit's units (the commit its approximate search walks, `graph_base.rs` in the
//! repository) or those of the view it was derived from, with the units of its own that
//! drifted from them (`storage-format.md` §7.3.9), each with the position in this view of
//! every chunk of the unit (or that the view lacks it). A chunk the view lacks is *gone*:
//! its postings are skipped and its documents are in no statistic. A view's chunk no unit
//! covers brings its own part, probed by term. So a one-node commit reads the unit texts it
//! already had plus one or two chunk parts, and the postings a lookup yields — hence every
//! score — are those of the view's chunks, exactly, whichever units serve them.

use std::sync::Arc;

use crate::chunk::{Local, Posting, TextChunk};
use crate::error::IndexError;
use crate::unit_text::{TermPostings, UnitText};

/// A unit text, and where its chunks are in a view.
#[derive(Debug, Clone)]
pub struct TextUnit {
    /// The unit's postings.
    pub text: Arc<UnitText>,
    /// Unit chunk `j`'s chunk in the view, `None` if the view lacks it.
    pub chunks: Vec<Option<usize>>,
}

/// `u32::MAX`: a unit chunk the view lacks.
const GONE: u32 = u32::MAX;

/// Where one view chunk's postings are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Chunk `j` of unit `u`.
    Unit(u32, u32),
    /// Its own part.
    Own,
}

/// A unit text and each of its chunks' position in the view ([`GONE`] if absent).
pub(crate) type MappedUnit = (Arc<UnitText>, Arc<[u32]>);

/// A view's BM25 postings (module docs).
#[derive(Debug, Clone)]
pub(crate) struct Postings {
    units: Arc<[MappedUnit]>,
    /// Per view chunk.
    place: Arc<[Place]>,
    /// Per view chunk: its own part, for chunks no unit covers (and for every chunk of a
    /// view given all its parts).
    own: Arc<[Option<Arc<TextChunk>>]>,
    /// Sum of the view's document lengths.
    pub(crate) total_len: u64,
    /// Chunks of the view no unit covers, increasing.
    uncovered: Arc<[u32]>,
    /// The node tree whose units these are (`None`: the view's own), as the repository
    /// names it: a view derived from this one keeps them while its base is the same.
    origin: Option<cairn_core::Hash>,
}

/// One term's postings in a view: per chunk holding it (increasing), its postings; and the
/// term's document frequency over the view.
pub(crate) struct TermLists<'a> {
    pub(crate) lists: Vec<(u32, &'a [Posting])>,
    pub(crate) df: u64,
}

impl Postings {
    /// Postings served by `units` (each chunk of the view mapped at most once) and by
    /// `own[c]` for every other chunk `c`; `lens[c]` is chunk `c`'s node count; `origin`
    /// names the units' node tree.
    pub(crate) fn new(
        units: Vec<TextUnit>,
        own: Vec<Option<Arc<TextChunk>>>,
        lens: &[usize],
        origin: Option<cairn_core::Hash>,
    ) -> Result<Postings, IndexError> {
        let bad = |m: String| IndexError::Inconsistent(m);
        if own.len() != lens.len() {
            return Err(bad(format!("{} text parts for {} chunks", own.len(), lens.len())));
        }
        let mut place: Vec<Option<Place>> = vec![None; lens.len()];
        let mut total_len = 0u64;
        let mut mapped = Vec::with_capacity(units.len());
        for (u, unit) in units.into_iter().enumerate() {
            if unit.chunks.len() != unit.text.chunks() {
                return Err(bad(format!(
                    "unit text of {} chunks mapped onto {}",
                    unit.text.chunks(),
                    unit.chunks.len()
                )));
            }
            let mut to_view = Vec::with_capacity(unit.chunks.len());
            for (j, c) in unit.chunks.iter().enumerate() {
                let Some(c) = *c else {
                    to_view.push(GONE);
                    continue;
                };
                match place.get(c) {
                    Some(None) if lens[c] == unit.text.docs(j) && own[c].is_none() => {}
                    _ => return Err(bad(format!("unit chunk {j} cannot serve view chunk {c}"))),
                }
                place[c] = Some(Place::Unit(u as u32, j as u32));
                total_len += unit.text.chunk_total_len(j);
                to_view.push(c as u32);
            }
            mapped.push((unit.text, Arc::from(to_view)));
        }
        let mut uncovered = Vec::new();
        for (c, p) in place.iter_mut().enumerate() {
            if p.is_some() {
                continue;
            }
            match &own[c] {
                Some(part) if part.doc_count() == lens[c] => total_len += part.total_len(),
                Some(_) => return Err(bad(format!("text part of chunk {c} has another node count"))),
                None => return Err(bad(format!("chunk {c} has no text postings"))),
            }
            *p = Some(Place::Own);
            uncovered.push(c as u32);
        }
        Ok(Postings {
            units: mapped.into(),
            place: place.into_iter().map(|p| p.unwrap_or(Place::Own)).collect(),
            own: own.into(),
            total_len,
            uncovered: uncovered.into(),
            origin,
        })
    }

    /// The node tree whose units serve this view (`None`: its own).
    pub(crate) fn origin(&self) -> Option<cairn_core::Hash> {
        self.origin
    }

    /// The postings of a view whose chunk `i` is this (the donor's) view's chunk
    /// `from_donor[i]` or new: the same units, each unit chunk moved to its position in
    /// the new view (or gone), the donor's own parts kept for the chunks it shares, and
    /// `own[i]` for each new chunk — O(chunks) integer work, no unit read.
    pub(crate) fn derive(
        &self,
        from_donor: &[Option<usize>],
        mut own: Vec<Option<Arc<TextChunk>>>,
        lens: &[usize],
    ) -> Result<Postings, IndexError> {
        let mut donor_to_view = vec![GONE; self.place.len()];
        for (i, d) in from_donor.iter().enumerate() {
            if let Some(d) = d.filter(|d| *d < self.place.len()) {
                donor_to_view[d] = i as u32;
                if let Some(p) = &self.own[d] {
                    own[i] = Some(Arc::clone(p));
                }
            }
        }
        let units = self
            .units
            .iter()
            .map(|(text, to_view)| TextUnit {
                text: Arc::clone(text),
                chunks: to_view
                    .iter()
                    .map(|&c| match c {
                        GONE => None,
                        c => Some(donor_to_view[c as usize])
                            .filter(|v| *v != GONE)
                            .map(|v| v as usize),
                    })
                    .collect(),
            })
            .collect();
        Postings::new(units, own, lens, self.origin)
    }

    /// These postings with `new` units covering some of the view's chunks: each chunk a
    /// new unit maps leaves the unit or own part that served it (a unit left serving no
    /// chunk is dropped). The same postings for every chunk, so the same scores; `lens[c]`
    /// is chunk `c`'s node count.
    pub(crate) fn covered_by(&self, new: Vec<TextUnit>, lens: &[usize]) -> Result<Postings, IndexError> {
        let mut covered = vec![false; self.place.len()];
        for c in new.iter().flat_map(|u| u.chunks.iter().flatten()) {
            match covered.get_mut(*c) {
                Some(seen) => *seen = true,
                None => return Err(IndexError::Inconsistent(format!("a unit chunk maps to view chunk {c}"))),
            }
        }
        let mut units: Vec<TextUnit> = Vec::with_capacity(self.units.len() + new.len());
        for (text, to_view) in self.units.iter() {
            let chunks: Vec<Option<usize>> = to_view
                .iter()
                .map(|&c| (c != GONE && !covered[c as usize]).then_some(c as usize))
                .collect();
            if chunks.iter().any(Option::is_some) {
                units.push(TextUnit {
                    text: Arc::clone(text),
                    chunks,
                });
            }
        }
        units.extend(new);
        let own = self
            .own
            .iter()
            .zip(&covered)
            .map(|(p, &covered)| if covered { None } else { p.clone() })
            .collect();
        Postings::new(units, own, lens, self.origin)
    }

    /// The view's chunks no unit covers (served by their own parts), increasing.
    pub(crate) fn uncovered(&self) -> &[u32] {
        &self.uncovered
    }

    /// The own-part chunks of every unit's stretch of the view — its chunks and the
    /// own-part chunks up to the next unit's (those before any unit's count to the
    /// first) — that holds more than `limit(the unit's chunks in the view)` of them;
    /// increasing. Every own-part chunk if no unit serves a chunk. O(chunks) integer work.
    pub(crate) fn drifted(&self, limit: impl Fn(usize) -> usize) -> Vec<u32> {
        let first = self.place.iter().find_map(|p| match p {
            Place::Unit(u, _) => Some(*u),
            Place::Own => None,
        });
        let Some(mut unit) = first else {
            return self.uncovered.to_vec();
        };
        let mut stretch = vec![0u32; self.place.len()];
        let mut own = vec![0usize; self.units.len()];
        let mut size = vec![0usize; self.units.len()];
        for (c, p) in self.place.iter().enumerate() {
            match p {
                Place::Unit(u, _) => {
                    unit = *u;
                    size[unit as usize] += 1;
                }
                Place::Own => {
                    own[unit as usize] += 1;
                    stretch[c] = unit;
                }
            }
        }
        let over: Vec<bool> = own.iter().zip(&size).map(|(&n, &s)| n > limit(s)).collect();
        self.uncovered
            .iter()
            .copied()
            .filter(|&c| over[stretch[c as usize] as usize])
            .collect()
    }

    /// The units, each with its chunks' positions in the view ([`GONE`] if absent).
    pub(crate) fn units(&self) -> &[MappedUnit] {
        &self.units
    }

    /// Chunk `c`'s own part, if it has one.
    pub(crate) fn own(&self, c: usize) -> Option<&Arc<TextChunk>> {
        self.own.get(c).and_then(Option::as_ref)
    }

    /// Length in terms of document `l` of view chunk `c`.
    #[inline]
    pub(crate) fn doc_len(&self, c: usize, l: Local) -> u32 {
        match self.place[c] {
            Place::Unit(u, j) => self.units[u as usize].0.doc_len(j as usize, l),
            Place::Own => self.own[c].as_ref().map_or(0, |p| p.doc_len(l)),
        }
    }

    /// The postings each unit holds for `terms`: `found[u][i]` for unit `u` and term `i`,
    /// `Err` (why) for a unit one of whose reads failed.
    pub(crate) fn fetch(&self, terms: &[&str]) -> Vec<Result<Vec<Option<Arc<TermPostings>>>, String>> {
        use rayon::prelude::*;
        let one = |u: &Arc<UnitText>| terms.iter().map(|t| u.postings(t)).collect::<Result<Vec<_>, _>>();
        // Units read by range wait on the store: in parallel. Resident ones are quick.
        if self.units.iter().any(|(u, _)| u.is_stored()) && self.units.len() > 1 {
            self.units.par_iter().map(|(u, _)| one(u)).collect()
        } else {
            self.units.iter().map(|(u, _)| one(u)).collect()
        }
    }

    /// Term `i`'s lists from `found` (as [`Postings::fetch`] gave them, every unit
    /// readable) and from the uncovered chunks, plus `extra` chunks' parts (chunk, part:
    /// the chunks of units that could not be read).
    pub(crate) fn term_lists<'a>(
        &'a self,
        i: usize,
        term: &str,
        hash: u64,
        found: &'a [Vec<Option<Arc<TermPostings>>>],
        extra: &'a [(u32, TextChunk)],
    ) -> TermLists<'a> {
        let mut lists: Vec<(u32, &'a [Posting])> = Vec::new();
        let mut df = 0u64;
        let mut sorted = true;
        for ((_, to_view), terms) in self.units.iter().zip(found) {
            let Some(p) = &terms[i] else { continue };
            for (j, list) in p.chunks() {
                let c = to_view[j];
                if c == GONE {
                    continue;
                }
                sorted &= lists.last().is_none_or(|l| l.0 < c);
                df += list.len() as u64;
                lists.push((c, list));
            }
        }
        for &c in self.uncovered.iter() {
            if let Some(part) = &self.own[c as usize] {
                let list = part.lookup(term, hash);
                if !list.is_empty() {
                    sorted &= lists.last().is_none_or(|l| l.0 < c);
                    df += list.len() as u64;
                    lists.push((c, list));
                }
            }
        }
        for (c, part) in extra {
            let list = part.lookup(term, hash);
            if !list.is_empty() {
                sorted = false;
                df += list.len() as u64;
                lists.push((*c, list));
            }
        }
        if !sorted {
            lists.sort_unstable_by_key(|l| l.0);
        }
        TermLists { lists, df }
    }

    /// Every chunk's part as the chunk's own part holds it (unit texts read whole): for
    /// references, digests and checks.
    pub(crate) fn chunk_texts(&self) -> Result<Vec<Arc<TextChunk>>, String> {
        let mut out: Vec<Option<Arc<TextChunk>>> = self.own.to_vec();
        for (u, to_view) in self.units.iter() {
            if to_view.iter().all(|&c| c == GONE) {
                continue;
            }
            for (j, t) in u.chunk_texts()?.into_iter().enumerate() {
                if to_view[j] != GONE {
                    out[to_view[j] as usize] = Some(Arc::new(t));
                }
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// Approximate heap bytes (units counted in full: views share them).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.units
            .iter()
            .map(|(u, m)| u.heap_bytes() + m.len() * 4)
            .sum::<usize>()
            + self.place.len() * 8
            + self.own.iter().flatten().map(|p| p.heap_bytes()).sum::<usize>()
    }
}
