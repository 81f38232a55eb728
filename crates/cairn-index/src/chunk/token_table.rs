//! A thread vocabulary's table of short tokens: a token of at most 16 bytes, as one
//! integer (`text.rs`'s `inline_key`), → its term id.
//!
//! Open addressing with linear probing, keys held in the slots, load at most one half.
//! Unlike a `HashMap`, it lets a caller hash a token and ask for its slot's cache line
//! ([`TokenTable::prefetch`]) before looking it up: a chunk's build hashes a document's
//! tokens first and looks them up after, so the table's cache misses (a vocabulary of
//! tens of thousands of tokens outgrows a core's own cache while a build streams node
//! objects through it) overlap instead of following one another. The table is only
//! looked up, never iterated into an output: its seed and layout change speed, never a
//! result.

use std::hash::BuildHasher;

use crate::dense::prefetch::prefetch;

/// One slot: a token's key (0 marks an empty slot: a token is one or more alphanumeric
/// characters, so no key is 0) and its term id; 32 bytes aligned, so a slot never straddles
/// two cache lines (one prefetch brings it whole).
#[derive(Clone, Copy, Default)]
#[repr(align(32))]
struct Slot {
    lo: u64,
    hi: u64,
    id: u32,
}

/// Short token → term id.
pub(crate) struct TokenTable {
    /// A power of two in length (or empty).
    slots: Vec<Slot>,
    len: usize,
    seed: u64,
}

impl Default for TokenTable {
    fn default() -> Self {
        TokenTable {
            slots: Vec::new(),
            len: 0,
            seed: std::collections::hash_map::RandomState::new().hash_one(0x746f_6b65_6e73_u64),
        }
    }
}

/// Murmur3's 64-bit finaliser.
#[inline]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl TokenTable {
    /// Tokens held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The hash of `key` (seeded per table).
    #[inline]
    pub(crate) fn hash(&self, key: u128) -> u64 {
        let lo = (key as u64 ^ self.seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let hi = ((key >> 64) as u64 ^ self.seed.rotate_left(32)).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        fmix64(lo ^ hi.rotate_left(31))
    }

    /// Asks for the cache line of the slot where a lookup of hash `h` starts.
    #[inline]
    pub(crate) fn prefetch(&self, h: u64) {
        if !self.slots.is_empty() {
            let at = h as usize & (self.slots.len() - 1);
            prefetch(std::slice::from_ref(&self.slots[at]));
        }
    }

    /// The term id of `key` (hash `h`), if held.
    #[inline]
    pub(crate) fn get(&self, key: u128, h: u64) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let (lo, hi) = (key as u64, (key >> 64) as u64);
        let mask = self.slots.len() - 1;
        let mut at = h as usize & mask;
        loop {
            let s = &self.slots[at];
            if s.lo == lo && s.hi == hi {
                return Some(s.id);
            }
            if s.lo == 0 && s.hi == 0 {
                return None;
            }
            at = (at + 1) & mask;
        }
    }

    /// Adds `key` (hash `h`, not held, not 0) with term id `id`.
    pub(crate) fn insert(&mut self, key: u128, h: u64, id: u32) {
        debug_assert!(key != 0 && self.get(key, h).is_none());
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        self.place(key, h, id);
        self.len += 1;
    }

    fn place(&mut self, key: u128, h: u64, id: u32) {
        let mask = self.slots.len() - 1;
        let mut at = h as usize & mask;
        while self.slots[at].lo != 0 || self.slots[at].hi != 0 {
            at = (at + 1) & mask;
        }
        self.slots[at] = Slot {
            lo: key as u64,
            hi: (key >> 64) as u64,
            id,
        };
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(1024);
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); size]);
        for s in old.into_iter().filter(|s| s.lo != 0 || s.hi != 0) {
            let key = u128::from(s.hi) << 64 | u128::from(s.lo);
            self.place(key, self.hash(key), s.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_find_what_was_inserted_and_nothing_else() {
        let mut t = TokenTable::default();
        let key = |i: u128| (i + 1) * 0x0101_0000_0000_0000_0001_0001;
        for i in 0..20_000u128 {
            let k = key(i);
            let h = t.hash(k);
            assert_eq!(t.get(k, h), None);
            t.insert(k, h, i as u32);
            t.prefetch(h);
        }
        assert_eq!(t.len(), 20_000);
        assert!((0..20_000u128).all(|i| t.get(key(i), t.hash(key(i))) == Some(i as u32)));
        assert_eq!(t.get(key(20_000), t.hash(key(20_000))), None);
        // Keys equal in one half and different in the other are told apart.
        let (a, b) = (1u128, 1u128 << 64 | 1);
        let mut u = TokenTable::default();
        u.insert(a, u.hash(a), 7);
        assert_eq!(u.get(b, u.hash(b)), None);
        assert_eq!(u.get(a, u.hash(a)), Some(7));
    }
}
