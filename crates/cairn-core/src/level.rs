//! The level of a key in a Merkle search tree (`storage-format.md` §4.1).
//!
//! It lives in the core crate because two layers read it: the tree itself
//! (`cairn-graph`) and the derived indexes (`cairn-index`), whose chunks are cut at the
//! tree's keys of a given level, so both must agree on it bit for bit.

/// Bits of hash per level: 3, so a tree node holds about 8 keys.
///
/// Why so narrow: an edit rewrites the nodes on one key's path, and the node holding a
/// random key is size-biased (about twice the mean). With fan-out 32 a one-key edit at 50k
/// keys wrote ~18 KiB of tree nodes; with fan-out 8 it writes a few KiB even at 1M keys
/// (measured in `benches/`), at the price of a deeper (cached) tree.
pub const LEVEL_BITS: u32 = 3;

/// The level of a key: the number of leading zero bits of the first 8 bytes of
/// `blake3(key)` (read big-endian), divided by [`LEVEL_BITS`], rounded down. A key has
/// level ≥ L with probability 8^-L.
///
/// ```
/// use cairn_core::level::key_level;
/// assert_eq!(key_level(b"doc-1"), 0);
/// assert_eq!(key_level(b"node-1654"), 3);
/// ```
pub fn key_level(key: &[u8]) -> u8 {
    let h = blake3::hash(key);
    let b = h.as_bytes();
    let x = u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
    (x.leading_zeros() / LEVEL_BITS) as u8
}
