//! The key layout under a repository's prefix (storage-format §5.4): every key the
//! object-store backend reads or writes is spelled here.
//!
//! - `objects/<64 hex digits>`: an object, named by its blake3 hash.
//! - `refs/<escaped name>`: one ref. The name is escaped into one flat key segment, so that
//!   `a` and `a/b` can both exist on every service (a hierarchical namespace, such as Azure
//!   Data Lake's or a file system's, cannot hold a file and a directory of one name):
//!   ASCII letters, digits, `-` and `.` (but a leading `.`) stand for themselves; every
//!   other byte is `_` and two uppercase hex digits (`refs/heads/main` →
//!   `refs/refs_2Fheads_2Fmain`).
//! - `reflog/<16 hex digits>`: one ref-log record (or checkpoint), by sequence number;
//!   fixed-width, so name order is number order.
//! - `derived/<hex of the key>`: a derived-data value, when kept remotely too.

use cairn_core::Hash;

use crate::error::StoreError;

/// The directory of objects.
pub(super) const OBJECTS: &str = "objects";
/// The directory of refs.
pub(super) const REFS: &str = "refs";
/// The directory of ref-log records.
pub(super) const REFLOG: &str = "reflog";
/// The directory of remotely kept derived data.
pub(super) const DERIVED: &str = "derived";

/// The key of object `hash`.
pub(super) fn object(hash: &Hash) -> String {
    format!("{OBJECTS}/{}", hash.to_hex())
}

/// The hash an object key's file name spells (`None`: not an object's name).
pub(super) fn object_hash(file_name: &str) -> Option<Hash> {
    if file_name.len() != 64
        || !file_name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    Hash::from_hex(file_name).ok()
}

/// The key of ref `name`. Refuses an empty name (it has no key).
pub(super) fn reference(name: &str) -> Result<String, StoreError> {
    if name.is_empty() {
        return Err(StoreError::Backend("a ref name cannot be empty".into()));
    }
    let mut out = String::with_capacity(REFS.len() + 1 + name.len());
    out.push_str(REFS);
    out.push('/');
    for (i, b) in name.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b'-' || (b == b'.' && i > 0);
        if plain {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    Ok(out)
}

/// The ref name a ref key's file name spells (`None`: not one [`reference`] makes).
pub(super) fn reference_name(file_name: &str) -> Option<String> {
    let bytes = file_name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'_' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let name = String::from_utf8(out).ok()?;
    // Only the one spelling `reference` makes names a ref: a key written by hand with
    // another spelling of the same name is not mistaken for it.
    (reference(&name).ok()?.strip_prefix("refs/")? == file_name).then_some(name)
}

/// The key of ref-log record `seq`.
pub(super) fn reflog(seq: u64) -> String {
    format!("{REFLOG}/{seq:016x}")
}

/// The sequence number a ref-log key's file name spells.
pub(super) fn reflog_seq(file_name: &str) -> Option<u64> {
    if file_name.len() != 16 {
        return None;
    }
    u64::from_str_radix(file_name, 16).ok()
}

/// The key of derived value `key`.
pub(super) fn derived(key: &[u8]) -> String {
    format!("{DERIVED}/{}", crate::error::hex(key))
}

/// The derived key a remote derived key's file name spells.
pub(super) fn derived_key(file_name: &str) -> Option<Vec<u8>> {
    if !file_name.len().is_multiple_of(2) {
        return None;
    }
    (0..file_name.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(file_name.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_keys_round_trip_and_stay_flat() {
        for name in [
            "HEAD",
            "refs/heads/main",
            "meta/dense-dim/m:1",
            "a_b",
            ".x",
            "x.y",
            "é/ü",
            "refs/tags/v1.0",
        ] {
            let key = reference(name).unwrap();
            let file = key.strip_prefix("refs/").unwrap();
            assert!(!file.contains('/'), "{key}");
            assert!(!file.starts_with('.'), "{key}");
            assert_eq!(reference_name(file).as_deref(), Some(name), "{key}");
        }
        assert_eq!(reference("refs/heads/main").unwrap(), "refs/refs_2Fheads_2Fmain");
        assert!(reference("").is_err());
        // Another spelling of a name is not that name's key.
        assert_eq!(reference_name("_48EAD"), None);
        assert_eq!(reference_name("a_2"), None);
    }

    #[test]
    fn other_keys_round_trip() {
        let h = Hash::of(b"x");
        assert_eq!(object_hash(object(&h).strip_prefix("objects/").unwrap()), Some(h));
        assert_eq!(object_hash("ABC"), None);
        assert_eq!(reflog_seq(reflog(42).strip_prefix("reflog/").unwrap()), Some(42));
        assert_eq!(reflog(1), "reflog/0000000000000001");
        let k = b"ck/\x00\xff".to_vec();
        assert_eq!(derived_key(derived(&k).strip_prefix("derived/").unwrap()), Some(k));
    }
}
