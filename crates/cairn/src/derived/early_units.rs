//! Unit texts built while a commit's chunks are still being built.
//!
//! A view whose BM25 lane reads its own unit texts builds them from its chunks' text parts
//! (`build.rs`'s `text_units`). When the chunks are built in that same assembly (the first
//! query after a bulk import), every chunk's text part used to be held until the last chunk
//! was built, and the unit texts were built on top of them then (at 1M nodes the build's
//! peak was 2.3 GiB, 1.4 GiB without them).
//!
//! Instead, after each window of chunks (`list.rs` builds a from-scratch list window by
//! window, in key order), the units that window completes are built, beside the next
//! window's chunks, if this assembly built their chunks (it holds their text parts; a view
//! that loads its chunks reads unit texts as `text_units` decides, perhaps a base
//! commit's). A unit is complete once the chunk that starts the next one is resolved: units
//! are cut at chunks whose head is at [`UNIT_LEVEL`] or above (`cairn_index::unit`), so the
//! cut of everything before such a chunk cannot change. Each unit text is built and queued
//! for the store as `unit_text` always does, and its chunks' text parts are then released:
//! they were queued for the store before, and anything that needs one again reads it back.
//!
//! It changes when unit texts are built and what the assembly holds, never what is built:
//! the units, their keys and their bytes are those `text_units` finds, which then reads
//! them from the assembly, and builds the units the last window leaves open as before. (A
//! view that turns out to read a base commit's units — a history whose derived data was
//! dropped, rebuilt next to an ancestor close to it — has built its own for nothing: stored,
//! unused until a later commit's view reads them.) Which units are built early depends on
//! the windows, which depend on the content alone, so what each window writes stays a
//! function of the content.

use std::ops::Range;

use cairn_index::params::UNIT_LEVEL;
use cairn_index::unit::unit_ranges;
use parking_lot::Mutex;
use rayon::prelude::*;

use crate::derived::build::Ctx;
use crate::derived::keys::{part_store_key, TAG_TEXT};
use crate::derived::spans::{ChunkList, ChunkRef};
use crate::derived::DerivedData;

/// How far the early builds have gone in one chunk list being built.
#[derive(Default)]
pub(super) struct EarlyUnits {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The level each resolved chunk brings to the unit rule (`cairn_index::unit::chunk_levels`).
    levels: Vec<u8>,
    /// Chunks before this position are in units already built.
    done: usize,
}

impl EarlyUnits {
    /// Builds the unit texts of the units complete in `resolved` (the list's chunks so
    /// far, in order, as the resolved spans give them) that were not built yet, and
    /// releases their chunks' text parts from `ctx`. A unit that cannot be built here is
    /// left to `text_units`, which meets the same failure and reports it.
    pub(super) fn after_window(&self, data: &DerivedData, ctx: &Ctx, resolved: &[ChunkList]) {
        let complete = self.complete(resolved.iter().flatten());
        if complete.is_empty() {
            // Most windows complete no unit: nothing is gathered for them (a list of every
            // chunk so far, each window, was O(chunks²) over an assembly).
            return;
        }
        let chunks: Vec<&ChunkRef> = resolved.iter().flatten().collect();
        // Only units whose chunks this assembly built (it holds their text parts): a view
        // that loads its chunks reads its unit texts as `text_units` decides, perhaps a
        // base commit's.
        let text_key = |c: &ChunkRef| part_store_key(&c.key, TAG_TEXT, None);
        let ranges: Vec<Range<usize>> = complete
            .into_iter()
            .filter(|r| ctx.holds_all(chunks[r.clone()].iter().map(|c| text_key(c))))
            .collect();
        ranges.into_par_iter().for_each(|range| {
            let refs: Vec<ChunkRef> = chunks[range.clone()].iter().map(|c| (*c).clone()).collect();
            let positions: Vec<Option<usize>> = range.map(Some).collect();
            // Its chunks' text parts are let go once it is built (`unit_text`).
            let _ = data.unit_text(ctx, ctx, &refs, &positions);
        });
    }

    /// The ranges of the units complete in `chunks` (the list so far) and not yet handed
    /// out.
    fn complete<'a>(&self, chunks: impl Iterator<Item = &'a ChunkRef>) -> Vec<Range<usize>> {
        let mut st = self.state.lock();
        let known = st.levels.len();
        for (i, ch) in chunks.enumerate().skip(known) {
            // As `cairn_index::unit::chunk_levels` gives it for the whole list.
            st.levels.push(match i {
                0 => u8::MAX,
                _ => cairn_core::level::key_level(ch.span.head.as_ref().map_or(&[][..], |h| h.0.as_slice())),
            });
        }
        let done = st.done;
        let (ranges, next) = complete_units(&st.levels, done);
        st.done = next;
        ranges
    }
}

/// The units complete in a list whose chunks so far bring `levels` to the unit rule, and
/// that start at or after `done` (a unit start, or 0); with where the next incomplete unit
/// starts. A unit is complete before the last chunk that starts one at [`UNIT_LEVEL`] or
/// above: a unit cut (`cairn_index::chunking::spans`) only looks at the chunks between two
/// such starts, so the chunks that follow cannot change it, and those before `done` do not
/// either (the stretch from `done` is cut alone).
fn complete_units(levels: &[u8], done: usize) -> (Vec<Range<usize>>, usize) {
    let Some(next) = (done + 1..levels.len()).rev().find(|&i| levels[i] >= UNIT_LEVEL) else {
        return (Vec::new(), done);
    };
    let ranges = unit_ranges(&levels[done..next])
        .into_iter()
        .map(|r| r.start + done..r.end + done)
        .collect();
    (ranges, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units handed out window by window, then the rest as `text_units` cuts them, are
    /// exactly the units of the whole list, for seeded level sequences (long stretches
    /// without a start, so the size split applies too) and window cuts.
    #[test]
    fn units_by_window_are_the_units_of_the_whole_list() {
        let mut rng = cairn_testkit::Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..300 {
            let n = 1 + (rng.next() % 6_000) as usize;
            // Starts rarer in some cases than in others.
            let rarity = [3u64, 40, 700, 5_000][case % 4];
            let mut levels: Vec<u8> = (0..n)
                .map(|_| match rng.next() % rarity {
                    0 => UNIT_LEVEL + (rng.next() % 3) as u8,
                    _ => (rng.next() % u64::from(UNIT_LEVEL)) as u8,
                })
                .collect();
            levels[0] = u8::MAX;
            let whole = unit_ranges(&levels);
            let mut got = Vec::new();
            let mut done = 0;
            let mut at = 0;
            while at < n {
                at = (at + 1 + (rng.next() % 900) as usize).min(n);
                let (ranges, d) = complete_units(&levels[..at], done);
                assert!(ranges.iter().all(|r| r.start >= done && r.end <= d));
                got.extend(ranges);
                done = d;
            }
            got.extend(unit_ranges(&levels).into_iter().filter(|r| r.start >= done));
            assert_eq!(got, whole, "case {case}: {n} chunks");
        }
    }
}
