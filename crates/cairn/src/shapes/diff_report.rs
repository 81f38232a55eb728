//! A diff with the fields that changed, as `diff` output shows it (`cairn diff --json`,
//! the server's `GET /diff`).

use cairn_core::{CommitId, EdgeKey};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::diff::{edge_field_changes, node_field_changes, ChangeKind, EdgeChange, FieldChange, NodeChange};
use crate::error::{Error, Result};
use crate::repo::Repo;

/// What changed between two commits ([`Repo::diff`]), with, for each changed node or
/// edge, the fields that changed ([`node_field_changes`], [`edge_field_changes`]; empty
/// for an added or removed one).
///
/// As JSON (`cairn diff --json`), every object's keys are in alphabetical order:
/// `{"edges", "from", "nodes", "to"}`, a node `{"after", "before", "fields", "id",
/// "kind"}`, an edge `{"after", "before", "fields", "key": {"kind", "source", "target"},
/// "kind"}`, a field `{"after", "before", "field"}`.
///
/// ```
/// use cairn::{DiffReport, Node, NodeId, Repo};
///
/// let repo = Repo::in_memory()?;
/// let a = NodeId::new("a")?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(a.clone()).with_text("v1"))?;
/// let c1 = tx.commit("add")?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(a.clone()).with_text("v2"))?;
/// let c2 = tx.commit("edit")?;
/// let report = DiffReport::read(&repo, &c1, &c2)?;
/// assert_eq!(report.nodes[0].fields[0].field, "text");
/// let json = serde_json::to_string(&report)?;
/// assert_eq!(serde_json::from_str::<DiffReport>(&json)?, report);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiffReport {
    /// The first commit.
    pub from: CommitId,
    /// The second commit.
    pub to: CommitId,
    /// Nodes that differ, by id.
    pub nodes: Vec<NodeDiff>,
    /// Edges that differ, by (source, kind, target).
    pub edges: Vec<EdgeDiff>,
}

/// A node that differs, with its changed fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeDiff {
    /// The change.
    pub change: NodeChange,
    /// For a changed node, the fields that differ, in [`node_field_changes`] order.
    pub fields: Vec<FieldChange>,
}

/// An edge that differs, with its changed fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EdgeDiff {
    /// The change.
    pub change: EdgeChange,
    /// For a changed edge, the fields that differ, in [`edge_field_changes`] order.
    pub fields: Vec<FieldChange>,
}

impl DiffReport {
    /// What changed from commit `from` to commit `to`, field by field.
    pub fn read(repo: &Repo, from: &CommitId, to: &CommitId) -> Result<DiffReport> {
        let diff = repo.diff(from, to)?;
        let mut nodes = Vec::with_capacity(diff.nodes.len());
        for change in diff.nodes {
            let fields = match change.kind {
                ChangeKind::Changed => match (repo.node_at(from, &change.id)?, repo.node_at(to, &change.id)?) {
                    (Some(b), Some(a)) => node_field_changes(&b, &a),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            nodes.push(NodeDiff { change, fields });
        }
        let mut edges = Vec::with_capacity(diff.edges.len());
        for change in diff.edges {
            let fields = match change.kind {
                ChangeKind::Changed => match (repo.edge_at(from, &change.key)?, repo.edge_at(to, &change.key)?) {
                    (Some(b), Some(a)) => edge_field_changes(&b, &a),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            edges.push(EdgeDiff { change, fields });
        }
        Ok(DiffReport {
            from: diff.from,
            to: diff.to,
            nodes,
            edges,
        })
    }

    /// What changed between two revisions, as `cairn diff FROM [TO]` and the server's
    /// `GET /diff` read their arguments: with `to`, from revision `from` to revision
    /// `to`; without, from the first parent of revision `from` to `from` itself.
    ///
    /// Errors: an unknown or ambiguous revision; [`Error::InvalidArgument`] when `to` is
    /// `None` and `from` is a root commit (it has no parent to compare with).
    ///
    /// ```
    /// use cairn::{DiffReport, Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?).with_text("v1"))?;
    /// let c1 = tx.commit("add")?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("b")?))?;
    /// let c2 = tx.commit("more")?;
    /// // `HEAD` alone: the last commit against its parent.
    /// let report = DiffReport::for_revisions(&repo, "HEAD", None)?;
    /// assert_eq!((report.from, report.to), (c1, c2));
    /// assert_eq!(report.nodes[0].change.id, NodeId::new("b")?);
    /// // The first commit has no parent.
    /// assert!(DiffReport::for_revisions(&repo, "HEAD~1", None).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_revisions(repo: &Repo, from: &str, to: Option<&str>) -> Result<DiffReport> {
        let (from, to) = match to {
            Some(to) => (repo.resolve(from)?, repo.resolve(to)?),
            None => {
                let to = repo.resolve(from)?;
                match repo.commit(&to)?.parents.first().copied() {
                    Some(parent) => (parent, to),
                    None => {
                        return Err(Error::InvalidArgument(format!(
                            "{} is a root commit: it has no parent to compare with (give two revisions)",
                            to.short()
                        )))
                    }
                }
            }
        };
        DiffReport::read(repo, &from, &to)
    }

    /// True if the commits hold the same graph.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.edges.is_empty()
    }
}

// The serialized forms: keys in alphabetical order (the order `cairn diff --json` has
// always printed).

/// `DiffReport` as serialized.
#[derive(Serialize)]
struct ReportOut<'a> {
    edges: &'a [EdgeDiff],
    from: CommitId,
    nodes: &'a [NodeDiff],
    to: CommitId,
}

impl Serialize for DiffReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        ReportOut {
            edges: &self.edges,
            from: self.from,
            nodes: &self.nodes,
            to: self.to,
        }
        .serialize(serializer)
    }
}

/// `NodeDiff` as serialized.
#[derive(Serialize)]
struct NodeOut<'a> {
    after: Option<cairn_core::Hash>,
    before: Option<cairn_core::Hash>,
    fields: &'a [FieldOut<'a>],
    id: &'a str,
    kind: ChangeKind,
}

impl Serialize for NodeDiff {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let fields: Vec<FieldOut<'_>> = self.fields.iter().map(FieldOut::of).collect();
        NodeOut {
            after: self.change.after,
            before: self.change.before,
            fields: &fields,
            id: self.change.id.as_str(),
            kind: self.change.kind,
        }
        .serialize(serializer)
    }
}

/// `EdgeDiff` as serialized.
#[derive(Serialize)]
struct EdgeOut<'a> {
    after: Option<cairn_core::Hash>,
    before: Option<cairn_core::Hash>,
    fields: &'a [FieldOut<'a>],
    key: KeyOut<'a>,
    kind: ChangeKind,
}

/// An `EdgeKey` as serialized here.
#[derive(Serialize)]
struct KeyOut<'a> {
    kind: &'a str,
    source: &'a str,
    target: &'a str,
}

impl<'a> KeyOut<'a> {
    fn of(k: &'a EdgeKey) -> KeyOut<'a> {
        KeyOut {
            kind: &k.kind,
            source: k.source.as_str(),
            target: k.target.as_str(),
        }
    }
}

impl Serialize for EdgeDiff {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let fields: Vec<FieldOut<'_>> = self.fields.iter().map(FieldOut::of).collect();
        EdgeOut {
            after: self.change.after,
            before: self.change.before,
            fields: &fields,
            key: KeyOut::of(&self.change.key),
            kind: self.change.kind,
        }
        .serialize(serializer)
    }
}

/// A `FieldChange` as serialized here.
#[derive(Serialize)]
struct FieldOut<'a> {
    after: &'a str,
    before: &'a str,
    field: &'a str,
}

impl<'a> FieldOut<'a> {
    fn of(f: &'a FieldChange) -> FieldOut<'a> {
        FieldOut {
            after: &f.after,
            before: &f.before,
            field: &f.field,
        }
    }
}

// The inverse, for a client printing a server's `GET /diff` as the local command does.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportIn {
    edges: Vec<EdgeIn>,
    from: CommitId,
    nodes: Vec<NodeIn>,
    to: CommitId,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeIn {
    after: Option<cairn_core::Hash>,
    before: Option<cairn_core::Hash>,
    fields: Vec<FieldIn>,
    id: cairn_core::NodeId,
    kind: ChangeKind,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EdgeIn {
    after: Option<cairn_core::Hash>,
    before: Option<cairn_core::Hash>,
    fields: Vec<FieldIn>,
    key: KeyIn,
    kind: ChangeKind,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyIn {
    kind: String,
    source: cairn_core::NodeId,
    target: cairn_core::NodeId,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FieldIn {
    after: String,
    before: String,
    field: String,
}

impl From<FieldIn> for FieldChange {
    fn from(f: FieldIn) -> FieldChange {
        FieldChange {
            field: f.field,
            before: f.before,
            after: f.after,
        }
    }
}

/// The inverse of [`DiffReport`]'s serialization (what `GET /diff` answers).
impl<'de> Deserialize<'de> for DiffReport {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let r = ReportIn::deserialize(d)?;
        Ok(DiffReport {
            from: r.from,
            to: r.to,
            nodes: r
                .nodes
                .into_iter()
                .map(|n| NodeDiff {
                    change: NodeChange {
                        id: n.id,
                        kind: n.kind,
                        before: n.before,
                        after: n.after,
                    },
                    fields: n.fields.into_iter().map(FieldChange::from).collect(),
                })
                .collect(),
            edges: r
                .edges
                .into_iter()
                .map(|e| EdgeDiff {
                    change: EdgeChange {
                        key: EdgeKey {
                            source: e.key.source,
                            kind: e.key.kind,
                            target: e.key.target,
                        },
                        kind: e.kind,
                        before: e.before,
                        after: e.after,
                    },
                    fields: e.fields.into_iter().map(FieldChange::from).collect(),
                })
                .collect(),
        })
    }
}
