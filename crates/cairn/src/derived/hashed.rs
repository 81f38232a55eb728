//! Maps and sets keyed by blake3 hashes (chunk keys): hashed by the key's own first eight
//! bytes, which are already uniform, instead of SipHash over all 32. A view's assembly
//! builds such tables over every chunk of a commit (~15,600 at 1M nodes) on each commit.
//! No result depends on iteration order: the tables are probed, and the one scan (the
//! part cache's most recent view) picks a maximum of unique ticks.
//!
//! Tables keyed by byte strings (index part keys: a space prefix, a chunk key, a tag and a
//! model) use `cairn_index`'s [`FastMap`](cairn_index::fast_hash::FastMap), a
//! multiply-rotate hash of 8-byte words, instead of SipHash: a cold view's assembly probes
//! them ~50,000 times at 1M nodes.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use cairn_core::Hash;

/// A hasher for [`Hash`] keys: the first eight bytes written (the key's bytes; the length
/// prefix an array writes first is ignored).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(b) = bytes.get(..8) {
            self.0 = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        } else {
            // Not a hash key: any bytes still hash, mixed in.
            for &b in bytes {
                self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            }
        }
    }

    fn write_usize(&mut self, _: usize) {}
}

/// A map keyed by byte strings (index part keys): `cairn_index`'s build-time hash of
/// 8-byte words.
pub(crate) type BytesMap<K, V> = cairn_index::fast_hash::FastMap<K, V>;

/// A map keyed by hashes.
pub(crate) type KeyMap<V> = HashMap<Hash, V, BuildHasherDefault<KeyHasher>>;

/// A set of hashes.
pub(crate) type KeySet = HashSet<Hash, BuildHasherDefault<KeyHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_hashes_by_its_first_eight_bytes() {
        let h = Hash::of(b"chunk");
        let mut k = KeyHasher::default();
        std::hash::Hash::hash(&h, &mut k);
        let b = h.as_bytes();
        assert_eq!(k.finish(), u64::from_le_bytes(b[..8].try_into().unwrap()));
        let set: KeySet = (0..1000u32).map(|i| Hash::of(&i.to_le_bytes())).collect();
        assert_eq!(set.len(), 1000);
        assert!(set.contains(&Hash::of(&7u32.to_le_bytes())));
    }

    #[test]
    fn byte_keys_that_differ_anywhere_hash_apart() {
        let state = cairn_index::fast_hash::FastState::default();
        let hash = |b: &[u8]| std::hash::BuildHasher::hash_one(&state, b.to_vec());
        // Part keys of one chunk differ only in their tag and model, past byte 32.
        let mut key = b"ck/".to_vec();
        key.extend_from_slice(Hash::of(b"chunk").as_bytes());
        let tagged: Vec<u64> = [b"C1".as_slice(), b"C2", b"C4minilm", b"C4minilm2"]
            .iter()
            .map(|t| hash(&[key.as_slice(), t].concat()))
            .collect();
        let distinct: std::collections::BTreeSet<u64> = tagged.iter().copied().collect();
        assert_eq!(distinct.len(), tagged.len());
        // A key and the same key with a zero byte appended (the padding) differ.
        assert_ne!(hash(b"abc"), hash(b"abc\0"));
        let map: BytesMap<Vec<u8>, u32> = (0..1000u32).map(|i| (i.to_le_bytes().to_vec(), i)).collect();
        assert_eq!(map.get(7u32.to_le_bytes().as_slice()), Some(&7));
    }
}
