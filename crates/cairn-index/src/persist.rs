//! The bytes of every stored derived part (`storage-format.md` §7.3), and the one bounded
//! reader that decodes them.
//!
//! Every value is `tag u8 ‖ key (32 bytes) ‖ payload`. The key is the part's own key (the
//! chunk, unit or manifest key the repository stores it under); a decoder is given the key
//! it expects and refuses any other, so a part can never be served for other content.
//! Integers and floats are fixed-width little endian (floats as their IEEE-754 bits),
//! counts `u32le` or `u64le` as stated, strings `u64le(byte length) ‖ UTF-8`.
//!
//! Decoding never panics and never allocates more than the input could describe: every
//! count is checked against the bytes that remain before anything is allocated, and every
//! structural rule a search relies on (ordering, ranges, finiteness, consistent totals) is
//! checked. Anything else is [`IndexError::BadStoredIndex`]; the repository then rebuilds
//! the part from the data.

use std::collections::BTreeMap;

use bytes::Bytes;
use cairn_core::limits::{MAX_EMBEDDING_DIM, MAX_VALUE_DEPTH};
use cairn_core::{Hash, NodeId, Value};
use roaring::RoaringBitmap;

use crate::chunk::node::{InPlace, LabelAt};
use crate::chunk::row_fields::{RowFields, ROW_FIELD_BYTES};
use crate::chunk::{
    DenseChunk, DenseHead, EdgeChunk, EdgeDirection, EdgeRec, Ids, Local, NodeChunk, Posting, SparseChunk, TextChunk,
};
use crate::error::IndexError;
use crate::hnsw::UnitGraph;
use crate::params::MAX_CHUNK_KEYS;

/// Tag of a node chunk's core part.
pub const TAG_NODE_CORE: u8 = 0xC1;
/// Tag of a node chunk's BM25 part.
pub const TAG_TEXT: u8 = 0xC2;
/// Tag of a node chunk's sparse part (one model).
pub const TAG_SPARSE: u8 = 0xC3;
/// Tag of a node chunk's dense part (one model).
pub const TAG_DENSE: u8 = 0xC4;
/// Tag of an edge chunk.
pub const TAG_EDGES: u8 = 0xC5;
/// Tag of a split marker: the span under this key is oversize and stored as its pieces.
pub const TAG_SPLIT: u8 = 0xC6;
/// Tag of a unit graph (one model).
pub const TAG_UNIT_GRAPH: u8 = 0xC7;
/// Tag of a commit manifest (its chunks were all stored).
pub const TAG_MANIFEST: u8 = 0xC8;

const VALUE_NULL: u8 = 0;
const VALUE_FALSE: u8 = 1;
const VALUE_TRUE: u8 = 2;
const VALUE_INT: u8 = 3;
const VALUE_FLOAT: u8 = 4;
const VALUE_STRING: u8 = 5;
const VALUE_LIST: u8 = 6;
const VALUE_MAP: u8 = 7;

pub(crate) fn bad(what: impl Into<String>) -> IndexError {
    IndexError::BadStoredIndex(what.into())
}

// ---------------------------------------------------------------------------------------
// Encoders

fn header(tag: u8, key: &Hash, capacity: usize) -> Writer {
    let mut w = Writer(Vec::with_capacity(capacity + 33));
    w.u8(tag);
    w.bytes(key.as_bytes());
    w
}

/// Encodes a node chunk's core part (storage-format §7.3.1: no text is stored, each
/// text's place in its node object instead). The same bytes whether the part holds its
/// texts in memory or not.
pub fn encode_node_core(key: &Hash, c: &NodeChunk) -> Vec<u8> {
    let mut w = header(TAG_NODE_CORE, key, c.heap_bytes() + c.len() * 16);
    // The head's length and crc32, set once the head is written.
    w.u32(0);
    w.u32(0);
    let head = w.0.len();
    w.u32(c.ids.len() as u32);
    for (l, id) in c.ids.iter().enumerate() {
        let h = c.hash(l as Local);
        w.str(id);
        w.bytes(h.as_bytes());
    }
    let labels: Vec<_> = c.labels_iter().collect();
    w.u64(labels.len() as u64);
    for (label, b) in labels {
        w.str(label);
        w.locals(b);
    }
    for l in 0..c.len() {
        let (f, u) = c.validity(l as Local);
        w.i64(f);
        w.i64(u);
    }
    w.u64(c.props_map().len() as u64);
    for (k, col) in c.props_map() {
        w.str(k);
        w.u32(col.len() as u32);
        for (l, v) in col {
            w.u32(*l);
            w.value(v);
        }
    }
    for l in 0..c.len() {
        let (len, chars, crc, offset) = c.text_entry(l as Local);
        w.u32(len);
        w.u32(chars);
        w.u32(crc);
        w.u32(offset);
    }
    w.u64(c.dense_models.len() as u64);
    for (m, (dim, rows)) in &c.dense_models {
        w.str(m);
        w.u32(*dim);
        w.u32(*rows);
    }
    w.u64(c.sparse_models.len() as u64);
    for (m, rows) in &c.sparse_models {
        w.str(m);
        w.u32(*rows);
    }
    for l in 0..c.ids.len() {
        let spans = c.text_dates(l as Local);
        w.u8(spans.len() as u8);
        for s in spans {
            w.u32(s.start as u32);
            w.u32(s.end as u32);
        }
    }
    let head_len = (w.0.len() - head) as u32;
    let crc = crc32fast::hash(&w.0[head..]);
    w.0[head - 8..head - 4].copy_from_slice(&head_len.to_le_bytes());
    w.0[head - 4..head].copy_from_slice(&crc.to_le_bytes());
    w.0
}

/// Encodes a node chunk's BM25 part.
pub fn encode_text(key: &Hash, t: &TextChunk) -> Vec<u8> {
    let mut w = header(TAG_TEXT, key, t.heap_bytes());
    w.u32(t.doc_len.len() as u32);
    t.doc_len.iter().for_each(|&l| w.u32(l));
    w.u64(t.term_count() as u64);
    for i in 0..t.term_count() {
        // Lengths and counts as varints (index format 8): a chunk's ~1,500 terms are
        // short, and most have one or two postings.
        w.short_str(t.term(i));
        let list = t.postings_at(i);
        w.varint(list.len() as u32);
        // One word a posting, as in memory: the local ordinal above the frequency.
        list.iter().for_each(|p| w.u32(p.raw()));
    }
    w.0
}

/// Encodes a node chunk's sparse part for `model`; `n` is the chunk's node count.
pub fn encode_sparse(key: &Hash, model: &str, n: u32, s: &SparseChunk) -> Vec<u8> {
    let mut w = header(TAG_SPARSE, key, s.heap_bytes());
    w.str(model);
    w.u32(n);
    w.locals(&s.docs);
    w.u64(s.dims.len() as u64);
    for (i, d) in s.dims.iter().enumerate() {
        w.u32(*d);
        let list = &s.posts[s.starts[i] as usize..s.starts[i + 1] as usize];
        w.varint(list.len() as u32);
        // A local ordinal is below a chunk's 4,096 nodes: two bytes (index format 8).
        for &(l, x) in list {
            w.u16(l as u16);
            w.u32(x.to_bits());
        }
    }
    w.0
}

/// What a dense part's encoding holds, borrowed from a part or its head.
struct DenseFields<'a> {
    dim: usize,
    rows: &'a [Local],
    /// The per-row fields in their stored layout.
    fields: &'a [u8],
    codes: &'a [u8],
}

/// Encodes a node chunk's dense part for `model` (storage-format §7.3.4: no vectors, each
/// row's place in its node object instead); `n` is the chunk's node count. The same bytes
/// whether the part holds its rows in memory or not.
pub fn encode_dense(key: &Hash, model: &str, n: u32, d: &DenseChunk) -> Vec<u8> {
    write_dense(
        key,
        model,
        n,
        DenseFields {
            dim: d.dim,
            rows: &d.rows,
            fields: d.fields.as_bytes(),
            codes: &d.codes,
        },
    )
}

/// Encodes a decoded dense part ([`decode_dense`]) again: the same bytes.
pub fn encode_dense_head(key: &Hash, model: &str, n: u32, h: &DenseHead) -> Vec<u8> {
    write_dense(
        key,
        model,
        n,
        DenseFields {
            dim: h.dim,
            rows: &h.rows,
            fields: h.fields.as_bytes(),
            codes: &h.codes,
        },
    )
}

fn write_dense(key: &Hash, model: &str, n: u32, d: DenseFields<'_>) -> Vec<u8> {
    let rows = d.rows.len();
    let mut w = header(TAG_DENSE, key, rows * (DENSE_ROW_BYTES + d.dim) + 64);
    w.str(model);
    w.u32(d.dim as u32);
    w.u32(n);
    w.u32(rows as u32);
    d.rows.iter().for_each(|&r| w.u32(r));
    w.0.extend_from_slice(d.fields);
    // The head's checksum covers every byte before the codes; each row's codes have
    // their own (in the row fields), checked when the row is first read.
    let head_crc = crc32fast::hash(&w.0);
    w.u32(head_crc);
    w.0.extend_from_slice(d.codes);
    w.0
}

/// Bytes per row of a dense part besides its codes: local, scale, two bound terms, two
/// crc32s, node object hash and offset.
const DENSE_ROW_BYTES: usize = 4 + ROW_FIELD_BYTES;

/// Encodes an edge chunk.
pub fn encode_edges(key: &Hash, direction: EdgeDirection, c: &EdgeChunk) -> Vec<u8> {
    let mut w = header(TAG_EDGES, key, c.heap_bytes());
    w.u8(match direction {
        EdgeDirection::Out => 0,
        EdgeDirection::In => 1,
    });
    w.u64(c.kinds.len() as u64);
    c.kinds.iter().for_each(|k| w.str(k));
    w.u32(c.edges.len() as u32);
    for e in &c.edges {
        w.str(e.near.as_str());
        w.u32(e.kind);
        w.str(e.far.as_str());
        w.u64(e.weight.to_bits());
        w.i64(e.valid_from_ms);
        w.i64(e.valid_until_ms);
    }
    w.0
}

/// Encodes a split marker.
pub fn encode_split(key: &Hash) -> Vec<u8> {
    header(TAG_SPLIT, key, 0).0
}

/// Encodes a unit graph of `model` over `rows` vectors.
pub fn encode_unit_graph(key: &Hash, model: &str, g: &UnitGraph) -> Vec<u8> {
    let bytes = g.encode();
    let mut w = header(TAG_UNIT_GRAPH, key, bytes.len() + 64);
    w.str(model);
    w.u32(g.len());
    w.u32(g.reach().to_u32());
    w.u64(bytes.len() as u64);
    w.bytes(&bytes);
    w.0
}

/// Encodes a commit manifest: its chunk count and the blake3 of its chunk keys in order.
pub fn encode_manifest(key: &Hash, chunks: u32, chunk_list: &Hash) -> Vec<u8> {
    let mut w = header(TAG_MANIFEST, key, 40);
    w.u32(chunks);
    w.bytes(chunk_list.as_bytes());
    w.0
}

// ---------------------------------------------------------------------------------------
// Decoders

/// The tag of a stored value, if it has one.
pub fn tag_of(bytes: &[u8]) -> Option<u8> {
    bytes.first().copied()
}

fn open<'a>(bytes: &'a [u8], tag: u8, key: &Hash) -> Result<Reader<'a>, IndexError> {
    let mut r = Reader { bytes, at: 0 };
    let found = r.u8()?;
    if found != tag {
        return Err(bad(format!("tag 0x{found:02x}, expected 0x{tag:02x}")));
    }
    let stored = Hash::from_bytes(r.array()?);
    if stored != *key {
        return Err(bad(format!(
            "the value is for key {}, not {}",
            stored.short(),
            key.short()
        )));
    }
    Ok(r)
}

/// Decodes a node chunk's core part stored under `key` (the chunk key). Its texts stay in
/// their node objects, read through `source` when an item is rendered, each checked
/// against its crc32 from the head (`chunk/node.rs`, `StoredTexts`); `skey` is the part's
/// store key, reported to `source` if a text cannot be read.
pub fn decode_node_core(
    bytes: &[u8],
    key: &Hash,
    source: std::sync::Arc<dyn crate::RowSource>,
    skey: &[u8],
) -> Result<NodeChunk, IndexError> {
    let mut c = decode_core(bytes, None, key, Checked::No)?;
    c.leave_texts_stored(source, skey);
    Ok(c)
}

/// Whether a stored value's bytes were already checked, end to end, against a checksum
/// the store keeps over exactly those bytes (`Store::checks_derived_values`: the segment
/// store's record `value_crc`). Then a part's own checksum over the same bytes is not
/// computed again, and a dense part's rows' codes are not checked again when first read
/// (storage-format §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// Only the part's own checksums vouch for the bytes: every one is computed (a dense
    /// part's codes a row at a time, when each is first read).
    No,
    /// The store checked the whole value as it read it.
    ByStore,
}

/// [`decode_node_core`] of a shared value, whose head the part keeps (a slice of `bytes`,
/// which may be a stored value's mapping: `Store::get_derived_shared`) and reads the
/// object hashes and text table from where they lie instead of copying them. The same
/// checks — but the head's checksum when `checked` says the store checked the value — and
/// a part equal to the one [`decode_node_core`] gives.
pub fn decode_node_core_shared(
    bytes: &Bytes,
    key: &Hash,
    source: std::sync::Arc<dyn crate::RowSource>,
    skey: &[u8],
    checked: Checked,
) -> Result<NodeChunk, IndexError> {
    let mut c = decode_core(bytes, Some(bytes), key, checked)?;
    c.leave_texts_stored(source, skey);
    Ok(c)
}

/// Checks a node chunk's core part stored under `key` as [`decode_node_core`] does,
/// without keeping it (an integrity check reads no text).
pub fn check_node_core(bytes: &[u8], key: &Hash) -> Result<(), IndexError> {
    decode_core(bytes, None, key, Checked::No).map(drop)
}

/// Bytes before a core part's head: the tag, the chunk key, the head's length and its
/// crc32 (storage-format §7.3.1).
pub const CORE_PREFIX: usize = 1 + 32 + 4 + 4;

/// The core part, its texts neither in memory nor attached to a source: the caller
/// attaches one. With `owner` (the same bytes, shared) the head is kept and the hashes
/// and text table read where they lie.
fn decode_core(bytes: &[u8], owner: Option<&Bytes>, key: &Hash, checked: Checked) -> Result<NodeChunk, IndexError> {
    let mut whole = open(bytes, TAG_NODE_CORE, key)?;
    let head_len = whole.u32()? as usize;
    let crc = whole.u32()?;
    let head_at = whole.at;
    let head = whole.take(head_len)?;
    if checked == Checked::No && crc32fast::hash(head) != crc {
        return Err(bad("the head fails its checksum"));
    }
    let mut r = Reader { bytes: head, at: 0 };
    let n = r.count32(8 + 1 + 32 + 16 + 16 + 1)?;
    if n == 0 || n > MAX_CHUNK_KEYS {
        return Err(bad(format!("node chunk of {n} nodes")));
    }
    let mut c = NodeChunk {
        always_valid: true,
        ..NodeChunk::default()
    };
    let in_place = owner.is_some();
    // The ids' bytes counted first (a pass over the nodes field), so that they take one
    // allocation of the exact size.
    let id_bytes = {
        let mut p = r.clone();
        let mut total = 0usize;
        for _ in 0..n {
            let len = p.count64(1)?;
            p.take(len)?;
            p.take(32)?;
            total += len;
        }
        total
    };
    c.ids = Ids::with_capacity(n, id_bytes);
    if !in_place {
        c.hashes.reserve_exact(n);
        c.text_end.reserve_exact(n);
        c.text_chars.reserve_exact(n);
    }
    let mut last_id: Option<&[u8]> = None;
    for _ in 0..n {
        let id = r.str_ref()?;
        NodeId::check(id).map_err(|e| bad(format!("node id: {e}")))?;
        if last_id.is_some_and(|last| last >= id.as_bytes()) {
            return Err(bad("node ids out of order"));
        }
        last_id = Some(id.as_bytes());
        c.ids.push(id);
        if in_place {
            r.take(32)?;
        } else {
            c.hashes.push(Hash::from_bytes(r.array()?));
        }
    }
    let labels = r.count64(8 + 4)?;
    // Read in place: each label checked and where it lies noted (its bitmap made when a
    // gate asks, `NodeChunk::label`); else decoded.
    let mut label_table = Vec::with_capacity(if in_place { labels } else { 0 });
    let mut last_label: Option<&str> = None;
    for _ in 0..labels {
        let name_at = r.at + 8;
        let label = r.str_ref()?;
        if last_label.is_some_and(|last| last >= label) {
            return Err(bad("labels out of order"));
        }
        last_label = Some(label);
        if in_place {
            let (locals_at, count) = r.check_locals(n as u32)?;
            label_table.push(LabelAt {
                name_at: name_at as u32,
                name_len: label.len() as u32,
                locals_at: locals_at as u32,
                count: count as u32,
                bitmap: std::sync::OnceLock::new(),
            });
        } else {
            let b = r.locals(n as u32)?;
            c.labels.insert(label.to_owned(), std::sync::Arc::new(b));
        }
    }
    for l in 0..n {
        let (f, u) = (r.i64()?, r.i64()?);
        if f >= u {
            return Err(bad("validity interval is empty"));
        }
        c.push_validity(l, (f, u), n);
    }
    let props_at = r.at;
    let props_charge = match in_place {
        // Checked now, decoded when first asked (`NodeChunk::props_map`).
        true => props_section(&mut r, n as u32, false)?.1,
        false => {
            c.props = props_section(&mut r, n as u32, true)?.0;
            0
        }
    };
    // The text table: each text's bytes, characters, crc32 and place in its node object.
    let table_at = r.at;
    if !in_place {
        c.text_crcs.reserve_exact(n);
        c.text_offsets.reserve_exact(n);
    }
    let mut end = 0u32;
    for _ in 0..n {
        let (len, chars, crc, offset) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        if chars > len || (len > 0 && chars == 0) {
            return Err(bad(format!("a text of {len} bytes and {chars} characters")));
        }
        end = end.checked_add(len).ok_or_else(|| bad("chunk text over 4 GiB"))?;
        if !in_place {
            c.text_end.push(end);
            c.text_chars.push(chars);
            c.text_crcs.push(crc);
            c.text_offsets.push(offset);
        }
    }
    let models = r.count64(8 + 8)?;
    for _ in 0..models {
        let m = r.string()?;
        let (dim, rows) = (r.u32()?, r.u32()?);
        if c.dense_models.last_key().is_some_and(|last| *last >= m)
            || dim == 0
            || dim as usize > MAX_EMBEDDING_DIM
            || rows == 0
            || rows as usize > n
        {
            return Err(bad("dense model list malformed"));
        }
        c.dense_models.insert(m, (dim, rows));
    }
    let models = r.count64(8 + 4)?;
    for _ in 0..models {
        let m = r.string()?;
        let rows = r.u32()?;
        if c.sparse_models.last_key().is_some_and(|last| *last >= m) || rows == 0 || rows as usize > n {
            return Err(bad("sparse model list malformed"));
        }
        c.sparse_models.insert(m, rows);
    }
    for l in 0..n {
        let count = r.u8()? as usize;
        if count > crate::dates::MAX_TEXT_DATES {
            return Err(bad(format!("{count} text dates for one node")));
        }
        let first = c.dates.len();
        for _ in 0..count {
            let span = crate::dates::DaySpan {
                start: r.u32()? as i32,
                end: r.u32()? as i32,
            };
            if span.start >= span.end || c.dates[first..].last().is_some_and(|last| *last >= span) {
                return Err(bad("text dates malformed"));
            }
            c.dates.push(span);
        }
        c.push_date_end(l, n);
    }
    r.done()?;
    whole.done()?;
    if let Some(owner) = owner {
        c.in_place = Some(InPlace {
            head: owner.slice(head_at..head_at + head_len),
            table_at,
            props_at,
            props_charge,
            props: std::sync::OnceLock::new(),
            labels: label_table.into_boxed_slice(),
        });
    }
    Ok(c)
}

/// Decodes a node chunk's BM25 part stored under `key`.
pub fn decode_text(bytes: &[u8], key: &Hash) -> Result<TextChunk, IndexError> {
    let mut r = open(bytes, TAG_TEXT, key)?;
    let n = r.count32(4)?;
    if n == 0 || n > MAX_CHUNK_KEYS {
        return Err(bad(format!("text part of {n} documents")));
    }
    let mut t = TextChunk::default();
    for _ in 0..n {
        t.doc_len.push(r.u32()?);
    }
    // A term takes at least a length, a byte, a count and a posting.
    let terms = r.count64(1 + 1 + 1 + 4)?;
    let (term_bytes, postings) = text_sizes(r.clone(), terms)?;
    t.term_bytes.reserve_exact(term_bytes);
    t.term_end.reserve_exact(terms);
    t.starts.reserve_exact(terms + 1);
    t.posts.reserve_exact(postings);
    let mut seen = vec![0u64; n];
    t.starts.push(0);
    for _ in 0..terms {
        let term = r.short_str()?;
        if term.is_empty() || term.contains('\0') || (t.term_count() > 0 && t.term(t.term_count() - 1) >= term) {
            return Err(bad("terms empty or out of order"));
        }
        let m = r.varint_count(4)?;
        if m == 0 {
            return Err(bad("a term without postings"));
        }
        let mut prev: Option<Local> = None;
        for _ in 0..m {
            // Every word unpacks to a local below 4,096 and a frequency below the limit
            // (`Posting`); the local must be one of the chunk's documents.
            let p = Posting::from_raw(r.u32()?);
            let (l, tf) = (p.local(), p.tf());
            if l as usize >= n {
                return Err(bad(format!("local ordinal {l} in a chunk of {n}")));
            }
            if tf == 0 || prev.is_some_and(|p| p >= l) {
                return Err(bad("postings out of order or with tf 0"));
            }
            prev = Some(l);
            seen[l as usize] += u64::from(tf);
            t.posts.push(p);
        }
        t.push_term(term);
        t.starts.push(t.posts.len() as u32);
    }
    r.done()?;
    if seen.iter().zip(&t.doc_len).any(|(s, &l)| *s != u64::from(l)) {
        return Err(bad("document lengths differ from their postings"));
    }
    t.total_len = t.doc_len.iter().map(|&l| u64::from(l)).sum();
    Ok(t)
}

/// The term bytes and postings of a text part's `terms` terms, read ahead (so the decode
/// allocates each array once); lengths are checked again by the decode itself.
fn text_sizes(mut r: Reader<'_>, terms: usize) -> Result<(usize, usize), IndexError> {
    let (mut bytes, mut postings) = (0usize, 0usize);
    for _ in 0..terms {
        let len = r.varint_count(1)?;
        r.take(len)?;
        bytes += len;
        let m = r.varint_count(4)?;
        r.take(m * 4)?;
        postings += m;
    }
    Ok((bytes, postings))
}

/// Decodes a sparse part stored under `key`; returns the model and the part.
pub fn decode_sparse(bytes: &[u8], key: &Hash) -> Result<(String, SparseChunk), IndexError> {
    let mut r = open(bytes, TAG_SPARSE, key)?;
    let model = r.string()?;
    let n = r.u32()?;
    if n == 0 || n as usize > MAX_CHUNK_KEYS {
        return Err(bad(format!("sparse part of a {n}-node chunk")));
    }
    let docs = r.locals(n)?;
    let mut s = SparseChunk {
        docs,
        ..SparseChunk::default()
    };
    // A dimension takes at least its number, a count and a posting.
    let dims = r.count64(4 + 1 + 6)?;
    // Sized once: a posting takes 6 bytes, so the bytes left bound their number (grown
    // push by push, a cold load spent most of its decode in reallocation).
    s.dims.reserve_exact(dims);
    s.starts.reserve_exact(dims + 1);
    s.posts.reserve_exact(r.remaining() / 6);
    s.starts.push(0);
    for _ in 0..dims {
        let d = r.u32()?;
        if s.dims.last().is_some_and(|&last| last >= d) {
            return Err(bad("sparse dimensions out of order"));
        }
        let m = r.varint_count(6)?;
        if m == 0 {
            return Err(bad("a sparse dimension without postings"));
        }
        let mut prev: Option<Local> = None;
        for _ in 0..m {
            let l = r.local16(n)?;
            let x = f32::from_bits(r.u32()?);
            if !x.is_finite() || prev.is_some_and(|p| p >= l) || !s.docs.contains(l) {
                return Err(bad("sparse postings malformed"));
            }
            prev = Some(l);
            s.posts.push((l, x));
        }
        s.dims.push(d);
        s.starts.push(s.posts.len() as u32);
    }
    r.done()?;
    Ok((model, s))
}

/// The chunk node count a stored sparse part records (what [`encode_sparse`] was given),
/// if the bytes hold one.
pub fn sparse_node_count(bytes: &[u8]) -> Option<u32> {
    let mut r = Reader { bytes, at: 33 };
    r.string().ok()?;
    r.u32().ok()
}

/// A core head's properties section (storage-format §7.3.1) at `r`, checked whole —
/// keys in order, columns in local order, every value one the data model admits — and
/// decoded into a map when `keep` (otherwise only checked, nothing allocated); with what
/// the decoded map is charged.
#[allow(clippy::type_complexity)]
fn props_section(
    r: &mut Reader<'_>,
    n: u32,
    keep: bool,
) -> Result<(BTreeMap<String, Vec<(Local, Value)>>, usize), IndexError> {
    let keys = r.count64(8 + 4)?;
    let mut map = BTreeMap::new();
    let (mut last, mut charge): (Option<&str>, usize) = (None, 0);
    for _ in 0..keys {
        let k = r.str_ref()?;
        if last.is_some_and(|l| l >= k) {
            return Err(bad("property keys out of order"));
        }
        last = Some(k);
        let m = r.count32(4 + 1)?;
        charge += crate::chunk::node::props_entry_charge(k.len(), m);
        let mut col = Vec::with_capacity(if keep { m } else { 0 });
        let mut prev: Option<Local> = None;
        for _ in 0..m {
            let l = r.local(n)?;
            if prev.is_some_and(|p| p >= l) {
                return Err(bad("property column out of order"));
            }
            prev = Some(l);
            if keep {
                col.push((l, r.value(0)?));
            } else {
                r.skip_value(0)?;
            }
        }
        if keep {
            map.insert(k.to_owned(), col);
        }
    }
    Ok((map, charge))
}

/// The properties of a core head read in place, from `at` (where the part's check found
/// them, `n` nodes): the bytes are the same that check passed, so they decode the same.
pub(crate) fn decode_props(head: &[u8], at: usize, n: u32) -> BTreeMap<String, Vec<(Local, Value)>> {
    let mut r = Reader { bytes: head, at };
    props_section(&mut r, n, true)
        .expect("a kept head's properties were checked when its part was read")
        .0
}

/// Decodes a dense part stored under `key`; returns the model, the chunk's node count and
/// the part without its rows, which are read from their node objects
/// ([`DenseHead::into_rows_held`], [`DenseHead::into_rows_stored`]). The codes are copied,
/// not read: each row's are checked against its crc32 when first read ([`check_dense`]
/// checks them all at once).
pub fn decode_dense(bytes: &[u8], key: &Hash) -> Result<(String, u32, DenseHead), IndexError> {
    decode_dense_in(bytes, None, key, Checked::No)
}

/// [`decode_dense`] of a value `checked` says whether its store checked end to end as it
/// read it (then neither the head's checksum nor the rows' codes are checked again).
pub fn decode_dense_checked(
    bytes: &[u8],
    key: &Hash,
    checked: Checked,
) -> Result<(String, u32, DenseHead), IndexError> {
    decode_dense_in(bytes, None, key, checked)
}

/// [`decode_dense`] of a shared value, whose int8 codes the part keeps where they lie (a
/// slice of `bytes`, which may be a stored value's mapping:
/// `Store::get_derived_shared_unchecked`) instead of copying them. The same checks — but
/// the head's checksum when `checked` says the store checked the whole value as it read
/// it; then each row's codes are not checked again either. The codes are not read here
/// in any case, so a cold load touches only the pages of the rows it scores.
pub fn decode_dense_shared(
    bytes: &Bytes,
    key: &Hash,
    checked: Checked,
) -> Result<(String, u32, DenseHead), IndexError> {
    decode_dense_in(bytes, Some(bytes), key, checked)
}

/// [`decode_dense`]; the codes are a slice of `owner` (the same bytes) if given.
fn decode_dense_in(
    bytes: &[u8],
    owner: Option<&Bytes>,
    key: &Hash,
    checked: Checked,
) -> Result<(String, u32, DenseHead), IndexError> {
    let mut r = open(bytes, TAG_DENSE, key)?;
    let model = r.string()?;
    let dim = r.u32()? as usize;
    let n = r.u32()?;
    if dim == 0 || dim > MAX_EMBEDDING_DIM || n == 0 || n as usize > MAX_CHUNK_KEYS {
        return Err(bad(format!("dense part of dimension {dim} in a {n}-node chunk")));
    }
    let rows = r.u32()? as usize;
    if rows == 0 || rows > n as usize || rows.saturating_mul(DENSE_ROW_BYTES + dim) > r.remaining() {
        return Err(bad(format!("dense part of {rows} rows")));
    }
    let mut locals = Vec::with_capacity(rows);
    for _ in 0..rows {
        let l = r.local(n)?;
        if locals.last().is_some_and(|&p| p >= l) {
            return Err(bad("dense rows out of order"));
        }
        locals.push(l);
    }
    // The per-row fields and the codes: kept as slices of `owner`, or of one copy of the
    // value's bytes.
    let fields_at = r.at;
    let fields_len = rows * ROW_FIELD_BYTES;
    r.take(fields_len)?;
    let crc_at = r.at;
    let crc_stored = r.u32()?;
    let codes_at = r.at;
    r.take(rows * dim)?;
    r.done()?;
    // The head's checksum covers every byte before the codes; the codes are not read
    // here (each row's are checked against its own crc32 when first read,
    // `DenseChunk::checked_codes`), so a cold load touches only the code pages of the rows
    // it scores.
    if checked == Checked::No && crc32fast::hash(&bytes[..crc_at]) != crc_stored {
        return Err(bad("the head fails its checksum"));
    }
    let held = match owner {
        Some(b) => b.slice(fields_at..bytes.len()),
        None => Bytes::copy_from_slice(&bytes[fields_at..]),
    };
    let fields = RowFields::from_bytes(rows, held.slice(..fields_len)).ok_or_else(|| bad("dense row fields"))?;
    fields.check().map_err(bad)?;
    let head = DenseHead {
        dim,
        rows: locals,
        codes: held.slice(codes_at - fields_at..),
        fields,
        codes_checked: checked == Checked::ByStore,
    };
    Ok((model, n, head))
}

/// [`decode_dense`], and every row's codes checked against its crc32 and for −128 (which
/// no quantisation writes) at once: what `fsck` asks of a stored part.
pub fn check_dense(bytes: &[u8], key: &Hash) -> Result<String, IndexError> {
    let (model, _, head) = decode_dense(bytes, key)?;
    let dim = head.dim;
    for (r, codes) in head.codes.chunks_exact(dim).enumerate() {
        if !head.fields.codes_hold(r, codes) {
            return Err(bad(RowFields::codes_refused(r)));
        }
    }
    Ok(model)
}

/// Decodes an edge chunk stored under `key`.
pub fn decode_edges(bytes: &[u8], key: &Hash) -> Result<(EdgeDirection, EdgeChunk), IndexError> {
    let mut r = open(bytes, TAG_EDGES, key)?;
    let direction = match r.u8()? {
        0 => EdgeDirection::Out,
        1 => EdgeDirection::In,
        d => return Err(bad(format!("edge direction {d}"))),
    };
    let kinds = r.count64(8)?;
    let mut c = EdgeChunk::default();
    for _ in 0..kinds {
        let k = r.string()?;
        if k.is_empty() || c.kinds.last().is_some_and(|last| *last >= k) {
            return Err(bad("edge kinds empty or out of order"));
        }
        c.kinds.push(k);
    }
    let edges = r.count32(8 + 4 + 8 + 24)?;
    if edges == 0 || edges > MAX_CHUNK_KEYS {
        return Err(bad(format!("edge chunk of {edges} edges")));
    }
    let mut prev_key: Vec<u8> = Vec::new();
    for _ in 0..edges {
        let near = NodeId::new(r.string()?).map_err(|e| bad(format!("edge endpoint: {e}")))?;
        let kind = r.u32()?;
        let far = NodeId::new(r.string()?).map_err(|e| bad(format!("edge endpoint: {e}")))?;
        let weight = f64::from_bits(r.u64()?);
        let (f, u) = (r.i64()?, r.i64()?);
        let Some(kind_name) = c.kinds.get(kind as usize) else {
            return Err(bad("edge kind index out of range"));
        };
        if !weight.is_finite() || f >= u {
            return Err(bad("edge weight or validity malformed"));
        }
        let key = tree_key(&near, kind_name, &far);
        if !prev_key.is_empty() && prev_key >= key {
            return Err(bad("edges out of order"));
        }
        prev_key = key;
        c.edges.push(EdgeRec {
            near,
            kind,
            far,
            weight,
            valid_from_ms: f,
            valid_until_ms: u,
        });
    }
    r.done()?;
    Ok((direction, c))
}

/// The tree key of an edge seen from `near` (§4.3's layout for both trees).
fn tree_key(near: &NodeId, kind: &str, far: &NodeId) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + near.as_str().len() + kind.len() + far.as_str().len());
    k.extend_from_slice(&(near.as_str().len() as u16).to_be_bytes());
    k.extend_from_slice(near.as_str().as_bytes());
    k.extend_from_slice(&(kind.len() as u16).to_be_bytes());
    k.extend_from_slice(kind.as_bytes());
    k.extend_from_slice(far.as_str().as_bytes());
    k
}

/// Decodes a split marker stored under `key`.
pub fn decode_split(bytes: &[u8], key: &Hash) -> Result<(), IndexError> {
    open(bytes, TAG_SPLIT, key)?.done()
}

/// Decodes a unit graph stored under `key`; returns the model and the graph.
pub fn decode_unit_graph(bytes: &[u8], key: &Hash) -> Result<(String, UnitGraph), IndexError> {
    let mut r = open(bytes, TAG_UNIT_GRAPH, key)?;
    let model = r.string()?;
    let rows = r.u32()?;
    let reach = crate::hnsw::Reach::from_u32(r.u32()?);
    // Only what the measurement writes: not measured, unreachable, or an `ef` of its ladder.
    if let crate::hnsw::Reach::Ef(ef) = reach {
        if !crate::hnsw::reach::LADDER.contains(&ef) {
            return Err(bad(format!("unit graph reach {ef} is not an ef the measurement tries")));
        }
    }
    let len = r.count64(1)?;
    let mut g = UnitGraph::decode(r.take(len)?)?;
    g.set_reach(reach);
    r.done()?;
    if g.len() != rows {
        return Err(bad("unit graph size differs from its header"));
    }
    Ok((model, g))
}

/// Decodes a commit manifest stored under `key`: `(chunk count, chunk-list hash)`.
pub fn decode_manifest(bytes: &[u8], key: &Hash) -> Result<(u32, Hash), IndexError> {
    let mut r = open(bytes, TAG_MANIFEST, key)?;
    let n = r.u32()?;
    let h = Hash::from_bytes(r.array()?);
    r.done()?;
    Ok((n, h))
}

// ---------------------------------------------------------------------------------------
// Writer and the bounded reader

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
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
    fn u16(&mut self, x: u16) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    /// An unsigned LEB128 integer: seven bits a byte, low bits first, the high bit set on
    /// every byte but the last; the shortest such form (one to five bytes).
    fn varint(&mut self, mut x: u32) {
        while x >= 0x80 {
            self.0.push(x as u8 | 0x80);
            x >>= 7;
        }
        self.0.push(x as u8);
    }
    /// A string whose length is a [`Writer::varint`].
    fn short_str(&mut self, s: &str) {
        self.varint(s.len() as u32);
        self.bytes(s.as_bytes());
    }
    /// A set of local ordinals: `u32le(count)` then each `u32le`, increasing.
    fn locals(&mut self, b: &RoaringBitmap) {
        self.u32(b.len() as u32);
        b.iter().for_each(|l| self.u32(l));
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
                self.u64(items.len() as u64);
                items.iter().for_each(|i| self.value(i));
            }
            Value::Map(m) => {
                self.u8(VALUE_MAP);
                self.u64(m.len() as u64);
                for (k, v) in m {
                    self.str(k);
                    self.value(v);
                }
            }
        }
    }
}

/// `l`, if it is a local ordinal of a chunk of `n` nodes.
fn in_chunk(l: Local, n: u32) -> Result<Local, IndexError> {
    if l >= n {
        return Err(bad(format!("local ordinal {l} out of range (chunk of {n})")));
    }
    Ok(l)
}

#[cold]
#[inline(never)]
fn not_utf8() -> IndexError {
    bad("a string is not UTF-8")
}

/// Reads fixed-width little-endian fields, checking every length against what remains.
/// The one reader of stored derived bytes (the unit graph decoder, `hnsw/mod.rs`, reads
/// through it too).
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }
    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }
    // The field readers are inlined into the decoders' loops, their errors made out of
    // line: a core part's decode reads ~30 fields a node (every node of a commit when a
    // fresh process loads a view whole).
    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], IndexError> {
        if n > self.remaining() {
            return Err(self.truncated(n));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }
    #[cold]
    #[inline(never)]
    fn truncated(&self, n: usize) -> IndexError {
        bad(format!("truncated: {n} bytes wanted, {} left", self.remaining()))
    }
    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], IndexError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    #[inline]
    pub(crate) fn u8(&mut self) -> Result<u8, IndexError> {
        Ok(self.take(1)?[0])
    }
    #[inline]
    pub(crate) fn u16(&mut self) -> Result<u16, IndexError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    #[inline]
    pub(crate) fn u32(&mut self) -> Result<u32, IndexError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    #[inline]
    pub(crate) fn u64(&mut self) -> Result<u64, IndexError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    #[inline]
    fn i64(&mut self) -> Result<i64, IndexError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    #[inline]
    fn fits(&self, n: u64, min_item_bytes: usize) -> Result<usize, IndexError> {
        match usize::try_from(n) {
            Ok(n) if n.saturating_mul(min_item_bytes.max(1)) <= self.remaining() => Ok(n),
            _ => Err(self.unfit(n)),
        }
    }
    #[cold]
    #[inline(never)]
    fn unfit(&self, n: u64) -> IndexError {
        bad(format!(
            "a count of {n} does not fit in the {} bytes left",
            self.remaining()
        ))
    }
    /// A `u64le` count of items of at least `min_item_bytes` each that must fit in what
    /// remains (so no allocation exceeds the input's size).
    #[inline]
    fn count64(&mut self, min_item_bytes: usize) -> Result<usize, IndexError> {
        let n = self.u64()?;
        self.fits(n, min_item_bytes)
    }
    /// The same for a `u32le` count.
    #[inline]
    pub(crate) fn count32(&mut self, min_item_bytes: usize) -> Result<usize, IndexError> {
        let n = u64::from(self.u32()?);
        self.fits(n, min_item_bytes)
    }
    #[inline]
    fn local(&mut self, n: u32) -> Result<Local, IndexError> {
        let l = self.u32()?;
        in_chunk(l, n)
    }
    /// A local ordinal stored in two bytes (a sparse posting's), below `n`.
    #[inline]
    fn local16(&mut self, n: u32) -> Result<Local, IndexError> {
        let l = Local::from(self.u16()?);
        in_chunk(l, n)
    }
    /// A list of local ordinals (a count, then each `u32le`) checked: each below `n`,
    /// strictly increasing. Where the ordinals start, and how many.
    fn check_locals(&mut self, n: u32) -> Result<(usize, usize), IndexError> {
        let m = self.count32(4)?;
        let at = self.at;
        let mut prev: Option<Local> = None;
        for _ in 0..m {
            let l = self.local(n)?;
            if prev.is_some_and(|p| p >= l) {
                return Err(bad("local ordinals out of order"));
            }
            prev = Some(l);
        }
        Ok((at, m))
    }
    /// [`Reader::check_locals`], as a bitmap.
    fn locals(&mut self, n: u32) -> Result<RoaringBitmap, IndexError> {
        let (at, m) = self.check_locals(n)?;
        let locals = self.bytes[at..at + 4 * m]
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        RoaringBitmap::from_sorted_iter(locals).map_err(|_| bad("local ordinals out of order"))
    }
    fn string(&mut self) -> Result<String, IndexError> {
        self.str_ref().map(str::to_owned)
    }
    /// A [`Writer::varint`], refused unless in its shortest form and within `u32`.
    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u32, IndexError> {
        let mut x = 0u32;
        for i in 0..4 {
            let b = self.u8()?;
            x |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if b == 0 && i > 0 {
                    return Err(bad("a varint longer than its shortest form"));
                }
                return Ok(x);
            }
        }
        // The fifth byte holds the top four bits, and ends the varint.
        match self.u8()? {
            0 => Err(bad("a varint longer than its shortest form")),
            b if b > 0x0f => Err(bad("a varint beyond 32 bits")),
            b => Ok(x | u32::from(b) << 28),
        }
    }
    /// A varint count of items of at least `min_item_bytes` each that must fit in what
    /// remains ([`Reader::count64`]).
    #[inline]
    fn varint_count(&mut self, min_item_bytes: usize) -> Result<usize, IndexError> {
        let n = self.varint()?;
        self.fits(u64::from(n), min_item_bytes)
    }
    /// A string whose length is a varint ([`Writer::short_str`]), borrowed from the input.
    #[inline]
    fn short_str(&mut self) -> Result<&'a str, IndexError> {
        let len = self.varint_count(1)?;
        self.utf8(len)
    }
    /// A string, borrowed from the input.
    #[inline]
    pub(crate) fn str_ref(&mut self) -> Result<&'a str, IndexError> {
        let len = self.count64(1)?;
        self.utf8(len)
    }
    /// The next `len` bytes, which must be UTF-8.
    #[inline]
    fn utf8(&mut self, len: usize) -> Result<&'a str, IndexError> {
        std::str::from_utf8(self.take(len)?).map_err(|_| not_utf8())
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
                    return Err(bad("non-finite property value"));
                }
                Value::Float(f)
            }
            VALUE_STRING => Value::String(self.string()?),
            kind @ (VALUE_LIST | VALUE_MAP) => {
                // Anything the data model admits, and a bound on recursion.
                if depth > MAX_VALUE_DEPTH {
                    return Err(bad("property value nested too deep"));
                }
                if kind == VALUE_LIST {
                    let len = self.count64(1)?;
                    let mut items = Vec::with_capacity(len);
                    for _ in 0..len {
                        items.push(self.value(depth + 1)?);
                    }
                    Value::List(items)
                } else {
                    let len = self.count64(8 + 1)?;
                    let mut m = BTreeMap::new();
                    for _ in 0..len {
                        let k = self.string()?;
                        if m.keys().next_back().is_some_and(|last: &String| *last >= k) {
                            return Err(bad("map keys out of order"));
                        }
                        m.insert(k, self.value(depth + 1)?);
                    }
                    Value::Map(m)
                }
            }
            x => return Err(bad(format!("unknown value kind {x}"))),
        })
    }
    /// [`Reader::value`]'s checks without building the value.
    fn skip_value(&mut self, depth: usize) -> Result<(), IndexError> {
        match self.u8()? {
            VALUE_NULL | VALUE_FALSE | VALUE_TRUE => {}
            VALUE_INT => {
                self.i64()?;
            }
            VALUE_FLOAT => {
                if !f64::from_bits(self.u64()?).is_finite() {
                    return Err(bad("non-finite property value"));
                }
            }
            VALUE_STRING => {
                self.str_ref()?;
            }
            kind @ (VALUE_LIST | VALUE_MAP) => {
                if depth > MAX_VALUE_DEPTH {
                    return Err(bad("property value nested too deep"));
                }
                if kind == VALUE_LIST {
                    for _ in 0..self.count64(1)? {
                        self.skip_value(depth + 1)?;
                    }
                } else {
                    let mut last: Option<&str> = None;
                    for _ in 0..self.count64(8 + 1)? {
                        let k = self.str_ref()?;
                        if last.is_some_and(|l| l >= k) {
                            return Err(bad("map keys out of order"));
                        }
                        last = Some(k);
                        self.skip_value(depth + 1)?;
                    }
                }
            }
            x => return Err(bad(format!("unknown value kind {x}"))),
        }
        Ok(())
    }
    pub(crate) fn done(&self) -> Result<(), IndexError> {
        if self.remaining() != 0 {
            return Err(bad(format!("{} trailing bytes", self.remaining())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use cairn_core::{Edge, Node, SparseVector, Validity};

    use super::*;
    use crate::chunk::ChunkParts;
    use crate::params::IndexParams;

    fn id(s: &str) -> NodeId {
        NodeId::new(s).unwrap()
    }

    fn parts() -> (ChunkParts, Vec<Edge>) {
        let nodes = parts_nodes();
        let refs: Vec<(Hash, &Node)> = nodes.iter().map(|n| (Hash::of(n.id.as_str().as_bytes()), n)).collect();
        let edges = vec![
            Edge::new(id("a"), "cites", id("c")).with_weight(2.0),
            Edge::new(id("c"), "about", id("a")).with_validity(Validity::new(None, Some(5))),
        ];
        (ChunkParts::build(&IndexParams::default(), &refs), edges)
    }

    /// The nodes of [`parts`]' chunk.
    fn parts_nodes() -> Vec<Node> {
        vec![
            Node::new(id("a"))
                .with_label("Doc")
                .with_label("Note")
                .with_text("Wings stall; the boundary layer separates. Ωmega 東京")
                .with_prop("year", 1958i64)
                .with_prop(
                    "m",
                    Value::Map([("k".to_string(), Value::List(vec![Value::Float(1.5), Value::Null]))].into()),
                )
                .with_embedding("d", vec![0.5, -1.0, 0.25])
                .with_sparse("s", SparseVector::new(vec![1, 9], vec![1.0, 0.5])),
            Node::new(id("b")).with_validity(Validity::new(Some(10), None)),
            Node::new(id("c"))
                .with_label("Doc")
                .with_text("stall stall stall")
                .with_embedding("d", vec![0.0, 0.0, 0.0])
                .with_sparse("s", SparseVector::new(vec![], vec![])),
        ]
    }

    #[test]
    fn varints_round_trip_in_their_shortest_form_and_refuse_others() {
        for x in [
            0u32,
            1,
            0x7f,
            0x80,
            0x3fff,
            0x4000,
            0x1f_ffff,
            0x20_0000,
            0x0fff_ffff,
            0x1000_0000,
            u32::MAX,
        ] {
            let mut w = Writer(Vec::new());
            w.varint(x);
            // The shortest form: seven bits a byte.
            let bits = 32 - x.leading_zeros() as usize;
            assert_eq!(w.0.len(), bits.div_ceil(7).max(1), "{x:#x}");
            let mut r = Reader::new(&w.0);
            assert_eq!(r.varint().unwrap(), x);
            assert_eq!(r.remaining(), 0);
            // Cut short anywhere: refused, never a value.
            for cut in 0..w.0.len() {
                assert!(Reader::new(&w.0[..cut]).varint().is_err(), "{x:#x} cut at {cut}");
            }
        }
        let refused: [&[u8]; 5] = [
            &[0x80, 0x00],                   // 0 in two bytes
            &[0xff, 0x80, 0x00],             // 0x7f in three
            &[0x80, 0x80, 0x80, 0x80, 0x00], // 0 in five
            &[0xff, 0xff, 0xff, 0xff, 0x10], // beyond 32 bits
            &[0xff, 0xff, 0xff, 0xff, 0x8f], // a sixth byte announced
        ];
        for bytes in refused {
            assert!(Reader::new(bytes).varint().is_err(), "{bytes:02x?}");
        }
    }

    use crate::dense::rows::ObjectRanges as Objects;

    /// A row source with nothing behind it (the parts above are only compared).
    fn no_rows() -> std::sync::Arc<dyn crate::RowSource> {
        std::sync::Arc::new(Objects(Vec::new()))
    }

    /// A row source with nothing behind it that records the parts reported damaged.
    #[derive(Default)]
    struct Reports(std::sync::Mutex<Vec<(Vec<u8>, String)>>);

    impl crate::RowSource for Reports {
        fn read_at(&self, _key: &[u8], _offset: u64, _out: &mut [u8]) -> Result<bool, String> {
            Ok(false)
        }
        fn read_object_at(&self, _node: &Hash, _offset: u64, _out: &mut [u8]) -> Result<bool, String> {
            Ok(false)
        }
        fn node_vector(&self, _node: &Hash, _model: &str) -> Result<Vec<f32>, String> {
            Err("no vectors here".into())
        }
        fn node_text(&self, _node: &Hash) -> Result<String, String> {
            Err("no texts here".into())
        }
        fn damaged(&self, key: &[u8], detail: String) {
            self.0.lock().unwrap().push((key.to_vec(), detail));
        }
    }

    #[test]
    fn every_part_round_trips_exactly() {
        let (p, edges) = parts();
        let k = Hash::of(b"chunk");
        // No text is stored: a part read back reads its texts from the node objects, and
        // is the built part with its texts left there.
        let bytes = encode_node_core(&k, &p.core);
        let objects = Objects(
            parts_nodes()
                .iter()
                .map(|n| (Hash::of(n.id.as_str().as_bytes()), cairn_core::codec::encode_node(n)))
                .collect(),
        );
        let objects: std::sync::Arc<dyn crate::RowSource> = std::sync::Arc::new(objects);
        let back = decode_node_core(&bytes, &k, std::sync::Arc::clone(&objects), b"ck").unwrap();
        assert!(!back.texts_in_memory() && p.core.texts_in_memory());
        let mut built = p.core.clone();
        built.leave_texts_stored(std::sync::Arc::clone(&objects), b"ck");
        assert_eq!(back, built);
        assert_eq!(encode_node_core(&k, &back), bytes);
        for l in 0..p.core.len() as Local {
            assert_eq!(back.text(l).unwrap(), p.core.text(l).unwrap());
        }
        assert_eq!(decode_text(&encode_text(&k, &p.text), &k).unwrap(), p.text);
        let s = &p.sparse["s"];
        let bytes = encode_sparse(&k, "s", 3, s);
        assert_eq!(decode_sparse(&bytes, &k).unwrap(), ("s".to_string(), s.clone()));
        assert_eq!(sparse_node_count(&bytes), Some(3));
        let d = &p.dense["d"];
        let bytes = encode_dense(&k, "d", 3, d);
        let (m, n, head) = decode_dense(&bytes, &k).unwrap();
        assert_eq!((m.as_str(), n), ("d", 3));
        assert_eq!(encode_dense_head(&k, "d", 3, &head), bytes);
        // Decoded from a shared value, the part is the same, and its codes are the value's
        // own bytes (not a copy).
        let shared = Bytes::from(bytes.clone());
        let (m2, n2, head2) = decode_dense_shared(&shared, &k, Checked::No).unwrap();
        assert_eq!((m2.as_str(), n2, &head2), ("d", 3, &head));
        // A value its store checked: the same part; its checksum, which that store's own
        // covers, not computed again, nor any row's codes when they are read.
        let (_, _, head3) = decode_dense_shared(&shared, &k, Checked::ByStore).unwrap();
        assert_eq!(head3, head);
        // The codes are not read at load: a changed code is found when its row is first
        // read (the part is reported damaged to its source), and by `check_dense`; the
        // other rows read as built.
        let mut changed = bytes.clone();
        let last_code = changed.len() - 1;
        changed[last_code] ^= 0x01;
        let changed = Bytes::from(changed);
        assert!(check_dense(&changed, &k).is_err() && check_dense(&bytes, &k).is_ok());
        let (_, _, damaged) = decode_dense_shared(&changed, &k, Checked::No).unwrap();
        let reports = std::sync::Arc::new(Reports::default());
        let damaged = damaged.into_rows_stored(std::sync::Arc::clone(&reports) as _, b"ck-damaged");
        let last = d.len() - 1;
        assert_eq!(damaged.checked_codes(last), None);
        assert_eq!(damaged.checked_codes(0), Some(d.codes(0)));
        assert!(damaged.check_codes().is_err());
        assert_eq!(reports.0.lock().unwrap()[0].0, b"ck-damaged".to_vec());
        // A store that checked the value is trusted: the changed code reads as stored.
        let (_, _, trusted) = decode_dense_shared(&changed, &k, Checked::ByStore).unwrap();
        let trusted = trusted.into_rows_stored(no_rows(), b"ck");
        assert!(trusted.checked_codes(last).is_some() && trusted.check_codes().is_ok());
        // A head that is damaged is refused at load.
        let mut head_flip = bytes.clone();
        head_flip[40] ^= 0x01;
        assert!(decode_dense_shared(&Bytes::from(head_flip), &k, Checked::No).is_err());
        let within = shared.as_ptr_range();
        assert!(within.contains(&head2.codes.as_ptr()) && head2.codes.len() == d.len() * d.dim());
        // No vector is stored: each row names its node object and where its vector is.
        assert_eq!(bytes.len(), 33 + 8 + 1 + 12 + d.len() * (DENSE_ROW_BYTES + d.dim()) + 4);
        let objects: Vec<(Hash, Vec<u8>)> = parts_nodes()
            .iter()
            .map(|n| (Hash::of(n.id.as_str().as_bytes()), cairn_core::codec::encode_node(n)))
            .collect();
        let source: std::sync::Arc<dyn crate::RowSource> = std::sync::Arc::new(Objects(objects));
        // Held in memory, each row is read from its object the first time it is scored
        // (none as the part loads), and is the built part's, bit for bit; left there, the
        // part is the same but for them.
        let q: Vec<f32> = (0..d.dim()).map(|i| 1.0 - i as f32 / 8.0).collect();
        let held = head.clone().into_rows_held(std::sync::Arc::clone(&source), b"ck");
        assert!(held.rows_in_memory() && held.vector(0).is_none());
        assert_eq!(&held, d);
        for r in 0..d.len() {
            assert_eq!(held.score(&q, r).unwrap().to_bits(), d.score(&q, r).unwrap().to_bits());
            assert_eq!(held.vector(r).unwrap(), d.vector(r).unwrap());
        }
        assert!(!held.rows_unread());
        // Filled off the query path: the same rows.
        let filled = head.clone().into_rows_held(std::sync::Arc::clone(&source), b"ck");
        assert!(filled.rows_unread());
        filled.read_held_rows(&std::sync::atomic::AtomicBool::new(false));
        assert!(!filled.rows_unread());
        for r in 0..d.len() {
            assert_eq!(filled.vector(r).unwrap(), d.vector(r).unwrap());
        }
        let stored = head.clone().into_rows_stored(no_rows(), b"ck");
        assert!(!stored.rows_in_memory() && !stored.rows_unread());
        assert_eq!(encode_dense(&k, "d", 3, &stored), bytes);
        // A row whose object does not hold it (a wrong offset, no object) is refused and
        // not kept; the others are read and kept.
        let mut moved = head.clone();
        let mut fields = moved.fields.as_bytes().to_vec();
        let at = 52 * moved.len();
        let offset = u32::from_le_bytes(fields[at..at + 4].try_into().unwrap()) + 4;
        fields[at..at + 4].copy_from_slice(&offset.to_le_bytes());
        moved.fields = RowFields::from_bytes(moved.len(), fields.into()).unwrap();
        let moved = moved.into_rows_held(std::sync::Arc::clone(&source), b"ck");
        moved.read_held_rows(&std::sync::atomic::AtomicBool::new(false));
        assert!(moved.rows_unread() && moved.vector(0).is_none());
        assert!(moved.score(&q, 0).is_err() && moved.vector(0).is_none());
        assert_eq!(moved.vector(1).unwrap(), d.vector(1).unwrap());
        assert_eq!(moved.score(&q, 1).unwrap().to_bits(), d.score(&q, 1).unwrap().to_bits());
        let none = head.clone().into_rows_held(no_rows(), b"ck");
        assert!(none.score(&q, 0).is_err() && none.vector(0).is_none());
        // Every flip of a byte after the key is refused: by the load (the head's checksum,
        // or a check before it) up to the codes, by the rows' own checksums after.
        let codes_at = bytes.len() - d.len() * d.dim();
        for i in 33..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert_eq!(decode_dense(&bad, &k).is_err(), i < codes_at, "flip at {i}");
            assert!(check_dense(&bad, &k).is_err(), "flip at {i}");
        }
        for dir in [EdgeDirection::Out, EdgeDirection::In] {
            let mut sorted = edges.clone();
            sorted.sort_by_key(|e| match dir {
                EdgeDirection::Out => cairn_core::codec::edge_tree_key(&e.source, &e.kind, &e.target),
                EdgeDirection::In => cairn_core::codec::edge_in_tree_key(&e.source, &e.kind, &e.target),
            });
            let c = EdgeChunk::build(dir, &sorted);
            assert_eq!(decode_edges(&encode_edges(&k, dir, &c), &k).unwrap(), (dir, c));
        }
        decode_split(&encode_split(&k), &k).unwrap();
        let h = Hash::of(b"list");
        assert_eq!(decode_manifest(&encode_manifest(&k, 7, &h), &k).unwrap(), (7, h));
        // The key is checked: a part is never served for another chunk.
        let other = Hash::of(b"other");
        assert!(decode_node_core(&encode_node_core(&k, &p.core), &other, no_rows(), b"ck").is_err());
    }

    #[test]
    fn damaged_bytes_are_refused_never_panic() {
        let (p, _) = parts();
        let k = Hash::of(b"chunk");
        let encoded = [
            encode_node_core(&k, &p.core),
            encode_text(&k, &p.text),
            encode_sparse(&k, "s", 3, &p.sparse["s"]),
            encode_dense(&k, "d", 3, &p.dense["d"]),
        ];
        for bytes in &encoded {
            for cut in 0..bytes.len() {
                assert!(decode_node_core(&bytes[..cut], &k, no_rows(), b"ck").is_err());
                assert!(decode_text(&bytes[..cut], &k).is_err());
                assert!(decode_sparse(&bytes[..cut], &k).is_err());
                assert!(decode_dense(&bytes[..cut], &k).is_err());
            }
            for i in 33..bytes.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut b = bytes.clone();
                    b[i] ^= flip;
                    // Any outcome but a panic or an abort; what decodes re-encodes.
                    if let Ok(c) = decode_node_core(&b, &k, no_rows(), b"ck") {
                        assert_eq!(encode_node_core(&k, &c), b);
                    }
                    if let Ok(t) = decode_text(&b, &k) {
                        assert_eq!(encode_text(&k, &t), b);
                    }
                    let _ = decode_sparse(&b, &k);
                    if let Ok((m, n, h)) = decode_dense(&b, &k) {
                        assert_eq!(encode_dense_head(&k, &m, n, &h), b);
                    }
                }
            }
        }
        // Hostile counts: refused before any allocation.
        let mut hostile = vec![TAG_NODE_CORE];
        hostile.extend_from_slice(k.as_bytes());
        hostile.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_node_core(&hostile, &k, no_rows(), b"ck").is_err());
        let mut hostile = vec![TAG_TEXT];
        hostile.extend_from_slice(k.as_bytes());
        hostile.extend_from_slice(&1u32.to_le_bytes());
        hostile.extend_from_slice(&0u32.to_le_bytes());
        hostile.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_text(&hostile, &k).is_err());
    }
}
