//! Shared synthetic data for the benchmarks (from `cairn-testkit`): deterministic
//! (xorshift), so every run and machine measures the same inputs.

#![allow(dead_code)]

/// The allocator Cairn's own binaries use (`cairn`, the Python module), so the peak RSS a
/// bench reports is what they would show (see README, "Memory").
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(unused_imports)] // each bench uses a different subset
pub use cairn_testkit::{corpus, env_usize, node, text, unit_vector, Rng, WORDS};

/// A new repository of store kind `kind` (`CAIRN_BENCH_STORE`: `segment`, `sled` or
/// `memory`); on-disk kinds live in `dir`.
pub fn open_store(kind: &str, dir: &std::path::Path) -> cairn::Repo {
    use cairn::{Repo, StoreKind};
    match kind {
        "segment" => Repo::init_with(dir.join("repo"), StoreKind::Segment).expect("init segment repository"),
        "sled" => Repo::init_with(dir.join("repo"), StoreKind::Sled).expect("init sled repository"),
        "memory" => Repo::in_memory().expect("in-memory repository"),
        other => panic!("CAIRN_BENCH_STORE={other}: expected `segment`, `sled` or `memory`"),
    }
}
