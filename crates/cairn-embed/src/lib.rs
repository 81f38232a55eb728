//! # cairn-embed
//!
//! Text embedders for Cairn's dense lane.
#![warn(missing_docs)]
