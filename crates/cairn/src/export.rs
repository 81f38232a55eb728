//! Export of one commit as JSON Lines ([`Repo::export_jsonl`]; the format is documented there).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use cairn_core::{CommitId, Edge, Node, SparseVector, Validity, Value};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::error::{Error, Result};
use crate::repo::Repo;

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportSummary {
    /// The commit exported (the revision resolved).
    pub commit: CommitId,
    /// `node` lines written.
    pub nodes: u64,
    /// `edge` lines written.
    pub edges: u64,
}

impl Repo {
    /// Writes commit `rev` (anything [`Repo::resolve`] takes) to `out` as JSON Lines in the
    /// [import format](Repo::import_jsonl): its nodes in id order, then its edges in key order
    /// (see *The export format* below). Importing the output into an empty
    /// repository gives the same node and edge roots.
    ///
    /// Nodes and edges are read from the commit's trees one at a time
    /// ([`Repo::iter_nodes_at`], [`Repo::iter_edges_at`]) and written one line at a time,
    /// so memory holds one node or edge, its line and one path of the tree, whatever the
    /// size of the commit. `out`
    /// is flushed at the end. A failed write stops the export with
    /// [`Error::Write`] with the I/O error; what was written before stays
    /// written (the CLI writes to a temporary file and renames it only when complete).
    ///
    /// ```
    /// use cairn::Repo;
    ///
    /// let repo = Repo::in_memory()?;
    /// let lines = r#"{"node": {"id": "a", "labels": ["Doc"], "text": "lift", "props": {"year": 1971, "score": 0.5}, "embeddings": {"m": [0.1, -0.2]}}}
    /// {"node": {"id": "b", "valid_from": "2024-01-01", "sparse": {"kw": {"indices": [3, 9], "values": [1.0, 0.5]}}}}
    /// {"edge": {"source": "a", "target": "b", "kind": "cites", "weight": 2.5}}
    /// "#;
    /// repo.import_jsonl(lines.as_bytes(), "import", &mut |_| {})?;
    ///
    /// let mut exported = Vec::new();
    /// let summary = repo.export_jsonl("HEAD", &mut exported)?;
    /// assert_eq!((summary.nodes, summary.edges), (2, 1));
    /// assert!(String::from_utf8(exported.clone())?.starts_with(r#"{"node":{"id":"a","labels":["Doc"]"#));
    ///
    /// let copy = Repo::in_memory()?;
    /// let reimported = copy.import_jsonl(exported.as_slice(), "copy", &mut |_| {})?;
    /// let (before, after) = (repo.stats(&summary.commit)?, copy.stats(&reimported.head.expect("a commit"))?);
    /// assert_eq!(before.node_root, after.node_root);
    /// assert_eq!(before.edge_root, after.edge_root);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # The export format
    ///
    /// The output is every node of the commit, in id order, as a `{"node": {...}}` line, then
    /// every edge, in (source, kind, target) order, as an `{"edge": {...}}` line. Fields that
    /// hold their default are left out (no labels, empty text, no properties, no vectors, an
    /// open validity end, weight 1.0), so the lines stay short; times are integer ms since
    /// the epoch.
    ///
    /// Numbers are written so that reading them back gives the same bits: `f32` vectors and
    /// `f64` weights and property floats in their shortest round-tripping form (`0.1961`, not
    /// `0.19609999656677246`), integers as integers. A property float always carries a `.` or
    /// an exponent (`3.0`, `1e300`), so it is read back as a float, never as an integer. The
    /// store already keeps `-0.0` as `+0.0`, so it is written as `0.0`.
    ///
    /// What is not exported: the commit's history, message, author and time (an import makes
    /// one new commit), and derived data (indexes are rebuilt on use).
    pub fn export_jsonl(&self, rev: &str, out: &mut dyn Write) -> Result<ExportSummary> {
        let commit = self.resolve(rev)?;
        let mut lines = LineWriter { out, buf: Vec::new() };
        let mut nodes = 0u64;
        for node in self.iter_nodes_at(&commit)? {
            lines.write(&Line::Node(NodeLine::of(&node?)))?;
            nodes += 1;
        }
        let mut edges = 0u64;
        for edge in self.iter_edges_at(&commit)? {
            lines.write(&Line::Edge(EdgeLine::of(&edge?)))?;
            edges += 1;
        }
        lines.out.flush().map_err(write_error)?;
        Ok(ExportSummary { commit, nodes, edges })
    }
}

/// Writes one line at a time through a reused buffer.
struct LineWriter<'w> {
    out: &'w mut dyn Write,
    buf: Vec<u8>,
}

impl LineWriter<'_> {
    fn write(&mut self, line: &Line<'_>) -> Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, line)
            .map_err(io::Error::from)
            .and_then(|()| {
                self.buf.push(b'\n');
                self.out.write_all(&self.buf)
            })
            .map_err(write_error)
    }
}

fn write_error(e: io::Error) -> Error {
    Error::Write {
        what: "the export",
        source: e,
    }
}

/// One line of the import format (externally tagged: `{"node": {...}}`).
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Line<'a> {
    Node(NodeLine<'a>),
    Edge(EdgeLine<'a>),
}

/// A node as JSON in the import format's field names (what a `{"node": …}` line holds),
/// defaults left out; `cairn show --json` prints it too. Serialize it with serde.
#[derive(Serialize)]
pub struct NodeLine<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    labels: &'a BTreeSet<String>,
    #[serde(skip_serializing_if = "str::is_empty")]
    text: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    props: &'a BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    embeddings: &'a BTreeMap<String, Vec<f32>>,
    #[serde(skip_serializing_if = "SparseMap::is_empty")]
    sparse: SparseMap<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_from: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_until: Option<i64>,
}

impl<'a> NodeLine<'a> {
    /// `n` in the import format.
    pub fn of(n: &'a Node) -> NodeLine<'a> {
        let Validity {
            valid_from_ms,
            valid_until_ms,
        } = n.validity;
        NodeLine {
            id: n.id.as_str(),
            labels: &n.labels,
            text: &n.text,
            props: &n.props,
            embeddings: &n.embeddings,
            sparse: SparseMap(&n.sparse),
            valid_from: valid_from_ms,
            valid_until: valid_until_ms,
        }
    }
}

/// An edge as JSON in the import format's field names (what an `{"edge": …}` line
/// holds), defaults left out.
#[derive(Serialize)]
pub struct EdgeLine<'a> {
    source: &'a str,
    target: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "is_default_weight")]
    weight: f64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    props: &'a BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_from: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_until: Option<i64>,
}

impl<'a> EdgeLine<'a> {
    /// `e` in the import format.
    pub fn of(e: &'a Edge) -> EdgeLine<'a> {
        EdgeLine {
            source: e.source.as_str(),
            target: e.target.as_str(),
            kind: &e.kind,
            weight: e.weight,
            props: &e.props,
            valid_from: e.validity.valid_from_ms,
            valid_until: e.validity.valid_until_ms,
        }
    }
}

/// The import format's default weight (bit for bit, so nothing else is left out).
fn is_default_weight(w: &f64) -> bool {
    w.to_bits() == 1.0f64.to_bits()
}

/// Sparse vectors as `{"model": {"indices": [...], "values": [...]}}`, every model kept
/// (an empty vector is a value of its own, not a default).
struct SparseMap<'a>(&'a BTreeMap<String, SparseVector>);

impl SparseMap<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for SparseMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Sparse<'a> {
            indices: &'a [u32],
            values: &'a [f32],
        }
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (model, v) in self.0 {
            map.serialize_entry(
                model,
                &Sparse {
                    indices: &v.indices,
                    values: &v.values,
                },
            )?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::NodeId;

    fn line(l: &Line<'_>) -> String {
        serde_json::to_string(l).unwrap()
    }

    #[test]
    fn defaults_are_left_out() {
        let n = Node::new(NodeId::new("a").unwrap());
        assert_eq!(line(&Line::Node(NodeLine::of(&n))), r#"{"node":{"id":"a"}}"#);
        let e = Edge::new(NodeId::new("a").unwrap(), "k", NodeId::new("b").unwrap());
        assert_eq!(
            line(&Line::Edge(EdgeLine::of(&e))),
            r#"{"edge":{"source":"a","target":"b","kind":"k"}}"#
        );
        // -0.0 is not the default weight (the store never holds it, but if it did it
        // would be written).
        assert!(!is_default_weight(&-0.0) && !is_default_weight(&1.0000000000000002));
    }

    #[test]
    fn every_field_uses_the_import_names() {
        let n = Node::new(NodeId::new("a").unwrap())
            .with_label("L")
            .with_text("t")
            .with_prop("f", 3.0)
            .with_prop("i", 3i64)
            .with_embedding("m", vec![0.1, 1e-45])
            .with_sparse("s", SparseVector::new(vec![], vec![]))
            .with_validity(Validity::new(Some(-5), Some(7)));
        assert_eq!(
            line(&Line::Node(NodeLine::of(&n))),
            r#"{"node":{"id":"a","labels":["L"],"text":"t","props":{"f":3.0,"i":3},"embeddings":{"m":[0.1,1e-45]},"sparse":{"s":{"indices":[],"values":[]}},"valid_from":-5,"valid_until":7}}"#
        );
        let e = Edge::new(NodeId::new("a").unwrap(), "k", NodeId::new("b").unwrap())
            .with_weight(2.0)
            .with_validity(Validity::new(None, Some(0)));
        assert_eq!(
            line(&Line::Edge(EdgeLine::of(&e))),
            r#"{"edge":{"source":"a","target":"b","kind":"k","weight":2.0,"valid_until":0}}"#
        );
    }
}
