//! Shared synthetic data for the benchmarks: deterministic (xorshift), so every run and
//! machine measures the same inputs.

#![allow(dead_code)]

use cairn::{Node, NodeId};

/// A small deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn unit(&mut self) -> f32 {
        (self.next() % 1_000_000) as f32 / 1_000_000.0 - 0.5
    }
}

pub const WORDS: &[&str] = &[
    "wing",
    "stall",
    "lift",
    "drag",
    "boundary",
    "layer",
    "shock",
    "wave",
    "nozzle",
    "flow",
    "laminar",
    "turbulent",
    "pressure",
    "heat",
    "transfer",
    "supersonic",
    "vortex",
    "panel",
    "flutter",
    "buckling",
    "mach",
    "number",
    "reynolds",
    "separation",
    "airfoil",
    "thickness",
    "camber",
    "slender",
    "body",
    "jet",
    "plate",
    "cylinder",
];

/// A unit vector of `dim` components.
pub fn unit_vector(rng: &mut Rng, dim: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..dim).map(|_| rng.unit()).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.into_iter().map(|x| x / norm).collect()
}

/// `words` random words.
pub fn text(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| WORDS[(rng.next() % WORDS.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Node `i` of the benchmark corpus: a label, ~50 words of text, a 384-d embedding.
pub fn node(rng: &mut Rng, i: usize) -> Node {
    Node::new(NodeId::new(format!("doc-{i:07}")).expect("valid id"))
        .with_label(if i.is_multiple_of(1000) { "Rare" } else { "Document" })
        .with_text(text(rng, 50))
        .with_embedding("minilm", unit_vector(rng, 384))
}

/// `n` corpus nodes.
pub fn corpus(n: usize) -> Vec<Node> {
    let mut rng = Rng(0x5eed);
    (0..n).map(|i| node(&mut rng, i)).collect()
}

/// A `usize` setting from the environment, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

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
