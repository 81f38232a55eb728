//! [`CharRatioEstimator`]: `ceil(chars / 4)`, the default [`TokenEstimator`].

use super::TokenEstimator;

/// Estimates tokens as `ceil(chars / chars_per_token)`, counting Unicode scalar values
/// (not bytes), with `chars_per_token` = 4 by default.
///
/// Why 4: byte-pair tokenizers of the GPT/Llama families average about four characters of
/// English per token, and the ratio is the usual rule of thumb. It needs no vocabulary, is
/// deterministic, and counts characters so accented Latin text is not over-charged for its
/// multi-byte UTF-8. It *under*-estimates text that tokenizes densely (CJK, code, long
/// digit runs); leave headroom in the budget or plug in a real tokenizer.
///
/// ```
/// use cairn_retrieve::{CharRatioEstimator, TokenEstimator};
/// let e = CharRatioEstimator::default();
/// assert_eq!(e.estimate(""), 0);
/// assert_eq!(e.estimate("wing"), 1);
/// assert_eq!(e.estimate("wings"), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CharRatioEstimator {
    /// Characters per token (values below 1 count as 1).
    pub chars_per_token: usize,
}

impl Default for CharRatioEstimator {
    fn default() -> Self {
        CharRatioEstimator { chars_per_token: 4 }
    }
}

impl TokenEstimator for CharRatioEstimator {
    fn estimate(&self, text: &str) -> usize {
        text.chars().count().div_ceil(self.chars_per_token.max(1))
    }

    /// `ceil(chars / chars_per_token)`: the estimate is monotone in the character count.
    fn lower_bound(&self, chars: usize) -> usize {
        chars.div_ceil(self.chars_per_token.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_chars_not_bytes() {
        let e = CharRatioEstimator::default();
        assert_eq!(e.estimate("abcdefgh"), 2);
        assert_eq!(e.estimate("abcdefghi"), 3);
        assert_eq!(e.estimate("éééé"), 1); // 8 bytes, 4 chars
        assert_eq!(CharRatioEstimator { chars_per_token: 0 }.estimate("abc"), 3);
    }
}
