//! The value of a time index entry (storage-format.md §7.1): which commit a branch's
//! first-parent chain holds at one generation, and that commit's timestamp.
//!
//! The value is the commit id's 32 raw bytes, then the commit's `timestamp_ms` as an i64
//! big-endian: [`VALUE_LEN`] (40) bytes, nothing else. The index itself (its keys, when it
//! is written, dropped and rebuilt, the search over it) lives in the `cairn` crate
//! (`derived/time_index.rs`); it is a cache, so a value that does not decode reads as a
//! missing entry there and the index is rebuilt from the commits.
//!
//! ```
//! use cairn_core::{CommitId, Hash};
//! use cairn_graph::time_index;
//!
//! let id = CommitId(Hash::from_bytes([7; 32]));
//! let value = time_index::encode(&id, 1_700_000_000_000);
//! assert_eq!(value.len(), time_index::VALUE_LEN);
//! assert_eq!(time_index::decode(&value)?, (id, 1_700_000_000_000));
//! // A truncated value is refused.
//! assert!(time_index::decode(&value[..39]).is_err());
//! # Ok::<(), cairn_core::DecodeError>(())
//! ```

use cairn_core::{CommitId, DecodeError, Hash};

/// The length of a time index value: a commit id (32 bytes) and a timestamp (8 bytes).
pub const VALUE_LEN: usize = 40;

/// The value of the entry naming commit `id` with timestamp `timestamp_ms` (ms since the
/// epoch): `id (32 raw bytes) ‖ i64be(timestamp_ms)`.
pub fn encode(id: &CommitId, timestamp_ms: i64) -> Vec<u8> {
    let mut v = Vec::with_capacity(VALUE_LEN);
    v.extend_from_slice(id.hash().as_bytes());
    v.extend_from_slice(&timestamp_ms.to_be_bytes());
    v
}

/// Reads a value made by [`encode`]: the commit id and its timestamp. Strict: a value of
/// any length other than [`VALUE_LEN`] is refused with [`DecodeError::Malformed`] (kind
/// `"time index entry"`); every 40-byte value decodes, and re-encodes to the same bytes.
pub fn decode(value: &[u8]) -> Result<(CommitId, i64), DecodeError> {
    let (id, ts) = <&[u8; VALUE_LEN]>::try_from(value)
        .map_err(|_| DecodeError::Malformed {
            kind: "time index entry",
            detail: format!("{} bytes, expected {VALUE_LEN}", value.len()),
        })?
        .split_at(32);
    let id: [u8; 32] = id.try_into().expect("32 bytes");
    let ts: [u8; 8] = ts.try_into().expect("8 bytes");
    Ok((CommitId(Hash::from_bytes(id)), i64::from_be_bytes(ts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_pinned_bytes() {
        let id = CommitId(Hash::from_bytes([0xab; 32]));
        for ts in [0, -1, 1_700_000_000_000, i64::MIN, i64::MAX] {
            let v = encode(&id, ts);
            assert_eq!(decode(&v).unwrap(), (id, ts));
        }
        // storage-format.md §7.1: id, then the timestamp big-endian.
        let v = encode(&id, 0x0000_018b_cfe5_6800);
        assert_eq!(&v[..32], &[0xab; 32]);
        assert_eq!(&v[32..], &[0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00]);
    }

    #[test]
    fn other_lengths_are_refused() {
        let v = encode(&CommitId(Hash::from_bytes([1; 32])), 42);
        for n in 0..VALUE_LEN {
            assert!(
                matches!(decode(&v[..n]), Err(DecodeError::Malformed { .. })),
                "{n} bytes"
            );
        }
        let mut longer = v.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
    }
}
