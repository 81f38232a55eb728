//! [`Ids`]: a chunk's node ids, packed — every id's bytes in one string, one after another,
//! and where each ends — instead of one allocation per id. At 1M nodes that is 1M fewer
//! allocations and ~25 MiB less for a view's core columns, which a fresh process loads
//! whole (storage-format §7.3.1 is unchanged: the ids are stored as before).

use cairn_core::NodeId;

/// A chunk's node ids, in local order (strictly increasing), packed.
#[derive(Debug, Clone, PartialEq)]
pub struct Ids {
    bytes: String,
    /// Where id `i` ends in `bytes`.
    ends: Vec<u32>,
    /// True while every id is ASCII: an id's length in characters is then its length in
    /// bytes, known from `ends` alone (packing asks it of every candidate).
    ascii: bool,
}

impl Default for Ids {
    fn default() -> Ids {
        Ids {
            bytes: String::new(),
            ends: Vec::new(),
            ascii: true,
        }
    }
}

impl Ids {
    /// Room for `n` ids of `bytes` bytes in all.
    pub(crate) fn with_capacity(n: usize, bytes: usize) -> Ids {
        Ids {
            bytes: String::with_capacity(bytes),
            ends: Vec::with_capacity(n),
            ascii: true,
        }
    }

    /// Appends an id (the caller keeps them increasing and within the id rule).
    pub(crate) fn push(&mut self, id: &str) {
        self.bytes.push_str(id);
        self.ends.push(self.bytes.len() as u32);
        self.ascii &= id.is_ascii();
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Where id `i` lies in `bytes` (panics if `i >= len`).
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        let start = match i {
            0 => 0,
            i => self.ends[i - 1] as usize,
        };
        start..self.ends[i] as usize
    }

    /// Where id `i` ends: the bytes of ids `0..=i` (panics if `i >= len`).
    pub(crate) fn end(&self, i: usize) -> usize {
        self.ends[i] as usize
    }

    /// Id `i` (panics if `i >= len`).
    pub fn get(&self, i: usize) -> &str {
        &self.bytes[self.range(i)]
    }

    /// Id `i`'s length in characters (Unicode scalar values): for ASCII ids, without
    /// reading the id.
    pub fn chars(&self, i: usize) -> usize {
        if self.ascii {
            self.range(i).len()
        } else {
            self.get(i).chars().count()
        }
    }

    /// The first id.
    pub fn first(&self) -> Option<&str> {
        (!self.is_empty()).then(|| self.get(0))
    }

    /// The last id.
    pub fn last(&self) -> Option<&str> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    /// The ids in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Where `id` is (`Ok`), or would be inserted (`Err`), by UTF-8 bytes.
    pub fn binary_search(&self, id: &str) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid).as_bytes().cmp(id.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Id `i` as a [`NodeId`] (a copy).
    pub fn node_id(&self, i: usize) -> NodeId {
        NodeId::new(self.get(i)).expect("a chunk's ids are checked when it is built or decoded")
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_ids_read_back_and_search_like_a_sorted_list() {
        let list = ["a", "ab", "b", "doc-0000001", "doc-0000002", "z", "é"];
        let mut ids = Ids::default();
        for id in list {
            ids.push(id);
        }
        assert_eq!(ids.len(), list.len());
        assert_eq!(ids.iter().collect::<Vec<_>>(), list);
        assert_eq!((ids.first(), ids.last()), (Some("a"), Some("é")));
        for probe in [
            "",
            "a",
            "aa",
            "ab",
            "abc",
            "c",
            "doc-0000002",
            "doc-00000015",
            "é",
            "zz",
        ] {
            assert_eq!(ids.binary_search(probe), list.binary_search(&probe), "{probe}");
        }
        assert_eq!(ids.node_id(3).as_str(), "doc-0000001");
        let chars: Vec<usize> = (0..ids.len()).map(|i| ids.chars(i)).collect();
        assert_eq!(chars, list.map(|s| s.chars().count()));
        let mut ascii = Ids::default();
        ["a", "bcd", "doc-1"].iter().for_each(|id| ascii.push(id));
        assert_eq!((0..3).map(|i| ascii.chars(i)).collect::<Vec<_>>(), [1, 3, 5]);
        assert_eq!((Ids::default().first(), Ids::default().last()), (None, None));
    }
}
