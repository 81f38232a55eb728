//! Arbitrary bytes into the reflog record decoder (storage-format.md §6.11). The
//! repository reads these records from the store's ref log, where a damaged or hostile
//! record passes the store's checksums whenever it was written as is: the decoder may
//! refuse any input, but it must not panic or abort (no allocation beyond what the input
//! describes), and what it accepts must encode back to the same bytes.

#![no_main]

use cairn_graph::reflog_entry::RefLogEntry;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(entry) = RefLogEntry::decode(data) {
        assert_eq!(entry.encode(), data, "reflog record");
    }
});
