//! Changing part of a node or edge without re-sending it: ending a fact's validity
//! ([`Transaction::invalidate`]) and partial updates ([`NodePatch`]). Each reads the node
//! or edge as the transaction sees it, applies the change and puts the result, so it gets
//! exactly the validation of a put.

use std::collections::{BTreeMap, BTreeSet};

use cairn_core::{EdgeKey, NodeId, Value};

use crate::error::{Error, Result};
use crate::transaction::Transaction;

/// A partial update of a node: what it names changes, everything else stays.
///
/// Removals apply before additions, so a label both removed and added is kept. A changed
/// `text` keeps the node's vectors unless the patch replaces them: re-embed the new text
/// and set it in `embeddings`, or stale vectors keep ranking the node by its old text.
///
/// ```
/// use cairn::{Node, NodeId, NodePatch, Repo, Value};
///
/// let repo = Repo::in_memory()?;
/// let alice = NodeId::new("alice")?;
/// let mut tx = repo.transaction()?;
/// tx.put_node(Node::new(alice.clone()).with_label("Person").with_text("Alice lives in Paris"))?;
/// tx.commit("alice")?;
///
/// let mut tx = repo.transaction()?;
/// tx.patch_node(
///     &alice,
///     NodePatch::new()
///         .add_label("Employee")
///         .set_prop("team", Value::from("search"))
///         .text("Alice lives in Lyon"),
/// )?;
/// tx.commit("alice moved")?;
/// let now = repo.node(&alice)?.unwrap();
/// assert!(now.labels.contains("Person") && now.labels.contains("Employee"));
/// assert_eq!(now.text, "Alice lives in Lyon");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodePatch {
    /// Labels to add.
    pub labels_add: BTreeSet<String>,
    /// Labels to remove (absent ones are ignored).
    pub labels_remove: BTreeSet<String>,
    /// Properties to set (replacing a present value).
    pub props_set: BTreeMap<String, Value>,
    /// Properties to remove (absent ones are ignored).
    pub props_remove: BTreeSet<String>,
    /// New text.
    pub text: Option<String>,
    /// Dense vectors to set, by model (replacing a present one).
    pub embeddings: BTreeMap<String, Vec<f32>>,
    /// New start of validity (`Some(None)`: since forever).
    pub valid_from_ms: Option<Option<i64>>,
    /// New end of validity (`Some(None)`: until further notice).
    pub valid_until_ms: Option<Option<i64>>,
}

impl NodePatch {
    /// A patch that changes nothing.
    pub fn new() -> NodePatch {
        NodePatch::default()
    }

    /// Adds a label.
    pub fn add_label(mut self, label: impl Into<String>) -> NodePatch {
        self.labels_add.insert(label.into());
        self
    }

    /// Removes a label.
    pub fn remove_label(mut self, label: impl Into<String>) -> NodePatch {
        self.labels_remove.insert(label.into());
        self
    }

    /// Sets a property.
    pub fn set_prop(mut self, key: impl Into<String>, value: Value) -> NodePatch {
        self.props_set.insert(key.into(), value);
        self
    }

    /// Removes a property.
    pub fn remove_prop(mut self, key: impl Into<String>) -> NodePatch {
        self.props_remove.insert(key.into());
        self
    }

    /// Replaces the text.
    pub fn text(mut self, text: impl Into<String>) -> NodePatch {
        self.text = Some(text.into());
        self
    }

    /// Sets the dense vector of `model`.
    pub fn embedding(mut self, model: impl Into<String>, vector: Vec<f32>) -> NodePatch {
        self.embeddings.insert(model.into(), vector);
        self
    }

    /// Sets the start of validity (`None`: since forever).
    pub fn valid_from(mut self, ms: Option<i64>) -> NodePatch {
        self.valid_from_ms = Some(ms);
        self
    }

    /// Sets the end of validity (`None`: until further notice).
    pub fn valid_until(mut self, ms: Option<i64>) -> NodePatch {
        self.valid_until_ms = Some(ms);
        self
    }
}

impl Transaction<'_> {
    /// Applies `patch` to node `id` as this transaction sees it. [`Error::NodeNotFound`]
    /// if there is no such node; the patched node is validated as a put is, and a refused
    /// patch leaves the transaction as it was.
    pub fn patch_node(&mut self, id: &NodeId, patch: NodePatch) -> Result<()> {
        let mut node = self.node(id)?.ok_or_else(|| self.node_not_found(id))?;
        for l in &patch.labels_remove {
            node.labels.remove(l);
        }
        node.labels.extend(patch.labels_add);
        for k in &patch.props_remove {
            node.props.remove(k);
        }
        node.props.extend(patch.props_set);
        if let Some(text) = patch.text {
            node.text = text;
        }
        node.embeddings.extend(patch.embeddings);
        if let Some(from) = patch.valid_from_ms {
            node.validity.valid_from_ms = from;
        }
        if let Some(until) = patch.valid_until_ms {
            node.validity.valid_until_ms = until;
        }
        self.put_node(node)
    }

    /// Ends the validity of node `id` at `valid_until_ms` (exclusive): the fact it states
    /// stops holding then, and the node stays in the graph for as-of and "valid at" reads.
    /// The rest of the node is kept. [`Error::NodeNotFound`] if there is no such node;
    /// refused (validation) if it would end at or before the node's start.
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let fact = NodeId::new("alice-lives-in-paris")?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(fact.clone()).with_label("Fact").with_text("Alice lives in Paris"))?;
    /// tx.commit("learned")?;
    ///
    /// let moved = cairn::parse_time_ms("2024-06-01").unwrap();
    /// let mut tx = repo.transaction()?;
    /// tx.invalidate(&fact, moved)?;
    /// tx.commit("Alice moved")?;
    /// assert_eq!(repo.node(&fact)?.unwrap().validity.valid_until_ms, Some(moved));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn invalidate(&mut self, id: &NodeId, valid_until_ms: i64) -> Result<()> {
        self.patch_node(id, NodePatch::new().valid_until(Some(valid_until_ms)))
    }

    /// Ends the validity of edge `key` at `valid_until_ms`, like [`Transaction::invalidate`].
    /// [`Error::EdgeNotFound`] if there is no such edge.
    pub fn invalidate_edge(&mut self, key: &EdgeKey, valid_until_ms: i64) -> Result<()> {
        let mut edge = self
            .edge(key)?
            .ok_or_else(|| Error::EdgeNotFound { key: key.clone() })?;
        edge.validity.valid_until_ms = Some(valid_until_ms);
        self.put_edge(edge)
    }
}
