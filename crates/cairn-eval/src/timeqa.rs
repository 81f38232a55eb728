//! Time-sensitive questions over the paragraphs of Wikipedia pages: the TimeQA layout of
//! `../shared/eval/timeqa-train/` (a JSON list of pages, each with `paras` and
//! `questions: [[text, [{"para": i, ...}, ...]], ...]`), loaded by [`TimeQa::load`].
//!
//! Node ids and labels follow one fixed mapping, so that every run (and the CLI scripts in
//! `scripts/`) names the same things: paragraph `j` of page `i` is node
//! [`TimeQa::paragraph_id`] `p{i:03}-{j:03}` with label [`TimeQa::page_label`]
//! `page{i:03}`. Two tasks come from it:
//!
//! - **gated**: a question against its own page's paragraphs only (a label gate); every
//!   paragraph is on topic, so dates and events decide, and hit@1 is the measure;
//! - **pooled**: a question against every paragraph of every page; nDCG@10 and
//!   Recall@100.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde::Deserialize;

use crate::collection::EvalError;

/// One question with its gold paragraphs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeQuestion {
    /// The page it is about (index into [`TimeQa::pages`]).
    pub page: usize,
    /// The question as written.
    pub text: String,
    /// Node ids of the paragraphs that hold an answer (never empty).
    pub gold: BTreeSet<String>,
}

/// A TimeQA split: pages of paragraphs and questions with gold paragraphs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeQa {
    /// Each page's paragraphs, in file order.
    pub pages: Vec<Vec<String>>,
    /// Questions with at least one gold paragraph, in file order (questions without one
    /// are left out).
    pub questions: Vec<TimeQuestion>,
}

#[derive(Deserialize)]
struct RawPage {
    paras: Vec<String>,
    questions: Vec<(String, Vec<RawAnswer>)>,
}

#[derive(Deserialize)]
struct RawAnswer {
    para: usize,
}

impl TimeQa {
    /// Reads `dir/human_annotated_train.json` (or the one `*.json` file in `dir`).
    pub fn load(dir: &Path) -> Result<TimeQa, EvalError> {
        let path = dir.join("human_annotated_train.json");
        let bytes = fs::read(&path).map_err(|source| EvalError::Io {
            path: path.clone(),
            source,
        })?;
        let raw: Vec<RawPage> = serde_json::from_slice(&bytes).map_err(|e| EvalError::Parse {
            path: path.clone(),
            line: e.line(),
            message: e.to_string(),
        })?;
        let mut questions = Vec::new();
        for (page, p) in raw.iter().enumerate() {
            for (text, answers) in &p.questions {
                let mut gold = BTreeSet::new();
                for a in answers {
                    if a.para >= p.paras.len() {
                        return Err(EvalError::Parse {
                            path: path.clone(),
                            line: 0,
                            message: format!(
                                "page {page}: question {text:?} names paragraph {} of {}",
                                a.para,
                                p.paras.len()
                            ),
                        });
                    }
                    gold.insert(TimeQa::paragraph_id(page, a.para));
                }
                if !gold.is_empty() {
                    questions.push(TimeQuestion {
                        page,
                        text: text.clone(),
                        gold,
                    });
                }
            }
        }
        Ok(TimeQa {
            pages: raw.into_iter().map(|p| p.paras).collect(),
            questions,
        })
    }

    /// The node id of paragraph `para` of page `page`: `p{page:03}-{para:03}`.
    ///
    /// ```
    /// assert_eq!(cairn_eval::TimeQa::paragraph_id(7, 42), "p007-042");
    /// ```
    pub fn paragraph_id(page: usize, para: usize) -> String {
        format!("p{page:03}-{para:03}")
    }

    /// The label of page `page`'s paragraphs: `page{page:03}`.
    ///
    /// ```
    /// assert_eq!(cairn_eval::TimeQa::page_label(7), "page007");
    /// ```
    pub fn page_label(page: usize) -> String {
        format!("page{page:03}")
    }

    /// Every paragraph as `(page, para, text)`, pages in order.
    pub fn paragraphs(&self) -> impl Iterator<Item = (usize, usize, &str)> {
        self.pages
            .iter()
            .enumerate()
            .flat_map(|(i, p)| p.iter().enumerate().map(move |(j, t)| (i, j, t.as_str())))
    }

    /// The split restricted to the pages `keep` selects (page indexes, ids and labels
    /// unchanged; the other pages have no paragraphs and no questions).
    pub fn pages_where(&self, keep: impl Fn(usize) -> bool) -> TimeQa {
        TimeQa {
            pages: self
                .pages
                .iter()
                .enumerate()
                .map(|(i, p)| if keep(i) { p.clone() } else { Vec::new() })
                .collect(),
            questions: self.questions.iter().filter(|q| keep(q.page)).cloned().collect(),
        }
    }
}
