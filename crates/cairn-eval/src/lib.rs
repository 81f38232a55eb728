//! # cairn-eval
//!
//! Retrieval evaluation for Cairn: how well does the hybrid retriever rank the documents a
//! human judged relevant? This crate is a tool around the database, not part of it; the
//! `cairn eval` command and the quality tests use it.
//!
//! - [`collection`]: a judged test collection in the BEIR-like layout of
//!   `../shared/eval/<name>/` (`corpus.jsonl`, `queries.jsonl`, `qrels.tsv`, MiniLM
//!   embeddings, optional `links.tsv` and `doc_meta.jsonl`), loaded by [`Collection::load`]
//!   and [`DocMeta::load`]; every load error names the file (and line).
//! - [`timeqa`]: time-sensitive questions over Wikipedia paragraphs (TimeQA's layout,
//!   `../shared/eval/timeqa-train/`), loaded by [`TimeQa::load`].
//! - [`metrics`]: nDCG@k and Recall@k as `trec_eval` computes them, pure functions.
//! - [`import`]: a collection written into a [`cairn::Repo`] as one commit, the same
//!   mapping every time (documents → nodes with text and embedding, links → edges).
//! - [`run`]: an [`EvalRun`] (lanes, fusion, expansion) ranks every query through the
//!   retrieval pipeline and [`evaluate`] averages the metrics into [`EvalScores`] — the
//!   rows `cairn eval --collection DIR` prints.
//!
//! Nothing here reads a clock: callers time what they want to time.
//!
//! ```no_run
//! use cairn_eval::{evaluate, import_collection, Collection, EvalRun};
//!
//! let c = Collection::load(std::path::Path::new("../shared/eval/cisi"))?;
//! let repo = cairn::Repo::in_memory()?;
//! import_collection(&repo, &c, false)?;
//! let scores = evaluate(&repo, &c, &EvalRun::hybrid())?;
//! println!("nDCG@10 {:.4}  Recall@100 {:.4}", scores.ndcg10, scores.recall100);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod collection;
pub mod import;
pub mod metrics;
pub mod run;
pub mod timeqa;

pub use collection::{Collection, CorpusDoc, DocMeta, EvalError, Link, Qrels, Query};
pub use import::{import_collection, import_collection_with_meta, DOCUMENT_LABEL, EVAL_MODEL, LINK_KIND};
pub use metrics::{mean, ndcg_at_k, recall_at_k};
pub use run::{evaluate, EvalRun, EvalScores, QueryFailed, RANKED_PER_QUERY};
pub use timeqa::{TimeQa, TimeQuestion};
