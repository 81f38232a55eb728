//! Small typed ids: a content [`Hash`](struct@Hash), the [`CommitId`] made from one, and the
//! caller-chosen [`NodeId`].

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::limits::MAX_NODE_ID_BYTES;

/// Why a textual id could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseIdError {
    /// A hash must be exactly 64 lowercase or uppercase hex digits.
    #[error("`{input}` is not a 64-digit hex hash")]
    BadHex {
        /// The text that was given.
        input: String,
    },
    /// A node id must be 1..=256 bytes of UTF-8.
    #[error("node id must be 1..={max} bytes of UTF-8, got {len} bytes")]
    BadNodeIdLength {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// A blake3 hash of an object's canonical encoding (see `storage-format.md`). Ordered
/// by its bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Hash([u8; 32]);

/// The bytes' lexicographic order, decided on the first eight bytes as one big-endian
/// word: hashes almost always differ there, so a lookup in a map of a million hashes
/// (a store's object index) compares words instead of calling `memcmp` per step.
impl Ord for Hash {
    #[inline]
    fn cmp(&self, other: &Hash) -> std::cmp::Ordering {
        let word = |h: &Hash| u64::from_be_bytes([h.0[0], h.0[1], h.0[2], h.0[3], h.0[4], h.0[5], h.0[6], h.0[7]]);
        word(self)
            .cmp(&word(other))
            .then_with(|| self.0[8..].cmp(&other.0[8..]))
    }
}

impl PartialOrd for Hash {
    #[inline]
    fn partial_cmp(&self, other: &Hash) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash {
    /// The all-zero hash. Never the hash of a stored object; used as a sentinel in keys.
    pub const ZERO: Hash = Hash([0; 32]);

    /// Wraps 32 raw bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Hash {
        Hash(bytes)
    }

    /// The blake3 hash of `bytes`.
    pub fn of(bytes: &[u8]) -> Hash {
        Hash(*blake3::hash(bytes).as_bytes())
    }

    /// The raw 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parses 64 hex digits (either case).
    pub fn from_hex(s: &str) -> Result<Hash, ParseIdError> {
        let bad = || ParseIdError::BadHex {
            input: s.chars().take(80).collect(),
        };
        let b = s.as_bytes();
        if b.len() != 64 {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        for (i, pair) in b.chunks_exact(2).enumerate() {
            let hi = hex_val(pair[0]).ok_or_else(bad)?;
            let lo = hex_val(pair[1]).ok_or_else(bad)?;
            out[i] = (hi << 4) | lo;
        }
        Ok(Hash(out))
    }

    /// The first 12 hex digits, for display.
    pub fn short(&self) -> String {
        self.to_hex()[..12].to_string()
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex, two digits a byte: the one encoder behind every hex string
/// Cairn writes (hashes, keys in messages, the sync protocol's records).
///
/// ```
/// assert_eq!(cairn_core::ids::hex(&[0x00, 0xab, 0x7f]), "00ab7f");
/// ```
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// True if `s` is a non-empty run of hex digits (a possible hash prefix).
pub fn is_hex_prefix(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|c| hex_val(c).is_some())
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({})", self.short())
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for Hash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Hash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Hash::from_hex(&s).map_err(serde::de::Error::custom)
    }
}

/// The id of a commit: the [`Hash`](struct@Hash) of its encoding.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommitId(pub Hash);

impl CommitId {
    /// The underlying hash.
    pub const fn hash(&self) -> &Hash {
        &self.0
    }
    /// 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.0.to_hex()
    }
    /// Parses 64 hex digits.
    pub fn from_hex(s: &str) -> Result<CommitId, ParseIdError> {
        Hash::from_hex(s).map(CommitId)
    }
    /// The first 12 hex digits.
    pub fn short(&self) -> String {
        self.0.short()
    }
}

impl fmt::Debug for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CommitId({})", self.0.short())
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A node's stable, caller-chosen id: 1..=256 bytes of UTF-8.
///
/// Ordering is by UTF-8 bytes, which is the order of the node tree and the tie-break
/// order of every ranked list.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct NodeId(String);

impl NodeId {
    /// Checks the length rule and wraps the string.
    ///
    /// ```
    /// use cairn_core::NodeId;
    /// assert!(NodeId::new("doc-1").is_ok());
    /// assert!(NodeId::new("").is_err());
    /// ```
    pub fn new(id: impl Into<String>) -> Result<NodeId, ParseIdError> {
        let id = id.into();
        NodeId::check(&id)?;
        Ok(NodeId(id))
    }

    /// The rule [`NodeId::new`] checks, for a string that is not wrapped (a decoder that
    /// keeps ids packed).
    ///
    /// ```
    /// use cairn_core::NodeId;
    /// assert!(NodeId::check("doc-1").is_ok());
    /// assert!(NodeId::check("").is_err());
    /// ```
    pub fn check(id: &str) -> Result<(), ParseIdError> {
        if id.is_empty() || id.len() > MAX_NODE_ID_BYTES {
            return Err(ParseIdError::BadNodeIdLength {
                len: id.len(),
                max: MAX_NODE_ID_BYTES,
            });
        }
        Ok(())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id's UTF-8 bytes (the node tree's key).
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Unwraps the string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({:?})", self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for NodeId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        NodeId::new(s).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<&str> for NodeId {
    type Error = ParseIdError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        NodeId::new(s)
    }
}

impl TryFrom<String> for NodeId {
    type Error = ParseIdError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        NodeId::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let h = Hash::of(b"cairn");
        assert_eq!(Hash::from_hex(&h.to_hex()).unwrap(), h);
        assert_eq!(Hash::from_hex(&h.to_hex().to_uppercase()).unwrap(), h);
        assert!(Hash::from_hex("zz").is_err());
        assert!(Hash::from_hex(&"g".repeat(64)).is_err());
    }

    #[test]
    fn node_id_limits() {
        assert!(NodeId::new("a".repeat(256)).is_ok());
        assert!(NodeId::new("a".repeat(257)).is_err());
        assert!(NodeId::new("").is_err());
        assert!(NodeId::new("é").is_ok());
    }
}
