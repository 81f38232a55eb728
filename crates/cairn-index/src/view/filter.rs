//! [`Filter`]: a set of a commit's ordinals, held per chunk (local ordinals), so gates are
//! built and intersected chunk by chunk without ever materialising a global bitmap.

use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::chunk::Local;
use crate::hit::Ordinal;

/// One chunk's share of a [`Filter`].
#[derive(Debug, Clone, PartialEq)]
pub enum FilterPart {
    /// Every node of the chunk.
    All,
    /// These local ordinals (possibly none), shared with the chunk where they come from
    /// one of its columns unchanged.
    Some(Arc<RoaringBitmap>),
}

impl FilterPart {
    /// True if the part admits local ordinal `l`.
    pub fn contains(&self, l: Local) -> bool {
        match self {
            FilterPart::All => true,
            FilterPart::Some(b) => b.contains(l),
        }
    }

    /// True if the part admits nothing.
    pub fn is_none(&self) -> bool {
        matches!(self, FilterPart::Some(b) if b.is_empty())
    }

    fn intersect(&mut self, other: &FilterPart) {
        match (&mut *self, other) {
            (_, FilterPart::All) => {}
            (FilterPart::All, FilterPart::Some(b)) => *self = FilterPart::Some(Arc::clone(b)),
            (FilterPart::Some(a), FilterPart::Some(b)) => *Arc::make_mut(a) &= &**b,
        }
    }
}

/// A set of ordinals of one commit's index view, stored as one [`FilterPart`] per chunk.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The view's chunk offsets (`offsets[c]` is chunk `c`'s first ordinal; the last entry
    /// is the node count).
    pub(crate) offsets: Arc<[Ordinal]>,
    /// Shared until written (a memoised gate is handed out by clone, then intersected).
    pub(crate) parts: Arc<Vec<FilterPart>>,
    /// For a label gate a view took over from its donor's memo (`view/inherit.rs`): the
    /// donor's parts it was derived from, so the donor's memos keyed by them (a dense
    /// model's row list) can be taken over too. Cleared by any change to `parts`; never
    /// part of the filter's value (equality ignores it).
    pub(crate) origin: Option<Arc<Vec<FilterPart>>>,
}

/// Equality of the admitted ordinals' representation (the origin is a memo key).
impl PartialEq for Filter {
    fn eq(&self, other: &Self) -> bool {
        self.offsets == other.offsets && self.parts == other.parts
    }
}

impl Filter {
    /// The filter admitting every node.
    pub(crate) fn all(offsets: Arc<[Ordinal]>) -> Filter {
        let n = offsets.len().saturating_sub(1);
        Filter {
            offsets,
            parts: Arc::new(vec![FilterPart::All; n]),
            origin: None,
        }
    }

    /// Builds from one part per chunk.
    pub(crate) fn from_parts(offsets: Arc<[Ordinal]>, parts: Vec<FilterPart>) -> Filter {
        debug_assert_eq!(parts.len() + 1, offsets.len());
        Filter {
            offsets,
            parts: Arc::new(parts),
            origin: None,
        }
    }

    /// The filter admitting exactly `ordinals` (each below the node count).
    pub(crate) fn from_ordinals(offsets: Arc<[Ordinal]>, ordinals: impl IntoIterator<Item = Ordinal>) -> Filter {
        let n = offsets.len().saturating_sub(1);
        let mut parts = vec![RoaringBitmap::new(); n];
        for o in ordinals {
            let c = chunk_of(&offsets, o);
            if let Some(p) = parts.get_mut(c) {
                p.insert(o - offsets[c]);
            }
        }
        Filter {
            offsets,
            parts: Arc::new(parts.into_iter().map(|p| FilterPart::Some(Arc::new(p))).collect()),
            origin: None,
        }
    }

    /// Keeps only what `other` also admits (both of the same view).
    pub fn intersect(&mut self, other: &Filter) {
        self.origin = None;
        for (a, b) in Arc::make_mut(&mut self.parts).iter_mut().zip(other.parts.iter()) {
            a.intersect(b);
        }
    }

    /// True if the filter admits `ordinal`.
    pub fn contains(&self, ordinal: Ordinal) -> bool {
        if ordinal >= self.offsets.last().copied().unwrap_or(0) {
            return false;
        }
        let c = chunk_of(&self.offsets, ordinal);
        self.parts[c].contains(ordinal - self.offsets[c])
    }

    /// Number of ordinals admitted.
    pub fn len(&self) -> u64 {
        self.parts
            .iter()
            .enumerate()
            .map(|(c, p)| match p {
                FilterPart::All => u64::from(self.offsets[c + 1] - self.offsets[c]),
                FilterPart::Some(b) => b.len(),
            })
            .sum()
    }

    /// True if nothing is admitted.
    pub fn is_empty(&self) -> bool {
        self.parts
            .iter()
            .enumerate()
            .all(|(c, p)| p.is_none() || self.offsets[c + 1] == self.offsets[c])
    }

    /// The admitted ordinals, increasing.
    pub fn iter(&self) -> impl Iterator<Item = Ordinal> + '_ {
        self.parts.iter().enumerate().flat_map(move |(c, p)| {
            let base = self.offsets[c];
            let end = self.offsets[c + 1];
            let it: Box<dyn Iterator<Item = Ordinal> + '_> = match p {
                FilterPart::All => Box::new(base..end),
                FilterPart::Some(b) => Box::new(b.iter().map(move |l| base + l)),
            };
            it
        })
    }

    /// Chunk `c`'s part.
    pub fn part(&self, c: usize) -> &FilterPart {
        &self.parts[c]
    }
}

/// The chunk holding `ordinal` (`offsets` increasing, `offsets[0] = 0`).
pub(crate) fn chunk_of(offsets: &[Ordinal], ordinal: Ordinal) -> usize {
    offsets.partition_point(|&o| o <= ordinal).saturating_sub(1)
}
