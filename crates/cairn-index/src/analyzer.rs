//! The BM25 text analyzer: lowercase, Unicode word tokens, stopwords, optional stemming;
//! and, for queries only, the conversational [`QUESTION_WORDS`].

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

/// Lucene's 33 English stopwords (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`), sorted.
pub const STOPWORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// Words that carry no topic in a conversational *question* and that Lucene's
/// [`STOPWORDS`] keep: interrogatives, auxiliary and modal verbs, personal pronouns and
/// possessives, and a few fillers of spoken questions. Sorted; lowercase; matched against
/// whole tokens before stemming.
///
/// Applied to queries only ([`strip_question_words`]), never to documents: a document
/// keeps every word it has, so the index does not depend on this list and changing it
/// needs no rebuild. The list leaves out words that often *are* the topic of a question
/// about stored facts (`name`, `time`, `like`, `live`, `work`, numbers, negations) and
/// `may`, which is also a month.
pub const QUESTION_WORDS: [&str; 75] = [
    "about",
    "am",
    "any",
    "anything",
    "been",
    "being",
    "can",
    "could",
    "d",
    "did",
    "do",
    "does",
    "doing",
    "ever",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "its",
    "itself",
    "know",
    "ll",
    "m",
    "me",
    "might",
    "mine",
    "must",
    "my",
    "myself",
    "our",
    "ours",
    "ourselves",
    "please",
    "re",
    "remind",
    "s",
    "shall",
    "she",
    "should",
    "some",
    "something",
    "tell",
    "theirs",
    "them",
    "themselves",
    "us",
    "ve",
    "we",
    "were",
    "what",
    "whatever",
    "when",
    "whenever",
    "where",
    "wherever",
    "which",
    "who",
    "whom",
    "whose",
    "why",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
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

/// True if `token` (lowercase) is one of the [`QUESTION_WORDS`].
pub fn is_question_word(token: &str) -> bool {
    QUESTION_WORDS.binary_search(&token).is_ok()
}

/// A query's text without its [`QUESTION_WORDS`], for the BM25 lane: the query's
/// lowercased tokens (step 2 of [`Analyzer`]) that are not question words, joined by
/// single spaces — analysing the result gives the same terms as analysing `query` minus
/// the question words, in the same order.
///
/// Fallback: if nothing but question words and [`STOPWORDS`] would remain (`"what did
/// you do?"`), `query` is returned unchanged, so a query made only of question words still
/// searches for them. Applied to queries only, never to documents (the index keeps every
/// word); `query` is borrowed back when it has no question word.
///
/// ```
/// use cairn_index::analyzer::strip_question_words;
/// assert_eq!(strip_question_words("When did I move to Lisbon?"), "move to lisbon");
/// assert_eq!(strip_question_words("boundary layer transition"), "boundary layer transition");
/// assert_eq!(strip_question_words("What did you do?"), "What did you do?");
/// ```
pub fn strip_question_words(query: &str) -> Cow<'_, str> {
    let lower = query.to_lowercase();
    if !tokens(&lower).any(is_question_word) {
        return Cow::Borrowed(query);
    }
    let kept: Vec<&str> = tokens(&lower).filter(|t| !is_question_word(t)).collect();
    if kept.iter().all(|t| is_stopword(t)) {
        return Cow::Borrowed(query);
    }
    Cow::Owned(kept.join(" "))
}

/// The tokens of already-lowercased text: maximal runs of alphanumeric characters.
pub(crate) fn tokens(lowercased: &str) -> impl Iterator<Item = &str> {
    lowercased
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
}

/// Whether a byte is an ASCII letter or digit, by table (one load where
/// `u8::is_ascii_alphanumeric` tests three ranges).
static ALNUM: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    t
};

/// [`tokens`] of an ASCII text, split byte by byte (an ASCII character is alphanumeric
/// exactly when it is an ASCII letter or digit, so the tokens are the same).
pub(crate) fn ascii_tokens(lowercased: &str) -> impl Iterator<Item = &str> {
    debug_assert!(lowercased.is_ascii());
    let bytes = lowercased.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && !ALNUM[bytes[at] as usize] {
            at += 1;
        }
        if at == bytes.len() {
            return None;
        }
        let start = at;
        while at < bytes.len() && ALNUM[bytes[at] as usize] {
            at += 1;
        }
        // ASCII bytes: every cut is a character boundary.
        Some(&lowercased[start..at])
    })
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
    fn question_words_sorted_lowercase_and_apart_from_stopwords() {
        assert!(QUESTION_WORDS.windows(2).all(|w| w[0] < w[1]));
        for w in QUESTION_WORDS {
            assert_eq!(w, w.to_lowercase(), "{w}");
            assert!(!is_stopword(w), "{w} is already a stopword");
            assert_eq!(tokens(w).collect::<Vec<_>>(), vec![w], "{w} is one token");
        }
        // Words that are often the topic of a question about stored facts stay searchable.
        for w in ["may", "name", "time", "like", "live", "work", "not", "never", "2023"] {
            assert!(!is_question_word(w), "{w}");
        }
    }

    #[test]
    fn strip_question_words_keeps_topic_words_in_order() {
        let cases = [
            ("When did I move to Lisbon?", "move to lisbon"),
            ("what's my sister's name", "sister name"),
            ("How do wings stall", "wings stall"),
            ("What similarity laws must be obeyed", "similarity laws be obeyed"),
            ("Über naïve Café", "Über naïve Café"),
            ("", ""),
            // Only question words (and stopwords) left: the query stands as written.
            ("What did you do?", "What did you do?"),
            ("what is it", "what is it"),
            ("Who are you", "Who are you"),
        ];
        for (query, want) in cases {
            assert_eq!(strip_question_words(query), want, "{query:?}");
        }
        assert!(matches!(strip_question_words("wing stall"), Cow::Borrowed(_)));
        // Analysing the stripped text = analysing the query minus question words.
        let a = Analyzer::default();
        for q in [
            "When did my flight to Oslo leave?",
            "What do you know about the boundary layers",
        ] {
            let want: Vec<String> = a
                .analyze(q)
                .into_iter()
                .zip(
                    q.to_lowercase()
                        .split(|c: char| !c.is_alphanumeric())
                        .filter(|t| !t.is_empty() && !is_stopword(t)),
                )
                .filter(|(_, tok)| !is_question_word(tok))
                .map(|(term, _)| term)
                .collect();
            assert_eq!(a.analyze(&strip_question_words(q)), want, "{q}");
        }
    }

    #[test]
    fn ascii_tokens_equal_tokens_on_every_ascii_arrangement() {
        let all: String = (0u8..0x80).map(char::from).collect();
        let mut texts = vec![
            String::new(),
            " ".to_string(),
            "a".to_string(),
            "--x--".to_string(),
            "hello, world! 3d-printing isn't e=mc^2; a.b.c. x86_64 \t\n".to_string(),
            all.clone(),
            all.chars().rev().collect(),
        ];
        let mut x = 0x9e37_79b9_u32;
        for _ in 0..200 {
            let t: String = (0..(x % 40))
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    char::from((x % 128) as u8)
                })
                .collect();
            texts.push(t);
        }
        for t in &texts {
            let lower = t.to_ascii_lowercase();
            assert_eq!(
                ascii_tokens(&lower).collect::<Vec<_>>(),
                tokens(&lower).collect::<Vec<_>>(),
                "{t:?}"
            );
        }
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
