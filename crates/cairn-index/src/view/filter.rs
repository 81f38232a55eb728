//! [`Filter`]: a set of a commit's ordinals, held per chunk (local ordinals), so gates are
//! built and intersected chunk by chunk; the lanes that test postings against it read one
//! flat bitset of the admitted ordinals ([`Filter::bits`]), made once per filter value.

use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use roaring::RoaringBitmap;

use crate::chunk::Local;
use crate::hit::Ordinal;

/// One chunk's share of a [`Filter`].
#[derive(Debug, Clone, PartialEq)]
pub enum FilterPart {
    /// Every node of the chunk.
    All,
    /// These local ordinals (possibly none), shared with the chunk where they come from
    /// one of its columns unchanged.
    Some(Arc<RoaringBitmap>),
}

impl FilterPart {
    /// True if the part admits local ordinal `l`.
    pub fn contains(&self, l: Local) -> bool {
        match self {
            FilterPart::All => true,
            FilterPart::Some(b) => b.contains(l),
        }
    }

    /// True if the part admits nothing.
    pub fn is_none(&self) -> bool {
        matches!(self, FilterPart::Some(b) if b.is_empty())
    }

    fn intersect(&mut self, other: &FilterPart) {
        match (&mut *self, other) {
            (_, FilterPart::All) => {}
            (FilterPart::All, FilterPart::Some(b)) => *self = FilterPart::Some(Arc::clone(b)),
            (FilterPart::Some(a), FilterPart::Some(b)) => *Arc::make_mut(a) &= &**b,
        }
    }
}

/// A set of ordinals of one commit's index view, stored as one [`FilterPart`] per chunk.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The view's chunk offsets (`offsets[c]` is chunk `c`'s first ordinal; the last entry
    /// is the node count).
    pub(crate) offsets: Arc<[Ordinal]>,
    /// Shared until written (a memoised gate is handed out by clone, then intersected).
    pub(crate) parts: Arc<Vec<FilterPart>>,
    /// For a label gate a view took over from its donor's memo (`view/inherit.rs`): the
    /// donor's parts it was derived from, so the donor's memos keyed by them (a dense
    /// model's row list) can be taken over too. Cleared by any change to `parts`; never
    /// part of the filter's value (equality ignores it).
    pub(crate) origin: Option<Arc<Vec<FilterPart>>>,
    /// The admitted ordinals as one bit per ordinal ([`Filter::bits`]), made on first use
    /// and shared by clones (a memoised gate's clones reuse it); replaced by any change to
    /// `parts`.
    pub(crate) bits: Arc<OnceLock<Vec<u64>>>,
    /// For a gate derived from an older view's (`view/inherit.rs`): that gate's bits, to
    /// copy for the chunks the two share instead of reading their parts again. Cleared with
    /// `bits`; never part of the filter's value.
    pub(crate) bits_donor: Option<BitsDonor>,
}

/// An older filter whose bits a derived filter copies ([`Filter::bits`]): its chunk
/// offsets, its bits (when it has made them), and which of its chunks each chunk of the
/// derived filter is, with the same part ([`NEW`]: none).
#[derive(Debug, Clone)]
pub(crate) struct BitsDonor {
    pub(crate) offsets: Arc<[Ordinal]>,
    pub(crate) bits: Arc<OnceLock<Vec<u64>>>,
    pub(crate) map: Arc<[u32]>,
}

/// In a [`BitsDonor`]'s map: a chunk the older filter does not have.
pub(crate) const NEW: u32 = u32::MAX;

/// Equality of the admitted ordinals' representation (the origin is a memo key).
impl PartialEq for Filter {
    fn eq(&self, other: &Self) -> bool {
        self.offsets == other.offsets && self.parts == other.parts
    }
}

impl Filter {
    /// The filter admitting every node.
    pub(crate) fn all(offsets: Arc<[Ordinal]>) -> Filter {
        let n = offsets.len().saturating_sub(1);
        Filter {
            offsets,
            parts: Arc::new(vec![FilterPart::All; n]),
            origin: None,
            bits: Arc::default(),
            bits_donor: None,
        }
    }

    /// Builds from one part per chunk.
    pub(crate) fn from_parts(offsets: Arc<[Ordinal]>, parts: Vec<FilterPart>) -> Filter {
        debug_assert_eq!(parts.len() + 1, offsets.len());
        Filter {
            offsets,
            parts: Arc::new(parts),
            origin: None,
            bits: Arc::default(),
            bits_donor: None,
        }
    }

    /// The filter admitting exactly `ordinals` (each below the node count).
    pub(crate) fn from_ordinals(offsets: Arc<[Ordinal]>, ordinals: impl IntoIterator<Item = Ordinal>) -> Filter {
        let n = offsets.len().saturating_sub(1);
        let mut parts = vec![RoaringBitmap::new(); n];
        for o in ordinals {
            let c = chunk_of(&offsets, o);
            if let Some(p) = parts.get_mut(c) {
                p.insert(o - offsets[c]);
            }
        }
        Filter {
            offsets,
            parts: Arc::new(parts.into_iter().map(|p| FilterPart::Some(Arc::new(p))).collect()),
            origin: None,
            bits: Arc::default(),
            bits_donor: None,
        }
    }

    /// Keeps only what `other` also admits (both of the same view).
    pub fn intersect(&mut self, other: &Filter) {
        self.origin = None;
        self.bits = Arc::default();
        self.bits_donor = None;
        for (a, b) in Arc::make_mut(&mut self.parts).iter_mut().zip(other.parts.iter()) {
            a.intersect(b);
        }
    }

    /// The admitted ordinals as a bitset, bit `o % 64` of word `o / 64` for ordinal `o`
    /// (see [`admits`]): made once per filter value — from its parts, or for a gate derived
    /// from an older view's, copied from that gate's bits where they share chunks
    /// ([`Filter::derive_bits`]) — then shared by its clones. A lane that tests postings
    /// against the filter chunk by chunk otherwise follows each chunk's bitmap through
    /// three pointers (at 1M nodes, a fifth of a hybrid query's time); the bitset is an
    /// eighth of a byte per node (125 KiB at 1M).
    pub(crate) fn bits(&self) -> &[u64] {
        self.bits.get_or_init(
            || match self.bits_donor.as_ref().and_then(|d| Some((d, d.bits.get()?))) {
                Some((donor, bits)) => self.derive_bits(donor, bits),
                None => self.make_bits(BITS_PIECE),
            },
        )
    }

    /// The bits of [`Filter::bits`], in pieces of `piece` words built in parallel, each
    /// from the chunks its ordinals fall in (a chunk across a piece boundary is read by
    /// both, each setting its own bits): the same bits for any thread count and piece.
    fn make_bits(&self, piece: usize) -> Vec<u64> {
        let n = self.offsets.last().copied().unwrap_or(0);
        let words = (n as usize).div_ceil(64);
        let pieces: Vec<Vec<u64>> = (0..words.div_ceil(piece))
            .into_par_iter()
            .map(|p| {
                let w0 = p * piece;
                let w1 = (w0 + piece).min(words);
                let (o0, o1) = ((w0 * 64) as Ordinal, (w1 as u64 * 64).min(u64::from(n)) as Ordinal);
                let mut out = vec![0u64; w1 - w0];
                let mut c = chunk_of(&self.offsets, o0);
                while c < self.parts.len() && self.offsets[c] < o1 {
                    self.set_chunk_bits(&mut out, w0, c, o0, o1);
                    c += 1;
                }
                out
            })
            .collect();
        pieces.concat()
    }

    /// Sets in `out` (words from `w0` on) the bits of chunk `c`'s admitted ordinals in
    /// `o0..o1`, from its part.
    fn set_chunk_bits(&self, out: &mut [u64], w0: usize, c: usize, o0: Ordinal, o1: Ordinal) {
        let (base, end) = (self.offsets[c], self.offsets[c + 1]);
        let (from, to) = (base.max(o0), end.min(o1));
        let mut set = |o: Ordinal| {
            let i = (o >> 6) as usize - w0;
            out[i] |= 1u64 << (o & 63);
        };
        match &self.parts[c] {
            FilterPart::All => (from..to).for_each(&mut set),
            FilterPart::Some(b) => b
                .iter()
                .map(|l| base + l)
                .skip_while(|&o| o < from)
                .take_while(|&o| o < to)
                .for_each(&mut set),
        }
    }

    /// The bits of [`Filter::bits`] copied from `donor`'s (`bits`) for each run of chunks
    /// that are consecutive in both (one bit-range copy per run: a one-node commit's gate
    /// has two or three runs), and set from their parts for the rest: the same bits as
    /// [`Filter::make_bits`] (a shared chunk has the donor's part and node count), at a few
    /// words' work per run instead of a read of every chunk's part (at 1M nodes, a tenth
    /// of a one-node commit's next gated query).
    fn derive_bits(&self, donor: &BitsDonor, bits: &[u64]) -> Vec<u64> {
        let n = self.offsets.last().copied().unwrap_or(0);
        let mut out = vec![0u64; (n as usize).div_ceil(64)];
        let chunks = self.parts.len();
        let mut c = 0;
        while c < chunks {
            let j = donor.map.get(c).copied().unwrap_or(NEW);
            let mut k = 0;
            if j != NEW {
                while c + k < chunks
                    && j.checked_add(k as u32)
                        .is_some_and(|jk| donor.map.get(c + k) == Some(&jk))
                    && (j as usize + k + 1) < donor.offsets.len()
                {
                    k += 1;
                }
            }
            let len = self.offsets[c + k] - self.offsets[c];
            let same_len = k > 0 && donor.offsets[j as usize + k] - donor.offsets[j as usize] == len;
            if same_len && bits.len() * 64 >= (donor.offsets[j as usize] + len) as usize {
                copy_bits(bits, donor.offsets[j as usize], &mut out, self.offsets[c], len);
                c += k;
            } else {
                self.set_chunk_bits(&mut out, 0, c, 0, n);
                c += 1;
            }
        }
        out
    }

    /// True if the filter admits `ordinal`.
    pub fn contains(&self, ordinal: Ordinal) -> bool {
        if ordinal >= self.offsets.last().copied().unwrap_or(0) {
            return false;
        }
        let c = chunk_of(&self.offsets, ordinal);
        self.parts[c].contains(ordinal - self.offsets[c])
    }

    /// Number of ordinals admitted.
    pub fn len(&self) -> u64 {
        self.parts
            .iter()
            .enumerate()
            .map(|(c, p)| match p {
                FilterPart::All => u64::from(self.offsets[c + 1] - self.offsets[c]),
                FilterPart::Some(b) => b.len(),
            })
            .sum()
    }

    /// True if nothing is admitted.
    pub fn is_empty(&self) -> bool {
        self.parts
            .iter()
            .enumerate()
            .all(|(c, p)| p.is_none() || self.offsets[c + 1] == self.offsets[c])
    }

    /// The admitted ordinals, increasing.
    pub fn iter(&self) -> impl Iterator<Item = Ordinal> + '_ {
        self.parts.iter().enumerate().flat_map(move |(c, p)| {
            let base = self.offsets[c];
            let end = self.offsets[c + 1];
            let it: Box<dyn Iterator<Item = Ordinal> + '_> = match p {
                FilterPart::All => Box::new(base..end),
                FilterPart::Some(b) => Box::new(b.iter().map(move |l| base + l)),
            };
            it
        })
    }

    /// Chunk `c`'s part.
    pub fn part(&self, c: usize) -> &FilterPart {
        &self.parts[c]
    }
}

/// Words of [`Filter::bits`] one task builds (262,144 ordinals).
const BITS_PIECE: usize = 4096;

/// ORs `len` bits of `src` from bit `s` into `dst` from bit `d` (bit `o % 64` of word
/// `o / 64`); `dst`'s bits there are zero.
fn copy_bits(src: &[u64], s: Ordinal, dst: &mut [u64], d: Ordinal, len: Ordinal) {
    let (mut s, mut d, mut len) = (u64::from(s), u64::from(d), u64::from(len));
    while len > 0 {
        // At most one destination word's worth at a time.
        let db = d % 64;
        let take = (64 - db).min(len);
        let (w, b) = ((s / 64) as usize, s % 64);
        let mut v = src[w] >> b;
        if b > 0 {
            v |= src.get(w + 1).map_or(0, |x| x << (64 - b));
        }
        if take < 64 {
            v &= (1u64 << take) - 1;
        }
        dst[(d / 64) as usize] |= v << db;
        s += take;
        d += take;
        len -= take;
    }
}

/// True if `bits` ([`Filter::bits`]) admits `ordinal` (false past its end).
#[inline]
pub(crate) fn admits(bits: &[u64], ordinal: Ordinal) -> bool {
    bits.get((ordinal >> 6) as usize)
        .is_some_and(|w| w >> (ordinal & 63) & 1 == 1)
}

/// The chunk holding `ordinal` (`offsets` increasing, `offsets[0] = 0`).
pub(crate) fn chunk_of(offsets: &[Ordinal], ordinal: Ordinal) -> usize {
    offsets.partition_point(|&o| o <= ordinal).saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bits equal `contains` for every ordinal, whatever the piece size (pieces cutting
    /// through chunks, chunks of every kind, empty chunks).
    #[test]
    fn bits_match_contains() {
        let sizes = [0u32, 5, 64, 1, 130, 0, 77, 200, 3, 64, 64, 9];
        let mut offsets = vec![0 as Ordinal];
        for s in sizes {
            offsets.push(offsets.last().unwrap() + s);
        }
        let offsets: Arc<[Ordinal]> = offsets.into();
        let parts: Vec<FilterPart> = sizes
            .iter()
            .enumerate()
            .map(|(c, &s)| match c % 3 {
                0 => FilterPart::All,
                1 => FilterPart::Some(Arc::new((0..s).filter(|l| l % 3 != 1).collect())),
                _ => FilterPart::Some(Arc::new(RoaringBitmap::new())),
            })
            .collect();
        let f = Filter::from_parts(Arc::clone(&offsets), parts);
        let n = *offsets.last().unwrap();
        let want: Vec<bool> = (0..n).map(|o| f.contains(o)).collect();
        for piece in [1, 2, 3, 7, BITS_PIECE] {
            let bits = f.make_bits(piece);
            assert_eq!(bits.len(), (n as usize).div_ceil(64));
            let got: Vec<bool> = (0..n).map(|o| admits(&bits, o)).collect();
            assert_eq!(got, want, "piece {piece}");
            assert!(!admits(&bits, n + 64), "past the end");
        }
        assert_eq!(f.bits(), f.make_bits(1).as_slice());
    }

    /// A bit-range copy equals copying bit by bit, at every alignment of source and
    /// destination and lengths across word boundaries.
    #[test]
    fn copy_bits_matches_bit_by_bit() {
        let src: Vec<u64> = (0..5u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xa5a5)
            .collect();
        for s in [0u32, 1, 31, 63, 64, 65, 100] {
            for d in [0u32, 1, 7, 63, 64, 70] {
                for len in [0u32, 1, 2, 63, 64, 65, 127, 150] {
                    if s + len > 320 {
                        continue;
                    }
                    let mut got = vec![0u64; 5];
                    copy_bits(&src, s, &mut got, d, len);
                    let mut want = vec![0u64; 5];
                    for i in 0..len {
                        if admits(&src, s + i) {
                            want[((d + i) / 64) as usize] |= 1 << ((d + i) % 64);
                        }
                    }
                    assert_eq!(got, want, "s {s} d {d} len {len}");
                }
            }
        }
    }

    /// Bits derived from an older filter's — chunks shared in runs, shifted by inserted
    /// and removed chunks, new chunks, a map pointing past the donor — equal bits made from
    /// the parts.
    #[test]
    fn derived_bits_equal_made_bits() {
        let part = |seed: u32, size: u32| -> FilterPart {
            match seed % 4 {
                0 => FilterPart::All,
                3 => FilterPart::Some(Arc::new(RoaringBitmap::new())),
                _ => FilterPart::Some(Arc::new((0..size).filter(|l| (l * 7 + seed) % 5 < 2).collect())),
            }
        };
        let offsets_of = |sizes: &[u32]| -> Arc<[Ordinal]> {
            let mut o = vec![0];
            for s in sizes {
                o.push(o.last().unwrap() + s);
            }
            o.into()
        };
        let old_sizes: Vec<u32> = (0..40).map(|i| [64, 3, 100, 1, 70, 0, 129][i % 7]).collect();
        let old_parts: Vec<FilterPart> = old_sizes.iter().enumerate().map(|(i, &s)| part(i as u32, s)).collect();
        let old = Filter::from_parts(offsets_of(&old_sizes), old_parts.clone());
        old.bits();
        // New view: chunk 5 removed, two chunks inserted after 12, chunk 20 changed, the
        // last chunk mapped to one the donor lacks.
        let mut map: Vec<u32> = Vec::new();
        let (mut sizes, mut parts) = (Vec::new(), Vec::new());
        for j in 0..40u32 {
            if j == 5 {
                continue;
            }
            if j == 20 {
                map.push(NEW);
                sizes.push(65);
                parts.push(part(99, 65));
                continue;
            }
            map.push(j);
            sizes.push(old_sizes[j as usize]);
            parts.push(old_parts[j as usize].clone());
            if j == 12 {
                for (k, s) in [(7u32, 33u32), (8, 64)] {
                    map.push(NEW);
                    sizes.push(s);
                    parts.push(part(k, s));
                }
            }
        }
        map.push(1000);
        sizes.push(10);
        parts.push(part(1, 10));
        let mut new = Filter::from_parts(offsets_of(&sizes), parts);
        new.bits_donor = Some(BitsDonor {
            offsets: Arc::clone(&old.offsets),
            bits: Arc::clone(&old.bits),
            map: map.into(),
        });
        assert_eq!(new.bits(), new.make_bits(BITS_PIECE).as_slice());
        let n = *new.offsets.last().unwrap();
        let want: Vec<bool> = (0..n).map(|o| new.contains(o)).collect();
        assert_eq!((0..n).map(|o| admits(new.bits(), o)).collect::<Vec<_>>(), want);
    }
}
