//! The canonical encoding of every stored and hashed object — the one module that
//! defines Cairn's bytes. `storage-format.md` describes the same bytes in prose, and the
//! golden-vector tests below pin them.
//!
//! Every object starts with a type-and-version tag byte, followed by a body encoded with
//! bincode 2.0.1 in its fixed-width, little-endian configuration (varints would admit
//! several encodings of one number). Maps and sets are written in key order; `-0.0` is
//! written as `+0.0`; NaN and infinities are never written.
//!
//! Decoding is strict: it refuses a wrong tag, trailing bytes, any rule of
//! [`Node::validate`]/[`Edge::validate`], and any encoding that is not the canonical one
//! (checked by re-encoding), so an object's hash is a function of its value alone.

use std::collections::{BTreeMap, BTreeSet};

use bincode::config::{self, Configuration, Fixint, Limit, LittleEndian};
use bincode::de::read::BorrowReader;
use bincode::de::read::SliceReader;
use bincode::de::{BorrowDecoder, Decode, Decoder, DecoderImpl};
use bincode::enc::write::Writer;
use bincode::enc::{Encode, Encoder, EncoderImpl};
use bincode::error::EncodeError;

use crate::ids::{CommitId, Hash, NodeId};
use crate::limits::*;
use crate::model::{Edge, Node, SparseVector, Validity};
use crate::objects::{Commit, TreeEntry, TreeNode};
use crate::value::Value;

/// Tag byte of a [`Node`] object, format version 1.
pub const TAG_NODE: u8 = 0x11;
/// Tag byte of an [`Edge`] object, format version 1.
pub const TAG_EDGE: u8 = 0x21;
/// Tag byte of a [`TreeNode`] object, format version 1.
pub const TAG_TREE: u8 = 0x31;
/// Tag byte of a [`Commit`] object, format version 1.
pub const TAG_COMMIT: u8 = 0x41;

type Cfg = Configuration<LittleEndian, Fixint, Limit<MAX_OBJECT_BYTES>>;

/// The one bincode configuration of every stored byte Cairn writes through bincode
/// (objects, derived values, reflog records): fixed-width integers, little-endian. Each
/// use adds its own size limit (`STORED.with_limit::<N>()`).
pub const STORED: Configuration<LittleEndian, Fixint> =
    config::standard().with_little_endian().with_fixed_int_encoding();

const CONFIG: Cfg = STORED.with_limit::<MAX_OBJECT_BYTES>();

/// Why bytes could not be decoded as an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Empty input.
    #[error("empty object")]
    Empty,
    /// The tag byte is not the expected one (or no known one).
    #[error("unknown or unexpected object tag 0x{found:02x} (expected {expected})")]
    BadTag {
        /// Tag found.
        found: u8,
        /// What was expected.
        expected: &'static str,
    },
    /// bincode could not read the body (truncated, over the size limit, bad UTF-8, ...).
    #[error("malformed {kind} object: {detail}")]
    Malformed {
        /// Object kind.
        kind: &'static str,
        /// What bincode said.
        detail: String,
    },
    /// The body decoded but breaks a rule of the data model.
    #[error("invalid {kind} object: {detail}")]
    Invalid {
        /// Object kind.
        kind: &'static str,
        /// The rule broken.
        detail: String,
    },
    /// The bytes decode to a value whose canonical encoding differs from them.
    #[error("non-canonical {kind} object encoding")]
    NonCanonical {
        /// Object kind.
        kind: &'static str,
    },
}

/// The kind of a stored object, from its tag byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    /// A [`Node`].
    Node,
    /// An [`Edge`].
    Edge,
    /// A [`TreeNode`].
    Tree,
    /// A [`Commit`].
    Commit,
}

impl ObjectKind {
    /// The kind's name, as used in messages.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Node => "node",
            ObjectKind::Edge => "edge",
            ObjectKind::Tree => "tree",
            ObjectKind::Commit => "commit",
        }
    }

    /// The kind an object's first byte names.
    pub fn of(bytes: &[u8]) -> Result<ObjectKind, DecodeError> {
        match bytes.first() {
            None => Err(DecodeError::Empty),
            Some(&TAG_NODE) => Ok(ObjectKind::Node),
            Some(&TAG_EDGE) => Ok(ObjectKind::Edge),
            Some(&TAG_TREE) => Ok(ObjectKind::Tree),
            Some(&TAG_COMMIT) => Ok(ObjectKind::Commit),
            Some(&found) => Err(DecodeError::BadTag {
                found,
                expected: "a known object tag",
            }),
        }
    }
}

/// Any decoded object.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// A node.
    Node(Node),
    /// An edge.
    Edge(Edge),
    /// A tree node.
    Tree(TreeNode),
    /// A commit.
    Commit(Commit),
}

/// The hash that names an encoded object: blake3 over all of its bytes, tag included.
pub fn hash_object(bytes: &[u8]) -> Hash {
    Hash::of(bytes)
}

/// Decodes any object by its tag (used by `fsck` and the fuzz target).
pub fn decode_object(bytes: &[u8]) -> Result<Object, DecodeError> {
    Ok(match ObjectKind::of(bytes)? {
        ObjectKind::Node => Object::Node(decode_node(bytes)?),
        ObjectKind::Edge => Object::Edge(decode_edge(bytes)?),
        ObjectKind::Tree => Object::Tree(decode_tree(bytes)?),
        ObjectKind::Commit => Object::Commit(decode_commit(bytes)?),
    })
}

// ---------------------------------------------------------------------------------------
// Writing

/// Where an encoder's bytes go: into a buffer, or compared with bytes read from the store
/// (decoding's canonical check: the value re-encoded without an allocation or a second pass
/// over the bytes).
enum Out<'a> {
    Buf(Vec<u8>),
    /// `expected[..at]` matched what was written so far (while `same`).
    Compare {
        expected: &'a [u8],
        at: usize,
        same: bool,
    },
}

impl Writer for Out<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), EncodeError> {
        match self {
            Out::Buf(v) => v.extend_from_slice(bytes),
            Out::Compare { expected, at, same } => {
                if *same {
                    let end = *at + bytes.len();
                    *same = expected.get(*at..end) == Some(bytes);
                    *at = end;
                }
            }
        }
        Ok(())
    }
}

type Enc<'a> = EncoderImpl<Out<'a>, Cfg>;

fn new_encoder(tag: u8, capacity: usize) -> Enc<'static> {
    let mut buf = Vec::with_capacity(capacity);
    buf.push(tag);
    EncoderImpl::new(Out::Buf(buf), CONFIG)
}

fn finish(e: Enc<'_>) -> Vec<u8> {
    match e.into_writer() {
        Out::Buf(v) => v,
        Out::Compare { .. } => unreachable!("new_encoder's encoders write into a buffer"),
    }
}

/// Whether `write` (an object's body writer) writes exactly `bytes[1..]`: `bytes` is the
/// canonical encoding of the value it writes (the tag byte is checked by the caller).
fn writes_exactly(bytes: &[u8], write: impl FnOnce(&mut Enc<'_>)) -> bool {
    let mut e = EncoderImpl::new(
        Out::Compare {
            expected: bytes,
            at: 1,
            same: true,
        },
        CONFIG,
    );
    write(&mut e);
    match e.into_writer() {
        Out::Compare { at, same, .. } => same && at == bytes.len(),
        Out::Buf(_) => unreachable!("a comparing encoder"),
    }
}

// An encoder's writer (a buffer, or a comparison) cannot fail, and the values written here
// are all sized within the limits (validated before encoding), so errors are impossible;
// we still propagate them through `w` and unwrap once at the top with that invariant stated.
fn w<T: Encode + ?Sized>(e: &mut Enc<'_>, v: &T) {
    v.encode(e).expect("an encoder's writer cannot fail");
}

fn w_len(e: &mut Enc<'_>, n: usize) {
    w(e, &(n as u64));
}

fn w_hash(e: &mut Enc<'_>, h: &Hash) {
    w(e, h.as_bytes());
}

fn w_opt_hash(e: &mut Enc<'_>, h: &Option<Hash>) {
    match h {
        None => w(e, &0u8),
        Some(h) => {
            w(e, &1u8);
            w_hash(e, h);
        }
    }
}

fn w_opt_i64(e: &mut Enc<'_>, v: Option<i64>) {
    match v {
        None => w(e, &0u8),
        Some(x) => {
            w(e, &1u8);
            w(e, &x);
        }
    }
}

fn w_f64(e: &mut Enc<'_>, f: f64) {
    // -0.0 and +0.0 compare equal; write the one canonical zero.
    let f = if f == 0.0 { 0.0 } else { f };
    w(e, &f);
}

/// `v`'s items, each as the four little-endian bytes of `word(item)`, written in blocks of
/// 64 (a loop the compiler vectorises; one write of the encoder a block).
fn w_words<T>(e: &mut Enc<'_>, v: &[T], word: impl Fn(&T) -> u32) {
    let mut block = [0u8; 256];
    for xs in v.chunks(64) {
        for (x, b) in xs.iter().zip(block.chunks_exact_mut(4)) {
            b.copy_from_slice(&word(x).to_le_bytes());
        }
        e.writer()
            .write(&block[..xs.len() * 4])
            .expect("an encoder's writer cannot fail");
    }
}

/// A length, then what `w(e, &x)` writes for each number (four little-endian bytes),
/// `-0.0` as `0.0`.
fn w_f32s(e: &mut Enc<'_>, v: &[f32]) {
    w_len(e, v.len());
    // On the bits, so that the loop is vectorised: `-0.0` is the sign bit alone.
    w_words(e, v, |x| match x.to_bits() {
        0x8000_0000 => 0,
        bits => bits,
    });
}

fn w_value(e: &mut Enc<'_>, v: &Value) {
    match v {
        Value::Null => w(e, &0u8),
        Value::Bool(b) => {
            w(e, &1u8);
            w(e, b);
        }
        Value::Int(i) => {
            w(e, &2u8);
            w(e, i);
        }
        Value::Float(f) => {
            w(e, &3u8);
            w_f64(e, *f);
        }
        Value::String(s) => {
            w(e, &4u8);
            w(e, s.as_str());
        }
        Value::List(items) => {
            w(e, &5u8);
            w_len(e, items.len());
            for item in items {
                w_value(e, item);
            }
        }
        Value::Map(m) => {
            w(e, &6u8);
            w_props(e, m);
        }
    }
}

fn w_props(e: &mut Enc<'_>, m: &BTreeMap<String, Value>) {
    w_len(e, m.len());
    for (k, v) in m {
        w(e, k.as_str());
        w_value(e, v);
    }
}

fn w_validity(e: &mut Enc<'_>, v: &Validity) {
    w_opt_i64(e, v.valid_from_ms);
    w_opt_i64(e, v.valid_until_ms);
}

/// Encodes a node (tag [`TAG_NODE`]). The node should have passed
/// [`Node::validate`]; `-0.0` is written as `+0.0` regardless.
pub fn encode_node(n: &Node) -> Vec<u8> {
    let dims: usize = n.embeddings.values().map(|v| v.len() * 4).sum();
    let mut e = new_encoder(TAG_NODE, 64 + n.text.len() + dims);
    write_node(&mut e, n);
    finish(e)
}

/// A node's body (after the tag).
fn write_node(e: &mut Enc<'_>, n: &Node) {
    w(e, n.id.as_str());
    w_len(e, n.labels.len());
    for l in &n.labels {
        w(e, l.as_str());
    }
    w_props(e, &n.props);
    w(e, n.text.as_str());
    w_len(e, n.embeddings.len());
    for (model, v) in &n.embeddings {
        w(e, model.as_str());
        w_f32s(e, v);
    }
    w_len(e, n.sparse.len());
    for (model, s) in &n.sparse {
        w(e, model.as_str());
        w_len(e, s.indices.len());
        w_words(e, &s.indices, |&i| i);
        w_f32s(e, &s.values);
    }
    w_validity(e, &n.validity);
}

/// Where dense `model`'s components start in [`encode_node`]`(n)`: the byte offset of the
/// first of its `f32`s (each then 4 little-endian bytes, one after another), or `None` if
/// `n` has no vector of `model`. Computed from the field lengths of storage-format §3.1,
/// without encoding: an index part records it so that a row is read from the node object
/// by range (§7.3.4).
///
/// ```
/// use cairn_core::{codec, Node, NodeId};
/// let n = Node::new(NodeId::new("a").unwrap())
///     .with_text("hello")
///     .with_embedding("m", vec![0.5, -1.0]);
/// let at = codec::node_vector_offset(&n, "m").unwrap();
/// assert_eq!(&codec::encode_node(&n)[at..at + 4], &0.5f32.to_le_bytes());
/// ```
pub fn node_vector_offset(n: &Node, model: &str) -> Option<usize> {
    let mut at = node_text_offset(n) + n.text.len() + 8;
    for (m, v) in &n.embeddings {
        at += 8 + m.len() + 8;
        if m == model {
            return Some(at);
        }
        at += 4 * v.len();
    }
    None
}

/// Where the text's UTF-8 bytes start in [`encode_node`]`(n)` (after its `u64` length,
/// storage-format §3.1 field 4): an index part records it so that a text is read from the
/// node object by range (§7.3.1).
///
/// ```
/// use cairn_core::{codec, Node, NodeId};
/// let n = Node::new(NodeId::new("a").unwrap()).with_label("Doc").with_text("hello");
/// let at = codec::node_text_offset(&n);
/// assert_eq!(&codec::encode_node(&n)[at..at + 5], b"hello");
/// ```
pub fn node_text_offset(n: &Node) -> usize {
    let str_len = |s: &str| 8 + s.len();
    1 + str_len(n.id.as_str()) + 8 + n.labels.iter().map(|l| str_len(l)).sum::<usize>() + props_len(&n.props) + 8
}

/// The encoded length of a property map ([`w_props`]).
fn props_len(m: &BTreeMap<String, Value>) -> usize {
    8 + m.iter().map(|(k, v)| 8 + k.len() + value_len(v)).sum::<usize>()
}

/// The encoded length of a property value ([`w_value`]).
fn value_len(v: &Value) -> usize {
    1 + match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Int(_) | Value::Float(_) => 8,
        Value::String(s) => 8 + s.len(),
        Value::List(items) => 8 + items.iter().map(value_len).sum::<usize>(),
        Value::Map(m) => props_len(m),
    }
}

/// Encodes an edge (tag [`TAG_EDGE`]).
pub fn encode_edge(ed: &Edge) -> Vec<u8> {
    let mut e = new_encoder(TAG_EDGE, 96);
    write_edge(&mut e, ed);
    finish(e)
}

/// An edge's body (after the tag).
fn write_edge(e: &mut Enc<'_>, ed: &Edge) {
    w(e, ed.source.as_str());
    w(e, ed.kind.as_str());
    w(e, ed.target.as_str());
    w_f64(e, ed.weight);
    w_props(e, &ed.props);
    w_validity(e, &ed.validity);
}

/// Encodes a tree node (tag [`TAG_TREE`]).
pub fn encode_tree(t: &TreeNode) -> Vec<u8> {
    let mut e = new_encoder(TAG_TREE, 40 + t.entries.len() * 96);
    write_tree(&mut e, t);
    finish(e)
}

/// A tree's body (after the tag).
fn write_tree(e: &mut Enc<'_>, t: &TreeNode) {
    w(e, &t.level);
    w_opt_hash(e, &t.left);
    w_len(e, t.entries.len());
    for entry in &t.entries {
        w(e, entry.key.as_slice());
        w_hash(e, &entry.value);
        w_opt_hash(e, &entry.right);
    }
}

/// Encodes a commit (tag [`TAG_COMMIT`]).
pub fn encode_commit(c: &Commit) -> Vec<u8> {
    let mut e = new_encoder(TAG_COMMIT, 200 + c.message.len());
    write_commit(&mut e, c);
    finish(e)
}

/// A commit's body (after the tag).
fn write_commit(e: &mut Enc<'_>, c: &Commit) {
    w_len(e, c.parents.len());
    for p in &c.parents {
        w_hash(e, p.hash());
    }
    w_opt_hash(e, &c.node_root);
    w_opt_hash(e, &c.edge_root);
    w_opt_hash(e, &c.edge_in_root);
    w(e, &c.node_count);
    w(e, &c.edge_count);
    w(e, c.author.as_str());
    w(e, c.message.as_str());
    w(e, &c.timestamp_ms);
    w(e, &c.generation);
    w_opt_hash(e, &c.index_base.map(|c| c.0));
    w(e, &c.changes_since_base);
}

/// The key of an edge in the edge tree: `u16be(len(source)) ‖ source ‖ u16be(len(kind)) ‖
/// kind ‖ target`. All edges of one source are contiguous, so "out-edges of X" is a
/// prefix scan ([`edge_key_prefix`]).
pub fn edge_tree_key(source: &NodeId, kind: &str, target: &NodeId) -> Vec<u8> {
    let mut k = edge_key_prefix(source);
    k.extend_from_slice(&(kind.len() as u16).to_be_bytes());
    k.extend_from_slice(kind.as_bytes());
    k.extend_from_slice(target.as_bytes());
    k
}

/// The key of an edge in the reverse edge tree: [`edge_tree_key`] with source and target
/// swapped, so "in-edges of X" is a prefix scan of [`edge_key_prefix`]`(X)`.
pub fn edge_in_tree_key(source: &NodeId, kind: &str, target: &NodeId) -> Vec<u8> {
    edge_tree_key(target, kind, source)
}

/// Splits an edge-tree key back into (first id, kind, second id); `None` if malformed.
pub fn split_edge_tree_key(key: &[u8]) -> Option<(NodeId, String, NodeId)> {
    let take = |k: &[u8]| -> Option<(Vec<u8>, usize)> {
        let len = u16::from_be_bytes([*k.first()?, *k.get(1)?]) as usize;
        Some((k.get(2..2 + len)?.to_vec(), 2 + len))
    };
    let (first, used1) = take(key)?;
    let (kind, used2) = take(&key[used1..])?;
    let second = key.get(used1 + used2..)?.to_vec();
    Some((
        NodeId::new(String::from_utf8(first).ok()?).ok()?,
        String::from_utf8(kind).ok()?,
        NodeId::new(String::from_utf8(second).ok()?).ok()?,
    ))
}

/// The prefix shared by the edge-tree keys of all edges leaving `source`.
pub fn edge_key_prefix(source: &NodeId) -> Vec<u8> {
    let mut k = Vec::with_capacity(source.as_bytes().len() + 40);
    k.extend_from_slice(&(source.as_bytes().len() as u16).to_be_bytes());
    k.extend_from_slice(source.as_bytes());
    k
}

// ---------------------------------------------------------------------------------------
// Reading

type Dec<'a> = DecoderImpl<SliceReader<'a>, Cfg, ()>;

fn r<T: Decode<()>>(d: &mut Dec<'_>, kind: &'static str) -> Result<T, DecodeError> {
    T::decode(d).map_err(|err| DecodeError::Malformed {
        kind,
        detail: err.to_string(),
    })
}

fn invalid(kind: &'static str, detail: impl Into<String>) -> DecodeError {
    DecodeError::Invalid {
        kind,
        detail: detail.into(),
    }
}

/// Reads a collection length, refusing one that could not fit in the remaining input
/// (each element takes at least `min_elem_bytes`), so hostile lengths never allocate.
fn r_len(d: &mut Dec<'_>, kind: &'static str, min_elem_bytes: usize) -> Result<usize, DecodeError> {
    let n: u64 = r(d, kind)?;
    let n = usize::try_from(n).map_err(|_| invalid(kind, "length overflows usize"))?;
    let claim = n
        .checked_mul(min_elem_bytes.max(1))
        .ok_or_else(|| invalid(kind, "length overflows"))?;
    if claim > MAX_OBJECT_BYTES {
        return Err(invalid(
            kind,
            format!("collection of {n} elements is over the object size limit"),
        ));
    }
    Ok(n)
}

fn r_hash(d: &mut Dec<'_>, kind: &'static str) -> Result<Hash, DecodeError> {
    let b: [u8; 32] = r(d, kind)?;
    Ok(Hash::from_bytes(b))
}

fn r_opt_hash(d: &mut Dec<'_>, kind: &'static str) -> Result<Option<Hash>, DecodeError> {
    match r::<u8>(d, kind)? {
        0 => Ok(None),
        1 => Ok(Some(r_hash(d, kind)?)),
        t => Err(invalid(kind, format!("bad option tag {t}"))),
    }
}

fn r_opt_i64(d: &mut Dec<'_>, kind: &'static str) -> Result<Option<i64>, DecodeError> {
    match r::<u8>(d, kind)? {
        0 => Ok(None),
        1 => Ok(Some(r(d, kind)?)),
        t => Err(invalid(kind, format!("bad option tag {t}"))),
    }
}

fn r_node_id(d: &mut Dec<'_>, kind: &'static str) -> Result<NodeId, DecodeError> {
    let s: String = r(d, kind)?;
    NodeId::new(s).map_err(|e| invalid(kind, e.to_string()))
}

/// `n` numbers as `n` reads of a four-byte number would take them (under the same limit),
/// each made by `from` of its little-endian word: taken at once, and filled in place (a
/// loop the compiler turns into a copy on little-endian machines; a `collect` of the
/// mapped chunks converted one number at a time).
fn r_words<T: Copy + Default>(
    d: &mut Dec<'_>,
    kind: &'static str,
    n: usize,
    from: impl Fn(u32) -> T,
) -> Result<Vec<T>, DecodeError> {
    let malformed = |err: bincode::error::DecodeError| DecodeError::Malformed {
        kind,
        detail: err.to_string(),
    };
    d.claim_bytes_read(n * 4).map_err(malformed)?;
    let bytes = d.borrow_reader().take_bytes(n * 4).map_err(malformed)?;
    let mut out = vec![T::default(); n];
    for (x, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *x = from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    }
    Ok(out)
}

/// A length, then that many `f32`s as `r::<f32>` reads them.
fn r_f32s(d: &mut Dec<'_>, kind: &'static str) -> Result<Vec<f32>, DecodeError> {
    let n = r_len(d, kind, 4)?;
    r_words(d, kind, n, f32::from_bits)
}

fn r_value(d: &mut Dec<'_>, kind: &'static str, depth: usize) -> Result<Value, DecodeError> {
    let tag: u8 = r(d, kind)?;
    if matches!(tag, 5 | 6) && depth >= MAX_VALUE_DEPTH {
        return Err(invalid(kind, "property value nests too deep"));
    }
    Ok(match tag {
        0 => Value::Null,
        1 => Value::Bool(r(d, kind)?),
        2 => Value::Int(r(d, kind)?),
        3 => Value::Float(r(d, kind)?),
        4 => Value::String(r(d, kind)?),
        5 => {
            let n = r_len(d, kind, 1)?;
            let mut items = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                items.push(r_value(d, kind, depth + 1)?);
            }
            Value::List(items)
        }
        6 => Value::Map(r_props_at(d, kind, depth + 1)?),
        t => return Err(invalid(kind, format!("bad value tag {t}"))),
    })
}

fn r_props_at(d: &mut Dec<'_>, kind: &'static str, depth: usize) -> Result<BTreeMap<String, Value>, DecodeError> {
    let n = r_len(d, kind, 9)?;
    let mut m = BTreeMap::new();
    for _ in 0..n {
        let k: String = r(d, kind)?;
        let v = r_value(d, kind, depth)?;
        m.insert(k, v);
    }
    Ok(m)
}

fn r_validity(d: &mut Dec<'_>, kind: &'static str) -> Result<Validity, DecodeError> {
    Ok(Validity {
        valid_from_ms: r_opt_i64(d, kind)?,
        valid_until_ms: r_opt_i64(d, kind)?,
    })
}

/// Runs `body` over the bytes after the tag, then checks the tag, that all input was
/// consumed, and that re-encoding gives the same bytes (`write`, the kind's body writer,
/// compared with them as it writes: [`writes_exactly`]).
fn decode_with<T>(
    bytes: &[u8],
    tag: u8,
    kind: &'static str,
    body: impl FnOnce(&mut Dec<'_>) -> Result<T, DecodeError>,
    write: impl FnOnce(&mut Enc<'_>, &T),
) -> Result<T, DecodeError> {
    match bytes.first() {
        None => return Err(DecodeError::Empty),
        Some(&t) if t != tag => {
            return Err(DecodeError::BadTag {
                found: t,
                expected: kind,
            })
        }
        _ => {}
    }
    if bytes.len() > MAX_OBJECT_BYTES {
        return Err(invalid(kind, "object over the size limit"));
    }
    let mut d: Dec<'_> = DecoderImpl::new(SliceReader::new(&bytes[1..]), CONFIG, ());
    let value = body(&mut d)?;
    if !writes_exactly(bytes, |e| write(e, &value)) {
        return Err(DecodeError::NonCanonical { kind });
    }
    Ok(value)
}

/// Decodes and validates a node object.
pub fn decode_node(bytes: &[u8]) -> Result<Node, DecodeError> {
    const K: &str = "node";
    decode_with(
        bytes,
        TAG_NODE,
        K,
        |d| {
            let id = r_node_id(d, K)?;
            let n_labels = r_len(d, K, 8)?;
            let mut labels = BTreeSet::new();
            for _ in 0..n_labels {
                labels.insert(r::<String>(d, K)?);
            }
            let props = r_props_at(d, K, 0)?;
            let text: String = r(d, K)?;
            let n_emb = r_len(d, K, 16)?;
            let mut embeddings = BTreeMap::new();
            for _ in 0..n_emb {
                let model: String = r(d, K)?;
                embeddings.insert(model, r_f32s(d, K)?);
            }
            let n_sparse = r_len(d, K, 24)?;
            let mut sparse = BTreeMap::new();
            for _ in 0..n_sparse {
                let model: String = r(d, K)?;
                let n = r_len(d, K, 4)?;
                let indices = r_words(d, K, n, |i| i)?;
                let values = r_f32s(d, K)?;
                sparse.insert(model, SparseVector { indices, values });
            }
            let validity = r_validity(d, K)?;
            let node = Node {
                id,
                labels,
                props,
                text,
                embeddings,
                sparse,
                validity,
            };
            node.validate().map_err(|e| invalid(K, e.to_string()))?;
            Ok(node)
        },
        write_node,
    )
}

/// Decodes and validates an edge object.
pub fn decode_edge(bytes: &[u8]) -> Result<Edge, DecodeError> {
    const K: &str = "edge";
    decode_with(
        bytes,
        TAG_EDGE,
        K,
        |d| {
            let edge = Edge {
                source: r_node_id(d, K)?,
                kind: r(d, K)?,
                target: r_node_id(d, K)?,
                weight: r(d, K)?,
                props: r_props_at(d, K, 0)?,
                validity: r_validity(d, K)?,
            };
            edge.validate().map_err(|e| invalid(K, e.to_string()))?;
            Ok(edge)
        },
        write_edge,
    )
}

/// Decodes a tree node, checking that it has entries in strictly increasing key order.
pub fn decode_tree(bytes: &[u8]) -> Result<TreeNode, DecodeError> {
    const K: &str = "tree";
    decode_with(
        bytes,
        TAG_TREE,
        K,
        |d| {
            let level: u8 = r(d, K)?;
            let left = r_opt_hash(d, K)?;
            let n = r_len(d, K, 8 + 32 + 1)?;
            if n == 0 {
                return Err(invalid(K, "tree node without entries"));
            }
            let mut entries: Vec<TreeEntry> = Vec::with_capacity(n);
            for _ in 0..n {
                let key: Vec<u8> = r(d, K)?;
                if let Some(prev) = entries.last() {
                    if prev.key >= key {
                        return Err(invalid(K, "tree keys not strictly increasing"));
                    }
                }
                entries.push(TreeEntry {
                    key,
                    value: r_hash(d, K)?,
                    right: r_opt_hash(d, K)?,
                });
            }
            Ok(TreeNode { level, left, entries })
        },
        write_tree,
    )
}

/// Decodes a commit.
pub fn decode_commit(bytes: &[u8]) -> Result<Commit, DecodeError> {
    const K: &str = "commit";
    decode_with(
        bytes,
        TAG_COMMIT,
        K,
        |d| {
            let n = r_len(d, K, 32)?;
            if n > MAX_PARENTS {
                return Err(invalid(K, format!("{n} parents, the limit is {MAX_PARENTS}")));
            }
            let mut parents = Vec::with_capacity(n);
            for _ in 0..n {
                parents.push(CommitId(r_hash(d, K)?));
            }
            let c = Commit {
                parents,
                node_root: r_opt_hash(d, K)?,
                edge_root: r_opt_hash(d, K)?,
                edge_in_root: r_opt_hash(d, K)?,
                node_count: r(d, K)?,
                edge_count: r(d, K)?,
                author: r(d, K)?,
                message: r(d, K)?,
                timestamp_ms: r(d, K)?,
                generation: r(d, K)?,
                index_base: r_opt_hash(d, K)?.map(CommitId),
                changes_since_base: r(d, K)?,
            };
            if c.author.len() > MAX_AUTHOR_BYTES || c.message.len() > MAX_MESSAGE_BYTES {
                return Err(invalid(K, "author or message over its size limit"));
            }
            Ok(c)
        },
        write_commit,
    )
}

// ---------------------------------------------------------------------------------------
// Derived data (index snapshots). These bytes are not content-addressed objects, but they
// are stored, so they use the same configuration and live here too.

/// Encodes a derived-data value through its serde implementation (for third-party types
/// such as instant-distance's HNSW graph), same configuration, behind a tag byte.
pub fn encode_derived_serde<T: serde::Serialize>(tag: u8, value: &T) -> Result<Vec<u8>, String> {
    let mut out = vec![tag];
    out.extend(bincode::serde::encode_to_vec(value, STORED).map_err(|e| e.to_string())?);
    Ok(out)
}

/// Re-exported so derived-data types can `#[derive(Encode, Decode)]` with the same
/// bincode version.
pub use bincode;

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> NodeId {
        NodeId::new(s).unwrap()
    }

    #[test]
    fn text_and_vector_offsets_find_their_bytes_in_the_encoding() {
        let nested = Value::Map(
            [
                (
                    "l".to_string(),
                    Value::List(vec![Value::Null, Value::Bool(true), Value::Int(-3)]),
                ),
                ("s".to_string(), Value::String("héllo".into())),
            ]
            .into(),
        );
        let mut n = Node::new(id("node-1"))
            .with_text("some text")
            .with_label("A")
            .with_label("Bee");
        n.props.insert("f".into(), Value::Float(2.5));
        n.props.insert("m".into(), nested);
        n.embeddings.insert("a".into(), vec![1.0, 2.0, 3.0]);
        n.embeddings.insert("bb".into(), vec![-0.5; 5]);
        n.embeddings.insert("c".into(), vec![7.0]);
        n.sparse.insert("s".into(), SparseVector::new(vec![1], vec![1.0]));
        let bytes = encode_node(&n);
        for (m, v) in &n.embeddings {
            let at = node_vector_offset(&n, m).unwrap();
            let want: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            assert_eq!(&bytes[at..at + want.len()], want.as_slice(), "model {m}");
            assert_eq!(&bytes[at - 8..at], (v.len() as u64).to_le_bytes().as_slice());
        }
        assert_eq!(node_vector_offset(&n, "zz"), None);
        let at = node_text_offset(&n);
        assert_eq!(&bytes[at..at + n.text.len()], n.text.as_bytes());
        assert_eq!(&bytes[at - 8..at], (n.text.len() as u64).to_le_bytes().as_slice());
        assert_eq!(node_vector_offset(&Node::new(id("x")), "a"), None);
    }

    fn sample_node() -> Node {
        let mut props = BTreeMap::new();
        props.insert("year".to_string(), Value::Int(1971));
        props.insert("score".to_string(), Value::Float(0.5));
        props.insert(
            "tags".to_string(),
            Value::List(vec![Value::String("a".into()), Value::Null, Value::Bool(true)]),
        );
        Node {
            id: id("doc-1"),
            labels: ["Document".to_string(), "Paper".to_string()].into(),
            props,
            text: "Wings stall at high angles of attack.".into(),
            embeddings: [("minilm".to_string(), vec![0.25, -0.5, 1.0])].into(),
            sparse: [("splade".to_string(), SparseVector::new(vec![1, 7], vec![0.5, 2.0]))].into(),
            validity: Validity::new(Some(1_000), Some(2_000)),
        }
    }

    fn sample_edge() -> Edge {
        let mut e = Edge::new(id("doc-1"), "cites", id("doc-2")).with_weight(2.5);
        e.props.insert("page".into(), Value::Int(3));
        e
    }

    fn sample_tree() -> TreeNode {
        TreeNode {
            level: 1,
            left: Some(Hash::of(b"left")),
            entries: vec![
                TreeEntry {
                    key: b"a".to_vec(),
                    value: Hash::of(b"va"),
                    right: None,
                },
                TreeEntry {
                    key: b"b".to_vec(),
                    value: Hash::of(b"vb"),
                    right: Some(Hash::of(b"rb")),
                },
            ],
        }
    }

    fn sample_commit() -> Commit {
        Commit {
            parents: vec![CommitId(Hash::of(b"parent"))],
            node_root: Some(Hash::of(b"nodes")),
            edge_root: None,
            edge_in_root: None,
            node_count: 2,
            edge_count: 0,
            author: "cairn".into(),
            message: "first".into(),
            timestamp_ms: 1_700_000_000_000,
            generation: 1,
            index_base: Some(CommitId(Hash::ZERO)),
            changes_since_base: 2,
        }
    }

    #[test]
    fn round_trip_every_object_type() {
        let n = sample_node();
        assert_eq!(decode_node(&encode_node(&n)).unwrap(), n);
        let e = sample_edge();
        assert_eq!(decode_edge(&encode_edge(&e)).unwrap(), e);
        let t = sample_tree();
        assert_eq!(decode_tree(&encode_tree(&t)).unwrap(), t);
        let c = sample_commit();
        assert_eq!(decode_commit(&encode_commit(&c)).unwrap(), c);
        assert!(matches!(decode_object(&encode_node(&n)).unwrap(), Object::Node(_)));
    }

    /// Golden vectors: these hashes pin the byte format described in storage-format.md.
    /// If one changes, the format changed: bump the object's version tag and the document.
    #[test]
    fn golden_vectors() {
        let minimal = Node::new(id("a"));
        let bytes = encode_node(&minimal);
        // tag, u64 len 1, "a", labels 0, props 0, text "", embeddings 0, sparse 0, 2x None
        let mut expect = vec![0x11];
        expect.extend_from_slice(&1u64.to_le_bytes());
        expect.push(b'a');
        for _ in 0..5 {
            expect.extend_from_slice(&0u64.to_le_bytes());
        }
        expect.extend_from_slice(&[0, 0]);
        assert_eq!(bytes, expect);
        let golden = [
            (hash_object(&bytes).to_hex(), GOLDEN_MINIMAL_NODE),
            (hash_object(&encode_node(&sample_node())).to_hex(), GOLDEN_NODE),
            (hash_object(&encode_edge(&sample_edge())).to_hex(), GOLDEN_EDGE),
            (hash_object(&encode_tree(&sample_tree())).to_hex(), GOLDEN_TREE),
            (hash_object(&encode_commit(&sample_commit())).to_hex(), GOLDEN_COMMIT),
        ];
        for (got, want) in golden {
            assert_eq!(got, want);
        }
    }

    const GOLDEN_MINIMAL_NODE: &str = "d5e432da3e50a2d2bb6bb9a1d513af9b7bb8e839e8d8b9b6e929cc308ee6d71a";
    const GOLDEN_NODE: &str = "63ab8cc9358367afdd3c2738c48fe85f4d81df59cf7e5abed5b620cba96e28e3";
    const GOLDEN_EDGE: &str = "5573b5c4827a037410743b570e5df3ad262244e4985d95629fe484bd75c608ef";
    const GOLDEN_TREE: &str = "d78632ed88642d32da3d0bd887b8f9a2b5d40b007feb4e53bd46735c185395ed";
    const GOLDEN_COMMIT: &str = "2f94b6c7d5d8c11fdc7cef8969af9edebb1a7184205186bcb2d58721990c55c1";

    #[test]
    fn negative_zero_is_written_as_positive_zero() {
        let a = Node::new(id("z")).with_embedding("m", vec![-0.0, 1.0]);
        let b = Node::new(id("z")).with_embedding("m", vec![0.0, 1.0]);
        assert_eq!(encode_node(&a), encode_node(&b));
    }

    #[test]
    fn refuses_non_canonical_and_bad_input() {
        let bytes = encode_node(&sample_node());
        // trailing byte
        let mut t = bytes.clone();
        t.push(0);
        assert!(decode_node(&t).is_err());
        // wrong tag
        assert!(matches!(decode_edge(&bytes), Err(DecodeError::BadTag { .. })));
        // truncated
        assert!(decode_node(&bytes[..bytes.len() - 3]).is_err());
        // a NaN embedding written by hand is refused
        let mut n = sample_node();
        n.embeddings.insert("minilm".into(), vec![0.25, -0.5, 1.0]);
        let good = encode_node(&n);
        let pos = good.windows(4).position(|w| w == 1.0f32.to_le_bytes()).unwrap();
        let mut bad = good.clone();
        bad[pos..pos + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(matches!(decode_node(&bad), Err(DecodeError::Invalid { .. })));
        // -0.0 written by hand is non-canonical
        let mut z = good.clone();
        z[pos..pos + 4].copy_from_slice(&(-0.0f32).to_le_bytes());
        assert!(matches!(decode_node(&z), Err(DecodeError::NonCanonical { .. })));
        // unsorted tree keys
        let mut t = sample_tree();
        t.entries.swap(0, 1);
        assert!(decode_tree(&encode_tree(&t)).is_err());
        // a hostile length does not allocate
        let mut huge = vec![TAG_COMMIT];
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_commit(&huge).is_err());
    }

    #[test]
    fn edge_keys_group_by_source() {
        let k1 = edge_tree_key(&id("a"), "x", &id("b"));
        let k2 = edge_tree_key(&id("a"), "y", &id("a"));
        let prefix = edge_key_prefix(&id("a"));
        assert!(k1.starts_with(&prefix) && k2.starts_with(&prefix));
        assert!(!edge_tree_key(&id("ab"), "x", &id("b")).starts_with(&prefix));
    }
}
