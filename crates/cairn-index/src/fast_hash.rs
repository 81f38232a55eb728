//! A fast hasher for build-time lookup tables (token → term id, node id → ordinal).
//!
//! Those tables are only ever *looked up*, never iterated into an output, so their order
//! cannot leak into an index; std's SipHash is needlessly slow for them. Each table gets a
//! random seed (from std's `RandomState`), and the state is finished with murmur3's
//! `fmix64`, so crafted keys cannot be aimed at one bucket across runs.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

/// A `HashMap` with [`FastState`].
pub type FastMap<K, V> = HashMap<K, V, FastState>;

/// Builds [`FastHasher`]s with one random seed per table.
#[derive(Clone)]
pub struct FastState {
    seed: u64,
}

impl Default for FastState {
    fn default() -> Self {
        FastState {
            seed: std::collections::hash_map::RandomState::new().hash_one(0x0063_6169_726e_u64),
        }
    }
}

impl BuildHasher for FastState {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher { state: self.seed }
    }
}

/// Multiply-rotate mixing of 8-byte words, `fmix64` at the end.
pub struct FastHasher {
    state: u64,
}

const K: u64 = 0x517c_c1b7_2722_0a95;

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.state = (self.state.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(w) ^ ((bytes.len() as u64) << 56));
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.add(i as u64);
        self.add((i >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.state;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_hash_equally_and_lookups_work() {
        let mut m: FastMap<u128, u32> = FastMap::default();
        for i in 0..10_000u32 {
            m.insert(u128::from(i) * 0x1_0000_0001, i);
        }
        assert!((0..10_000u32).all(|i| m.get(&(u128::from(i) * 0x1_0000_0001)) == Some(&i)));
        let mut s: FastMap<String, u32> = FastMap::default();
        s.insert("boundary".into(), 1);
        assert_eq!(s.get("boundary"), Some(&1));
        assert_eq!(s.get("boundar"), None);
    }
}
