//! Revision syntax: what `--at`, `diff A B` and `retrieve().at(...)` accept.
//!
//! - a full commit id (64 hex digits) or a unique prefix of at least 4 digits;
//! - a branch name, a tag name (a branch wins a tie), or `HEAD` (the current branch's head);
//! - any of those followed by `~N`: the N-th first-parent ancestor;
//! - `BRANCH@{T}`: the head BRANCH had at transaction time T (ms since the epoch, or an
//!   RFC 3339 time);
//! - `BRANCH@{#N}`: the head BRANCH had N moves ago, per the [reflog](crate::reflog)
//!   (`@{#0}` is its head after the newest move; a deleted branch's `@{#1}` is its last
//!   head). Git writes this `BRANCH@{N}`, but here a bare number in braces is already a
//!   time (ms since the epoch), so the reflog form takes a `#`.
//!
//! `HEAD@{…}` and `@{…}` stand for the current branch.

use cairn_core::ids::is_hex_prefix;
use cairn_core::CommitId;
use cairn_graph::history;
use cairn_graph::refs::BranchName;

use crate::error::{Error, Result};
use crate::repo::Repo;

// The one time parser (the CLI's `--valid-at`, import lines, retrieve specs, the server
// and MCP tools all read times with it); it lives in `cairn-retrieve`, which reads a
// spec's `valid_at` with it too.
pub use cairn_retrieve::time_expr::{format_time_ms, parse_time, parse_time_ms, TimeParseError, TIME_FORMS};

/// A [`SystemTime`](std::time::SystemTime) as ms since the epoch (negative before it;
/// saturating far outside `i64` ms), the unit every Cairn time is in.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// assert_eq!(cairn::system_time_ms(UNIX_EPOCH + Duration::from_millis(1500)), 1500);
/// assert_eq!(cairn::system_time_ms(UNIX_EPOCH - Duration::from_millis(2)), -2);
/// ```
pub fn system_time_ms(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

pub(crate) fn resolve(repo: &Repo, rev: &str) -> Result<CommitId> {
    let unknown = |detail: &str| Error::UnknownRevision {
        rev: rev.to_string(),
        detail: detail.to_string(),
    };
    let (base, steps) = match rev.rsplit_once('~') {
        Some((b, n)) if !b.is_empty() => {
            let n: usize = if n.is_empty() {
                1
            } else {
                n.parse().map_err(|_| unknown("`~` must be followed by a number"))?
            };
            (b, n)
        }
        _ => (rev, 0),
    };
    let start = resolve_base(repo, base).map_err(|e| match e {
        Error::UnknownRevision { detail, .. } => unknown(&detail),
        other => other,
    })?;
    history::nth_first_parent(repo.objects(), start, steps)?.ok_or_else(|| {
        let commits = if steps == 1 { "commit" } else { "commits" };
        unknown(&format!(
            "history of {} has no commit {steps} {commits} back (it is shorter)",
            start.short()
        ))
    })
}

/// `BRANCH@{#n}`: the head `branch` (empty or `HEAD`: the current branch) had `n` moves
/// ago.
fn reflog_nth(repo: &Repo, branch: &str, n: usize) -> Result<CommitId> {
    let branch = if branch.is_empty() || branch == "HEAD" {
        repo.current_branch()?.to_string()
    } else {
        branch.to_string()
    };
    let unknown = |detail: String| Error::UnknownRevision {
        rev: format!("{branch}@{{#{n}}}"),
        detail,
    };
    let entries = repo.reflog(&branch)?;
    let Some(entry) = entries.get(n) else {
        return Err(unknown(format!(
            "the reflog of `{branch}` has {} entries (gc drops those past the grace period)",
            entries.len()
        )));
    };
    entry.new.ok_or_else(|| {
        unknown(format!(
            "`{branch}` was deleted by that move (its head before it is @{{#{}}})",
            n + 1
        ))
    })
}

fn resolve_base(repo: &Repo, rev: &str) -> Result<CommitId> {
    let unknown = |detail: String| Error::UnknownRevision {
        rev: rev.to_string(),
        detail,
    };
    if let Some((branch, rest)) = rev.split_once("@{") {
        if let Some(n) = rest.strip_prefix('#') {
            let n: usize = n
                .strip_suffix('}')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| unknown("expected BRANCH@{#N} with N a number of moves back".into()))?;
            return reflog_nth(repo, branch, n).map_err(|e| match e {
                Error::UnknownRevision { detail, .. } => unknown(detail),
                other => other,
            });
        }
        let t = rest
            .strip_suffix('}')
            .and_then(parse_time_ms)
            .ok_or_else(|| unknown(format!("expected BRANCH@{{TIME}} with TIME as {TIME_FORMS}")))?;
        let branch = if branch.is_empty() || branch == "HEAD" {
            repo.current_branch()?.to_string()
        } else {
            branch.to_string()
        };
        return repo
            .as_of(&branch, t)?
            .ok_or_else(|| unknown(format!("branch `{branch}` had no commit at or before {t}")));
    }
    if rev == "HEAD" {
        return repo
            .head()?
            .ok_or_else(|| unknown("the current branch has no commits yet".into()));
    }
    if let Ok(b) = BranchName::new(rev) {
        if let Some(c) = repo.refs().branch(&b)? {
            return Ok(c);
        }
        if let Some(c) = repo.refs().tag(&b)? {
            return Ok(c);
        }
        // `origin/main`: a remote-tracking branch.
        if let Some((remote, branch)) = rev.split_once('/') {
            if let Ok(branch) = BranchName::new(branch) {
                if let Some(c) = repo.refs().remote_branch(remote, &branch)? {
                    return Ok(c);
                }
            }
        }
    }
    if rev.len() == 64 {
        if let Ok(id) = CommitId::from_hex(rev) {
            return match repo.commit(&id) {
                Ok(_) => Ok(id),
                Err(Error::Graph(cairn_graph::GraphError::NotFound { .. })) => Err(unknown("no such commit".into())),
                Err(e) => Err(e),
            };
        }
    }
    if rev.len() >= 4 && is_hex_prefix(rev) {
        let prefix = rev.to_ascii_lowercase();
        let heads: Vec<CommitId> = repo
            .refs()
            .branches()?
            .into_iter()
            .chain(repo.refs().tags()?)
            .map(|(_, c)| c)
            .collect();
        let matches: Vec<CommitId> = history::log(repo.objects(), &heads, None)?
            .into_iter()
            .map(|(id, _)| id)
            .filter(|id| id.to_hex().starts_with(&prefix))
            .collect();
        return match matches.len() {
            0 => Err(unknown(
                "no branch or tag of that name, and no commit reachable from a branch or tag with that prefix".into(),
            )),
            1 => Ok(matches[0]),
            count => Err(Error::AmbiguousRevision {
                prefix: rev.to_string(),
                count,
            }),
        };
    }
    if !rev.is_empty() && rev.len() < 4 && is_hex_prefix(rev) {
        return Err(unknown(
            "no branch or tag of that name; a commit id prefix needs at least 4 hex digits".into(),
        ));
    }
    Err(unknown(
        "not a branch, a tag, a remote-tracking branch (REMOTE/BRANCH), a commit id (64 hex digits, or a unique prefix of at least 4), HEAD, REV~N, BRANCH@{TIME} or BRANCH@{#N}"
            .into(),
    ))
}
