//! Carrier package for Cairn's cross-crate integration tests (`tests/`) and benchmarks (`benches/`).
