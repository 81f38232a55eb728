//! Encoding [`CommitIndexes`] to bytes (and back) for storage as
//! derived data. The Repo layer puts these bytes in the store; this crate does no I/O.
//!
//! The layout is written down in `docs-draft/index-format.md`. In short: a tag byte
//! ([`TAG_COMMIT_INDEXES`]), the 32-byte key, the node count, then one section per index,
//! each `tag u8 · length u64 · payload`, in increasing tag order. Integers and floats are
//! fixed-width little endian and lengths are u64, the conventions of the object codec
//! (bincode 2's fixed-int configuration); strings are a u64 byte length and UTF-8.
//!
//! The decoder is written by hand rather than with bincode's derive: bincode 2 without a
//! size limit allocates a container's claimed length before reading it, so garbage bytes
//! could abort the process. Here every length is checked against the bytes that remain
//! before anything is allocated, every structural rule the indexes rely on (ordinals in
//! range and increasing, sorted keys, consistent totals) is checked, and any failure is an
//! [`IndexError::BadStoredIndex`]: decoding never panics.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_core::limits::MAX_VALUE_DEPTH;
use cairn_core::{Hash, NodeId, Value};
use roaring::RoaringBitmap;

use crate::adjacency::{Adjacency, FlatEdge};
use crate::analyzer::Analyzer;
use crate::bm25::{Bm25Index, Bm25Params};
use crate::bundle::CommitIndexes;
use crate::dense::{decode_dense, encode_dense};
use crate::error::IndexError;
use crate::hit::Ordinal;
use crate::labels::LabelIndex;
use crate::node_table::NodeTable;
use crate::props::PropertyIndex;
use crate::sparse::SparseIndex;
use crate::validity::ValidityColumn;

/// Tag byte of persisted [`CommitIndexes`] (derived data, format version 1).
pub const TAG_COMMIT_INDEXES: u8 = 0xB1;

const SEC_NODES: u8 = 0x01;
const SEC_LABELS: u8 = 0x02;
const SEC_VALIDITY: u8 = 0x03;
const SEC_PROPS: u8 = 0x04;
const SEC_BM25: u8 = 0x05;
const SEC_SPARSE: u8 = 0x06;
const SEC_DENSE: u8 = 0x07;
const SEC_ADJACENCY: u8 = 0x08;

const VALUE_NULL: u8 = 0;
const VALUE_FALSE: u8 = 1;
const VALUE_TRUE: u8 = 2;
const VALUE_INT: u8 = 3;
const VALUE_FLOAT: u8 = 4;
const VALUE_STRING: u8 = 5;
const VALUE_LIST: u8 = 6;
const VALUE_MAP: u8 = 7;

/// Encodes every index of `idx` (dense ones through [`encode_dense`], without their HNSW
/// base, which is stored separately by key).
pub fn encode_indexes(idx: &CommitIndexes) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(1 << 16));
    w.u8(TAG_COMMIT_INDEXES);
    w.bytes(idx.key.as_bytes());
    w.u32(idx.nodes.len() as u32);

    w.section(SEC_NODES, |w| {
        for (id, hash) in idx.nodes.ids().iter().zip(idx.nodes.hashes()) {
            w.str(id.as_str());
            w.bytes(hash.as_bytes());
        }
    });
    w.section(SEC_LABELS, |w| {
        w.len(idx.labels.labels.len());
        for (label, bitmap) in &idx.labels.labels {
            w.str(label);
            w.bitmap(bitmap);
        }
    });
    w.section(SEC_VALIDITY, |w| {
        idx.validity.from_ms.iter().for_each(|&v| w.i64(v));
        idx.validity.until_ms.iter().for_each(|&v| w.i64(v));
    });
    w.section(SEC_PROPS, |w| {
        w.len(idx.props.columns.len());
        for (key, column) in &idx.props.columns {
            w.str(key);
            w.len(column.len());
            for (o, v) in column {
                w.u32(*o);
                w.value(v);
            }
        }
    });
    w.section(SEC_BM25, |w| {
        let b = &idx.bm25;
        w.u32(b.params.k1.to_bits());
        w.u32(b.params.b.to_bits());
        w.u8(u8::from(b.params.analyzer.stem));
        w.u64(b.total_len);
        b.doc_len.iter().for_each(|&l| w.u32(l));
        w.len(b.postings.len());
        for (term, list) in &b.postings {
            w.str(term);
            w.len(list.len());
            for &(o, tf) in list {
                w.u32(o);
                w.u32(tf);
            }
        }
    });
    for (model, s) in &idx.sparse {
        w.section(SEC_SPARSE, |w| {
            w.str(model);
            w.bitmap(&s.docs);
            w.len(s.postings.len());
            for (dim, list) in &s.postings {
                w.u32(*dim);
                w.len(list.len());
                for &(o, x) in list {
                    w.u32(o);
                    w.u32(x.to_bits());
                }
            }
        });
    }
    for (model, d) in &idx.dense {
        w.section(SEC_DENSE, |w| {
            w.str(model);
            w.bytes(&encode_dense(d));
        });
    }
    w.section(SEC_ADJACENCY, |w| {
        let a = &idx.adjacency;
        w.len(a.kinds.len());
        a.kinds.iter().for_each(|k| w.str(k));
        w.len(a.edge_count());
        for e in a.flat_edges() {
            w.u32(e.source);
            w.u32(e.target);
            w.u32(e.kind);
            w.u64(e.weight.to_bits());
            w.i64(e.valid_from_ms);
            w.i64(e.valid_until_ms);
        }
    });
    w.0
}

/// Decodes bytes written by [`encode_indexes`], refusing them unless they carry
/// `expected_key` (so an index can never be served for other content). Dense indexes come
/// back without an HNSW base; the caller re-attaches one by
/// [`DenseIndex::base_key`](crate::DenseIndex::base_key).
///
/// Never panics: anything malformed is an [`IndexError::BadStoredIndex`].
pub fn decode_indexes(bytes: &[u8], expected_key: &Hash) -> Result<CommitIndexes, IndexError> {
    let mut r = Reader { bytes, at: 0 };
    let tag = r.u8()?;
    if tag != TAG_COMMIT_INDEXES {
        return Err(bad(format!("tag 0x{tag:02x}, expected 0x{TAG_COMMIT_INDEXES:02x}")));
    }
    let key = Hash::from_bytes(r.array()?);
    if key != *expected_key {
        return Err(bad(format!(
            "the stored index is for key {}, not {}",
            key.short(),
            expected_key.short()
        )));
    }
    let n = r.u32()?;

    let mut s = r.section(SEC_NODES)?;
    let nodes = decode_nodes(&mut s, n)?;
    s.done()?;
    let mut s = r.section(SEC_LABELS)?;
    let labels = decode_labels(&mut s, n)?;
    s.done()?;
    let mut s = r.section(SEC_VALIDITY)?;
    let validity = decode_validity(&mut s, n)?;
    s.done()?;
    let mut s = r.section(SEC_PROPS)?;
    let props = decode_props(&mut s, n)?;
    s.done()?;
    let mut s = r.section(SEC_BM25)?;
    let bm25 = decode_bm25(&mut s, n)?;
    s.done()?;

    let mut sparse = BTreeMap::new();
    while r.peek() == Some(SEC_SPARSE) {
        let mut s = r.section(SEC_SPARSE)?;
        let model = s.string()?;
        if sparse.keys().next_back().is_some_and(|last: &String| *last >= model) {
            return Err(bad("sparse models out of order".into()));
        }
        let idx = decode_sparse(&mut s, n)?;
        s.done()?;
        sparse.insert(model, Arc::new(idx));
    }
    let mut dense = BTreeMap::new();
    while r.peek() == Some(SEC_DENSE) {
        let mut s = r.section(SEC_DENSE)?;
        let model = s.string()?;
        if dense.keys().next_back().is_some_and(|last: &String| *last >= model) {
            return Err(bad("dense models out of order".into()));
        }
        let rest = s.take(s.remaining())?;
        let idx = decode_dense(rest)?;
        if idx.model() != model || idx.node_count() != n {
            return Err(bad(format!("dense section `{model}` does not match its index")));
        }
        dense.insert(model, Arc::new(idx));
    }
    let mut s = r.section(SEC_ADJACENCY)?;
    let adjacency = decode_adjacency(&mut s, n)?;
    s.done()?;
    r.done()?;

    Ok(CommitIndexes {
        key,
        nodes,
        labels,
        validity,
        props,
        dense,
        sparse,
        bm25: Arc::new(bm25),
        adjacency: Arc::new(adjacency),
    })
}

fn bad(what: String) -> IndexError {
    IndexError::BadStoredIndex(what)
}

fn decode_nodes(r: &mut Reader<'_>, n: u32) -> Result<NodeTable, IndexError> {
    let n = n as usize;
    // Each entry is at least 8 + 1 + 32 bytes.
    if n.saturating_mul(41) > r.remaining() {
        return Err(bad("node table shorter than its count".into()));
    }
    let mut ids: Vec<NodeId> = Vec::with_capacity(n);
    let mut hashes = Vec::with_capacity(n);
    for _ in 0..n {
        let id = NodeId::new(r.string()?).map_err(|e| bad(format!("node id: {e}")))?;
        if ids.last().is_some_and(|last| *last >= id) {
            return Err(bad("node ids not strictly increasing".into()));
        }
        ids.push(id);
        hashes.push(Hash::from_bytes(r.array()?));
    }
    Ok(NodeTable::from_sorted(ids, hashes))
}

fn decode_labels(r: &mut Reader<'_>, n: u32) -> Result<LabelIndex, IndexError> {
    let count = r.len(8 + 8)?;
    let mut labels = BTreeMap::new();
    for _ in 0..count {
        let label = r.string()?;
        if labels.keys().next_back().is_some_and(|last: &String| *last >= label) {
            return Err(bad("labels out of order".into()));
        }
        let bitmap = r.bitmap(n)?;
        labels.insert(label, bitmap);
    }
    Ok(LabelIndex { labels })
}

fn decode_validity(r: &mut Reader<'_>, n: u32) -> Result<ValidityColumn, IndexError> {
    let n = n as usize;
    if n.saturating_mul(16) != r.remaining() {
        return Err(bad("validity section has the wrong size".into()));
    }
    let from_ms = (0..n).map(|_| r.i64()).collect::<Result<Vec<_>, _>>()?;
    let until_ms = (0..n).map(|_| r.i64()).collect::<Result<Vec<_>, _>>()?;
    Ok(ValidityColumn { from_ms, until_ms })
}

fn decode_props(r: &mut Reader<'_>, n: u32) -> Result<PropertyIndex, IndexError> {
    let count = r.len(8 + 8)?;
    let mut columns = BTreeMap::new();
    for _ in 0..count {
        let key = r.string()?;
        if columns.keys().next_back().is_some_and(|last: &String| *last >= key) {
            return Err(bad("property keys out of order".into()));
        }
        let len = r.len(4 + 1)?;
        let mut column: Vec<(Ordinal, Value)> = Vec::with_capacity(len);
        for _ in 0..len {
            let o = r.ordinal(n)?;
            if column.last().is_some_and(|(last, _)| *last >= o) {
                return Err(bad(format!("property `{key}`: ordinals not increasing")));
            }
            column.push((o, r.value(0)?));
        }
        columns.insert(key, column);
    }
    Ok(PropertyIndex { columns })
}

fn decode_bm25(r: &mut Reader<'_>, n: u32) -> Result<Bm25Index, IndexError> {
    let k1 = f32::from_bits(r.u32()?);
    let b = f32::from_bits(r.u32()?);
    let stem = match r.u8()? {
        0 => false,
        1 => true,
        x => return Err(bad(format!("BM25 stem flag {x}"))),
    };
    if !k1.is_finite() || !b.is_finite() {
        return Err(bad("BM25 parameters not finite".into()));
    }
    let total_len = r.u64()?;
    let n = n as usize;
    if n.saturating_mul(4) > r.remaining() {
        return Err(bad("BM25 lengths shorter than the node count".into()));
    }
    let doc_len = (0..n).map(|_| r.u32()).collect::<Result<Vec<_>, _>>()?;
    if doc_len.iter().map(|&l| u64::from(l)).sum::<u64>() != total_len {
        return Err(bad("BM25 total length does not add up".into()));
    }
    let terms = r.len(8 + 8)?;
    let mut postings = BTreeMap::new();
    for _ in 0..terms {
        let term = r.string()?;
        if postings.keys().next_back().is_some_and(|last: &String| *last >= term) {
            return Err(bad("BM25 terms out of order".into()));
        }
        let len = r.len(8)?;
        let mut list: Vec<(Ordinal, u32)> = Vec::with_capacity(len);
        for _ in 0..len {
            let o = r.ordinal(n as u32)?;
            let tf = r.u32()?;
            if list.last().is_some_and(|(last, _)| *last >= o) || tf == 0 {
                return Err(bad(format!("BM25 postings of `{term}` malformed")));
            }
            list.push((o, tf));
        }
        if list.is_empty() {
            return Err(bad(format!("BM25 term `{term}` without postings")));
        }
        postings.insert(term, list);
    }
    Ok(Bm25Index {
        params: Bm25Params {
            k1,
            b,
            analyzer: Analyzer { stem },
        },
        postings,
        doc_len,
        total_len,
    })
}

fn decode_sparse(r: &mut Reader<'_>, n: u32) -> Result<SparseIndex, IndexError> {
    let docs = r.bitmap(n)?;
    let dims = r.len(4 + 8)?;
    let mut postings = BTreeMap::new();
    for _ in 0..dims {
        let dim = r.u32()?;
        if postings.keys().next_back().is_some_and(|&last| last >= dim) {
            return Err(bad("sparse dimensions out of order".into()));
        }
        let len = r.len(8)?;
        let mut list: Vec<(Ordinal, f32)> = Vec::with_capacity(len);
        for _ in 0..len {
            let o = r.ordinal(n)?;
            let w = f32::from_bits(r.u32()?);
            if list.last().is_some_and(|(last, _)| *last >= o) || !w.is_finite() || !docs.contains(o) {
                return Err(bad(format!("sparse postings of dimension {dim} malformed")));
            }
            list.push((o, w));
        }
        postings.insert(dim, list);
    }
    Ok(SparseIndex { postings, docs })
}

fn decode_adjacency(r: &mut Reader<'_>, n: u32) -> Result<Adjacency, IndexError> {
    let count = r.len(8)?;
    let mut kinds: Vec<String> = Vec::with_capacity(count);
    for _ in 0..count {
        let k = r.string()?;
        if kinds.last().is_some_and(|last| *last >= k) {
            return Err(bad("edge kinds out of order".into()));
        }
        kinds.push(k);
    }
    let edges = r.len(4 * 3 + 8 * 3)?;
    let mut flat: Vec<FlatEdge> = Vec::with_capacity(edges);
    for _ in 0..edges {
        let e = FlatEdge {
            source: r.ordinal(n)?,
            target: r.ordinal(n)?,
            kind: r.u32()?,
            weight: f64::from_bits(r.u64()?),
            valid_from_ms: r.i64()?,
            valid_until_ms: r.i64()?,
        };
        let key = (e.source, e.target, e.kind);
        if e.kind as usize >= kinds.len()
            || !e.weight.is_finite()
            || flat.last().is_some_and(|l| (l.source, l.target, l.kind) >= key)
        {
            return Err(bad("edges malformed or out of order".into()));
        }
        flat.push(e);
    }
    Ok(Adjacency::from_sorted(n as usize, kinds, &flat))
}

/// Appends fixed-width little-endian fields to a buffer.
struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, x: u8) {
        self.0.push(x);
    }
    fn u32(&mut self, x: u32) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn i64(&mut self, x: i64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.bytes(s.as_bytes());
    }
    /// A roaring bitmap in the portable format behind its u64 byte length. (roaring 0.10
    /// has no run containers and no `optimize()`: its serialization is already a function
    /// of the members alone.)
    fn bitmap(&mut self, b: &RoaringBitmap) {
        self.len(b.serialized_size());
        b.serialize_into(&mut self.0).expect("writing to a Vec<u8> cannot fail");
    }
    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.u8(VALUE_NULL),
            Value::Bool(false) => self.u8(VALUE_FALSE),
            Value::Bool(true) => self.u8(VALUE_TRUE),
            Value::Int(i) => {
                self.u8(VALUE_INT);
                self.i64(*i);
            }
            Value::Float(f) => {
                self.u8(VALUE_FLOAT);
                self.u64(f.to_bits());
            }
            Value::String(s) => {
                self.u8(VALUE_STRING);
                self.str(s);
            }
            Value::List(items) => {
                self.u8(VALUE_LIST);
                self.len(items.len());
                items.iter().for_each(|i| self.value(i));
            }
            Value::Map(m) => {
                self.u8(VALUE_MAP);
                self.len(m.len());
                for (k, v) in m {
                    self.str(k);
                    self.value(v);
                }
            }
        }
    }
    /// `tag · u64 length · payload`, the length patched in after `body` writes.
    fn section(&mut self, tag: u8, body: impl FnOnce(&mut Writer)) {
        self.u8(tag);
        let at = self.0.len();
        self.u64(0);
        body(self);
        let len = (self.0.len() - at - 8) as u64;
        self.0[at..at + 8].copy_from_slice(&len.to_le_bytes());
    }
}

/// Reads fixed-width little-endian fields, checking every length against what remains.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], IndexError> {
        if n > self.remaining() {
            return Err(bad(format!("truncated: {n} bytes wanted, {} left", self.remaining())));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], IndexError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }
    fn u8(&mut self) -> Result<u8, IndexError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, IndexError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, IndexError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64, IndexError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    /// A u64 count of items of at least `min_item_bytes` each, refused if they cannot fit
    /// in the remaining bytes (so no allocation exceeds the input's size).
    fn len(&mut self, min_item_bytes: usize) -> Result<usize, IndexError> {
        let n = self.u64()?;
        match usize::try_from(n) {
            Ok(n) if n.saturating_mul(min_item_bytes.max(1)) <= self.remaining() => Ok(n),
            _ => Err(bad(format!(
                "a count of {n} does not fit in the {} bytes left",
                self.remaining()
            ))),
        }
    }
    fn ordinal(&mut self, n: u32) -> Result<Ordinal, IndexError> {
        let o = self.u32()?;
        if o >= n {
            return Err(bad(format!("ordinal {o} out of range (node count {n})")));
        }
        Ok(o)
    }
    fn string(&mut self) -> Result<String, IndexError> {
        let len = self.len(1)?;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| bad("a string is not UTF-8".into()))
    }
    fn bitmap(&mut self, n: u32) -> Result<RoaringBitmap, IndexError> {
        let len = self.len(1)?;
        let mut bytes = self.take(len)?;
        let b = RoaringBitmap::deserialize_from(&mut bytes).map_err(|e| bad(format!("bitmap: {e}")))?;
        if !bytes.is_empty() {
            return Err(bad("bitmap followed by stray bytes".into()));
        }
        // A well-formed bitmap iterates strictly increasing; a forged one might not.
        let mut prev: Option<u32> = None;
        for o in &b {
            if prev.is_some_and(|p| p >= o) || o >= n {
                return Err(bad("bitmap out of order or out of range".into()));
            }
            prev = Some(o);
        }
        Ok(b)
    }
    fn value(&mut self, depth: usize) -> Result<Value, IndexError> {
        Ok(match self.u8()? {
            VALUE_NULL => Value::Null,
            VALUE_FALSE => Value::Bool(false),
            VALUE_TRUE => Value::Bool(true),
            VALUE_INT => Value::Int(self.i64()?),
            VALUE_FLOAT => {
                let f = f64::from_bits(self.u64()?);
                if !f.is_finite() {
                    return Err(bad("non-finite property value".into()));
                }
                Value::Float(f)
            }
            VALUE_STRING => Value::String(self.string()?),
            kind @ (VALUE_LIST | VALUE_MAP) => {
                // Depth counts from the property itself, as in the data model's rule.
                if depth + 1 >= MAX_VALUE_DEPTH {
                    return Err(bad("property value nested too deep".into()));
                }
                if kind == VALUE_LIST {
                    let len = self.len(1)?;
                    let mut items = Vec::with_capacity(len);
                    for _ in 0..len {
                        items.push(self.value(depth + 1)?);
                    }
                    Value::List(items)
                } else {
                    let len = self.len(8 + 1)?;
                    let mut m = BTreeMap::new();
                    for _ in 0..len {
                        let k = self.string()?;
                        if m.keys().next_back().is_some_and(|last: &String| *last >= k) {
                            return Err(bad("map keys out of order".into()));
                        }
                        m.insert(k, self.value(depth + 1)?);
                    }
                    Value::Map(m)
                }
            }
            x => return Err(bad(format!("unknown value kind {x}"))),
        })
    }
    /// The next section, which must carry `tag`, as a reader over its payload.
    fn section(&mut self, tag: u8) -> Result<Reader<'a>, IndexError> {
        let found = self.u8()?;
        if found != tag {
            return Err(bad(format!("section 0x{found:02x} where 0x{tag:02x} was expected")));
        }
        let len = self.len(1)?;
        Ok(Reader {
            bytes: self.take(len)?,
            at: 0,
        })
    }
    fn done(&self) -> Result<(), IndexError> {
        if self.remaining() != 0 {
            return Err(bad(format!("{} trailing bytes", self.remaining())));
        }
        Ok(())
    }
}
