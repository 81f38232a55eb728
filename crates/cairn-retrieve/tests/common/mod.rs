//! A fake [`RetrievalSource`] over in-memory indexes and a small hand-written corpus.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_core::{CommitId, Edge, Hash, Node, NodeId, SparseVector, Validity};
use cairn_index::IndexNeeds;
use cairn_index::{CommitIndexes, IndexParams};
use cairn_retrieve::{ResolvedCommit, RetrievalSource, SourceError};

/// The main commit's timestamp (the default validity time).
pub const MAIN_TS: i64 = 1_700_000_000_000;
/// The old commit's timestamp.
pub const OLD_TS: i64 = 1_500_000_000_000;

pub fn id(s: &str) -> NodeId {
    NodeId::new(s).expect("test ids are valid")
}

/// Builds a resolved commit over `nodes` and `edges`.
pub fn resolved(name: &str, ts: i64, nodes: Vec<Node>, edges: &[Edge]) -> ResolvedCommit {
    let mut with_hashes: Vec<(Hash, Node)> = nodes.into_iter().map(|n| (Hash::of(n.id.as_bytes()), n)).collect();
    with_hashes.sort_by(|a, b| a.1.id.cmp(&b.1.id));
    let indexes = CommitIndexes::build(Hash::of(name.as_bytes()), &IndexParams::default(), &with_hashes, edges);
    ResolvedCommit {
        commit: CommitId(Hash::of(format!("commit:{name}").as_bytes())),
        timestamp_ms: ts,
        indexes: Arc::new(indexes),
        repairs: Vec::new(),
    }
}

/// Named commits; `None` resolves to `head`.
pub struct FakeSource {
    pub commits: BTreeMap<String, ResolvedCommit>,
    pub head: String,
}

impl RetrievalSource for FakeSource {
    fn resolve(&self, at: Option<&str>, _needs: &IndexNeeds) -> Result<ResolvedCommit, SourceError> {
        let rev = at.unwrap_or(&self.head);
        self.commits
            .get(rev)
            .cloned()
            .ok_or_else(|| SourceError::UnknownRevision {
                rev: rev.to_string(),
                detail: "no such commit in the fake source".into(),
            })
    }
}

fn doc(i: &str, text: &str, emb: [f32; 4], year: i64, lang: &str) -> Node {
    Node::new(id(i))
        .with_label("Document")
        .with_text(text)
        .with_embedding("minilm", emb.to_vec())
        .with_prop("year", year)
        .with_prop("lang", lang)
}

/// Sparse "splade" dimensions: 1 stall, 2 wing, 3 drag, 4 boundary, 5 flutter.
fn sparse(pairs: &[(u32, f32)]) -> SparseVector {
    SparseVector::new(pairs.iter().map(|p| p.0).collect(), pairs.iter().map(|p| p.1).collect())
}

/// The hand-written corpus: 12 documents (one expired, one not yet valid, one `Rare`),
/// 2 notes, 2 people and 3 topics, with `cites`, `mentions` and `authored_by` edges.
pub fn corpus() -> (Vec<Node>, Vec<Edge>) {
    let nodes = vec![
        doc(
            "doc-01",
            "Wing stall occurs when the angle of attack exceeds the critical angle and the boundary layer separates.",
            [0.9, 0.1, 0.1, 0.0],
            1958,
            "en",
        )
        .with_sparse("splade", sparse(&[(1, 1.0), (2, 0.8), (4, 0.5)]))
        .with_prop("title", "Wing stall"),
        doc(
            "doc-02",
            "Boundary layer separation on swept wings at high angles of attack.",
            [0.8, 0.3, 0.1, 0.0],
            1962,
            "en",
        )
        .with_sparse("splade", sparse(&[(2, 0.7), (4, 1.0)])),
        doc(
            "doc-03",
            "Drag reduction by laminar flow control on aircraft wings.",
            [0.3, 0.9, 0.1, 0.0],
            1970,
            "en",
        )
        .with_sparse("splade", sparse(&[(2, 0.4), (3, 1.0)])),
        doc(
            "doc-04",
            "Heat transfer in hypersonic flow over blunt bodies.",
            [0.1, 0.4, 0.2, 0.0],
            1965,
            "de",
        ),
        doc(
            "doc-05",
            "Flutter of aeroelastic wing structures at high speed.",
            [0.3, 0.1, 0.9, 0.0],
            1960,
            "en",
        )
        .with_sparse("splade", sparse(&[(2, 0.5), (5, 1.0)])),
        doc(
            "doc-06",
            "Stall recovery techniques for light aircraft pilots.",
            [0.7, 0.0, 0.0, 0.1],
            1975,
            "fr",
        )
        .with_sparse("splade", sparse(&[(1, 0.9)])),
        doc(
            "doc-07",
            "Library classification of aeronautical reports.",
            [0.0, 0.0, 0.0, 1.0],
            1971,
            "en",
        ),
        doc(
            "doc-08",
            "Obsolete stall warning system description.",
            [0.85, 0.1, 0.0, 0.0],
            1950,
            "en",
        )
        .with_validity(Validity::new(None, Some(1_600_000_000_000))),
        doc(
            "doc-09",
            "Future wing stall prediction with neural networks.",
            [0.88, 0.1, 0.0, 0.0],
            2030,
            "en",
        )
        .with_validity(Validity::new(Some(1_800_000_000_000), None)),
        doc(
            "doc-10",
            "Pressure distribution on a wing near stall.",
            [0.75, 0.2, 0.1, 0.0],
            1959,
            "en",
        ),
        doc(
            "doc-11",
            "Vortex generators delay stall on wings.",
            [0.8, 0.2, 0.0, 0.0],
            1968,
            "de",
        ),
        doc(
            "doc-12",
            "Compressibility effects on wing stall at transonic speeds.",
            [0.6, 0.3, 0.1, 0.0],
            1966,
            "en",
        )
        .with_label("Rare"),
        Node::new(id("note-01"))
            .with_label("Note")
            .with_text("Remember: stall speed increases with load factor.")
            .with_embedding("minilm", vec![0.7, 0.0, 0.0, 0.0]),
        Node::new(id("note-02"))
            .with_label("Note")
            .with_text("Meeting notes about drag measurements in the wind tunnel.")
            .with_embedding("minilm", vec![0.1, 0.8, 0.0, 0.1]),
        Node::new(id("person-01"))
            .with_label("Person")
            .with_text("Ludwig Prandtl, boundary layer theory."),
        Node::new(id("person-02"))
            .with_label("Person")
            .with_text("Theodore von Karman, vortex streets."),
        Node::new(id("topic-drag")).with_label("Topic").with_text("drag"),
        Node::new(id("topic-flutter")).with_label("Topic").with_text("flutter"),
        Node::new(id("topic-stall")).with_label("Topic").with_text("stall"),
    ];
    let e = |s: &str, k: &str, t: &str| Edge::new(id(s), k, id(t));
    let edges = vec![
        e("doc-02", "cites", "doc-01"),
        e("doc-10", "cites", "doc-01"),
        e("doc-11", "cites", "doc-10"),
        e("doc-04", "cites", "doc-03"),
        e("doc-01", "mentions", "topic-stall"),
        e("doc-06", "mentions", "topic-stall"),
        e("doc-12", "mentions", "topic-stall"),
        e("note-01", "mentions", "topic-stall"),
        e("doc-03", "mentions", "topic-drag"),
        e("note-02", "mentions", "topic-drag"),
        e("doc-05", "mentions", "topic-flutter"),
        e("doc-01", "authored_by", "person-01"),
        e("doc-02", "authored_by", "person-01"),
        e("doc-05", "authored_by", "person-02"),
        e("doc-07", "cites", "doc-05").with_validity(Validity::new(None, Some(1_650_000_000_000))),
        e("doc-05", "cites", "doc-04").with_validity(Validity::new(Some(1_800_000_000_000), None)),
    ];
    (nodes, edges)
}

/// `main` (the whole corpus, head) and `old` (without doc-11 and doc-12, earlier).
pub fn source() -> FakeSource {
    let (nodes, edges) = corpus();
    let main = resolved("main", MAIN_TS, nodes.clone(), &edges);
    let old_nodes: Vec<Node> = nodes
        .into_iter()
        .filter(|n| !matches!(n.id.as_str(), "doc-11" | "doc-12"))
        .collect();
    let old_edges: Vec<Edge> = edges
        .into_iter()
        .filter(|e| !["doc-11", "doc-12"].contains(&e.source.as_str()))
        .collect();
    let old = resolved("old", OLD_TS, old_nodes, &old_edges);
    FakeSource {
        commits: BTreeMap::from([("main".to_string(), main), ("old".to_string(), old)]),
        head: "main".into(),
    }
}

/// A unit vector toward "stall".
pub const STALL: [f32; 4] = [1.0, 0.0, 0.0, 0.0];
