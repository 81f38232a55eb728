//! `Hash`'s order is its bytes' lexicographic order: every ordered map of hashes (a store's
//! object index, a diff's walk) and every key built from them sort the same as the bytes.

use cairn_core::Hash;
use proptest::prelude::*;

fn hash(bytes: [u8; 32]) -> Hash {
    Hash::from_bytes(bytes)
}

proptest! {
    #[test]
    fn hashes_order_as_their_bytes(a in any::<[u8; 32]>(), b in any::<[u8; 32]>(), shared in 0usize..=32) {
        // Pairs sharing a prefix of any length, so every byte position decides some pair.
        let mut b = b;
        b[..shared].copy_from_slice(&a[..shared]);
        prop_assert_eq!(hash(a).cmp(&hash(b)), a.cmp(&b));
        prop_assert_eq!(hash(a).partial_cmp(&hash(b)), Some(a.cmp(&b)));
        prop_assert_eq!(hash(a) == hash(b), a == b);
    }
}

#[test]
fn the_first_differing_byte_decides_in_both_halves() {
    let base = [0x80u8; 32];
    for at in [0, 7, 8, 31] {
        let mut lo = base;
        lo[at] = 0x7f;
        assert!(hash(lo) < hash(base), "byte {at}");
        assert!(hash(base) > hash(lo), "byte {at}");
    }
    let mut sorted: Vec<Hash> = (0..=255u8).rev().map(|b| hash([b; 32])).collect();
    sorted.sort();
    assert_eq!(sorted.first(), Some(&Hash::ZERO));
    assert!(sorted.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
}
