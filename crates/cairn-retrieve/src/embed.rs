//! Query embedding: an optional [`Embedder`] turns the query text into a dense query
//! vector, so an agent can ask in words and still use the dense lane.

use std::fmt;
use std::sync::Arc;

/// Why an embedder could not embed a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedError {
    /// What went wrong.
    pub message: String,
}

impl EmbedError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> EmbedError {
        EmbedError {
            message: message.into(),
        }
    }
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EmbedError {}

/// Embeds query text for one dense model.
///
/// Given to a retrieval with
/// [`Retrieval::embed_text_with`](crate::Retrieval::embed_text_with): when the spec has
/// `text` but no `vector`, the embedder's vector becomes the `dense:<model>` lane's query
/// (the text still drives the BM25 lane). A spec that carries its own `vector` is used as
/// is. Cairn ships no embedder (models are the application's choice); tests use a fake.
///
/// Contract: deterministic (same text ⇒ bit-identical vector), the model's dimension,
/// finite components (checked: a bad vector is a typed error), callable from several
/// threads at once.
pub trait Embedder: Send + Sync {
    /// The query vector for `text`.
    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError>;

    /// The vectors for several texts, in order (one per text). The default calls
    /// [`embed`](Embedder::embed) for each; embedders that batch (a model forward pass, an
    /// HTTP request) override it. Must equal the one-by-one results bit for bit.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|t| self.embed(t)).collect()
    }

    /// What the embedder met and repaired on the way since the last call, oldest first —
    /// e.g. a damaged cached query vector embedded again — emptying the list. A retrieval
    /// reports each as a [`WarningCode::DerivedRebuilt`](crate::WarningCode::DerivedRebuilt)
    /// warning. The default has none.
    fn take_warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A dense model's name and the embedder of its query texts (what
/// [`RetrievalSource::query_embedder`](crate::RetrievalSource::query_embedder) gives).
pub type ModelEmbedder = (String, Arc<dyn Embedder>);
