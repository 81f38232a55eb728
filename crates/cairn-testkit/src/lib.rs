//! # cairn-testkit
//!
//! Fixtures shared by Cairn's tests and benchmarks (a dev-dependency only, like jj's
//! `lib/testutils`): one seeded generator, one word list, one synthetic corpus, and the
//! small process and file helpers that were copied between test files, a stub
//! embeddings service on loopback ([`embed_stub`]), and moto's S3 server on loopback
//! ([`moto()`]).
//!
//! Everything here is deterministic: the same seed gives the same nodes on every run and
//! machine, so snapshot tests and benchmark inputs never drift.
//!
//! ```
//! use cairn_testkit::{corpus, Rng};
//!
//! let mut rng = Rng(42);
//! let a = rng.next();
//! assert_eq!(Rng(42).next(), a);
//! let nodes = corpus(3);
//! assert_eq!(nodes[0].id.as_str(), "doc-0000000");
//! ```

#![warn(missing_docs)]

mod embed_stub;
mod moto;

use std::path::{Path, PathBuf};

use cairn_core::{Node, NodeId};

pub use embed_stub::{embed_stub, EmbedStub};
pub use moto::{moto, Moto};

/// A small deterministic generator (xorshift64). Seeds must be non-zero.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A number in `[-0.5, 0.5)` on a grid of `steps` values.
    pub fn unit_steps(&mut self, steps: u64) -> f32 {
        (self.next() % steps) as f32 / steps as f32 - 0.5
    }

    /// A number in `[-0.5, 0.5)` on a grid of a million values.
    pub fn unit(&mut self) -> f32 {
        self.unit_steps(1_000_000)
    }
}

/// The word list of the synthetic corpora (aerodynamics terms, as in Cranfield).
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

/// A unit vector of `dim` components drawn with [`Rng::unit`].
pub fn unit_vector(rng: &mut Rng, dim: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..dim).map(|_| rng.unit()).collect();
    normalise(v)
}

/// `v` divided by its L2 norm (a zero vector stays near zero).
pub fn normalise(v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.into_iter().map(|x| x / norm).collect()
}

/// `words` words drawn from `list`, space-separated.
pub fn text_from(rng: &mut Rng, list: &[&str], words: usize) -> String {
    (0..words)
        .map(|_| list[(rng.next() % list.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// `words` words drawn from [`WORDS`].
pub fn text(rng: &mut Rng, words: usize) -> String {
    text_from(rng, WORDS, words)
}

/// Node `i` of the benchmark corpus: id `doc-{i:07}`, label `Rare` for every 1000th node
/// and `Document` otherwise, ~50 words of text, a 384-d `minilm` embedding.
pub fn node(rng: &mut Rng, i: usize) -> Node {
    Node::new(NodeId::new(format!("doc-{i:07}")).expect("valid id"))
        .with_label(if i.is_multiple_of(1000) { "Rare" } else { "Document" })
        .with_text(text(rng, 50))
        .with_embedding("minilm", unit_vector(rng, 384))
}

/// The first `n` nodes of the benchmark corpus (seed `0x5eed`).
pub fn corpus(n: usize) -> Vec<Node> {
    let mut rng = Rng(0x5eed);
    (0..n).map(|i| node(&mut rng, i)).collect()
}

/// A `usize` setting from the environment, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `VmRSS` and `VmHWM` (peak) of this process, in MiB (zeros where `/proc` is absent).
pub fn rss_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Every regular file under `dir`, relative to it, sorted.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// The segment files (`*.seg`) of a segment store's `log` (`objects` or `derived`) under
/// `store`, in number order (storage-format §6.7).
pub fn segment_files(store: &Path, log: &str) -> Vec<PathBuf> {
    files(&store.join(log))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .map(|p| store.join(log).join(p))
        .collect()
}

/// Copies the directory tree `from` to `to` (created if absent): every directory, empty
/// ones included, and every regular file. Crash tests copy a store's directory as a kill
/// would leave it.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("dir entry");
        let (src, dest) = (e.path(), to.join(e.file_name()));
        if e.file_type().expect("file type").is_dir() {
            copy_tree(&src, &dest);
        } else {
            std::fs::copy(&src, &dest).expect("copy file");
        }
    }
}

/// Bytes of every regular file under `dir`.
pub fn tree_bytes(dir: &Path) -> u64 {
    files(dir)
        .iter()
        .map(|rel| std::fs::metadata(dir.join(rel)).map_or(0, |m| m.len()))
        .sum()
}
