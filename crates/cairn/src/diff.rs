//! The result of [`Repo::diff`](crate::Repo::diff).

use cairn_core::{CommitId, Edge, EdgeKey, Hash, Node, NodeId, SparseVector, Validity};
use serde::Serialize;

/// How one node or edge differs between two commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Present only in the second commit.
    Added,
    /// Present only in the first commit.
    Removed,
    /// Present in both with different content.
    Changed,
}

impl ChangeKind {
    fn of(before: Option<Hash>, after: Option<Hash>) -> ChangeKind {
        match (before, after) {
            (None, _) => ChangeKind::Added,
            (_, None) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        }
    }
}

/// A node that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeChange {
    /// The node.
    pub id: NodeId,
    /// How it differs.
    pub kind: ChangeKind,
    /// Its object hash in the first commit.
    pub before: Option<Hash>,
    /// Its object hash in the second commit.
    pub after: Option<Hash>,
}

impl NodeChange {
    pub(crate) fn new(id: NodeId, before: Option<Hash>, after: Option<Hash>) -> NodeChange {
        NodeChange {
            id,
            kind: ChangeKind::of(before, after),
            before,
            after,
        }
    }
}

/// An edge that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EdgeChange {
    /// The edge.
    pub key: EdgeKey,
    /// How it differs.
    pub kind: ChangeKind,
    /// Its object hash in the first commit.
    pub before: Option<Hash>,
    /// Its object hash in the second commit.
    pub after: Option<Hash>,
}

impl EdgeChange {
    pub(crate) fn new(key: EdgeKey, before: Option<Hash>, after: Option<Hash>) -> EdgeChange {
        EdgeChange {
            key,
            kind: ChangeKind::of(before, after),
            before,
            after,
        }
    }
}

/// Differences between two commits, in key order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// The first commit.
    pub from: CommitId,
    /// The second commit.
    pub to: CommitId,
    /// Nodes that differ, by id.
    pub nodes: Vec<NodeChange>,
    /// Edges that differ, by (source, kind, target).
    pub edges: Vec<EdgeChange>,
}

impl Diff {
    /// True if the commits hold the same graph.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.edges.is_empty()
    }
}

/// One field of a node or edge that differs between two versions, its values rendered
/// as compact JSON (`null`: absent). Validity ends are RFC 3339 strings in UTC
/// (`"2024-06-01T00:00:00Z"`, as `show` prints them and import lines read them). Vectors
/// are summarised with a fingerprint of their values (`"384-d #1f0c9a2e"`, `"12 entries
/// #77ab0d13"`: the first 8 hex digits of blake3 over the little-endian values, indices
/// first for a sparse vector), never printed, so a changed vector reads as changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    /// `labels`, `text`, `props.<key>`, `valid_from`, `valid_until`, `embeddings.<model>`,
    /// `sparse.<model>`; for edges also `weight`.
    pub field: String,
    /// The old value.
    pub before: String,
    /// The new value.
    pub after: String,
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "?".into())
}

/// A validity end as JSON text: `null`, or the time as an RFC 3339 string (what `show`
/// prints, and what an import line reads back).
fn time(t: Option<i64>) -> String {
    t.map_or_else(|| "null".into(), |ms| json(&crate::format_time_ms(ms)))
}

fn maps<'a, V: PartialEq + 'a>(
    out: &mut Vec<FieldChange>,
    prefix: &str,
    before: impl IntoIterator<Item = (&'a String, &'a V)>,
    after: impl IntoIterator<Item = (&'a String, &'a V)>,
    show: impl Fn(&V) -> String,
) {
    let before: std::collections::BTreeMap<&String, &V> = before.into_iter().collect();
    let after: std::collections::BTreeMap<&String, &V> = after.into_iter().collect();
    let keys: std::collections::BTreeSet<&&String> = before.keys().chain(after.keys()).collect();
    for k in keys {
        let (b, a) = (before.get(*k), after.get(*k));
        if b != a {
            out.push(FieldChange {
                field: format!("{prefix}.{k}"),
                before: b.map_or_else(|| "null".into(), |v| show(v)),
                after: a.map_or_else(|| "null".into(), |v| show(v)),
            });
        }
    }
}

fn validity(out: &mut Vec<FieldChange>, before: &Validity, after: &Validity) {
    for (field, b, a) in [
        ("valid_from", before.valid_from_ms, after.valid_from_ms),
        ("valid_until", before.valid_until_ms, after.valid_until_ms),
    ] {
        if b != a {
            out.push(FieldChange {
                field: field.into(),
                before: time(b),
                after: time(a),
            });
        }
    }
}

/// The fields in which two versions of a node differ, in a fixed order: labels, text,
/// properties (by key), validity, dense then sparse vectors (by model).
///
/// ```
/// use cairn::node_field_changes;
/// use cairn::{Node, NodeId, Value};
/// let id = NodeId::new("alice")?;
/// let before = Node::new(id.clone()).with_label("Person").with_prop("city", Value::from("Paris"));
/// let after = Node::new(id).with_label("Person").with_prop("city", Value::from("Lyon"));
/// let changes = node_field_changes(&before, &after);
/// assert_eq!(changes.len(), 1);
/// assert_eq!((changes[0].field.as_str(), changes[0].before.as_str(), changes[0].after.as_str()),
///            ("props.city", "\"Paris\"", "\"Lyon\""));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn node_field_changes(before: &Node, after: &Node) -> Vec<FieldChange> {
    let mut out = Vec::new();
    if before.labels != after.labels {
        out.push(FieldChange {
            field: "labels".into(),
            before: json(&before.labels),
            after: json(&after.labels),
        });
    }
    if before.text != after.text {
        out.push(FieldChange {
            field: "text".into(),
            before: json(&before.text),
            after: json(&after.text),
        });
    }
    maps(&mut out, "props", &before.props, &after.props, json);
    validity(&mut out, &before.validity, &after.validity);
    maps(
        &mut out,
        "embeddings",
        &before.embeddings,
        &after.embeddings,
        |v: &Vec<f32>| {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            format!("\"{}-d #{}\"", v.len(), &blake3::hash(&bytes).to_hex()[..8])
        },
    );
    maps(&mut out, "sparse", &before.sparse, &after.sparse, |v: &SparseVector| {
        let bytes: Vec<u8> = v
            .indices
            .iter()
            .flat_map(|i| i.to_le_bytes())
            .chain(v.values.iter().flat_map(|x| x.to_le_bytes()))
            .collect();
        format!(
            "\"{} entries #{}\"",
            v.indices.len(),
            &blake3::hash(&bytes).to_hex()[..8]
        )
    });
    out
}

/// The fields in which two versions of an edge differ: weight, properties, validity.
pub fn edge_field_changes(before: &Edge, after: &Edge) -> Vec<FieldChange> {
    let mut out = Vec::new();
    if before.weight.to_bits() != after.weight.to_bits() {
        out.push(FieldChange {
            field: "weight".into(),
            before: json(&before.weight),
            after: json(&after.weight),
        });
    }
    maps(&mut out, "props", &before.props, &after.props, json);
    validity(&mut out, &before.validity, &after.validity);
    out
}
