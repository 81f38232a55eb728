//! The content-defined chunking rule, over a sorted key list (`storage-format.md` §7.2).
//!
//! Cairn's trees are Merkle search trees: a key's level is a function of its bytes
//! ([`key_level`](cairn_core::level::key_level)), and the tree of a key set is a function of
//! the set alone. Indexes are cut along the same lines, so that their layout is a function
//! of content, never of history:
//!
//! * A **span at level `L`** starts at every key of level ≥ `L` (its *head*) and holds the
//!   keys after it up to the next such key (its *gap*). Keys before the first head form a
//!   leading span without a head. In the tree, a span's gap is exactly one subtree (the
//!   tree's shape is defined by the levels), so a span is named by its head's value and
//!   its gap's root hash — the same in every commit, branch or history holding those keys.
//! * An **oversize** span (more than `max_keys` keys, or more than `max_bytes` bytes of
//!   node objects) is split by a rule over its own content: its gap's subtree root holds
//!   the gap's keys of the highest level `r`; the span becomes the pieces (head, keys
//!   before the first level-`r` key), (each level-`r` key, the keys up to the next one). In
//!   the tree those are the root's `left` and each entry with its `right` subtree, so a
//!   piece is again a span: a head and one subtree. Pieces are split again while oversize;
//!   a single key never is.
//!
//! This module computes the rule from the keys' levels alone; the repository computes the
//! same spans by walking the upper levels of a tree (tested to agree), which also gives
//! each span its subtree hash.

use std::ops::Range;

/// One span of a sorted key list: an optional head (an index into the list) and the gap
/// after it (a range of indices). The span's keys are `head` then `gap`, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The head key's index (`None` for the leading span or a piece without a head).
    pub head: Option<usize>,
    /// The gap's keys.
    pub gap: Range<usize>,
}

impl Span {
    /// The first index and one past the last: the span covers `start..end`.
    pub fn range(&self) -> Range<usize> {
        self.head.unwrap_or(self.gap.start)..self.gap.end
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.gap.len()
    }

    /// True for a span without keys (never returned by [`spans`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The limits above which a span is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitRule {
    /// Most keys in one span.
    pub max_keys: usize,
    /// Most bytes (as the caller counts them) in one span.
    pub max_bytes: usize,
}

impl SplitRule {
    /// True if a span of `keys` keys and `bytes` bytes must be split (if it can be: a span
    /// with an empty gap cannot).
    pub fn oversize(&self, keys: usize, bytes: usize) -> bool {
        keys > self.max_keys || bytes > self.max_bytes
    }
}

/// The spans at `level` of a sorted key list whose levels are `levels` and whose sizes in
/// bytes are `bytes` (same length), in key order, every key in exactly one span.
///
/// ```
/// use cairn_index::chunking::{spans, Span, SplitRule};
/// let levels = [0, 2, 0, 0, 3, 1];
/// let rule = SplitRule { max_keys: 100, max_bytes: usize::MAX };
/// let got = spans(&levels, &[1; 6], 2, rule);
/// assert_eq!(got, vec![
///     Span { head: None, gap: 0..1 },
///     Span { head: Some(1), gap: 2..4 },
///     Span { head: Some(4), gap: 5..6 },
/// ]);
/// ```
pub fn spans(levels: &[u8], bytes: &[usize], level: u8, rule: SplitRule) -> Vec<Span> {
    debug_assert_eq!(levels.len(), bytes.len());
    let mut out = Vec::new();
    let heads: Vec<usize> = (0..levels.len()).filter(|&i| levels[i] >= level).collect();
    let first = heads.first().copied().unwrap_or(levels.len());
    if first > 0 {
        split_into(
            levels,
            bytes,
            Span {
                head: None,
                gap: 0..first,
            },
            rule,
            &mut out,
        );
    }
    for (j, &h) in heads.iter().enumerate() {
        let end = heads.get(j + 1).copied().unwrap_or(levels.len());
        split_into(
            levels,
            bytes,
            Span {
                head: Some(h),
                gap: h + 1..end,
            },
            rule,
            &mut out,
        );
    }
    out
}

/// Pushes `span`, or its pieces if it is oversize (recursively).
fn split_into(levels: &[u8], bytes: &[usize], span: Span, rule: SplitRule, out: &mut Vec<Span>) {
    let size: usize = span.range().map(|i| bytes[i]).sum();
    if span.gap.is_empty() || !rule.oversize(span.len(), size) {
        out.push(span);
        return;
    }
    for piece in pieces(levels, &span) {
        split_into(levels, bytes, piece, rule, out);
    }
}

/// The pieces of a span with a non-empty gap: cut at the gap's keys of its highest level.
pub fn pieces(levels: &[u8], span: &Span) -> Vec<Span> {
    let gap = span.gap.clone();
    let top = gap.clone().map(|i| levels[i]).max().unwrap_or(0);
    let cuts: Vec<usize> = gap.clone().filter(|&i| levels[i] == top).collect();
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let first = cuts.first().copied().unwrap_or(gap.end);
    if span.head.is_some() || first > gap.start {
        out.push(Span {
            head: span.head,
            gap: gap.start..first,
        });
    }
    for (j, &c) in cuts.iter().enumerate() {
        let end = cuts.get(j + 1).copied().unwrap_or(gap.end);
        out.push(Span {
            head: Some(c),
            gap: c + 1..end,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check_partition(levels: &[u8], got: &[Span]) {
        let mut next = 0;
        for s in got {
            assert!(!s.is_empty());
            assert_eq!(s.range().start, next, "{got:?}");
            next = s.range().end;
        }
        assert_eq!(next, levels.len());
    }

    #[test]
    fn oversize_spans_split_at_their_top_level() {
        // One span of 10 keys (no head): gap levels peak at 1 twice.
        let levels = [0, 0, 1, 0, 0, 0, 1, 0, 0, 0];
        let rule = SplitRule {
            max_keys: 4,
            max_bytes: usize::MAX,
        };
        let got = spans(&levels, &[1; 10], 2, rule);
        check_partition(&levels, &got);
        assert_eq!(
            got,
            vec![
                Span { head: None, gap: 0..2 },
                Span {
                    head: Some(2),
                    gap: 3..6
                },
                // 4 keys: fits
                Span {
                    head: Some(6),
                    gap: 7..10
                },
            ]
        );
        // A byte limit splits too, down to single keys.
        let got = spans(
            &levels,
            &[10; 10],
            2,
            SplitRule {
                max_keys: 100,
                max_bytes: 15,
            },
        );
        check_partition(&levels, &got);
        assert!(got.iter().all(|s| s.len() == 1), "{got:?}");
    }

    proptest! {
        #[test]
        fn spans_partition_and_respect_limits(
            levels in proptest::collection::vec(prop_oneof![6 => Just(0u8), 3 => Just(1u8), 2 => Just(2u8), 1 => Just(3u8)], 0..300),
            max_keys in 1usize..40,
        ) {
            let bytes = vec![1; levels.len()];
            let rule = SplitRule { max_keys, max_bytes: usize::MAX };
            let got = spans(&levels, &bytes, 2, rule);
            check_partition(&levels, &got);
            for s in &got {
                prop_assert!(s.len() <= max_keys || s.gap.is_empty());
                if let Some(h) = s.head {
                    prop_assert!(h + 1 == s.gap.start);
                }
                // A span never crosses a key of level >= 2 except at its head.
                prop_assert!(s.gap.clone().all(|i| levels[i] < 2));
            }
        }
    }
}
