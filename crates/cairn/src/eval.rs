//! Retrieval evaluation against a judged test collection (`shared/eval/<name>/`, loaded
//! by [`Collection::load`]): import it into a repository, then score runs with nDCG@10
//! and Recall@100 (`cairn eval`).
//!
//! The import maps the collection onto the graph the same way every time:
//!
//! | collection | graph |
//! |---|---|
//! | corpus document | node `id` = document id, label [`DOCUMENT_LABEL`], text = `(title + " " + text)` trimmed, embedding [`EVAL_MODEL`] |
//! | `doc_meta.jsonl` fields (Cranfield, CISI) | string properties of the node (`author`, `bib`) |
//! | `links.tsv` row (CISI) | edge of kind [`LINK_KIND`] with the row's weight |
//!
//! An evaluation ([`evaluate`]) ranks each query with the retrieval pipeline — `limit`
//! 100, `text_cap` 0 (only ids are needed), validity gate off — and averages the metrics
//! of [`cairn_retrieve::eval`] over the queries that have a relevant document. Nothing
//! here reads a clock: callers time what they want to time.
//!
//! ```no_run
//! use cairn::eval::{evaluate, import_collection, EvalRun};
//! use cairn::retrieve::eval::Collection;
//!
//! let c = Collection::load(std::path::Path::new("shared/eval/cisi"))?;
//! let repo = cairn::Repo::in_memory()?;
//! import_collection(&repo, &c, false)?;
//! let scores = evaluate(&repo, &c, &EvalRun::hybrid())?;
//! println!("nDCG@10 {:.4}  Recall@100 {:.4}", scores.ndcg10, scores.recall100);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use cairn_core::{CommitId, Edge, Node, NodeId};
use cairn_retrieve::eval::{mean, ndcg_at_k, recall_at_k, Collection, EvalError};
use cairn_retrieve::{Fusion, GraphExpand, Retrieval, RetrieveError, RetrieveSpec, ValidAt, VectorQuery};

use crate::error::{Error, Result};
use crate::repo::Repo;

/// The dense model name the collection's embeddings are stored under.
pub const EVAL_MODEL: &str = "minilm";
/// The label every imported document carries.
pub const DOCUMENT_LABEL: &str = "Document";
/// The edge kind of `links.tsv` rows.
pub const LINK_KIND: &str = "cites";
/// Items ranked per query: the depth Recall@100 needs.
pub const RANKED_PER_QUERY: usize = 100;

/// Per-document metadata from `doc_meta.jsonl`: document id → (field → value). Empty for
/// a collection without the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocMeta(pub BTreeMap<String, BTreeMap<String, String>>);

impl DocMeta {
    /// Reads `dir/doc_meta.jsonl` (one `{"id", <field>: <string>...}` object per line;
    /// fields that are not strings are skipped). A missing file gives an empty map.
    pub fn load(dir: &Path) -> std::result::Result<DocMeta, EvalError> {
        let path = dir.join("doc_meta.jsonl");
        if !path.exists() {
            return Ok(DocMeta::default());
        }
        let text = std::fs::read_to_string(&path).map_err(|source| EvalError::Io {
            path: path.clone(),
            source,
        })?;
        let mut out = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |message: String| EvalError::Parse {
                path: path.clone(),
                line: i + 1,
                message,
            };
            let fields: BTreeMap<String, serde_json::Value> =
                serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
            let id = fields
                .get("id")
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| bad("no string `id`".into()))?
                .to_string();
            let props = fields
                .into_iter()
                .filter(|(k, _)| k != "id")
                .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string())))
                .collect();
            out.insert(id, props);
        }
        Ok(DocMeta(out))
    }
}

/// Imports collection `c` as one commit on the current branch (see the
/// [module docs](self) for the mapping), without document metadata; with `with_links`,
/// `links.tsv` becomes edges (none if the collection has no links).
pub fn import_collection(repo: &Repo, c: &Collection, with_links: bool) -> Result<CommitId> {
    import_collection_with_meta(repo, c, &DocMeta::default(), with_links)
}

/// [`import_collection`], with `meta`'s fields as string properties of the documents it
/// names. Every document and link goes into one transaction: a failure (an id that is not
/// a valid node id, a link to an unknown document, a dimension other than the
/// repository's for [`EVAL_MODEL`]) commits nothing.
pub fn import_collection_with_meta(repo: &Repo, c: &Collection, meta: &DocMeta, with_links: bool) -> Result<CommitId> {
    let mut tx = repo.transaction()?;
    for (i, d) in c.corpus.iter().enumerate() {
        let mut node = Node::new(node_id(&d.id)?)
            .with_label(DOCUMENT_LABEL)
            .with_text(d.full_text())
            .with_embedding(EVAL_MODEL, c.doc_embedding(i).to_vec());
        for (k, v) in meta.0.get(&d.id).into_iter().flatten() {
            node = node.with_prop(k.clone(), v.clone());
        }
        tx.put_node(node)?;
    }
    let links = match (&c.links, with_links) {
        (Some(links), true) => links.as_slice(),
        _ => &[],
    };
    for l in links {
        let edge = Edge::new(node_id(&l.source)?, LINK_KIND, node_id(&l.target)?);
        tx.put_edge(edge.with_weight(l.weight))?;
    }
    tx.commit(&format!(
        "import evaluation collection: {} documents, {} links",
        c.corpus.len(),
        links.len()
    ))
}

fn node_id(id: &str) -> Result<NodeId> {
    NodeId::new(id).map_err(|e| Error::InvalidArgument(format!("collection id {id:?}: {e}")))
}

/// One evaluation configuration: which lanes answer each query, how they are fused,
/// whether graph expansion runs, and over how many queries.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalRun {
    /// Use the dense lane (the query's collection embedding, model [`EVAL_MODEL`]).
    pub dense: bool,
    /// Use the BM25 lane (the query's text).
    pub text: bool,
    /// Fusion settings (`None`: the retrieval default, min-max score fusion, text weight 0.8).
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

    /// Dense and BM25, fused by the default (min-max score fusion, text weight 0.8).
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
    /// expansion, [`RANKED_PER_QUERY`] items, no rendered text, no validity gate.
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
/// nDCG@10 and Recall@100 (see [`cairn_retrieve::eval`]). Stops at the first query whose
/// retrieval fails (e.g. [`EVAL_MODEL`] is not in the repository).
pub fn evaluate(repo: &Repo, c: &Collection, run: &EvalRun) -> std::result::Result<EvalScores, QueryFailed> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_retrieve::eval::{CorpusDoc, Link, Qrels, Query};

    /// Three documents in 2 dimensions; query 1 asks for "a" (relevant), query 2 has no
    /// judgment.
    fn tiny() -> Collection {
        let doc = |id: &str, text: &str| CorpusDoc {
            id: id.into(),
            title: String::new(),
            text: text.into(),
        };
        Collection {
            corpus: vec![
                doc("a", "wing stall"),
                doc("b", "rocket nozzle"),
                doc("c", "boundary layer"),
            ],
            queries: vec![
                Query {
                    id: "1".into(),
                    text: "stall".into(),
                },
                Query {
                    id: "2".into(),
                    text: "nozzle".into(),
                },
            ],
            qrels: Qrels(BTreeMap::from([(
                "1".to_string(),
                BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 0)]),
            )])),
            dim: 2,
            corpus_embeddings: vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8],
            query_embeddings: vec![1.0, 0.0, 0.0, 1.0],
            links: Some(vec![Link {
                source: "a".into(),
                target: "c".into(),
                weight: 2.0,
            }]),
        }
    }

    #[test]
    fn import_maps_documents_meta_and_links() {
        let repo = Repo::in_memory().unwrap();
        let c = tiny();
        let meta = DocMeta(BTreeMap::from([(
            "a".to_string(),
            BTreeMap::from([("author".to_string(), "Okafor".to_string())]),
        )]));
        let head = import_collection_with_meta(&repo, &c, &meta, true).unwrap();
        let a = repo.node_at(&head, &NodeId::new("a").unwrap()).unwrap().unwrap();
        assert_eq!(a.text, "wing stall");
        assert!(a.labels.contains(DOCUMENT_LABEL));
        assert_eq!(a.embeddings[EVAL_MODEL], vec![1.0, 0.0]);
        assert_eq!(a.props["author"], cairn_core::Value::String("Okafor".into()));
        let edges = repo.edges_at(&head).unwrap();
        assert_eq!(edges.len(), 1);
        assert_eq!((edges[0].kind.as_str(), edges[0].weight), (LINK_KIND, 2.0));

        let repo = Repo::in_memory().unwrap();
        let head = import_collection(&repo, &c, false).unwrap();
        assert_eq!(repo.stats(&head).unwrap().edges, 0);
    }

    #[test]
    fn evaluate_scores_only_judged_queries() {
        let repo = Repo::in_memory().unwrap();
        let c = tiny();
        import_collection(&repo, &c, false).unwrap();
        for run in [EvalRun::dense(), EvalRun::text(), EvalRun::hybrid()] {
            let s = evaluate(&repo, &c, &run).unwrap();
            assert_eq!((s.queries, s.judged), (2, 1), "{run:?}");
            assert_eq!((s.ndcg10, s.recall100), (1.0, 1.0), "{run:?}");
            assert!(!s.approximate);
        }
        let s = evaluate(&repo, &c, &EvalRun::dense().limit_queries(1)).unwrap();
        assert_eq!(s.queries, 1);
    }

    #[test]
    fn a_failing_query_is_named() {
        let repo = Repo::in_memory().unwrap();
        let c = tiny();
        import_collection(&repo, &c, false).unwrap();
        let err = evaluate(&repo, &c, &EvalRun::hybrid().at("nope")).unwrap_err();
        assert_eq!(err.query_id, "1");
        assert!(err.to_string().starts_with("query 1: "), "{err}");
    }

    #[test]
    fn doc_meta_loads_string_fields() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(DocMeta::load(dir.path()).unwrap(), DocMeta::default());
        std::fs::write(
            dir.path().join("doc_meta.jsonl"),
            "{\"id\": \"1\", \"author\": \"A; B\", \"n\": 3}\n\n{\"id\": \"2\", \"bib\": \"x\"}\n",
        )
        .unwrap();
        let m = DocMeta::load(dir.path()).unwrap();
        assert_eq!(m.0["1"], BTreeMap::from([("author".to_string(), "A; B".to_string())]));
        assert_eq!(m.0["2"]["bib"], "x");
        std::fs::write(dir.path().join("doc_meta.jsonl"), "{\"author\": \"x\"}\n").unwrap();
        let err = DocMeta::load(dir.path()).unwrap_err();
        assert!(err.to_string().contains("doc_meta.jsonl:1"), "{err}");
    }
}
