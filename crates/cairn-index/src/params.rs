//! The parameters that shape derived indexes, and their fingerprint (part of every chunk,
//! unit and manifest key, so a change of any of them can never serve stale data).

use cairn_core::Hash;

use crate::analyzer::Analyzer;
use crate::hnsw::GraphParams;

/// Version of the index algorithms and layout, hashed into every
/// [`IndexParams::fingerprint`]: bump it when the same content and parameters would give
/// different indexes, so stale persisted chunks are never served.
///
/// History: 1 — one monolithic index per commit (removed); 2 — content-defined chunks;
/// 3 — unit graph records carry the graph's measured reach (`storage-format.md` §7.4);
/// 4 — dense parts store their int8 codes, bounds and row checksums ahead of the rows
/// (§7.3.4); 5 — core parts carry each text's dates (§7.3.1); 6 — a core part's texts
/// follow a checksummed head holding each text's length, characters and crc32 (§7.3.1);
/// 7 — parts store no object bytes: a dense part names each row's node object and the
/// vector's offset in it (§7.3.4), a core part each text's (§7.3.1); a BM25 posting is one
/// word (§7.3.2); 8 — a text part's term lengths and posting counts are varints (§7.3.2), a
/// sparse part's posting counts varints and its locals two bytes (§7.3.3); 9 — a dense
/// part's rows carry the crc32 of their codes, its head checksum covers every byte before
/// the codes (which follow it), and a row's codes are checked when first read (§7.3.4).
pub const INDEX_FORMAT_VERSION: u32 = 9;

/// Level of the node and edge trees at which chunks are cut: a chunk starts at every key
/// of level ≥ 2, so it holds 8² = 64 keys on average (`storage-format.md` §7.2).
///
/// Why 2: a one-node commit rebuilds the one chunk holding the node (size-biased: about
/// 128 nodes), which costs about a millisecond and writes a few hundred KiB; at level 3
/// (512 on average) it would cost ~8 ms and ~1.7 MiB, at the edge of the issue's targets.
/// The price is more chunks per query (1,600 at 100k nodes), each a few hash lookups.
pub const CHUNK_LEVEL: u8 = 2;

/// A chunk span with more keys than this is split (see [`crate::chunking`]).
pub const MAX_CHUNK_KEYS: usize = 4096;

/// A chunk span whose node objects add up to more bytes than this is split (so that no
/// persisted chunk value exceeds a few MiB, whatever the texts and vectors hold).
pub const MAX_CHUNK_BYTES: usize = 4 << 20;

/// Level of the node tree at which HNSW units are cut: 8⁵ = 32,768 keys on average.
pub const UNIT_LEVEL: u8 = 5;

/// A unit with more chunks than this is split (4,096 chunks: about 262,144 nodes). Units are
/// counted in chunks, not nodes, so that a unit's extent — and its key — can be computed
/// from a tree's chunk list alone (`gc` does, without reading any stored value).
///
/// Why 4,096: unit lengths are spread like the gaps between rare events (exponential, mean
/// 512 chunks), and an oversize unit is split at the next level down, into pieces of ~64
/// chunks. At 1,024 about 40 % of the nodes ended in such pieces: 143 units at 1,000,000
/// nodes (mean 7k vectors) instead of ~30, each walked by an approximate query. At 4,096
/// 0.03 % of units split; the price is a rare large graph (at most ~262k vectors) to
/// rebuild after a change to it.
pub const MAX_UNIT_CHUNKS: usize = 4096;

/// Parameters that shape the indexes (part of every derived key).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexParams {
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// HNSW unit graph parameters (the seed of each graph is derived from its unit's key).
    pub graph: GraphParams,
}

impl Default for IndexParams {
    /// [`Bm25Params::default`] and [`GraphParams::default`].
    fn default() -> Self {
        IndexParams {
            bm25: Bm25Params::default(),
            graph: GraphParams::default(),
        }
    }
}

/// BM25 parameters. Defaults `k1 = 0.9`, `b = 0.4` (Anserini's defaults).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
    /// The analyzer.
    pub analyzer: Analyzer,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params {
            k1: 0.9,
            b: 0.4,
            analyzer: Analyzer::default(),
        }
    }
}

impl IndexParams {
    /// blake3 over a fixed byte encoding of every parameter and layout constant.
    ///
    /// The bytes, in order: the ASCII string `cairn-index-params`; [`INDEX_FORMAT_VERSION`]
    /// as u32 LE; BM25 `k1` and `b` as the little-endian bits of their `f32`s; the
    /// analyzer's `stem` as one byte (0 or 1); [`CHUNK_LEVEL`] (u8); [`MAX_CHUNK_KEYS`] and
    /// [`MAX_CHUNK_BYTES`] (u32 LE); [`UNIT_LEVEL`] (u8); [`MAX_UNIT_CHUNKS`] (u32 LE); the
    /// graph's `m` and `ef_construction` (u32 LE) and `seed` (u64 LE).
    ///
    /// ```
    /// use cairn_index::IndexParams;
    /// let a = IndexParams::default();
    /// let mut b = a.clone();
    /// b.bm25.k1 = 1.2;
    /// assert_ne!(a.fingerprint(), b.fingerprint());
    /// ```
    pub fn fingerprint(&self) -> Hash {
        // Destructured so that a new parameter fails to compile here until it is hashed.
        let Bm25Params {
            k1,
            b,
            analyzer: Analyzer { stem },
        } = self.bm25;
        let GraphParams {
            m,
            ef_construction,
            seed,
        } = self.graph;
        let mut bytes = Vec::with_capacity(80);
        bytes.extend_from_slice(b"cairn-index-params");
        bytes.extend_from_slice(&INDEX_FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&k1.to_bits().to_le_bytes());
        bytes.extend_from_slice(&b.to_bits().to_le_bytes());
        bytes.push(u8::from(stem));
        bytes.push(CHUNK_LEVEL);
        bytes.extend_from_slice(&(MAX_CHUNK_KEYS as u32).to_le_bytes());
        bytes.extend_from_slice(&(MAX_CHUNK_BYTES as u32).to_le_bytes());
        bytes.push(UNIT_LEVEL);
        bytes.extend_from_slice(&(MAX_UNIT_CHUNKS as u32).to_le_bytes());
        bytes.extend_from_slice(&(m as u32).to_le_bytes());
        bytes.extend_from_slice(&(ef_construction as u32).to_le_bytes());
        bytes.extend_from_slice(&seed.to_le_bytes());
        Hash::of(&bytes)
    }
}
