//! Lanes: each asks one index for its `depth` best candidates among the gate bitmap.
//!
//! Lane names, used in the result and as fusion weight keys: `dense:<model>`,
//! `sparse:<model>`, `text` (BM25).
//!
//! The `text` lane searches its query without the conversational question words
//! ([`cairn_index::analyzer::QUESTION_WORDS`]: "when did I ..." searches what follows),
//! unless nothing else would remain; documents keep every word.

use cairn_core::SparseVector;
use cairn_index::{CommitIndexes, Filter, IndexError};

use crate::error::RetrieveError;
use crate::fusion::LaneHits;

/// One lane's query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LaneQuery {
    /// Dot product against a dense model's vectors.
    Dense {
        /// Model.
        model: String,
        /// Query vector.
        vector: Vec<f32>,
    },
    /// Dot product against a sparse model's vectors.
    Sparse {
        /// Model.
        model: String,
        /// Query vector.
        vector: SparseVector,
    },
    /// BM25 over node text.
    Text {
        /// Query text.
        query: String,
    },
}

impl LaneQuery {
    /// The lane's name.
    pub fn name(&self) -> String {
        match self {
            LaneQuery::Dense { model, .. } => format!("dense:{model}"),
            LaneQuery::Sparse { model, .. } => format!("sparse:{model}"),
            LaneQuery::Text { .. } => "text".to_string(),
        }
    }

    /// Checks what can be checked without the commit: finite dense components, sparse
    /// vector rules. Errors carry the index's error type so they read the same as the
    /// index's own checks.
    pub fn check(&self) -> Result<(), RetrieveError> {
        let err = |source| RetrieveError::Index {
            lane: self.name(),
            source,
        };
        match self {
            LaneQuery::Dense { model, vector } => {
                if vector.is_empty() {
                    return Err(RetrieveError::invalid("vector.embedding", "the query vector is empty"));
                }
                if let Some(position) = vector.iter().position(|x| !x.is_finite()) {
                    return Err(err(IndexError::NonFiniteQuery {
                        model: model.clone(),
                        position,
                    }));
                }
                Ok(())
            }
            LaneQuery::Sparse { model, vector } => vector.check().map_err(|problem| {
                err(IndexError::BadSparseQuery {
                    model: model.clone(),
                    detail: problem.to_string(),
                })
            }),
            LaneQuery::Text { query } => {
                if query.trim().is_empty() {
                    Err(RetrieveError::invalid("text", "the query text is empty"))
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// What a lane returned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LaneRun {
    /// Name and ranked hits.
    pub hits: LaneHits,
    /// True if an approximate (HNSW) index chose the candidates.
    pub approximate: bool,
}

/// Runs one lane: the `depth` best candidates among `filter` (every node if `None`). A
/// dense lane searches the unit graphs with `ann`, else exactly.
pub(crate) fn run_lane(
    indexes: &CommitIndexes,
    query: &LaneQuery,
    depth: usize,
    filter: Option<&Filter>,
    ann: bool,
) -> Result<LaneRun, RetrieveError> {
    let name = query.name();
    let err = |source| RetrieveError::Index {
        lane: name.clone(),
        source,
    };
    let (hits, approximate) = match query {
        LaneQuery::Dense { model, vector } => {
            let found = if ann {
                indexes.dense_search_ann(model, vector, depth, filter)
            } else {
                indexes.dense_search(model, vector, depth, filter)
            }
            .map_err(err)?;
            (found.hits, found.approximate)
        }
        LaneQuery::Sparse { model, vector } => {
            (indexes.sparse_search(model, vector, depth, filter).map_err(err)?, false)
        }
        LaneQuery::Text { query } => (
            indexes
                .text_search(&cairn_index::analyzer::strip_question_words(query), depth, filter)
                .map_err(err)?,
            false,
        ),
    };
    Ok(LaneRun {
        hits: LaneHits { name, hits },
        approximate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let d = LaneQuery::Dense {
            model: "minilm".into(),
            vector: vec![1.0],
        };
        assert_eq!(d.name(), "dense:minilm");
        let s = LaneQuery::Sparse {
            model: "splade".into(),
            vector: SparseVector::default(),
        };
        assert_eq!(s.name(), "sparse:splade");
        assert_eq!(LaneQuery::Text { query: "x".into() }.name(), "text");
        assert!(
            "dense:z" < "sparse:a" && "sparse:z" < "text",
            "lane order is name order"
        );
    }

    #[test]
    fn checks_without_the_commit() {
        let nan = LaneQuery::Dense {
            model: "m".into(),
            vector: vec![0.0, f32::NAN],
        };
        assert_eq!(
            nan.check(),
            Err(RetrieveError::Index {
                lane: "dense:m".into(),
                source: IndexError::NonFiniteQuery {
                    model: "m".into(),
                    position: 1
                }
            })
        );
        let unsorted = LaneQuery::Sparse {
            model: "s".into(),
            vector: SparseVector::new(vec![3, 1], vec![1.0, 1.0]),
        };
        assert!(matches!(
            unsorted.check(),
            Err(RetrieveError::Index {
                source: IndexError::BadSparseQuery { .. },
                ..
            })
        ));
        assert!(matches!(
            LaneQuery::Text { query: "  ".into() }.check(),
            Err(RetrieveError::InvalidSetting { .. })
        ));
        assert!(LaneQuery::Text { query: "wings".into() }.check().is_ok());
    }
}
