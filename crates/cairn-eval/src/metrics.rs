//! Ranking metrics, pure functions.
//!
//! Metrics follow `trec_eval`: nDCG@k with gain = the qrels score and discount
//! `1 / log2(rank + 1)` (ranks from 1), the ideal ranking built from every judged document
//! with a score above 0; Recall@k = relevant documents in the top `k` / all relevant
//! documents. A query with no relevant document has no value (`None`) and is skipped when
//! averaging.

use std::collections::BTreeMap;

/// nDCG@k of `ranked_ids` (best first, no duplicates) against one query's judgments
/// (`doc id → score`; scores ≤ 0 gain nothing). `None` if no document is relevant.
///
/// ```
/// use std::collections::BTreeMap;
/// use cairn_eval::ndcg_at_k;
/// let qrels = BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 1)]);
/// let perfect = ndcg_at_k(&["a".into(), "b".into(), "c".into()], &qrels, 10).unwrap();
/// assert!((perfect - 1.0).abs() < 1e-12);
/// assert_eq!(ndcg_at_k(&["c".into()], &qrels, 10), Some(0.0));
/// assert_eq!(ndcg_at_k(&["a".into()], &BTreeMap::new(), 10), None);
/// ```
pub fn ndcg_at_k(ranked_ids: &[String], qrels: &BTreeMap<String, i64>, k: usize) -> Option<f64> {
    let mut ideal: Vec<i64> = qrels.values().copied().filter(|s| *s > 0).collect();
    if ideal.is_empty() {
        return None;
    }
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 = ranked_ids
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, id)| qrels.get(id).copied().unwrap_or(0).max(0) as f64 * discount(i))
        .sum();
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, g)| *g as f64 * discount(i))
        .sum();
    Some(dcg / idcg)
}

/// Recall@k: relevant documents (score > 0) among the first `k` of `ranked_ids`, over all
/// relevant documents. `None` if no document is relevant.
///
/// ```
/// use std::collections::BTreeMap;
/// use cairn_eval::recall_at_k;
/// let qrels = BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 2), ("c".to_string(), 0)]);
/// assert_eq!(recall_at_k(&["x".into(), "b".into(), "c".into()], &qrels, 2), Some(0.5));
/// ```
pub fn recall_at_k(ranked_ids: &[String], qrels: &BTreeMap<String, i64>, k: usize) -> Option<f64> {
    let relevant = qrels.values().filter(|s| **s > 0).count();
    if relevant == 0 {
        return None;
    }
    let found = ranked_ids
        .iter()
        .take(k)
        .filter(|id| qrels.get(*id).is_some_and(|s| *s > 0))
        .count();
    Some(found as f64 / relevant as f64)
}

/// The mean of the values present (`None` values — queries without relevant documents —
/// are skipped); 0 if there are none.
pub fn mean(values: impl IntoIterator<Item = Option<f64>>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .flatten()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn ndcg_by_hand() {
        let qrels = BTreeMap::from([("a".to_string(), 2), ("b".to_string(), 1), ("z".to_string(), 0)]);
        // Ranking: x, a, b → DCG = 2/log2(3) + 1/log2(4); IDCG = 2/log2(2) + 1/log2(3).
        let got = ndcg_at_k(&ids(&["x", "a", "b"]), &qrels, 10).unwrap();
        let want = (2.0 / 3f64.log2() + 1.0 / 2.0) / (2.0 + 1.0 / 3f64.log2());
        assert!((got - want).abs() < 1e-12);
        // Cut at k = 1: nothing relevant in the top 1.
        assert_eq!(ndcg_at_k(&ids(&["x", "a"]), &qrels, 1), Some(0.0));
        // Judged non-relevant and negative scores gain nothing.
        let neg = BTreeMap::from([("a".to_string(), 1), ("n".to_string(), -1)]);
        assert_eq!(ndcg_at_k(&ids(&["n", "a"]), &neg, 10), Some(1.0 / 3f64.log2()));
    }

    #[test]
    fn recall_by_hand() {
        let qrels = BTreeMap::from([
            ("a".to_string(), 1),
            ("b".to_string(), 1),
            ("c".to_string(), 1),
            ("d".to_string(), 0),
        ]);
        assert_eq!(recall_at_k(&ids(&["a", "d", "c"]), &qrels, 3), Some(2.0 / 3.0));
        assert_eq!(recall_at_k(&ids(&["a", "d", "c"]), &qrels, 1), Some(1.0 / 3.0));
        assert_eq!(recall_at_k(&ids(&[]), &qrels, 10), Some(0.0));
        assert_eq!(
            recall_at_k(&ids(&["a"]), &BTreeMap::from([("a".to_string(), 0)]), 10),
            None
        );
    }

    #[test]
    fn mean_skips_missing() {
        assert_eq!(mean([Some(1.0), None, Some(0.0)]), 0.5);
        assert_eq!(mean([None]), 0.0);
    }
}
