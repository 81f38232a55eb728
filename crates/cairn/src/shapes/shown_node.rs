//! One node as `show` output shows it (`cairn show --json`, the server's
//! `GET /nodes/{id}`), and a node's edges (`show --edges`, `GET /nodes/{id}/edges`).

use cairn_core::{CommitId, Edge, Node, NodeId};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};
use crate::export::{EdgeLine, NodeLine};
use crate::repo::Repo;

/// One node as of a commit, as `cairn show --json` prints it: the commit read, then the
/// node in the import format's field names (as `cairn export` writes it: defaults left
/// out, see [`NodeLine`]), then `valid_at` and `edges` when asked for.
///
/// Serialized directly (never through `serde_json::Value`, which would widen `f32`
/// embeddings to `f64` and print `0.1961` as `0.19609999656677246`).
///
/// ```
/// use cairn::{Node, NodeId, Repo, ShownNode};
///
/// let repo = Repo::in_memory()?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(NodeId::new("a")?).with_text("lift"))?;
/// let c = tx.commit("first")?;
/// let shown = ShownNode::read(&repo, "HEAD", &NodeId::new("a")?, None, false)?;
/// assert_eq!(shown.commit, c);
/// let json = serde_json::to_string(&shown)?;
/// assert_eq!(json, format!(r#"{{"commit":"{}","id":"a","text":"lift"}}"#, c.to_hex()));
/// assert_eq!(serde_json::from_str::<ShownNode>(&json)?, shown);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ShownNode {
    /// The commit the node was read at (the revision resolved).
    pub commit: CommitId,
    /// The node.
    pub node: Node,
    /// When asked: the time asked about and whether the node is valid then.
    pub valid_at: Option<ValidAtCheck>,
    /// When asked: the node's edges at the commit.
    pub edges: Option<NodeEdges>,
}

/// Whether a node is valid at a time (`show --valid-at`): `{"time_ms", "valid"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ValidAtCheck {
    /// The time asked about (valid time, ms since the epoch).
    pub time_ms: i64,
    /// Whether the node's validity holds that time.
    pub valid: bool,
}

/// A node's edges at a commit: `{"out": [...], "in": [...]}`, each edge in the import
/// format's field names ([`EdgeLine`]), in (source, kind, target) order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NodeEdges {
    /// The edges leaving the node.
    pub out: Vec<Edge>,
    /// The edges arriving at it (a self-loop is in both lists).
    pub incoming: Vec<Edge>,
}

impl ShownNode {
    /// Node `id` at revision `rev` (anything [`Repo::resolve`] accepts, e.g. `HEAD`), with
    /// whether it is valid at `valid_at` if given, and its edges if `edges`. A node absent
    /// at the revision is [`Error::NodeNotFound`].
    pub fn read(repo: &Repo, rev: &str, id: &NodeId, valid_at: Option<i64>, edges: bool) -> Result<ShownNode> {
        let at = repo.resolve(rev)?;
        let node = repo.node_at(&at, id)?.ok_or_else(|| Error::NodeNotFound {
            id: id.clone(),
            at: Some(at),
        })?;
        let valid_at = match valid_at {
            Some(t) => Some(ValidAtCheck {
                time_ms: t,
                valid: repo.view_at(&at)?.valid_at(t).node(&node.id)?.is_some(),
            }),
            None => None,
        };
        let edges = if edges {
            Some(NodeEdges::read(repo, &at, &node.id)?)
        } else {
            None
        };
        Ok(ShownNode {
            commit: at,
            node,
            valid_at,
            edges,
        })
    }
}

impl NodeEdges {
    /// The edges leaving and arriving at node `id` at commit `at` (empty lists for a node
    /// without edges or absent at the commit).
    pub fn read(repo: &Repo, at: &CommitId, id: &NodeId) -> Result<NodeEdges> {
        Ok(NodeEdges {
            out: repo.edges_from(at, id)?,
            incoming: repo.edges_to(at, id)?,
        })
    }
}

/// `ShownNode` as serialized: borrowed import-format lines.
#[derive(Serialize)]
struct ShownLine<'a> {
    commit: CommitId,
    #[serde(flatten)]
    node: NodeLine<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_at: Option<ValidAtCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    edges: Option<&'a NodeEdges>,
}

impl Serialize for ShownNode {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        ShownLine {
            commit: self.commit,
            node: NodeLine::of(&self.node),
            valid_at: self.valid_at,
            edges: self.edges.as_ref(),
        }
        .serialize(serializer)
    }
}

/// `NodeEdges` as serialized: `{"out": [...], "in": [...]}`.
#[derive(Serialize)]
struct EdgesLine<'a> {
    out: Vec<EdgeLine<'a>>,
    #[serde(rename = "in")]
    incoming: Vec<EdgeLine<'a>>,
}

impl Serialize for NodeEdges {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        EdgesLine {
            out: self.out.iter().map(EdgeLine::of).collect(),
            incoming: self.incoming.iter().map(EdgeLine::of).collect(),
        }
        .serialize(serializer)
    }
}

/// The inverse of [`ShownNode`]'s serialization (what `GET /nodes/{id}` answers, for a
/// client that prints it as the local command does): the node and its edges are read as
/// import lines, with the import format's checks.
impl<'de> Deserialize<'de> for ShownNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut fields = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let take = |fields: &mut serde_json::Map<String, serde_json::Value>, key: &str| fields.remove(key);
        let commit: CommitId =
            serde_json::from_value(take(&mut fields, "commit").ok_or_else(|| D::Error::missing_field("commit"))?)
                .map_err(D::Error::custom)?;
        let valid_at = take(&mut fields, "valid_at")
            .map(serde_json::from_value::<ValidAtCheck>)
            .transpose()
            .map_err(D::Error::custom)?;
        let edge = |v: serde_json::Value| match crate::import::parse_line(&serde_json::json!({ "edge": v }).to_string())
        {
            Ok(crate::import::ImportOp::PutEdge(e)) => Ok(e),
            Ok(_) => Err(D::Error::custom("an edge line that is not an edge")),
            Err(e) => Err(D::Error::custom(e)),
        };
        let edges = match take(&mut fields, "edges") {
            None => None,
            Some(mut v) => {
                let mut list = |key: &str| -> std::result::Result<Vec<Edge>, D::Error> {
                    match v.get_mut(key).map(serde_json::Value::take) {
                        Some(serde_json::Value::Array(items)) => items.into_iter().map(edge).collect(),
                        _ => Err(D::Error::missing_field("edges.out / edges.in")),
                    }
                };
                let out = list("out")?;
                let incoming = list("in")?;
                Some(NodeEdges { out, incoming })
            }
        };
        let line = serde_json::json!({ "node": fields }).to_string();
        let node = match crate::import::parse_line(&line) {
            Ok(crate::import::ImportOp::PutNode(n)) => n,
            Ok(_) => return Err(D::Error::custom("a node line that is not a node")),
            Err(e) => return Err(D::Error::custom(e)),
        };
        Ok(ShownNode {
            commit,
            node,
            valid_at,
            edges,
        })
    }
}
