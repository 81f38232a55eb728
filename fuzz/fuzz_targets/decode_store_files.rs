//! Arbitrary bytes into the segment store's decoders of its own files: a segment's hint
//! and the index snapshot (`index.crx`). For the hint the input is the body and its
//! checksum is appended here; for the snapshot it is the whole file, whose checksums the
//! entry point does not check — so the fuzzer reaches the parsers (a damaged file fails
//! its checksum first). A
//! decoder may refuse anything, must not panic or allocate beyond what the input
//! describes, and what it accepts must encode back to the same bytes (hint) or find its
//! own keys (snapshot).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The segment length a hint names: its first 8 bytes after the magic, when present,
    // so an accepted input is reachable; else an arbitrary one.
    let segment_len = data
        .get(4..12)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes);
    cairn_store::fuzzing::hint(data, segment_len);
    cairn_store::fuzzing::snapshot(data);
});
