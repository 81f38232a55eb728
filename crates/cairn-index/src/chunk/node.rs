//! The core part of a node chunk: ids, object hashes, labels, validity, properties and
//! the text column — everything gates and rendering read, and no vector.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use cairn_core::{Hash, Node, NodeId, Value};
use roaring::RoaringBitmap;

use super::{Ids, Models};
use crate::dates::{text_dates, DaySpan};
use crate::dense::rows::RowSource;
use crate::props::PropertyPredicate;
use crate::validity::{bounds_contain, validity_bounds};

/// The validity of a node valid at every time: open ends.
const OPEN: (i64, i64) = (i64::MIN, i64::MAX);

/// A chunk-local ordinal: a node's position in its chunk (id order).
pub type Local = u32;

/// The core columns of one chunk's nodes, by local ordinal (id order).
#[derive(Debug, Clone, Default)]
pub struct NodeChunk {
    /// Where the texts are read from when they are not held in `text` (then empty).
    pub(crate) stored_text: Option<StoredTexts>,
    /// The stored head, when the object hashes and the text table are read where it lies
    /// (then `hashes` and the four text columns are empty).
    pub(crate) in_place: Option<InPlace>,
    pub(crate) ids: Ids,
    pub(crate) hashes: Vec<Hash>,
    /// Label → local ordinals (empty for a part read in place, whose labels are read from
    /// its head: [`InPlace`]).
    pub(crate) labels: BTreeMap<String, Arc<RoaringBitmap>>,
    /// `(from, until)` per node; open ends as `i64::MIN` / `i64::MAX`. Empty while every
    /// node so far is always valid (most chunks: 16 bytes a node spared).
    pub(crate) validity: Vec<(i64, i64)>,
    /// True if every node is valid at every time (the validity gate can skip the chunk).
    pub(crate) always_valid: bool,
    /// Property key → `(local, value)` in local order (empty for a part read in place,
    /// whose properties are decoded from its head when first asked: [`InPlace`]).
    pub(crate) props: BTreeMap<String, Vec<(Local, Value)>>,
    /// Node texts, concatenated, while held in memory (a part just built outside a
    /// repository); node `i`'s is `text[text_end[i-1]..text_end[i]]`.
    pub(crate) text: String,
    pub(crate) text_end: Vec<u32>,
    /// Each text's length in characters (Unicode scalar values).
    pub(crate) text_chars: Vec<u32>,
    /// Each text's crc32.
    pub(crate) text_crcs: Vec<u32>,
    /// Where each text's bytes start in its node object's encoding (storage-format §3.1).
    pub(crate) text_offsets: Vec<u32>,
    /// The dates each text mentions ([`crate::dates::text_dates`]): node `i`'s are
    /// `dates[date_end[i-1]..date_end[i]]`, sorted. `date_end` is empty while no text so
    /// far mentions a date.
    pub(crate) dates: Vec<DaySpan>,
    pub(crate) date_end: Vec<u32>,
    /// Dense models with vectors in this chunk: model → (dimension, rows).
    pub(crate) dense_models: Models<(u32, u32)>,
    /// Sparse models with vectors in this chunk: model → rows.
    pub(crate) sparse_models: Models<u32>,
}

/// A core part's stored head (storage-format §7.3.1), kept — a slice of the stored value,
/// mapped where the store maps it (`Store::get_derived_shared`) — so that the object
/// hashes and the text table are read where they lie instead of copied into memory:
/// node `l`'s hash follows its id (`u64le(length) ‖ bytes`) in the nodes field, which
/// starts after `n`: at `4 + 40·l + end(l) + 8` (`end(l)`: the id bytes through node `l`);
/// its text entry at `table_at + 16·l`. The properties (checked whole when the part was
/// read) are decoded from `props_at` the first time anything asks for one: a cold query
/// reads the properties of the chunks it renders or gates on a property, not of every
/// chunk it loads. Each label is found in `labels` (where its name and local ordinals lie
/// in the head) and its bitmap made when a gate first asks for that label.
#[derive(Debug, Clone)]
pub(crate) struct InPlace {
    pub(crate) head: bytes::Bytes,
    pub(crate) table_at: usize,
    pub(crate) props_at: usize,
    /// What the decoded properties are charged ([`NodeChunk::heap_bytes`]), known from
    /// the check: a part's charge does not change when they are decoded.
    pub(crate) props_charge: usize,
    pub(crate) props: OnceLock<BTreeMap<String, Vec<(Local, Value)>>>,
    /// The labels in label order.
    pub(crate) labels: Box<[LabelAt]>,
}

/// Where one label of a head read in place lies: its name, and its local ordinals
/// (`count` × `u32le`, increasing), with the bitmap made from them on first use.
#[derive(Debug, Clone)]
pub(crate) struct LabelAt {
    pub(crate) name_at: u32,
    pub(crate) name_len: u32,
    pub(crate) locals_at: u32,
    pub(crate) count: u32,
    pub(crate) bitmap: OnceLock<Arc<RoaringBitmap>>,
}

impl InPlace {
    fn name(&self, l: &LabelAt) -> &str {
        // Checked as UTF-8 when the part was read; these are the same bytes.
        std::str::from_utf8(self.name_bytes(l)).unwrap_or_default()
    }

    fn name_bytes(&self, l: &LabelAt) -> &[u8] {
        &self.head[l.name_at as usize..(l.name_at + l.name_len) as usize]
    }

    fn local(&self, l: &LabelAt, i: u32) -> Local {
        let at = (l.locals_at + 4 * i) as usize;
        u32::from_le_bytes(self.head[at..at + 4].try_into().expect("4 bytes"))
    }

    fn bitmap<'a>(&self, l: &'a LabelAt) -> &'a Arc<RoaringBitmap> {
        l.bitmap.get_or_init(|| {
            // Increasing, checked when the part was read: sorted input for the bitmap.
            let locals = (0..l.count).map(|i| self.local(l, i));
            Arc::new(RoaringBitmap::from_sorted_iter(locals).unwrap_or_default())
        })
    }

    fn has(&self, l: &LabelAt, local: Local) -> bool {
        let (mut lo, mut hi) = (0, l.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.local(l, mid).cmp(&local) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

/// Equality of the columns (a part read in place equals the same part decoded).
impl PartialEq for NodeChunk {
    fn eq(&self, o: &Self) -> bool {
        self.stored_text == o.stored_text
            && self.ids == o.ids
            && self.labels_iter().eq(o.labels_iter())
            && self.validity == o.validity
            && self.always_valid == o.always_valid
            && self.props_map() == o.props_map()
            && self.text == o.text
            && self.dates == o.dates
            && self.date_end == o.date_end
            && self.dense_models == o.dense_models
            && self.sparse_models == o.sparse_models
            && (0..self.len() as Local).all(|l| self.hash(l) == o.hash(l) && self.text_entry(l) == o.text_entry(l))
    }
}

/// The texts of a core part left in their node objects (storage-format §7.3.1: the part
/// stores where each is, its length and crc32, not its bytes), read one at a time when an
/// item is rendered (and kept, for a part that holds them). Each is checked against its
/// crc32; a text that cannot be read, or fails it, is read from its node object whole
/// (checked) instead and the source told, so the stored part is rebuilt.
#[derive(Clone)]
pub(crate) struct StoredTexts {
    pub(crate) source: Arc<dyn RowSource>,
    /// The part's store key.
    pub(crate) key: Box<[u8]>,
    /// `Some` if the part holds its texts in memory once read ([`NodeChunk::hold_texts`]):
    /// each text read so far, by local ordinal.
    pub(crate) held: Option<Box<[OnceLock<Box<str>>]>>,
}

impl fmt::Debug for StoredTexts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredTexts").field("key", &self.key.len()).finish()
    }
}

/// The same part key (the source is not compared).
impl PartialEq for StoredTexts {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl NodeChunk {
    /// Builds the core columns of `nodes` (sorted by id, strictly increasing).
    pub(crate) fn build(nodes: &[(Hash, &Node)]) -> NodeChunk {
        let mut c = NodeChunk {
            always_valid: true,
            ..NodeChunk::default()
        };
        for (local, (hash, node)) in nodes.iter().enumerate() {
            let local = local as Local;
            c.ids.push(node.id.as_str());
            c.hashes.push(*hash);
            for label in &node.labels {
                match c.labels.get_mut(label.as_str()) {
                    Some(b) => {
                        Arc::make_mut(b).push(local);
                    }
                    None => {
                        c.labels
                            .insert(label.clone(), Arc::new(RoaringBitmap::from_iter([local])));
                    }
                }
            }
            c.push_validity(local as usize, validity_bounds(&node.validity), nodes.len());
            for (key, value) in &node.props {
                match c.props.get_mut(key.as_str()) {
                    Some(col) => col.push((local, value.clone())),
                    None => {
                        c.props.insert(key.clone(), vec![(local, value.clone())]);
                    }
                }
            }
            // An object is at most `MAX_OBJECT_BYTES` (16 MiB): the offset fits.
            c.push_text(&node.text, cairn_core::codec::node_text_offset(node) as u32);
            c.push_dates(local as usize, &text_dates(&node.text), nodes.len());
        }
        c
    }

    /// Appends node `local`'s validity (nodes in local order), of a chunk of `n` nodes.
    pub(crate) fn push_validity(&mut self, local: usize, bounds: (i64, i64), n: usize) {
        if bounds != OPEN && self.validity.is_empty() {
            // The first node with bounds: the ones before it had none.
            self.validity.reserve_exact(n);
            self.validity.resize(local, OPEN);
        }
        if !self.validity.is_empty() || bounds != OPEN {
            self.validity.push(bounds);
        }
        self.always_valid = self.validity.is_empty();
    }

    /// Appends node `local`'s text dates (sorted, deduplicated; nodes in local order), of
    /// a chunk of `n` nodes.
    pub(crate) fn push_dates(&mut self, local: usize, spans: &[DaySpan], n: usize) {
        self.dates.extend_from_slice(spans);
        self.push_date_end(local, n);
    }

    /// Ends node `local`'s dates (those pushed since the last node's end), of a chunk of
    /// `n` nodes.
    pub(crate) fn push_date_end(&mut self, local: usize, n: usize) {
        if self.dates.is_empty() {
            return;
        }
        if self.date_end.len() < local {
            // The first node with dates: the ones before it had none.
            self.date_end.reserve_exact(n);
            self.date_end.resize(local, 0);
        }
        self.date_end.push(self.dates.len() as u32);
    }

    /// The dates node `local`'s text mentions, sorted (storage-format §7.3.1).
    pub fn text_dates(&self, local: Local) -> &[DaySpan] {
        if self.date_end.is_empty() {
            return &[];
        }
        let end = self.date_end[local as usize] as usize;
        let start = match local {
            0 => 0,
            l => self.date_end[l as usize - 1] as usize,
        };
        &self.dates[start..end]
    }

    /// Appends a node's text, which starts at byte `offset` of its node object.
    pub(crate) fn push_text(&mut self, text: &str, offset: u32) {
        self.text.push_str(text);
        self.text_end.push(self.text.len() as u32);
        self.text_chars.push(text.chars().count() as u32);
        self.text_crcs.push(crc32fast::hash(text.as_bytes()));
        self.text_offsets.push(offset);
    }

    /// The length of node `local`'s text in characters.
    pub fn text_chars(&self, local: Local) -> usize {
        self.text_entry(local).1 as usize
    }

    /// Node `local`'s text table entry (storage-format §7.3.1): its length in bytes and in
    /// characters, its crc32, and where it starts in its node object's encoding.
    pub(crate) fn text_entry(&self, local: Local) -> (u32, u32, u32, u32) {
        let l = local as usize;
        match &self.in_place {
            Some(p) => {
                let at = p.table_at + 16 * l;
                let u = |i: usize| u32::from_le_bytes(p.head[at + 4 * i..at + 4 * i + 4].try_into().expect("4 bytes"));
                (u(0), u(1), u(2), u(3))
            }
            None => {
                let start = match l {
                    0 => 0,
                    l => self.text_end[l - 1],
                };
                (
                    self.text_end[l] - start,
                    self.text_chars[l],
                    self.text_crcs[l],
                    self.text_offsets[l],
                )
            }
        }
    }

    /// The bytes of every text of the chunk.
    fn text_bytes(&self) -> usize {
        match &self.in_place {
            Some(_) => (0..self.len() as Local).map(|l| self.text_entry(l).0 as usize).sum(),
            None => self.text_end.last().map_or(0, |&e| e as usize),
        }
    }

    /// Node `local`'s object hash.
    pub fn hash(&self, local: Local) -> Hash {
        let l = local as usize;
        match &self.in_place {
            Some(p) => {
                let at = 4 + 40 * l + self.ids.end(l) + 8;
                Hash::from_bytes(p.head[at..at + 32].try_into().expect("32 bytes"))
            }
            None => self.hashes[l],
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True for a chunk without nodes (never stored).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The ids, in local order.
    pub fn ids(&self) -> &Ids {
        &self.ids
    }

    /// The local ordinal of `id`, if the chunk holds it.
    pub fn local(&self, id: &NodeId) -> Option<Local> {
        self.ids.binary_search(id.as_str()).ok().map(|i| i as Local)
    }

    /// The text of node `local`: from memory, or read by range from its node object
    /// (checked by its crc32), or — when that fails — from the node object read whole, the
    /// source told of the damaged part. `Err` says why neither could be read.
    pub fn text(&self, local: Local) -> Result<Cow<'_, str>, String> {
        let l = local as usize;
        let Some(st) = &self.stored_text else {
            let end = self.text_end[l] as usize;
            let start = match l {
                0 => 0,
                l => self.text_end[l - 1] as usize,
            };
            return Ok(Cow::Borrowed(&self.text[start..end]));
        };
        let (len, _, crc, _) = self.text_entry(local);
        if len == 0 {
            return Ok(Cow::Borrowed(""));
        }
        let held = st.held.as_ref().map(|h| &h[l]);
        if let Some(t) = held.and_then(OnceLock::get) {
            return Ok(Cow::Borrowed(t));
        }
        let hash = self.hash(local);
        let mut bytes = vec![0u8; len as usize];
        let why = match self.read_text_at(st, l, &mut bytes) {
            Ok(()) => match String::from_utf8(bytes) {
                Ok(t) => {
                    return Ok(match held {
                        Some(h) => Cow::Borrowed(h.get_or_init(|| t.into_boxed_str())),
                        None => Cow::Owned(t),
                    })
                }
                Err(_) => "is not UTF-8".to_string(),
            },
            Err(why) => why,
        };
        st.source
            .damaged(&st.key, format!("the text of node {} {why}", self.ids.get(l)));
        let text = st
            .source
            .node_text(&hash)
            .map_err(|e| format!("node {}: {e}", self.ids.get(l)))?;
        if text.len() != len as usize || crc32fast::hash(text.as_bytes()) != crc {
            return Err(format!(
                "node {} does not hold the text its index part was built from",
                self.ids.get(l)
            ));
        }
        Ok(Cow::Owned(text))
    }

    /// Reads node `l`'s text bytes (`out.len()` of them) from its node object through `st`,
    /// checked against its crc32; `Err` says why not, to follow "the text of node …".
    fn read_text_at(&self, st: &StoredTexts, l: usize, out: &mut [u8]) -> Result<(), String> {
        let (_, _, crc, offset) = self.text_entry(l as Local);
        match st.source.read_object_at(&self.hash(l as Local), u64::from(offset), out) {
            Ok(true) if crc32fast::hash(out) == crc => Ok(()),
            Ok(true) => Err("fails its checksum".to_string()),
            Ok(false) => Err("is not where the part says".to_string()),
            Err(e) => Err(format!("could not be read ({e})")),
        }
    }

    /// Node `local`'s object and where its text starts in the object's encoding.
    pub fn text_place(&self, local: Local) -> (Hash, u32) {
        (self.hash(local), self.text_entry(local).3)
    }

    /// Leaves the texts in their node objects, read through `source` (`key`: the part's
    /// store key, reported to `source` if a text cannot be read); the bytes in memory are
    /// let go.
    pub fn leave_texts_stored(&mut self, source: Arc<dyn RowSource>, key: &[u8]) {
        self.text = String::new();
        self.stored_text = Some(StoredTexts {
            source,
            key: key.into(),
            held: None,
        });
    }

    /// Makes a part whose texts were left in their node objects
    /// ([`NodeChunk::leave_texts_stored`]) hold them in memory once read: each is read,
    /// checked against its crc32, the first time it is asked for, and kept, so that
    /// loading the part reads none. One that cannot be read is not kept: it is read from
    /// its node object whole and the part reported damaged, as for a part that does not
    /// hold its texts.
    pub fn hold_texts(&mut self) {
        let n = self.len();
        if let Some(st) = &mut self.stored_text {
            st.held = Some((0..n).map(|_| OnceLock::new()).collect());
        }
    }

    /// True if the texts are held in memory (or will be, each once first read:
    /// [`NodeChunk::hold_texts`]); false if each is read from its node object when asked for.
    pub fn texts_in_memory(&self) -> bool {
        self.stored_text.as_ref().is_none_or(|st| st.held.is_some())
    }

    /// Property key → `(local, value)` in local order: the decoded column, or for a part
    /// read in place its head's, decoded on first use.
    pub(crate) fn props_map(&self) -> &BTreeMap<String, Vec<(Local, Value)>> {
        match &self.in_place {
            Some(p) => p
                .props
                .get_or_init(|| crate::persist::decode_props(&p.head, p.props_at, self.len() as u32)),
            None => &self.props,
        }
    }

    /// Every label with its local ordinals, in label order (a part read in place makes
    /// each label's bitmap).
    pub(crate) fn labels_iter(&self) -> impl Iterator<Item = (&str, &Arc<RoaringBitmap>)> {
        let decoded = self.labels.iter().map(|(l, b)| (l.as_str(), b));
        let in_place = self
            .in_place
            .iter()
            .flat_map(|p| p.labels.iter().map(move |l| (p.name(l), p.bitmap(l))));
        decoded.chain(in_place)
    }

    /// The labels of node `local`, in label order.
    pub fn labels_of(&self, local: Local) -> Vec<&str> {
        match &self.in_place {
            Some(p) => p.labels.iter().filter(|l| p.has(l, local)).map(|l| p.name(l)).collect(),
            None => self
                .labels
                .iter()
                .filter(|(_, b)| b.contains(local))
                .map(|(l, _)| l.as_str())
                .collect(),
        }
    }

    /// The value of property `key` of node `local`.
    pub fn prop(&self, local: Local, key: &str) -> Option<&Value> {
        let col = self.props_map().get(key)?;
        let i = col.binary_search_by_key(&local, |(l, _)| *l).ok()?;
        Some(&col[i].1)
    }

    /// Every property of node `local`, in key order.
    pub fn props_of(&self, local: Local) -> BTreeMap<String, Value> {
        self.props_map()
            .iter()
            .filter_map(|(k, col)| {
                let i = col.binary_search_by_key(&local, |(l, _)| *l).ok()?;
                Some((k.clone(), col[i].1.clone()))
            })
            .collect()
    }

    /// The `(from, until)` validity bounds of node `local`.
    pub fn validity(&self, local: Local) -> (i64, i64) {
        match self.validity.get(local as usize) {
            Some(&v) => v,
            None => OPEN,
        }
    }

    /// Local ordinals carrying `label` (`None` if none does).
    pub fn label(&self, label: &str) -> Option<&Arc<RoaringBitmap>> {
        match &self.in_place {
            Some(p) => {
                // Bytes compared (the order of `str`), not each name checked as UTF-8 again.
                let i = p
                    .labels
                    .binary_search_by(|l| p.name_bytes(l).cmp(label.as_bytes()))
                    .ok()?;
                Some(p.bitmap(&p.labels[i]))
            }
            None => self.labels.get(label),
        }
    }

    /// Labels in this chunk with their node counts.
    pub fn label_counts(&self) -> impl Iterator<Item = (&str, u64)> {
        let decoded = self.labels.iter().map(|(l, b)| (l.as_str(), b.len()));
        let in_place = self
            .in_place
            .iter()
            .flat_map(|p| p.labels.iter().map(move |l| (p.name(l), u64::from(l.count))));
        decoded.chain(in_place)
    }

    /// Local ordinals whose property `key` satisfies `pred`.
    pub fn filter_prop(&self, key: &str, pred: &PropertyPredicate) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        for (l, v) in self.props_map().get(key).map(Vec::as_slice).unwrap_or_default() {
            if pred.matches(v) {
                out.push(*l);
            }
        }
        out
    }

    /// Local ordinals valid at `t_ms`, or `None` if every node of the chunk is always
    /// valid (no restriction).
    pub fn valid_at(&self, t_ms: i64) -> Option<RoaringBitmap> {
        if self.always_valid {
            return None;
        }
        let mut out = RoaringBitmap::new();
        for (l, &(f, u)) in self.validity.iter().enumerate() {
            if bounds_contain(f, u, t_ms) {
                out.push(l as Local);
            }
        }
        Some(out)
    }

    /// Dense models of this chunk with `(dimension, rows)`.
    pub fn dense_models(&self) -> &Models<(u32, u32)> {
        &self.dense_models
    }

    /// Sparse models of this chunk with their row counts.
    pub fn sparse_models(&self) -> &Models<u32> {
        &self.sparse_models
    }

    /// Approximate heap bytes (for the cache's budget).
    pub fn heap_bytes(&self) -> usize {
        let ids = self.ids.heap_bytes();
        let labels: usize = match &self.in_place {
            // The table, and each bitmap as if made (an array of its locals).
            Some(p) => p.labels.iter().map(|l| 40 + 64 + 16 + 2 * l.count as usize).sum(),
            None => self
                .labels
                .iter()
                .map(|(l, b)| l.len() + 64 + b.serialized_size())
                .sum(),
        };
        let props = match &self.in_place {
            Some(p) => p.props_charge,
            None => props_charge(&self.props),
        };
        // A head read in place counts as held: a part's charge does not depend on where
        // its bytes lie.
        ids + self.in_place.as_ref().map_or(0, |p| p.head.len())
            + self.hashes.len() * 32
            + labels
            + self.validity.len() * 16
            + self.dates.len() * 8
            + self.date_end.len() * 4
            + props
            + self.text.len()
            + self.text_end.len() * 16
            // Texts held once read count from the start: a part's charge does not change.
            + self.stored_text.as_ref().map_or(0, |t| {
                t.key.len()
                    + t.held
                        .as_ref()
                        .map_or(0, |h| h.len() * 24 + self.text_bytes())
            })
            + 256
    }
}

/// What a property map is charged in a part's heap bytes (an estimate: keys, map nodes,
/// `(local, value)` pairs).
pub(crate) fn props_charge(props: &BTreeMap<String, Vec<(Local, Value)>>) -> usize {
    props.iter().map(|(k, c)| props_entry_charge(k.len(), c.len())).sum()
}

/// [`props_charge`] of one key of `key_len` bytes with `values` values.
pub(crate) fn props_entry_charge(key_len: usize, values: usize) -> usize {
    key_len + 48 + values * 40
}
