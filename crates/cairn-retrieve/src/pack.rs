//! Packing: walk the ranked list in order, render each item, and keep it if it fits the
//! token budget — greedily, never reordering. An item that does not fit is skipped (and
//! counted as dropped); a later, smaller item may still fit. Packing stops once `limit`
//! items are kept, or the list ends, or the budget is used up exactly — then every item
//! not yet considered counts as dropped without being rendered (with the default
//! estimator no rendered item costs 0 tokens, so none of them could have fit).

use crate::tokens::TokenEstimator;

// `TokenEstimator::lower_bound` is what callers pass as `min_tokens`.

/// A kept item: its position in the ranked list, its rendered text and its token estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PackedItem {
    /// Position in the ranked list (0-based).
    pub position: usize,
    /// Rendered text.
    pub text: String,
    /// Estimated tokens of `text`.
    pub tokens: usize,
}

/// What packing kept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Packed {
    /// Kept items, in rank order.
    pub items: Vec<PackedItem>,
    /// Sum of the kept items' tokens.
    pub tokens_used: usize,
    /// Items skipped because they did not fit, among those considered before `limit` was
    /// reached (plus, once the budget is used up exactly, all the items after).
    pub dropped: usize,
}

/// Packs `len` ranked items; `render(i)` renders the item at position `i`, and
/// `min_tokens(i)` is a lower bound of its estimate ([`TokenEstimator::lower_bound`] of its
/// fewest possible characters; 0 claims nothing). An item whose bound exceeds what is left
/// of the budget is dropped without being rendered, and once no item left can fit, all
/// are dropped at once: the same result as rendering each, for a fraction of the work.
pub(crate) fn pack<E>(
    len: usize,
    limit: usize,
    budget_tokens: Option<usize>,
    estimator: &dyn TokenEstimator,
    min_tokens: impl Fn(usize) -> usize,
    mut render: impl FnMut(usize) -> Result<String, E>,
) -> Result<Packed, E> {
    let mut packed = Packed::default();
    // Each position's bound, and the smallest bound from each position on (with a budget).
    let (bounds, suffix_min): (Vec<usize>, Vec<usize>) = match budget_tokens {
        None => (Vec::new(), Vec::new()),
        Some(_) => {
            let bounds: Vec<usize> = (0..len).map(&min_tokens).collect();
            let mut suffix = vec![usize::MAX; len + 1];
            for (i, b) in bounds.iter().enumerate().rev() {
                suffix[i] = suffix[i + 1].min(*b);
            }
            (bounds, suffix)
        }
    };
    for position in 0..len {
        if packed.items.len() >= limit {
            break;
        }
        if let Some(b) = budget_tokens {
            let left = b - packed.tokens_used;
            if suffix_min.get(position).is_some_and(|&m| m > left) {
                packed.dropped += len - position;
                break;
            }
            if bounds.get(position).is_some_and(|&m| m > left) {
                packed.dropped += 1;
                continue;
            }
        }
        let text = render(position)?;
        let tokens = estimator.estimate(&text);
        if budget_tokens.is_some_and(|b| packed.tokens_used.saturating_add(tokens) > b) {
            packed.dropped += 1;
            continue;
        }
        packed.tokens_used += tokens;
        packed.items.push(PackedItem { position, text, tokens });
        if budget_tokens == Some(packed.tokens_used) && packed.items.len() < limit {
            packed.dropped += len - position - 1;
            break;
        }
    }
    Ok(packed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::CharRatioEstimator;

    /// One char = one token.
    const ONE: CharRatioEstimator = CharRatioEstimator { chars_per_token: 1 };

    fn run(sizes: &[usize], limit: usize, budget: Option<usize>) -> (Vec<usize>, usize, usize) {
        let p = pack::<()>(sizes.len(), limit, budget, &ONE, |_| 0, |i| Ok("x".repeat(sizes[i]))).unwrap();
        let q = pack::<()>(
            sizes.len(),
            limit,
            budget,
            &ONE,
            |i| sizes[i],
            |i| Ok("x".repeat(sizes[i])),
        )
        .unwrap();
        assert_eq!(p, q, "the bound changes nothing");
        (p.items.iter().map(|i| i.position).collect(), p.tokens_used, p.dropped)
    }

    #[test]
    fn skips_too_big_items_without_reordering() {
        assert_eq!(run(&[5, 8, 3, 2, 9], 10, Some(10)), (vec![0, 2, 3], 10, 2));
    }

    #[test]
    fn a_full_budget_stops_packing() {
        let mut rendered = 0;
        let p = pack::<()>(
            5,
            10,
            Some(8),
            &ONE,
            |_| 0,
            |i| {
                rendered += 1;
                Ok("x".repeat([5, 3, 1, 1, 1][i]))
            },
        )
        .unwrap();
        assert_eq!((p.items.len(), p.tokens_used, p.dropped, rendered), (2, 8, 3, 2));
    }

    #[test]
    fn limit_caps_and_stops_counting() {
        assert_eq!(run(&[5, 8, 3, 2, 9], 2, Some(10)), (vec![0, 2], 8, 1));
        assert_eq!(run(&[5, 8, 3], 2, None), (vec![0, 1], 13, 0));
    }

    #[test]
    fn unlimited_budget_keeps_everything_up_to_limit() {
        assert_eq!(run(&[100, 200], 10, None), (vec![0, 1], 300, 0));
        assert_eq!(run(&[], 10, Some(1)), (vec![], 0, 0));
    }

    #[test]
    fn render_errors_propagate() {
        let r = pack(
            3,
            10,
            None,
            &ONE,
            |_| 0,
            |i| {
                if i == 1 {
                    Err("boom")
                } else {
                    Ok("x".to_string())
                }
            },
        );
        assert_eq!(r, Err("boom"));
    }
}
