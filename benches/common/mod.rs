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

/// The benchmark corpus's dimension (`node`'s `minilm` vectors).
pub const DIM: usize = 384;

/// Puts `n` corpus nodes (`node`) into `repo`, in commits of 10,000.
pub fn import_corpus(repo: &cairn::Repo, n: usize, rng: &mut Rng) {
    for start in (0..n).step_by(10_000) {
        let mut tx = repo.transaction().expect("tx");
        for i in start..(start + 10_000).min(n) {
            tx.put_node(node(rng, i)).expect("put");
        }
        tx.commit("import").expect("commit");
    }
}

/// What a clone moves, measured as the fetch it is: a new repository at `path` with `url`
/// as `origin`, every branch fetched. The repository, the time all of it took, and what
/// the fetch moved.
pub fn timed_init_and_fetch(
    path: &std::path::Path,
    url: &str,
) -> (cairn::Repo, std::time::Duration, cairn::TransferStats) {
    let t = std::time::Instant::now();
    let repo = cairn::Repo::init(path).expect("init");
    repo.remote_add("origin", url).expect("remote");
    let fetched = repo.fetch("origin").expect("fetch");
    (repo, t.elapsed(), fetched.transfer)
}

/// A hybrid query (label, vector, text; limit 10), as its result JSON.
pub fn hybrid_query(repo: &cairn::Repo, rng: &mut Rng) -> String {
    let r = repo
        .retrieve()
        .label("Document")
        .vector("minilm", &unit_vector(rng, DIM))
        .text(text(rng, 4))
        .limit(10)
        .execute()
        .expect("retrieve");
    serde_json::to_string(&r).expect("json")
}

/// A one-node commit (`Document`, 50 words, a vector) of node `id`.
pub fn commit_one_node(repo: &cairn::Repo, id: &str, rng: &mut Rng) {
    let mut tx = repo.transaction().expect("tx");
    tx.put_node(
        cairn::Node::new(cairn::NodeId::new(id).expect("id"))
            .with_label("Document")
            .with_text(text(rng, 50))
            .with_embedding("minilm", unit_vector(rng, DIM)),
    )
    .expect("put");
    tx.commit("one node").expect("commit");
}
