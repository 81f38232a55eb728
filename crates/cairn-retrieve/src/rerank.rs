//! Reranking: an optional model that rescores the top `rerank_top_n` items.
//!
//! The reranker returns one score per candidate; the top items are reordered by
//! `(rerank score desc, node id asc)` and the rest keep their places. If the reranker
//! fails — an `Err`, the wrong number of scores, or a non-finite score — the order stands
//! and the result carries a `rerank_failed` warning.

mod term_overlap;

use std::fmt;

use cairn_core::{Node, NodeId};

pub use term_overlap::TermOverlapReranker;

/// One item offered to a reranker.
#[derive(Debug, Clone, Copy)]
pub struct RerankCandidate<'a> {
    /// The node's id.
    pub id: &'a NodeId,
    /// The whole node.
    pub node: &'a Node,
    /// Its retrieval score (fused, or on the expansion scale).
    pub score: f64,
}

/// Why a reranker could not score the candidates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RerankError {
    /// What went wrong, for the warning.
    pub message: String,
}

impl RerankError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> RerankError {
        RerankError {
            message: message.into(),
        }
    }
}

impl fmt::Display for RerankError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RerankError {}

/// Rescores the top candidates of a retrieval (a cross-encoder, an LLM judge, ...).
///
/// Contract: `rerank` returns exactly one finite score per candidate, in the candidates'
/// order, higher is better. It must be deterministic for byte-identical results (same
/// query and candidates ⇒ same scores). It may be called from several threads at once.
pub trait Reranker: Send + Sync {
    /// Scores `candidates` (best-first by retrieval score) for `query` (the spec's `text`,
    /// `None` for a vector-only query).
    fn rerank(&self, query: Option<&str>, candidates: &[RerankCandidate<'_>]) -> Result<Vec<f64>, RerankError>;
}

/// Runs `reranker` and returns the new order of `0..candidates.len()` with each position's
/// rerank score, or the reason it failed.
pub(crate) fn rerank_order(
    reranker: &dyn Reranker,
    query: Option<&str>,
    candidates: &[RerankCandidate<'_>],
) -> Result<Vec<(usize, f64)>, RerankError> {
    let scores = reranker.rerank(query, candidates)?;
    if scores.len() != candidates.len() {
        return Err(RerankError::new(format!(
            "returned {} scores for {} candidates",
            scores.len(),
            candidates.len()
        )));
    }
    if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
        return Err(RerankError::new(format!(
            "returned a non-finite score for candidate {i}"
        )));
    }
    let mut order: Vec<(usize, f64)> = scores.into_iter().enumerate().collect();
    order.sort_by(|(a, sa), (b, sb)| sb.total_cmp(sa).then_with(|| candidates[*a].id.cmp(candidates[*b].id)));
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Result<Vec<f64>, RerankError>);
    impl Reranker for Fixed {
        fn rerank(&self, _: Option<&str>, _: &[RerankCandidate<'_>]) -> Result<Vec<f64>, RerankError> {
            self.0.clone()
        }
    }

    fn nodes(ids: &[&str]) -> Vec<Node> {
        ids.iter().map(|i| Node::new(NodeId::new(*i).unwrap())).collect()
    }

    fn cands(nodes: &[Node]) -> Vec<RerankCandidate<'_>> {
        nodes
            .iter()
            .enumerate()
            .map(|(i, n)| RerankCandidate {
                id: &n.id,
                node: n,
                score: 1.0 / (i + 1) as f64,
            })
            .collect()
    }

    #[test]
    fn reorders_by_score_then_id() {
        let ns = nodes(&["c", "a", "b"]);
        let order = rerank_order(&Fixed(Ok(vec![0.5, 0.5, 0.9])), Some("q"), &cands(&ns)).unwrap();
        // b (0.9), then a and c tie at 0.5 → id order a, c.
        assert_eq!(order, vec![(2, 0.9), (1, 0.5), (0, 0.5)]);
    }

    #[test]
    fn failures_are_reported() {
        let ns = nodes(&["a", "b"]);
        let c = cands(&ns);
        assert_eq!(
            rerank_order(&Fixed(Err(RerankError::new("model offline"))), None, &c)
                .unwrap_err()
                .message,
            "model offline"
        );
        assert!(rerank_order(&Fixed(Ok(vec![1.0])), None, &c)
            .unwrap_err()
            .message
            .contains("1 scores for 2"));
        assert!(rerank_order(&Fixed(Ok(vec![1.0, f64::NAN])), None, &c)
            .unwrap_err()
            .message
            .contains("non-finite"));
    }
}
