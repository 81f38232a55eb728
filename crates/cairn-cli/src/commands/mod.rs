//! The commands, one module each: an `Args` struct (clap derive) and a `run(ctx, args)`
//! function (`main.rs` dispatches).

pub(crate) mod branch;
pub(crate) mod diff;
pub(crate) mod embedder;
pub(crate) mod eval;
pub(crate) mod export;
pub(crate) mod fsck;
pub(crate) mod gc;
pub(crate) mod history;
pub(crate) mod import;
pub(crate) mod index;
pub(crate) mod init;
pub(crate) mod log;
pub(crate) mod mcp;
pub(crate) mod merge;
pub(crate) mod reflog;
pub(crate) mod remote;
pub(crate) mod retrieve;
pub(crate) mod serve;
pub(crate) mod show;
pub(crate) mod stats;
pub(crate) mod sync;
pub(crate) mod tag;
