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

    /// A lower bound of [`TokenEstimator::estimate`] over every text of at least `chars`
    /// characters. Packing uses it to skip items that cannot fit without rendering them,
    /// and to stop once nothing left can fit; the default, 0, claims nothing (every item
    /// is rendered and estimated). It must never exceed a real estimate, or packing would
    /// drop items that fit.
    fn lower_bound(&self, chars: usize) -> usize {
        let _ = chars;
        0
    }
}
