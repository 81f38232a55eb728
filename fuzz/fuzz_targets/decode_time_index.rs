//! Arbitrary bytes into the time index value decoder (storage-format.md §7.1). The
//! repository reads these values from its derived space, where a damaged or hostile value
//! passes the store's crc whenever it was written as is: the decoder may refuse any input,
//! but it must not panic, and what it accepts must encode back to the same bytes.

#![no_main]

use cairn_graph::time_index;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((id, timestamp_ms)) = time_index::decode(data) {
        assert_eq!(time_index::encode(&id, timestamp_ms), data, "time index value");
    }
});
