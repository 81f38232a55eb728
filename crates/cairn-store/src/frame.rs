//! The integrity frame around every value a persistent backend stores.
//!
//! A frame is the CRC-32 of the payload (crc32fast: CRC-32/ISO-HDLC, the IEEE polynomial
//! used by zlib and Ethernet) as 4 little-endian bytes, followed by the payload itself.
//! Framing is deterministic, so two equal payloads always have equal frames; the sled
//! backend relies on that to compare-and-swap refs on their framed bytes.

/// Length of the checksum that precedes the payload.
pub(crate) const CRC_LEN: usize = 4;

/// Wraps `payload` in a frame: its crc32 (4 bytes, little-endian), then the payload.
///
/// ```
/// use cairn_store::{frame, unframe};
/// let framed = frame(b"cairn");
/// assert_eq!(framed.len(), 4 + 5);
/// assert_eq!(unframe(&framed), Ok(&b"cairn"[..]));
/// ```
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(CRC_LEN + payload.len());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Checks a frame made by [`frame`] and returns its payload, or a message saying which
/// check failed (too short to hold a checksum, or checksum mismatch).
///
/// ```
/// use cairn_store::{frame, unframe};
/// let mut framed = frame(b"cairn");
/// framed[6] ^= 0x01;
/// assert!(unframe(&framed).is_err());
/// assert!(unframe(&[0, 0]).is_err());
/// ```
pub fn unframe(bytes: &[u8]) -> Result<&[u8], String> {
    let Some((crc, payload)) = bytes.split_first_chunk::<CRC_LEN>() else {
        return Err(format!(
            "value is {} bytes, too short to hold a {CRC_LEN}-byte checksum",
            bytes.len()
        ));
    };
    let stored = u32::from_le_bytes(*crc);
    let computed = crc32fast::hash(payload);
    if stored != computed {
        return Err(format!(
            "crc32 mismatch: stored {stored:08x}, computed {computed:08x} over {} payload bytes",
            payload.len()
        ));
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for payload in [&b""[..], b"x", b"hello, cairn", &[0u8; 1000][..]] {
            let framed = frame(payload);
            assert_eq!(framed.len(), payload.len() + CRC_LEN);
            assert_eq!(unframe(&framed), Ok(payload));
        }
    }

    #[test]
    fn golden_vector() {
        // CRC-32/ISO-HDLC check value: crc32("123456789") = 0xcbf43926. Pins both the
        // algorithm and the little-endian byte order written to disk.
        assert_eq!(frame(b"123456789")[..4], [0x26, 0x39, 0xf4, 0xcb]);
        assert_eq!(frame(b""), vec![0, 0, 0, 0]);
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let framed = frame(b"a small framed value");
        for byte in 0..framed.len() {
            for bit in 0..8 {
                let mut damaged = framed.clone();
                damaged[byte] ^= 1 << bit;
                assert!(
                    unframe(&damaged).is_err(),
                    "flip of bit {bit} of byte {byte} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn short_input_is_refused() {
        for len in 0..CRC_LEN {
            let err = unframe(&vec![0; len]).unwrap_err();
            assert!(err.contains("too short"), "{err}");
        }
    }

    #[test]
    fn truncation_and_extension_are_detected() {
        let framed = frame(b"payload");
        assert!(unframe(&framed[..framed.len() - 1]).is_err());
        let mut longer = framed.clone();
        longer.push(0);
        assert!(unframe(&longer).is_err());
    }
}
