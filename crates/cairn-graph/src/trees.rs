//! Typed views of a commit's three trees: [`NodeTree`] (node id → node object),
//! [`EdgeTree`] (edge key → edge object, source first) and [`ReverseEdgeTree`] (the same
//! edges, target first).
//!
//! Each is a `Copy` handle on a tree root (`None`: the empty tree) over the untyped
//! [`mst`] engine. Keys are encoded and decoded here and nowhere else (storage-format §4,
//! via [`tree_keys`]): callers hand in and get back [`NodeId`]s and [`EdgeKey`]s. A stored
//! key that does not decode is a [`GraphError::Corrupt`] naming the tree (`node tree`,
//! `edge tree`, `reverse edge tree`) and the root it was read from — never skipped, never
//! reported as bad input.
//!
//! Iteration and diffs yield keys in **tree order**, the order of the encoded keys. For
//! node ids that is [`NodeId`]'s own order; for edges it is not [`EdgeKey`]'s (the encoding
//! puts each id's length first): [`EdgeTree::key_order`] and [`ReverseEdgeTree::key_order`]
//! compare two keys the way their tree orders them, without encoding them.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use cairn_core::codec::{edge_in_tree_key, edge_key_prefix, edge_tree_key};
use cairn_core::{Commit, EdgeKey, Hash, NodeId};

use crate::error::GraphError;
use crate::mst::{self, Mutation};
use crate::objects::{Objects, PendingWrites};
use crate::tree_keys::{self, Tree};

/// Decodes a key read from the tree at a root.
type Decode<K> = fn(Option<Hash>, &[u8]) -> Result<K, GraphError>;

fn decode_node(root: Option<Hash>, key: &[u8]) -> Result<NodeId, GraphError> {
    tree_keys::node_id(root, key)
}

fn decode_edge(root: Option<Hash>, key: &[u8]) -> Result<EdgeKey, GraphError> {
    tree_keys::edge_key(Tree::Edges, root, key)
}

fn decode_edge_in(root: Option<Hash>, key: &[u8]) -> Result<EdgeKey, GraphError> {
    tree_keys::edge_key(Tree::EdgesIn, root, key)
}

fn encode_edge(key: &EdgeKey) -> Vec<u8> {
    edge_tree_key(&key.source, &key.kind, &key.target)
}

fn encode_edge_in(key: &EdgeKey) -> Vec<u8> {
    edge_in_tree_key(&key.source, &key.kind, &key.target)
}

/// One difference between two trees of the same kind, its key decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChange<K> {
    /// The key.
    pub key: K,
    /// Its value in the first tree (`None`: absent).
    pub before: Option<Hash>,
    /// Its value in the second tree (`None`: absent).
    pub after: Option<Hash>,
}

/// The entries of a typed tree in tree order, read lazily (one path of the tree in
/// memory, like [`mst::entries`]), each key decoded once. An error (a missing or damaged
/// tree node, a key that does not decode) is the last item.
pub struct Iter<'a, K> {
    entries: mst::Entries<'a>,
    root: Option<Hash>,
    decode: Decode<K>,
    done: bool,
}

impl<K> Iterator for Iter<'_, K> {
    type Item = Result<(K, Hash), GraphError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self
            .entries
            .next()?
            .and_then(|(k, v)| Ok(((self.decode)(self.root, &k)?, v)));
        self.done = item.is_err();
        Some(item)
    }
}

fn iter<K>(objs: &Objects, root: Option<Hash>, decode: Decode<K>) -> Iter<'_, K> {
    Iter {
        entries: mst::entries(objs, root),
        root,
        decode,
        done: false,
    }
}

/// [`mst::diff`] with keys decoded: a key is read from the second tree, or from the first
/// if the second does not hold it, and a key that does not decode names that tree.
fn diff<K>(
    objs: &Objects,
    a: Option<Hash>,
    b: Option<Hash>,
    decode: Decode<K>,
) -> Result<Vec<TreeChange<K>>, GraphError> {
    mst::diff(objs, a, b)?
        .into_iter()
        .map(|c| {
            let root = if c.after.is_some() { b } else { a };
            Ok(TreeChange {
                key: decode(root, &c.key)?,
                before: c.before,
                after: c.after,
            })
        })
        .collect()
}

/// [`mst::apply`] of typed changes (`Some(value)`: put, `None`: delete).
fn apply<'k, K: 'k>(
    objs: &Objects,
    root: Option<Hash>,
    changes: impl IntoIterator<Item = (&'k K, &'k Option<Hash>)>,
    encode: fn(&K) -> Vec<u8>,
    len_hint: Option<u64>,
    out: &mut PendingWrites,
) -> Result<Option<Hash>, GraphError> {
    let mutations: BTreeMap<Vec<u8>, Mutation> = changes
        .into_iter()
        .map(|(k, v)| (encode(k), v.map_or(Mutation::Delete, Mutation::Put)))
        .collect();
    mst::apply(objs, root, &mutations, len_hint, out)
}

/// The entries whose key starts with the encoded `prefix`, decoded.
fn scan<K>(objs: &Objects, root: Option<Hash>, prefix: &[u8], decode: Decode<K>) -> Result<Vec<(K, Hash)>, GraphError> {
    let mut found = Vec::new();
    mst::scan_prefix(objs, root, prefix, &mut |k, v| {
        found.push((decode(root, k)?, *v));
        Ok(())
    })?;
    Ok(found)
}

/// Tree order of two edges given as (first id, kind, second id) in their tree's key
/// layout: `u16 len ‖ first ‖ u16 len ‖ kind ‖ second`, compared bytewise.
fn encoded_edge_order(a: (&NodeId, &str, &NodeId), b: (&NodeId, &str, &NodeId)) -> Ordering {
    let (a1, b1) = (a.0.as_str(), b.0.as_str());
    a1.len()
        .cmp(&b1.len())
        .then_with(|| a1.cmp(b1))
        .then_with(|| a.1.len().cmp(&b.1.len()))
        .then_with(|| a.1.cmp(b.1))
        .then_with(|| a.2.as_str().cmp(b.2.as_str()))
}

/// A commit's node tree: node id → the hash of the node object.
///
/// A `Copy` handle on the tree's root; reading it reads tree nodes through [`Objects`],
/// changing it ([`NodeTree::apply`]) adds new tree nodes to a [`PendingWrites`] and
/// returns the new tree.
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
///
/// use cairn_core::{Hash, NodeId};
/// use cairn_graph::{NodeTree, Objects, PendingWrites};
/// use cairn_store::MemoryStore;
///
/// let objs = Objects::new(Arc::new(MemoryStore::new()));
/// let (a, b) = (NodeId::new("a")?, NodeId::new("b")?);
/// let mut out = PendingWrites::new();
/// let changes = BTreeMap::from([(a.clone(), Some(Hash::of(b"node a"))), (b.clone(), Some(Hash::of(b"node b")))]);
/// let v1 = NodeTree::EMPTY.apply(&objs, &changes, Some(0), &mut out)?;
/// out.flush_to(objs.store().as_ref())?; // a tree is read from the store
/// let mut out = PendingWrites::new();
/// let v2 = v1.apply(&objs, &BTreeMap::from([(a.clone(), None)]), Some(2), &mut out)?;
/// out.flush_to(objs.store().as_ref())?;
///
/// assert_eq!(v1.get(&objs, &b)?, Some(Hash::of(b"node b")));
/// let ids: Vec<NodeId> = v1.iter(&objs).map(|e| e.map(|(id, _)| id)).collect::<Result<_, _>>()?;
/// assert_eq!(ids, [a.clone(), b]);
/// let changed = v1.diff(&objs, v2)?;
/// assert_eq!((&changed[0].key, changed[0].after), (&a, None));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeTree {
    root: Option<Hash>,
}

impl NodeTree {
    /// The empty tree.
    pub const EMPTY: NodeTree = NodeTree { root: None };

    /// The node tree at `root` (`None`: empty).
    pub const fn new(root: Option<Hash>) -> NodeTree {
        NodeTree { root }
    }

    /// The node tree of commit `c`.
    pub fn of(c: &Commit) -> NodeTree {
        NodeTree::new(c.node_root)
    }

    /// The root hash (`None`: empty).
    pub const fn root(self) -> Option<Hash> {
        self.root
    }

    /// The hash of node `id`'s object, if the tree holds it. Reads O(log n) tree nodes.
    pub fn get(self, objs: &Objects, id: &NodeId) -> Result<Option<Hash>, GraphError> {
        mst::get(objs, self.root, id.as_bytes())
    }

    /// Every `(id, node hash)` in id order, read lazily.
    pub fn iter(self, objs: &Objects) -> Iter<'_, NodeId> {
        iter(objs, self.root, decode_node)
    }

    /// What differs from this tree to `to`, in id order. Subtrees the two share are
    /// skipped without being read.
    pub fn diff(self, objs: &Objects, to: NodeTree) -> Result<Vec<TreeChange<NodeId>>, GraphError> {
        diff(objs, self.root, to.root, decode_node)
    }

    /// Applies `changes` (id → `Some(node hash)` to put, `None` to delete; for a repeated
    /// id the last wins), adding the new tree nodes to `out`; returns the new tree.
    /// Changes that change nothing write nothing. `len_hint` is the tree's number of
    /// nodes if known, as for [`mst::apply`] (the result is the same either way).
    pub fn apply<'k>(
        self,
        objs: &Objects,
        changes: impl IntoIterator<Item = (&'k NodeId, &'k Option<Hash>)>,
        len_hint: Option<u64>,
        out: &mut PendingWrites,
    ) -> Result<NodeTree, GraphError> {
        apply(objs, self.root, changes, |id| id.as_bytes().to_vec(), len_hint, out).map(NodeTree::new)
    }

    /// The order of ids in the tree: [`NodeId`]'s own (bytewise) order.
    pub fn key_order(a: &NodeId, b: &NodeId) -> Ordering {
        a.cmp(b)
    }
}

/// A commit's edge tree: edge key → the hash of the edge object, keyed source first so
/// the edges leaving one node are contiguous ([`EdgeTree::edges_from`]).
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
///
/// use cairn_core::{EdgeKey, Hash, NodeId};
/// use cairn_graph::{EdgeTree, Objects, PendingWrites, ReverseEdgeTree};
/// use cairn_store::MemoryStore;
///
/// let objs = Objects::new(Arc::new(MemoryStore::new()));
/// let edge = |s: &str, t: &str| EdgeKey { source: NodeId::new(s).unwrap(), kind: "cites".into(), target: NodeId::new(t).unwrap() };
/// let changes: BTreeMap<EdgeKey, Option<Hash>> =
///     [edge("a", "b"), edge("a", "c"), edge("b", "c")].into_iter().map(|k| (k, Some(Hash::of(b"edge")))).collect();
/// let mut out = PendingWrites::new();
/// let edges = EdgeTree::EMPTY.apply(&objs, &changes, Some(0), &mut out)?;
/// let edges_in = ReverseEdgeTree::EMPTY.apply(&objs, &changes, Some(0), &mut out)?;
/// out.flush_to(objs.store().as_ref())?;
///
/// let from_a: Vec<EdgeKey> = edges.edges_from(&objs, &NodeId::new("a")?)?.into_iter().map(|(k, _)| k).collect();
/// assert_eq!(from_a, [edge("a", "b"), edge("a", "c")]);
/// let into_c: Vec<EdgeKey> = edges_in.edges_to(&objs, &NodeId::new("c")?)?.into_iter().map(|(k, _)| k).collect();
/// assert_eq!(into_c, [edge("a", "c"), edge("b", "c")]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EdgeTree {
    root: Option<Hash>,
}

impl EdgeTree {
    /// The empty tree.
    pub const EMPTY: EdgeTree = EdgeTree { root: None };

    /// The edge tree at `root` (`None`: empty).
    pub const fn new(root: Option<Hash>) -> EdgeTree {
        EdgeTree { root }
    }

    /// The edge tree of commit `c`.
    pub fn of(c: &Commit) -> EdgeTree {
        EdgeTree::new(c.edge_root)
    }

    /// The root hash (`None`: empty).
    pub const fn root(self) -> Option<Hash> {
        self.root
    }

    /// The hash of edge `key`'s object, if the tree holds it. Reads O(log n) tree nodes.
    pub fn get(self, objs: &Objects, key: &EdgeKey) -> Result<Option<Hash>, GraphError> {
        mst::get(objs, self.root, &encode_edge(key))
    }

    /// Every `(edge key, edge hash)` in tree order ([`EdgeTree::key_order`]), read lazily.
    pub fn iter(self, objs: &Objects) -> Iter<'_, EdgeKey> {
        iter(objs, self.root, decode_edge)
    }

    /// The edges leaving `source`, in tree order: a prefix scan reading only the subtrees
    /// that can hold them.
    pub fn edges_from(self, objs: &Objects, source: &NodeId) -> Result<Vec<(EdgeKey, Hash)>, GraphError> {
        scan(objs, self.root, &edge_key_prefix(source), decode_edge)
    }

    /// What differs from this tree to `to`, in tree order. Subtrees the two share are
    /// skipped without being read.
    pub fn diff(self, objs: &Objects, to: EdgeTree) -> Result<Vec<TreeChange<EdgeKey>>, GraphError> {
        diff(objs, self.root, to.root, decode_edge)
    }

    /// Applies `changes` (key → `Some(edge hash)` to put, `None` to delete; for a
    /// repeated key the last wins), adding the new tree nodes to `out`; returns the new
    /// tree. Changes that change nothing write nothing. `len_hint` is the tree's number of
    /// edges if known, as for [`mst::apply`]. The reverse tree takes the same changes
    /// ([`ReverseEdgeTree::apply`]).
    pub fn apply<'k>(
        self,
        objs: &Objects,
        changes: impl IntoIterator<Item = (&'k EdgeKey, &'k Option<Hash>)>,
        len_hint: Option<u64>,
        out: &mut PendingWrites,
    ) -> Result<EdgeTree, GraphError> {
        apply(objs, self.root, changes, encode_edge, len_hint, out).map(EdgeTree::new)
    }

    /// The order of keys in the edge tree: by source (its length first, then its bytes),
    /// then kind (likewise), then target — the order of the encoded keys, which is not
    /// [`EdgeKey`]'s own order.
    pub fn key_order(a: &EdgeKey, b: &EdgeKey) -> Ordering {
        encoded_edge_order((&a.source, &a.kind, &a.target), (&b.source, &b.kind, &b.target))
    }
}

/// A commit's reverse edge tree: the edges of its [`EdgeTree`] keyed target first, so the
/// edges arriving at one node are contiguous ([`ReverseEdgeTree::edges_to`]). Keys are
/// given and returned as ordinary [`EdgeKey`]s (source, kind, target); see [`EdgeTree`]
/// for an example.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReverseEdgeTree {
    root: Option<Hash>,
}

impl ReverseEdgeTree {
    /// The empty tree.
    pub const EMPTY: ReverseEdgeTree = ReverseEdgeTree { root: None };

    /// The reverse edge tree at `root` (`None`: empty).
    pub const fn new(root: Option<Hash>) -> ReverseEdgeTree {
        ReverseEdgeTree { root }
    }

    /// The reverse edge tree of commit `c`.
    pub fn of(c: &Commit) -> ReverseEdgeTree {
        ReverseEdgeTree::new(c.edge_in_root)
    }

    /// The root hash (`None`: empty).
    pub const fn root(self) -> Option<Hash> {
        self.root
    }

    /// The hash of edge `key`'s object, if the tree holds it. Reads O(log n) tree nodes.
    pub fn get(self, objs: &Objects, key: &EdgeKey) -> Result<Option<Hash>, GraphError> {
        mst::get(objs, self.root, &encode_edge_in(key))
    }

    /// Every `(edge key, edge hash)` in tree order ([`ReverseEdgeTree::key_order`]), read
    /// lazily.
    pub fn iter(self, objs: &Objects) -> Iter<'_, EdgeKey> {
        iter(objs, self.root, decode_edge_in)
    }

    /// The edges arriving at `target`, in tree order: a prefix scan reading only the
    /// subtrees that can hold them.
    pub fn edges_to(self, objs: &Objects, target: &NodeId) -> Result<Vec<(EdgeKey, Hash)>, GraphError> {
        scan(objs, self.root, &edge_key_prefix(target), decode_edge_in)
    }

    /// What differs from this tree to `to`, in tree order. Subtrees the two share are
    /// skipped without being read.
    pub fn diff(self, objs: &Objects, to: ReverseEdgeTree) -> Result<Vec<TreeChange<EdgeKey>>, GraphError> {
        diff(objs, self.root, to.root, decode_edge_in)
    }

    /// Applies `changes` as [`EdgeTree::apply`] does, to the reverse tree.
    pub fn apply<'k>(
        self,
        objs: &Objects,
        changes: impl IntoIterator<Item = (&'k EdgeKey, &'k Option<Hash>)>,
        len_hint: Option<u64>,
        out: &mut PendingWrites,
    ) -> Result<ReverseEdgeTree, GraphError> {
        apply(objs, self.root, changes, encode_edge_in, len_hint, out).map(ReverseEdgeTree::new)
    }

    /// The order of keys in the reverse edge tree: by target (its length first, then its
    /// bytes), then kind (likewise), then source.
    pub fn key_order(a: &EdgeKey, b: &EdgeKey) -> Ordering {
        encoded_edge_order((&a.target, &a.kind, &a.source), (&b.target, &b.kind, &b.source))
    }
}
