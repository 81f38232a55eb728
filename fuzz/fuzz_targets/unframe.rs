//! Arbitrary bytes into `unframe`. It must not panic; what it accepts must frame back to
//! exactly the input, and framing any payload must unframe to that payload.

#![no_main]

use cairn_store::{frame, unframe};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(payload) = unframe(data) {
        assert_eq!(frame(payload), data, "unframe accepted bytes that are not a frame");
    }
    let framed = frame(data);
    assert_eq!(unframe(&framed), Ok(data), "a frame did not round-trip");
});
