//! Evaluation runs: an [`EvalRun`] ranks each query of a collection with the retrieval
//! pipeline — `limit` [`RANKED_PER_QUERY`], `text_cap` 0 (only ids are needed), validity
//! gate off — and [`evaluate`] averages nDCG@10 and Recall@100 ([`crate::metrics`]) over
//! the queries that have a relevant document.

use cairn::retrieve::{Fusion, GraphExpand, Retrieval, RetrieveError, RetrieveSpec, ValidAt, VectorQuery};
use cairn::Repo;

use crate::collection::Collection;
use crate::import::EVAL_MODEL;
use crate::metrics::{mean, ndcg_at_k, recall_at_k};

/// Items ranked per query: the depth Recall@100 needs.
pub const RANKED_PER_QUERY: usize = 100;

/// One evaluation configuration: which lanes answer each query, how they are fused,
/// whether graph expansion runs, and over how many queries.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalRun {
    /// Use the dense lane (the query's collection embedding, model [`EVAL_MODEL`]).
    pub dense: bool,
    /// Use the BM25 lane (the query's text).
    pub text: bool,
    /// Fusion settings (`None`: the retrieval default, score fusion with dense lanes as cosines, text weight 0.4).
    pub fusion: Option<Fusion>,
    /// Graph expansion (`None`: off).
    pub expand: Option<GraphExpand>,
    /// Evaluate only the first `n` queries in file order (`None`: all).
    pub limit_queries: Option<usize>,
    /// The revision to read (`None`: the current branch head).
    pub at: Option<String>,
}

impl EvalRun {
    fn lanes(dense: bool, text: bool) -> EvalRun {
        EvalRun {
            dense,
            text,
            fusion: None,
            expand: None,
            limit_queries: None,
            at: None,
        }
    }

    /// The dense lane alone.
    pub fn dense() -> EvalRun {
        EvalRun::lanes(true, false)
    }

    /// The BM25 lane alone.
    pub fn text() -> EvalRun {
        EvalRun::lanes(false, true)
    }

    /// Dense and BM25, fused by the default (score fusion with dense lanes as cosines, text weight 0.4).
    pub fn hybrid() -> EvalRun {
        EvalRun::lanes(true, true)
    }

    /// Sets the fusion.
    pub fn fusion(mut self, fusion: Fusion) -> EvalRun {
        self.fusion = Some(fusion);
        self
    }

    /// Turns on graph expansion.
    pub fn expand(mut self, expand: GraphExpand) -> EvalRun {
        self.expand = Some(expand);
        self
    }

    /// Evaluates only the first `n` queries.
    pub fn limit_queries(mut self, n: usize) -> EvalRun {
        self.limit_queries = Some(n);
        self
    }

    /// Reads revision `rev` instead of the branch head.
    pub fn at(mut self, rev: impl Into<String>) -> EvalRun {
        self.at = Some(rev.into());
        self
    }

    /// The retrieval spec of query `i` of `c` (file order): this run's lanes, fusion and
    /// expansion, [`RANKED_PER_QUERY`] items, no rendered text, no validity gate, no query
    /// embedding.
    pub fn spec(&self, c: &Collection, i: usize) -> RetrieveSpec {
        RetrieveSpec {
            text: self.text.then(|| c.queries[i].text.clone()),
            vector: self.dense.then(|| VectorQuery {
                model: EVAL_MODEL.into(),
                embedding: c.query_embedding(i).to_vec(),
            }),
            fusion: self.fusion.clone(),
            expand: self.expand.clone(),
            valid_at: Some(ValidAt::AllTime),
            at: self.at.clone(),
            limit: Some(RANKED_PER_QUERY),
            text_cap: Some(0),
            // The run's lanes are exactly the ones it names: a repository's query
            // embedder never adds a dense lane to a text-only run.
            embed: Some(false),
            ..RetrieveSpec::default()
        }
    }
}

/// The mean scores of one [`EvalRun`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct EvalScores {
    /// Mean nDCG@10 over the judged queries.
    pub ndcg10: f64,
    /// Mean Recall@100 over the judged queries.
    pub recall100: f64,
    /// Queries run.
    pub queries: usize,
    /// Queries run that have at least one relevant document (the ones averaged).
    pub judged: usize,
    /// True if an approximate (HNSW) index chose the dense candidates of any query.
    pub approximate: bool,
}

/// A query whose retrieval failed, with the query's id.
#[derive(Debug, thiserror::Error)]
#[error("query {query_id}: {source}")]
pub struct QueryFailed {
    /// The query's id in `queries.jsonl`.
    pub query_id: String,
    /// The retrieval's error.
    #[source]
    pub source: RetrieveError,
}

/// Runs every query of `c` (or the first `run.limit_queries`) against `repo` and averages
/// nDCG@10 and Recall@100 (see [`crate::metrics`]). Stops at the first query whose
/// retrieval fails (e.g. [`EVAL_MODEL`] is not in the repository).
///
/// ```
/// use cairn_eval::{evaluate, EvalRun};
/// # fn scores(repo: &cairn::Repo, c: &cairn_eval::Collection) -> Result<(), cairn_eval::QueryFailed> {
/// let s = evaluate(repo, c, &EvalRun::text().limit_queries(10))?;
/// println!("{} of {} queries judged: nDCG@10 {:.4}", s.judged, s.queries, s.ndcg10);
/// # Ok(())
/// # }
/// ```
pub fn evaluate(repo: &Repo, c: &Collection, run: &EvalRun) -> Result<EvalScores, QueryFailed> {
    let n = run.limit_queries.map_or(c.queries.len(), |l| l.min(c.queries.len()));
    let mut ndcg = Vec::with_capacity(n);
    let mut recall = Vec::with_capacity(n);
    let mut approximate = false;
    for (i, q) in c.queries.iter().enumerate().take(n) {
        let result = Retrieval::from_spec(repo, run.spec(c, i))
            .execute()
            .map_err(|source| QueryFailed {
                query_id: q.id.clone(),
                source,
            })?;
        approximate |= result.lanes.iter().any(|l| l.approximate);
        let ranked: Vec<String> = result.items.iter().map(|it| it.id.as_str().to_string()).collect();
        let qrels = c.qrels.get(&q.id);
        ndcg.push(ndcg_at_k(&ranked, &qrels, 10));
        recall.push(recall_at_k(&ranked, &qrels, RANKED_PER_QUERY));
    }
    Ok(EvalScores {
        judged: ndcg.iter().flatten().count(),
        ndcg10: mean(ndcg),
        recall100: mean(recall),
        queries: n,
        approximate,
    })
}
