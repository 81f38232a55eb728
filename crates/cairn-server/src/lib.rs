//! # cairn-server
//!
//! An HTTP server over Cairn repositories.
#![warn(missing_docs)]
