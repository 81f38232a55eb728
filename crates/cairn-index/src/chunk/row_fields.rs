//! The per-row fields of a dense part — each row's scale, two bound terms, crc32 of its
//! vector, crc32 of its codes, node object and vector offset — read where they lie: one run of bytes in the part's stored
//! layout (`storage-format.md` §7.3.4), a slice of the stored value (mapped where the
//! store maps it, `Store::get_derived_shared`) or of a copy, or encoded when a part is
//! built. A scan reads them little endian, a row at a time, so a loaded part decodes none
//! of them into memory of its own.

use bytes::Bytes;
use cairn_core::Hash;

/// Bytes of one row's fields: scale, bound terms `u` and `v`, the vector's crc32, the
/// codes' crc32 (4 each), node hash (32), offset (4).
pub(crate) const ROW_FIELD_BYTES: usize = 4 + 4 + 4 + 4 + 4 + 32 + 4;

/// The fields of `rows` rows as stored: column by column — scales, bound terms `u`, bound
/// terms `v`, vector crcs, code crcs (`f32`/`u32` little endian), node hashes, offsets
/// (`u32` little endian).
/// Equal when the bytes are (floats compared bit for bit).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RowFields {
    rows: usize,
    bytes: Bytes,
}

impl RowFields {
    /// The fields of `rows` rows in `bytes` (exactly `rows ·` [`ROW_FIELD_BYTES`] long: the
    /// caller has checked the length, `None` otherwise).
    pub(crate) fn from_bytes(rows: usize, bytes: Bytes) -> Option<RowFields> {
        (bytes.len() == rows * ROW_FIELD_BYTES).then_some(RowFields { rows, bytes })
    }

    /// Encodes the fields of built rows (all seven slices the same length).
    pub(crate) fn build(
        scales: &[f32],
        bound_u: &[f32],
        bound_v: &[f32],
        crcs: &[u32],
        code_crcs: &[u32],
        nodes: &[Hash],
        offsets: &[u32],
    ) -> RowFields {
        let rows = scales.len();
        debug_assert!([
            bound_u.len(),
            bound_v.len(),
            crcs.len(),
            code_crcs.len(),
            nodes.len(),
            offsets.len()
        ]
        .iter()
        .all(|&l| l == rows));
        let mut b = Vec::with_capacity(rows * ROW_FIELD_BYTES);
        for column in [scales, bound_u, bound_v] {
            column
                .iter()
                .for_each(|x| b.extend_from_slice(&x.to_bits().to_le_bytes()));
        }
        for column in [crcs, code_crcs] {
            column.iter().for_each(|c| b.extend_from_slice(&c.to_le_bytes()));
        }
        nodes.iter().for_each(|h| b.extend_from_slice(h.as_bytes()));
        offsets.iter().for_each(|o| b.extend_from_slice(&o.to_le_bytes()));
        RowFields {
            rows,
            bytes: Bytes::from(b),
        }
    }

    /// The stored bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Where row `r`'s entry of a column of `width` bytes a row starts; `column`: the bytes
    /// a row has in the columns before it (0, 4, 8, 12, 16 for the scales, bound terms and
    /// crcs, 20 for the node hashes, 52 for the offsets), so the column starts at byte
    /// `column · rows`.
    #[inline(always)]
    fn at(&self, column: usize, width: usize, r: usize) -> usize {
        debug_assert!(r < self.rows);
        column * self.rows + width * r
    }

    /// Row `r`'s entry of a 4-byte column ([`RowFields::at`]'s `column`).
    #[inline(always)]
    fn u32_at(&self, column: usize, r: usize) -> u32 {
        let at = self.at(column, 4, r);
        u32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes"))
    }

    /// Row `r`'s int8 scale.
    #[inline(always)]
    pub(crate) fn scale(&self, r: usize) -> f32 {
        f32::from_bits(self.u32_at(0, r))
    }

    /// Row `r`'s bound term `u` (`dense/int8.rs`).
    #[inline(always)]
    pub(crate) fn bound_u(&self, r: usize) -> f32 {
        f32::from_bits(self.u32_at(4, r))
    }

    /// Row `r`'s bound term `v`.
    #[inline(always)]
    pub(crate) fn bound_v(&self, r: usize) -> f32 {
        f32::from_bits(self.u32_at(8, r))
    }

    /// The crc32 of row `r`'s little-endian bytes.
    pub(crate) fn crc(&self, r: usize) -> u32 {
        self.u32_at(12, r)
    }

    /// True if `codes` are row `r`'s int8 codes as the part was built with them: their
    /// crc32 is the row's and none is −128 (which no quantisation writes).
    pub(crate) fn codes_hold(&self, r: usize, codes: &[u8]) -> bool {
        crc32fast::hash(codes) == self.code_crc(r) && !codes.contains(&(i8::MIN as u8))
    }

    /// The crc32 of row `r`'s `dim` int8 codes (as bytes).
    #[inline]
    fn code_crc(&self, r: usize) -> u32 {
        self.u32_at(16, r)
    }

    /// Why row `r`'s codes are refused ([`RowFields::codes_hold`]).
    pub(crate) fn codes_refused(r: usize) -> String {
        format!("the int8 codes of row {r} fail their checksum")
    }

    /// Row `r`'s node object.
    pub(crate) fn node(&self, r: usize) -> Hash {
        let at = self.at(20, 32, r);
        Hash::from_bytes(self.bytes[at..at + 32].try_into().expect("32 bytes"))
    }

    /// Where row `r`'s vector starts in its node object's encoding.
    pub(crate) fn offset(&self, r: usize) -> u32 {
        self.u32_at(52, r)
    }

    /// Row `r`'s node object and the offset of its vector in the object's encoding, if
    /// there is such a row.
    pub(crate) fn place(&self, r: usize) -> Option<(Hash, u32)> {
        (r < self.rows).then(|| (self.node(r), self.offset(r)))
    }

    /// The bytes of row `r`'s scale and bound terms, for a prefetch (three cache lines).
    #[inline(always)]
    pub(crate) fn bound_bytes(&self, r: usize) -> [&[u8]; 3] {
        [0, 4, 8].map(|c| {
            let at = self.at(c, 4, r);
            &self.bytes[at..at + 4]
        })
    }

    /// Checks that no scale or bound term is negative or not a number (bounds are rounded
    /// up, so a vector of huge components may have an infinite one).
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let floats = &self.bytes[..12 * self.rows];
        let bad = floats.chunks_exact(4).any(|c| {
            let x = f32::from_le_bytes(c.try_into().expect("4 bytes"));
            x.is_nan() || x < 0.0
        });
        if bad {
            return Err("a row's scale or bound is negative or not a number");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_fields_read_back_and_lie_in_the_stored_layout() {
        let (a, b) = (Hash::of(b"a"), Hash::of(b"b"));
        let f = RowFields::build(
            &[0.5, 2.0],
            &[1.0, f32::INFINITY],
            &[0.25, 3.0],
            &[7, 9],
            &[5, 6],
            &[a, b],
            &[11, 13],
        );
        assert_eq!(
            (f.scale(1), f.bound_u(1), f.bound_v(0), f.crc(1), f.code_crc(0)),
            (2.0, f32::INFINITY, 0.25, 9, 5)
        );
        assert_eq!((f.node(0), f.node(1), f.offset(0), f.offset(1)), (a, b, 11, 13));
        assert_eq!(f.as_bytes().len(), 2 * ROW_FIELD_BYTES);
        assert_eq!(&f.as_bytes()[..8], &[0, 0, 0, 0x3f, 0, 0, 0, 0x40]);
        assert_eq!(&f.as_bytes()[16..24], &[0, 0, 0x80, 0x3e, 0, 0, 0x40, 0x40]);
        assert_eq!(RowFields::from_bytes(2, f.bytes.clone()), Some(f.clone()));
        assert_eq!(RowFields::from_bytes(3, f.bytes.clone()), None);
        assert!(f.check().is_ok());
        assert_eq!(&f.as_bytes()[32..40], &[5, 0, 0, 0, 6, 0, 0, 0]);
        let negative = RowFields::build(&[0.5], &[-1.0], &[0.0], &[0], &[0], &[a], &[0]);
        assert!(negative.check().is_err());
        let nan = RowFields::build(&[f32::NAN], &[1.0], &[0.0], &[0], &[0], &[a], &[0]);
        assert!(nan.check().is_err());
    }
}
