//! Units: content-defined runs of chunks with one HNSW graph per dense model over the
//! unit's vectors, built from them alone.
//!
//! A unit starts at the first chunk and at every chunk whose head key has level ≥
//! [`UNIT_LEVEL`] (8⁵ = 32,768 nodes on average); a unit of more than [`MAX_UNIT_CHUNKS`]
//! chunks is split by the chunking rule ([`crate::chunking`]) applied to its chunks, with
//! each chunk's head level as its level. So units, like chunks, are a function of the
//! commit's content; a unit is named by its chunks' keys, and its graph is rebuilt only
//! when one of them changes.

use std::ops::Range;

use crate::chunk::DenseChunk;
use crate::chunking::{spans, SplitRule};
use crate::hnsw::GraphParams;
pub use crate::hnsw::UnitGraph;
use crate::params::{MAX_UNIT_CHUNKS, UNIT_LEVEL};

/// The units of a chunk list, as ranges of chunk indices. `head_levels[i]` is chunk `i`'s
/// head key level (`u8::MAX` for a chunk without a head).
///
/// ```
/// use cairn_index::unit::unit_ranges;
/// assert_eq!(unit_ranges(&[255, 2, 6, 3]), vec![0..2, 2..4]);
/// ```
pub fn unit_ranges(head_levels: &[u8]) -> Vec<Range<usize>> {
    let rule = SplitRule {
        max_keys: MAX_UNIT_CHUNKS,
        max_bytes: usize::MAX,
    };
    spans(head_levels, &vec![0; head_levels.len()], UNIT_LEVEL, rule)
        .into_iter()
        .map(|s| s.range())
        .collect()
}

/// The level each chunk brings to the unit rule, from the chunks' first keys: the first
/// chunk always starts a unit (`u8::MAX`); every other chunk starts with its head, whose
/// tree level is its key's.
pub fn chunk_levels<'a>(first_keys: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    first_keys
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            if i == 0 {
                u8::MAX
            } else {
                cairn_core::level::key_level(k)
            }
        })
        .collect()
}

/// The seed of a unit's graphs: the parameters' seed mixed with the first 8 bytes of the
/// unit's key (little endian).
pub fn unit_seed(params: &GraphParams, key: &cairn_core::Hash) -> u64 {
    let b = key.as_bytes();
    params.seed ^ u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// Builds a unit's graph over the rows of `parts` (in order), navigating by the int8
/// estimate of the dot product: distance `−(c_a·c_b) · (s_a·s_b)`, exact in its integer
/// part and a fixed sequence of `f32` operations after, so the graph is a function of the
/// vectors, the parameters and `seed` alone; then measures its [`Reach`](crate::hnsw::Reach)
/// ([`crate::hnsw::reach`]) with the same distance. Single-threaded by design: callers
/// build units in parallel. The parts' codes are read as they lie: the caller has checked
/// them ([`DenseChunk::check_codes`]), so a stored graph is never built from damaged codes.
pub fn build_unit_graph(parts: &[&DenseChunk], params: &GraphParams, seed: u64) -> UnitGraph {
    let rows: Vec<(&DenseChunk, usize)> = parts.iter().flat_map(|p| (0..p.len()).map(move |r| (*p, r))).collect();
    let p = GraphParams { seed, ..*params };
    let dist = |a: u32, b: u32| {
        let (pa, ra) = rows[a as usize];
        let (pb, rb) = rows[b as usize];
        let dot = crate::dense::int8::dot_i8(pa.codes(ra), pb.codes(rb));
        -(dot as f32 * (pa.scale(ra) * pb.scale(rb)))
    };
    let mut g = UnitGraph::build(rows.len() as u32, &p, dist);
    g.set_reach(crate::hnsw::reach::measure(&g, dist));
    g
}
