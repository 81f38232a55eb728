//! [`View`]: reads of one commit, optionally restricted to the facts valid at one time —
//! the read side of bitemporal queries ("what did the repo say at transaction time T about
//! what was true at valid time V").

use cairn_core::{Commit, CommitId, Edge, Node, NodeId};

use crate::error::Result;
use crate::repo::Repo;

/// A commit to read, with an optional validity time. With `valid_at(V)`, a node or edge is
/// visible iff `valid_from ≤ V < valid_until` (open ends unbounded), and an edge also
/// needs both endpoints visible.
///
/// ```
/// use cairn::{Node, NodeId, Repo, Validity};
///
/// let repo = Repo::in_memory()?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(NodeId::new("ceo-2019")?).with_label("Fact")
///     .with_validity(Validity::new(Some(0), Some(2_000))))?;
/// tx.put_node(Node::new(NodeId::new("ceo-2024")?).with_label("Fact")
///     .with_validity(Validity::new(Some(2_000), None)))?;
/// tx.commit_at("facts", 5_000)?;
/// let then = repo.view("main@{5000}")?.valid_at(1_000).nodes(Some("Fact"))?;
/// assert_eq!(then.len(), 1);
/// assert_eq!(then[0].id.as_str(), "ceo-2019");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct View {
    repo: Repo,
    id: CommitId,
    commit: Commit,
    valid_at_ms: Option<i64>,
}

impl Repo {
    /// A view of the commit `rev` names (see [`Repo::resolve`]), with no validity filter.
    pub fn view(&self, rev: &str) -> Result<View> {
        let id = self.resolve(rev)?;
        self.view_at(&id)
    }

    /// A view of commit `id`.
    pub fn view_at(&self, id: &CommitId) -> Result<View> {
        Ok(View {
            repo: self.clone(),
            id: *id,
            commit: self.commit(id)?,
            valid_at_ms: None,
        })
    }
}

impl View {
    /// Restricts reads to the facts valid at `t_ms`.
    pub fn valid_at(mut self, t_ms: i64) -> View {
        self.valid_at_ms = Some(t_ms);
        self
    }

    /// The commit read.
    pub fn commit_id(&self) -> CommitId {
        self.id
    }

    /// The commit object.
    pub fn commit(&self) -> &Commit {
        &self.commit
    }

    fn visible_node(&self, n: &Node) -> bool {
        self.valid_at_ms.is_none_or(|t| n.validity.contains(t))
    }

    /// The node `id`, if present (and valid at the view's time).
    pub fn node(&self, id: &NodeId) -> Result<Option<Node>> {
        Ok(self
            .repo
            .node_in_root(self.commit.node_root, id)?
            .filter(|n| self.visible_node(n)))
    }

    /// All visible nodes in id order, only those with `label` if given.
    pub fn nodes(&self, label: Option<&str>) -> Result<Vec<Node>> {
        let mut nodes = self.repo.nodes_at(&self.id, label)?;
        nodes.retain(|n| self.visible_node(n));
        Ok(nodes)
    }

    fn visible_edges(&self, edges: Vec<Edge>) -> Result<Vec<Edge>> {
        let Some(t) = self.valid_at_ms else {
            return Ok(edges);
        };
        let mut out = Vec::with_capacity(edges.len());
        for e in edges {
            if e.validity.contains(t) && self.node(&e.source)?.is_some() && self.node(&e.target)?.is_some() {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// Visible edges leaving `id`.
    pub fn edges_from(&self, id: &NodeId) -> Result<Vec<Edge>> {
        self.visible_edges(self.repo.edges_from(&self.id, id)?)
    }

    /// Visible edges arriving at `id`.
    pub fn edges_to(&self, id: &NodeId) -> Result<Vec<Edge>> {
        self.visible_edges(self.repo.edges_to(&self.id, id)?)
    }

    /// All visible edges, in (source, kind, target) order.
    pub fn edges(&self) -> Result<Vec<Edge>> {
        self.visible_edges(self.repo.edges_at(&self.id)?)
    }
}
