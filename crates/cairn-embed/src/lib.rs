//! # cairn-embed
//!
//! Text embedders for Cairn's dense lane.
#![warn(missing_docs)]

mod openai;

pub use openai::{OpenAiConfig, OpenAiEmbedder, OpenAiError, DEFAULT_API_KEY_ENV};
