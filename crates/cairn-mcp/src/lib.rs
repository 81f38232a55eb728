//! # cairn-mcp
//!
//! The Model Context Protocol over stdio for a Cairn repository.
#![warn(missing_docs)]
