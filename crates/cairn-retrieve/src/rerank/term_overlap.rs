//! [`TermOverlapReranker`]: a cheap, model-free reranker (the default implementation of
//! [`Reranker`]).

use std::collections::BTreeSet;

use cairn_index::Analyzer;

use super::{RerankCandidate, RerankError, Reranker};

/// Scores each candidate by the share of the query's distinct terms that occur in the
/// node's text (terms from the BM25 [`Analyzer`]), plus the retrieval score scaled by
/// `1e-6` as a tie-break toward the retrieval order. A vector-only query (no text) is an
/// error, so the retrieval order stands with a warning.
///
/// It exists as a dependency-free example and a baseline; a cross-encoder reranks far
/// better.
#[derive(Debug, Clone, Copy, Default)]
pub struct TermOverlapReranker {
    /// The analyzer (default: stemming on, like the BM25 index's default).
    pub analyzer: Analyzer,
}

impl Reranker for TermOverlapReranker {
    fn rerank(&self, query: Option<&str>, candidates: &[RerankCandidate<'_>]) -> Result<Vec<f64>, RerankError> {
        let query = query.ok_or_else(|| RerankError::new("term overlap needs query text"))?;
        let terms: BTreeSet<String> = self.analyzer.analyze(query).into_iter().collect();
        if terms.is_empty() {
            return Err(RerankError::new("the query text has no index terms"));
        }
        Ok(candidates
            .iter()
            .map(|c| {
                let doc: BTreeSet<String> = self.analyzer.analyze(&c.node.text).into_iter().collect();
                let shared = terms.intersection(&doc).count();
                shared as f64 / terms.len() as f64 + 1e-6 * c.score
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::{Node, NodeId};

    #[test]
    fn scores_by_shared_query_terms() {
        let nodes: Vec<Node> = [
            ("a", "Wings stall at high angles."),
            ("b", "Drag of wings."),
            ("c", "Library"),
        ]
        .iter()
        .map(|(i, t)| Node::new(NodeId::new(*i).unwrap()).with_text(*t))
        .collect();
        let cands: Vec<RerankCandidate<'_>> = nodes
            .iter()
            .map(|n| RerankCandidate {
                id: &n.id,
                node: n,
                score: 0.0,
            })
            .collect();
        let scores = TermOverlapReranker::default()
            .rerank(Some("stalling wing"), &cands)
            .unwrap();
        assert_eq!(scores, vec![1.0, 0.5, 0.0]);
        assert!(TermOverlapReranker::default().rerank(None, &cands).is_err());
        assert!(TermOverlapReranker::default().rerank(Some("the a of"), &cands).is_err());
    }
}
