//! A Merkle search tree (MST): the history-independent, content-addressed ordered map
//! (key bytes → object hash) that holds a commit's nodes and edges.
//!
//! Every key has a **level**: the number of leading zero bits of the first 8 bytes of
//! `blake3(key)` (read big-endian), divided by [`LEVEL_BITS`] — so a key has level ≥ L with
//! probability 8^-L and a tree node holds about 8 keys. The tree of a key set `S` is
//! defined recursively: empty for an empty set; otherwise one node of level
//! `L = max level in S` holding the level-`L` keys of `S` in order, with a subtree (the
//! same definition, applied to the keys strictly between two neighbouring level-`L` keys,
//! or before the first, or after the last) in each gap. The shape, and so every hash, is
//! a function of the key set alone, whatever order keys were written in.
//!
//! Updates copy only the path to each changed key (plus the nodes a split or merge at that
//! key touches): a change of `k` keys writes O(k·log n) new tree nodes. [`diff`] walks two
//! trees together and skips every subtree whose hash the two share.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_core::{Hash, TreeEntry, TreeNode};

use crate::error::GraphError;
use crate::objects::{Objects, PendingWrites};

pub use cairn_core::level::{key_level, LEVEL_BITS};

/// A change to one key: put a value, or delete the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Map the key to this object hash.
    Put(Hash),
    /// Remove the key.
    Delete,
}

/// A callback receiving `(key, value)` entries in key order; an error stops the walk.
pub type Visitor<'a> = dyn FnMut(&[u8], &Hash) -> Result<(), GraphError> + 'a;

/// One difference between two trees.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    /// The key.
    pub key: Vec<u8>,
    /// Its value in the first tree (`None`: absent).
    pub before: Option<Hash>,
    /// Its value in the second tree (`None`: absent).
    pub after: Option<Hash>,
}

/// The value of `key` in the tree at `root`.
pub fn get(objs: &Objects, root: Option<Hash>, key: &[u8]) -> Result<Option<Hash>, GraphError> {
    let mut cur = root;
    while let Some(h) = cur {
        let t = objs.tree(&h)?;
        match t.entries.binary_search_by(|e| e.key.as_slice().cmp(key)) {
            Ok(i) => return Ok(Some(t.entries[i].value)),
            Err(i) => cur = gap_of(&t, i),
        }
    }
    Ok(None)
}

fn gap_of(t: &TreeNode, i: usize) -> Option<Hash> {
    if i == 0 {
        t.left
    } else {
        t.entries[i - 1].right
    }
}

/// Builds the tree of `entries` (sorted by key, strictly increasing) from scratch, adding
/// its nodes to `out`. Returns the root (`None` for no entries).
pub fn build(entries: &[(Vec<u8>, Hash)], out: &mut PendingWrites) -> Option<Hash> {
    let items: Vec<(&[u8], Hash, u8)> = entries.iter().map(|(k, v)| (k.as_slice(), *v, key_level(k))).collect();
    build_rec(&items, out)
}

fn build_rec(items: &[(&[u8], Hash, u8)], out: &mut PendingWrites) -> Option<Hash> {
    let max = items.iter().map(|x| x.2).max()?;
    let mut entries = Vec::new();
    let mut start = 0;
    let mut left = None;
    for (i, item) in items.iter().enumerate() {
        if item.2 == max {
            let gap = build_rec(&items[start..i], out);
            match entries.last_mut() {
                None => left = gap,
                Some(TreeEntry { right, .. }) => *right = gap,
            }
            entries.push(TreeEntry {
                key: item.0.to_vec(),
                value: item.1,
                right: None,
            });
            start = i + 1;
        }
    }
    let tail = build_rec(&items[start..], out);
    if let Some(last) = entries.last_mut() {
        last.right = tail;
    }
    Some(out.add_tree(&TreeNode {
        level: max,
        left,
        entries,
    }))
}

/// Applies `mutations` to the tree at `root`, adding new tree nodes to `out`; returns the
/// new root. Mutations that change nothing (putting the current value, deleting an absent
/// key) are skipped, so they write nothing.
///
/// `len_hint` is the tree's current number of keys if known: when the change set is a
/// large fraction of the tree, rebuilding from a merged scan is cheaper than path copying.
/// Both paths give the same tree (the shape is a function of the key set).
pub fn apply(
    objs: &Objects,
    root: Option<Hash>,
    mutations: &BTreeMap<Vec<u8>, Mutation>,
    len_hint: Option<u64>,
    out: &mut PendingWrites,
) -> Result<Option<Hash>, GraphError> {
    let mut effective: Vec<(&[u8], Mutation)> = Vec::new();
    let rebuild = match (root, len_hint) {
        (None, _) => true,
        (Some(_), Some(n)) => (mutations.len() as u64).saturating_mul(8) > n && mutations.len() > 64,
        (Some(_), None) => false,
    };
    if rebuild {
        let mut merged: Vec<(Vec<u8>, Hash)> = Vec::new();
        let mut muts = mutations.iter().peekable();
        let mut changed = false;
        for_each(objs, root, &mut |k, v| {
            while let Some((mk, _)) = muts.peek() {
                if mk.as_slice() < k {
                    let (mk, m) = muts.next().expect("peeked");
                    if let Mutation::Put(h) = m {
                        merged.push((mk.clone(), *h));
                        changed = true;
                    }
                } else {
                    break;
                }
            }
            match muts.peek() {
                Some((mk, m)) if mk.as_slice() == k => {
                    match m {
                        Mutation::Put(h) => {
                            changed |= h != v;
                            merged.push((k.to_vec(), *h));
                        }
                        Mutation::Delete => changed = true,
                    }
                    muts.next();
                }
                _ => merged.push((k.to_vec(), *v)),
            }
            Ok(())
        })?;
        for (mk, m) in muts {
            if let Mutation::Put(h) = m {
                merged.push((mk.clone(), *h));
                changed = true;
            }
        }
        if !changed {
            return Ok(root);
        }
        return Ok(build(&merged, out));
    }
    for (k, m) in mutations {
        let current = get(objs, root, k)?;
        let noop = match m {
            Mutation::Put(h) => current == Some(*h),
            Mutation::Delete => current.is_none(),
        };
        if !noop {
            effective.push((k.as_slice(), *m));
        }
    }
    if effective.is_empty() {
        return Ok(root);
    }
    let mut tree = Child::from(root);
    for (k, m) in effective {
        let level = key_level(k);
        tree = match m {
            Mutation::Put(v) => insert(objs, tree, k, v, level)?,
            Mutation::Delete => delete(objs, tree, k, level)?,
        };
    }
    Ok(persist(tree, out))
}

/// Calls `f` on every `(key, value)` of the tree, in key order.
pub fn for_each(objs: &Objects, root: Option<Hash>, f: &mut Visitor<'_>) -> Result<(), GraphError> {
    range(objs, root, &[], None, f)
}

/// Calls `f` on every `(key, value)` with `lo <= key < hi` (`hi = None`: no upper bound),
/// in key order, visiting only the subtrees that can hold such keys.
pub fn range(
    objs: &Objects,
    root: Option<Hash>,
    lo: &[u8],
    hi: Option<&[u8]>,
    f: &mut Visitor<'_>,
) -> Result<(), GraphError> {
    let Some(h) = root else { return Ok(()) };
    let t = objs.tree(&h)?;
    let n = t.entries.len();
    for i in 0..=n {
        // Gap i holds keys strictly between entries[i-1] and entries[i].
        let below_lo = i < n && t.entries[i].key.as_slice() <= lo;
        let above_hi = i > 0 && hi.is_some_and(|hi| t.entries[i - 1].key.as_slice() >= hi);
        if !below_lo && !above_hi {
            range(objs, gap_of(&t, i), lo, hi, f)?;
        }
        if i < n {
            let e = &t.entries[i];
            if hi.is_some_and(|hi| e.key.as_slice() >= hi) {
                return Ok(());
            }
            if e.key.as_slice() >= lo {
                f(&e.key, &e.value)?;
            }
        }
    }
    Ok(())
}

/// The smallest byte string greater than every string starting with `prefix` (`None` if
/// there is none: the prefix is all `0xff`).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Calls `f` on every entry whose key starts with `prefix`, in key order.
pub fn scan_prefix(objs: &Objects, root: Option<Hash>, prefix: &[u8], f: &mut Visitor<'_>) -> Result<(), GraphError> {
    let end = prefix_end(prefix);
    range(objs, root, prefix, end.as_deref(), f)
}

/// The differences between the trees at `a` and `b`, in key order. Subtrees with equal
/// hashes on both sides are skipped without being read.
pub fn diff(objs: &Objects, a: Option<Hash>, b: Option<Hash>) -> Result<Vec<Change>, GraphError> {
    enum Item {
        Entry(Vec<u8>, Hash),
        Sub(Hash),
    }
    fn expand(objs: &Objects, stack: &mut Vec<Item>) -> Result<(), GraphError> {
        let Some(Item::Sub(h)) = stack.pop() else {
            return Ok(());
        };
        let t = objs.tree(&h)?;
        for e in t.entries.iter().rev() {
            if let Some(r) = e.right {
                stack.push(Item::Sub(r));
            }
            stack.push(Item::Entry(e.key.clone(), e.value));
        }
        if let Some(l) = t.left {
            stack.push(Item::Sub(l));
        }
        Ok(())
    }
    let mut sa: Vec<Item> = a.into_iter().map(Item::Sub).collect();
    let mut sb: Vec<Item> = b.into_iter().map(Item::Sub).collect();
    let mut out = Vec::new();
    loop {
        match (sa.last(), sb.last()) {
            (None, None) => break,
            (Some(Item::Sub(x)), Some(Item::Sub(y))) => {
                if x == y {
                    sa.pop();
                    sb.pop();
                } else {
                    // Expand the higher subtree first so equal subtrees line up.
                    let (lx, ly) = (objs.tree(x)?.level, objs.tree(y)?.level);
                    if lx >= ly {
                        expand(objs, &mut sa)?;
                    }
                    if ly >= lx {
                        expand(objs, &mut sb)?;
                    }
                }
            }
            (Some(Item::Sub(_)), _) => expand(objs, &mut sa)?,
            (_, Some(Item::Sub(_))) => expand(objs, &mut sb)?,
            (Some(Item::Entry(ka, va)), Some(Item::Entry(kb, vb))) => match ka.cmp(kb) {
                Ordering::Less => {
                    out.push(Change {
                        key: ka.clone(),
                        before: Some(*va),
                        after: None,
                    });
                    sa.pop();
                }
                Ordering::Greater => {
                    out.push(Change {
                        key: kb.clone(),
                        before: None,
                        after: Some(*vb),
                    });
                    sb.pop();
                }
                Ordering::Equal => {
                    if va != vb {
                        out.push(Change {
                            key: ka.clone(),
                            before: Some(*va),
                            after: Some(*vb),
                        });
                    }
                    sa.pop();
                    sb.pop();
                }
            },
            (Some(Item::Entry(ka, va)), None) => {
                out.push(Change {
                    key: ka.clone(),
                    before: Some(*va),
                    after: None,
                });
                sa.pop();
            }
            (None, Some(Item::Entry(kb, vb))) => {
                out.push(Change {
                    key: kb.clone(),
                    before: None,
                    after: Some(*vb),
                });
                sb.pop();
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// In-memory editing: nodes on the changed paths are loaded into `MemNode`s, edited, and
// written back bottom-up by `persist`; untouched subtrees stay `Stored` and are shared.

enum Child {
    Empty,
    Stored(Hash),
    Mem(Box<MemNode>),
}

impl From<Option<Hash>> for Child {
    fn from(h: Option<Hash>) -> Child {
        h.map_or(Child::Empty, Child::Stored)
    }
}

struct MemNode {
    level: u8,
    left: Child,
    entries: Vec<MemEntry>,
}

struct MemEntry {
    key: Vec<u8>,
    value: Hash,
    right: Child,
}

impl MemNode {
    fn take_gap(&mut self, i: usize) -> Child {
        let slot = if i == 0 {
            &mut self.left
        } else {
            &mut self.entries[i - 1].right
        };
        std::mem::replace(slot, Child::Empty)
    }

    fn set_gap(&mut self, i: usize, c: Child) {
        if i == 0 {
            self.left = c;
        } else {
            self.entries[i - 1].right = c;
        }
    }

    fn find(&self, key: &[u8]) -> Result<usize, usize> {
        self.entries.binary_search_by(|e| e.key.as_slice().cmp(key))
    }
}

fn load(objs: &Objects, c: Child) -> Result<Option<MemNode>, GraphError> {
    Ok(match c {
        Child::Empty => None,
        Child::Mem(n) => Some(*n),
        Child::Stored(h) => {
            let t = objs.tree(&h)?;
            Some(MemNode {
                level: t.level,
                left: Child::from(t.left),
                entries: t
                    .entries
                    .iter()
                    .map(|e| MemEntry {
                        key: e.key.clone(),
                        value: e.value,
                        right: Child::from(e.right),
                    })
                    .collect(),
            })
        }
    })
}

fn level_of(objs: &Objects, c: &Child) -> Result<Option<u8>, GraphError> {
    Ok(match c {
        Child::Empty => None,
        Child::Mem(n) => Some(n.level),
        Child::Stored(h) => Some(objs.tree(h)?.level),
    })
}

fn mem(n: MemNode) -> Child {
    Child::Mem(Box::new(n))
}

/// Inserts or replaces `key` (whose level is `level`).
fn insert(objs: &Objects, c: Child, key: &[u8], value: Hash, level: u8) -> Result<Child, GraphError> {
    let Some(mut n) = load(objs, c)? else {
        return Ok(mem(MemNode {
            level,
            left: Child::Empty,
            entries: vec![MemEntry {
                key: key.to_vec(),
                value,
                right: Child::Empty,
            }],
        }));
    };
    if level > n.level {
        // The key becomes the only key of a new node above this one.
        let (l, r) = split(objs, mem(n), key)?;
        return Ok(mem(MemNode {
            level,
            left: l,
            entries: vec![MemEntry {
                key: key.to_vec(),
                value,
                right: r,
            }],
        }));
    }
    match n.find(key) {
        Ok(i) => n.entries[i].value = value,
        Err(i) if level == n.level => {
            let gap = n.take_gap(i);
            let (l, r) = split(objs, gap, key)?;
            n.set_gap(i, l);
            n.entries.insert(
                i,
                MemEntry {
                    key: key.to_vec(),
                    value,
                    right: r,
                },
            );
        }
        Err(i) => {
            let gap = n.take_gap(i);
            let g = insert(objs, gap, key, value, level)?;
            n.set_gap(i, g);
        }
    }
    Ok(mem(n))
}

/// Splits a subtree into the keys below `key` and the keys above it (`key` is absent).
fn split(objs: &Objects, c: Child, key: &[u8]) -> Result<(Child, Child), GraphError> {
    let Some(mut n) = load(objs, c)? else {
        return Ok((Child::Empty, Child::Empty));
    };
    let i = n.entries.partition_point(|e| e.key.as_slice() < key);
    let gap = n.take_gap(i);
    let (gl, gr) = split(objs, gap, key)?;
    let right_entries = n.entries.split_off(i);
    let right = if right_entries.is_empty() {
        gr
    } else {
        mem(MemNode {
            level: n.level,
            left: gr,
            entries: right_entries,
        })
    };
    let left = if n.entries.is_empty() {
        gl
    } else {
        n.set_gap(i, gl);
        mem(n)
    };
    Ok((left, right))
}

/// Deletes `key` (whose level is `level`), if present.
fn delete(objs: &Objects, c: Child, key: &[u8], level: u8) -> Result<Child, GraphError> {
    let Some(mut n) = load(objs, c)? else {
        return Ok(Child::Empty);
    };
    match n.find(key) {
        Ok(i) => {
            let removed = n.entries.remove(i);
            let before = n.take_gap(i);
            let merged = merge(objs, before, removed.right)?;
            if n.entries.is_empty() {
                return Ok(merged);
            }
            n.set_gap(i, merged);
        }
        Err(i) if level < n.level => {
            let gap = n.take_gap(i);
            let g = delete(objs, gap, key, level)?;
            n.set_gap(i, g);
        }
        Err(_) => {}
    }
    Ok(mem(n))
}

/// Joins two subtrees where every key of `a` is below every key of `b`.
fn merge(objs: &Objects, a: Child, b: Child) -> Result<Child, GraphError> {
    let (la, lb) = match (level_of(objs, &a)?, level_of(objs, &b)?) {
        (None, _) => return Ok(b),
        (_, None) => return Ok(a),
        (Some(la), Some(lb)) => (la, lb),
    };
    if la > lb {
        let mut an = load(objs, a)?.expect("non-empty: has a level");
        let last = an.entries.len();
        let g = an.take_gap(last);
        let m = merge(objs, g, b)?;
        an.set_gap(last, m);
        Ok(mem(an))
    } else if lb > la {
        let mut bn = load(objs, b)?.expect("non-empty: has a level");
        let g = bn.take_gap(0);
        let m = merge(objs, a, g)?;
        bn.set_gap(0, m);
        Ok(mem(bn))
    } else {
        let mut an = load(objs, a)?.expect("non-empty: has a level");
        let mut bn = load(objs, b)?.expect("non-empty: has a level");
        let last = an.entries.len();
        let ga = an.take_gap(last);
        let gb = bn.take_gap(0);
        let m = merge(objs, ga, gb)?;
        an.set_gap(last, m);
        an.entries.append(&mut bn.entries);
        Ok(mem(an))
    }
}

/// Writes the edited nodes bottom-up; returns the root hash.
fn persist(c: Child, out: &mut PendingWrites) -> Option<Hash> {
    match c {
        Child::Empty => None,
        Child::Stored(h) => Some(h),
        Child::Mem(n) => {
            let n = *n;
            let left = persist(n.left, out);
            let entries = n
                .entries
                .into_iter()
                .map(|e| TreeEntry {
                    key: e.key,
                    value: e.value,
                    right: persist(e.right, out),
                })
                .collect();
            Some(out.add_tree(&TreeNode {
                level: n.level,
                left,
                entries,
            }))
        }
    }
}

/// The `(key, value)` entries of a tree in key order, read lazily: memory holds one path
/// from the root (a few tree nodes), whatever the size of the tree. [`for_each`] as an
/// iterator, for walks that must stop early or interleave with other work.
pub struct Entries<'a> {
    objs: &'a Objects,
    /// Per open tree node: the node, the next gap or entry to visit (`2i`: gap i,
    /// `2i + 1`: entry i).
    stack: Vec<(Arc<TreeNode>, usize)>,
    /// The root, until it is first read.
    root: Option<Hash>,
    /// After an error: nothing more.
    done: bool,
}

/// Iterates over the entries of the tree at `root` in key order.
pub fn entries(objs: &Objects, root: Option<Hash>) -> Entries<'_> {
    Entries {
        objs,
        stack: Vec::new(),
        root,
        done: false,
    }
}

impl Iterator for Entries<'_> {
    type Item = Result<(Vec<u8>, Hash), GraphError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut descend = self.root.take();
        loop {
            if let Some(h) = descend.take() {
                match self.objs.tree(&h) {
                    Ok(t) => self.stack.push((t, 0)),
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
            }
            let (t, pos) = self.stack.last_mut()?;
            let i = *pos / 2;
            if pos.is_multiple_of(2) {
                // Gap i, then entry i.
                *pos += 1;
                descend = gap_of(t, i);
                if i == t.entries.len() {
                    // The last gap: nothing follows it in this node, which is done.
                    self.stack.pop();
                }
                continue;
            }
            *pos += 1;
            let e = &t.entries[i];
            return Some(Ok((e.key.clone(), e.value)));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use cairn_store::{MemoryStore, Store};
    use proptest::prelude::*;

    use super::*;

    fn objs() -> Objects {
        Objects::new(Arc::new(MemoryStore::new()))
    }

    fn val(k: &[u8], salt: u8) -> Hash {
        let mut b = k.to_vec();
        b.push(salt);
        Hash::of(&b)
    }

    fn write(o: &Objects, out: PendingWrites) {
        out.flush_to(o.store().as_ref() as &dyn Store).unwrap();
    }

    fn apply_all(
        o: &Objects,
        root: Option<Hash>,
        muts: &BTreeMap<Vec<u8>, Mutation>,
        hint: Option<u64>,
    ) -> Option<Hash> {
        let mut out = PendingWrites::new();
        let r = apply(o, root, muts, hint, &mut out).unwrap();
        write(o, out);
        r
    }

    fn contents(o: &Objects, root: Option<Hash>) -> Vec<(Vec<u8>, Hash)> {
        let mut v = Vec::new();
        for_each(o, root, &mut |k, h| {
            v.push((k.to_vec(), *h));
            Ok(())
        })
        .unwrap();
        v
    }

    fn build_all(o: &Objects, entries: &[(Vec<u8>, Hash)]) -> Option<Hash> {
        let mut out = PendingWrites::new();
        let r = build(entries, &mut out);
        write(o, out);
        r
    }

    fn key(i: u32) -> Vec<u8> {
        format!("node-{i:06}").into_bytes()
    }

    #[test]
    fn get_build_and_scan() {
        let o = objs();
        let entries: Vec<_> = (0..2000).map(|i| (key(i), val(&key(i), 0))).collect();
        let root = build_all(&o, &entries);
        assert_eq!(contents(&o, root), entries);
        for i in [0, 1, 999, 1999] {
            assert_eq!(get(&o, root, &key(i)).unwrap(), Some(val(&key(i), 0)));
        }
        assert_eq!(get(&o, root, b"nope").unwrap(), None);
        let mut seen = Vec::new();
        scan_prefix(&o, root, b"node-0001", &mut |k, _| {
            seen.push(k.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, (100..200).map(key).collect::<Vec<_>>());
    }

    #[test]
    fn small_change_writes_few_nodes() {
        let o = objs();
        let entries: Vec<_> = (0..50_000).map(|i| (key(i), val(&key(i), 0))).collect();
        let root = build_all(&o, &entries);
        let mut muts = BTreeMap::new();
        muts.insert(key(25_000), Mutation::Put(val(&key(25_000), 1)));
        let mut out = PendingWrites::new();
        let r2 = apply(&o, root, &muts, Some(50_000), &mut out).unwrap();
        // Path copy only: a handful of nodes, a few KiB.
        assert!(out.len() <= 12, "wrote {} nodes", out.len());
        assert!(out.byte_len() < 16 * 1024, "wrote {} bytes", out.byte_len());
        write(&o, out);
        let d = diff(&o, root, r2).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].key, key(25_000));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Same set ⇒ same root, whatever the order and batching of writes.
        #[test]
        fn root_is_history_independent(
            keys in proptest::collection::vec(0u32..400, 0..200),
            dels in proptest::collection::vec(0u32..400, 0..80),
            chunk in 1usize..40,
        ) {
            let o = objs();
            // Path A: insert in the given order in chunks, then delete.
            let mut root = None;
            for c in keys.chunks(chunk) {
                let muts: BTreeMap<_, _> = c.iter().map(|&i| (key(i), Mutation::Put(val(&key(i), 0)))).collect();
                root = apply_all(&o, root, &muts, None);
            }
            for c in dels.chunks(chunk) {
                let muts: BTreeMap<_, _> = c.iter().map(|&i| (key(i), Mutation::Delete)).collect();
                root = apply_all(&o, root, &muts, None);
            }
            // Path B: build the final set directly.
            let final_set: BTreeSet<u32> = keys.iter().copied().filter(|k| !dels.contains(k)).collect();
            let entries: Vec<_> = final_set.iter().map(|&i| (key(i), val(&key(i), 0))).collect();
            let built = build_all(&o, &entries);
            prop_assert_eq!(root, built);
            prop_assert_eq!(contents(&o, root), entries.clone());
            // Path C: reverse order, one key per commit.
            let mut root_c = None;
            for &i in final_set.iter().rev() {
                let muts: BTreeMap<_, _> = [(key(i), Mutation::Put(val(&key(i), 0)))].into();
                root_c = apply_all(&o, root_c, &muts, None);
            }
            prop_assert_eq!(root_c, built);
            // Path D: the rebuild path (large batch relative to the hint).
            let muts: BTreeMap<_, _> = entries.iter().map(|(k, v)| (k.clone(), Mutation::Put(*v))).collect();
            let root_d = apply_all(&o, None, &muts, Some(0));
            prop_assert_eq!(root_d, built);
        }

        /// diff equals a naive comparison of the two key sets.
        #[test]
        fn diff_matches_naive(
            a in proptest::collection::btree_map(0u32..300, 0u8..3, 0..150),
            b in proptest::collection::btree_map(0u32..300, 0u8..3, 0..150),
        ) {
            let o = objs();
            let ea: Vec<_> = a.iter().map(|(&i, &s)| (key(i), val(&key(i), s))).collect();
            let eb: Vec<_> = b.iter().map(|(&i, &s)| (key(i), val(&key(i), s))).collect();
            let ra = build_all(&o, &ea);
            let rb = build_all(&o, &eb);
            let got = diff(&o, ra, rb).unwrap();
            let ma: BTreeMap<_, _> = ea.into_iter().collect();
            let mb: BTreeMap<_, _> = eb.into_iter().collect();
            let keys: BTreeSet<_> = ma.keys().chain(mb.keys()).cloned().collect();
            let want: Vec<Change> = keys
                .into_iter()
                .filter_map(|k| {
                    let (x, y) = (ma.get(&k).copied(), mb.get(&k).copied());
                    (x != y).then_some(Change { key: k, before: x, after: y })
                })
                .collect();
            prop_assert_eq!(got, want);
        }
    }
}
