//! The registry of derived key spaces, and every derivation of a derived key.
//!
//! Derived data lives in the store's derived space (`Store::put_derived`), under keys that
//! start with one of the prefixes below. `gc`, `fsck`, `drop` and persistence iterate
//! [`SPACES`], and every store key of a space is made (and, where it is read back by key
//! alone, taken apart) by a function below; nothing else spells a prefix or a key's
//! layout.

use cairn_core::Hash;

/// One derived key space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    /// `tl/<branch>\0<u64be generation>`: a branch's time index (`derived/time_index.rs`).
    TimeIndex,
    /// `ck/<chunk key><part tag>[<model>]`: a chunk's part, or its split marker.
    Chunk,
    /// `ug/<unit key><model>`: one dense model's HNSW graph over one unit.
    Graph,
    /// `ut/<unit key>`: one unit's BM25 postings grouped by term (`cairn_index::unit_text`).
    UnitText,
    /// `cm/<manifest key>`: "every chunk of this tree was stored".
    Manifest,
    /// A space of an older index format (`ix/` whole-commit indexes, `hb/` HNSW bases):
    /// never read, deleted by `gc`.
    Retired(&'static [u8]),
}

/// Every derived key space, current and retired.
pub(crate) const SPACES: [Space; 7] = [
    Space::TimeIndex,
    Space::Chunk,
    Space::Graph,
    Space::UnitText,
    Space::Manifest,
    Space::Retired(b"ix/"),
    Space::Retired(b"hb/"),
];

impl Space {
    /// The key prefix.
    pub(crate) fn prefix(self) -> &'static [u8] {
        match self {
            Space::TimeIndex => b"tl/",
            Space::Chunk => b"ck/",
            Space::Graph => b"ug/",
            Space::UnitText => b"ut/",
            Space::Manifest => b"cm/",
            Space::Retired(p) => p,
        }
    }

    /// The 32-byte derived key a store key of a hashed space (chunk, graph, unit text, manifest)
    /// names, if the key has the right shape.
    pub(crate) fn hash_of(self, key: &[u8]) -> Option<Hash> {
        let rest = key.strip_prefix(self.prefix())?;
        let bytes: [u8; 32] = rest.get(..32)?.try_into().ok()?;
        Some(Hash::from_bytes(bytes))
    }
}

/// The trees chunks are cut from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TreeKind {
    /// The node tree.
    Nodes = 1,
    /// The edge tree (out-edges).
    Edges = 2,
    /// The reverse edge tree (in-edges).
    EdgesIn = 3,
}

/// The part tags of chunk store keys (the same bytes as the values' tags).
pub(crate) use cairn_index::persist::{TAG_DENSE, TAG_EDGES, TAG_NODE_CORE, TAG_SPARSE, TAG_SPLIT, TAG_TEXT};

fn opt(h: Option<Hash>) -> Hash {
    h.unwrap_or(Hash::ZERO)
}

/// A chunk's key: blake3 over `"cairn/chunk/v2"`, the tree kind (u8), the parameter
/// fingerprint, the head's value hash and the gap subtree's root hash (`0³²` when absent).
/// A function of the span's content: the same in every commit, branch and history.
pub(crate) fn chunk_key(fingerprint: &Hash, tree: TreeKind, head: Option<Hash>, gap: Option<Hash>) -> Hash {
    let mut b = Vec::with_capacity(14 + 1 + 96);
    b.extend_from_slice(b"cairn/chunk/v2");
    b.push(tree as u8);
    b.extend_from_slice(fingerprint.as_bytes());
    b.extend_from_slice(opt(head).as_bytes());
    b.extend_from_slice(opt(gap).as_bytes());
    Hash::of(&b)
}

/// A unit's key: blake3 over `"cairn/unit/v2"`, the fingerprint, the unit's chunk count
/// (u64le) and its chunk keys in order.
pub(crate) fn unit_key(fingerprint: &Hash, chunks: &[Hash]) -> Hash {
    let mut b = Vec::with_capacity(13 + 32 + 8 + chunks.len() * 32);
    b.extend_from_slice(b"cairn/unit/v2");
    b.extend_from_slice(fingerprint.as_bytes());
    b.extend_from_slice(&(chunks.len() as u64).to_le_bytes());
    for c in chunks {
        b.extend_from_slice(c.as_bytes());
    }
    Hash::of(&b)
}

/// A tree's manifest key: blake3 over `"cairn/manifest/v2"`, the tree kind, the
/// fingerprint and the tree's root (`0³²` for an empty tree).
pub(crate) fn manifest_key(fingerprint: &Hash, tree: TreeKind, root: Option<Hash>) -> Hash {
    let mut b = Vec::with_capacity(17 + 1 + 64);
    b.extend_from_slice(b"cairn/manifest/v2");
    b.push(tree as u8);
    b.extend_from_slice(fingerprint.as_bytes());
    b.extend_from_slice(opt(root).as_bytes());
    Hash::of(&b)
}

/// The key of a commit's view: blake3 over `"cairn/view/v2"`, the fingerprint, the node
/// root and the edge root. Names a view in memory only (never stored).
pub(crate) fn view_key(fingerprint: &Hash, node_root: Option<Hash>, edge_root: Option<Hash>) -> Hash {
    let mut b = Vec::with_capacity(13 + 96);
    b.extend_from_slice(b"cairn/view/v2");
    b.extend_from_slice(fingerprint.as_bytes());
    b.extend_from_slice(opt(node_root).as_bytes());
    b.extend_from_slice(opt(edge_root).as_bytes());
    Hash::of(&b)
}

/// The store key of a chunk part: `ck/ ‖ chunk key ‖ tag`, then the model's UTF-8 bytes
/// for sparse and dense parts.
pub(crate) fn part_store_key(chunk: &Hash, tag: u8, model: Option<&str>) -> Vec<u8> {
    let mut k = Vec::with_capacity(3 + 33 + model.map_or(0, str::len));
    k.extend_from_slice(Space::Chunk.prefix());
    k.extend_from_slice(chunk.as_bytes());
    k.push(tag);
    if let Some(m) = model {
        k.extend_from_slice(m.as_bytes());
    }
    k
}

/// The order a build writes its values in: by space, chunk parts by part tag, then by
/// key. Dense parts (whose int8 codes a reader keeps where the store lies,
/// `Store::get_derived_shared`) then lie together in the derived log, so that mapping
/// their pages maps few pages of other values beside them.
pub(crate) fn write_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let tag = |k: &[u8]| match k.strip_prefix(Space::Chunk.prefix()) {
        Some(rest) => rest.get(32).copied().unwrap_or(0),
        None => 0,
    };
    (a.get(..3), tag(a), a).cmp(&(b.get(..3), tag(b), b))
}

/// The store key of a unit's graph of one model: `ug/ ‖ unit key ‖ model`.
pub(crate) fn graph_store_key(unit: &Hash, model: &str) -> Vec<u8> {
    let mut k = Space::Graph.prefix().to_vec();
    k.extend_from_slice(unit.as_bytes());
    k.extend_from_slice(model.as_bytes());
    k
}

/// The store key of a unit's text postings: `ut/ ‖ unit key`.
pub(crate) fn unit_text_store_key(unit: &Hash) -> Vec<u8> {
    let mut k = Space::UnitText.prefix().to_vec();
    k.extend_from_slice(unit.as_bytes());
    k
}

/// The store key of a manifest.
pub(crate) fn manifest_store_key(key: &Hash) -> Vec<u8> {
    let mut k = Space::Manifest.prefix().to_vec();
    k.extend_from_slice(key.as_bytes());
    k
}

/// The chunk whose split marker a store key of the chunk space is (`ck/ ‖ chunk ‖
/// TAG_SPLIT`, no model); `None` for any other key.
pub(crate) fn split_marker_chunk(key: &[u8]) -> Option<Hash> {
    let rest = key.strip_prefix(Space::Chunk.prefix())?;
    if rest.len() != 32 + 1 || rest[32] != TAG_SPLIT {
        return None;
    }
    Space::Chunk.hash_of(key)
}

/// The store-key prefix of `branch`'s time index: `tl/ ‖ branch ‖ 0x00`.
pub(crate) fn time_index_prefix(branch: &str) -> Vec<u8> {
    let mut p = Space::TimeIndex.prefix().to_vec();
    p.extend_from_slice(branch.as_bytes());
    p.push(0);
    p
}

/// The store key of `branch`'s time-index entry at first-parent depth `generation`:
/// `tl/ ‖ branch ‖ 0x00 ‖ generation (u64 big-endian)`.
pub(crate) fn time_index_key(branch: &str, generation: u64) -> Vec<u8> {
    let mut k = time_index_prefix(branch);
    k.extend_from_slice(&generation.to_be_bytes());
    k
}

/// The branch name bytes a time-index store key names (`None`: not of that shape).
pub(crate) fn time_index_branch(key: &[u8]) -> Option<&[u8]> {
    let rest = key.strip_prefix(Space::TimeIndex.prefix())?;
    let end = rest.len().checked_sub(1 + 8)?;
    (rest[end] == 0).then_some(&rest[..end])
}
