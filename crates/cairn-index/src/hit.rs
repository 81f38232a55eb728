//! Ranked hits and the one top-k routine every index uses.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A node's position in its commit's id-sorted node list.
pub type Ordinal = u32;

/// One ranked candidate: an ordinal and its exact score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The node's ordinal in the commit.
    pub ordinal: Ordinal,
    /// Exact score (higher is better). Never NaN.
    pub score: f32,
}

/// The ranking order: `Less` means `a` ranks before `b` (higher score, then lower ordinal).
/// A total order because `f32::total_cmp` is one.
pub fn rank_order(a: &Hit, b: &Hit) -> Ordering {
    b.score.total_cmp(&a.score).then(a.ordinal.cmp(&b.ordinal))
}

/// A hit ordered by rank, so that a max-heap keeps the *worst* kept hit on top.
struct ByRank(Hit);

impl PartialEq for ByRank {
    fn eq(&self, other: &Self) -> bool {
        rank_order(&self.0, &other.0) == Ordering::Equal
    }
}
impl Eq for ByRank {}
impl PartialOrd for ByRank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByRank {
    fn cmp(&self, other: &Self) -> Ordering {
        rank_order(&self.0, &other.0)
    }
}

/// The `k` best hits in `(score desc, ordinal asc)` order.
///
/// Deterministic for any input order: the comparison is a total order (`f32::total_cmp`
/// on scores, which are never NaN, then the ordinal). A bounded heap keeps at most `k`
/// hits while the input streams by (`O(n log k)` time, `O(k)` memory).
///
/// ```
/// use cairn_index::{top_k, Hit};
/// let hits = [Hit { ordinal: 3, score: 1.0 }, Hit { ordinal: 1, score: 2.0 }, Hit { ordinal: 0, score: 1.0 }];
/// let best = top_k(hits, 2);
/// assert_eq!(best.iter().map(|h| h.ordinal).collect::<Vec<_>>(), vec![1, 0]);
/// ```
pub fn top_k(hits: impl IntoIterator<Item = Hit>, k: usize) -> Vec<Hit> {
    if k == 0 {
        return Vec::new();
    }
    let mut heap: BinaryHeap<ByRank> = BinaryHeap::new();
    for hit in hits {
        if heap.len() < k {
            heap.push(ByRank(hit));
        } else if let Some(mut worst) = heap.peek_mut() {
            if rank_order(&hit, &worst.0) == Ordering::Less {
                *worst = ByRank(hit);
            }
        }
    }
    // `into_sorted_vec` is ascending by `Ord`, i.e. best first.
    heap.into_sorted_vec().into_iter().map(|r| r.0).collect()
}

/// [`top_k`] of a vector it may reorder: a selection then a sort of the `k` kept
/// (`O(n + k log k)`), the same result as [`top_k`] (the order is total).
pub fn top_k_vec(mut hits: Vec<Hit>, k: usize) -> Vec<Hit> {
    if k == 0 {
        return Vec::new();
    }
    if hits.len() > k {
        hits.select_nth_unstable_by(k - 1, rank_order);
        hits.truncate(k);
    }
    hits.sort_unstable_by(rank_order);
    hits
}

/// A bounded top-k collector that names the worst hit it keeps once full: the bar a new
/// hit must clear (a tie on score loses to a lower ordinal).
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<ByRank>,
}

impl TopK {
    pub(crate) fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
        }
    }

    /// Offers a hit.
    pub(crate) fn push(&mut self, hit: Hit) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(ByRank(hit));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if rank_order(&hit, &worst.0) == Ordering::Less {
                *worst = ByRank(hit);
            }
        }
    }

    /// The worst kept hit's score once `k` are kept (`None` before).
    pub(crate) fn bar(&self) -> Option<f32> {
        (self.heap.len() == self.k)
            .then(|| self.heap.peek().map(|w| w.0.score))
            .flatten()
    }

    /// The kept hits, best first.
    pub(crate) fn into_sorted(self) -> Vec<Hit> {
        let mut v: Vec<Hit> = self.heap.into_iter().map(|b| b.0).collect();
        v.sort_unstable_by(rank_order);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(n: u32) -> Vec<Hit> {
        // Many ties: scores from a small set.
        (0..n)
            .map(|o| Hit {
                ordinal: o,
                score: ((o * 7919) % 13) as f32 * 0.5 - 2.0,
            })
            .collect()
    }

    fn reference(mut all: Vec<Hit>, k: usize) -> Vec<Hit> {
        all.sort_by(rank_order);
        all.truncate(k);
        all
    }

    #[test]
    fn matches_full_sort_and_ignores_input_order() {
        let all = hits(500);
        for k in [0, 1, 5, 13, 100, 499, 500, 1000] {
            let want = reference(all.clone(), k);
            assert_eq!(top_k(all.clone(), k), want);
            assert_eq!(top_k_vec(all.clone(), k), want);
            let mut rev = all.clone();
            rev.reverse();
            assert_eq!(top_k(rev, k), want);
            // a deterministic shuffle
            let mut shuffled = all.clone();
            let mut rng = cairn_testkit::Rng(0x9e37_79b9_7f4a_7c15);
            for i in (1..shuffled.len()).rev() {
                shuffled.swap(i, rng.below(i as u64 + 1) as usize);
            }
            assert_eq!(top_k(shuffled, k), want);
        }
    }

    #[test]
    fn ties_break_by_ordinal() {
        let h = |o, s| Hit { ordinal: o, score: s };
        let got = top_k([h(9, 1.0), h(2, 1.0), h(5, 3.0), h(1, -1.0), h(0, 1.0)], 3);
        assert_eq!(got, vec![h(5, 3.0), h(0, 1.0), h(2, 1.0)]);
    }
}
