//! What the read commands return, shaped as every interface shows them: `cairn … --json`,
//! the server's answers, Python's values (one shape each, so the outputs agree).
//!
//! * `branch_list` — the branches ([`BranchList`](crate::BranchList));
//! * `diff_report` — a diff with the fields that changed ([`DiffReport`](crate::DiffReport));
//! * `history_line` — one entry of a node's history ([`HistoryLine`](crate::HistoryLine));
//! * `log_entry` — one commit of a log ([`LogEntry`](crate::LogEntry));
//! * `shown_node` — one node as `show` prints it ([`ShownNode`](crate::ShownNode)).

pub(crate) mod branch_list;
pub(crate) mod diff_report;
pub(crate) mod history_line;
pub(crate) mod log_entry;
pub(crate) mod shown_node;
