//! Unit text: the BM25 postings of one [unit](mod@crate::unit)'s chunks, grouped by term,
//! so that a query reads the postings of its terms — a few small reads per unit — instead
//! of probing every chunk's part, and a view holds a unit's document lengths and a sparse
//! index of its terms instead of every chunk's term dictionary.
//!
//! A unit text is a function of its chunks' text parts ([`TextChunk`]), in chunk order: the
//! same postings, term frequencies and document lengths, regrouped. Stored under the unit's
//! key (`storage-format.md` §7.3.9), it is read two ways:
//!
//! * **resident** ([`UnitText::open`]): the whole value, checked throughout when opened
//!   (stores that cannot read a range of a value);
//! * **stored** ([`UnitText::open_stored`]): the value's head (document lengths and the
//!   block index, checked by its crc32) read when opened; on each lookup, the term's block
//!   — its dictionary and then its terms' postings — read through a [`RowSource`], whole
//!   when it is small, else the dictionary and then the term's postings; the dictionary
//!   and each term's postings checked by their own crc32s; the last [`MEMO_BYTES`] of
//!   postings read kept in memory. A range that cannot be read, or fails its checksum, is an
//!   `Err` with the reason: the view then scores the unit's chunks from the node texts and
//!   tells the source, so that the stored value is rebuilt (`view/text.rs`).
//!
//! Postings are stored as the in-memory [`Posting`] word (local ordinal in the top 12 bits,
//! term frequency in the 20 below).

use std::sync::Arc;

use cairn_core::Hash;

use crate::chunk::{Local, Posting, TextChunk};
use crate::error::IndexError;
use crate::fast_hash::FastMap;
use crate::params::MAX_CHUNK_KEYS;
use crate::persist::{bad, Reader};
use crate::RowSource;

/// Tag of a stored unit text.
pub const TAG_UNIT_TEXT: u8 = 0xC9;

/// Terms per block of the term dictionary: a lookup reads one block.
pub const BLOCK_TERMS: usize = 64;

/// Bytes before the head: tag, key, head length, head crc32.
const PREAMBLE: usize = 1 + 32 + 4 + 4;

/// One block, as the head indexes it: a dictionary of up to [`BLOCK_TERMS`] terms, then
/// their postings.
#[derive(Debug, Clone)]
struct Block {
    /// Its first term.
    first: Box<str>,
    /// Offset in the block region; the dictionary's length and crc32; the whole block's
    /// length (dictionary and postings).
    offset: u64,
    dict_len: u32,
    crc: u32,
    len: u32,
}

/// A block of at most this many bytes is read whole (dictionary and postings at once).
const READ_WHOLE: u32 = 16 << 10;

/// Where a unit text's blocks and postings are read from.
#[derive(Clone)]
enum Body {
    /// The whole value, checked when opened.
    Resident(Arc<[u8]>),
    /// The stored value `key`, read by range.
    Stored { source: Arc<dyn RowSource>, key: Box<[u8]> },
}

/// One unit's text postings (module docs). Cheap to clone.
#[derive(Clone)]
pub struct UnitText {
    /// The unit's key.
    key: Hash,
    /// Chunk `j`'s documents are unit documents `first_doc[j]..first_doc[j + 1]`.
    first_doc: Arc<[u32]>,
    /// Length in terms of each unit document.
    doc_len: Arc<[u32]>,
    /// Sum of each chunk's document lengths.
    chunk_len: Arc<[u64]>,
    /// Distinct terms.
    terms: u64,
    blocks: Arc<[Block]>,
    /// Absolute offset of the block region, and its length.
    blocks_at: u64,
    blocks_len: u64,
    body: Body,
    /// The postings read by range most recently, by term (shared by clones).
    memo: Arc<parking_lot::Mutex<TermMemo>>,
}

/// Bytes of postings a unit read by range keeps in memory (its most recently read terms):
/// counted in its [`UnitText::heap_bytes`], so the part cache's budget covers them.
pub const MEMO_BYTES: usize = 512 << 10;

/// A unit's recently read terms (`None`: the unit lacks the term), up to [`MEMO_BYTES`],
/// the oldest let go first. A term read again costs no read; the postings are those the
/// read checked, so answers do not change.
#[derive(Default)]
struct TermMemo {
    map: std::collections::HashMap<Box<str>, Option<Arc<TermPostings>>>,
    order: std::collections::VecDeque<(Box<str>, usize)>,
    bytes: usize,
}

impl TermMemo {
    fn put(&mut self, term: &str, found: Option<Arc<TermPostings>>) {
        let size = term.len() + 64 + found.as_ref().map_or(0, |p| p.posts.len() * 4 + p.entries.len() * 8);
        if size > MEMO_BYTES || self.map.contains_key(term) {
            return;
        }
        while self.bytes + size > MEMO_BYTES {
            let Some((old, n)) = self.order.pop_front() else { break };
            self.map.remove(&old);
            self.bytes -= n;
        }
        self.map.insert(term.into(), found);
        self.order.push_back((term.into(), size));
        self.bytes += size;
    }
}

impl std::fmt::Debug for UnitText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnitText")
            .field("key", &self.key.short())
            .field("chunks", &self.chunks())
            .field("terms", &self.terms)
            .field("resident", &matches!(self.body, Body::Resident(_)))
            .finish()
    }
}

/// A term's postings in one unit: per chunk holding it (unit chunk index, increasing), its
/// postings in local order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TermPostings {
    /// `(unit chunk, end)`: the chunk's postings are `posts[previous end..end]`.
    entries: Vec<(u32, u32)>,
    posts: Vec<Posting>,
}

impl TermPostings {
    /// `(unit chunk, its postings)`, chunks increasing.
    pub fn chunks(&self) -> impl Iterator<Item = (usize, &[Posting])> + '_ {
        let mut start = 0usize;
        self.entries.iter().map(move |&(j, end)| {
            let s = start;
            start = end as usize;
            (j as usize, &self.posts[s..end as usize])
        })
    }

    /// Postings over every chunk (the term's document frequency in the unit).
    pub fn len(&self) -> usize {
        self.posts.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.posts.is_empty()
    }
}

/// Encodes the unit text of `parts` (the unit's chunks' text parts, in chunk order) under
/// `key`.
pub fn encode_unit_text(key: &Hash, parts: &[&TextChunk]) -> Vec<u8> {
    // Every distinct term of the unit (numbered as first met), and each chunk term's number.
    let occurrences: usize = parts.iter().map(|p| p.term_count()).sum();
    let mut number: FastMap<&str, u32> = FastMap::default();
    let mut names: Vec<&str> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    let mut of: Vec<u32> = Vec::with_capacity(occurrences);
    for p in parts {
        for i in 0..p.term_count() {
            let t = p.term(i);
            let x = *number.entry(t).or_insert_with(|| {
                names.push(t);
                counts.push(0);
                (names.len() - 1) as u32
            });
            counts[x as usize] += 1;
            of.push(x);
        }
    }
    drop(number);
    // The terms in byte order; each one's (chunk, term in chunk) entries in one array,
    // grouped by a counting sort that keeps chunk order within a term.
    let mut order: Vec<u32> = (0..names.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| names[a as usize].cmp(names[b as usize]));
    let mut rank = vec![0u32; names.len()];
    let mut start = Vec::with_capacity(names.len() + 1);
    start.push(0usize);
    for (r, &x) in order.iter().enumerate() {
        rank[x as usize] = r as u32;
        start.push(start[r] + counts[x as usize] as usize);
    }
    let mut fill = start.clone();
    let mut flat = vec![(0u32, 0u32); occurrences];
    let mut k = 0;
    for (j, p) in parts.iter().enumerate() {
        for i in 0..p.term_count() {
            let r = rank[of[k] as usize] as usize;
            flat[fill[r]] = (j as u32, i as u32);
            fill[r] += 1;
            k += 1;
        }
    }
    drop((of, fill, rank, counts));
    let terms: Vec<(&str, &[(u32, u32)])> = order
        .iter()
        .enumerate()
        .map(|(r, &x)| (names[x as usize], &flat[start[r]..start[r + 1]]))
        .collect();
    // The value is written into one buffer of its exact length (a unit text runs to
    // megabytes: growing it by doubling copied and zeroed it several times over). The
    // head, which indexes the blocks, is sized first and filled in once they are written;
    // so is each block's dictionary, before its postings.
    let postings_len = |&(j, i): &(u32, u32)| 8 + 4 * parts[j as usize].postings_at(i as usize).len();
    let term_len = |(t, at): &(&str, &[(u32, u32)])| 8 + t.len() + 12 + 4 + at.iter().map(postings_len).sum::<usize>();
    let blocks_len: usize = terms.iter().map(term_len).sum();
    let docs: usize = parts.iter().map(|p| p.doc_count()).sum();
    let index_len: usize = terms.chunks(BLOCK_TERMS).map(|g| 8 + g[0].0.len() + 8 + 12).sum();
    let head_len = 4 + 4 * parts.len() + 4 * docs + 8 + 8 + 4 + index_len;
    let mut out = Vec::with_capacity(PREAMBLE + head_len + blocks_len);
    out.push(TAG_UNIT_TEXT);
    out.extend_from_slice(key.as_bytes());
    put_u32(&mut out, head_len as u32);
    put_u32(&mut out, 0); // the head's crc32, once it is written
    out.resize(PREAMBLE + head_len, 0);
    let region = out.len();
    // Per block: first term, offset, dictionary length and crc32, whole length.
    let mut index: Vec<(&str, u64, u32, u32, u32)> = Vec::new();
    // One block's dictionary (reused), and where each term's postings start.
    let mut dict: Vec<u8> = Vec::new();
    let mut at_of: Vec<(usize, usize)> = Vec::with_capacity(BLOCK_TERMS);
    for group in terms.chunks(BLOCK_TERMS) {
        at_of.clear();
        // The dictionary: each term with its postings' offset in the block (they follow
        // the dictionary), length and crc32; its room is left, the postings written after
        // it, and then it is filled in.
        let dict_len: usize = group.iter().map(|(t, _)| 8 + t.len() + 12).sum();
        let block = out.len();
        out.resize(block + dict_len, 0);
        for (_, at) in group {
            let d = out.len() - block;
            put_u32(&mut out, at.len() as u32);
            for &(j, i) in *at {
                put_u32(&mut out, j);
                put_u32(&mut out, parts[j as usize].postings_at(i as usize).len() as u32);
            }
            for &(j, i) in *at {
                for p in parts[j as usize].postings_at(i as usize) {
                    put_u32(&mut out, p.raw());
                }
            }
            at_of.push((d, out.len() - block - d));
        }
        dict.clear();
        for ((term, _), &(d, len)) in group.iter().zip(&at_of) {
            put_str(&mut dict, term);
            put_u32(&mut dict, d as u32);
            put_u32(&mut dict, len as u32);
            put_u32(&mut dict, crc32fast::hash(&out[block + d..block + d + len]));
        }
        debug_assert_eq!(dict.len(), dict_len);
        out[block..block + dict_len].copy_from_slice(&dict);
        index.push((
            group[0].0,
            (block - region) as u64,
            dict_len as u32,
            crc32fast::hash(&dict),
            (out.len() - block) as u32,
        ));
    }
    debug_assert_eq!(out.len(), region + blocks_len);
    let mut head = Vec::with_capacity(head_len);
    put_u32(&mut head, parts.len() as u32);
    for p in parts {
        put_u32(&mut head, p.doc_count() as u32);
    }
    for p in parts {
        for l in 0..p.doc_count() {
            put_u32(&mut head, p.doc_len(l as Local));
        }
    }
    put_u64(&mut head, terms.len() as u64);
    put_u64(&mut head, blocks_len as u64);
    put_u32(&mut head, index.len() as u32);
    for (first, offset, dict_len, crc, len) in &index {
        put_str(&mut head, first);
        put_u64(&mut head, *offset);
        put_u32(&mut head, *dict_len);
        put_u32(&mut head, *crc);
        put_u32(&mut head, *len);
    }
    debug_assert_eq!(head.len(), head_len);
    out[PREAMBLE - 4..PREAMBLE].copy_from_slice(&crc32fast::hash(&head).to_le_bytes());
    out[PREAMBLE..region].copy_from_slice(&head);
    out
}

fn put_u32(w: &mut Vec<u8>, x: u32) {
    w.extend_from_slice(&x.to_le_bytes());
}

fn put_u64(w: &mut Vec<u8>, x: u64) {
    w.extend_from_slice(&x.to_le_bytes());
}

fn put_str(w: &mut Vec<u8>, s: &str) {
    put_u64(w, s.len() as u64);
    w.extend_from_slice(s.as_bytes());
}

/// One dictionary entry: the term, its postings' offset in the block, their length and
/// crc32.
fn dict_entry<'a>(r: &mut Reader<'a>) -> Result<(&'a str, u32, u32, u32), String> {
    let e = |e: IndexError| e.to_string();
    Ok((
        r.str_ref().map_err(e)?,
        r.u32().map_err(e)?,
        r.u32().map_err(e)?,
        r.u32().map_err(e)?,
    ))
}

/// The dictionary at the start of `block`'s bytes, checked by its crc32.
fn block_dict<'a>(block: &Block, bytes: &'a [u8]) -> Result<&'a [u8], String> {
    let dict = bytes
        .get(..block.dict_len as usize)
        .ok_or("a term block is cut short")?;
    if crc32fast::hash(dict) != block.crc {
        return Err("a term block fails its checksum".into());
    }
    Ok(dict)
}

/// A term's postings at `range` of its block's bytes, checked by their crc32.
fn block_postings(bytes: &[u8], range: std::ops::Range<usize>, crc: u32) -> Result<&[u8], String> {
    let data = bytes.get(range).ok_or("a term's postings lie outside their block")?;
    if crc32fast::hash(data) != crc {
        return Err("a term's postings fail their checksum".into());
    }
    Ok(data)
}

/// The head of a whole value (`bytes`, under `key`), checked by its crc32.
fn head_of<'a>(bytes: &'a [u8], key: &Hash) -> Result<&'a [u8], IndexError> {
    let (head_len, crc) = preamble(bytes, key)?;
    let head = bytes
        .get(PREAMBLE..PREAMBLE.saturating_add(head_len))
        .ok_or_else(|| bad("the unit text ends inside its head"))?;
    checked_head(head, crc)
}

/// `head`, if its crc32 is `crc`.
fn checked_head(head: &[u8], crc: u32) -> Result<&[u8], IndexError> {
    if crc32fast::hash(head) != crc {
        return Err(bad("the unit text's head fails its checksum"));
    }
    Ok(head)
}

/// The preamble's `(head length, head crc32)`, after checking the tag and the key.
fn preamble(bytes: &[u8], key: &Hash) -> Result<(usize, u32), IndexError> {
    let mut r = Reader::new(bytes);
    let tag = r.u8()?;
    if tag != TAG_UNIT_TEXT {
        return Err(bad(format!("tag 0x{tag:02x}, expected 0x{TAG_UNIT_TEXT:02x}")));
    }
    let stored = r.take(32)?;
    if stored != key.as_bytes() {
        return Err(bad(format!(
            "the value is for key {}, not {}",
            Hash::from_bytes(stored.try_into().unwrap_or([0; 32])).short(),
            key.short()
        )));
    }
    Ok((r.u32()? as usize, r.u32()?))
}

impl UnitText {
    /// Opens a whole stored value (`bytes`, under `key`), checking all of it: every block,
    /// every term's postings, and that each document's length is the sum of its term
    /// frequencies. Errors: [`IndexError::BadStoredIndex`].
    pub fn open(bytes: Vec<u8>, key: &Hash) -> Result<UnitText, IndexError> {
        let u = UnitText::open_built(bytes, key)?;
        u.check_all()?;
        Ok(u)
    }

    /// Opens a value [`encode_unit_text`] just gave (its head checked, its body trusted:
    /// a text past the length limit, which no stored part holds, counts a clamped
    /// frequency that [`UnitText::open`] would refuse). Errors: [`IndexError::BadStoredIndex`].
    pub fn open_built(bytes: Vec<u8>, key: &Hash) -> Result<UnitText, IndexError> {
        let head = head_of(&bytes, key)?;
        let mut u = UnitText::from_head(*key, head, Body::Resident(Arc::from(Vec::new())))?;
        let end = u.blocks_at + u.blocks_len;
        if end > bytes.len() as u64 {
            return Err(bad("the unit text ends inside its blocks"));
        }
        u.body = Body::Resident(Arc::from(bytes));
        Ok(u)
    }

    /// A unit text read by range from the stored value `skey` through `source`, from the
    /// value [`encode_unit_text`] just gave (`bytes`, queued for the store and written
    /// before any lookup reads it): its head is taken from `bytes`, its blocks and
    /// postings are read from the store. Errors: [`IndexError::BadStoredIndex`].
    pub fn built_stored(
        bytes: &[u8],
        key: &Hash,
        source: Arc<dyn RowSource>,
        skey: &[u8],
    ) -> Result<UnitText, IndexError> {
        let head = head_of(bytes, key)?;
        let body = Body::Stored {
            source,
            key: skey.into(),
        };
        UnitText::from_head(*key, head, body)
    }

    /// Opens the stored value `skey` (under unit `key`) by reading its head alone through
    /// `source` (blocks and postings are read on lookup). `Ok(None)` if the store has no
    /// such value. Errors: [`IndexError::BadStoredIndex`] for a head that fails its
    /// checksum or does not decode; a read failure as its message.
    pub fn open_stored(source: Arc<dyn RowSource>, skey: &[u8], key: &Hash) -> Result<Option<UnitText>, IndexError> {
        let mut pre = [0u8; PREAMBLE];
        match source.read_at(skey, 0, &mut pre) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => return Err(bad(format!("the unit text cannot be read ({e})"))),
        }
        let (head_len, crc) = preamble(&pre, key)?;
        let mut head = vec![0u8; head_len];
        match source.read_at(skey, PREAMBLE as u64, &mut head) {
            Ok(true) => {}
            Ok(false) => return Err(bad("the unit text ends inside its head")),
            Err(e) => return Err(bad(format!("the unit text's head cannot be read ({e})"))),
        }
        checked_head(&head, crc)?;
        let body = Body::Stored {
            source,
            key: skey.into(),
        };
        UnitText::from_head(*key, &head, body).map(Some)
    }

    fn from_head(key: Hash, head: &[u8], body: Body) -> Result<UnitText, IndexError> {
        let mut r = Reader::new(head);
        let chunks = r.count32(4)?;
        if chunks == 0 {
            return Err(bad("a unit text of no chunks"));
        }
        let mut first_doc = Vec::with_capacity(chunks + 1);
        let mut docs = 0u32;
        for _ in 0..chunks {
            first_doc.push(docs);
            let n = r.u32()?;
            if n == 0 || n as usize > MAX_CHUNK_KEYS {
                return Err(bad(format!("a unit text chunk of {n} documents")));
            }
            docs = docs.checked_add(n).ok_or_else(|| bad("more than 2^32 documents"))?;
        }
        first_doc.push(docs);
        if (docs as usize).saturating_mul(4) > r.remaining() {
            return Err(bad("the head ends inside its document lengths"));
        }
        // One allocation of the exact size (collecting into a `Vec` and then an `Arc`
        // wrote 4 bytes a document twice: ~8 MB of fresh memory at 1M nodes).
        let doc_len: Arc<[u32]> = r
            .take(docs as usize * 4)?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let chunk_len: Vec<u64> = first_doc
            .windows(2)
            .map(|w| {
                doc_len[w[0] as usize..w[1] as usize]
                    .iter()
                    .map(|&l| u64::from(l))
                    .sum()
            })
            .collect();
        let terms = r.u64()?;
        let blocks_len = r.u64()?;
        let n = r.count32(8 + 8 + 4 + 4 + 4)?;
        let mut blocks: Vec<Block> = Vec::with_capacity(n);
        for _ in 0..n {
            let first: Box<str> = r.str_ref()?.into();
            let offset = r.u64()?;
            let dict_len = r.u32()?;
            let crc = r.u32()?;
            let len = r.u32()?;
            let prev_end = blocks.last().map_or(0, |b| b.offset + u64::from(b.len));
            if offset != prev_end || blocks.last().is_some_and(|b| b.first >= first) || dict_len == 0 || dict_len > len
            {
                return Err(bad("unit text blocks out of order"));
            }
            blocks.push(Block {
                first,
                offset,
                dict_len,
                crc,
                len,
            });
        }
        r.done()?;
        if blocks.last().map_or(0, |b| b.offset + u64::from(b.len)) != blocks_len
            || terms > blocks.len() as u64 * BLOCK_TERMS as u64
            || terms < blocks.len() as u64
        {
            return Err(bad("the unit text's block index disagrees with its counts"));
        }
        let blocks_at = (PREAMBLE + head.len()) as u64;
        Ok(UnitText {
            key,
            first_doc: first_doc.into(),
            doc_len,
            chunk_len: chunk_len.into(),
            terms,
            blocks: blocks.into(),
            blocks_at,
            blocks_len,
            body,
            memo: Arc::default(),
        })
    }

    /// Reads `len` bytes at absolute offset `at`, checked against `crc` when given (else
    /// the caller checks them).
    fn read(&self, at: u64, len: u32, crc: Option<u32>, what: &str) -> Result<Vec<u8>, String> {
        let mut out = vec![0u8; len as usize];
        match &self.body {
            Body::Resident(b) => {
                let s = usize::try_from(at)
                    .ok()
                    .and_then(|a| b.get(a..a.checked_add(len as usize)?))
                    .ok_or_else(|| format!("{what} lies outside the unit text"))?;
                out.copy_from_slice(s);
            }
            Body::Stored { source, key } => match source.read_at(key, at, &mut out) {
                Ok(true) => {}
                Ok(false) => return Err(format!("{what} is missing from the stored unit text")),
                Err(e) => return Err(format!("{what} cannot be read ({e})")),
            },
        }
        if crc.is_some_and(|c| crc32fast::hash(&out) != c) {
            return Err(format!("{what} fails its checksum"));
        }
        Ok(out)
    }

    /// The postings of `term` (an analysed term), `None` if no document of the unit has
    /// it. `Err` says why a block or the postings could not be read (module docs). A unit
    /// read by range keeps what it read last in memory ([`MEMO_BYTES`]).
    pub fn postings(&self, term: &str) -> Result<Option<Arc<TermPostings>>, String> {
        let stored = self.is_stored();
        if stored {
            if let Some(found) = self.memo.lock().map.get(term) {
                return Ok(found.clone());
            }
        }
        let found = self.read_postings(term)?.map(Arc::new);
        if stored {
            self.memo.lock().put(term, found.clone());
        }
        Ok(found)
    }

    /// [`UnitText::postings`], read from the body: the term's block whole when it is
    /// small (one read), else its dictionary and then the term's postings.
    fn read_postings(&self, term: &str) -> Result<Option<TermPostings>, String> {
        let b = self.blocks.partition_point(|b| &*b.first <= term);
        let Some(block) = b.checked_sub(1).map(|b| &self.blocks[b]) else {
            return Ok(None);
        };
        let at = self.blocks_at + block.offset;
        let whole = block.len <= READ_WHOLE;
        let bytes = self.read(at, if whole { block.len } else { block.dict_len }, None, "a term block")?;
        let mut r = Reader::new(block_dict(block, &bytes)?);
        while r.remaining() > 0 {
            let (t, off, len, crc) = dict_entry(&mut r)?;
            match t.cmp(term) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Greater => return Ok(None),
                std::cmp::Ordering::Equal => {}
            }
            let what = "a term's postings";
            let range = (off as usize)..(off as usize).saturating_add(len as usize);
            let data = if whole {
                std::borrow::Cow::Borrowed(block_postings(&bytes, range, crc)?)
            } else {
                if range.end > block.len as usize {
                    return Err(format!("{what} lie outside their block"));
                }
                std::borrow::Cow::Owned(self.read(at + u64::from(off), len, Some(crc), what)?)
            };
            return self.parse_postings(&data).map(Some).map_err(|e| e.to_string());
        }
        Ok(None)
    }

    /// A term's postings from their bytes, checked (chunks increasing and in range, each
    /// chunk's locals increasing and in range, frequencies positive).
    fn parse_postings(&self, bytes: &[u8]) -> Result<TermPostings, IndexError> {
        let mut r = Reader::new(bytes);
        let n = r.count32(8)?;
        if n == 0 {
            return Err(bad("a term in no chunk"));
        }
        let mut entries = Vec::with_capacity(n);
        let mut total = 0u32;
        for _ in 0..n {
            let j = r.u32()?;
            let m = r.u32()?;
            if entries.last().is_some_and(|&(p, _)| p >= j) || j as usize >= self.chunks() || m == 0 {
                return Err(bad("term entries out of order or empty"));
            }
            total = total.checked_add(m).ok_or_else(|| bad("too many postings"))?;
            entries.push((j, total));
        }
        if (total as usize).saturating_mul(4) != r.remaining() {
            return Err(bad("postings disagree with their counts"));
        }
        let mut posts = Vec::with_capacity(total as usize);
        let mut start = 0;
        for &(j, end) in &entries {
            let docs = self.docs(j as usize) as u32;
            let mut prev: Option<Local> = None;
            for _ in start..end {
                let p = Posting::from_raw(r.u32()?);
                if p.tf() == 0 || p.local() >= docs || prev.is_some_and(|x| x >= p.local()) {
                    return Err(bad("postings out of order, out of range or with tf 0"));
                }
                prev = Some(p.local());
                posts.push(p);
            }
            start = end;
        }
        Ok(TermPostings { entries, posts })
    }

    /// Every term with its postings, in term order (reads every block), checking the
    /// layout the encoder writes: blocks of [`BLOCK_TERMS`] terms (the last one fewer),
    /// each dictionary followed by its terms' postings, contiguous and in term order.
    fn for_each_term(&self, mut f: impl FnMut(&str, TermPostings)) -> Result<(), String> {
        let mut last: Option<String> = None;
        let mut seen = 0u64;
        for (b, block) in self.blocks.iter().enumerate() {
            let bytes = self.read(self.blocks_at + block.offset, block.len, None, "a term block")?;
            let mut r = Reader::new(block_dict(block, &bytes)?);
            let mut in_block = 0usize;
            let mut next = block.dict_len as usize;
            while r.remaining() > 0 {
                let (t, off, len, crc) = dict_entry(&mut r)?;
                if in_block == 0 && t != &*block.first {
                    return Err("a block's first term differs from its index".into());
                }
                if t.is_empty() || last.as_deref().is_some_and(|l| l >= t) {
                    return Err("terms empty or out of order".into());
                }
                in_block += 1;
                if off as usize != next {
                    return Err("postings out of term order".into());
                }
                next = off as usize + len as usize;
                let data = block_postings(&bytes, off as usize..next, crc)?;
                f(t, self.parse_postings(data).map_err(|e| e.to_string())?);
                last = Some(t.to_string());
                seen += 1;
            }
            let full = b + 1 == self.blocks.len() || in_block == BLOCK_TERMS;
            if in_block == 0 || in_block > BLOCK_TERMS || !full || next != block.len as usize {
                return Err(format!("a block of {in_block} terms, or with bytes past its postings"));
            }
        }
        if seen != self.terms {
            return Err(format!("{seen} terms, the head says {}", self.terms));
        }
        Ok(())
    }

    /// Checks every block and posting list, and that each document's length is the sum
    /// of its term frequencies.
    fn check_all(&self) -> Result<(), IndexError> {
        let mut sums = vec![0u64; self.doc_len.len()];
        self.for_each_term(|_, p| {
            for (j, list) in p.chunks() {
                let first = self.first_doc[j] as usize;
                for q in list {
                    sums[first + q.local() as usize] += u64::from(q.tf());
                }
            }
        })
        .map_err(bad)?;
        if let Body::Resident(b) = &self.body {
            if self.blocks_at + self.blocks_len != b.len() as u64 {
                return Err(bad("trailing bytes after the blocks"));
            }
        }
        if sums.iter().zip(self.doc_len.iter()).any(|(s, &l)| *s != u64::from(l)) {
            return Err(bad("document lengths differ from their postings"));
        }
        Ok(())
    }

    /// The unit's chunks' text parts, as the chunks' own parts hold them (reads all of the
    /// unit text): for checks, digests and references.
    pub fn chunk_texts(&self) -> Result<Vec<TextChunk>, String> {
        let mut out: Vec<TextChunk> = (0..self.chunks())
            .map(|j| {
                let docs = &self.doc_len[self.first_doc[j] as usize..self.first_doc[j + 1] as usize];
                TextChunk::with_lengths(docs.to_vec())
            })
            .collect();
        self.for_each_term(|t, p| {
            for (j, list) in p.chunks() {
                out[j].push_postings(t, list);
            }
        })?;
        Ok(out)
    }

    /// The unit's key.
    pub fn key(&self) -> &Hash {
        &self.key
    }

    /// Chunks.
    pub fn chunks(&self) -> usize {
        self.first_doc.len() - 1
    }

    /// Documents of unit chunk `j`.
    pub fn docs(&self, j: usize) -> usize {
        (self.first_doc[j + 1] - self.first_doc[j]) as usize
    }

    /// Length in terms of document `local` of unit chunk `j`.
    #[inline]
    pub fn doc_len(&self, j: usize, local: Local) -> u32 {
        self.doc_len[(self.first_doc[j] + local) as usize]
    }

    /// Sum of unit chunk `j`'s document lengths.
    pub fn chunk_total_len(&self, j: usize) -> u64 {
        self.chunk_len[j]
    }

    /// Distinct terms.
    pub fn term_count(&self) -> u64 {
        self.terms
    }

    /// True if lookups read the store (the head alone is in memory).
    pub fn is_stored(&self) -> bool {
        matches!(self.body, Body::Stored { .. })
    }

    /// The stored value's key and source, for a unit text read by range.
    pub(crate) fn stored(&self) -> Option<(&Arc<dyn RowSource>, &[u8])> {
        match &self.body {
            Body::Stored { source, key } => Some((source, key)),
            Body::Resident(_) => None,
        }
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        let resident = match &self.body {
            Body::Resident(b) => b.len(),
            Body::Stored { key, .. } => key.len() + MEMO_BYTES,
        };
        self.first_doc.len() * 4
            + self.doc_len.len() * 4
            + self.chunk_len.len() * 8
            + self.blocks.iter().map(|b| b.first.len() + 40).sum::<usize>()
            + resident
            + 128
    }
}
