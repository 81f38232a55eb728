//! The BM25 text analyzer: lowercase, Unicode word tokens, stopwords, optional stemming.

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

/// Lucene's 33 English stopwords (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`), sorted.
pub const STOPWORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// Turns text into index terms. Documented and versioned, because an index's bytes and a
/// query's terms both depend on it.
///
/// Steps, in order:
/// 1. lowercase the whole text with [`str::to_lowercase`] (Unicode, context-sensitive
///    for the Greek final sigma);
/// 2. tokens are the maximal runs of characters for which [`char::is_alphanumeric`] holds
///    (on ASCII text this is exactly the regex `[a-z0-9]+` over the lowercased text);
/// 3. Lucene's 33 English [`STOPWORDS`] are removed;
/// 4. with `stem`, each remaining token goes through the Snowball English (Porter2)
///    stemmer of rust-stemmers.
///
/// ```
/// use cairn_index::Analyzer;
/// let plain = Analyzer { stem: false };
/// assert_eq!(plain.analyze("The Wings, of a STALLING plane!"), vec!["wings", "stalling", "plane"]);
/// let stem = Analyzer { stem: true };
/// assert_eq!(stem.analyze("The Wings, of a STALLING plane!"), vec!["wing", "stall", "plane"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Analyzer {
    /// Apply Snowball English stemming.
    pub stem: bool,
}

impl Default for Analyzer {
    /// Stemming on (it measured better on the tuning collections).
    fn default() -> Self {
        Analyzer { stem: true }
    }
}

/// True if `token` (lowercase) is one of the [`STOPWORDS`].
pub fn is_stopword(token: &str) -> bool {
    STOPWORDS.binary_search(&token).is_ok()
}

/// The tokens of already-lowercased text: maximal runs of alphanumeric characters.
pub(crate) fn tokens(lowercased: &str) -> impl Iterator<Item = &str> {
    lowercased
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
}

impl Analyzer {
    /// The terms of `text`, in order, with repeats.
    pub fn analyze(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_term(text, |t| out.push(t.to_string()));
        out
    }

    /// Calls `f` with each term of `text`, in order, with repeats (what
    /// [`Analyzer::analyze`] returns, without allocating a `String` per term).
    pub fn for_each_term(&self, text: &str, mut f: impl FnMut(&str)) {
        let lower = text.to_lowercase();
        let stemmer = self.stemmer();
        for token in tokens(&lower) {
            if let Some(term) = term_of(stemmer.as_ref(), token) {
                f(&term);
            }
        }
    }

    /// The stemmer this analyzer applies, if any.
    pub(crate) fn stemmer(&self) -> Option<Stemmer> {
        self.stem.then(|| Stemmer::create(Algorithm::English))
    }
}

/// The term of one lowercased token: `None` for a stopword, else the (stemmed) token.
pub(crate) fn term_of<'a>(stemmer: Option<&Stemmer>, token: &'a str) -> Option<Cow<'a, str>> {
    if is_stopword(token) {
        return None;
    }
    Some(match stemmer {
        Some(s) => s.stem(token),
        None => Cow::Borrowed(token),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[a-z0-9]+` over the lowercased text, by hand (the reference tokeniser).
    fn regex_tokens(text: &str) -> Vec<String> {
        let lower = text.to_lowercase();
        let mut out = Vec::new();
        let mut cur = String::new();
        for c in lower.chars() {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                cur.push(c);
            } else if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out.into_iter().filter(|t| !is_stopword(t)).collect()
    }

    #[test]
    fn stopwords_sorted_and_complete() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(STOPWORDS.len(), 33);
    }

    #[test]
    fn plain_equals_regex_on_ascii() {
        let plain = Analyzer { stem: false };
        let mut texts = vec![
            String::new(),
            "   ".to_string(),
            "Hello, World! 3D-printing isn't e=mc^2; A.B.C. x86_64 \t\n".to_string(),
            "THE AND OF".to_string(),
        ];
        // every printable ASCII character, in several arrangements
        let all: String = (0x20u8..0x7f).map(char::from).collect();
        texts.push(all.clone());
        texts.push(all.chars().rev().collect());
        let mut state = 12345u32;
        for _ in 0..200 {
            let s: String = (0..40)
                .map(|_| {
                    state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    char::from(0x20 + ((state >> 16) % 95) as u8)
                })
                .collect();
            texts.push(s);
        }
        for t in &texts {
            assert_eq!(plain.analyze(t), regex_tokens(t), "{t:?}");
        }
    }

    #[test]
    fn unicode_and_stemming() {
        let plain = Analyzer { stem: false };
        assert_eq!(
            plain.analyze("Über naïve Café—東京 ΣΟΦΊΑ"),
            vec!["über", "naïve", "café", "東京", "σοφία"]
        );
        assert_eq!(plain.analyze("it is what it is"), vec!["what"]);
        let stem = Analyzer::default();
        assert!(stem.stem);
        assert_eq!(
            stem.analyze("running flows were measured"),
            vec!["run", "flow", "were", "measur"]
        );
        assert_eq!(stem.analyze("generalizations"), vec!["general"]);
        // stopwords are removed before stemming
        assert_eq!(stem.analyze("This is THE thing"), vec!["thing"]);
        let mut seen = Vec::new();
        stem.for_each_term("boundary layers", |t| seen.push(t.to_string()));
        assert_eq!(seen, stem.analyze("boundary layers"));
    }
}
