//! Loading a judged test collection in the BEIR-like layout of `../shared/eval/<name>/`:
//!
//! | file | content |
//! |---|---|
//! | `corpus.jsonl` | `{"id", "title", "text"}` per line |
//! | `queries.jsonl` | `{"id", "text"}` per line |
//! | `qrels.tsv` | a header line, then `query-id⇥corpus-id⇥score` |
//! | `meta.json` | `embedding.dim` |
//! | `corpus.emb.f32`, `queries.emb.f32` | little-endian `f32` rows of `dim`, row `i` = line `i` |
//! | `links.tsv` (optional) | a header line, then `source-id⇥target-id⇥weight` |
//! | `doc_meta.jsonl` (optional) | `{"id", <field>: <string>...}` per line ([`DocMeta`]) |
//!
//! This module and [`crate::timeqa`] are the ones of the crate that read files.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Why a collection could not be loaded. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line or document does not parse.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0 for the whole file).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// A corpus document.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CorpusDoc {
    /// Document id.
    pub id: String,
    /// Title (may be empty).
    #[serde(default)]
    pub title: String,
    /// Body text.
    #[serde(default)]
    pub text: String,
}

impl CorpusDoc {
    /// The text the collection's embeddings and baselines index: `(title + " " + text)`
    /// trimmed.
    pub fn full_text(&self) -> String {
        format!("{} {}", self.title, self.text).trim().to_string()
    }
}

/// A query.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Query {
    /// Query id.
    pub id: String,
    /// Query text.
    pub text: String,
}

/// Relevance judgments: query id → (doc id → score).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Qrels(pub BTreeMap<String, BTreeMap<String, i64>>);

impl Qrels {
    /// Parses `qrels.tsv` text (a header line, then `query-id⇥corpus-id⇥score`).
    pub fn parse(text: &str, path: &Path) -> Result<Qrels, EvalError> {
        let mut out: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
        for_each_tsv_row(text, path, |[q, d, s], bad| {
            let score: i64 = s.trim().parse().map_err(|e| bad(format!("score `{s}`: {e}")))?;
            out.entry(q.to_string()).or_default().insert(d.to_string(), score);
            Ok(())
        })?;
        Ok(Qrels(out))
    }

    /// The judgments of one query (empty if none).
    pub fn get(&self, query_id: &str) -> BTreeMap<String, i64> {
        self.0.get(query_id).cloned().unwrap_or_default()
    }
}

/// A document–document link from `links.tsv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Source document id.
    pub source: String,
    /// Target document id.
    pub target: String,
    /// Link strength.
    pub weight: f64,
}

/// A whole collection in memory.
#[derive(Debug, Clone)]
pub struct Collection {
    /// Documents in file order.
    pub corpus: Vec<CorpusDoc>,
    /// Queries in file order.
    pub queries: Vec<Query>,
    /// Judgments.
    pub qrels: Qrels,
    /// Embedding dimension.
    pub dim: usize,
    /// `corpus.len() × dim` document embeddings, row-major.
    pub corpus_embeddings: Vec<f32>,
    /// `queries.len() × dim` query embeddings, row-major.
    pub query_embeddings: Vec<f32>,
    /// Links, if the collection has `links.tsv`.
    pub links: Option<Vec<Link>>,
}

impl Collection {
    /// Loads the collection in `dir`.
    pub fn load(dir: &Path) -> Result<Collection, EvalError> {
        let meta_path = dir.join("meta.json");
        let meta: serde_json::Value = serde_json::from_str(&read(&meta_path)?).map_err(|e| EvalError::Parse {
            path: meta_path.clone(),
            line: e.line(),
            message: e.to_string(),
        })?;
        let dim = meta
            .pointer("/embedding/dim")
            .and_then(serde_json::Value::as_u64)
            .and_then(|d| usize::try_from(d).ok())
            .filter(|d| *d > 0)
            .ok_or_else(|| EvalError::Parse {
                path: meta_path.clone(),
                line: 0,
                message: "no positive integer `embedding.dim`".into(),
            })?;
        let corpus: Vec<CorpusDoc> = read_jsonl(&dir.join("corpus.jsonl"))?;
        let queries: Vec<Query> = read_jsonl(&dir.join("queries.jsonl"))?;
        let qrels_path = dir.join("qrels.tsv");
        let qrels = Qrels::parse(&read(&qrels_path)?, &qrels_path)?;
        let corpus_embeddings = read_f32_rows(&dir.join("corpus.emb.f32"), corpus.len(), dim)?;
        let query_embeddings = read_f32_rows(&dir.join("queries.emb.f32"), queries.len(), dim)?;
        let links_path = dir.join("links.tsv");
        let links = if links_path.exists() {
            Some(parse_links(&read(&links_path)?, &links_path)?)
        } else {
            None
        };
        Ok(Collection {
            corpus,
            queries,
            qrels,
            dim,
            corpus_embeddings,
            query_embeddings,
            links,
        })
    }

    /// The embedding of document `i` (file order).
    pub fn doc_embedding(&self, i: usize) -> &[f32] {
        &self.corpus_embeddings[i * self.dim..(i + 1) * self.dim]
    }

    /// The embedding of query `i` (file order).
    pub fn query_embedding(&self, i: usize) -> &[f32] {
        &self.query_embeddings[i * self.dim..(i + 1) * self.dim]
    }
}

/// Per-document metadata from `doc_meta.jsonl`: document id → (field → value). Empty for
/// a collection without the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocMeta(pub BTreeMap<String, BTreeMap<String, String>>);

impl DocMeta {
    /// Reads `dir/doc_meta.jsonl` (one `{"id", <field>: <string>...}` object per line;
    /// fields that are not strings are skipped). A missing file gives an empty map.
    pub fn load(dir: &Path) -> Result<DocMeta, EvalError> {
        let path = dir.join("doc_meta.jsonl");
        if !path.exists() {
            return Ok(DocMeta::default());
        }
        let text = read(&path)?;
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

fn read(path: &Path) -> Result<String, EvalError> {
    fs::read_to_string(path).map_err(|source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, EvalError> {
    read(path)?
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| EvalError::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                message: e.to_string(),
            })
        })
        .collect()
}

fn read_f32_rows(path: &Path, rows: usize, dim: usize) -> Result<Vec<f32>, EvalError> {
    let bytes = fs::read(path).map_err(|source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let want = rows * dim * 4;
    if bytes.len() != want {
        return Err(EvalError::Parse {
            path: path.to_path_buf(),
            line: 0,
            message: format!("{} bytes, expected {rows} rows × {dim} × 4 = {want}", bytes.len()),
        });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn parse_links(text: &str, path: &Path) -> Result<Vec<Link>, EvalError> {
    let mut out = Vec::new();
    for_each_tsv_row(text, path, |[s, t, w], bad| {
        let weight: f64 = w.trim().parse().map_err(|e| bad(format!("weight `{w}`: {e}")))?;
        out.push(Link {
            source: s.to_string(),
            target: t.to_string(),
            weight,
        });
        Ok(())
    })?;
    Ok(out)
}

/// Calls `row` on every data line of a three-column TSV file (the first line is a header;
/// blank lines are skipped), with the fields and a function that makes a parse error
/// naming the file and line.
fn for_each_tsv_row(
    text: &str,
    path: &Path,
    mut row: impl FnMut([&str; 3], &dyn Fn(String) -> EvalError) -> Result<(), EvalError>,
) -> Result<(), EvalError> {
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| EvalError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            message,
        };
        let fields: Vec<&str> = line.split('\t').collect();
        let [a, b, c] = fields[..] else {
            return Err(bad(format!("expected 3 tab-separated fields, got {}", fields.len())));
        };
        row([a, b, c], &bad)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qrels_parse() {
        let q = Qrels::parse(
            "query-id\tcorpus-id\tscore\n1\t28\t1\n1\t35\t0\n2\t4\t2\n",
            Path::new("q.tsv"),
        )
        .unwrap();
        assert_eq!(
            q.get("1"),
            BTreeMap::from([("28".to_string(), 1), ("35".to_string(), 0)])
        );
        assert_eq!(q.get("2")["4"], 2);
        assert!(q.get("3").is_empty());
        let err = Qrels::parse("h\n1\t2\n", Path::new("q.tsv")).unwrap_err();
        assert!(err.to_string().starts_with("q.tsv:2:"), "{err}");
    }

    #[test]
    fn links_parse() {
        let l = parse_links("source-id\ttarget-id\tweight\n1\t92\t1\n92\t1\t3\n", Path::new("l.tsv")).unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(
            (l[1].source.as_str(), l[1].target.as_str(), l[1].weight),
            ("92", "1", 3.0)
        );
    }

    #[test]
    fn full_text_joins_title_and_text() {
        let d = CorpusDoc {
            id: "1".into(),
            title: String::new(),
            text: "body".into(),
        };
        assert_eq!(d.full_text(), "body");
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
