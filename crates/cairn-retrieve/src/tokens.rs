//! Token estimation for packing: a [`TokenEstimator`] trait and its default,
//! [`CharRatioEstimator`].

mod char_ratio;

pub use char_ratio::CharRatioEstimator;

/// Estimates how many tokens a text costs in the agent's context window.
///
/// Contract: deterministic (same text ⇒ same count), cheap (called once per considered
/// item), callable from several threads at once. Plug in a real tokenizer for exact
/// budgets; the default is [`CharRatioEstimator`].
pub trait TokenEstimator: Send + Sync {
    /// The estimated token count of `text`.
    fn estimate(&self, text: &str) -> usize;
}
