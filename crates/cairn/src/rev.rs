//! Revision syntax: what `--at`, `diff A B` and `retrieve().at(...)` accept.
//!
//! - a full commit id (64 hex digits) or a unique prefix of at least 4 digits;
//! - a branch name, or `HEAD` (the current branch's head);
//! - any of those followed by `~N`: the N-th first-parent ancestor;
//! - `BRANCH@{T}`: the head BRANCH had at transaction time T (ms since the epoch, or an
//!   RFC 3339 time).

use cairn_core::ids::is_hex_prefix;
use cairn_core::CommitId;
use cairn_graph::history;
use cairn_graph::refs::BranchName;

use crate::error::{Error, Result};
use crate::repo::Repo;

/// Parses a time given as integer ms since the epoch or as RFC 3339.
pub fn parse_time_ms(s: &str) -> Option<i64> {
    if let Ok(ms) = s.trim().parse::<i64>() {
        return Some(ms);
    }
    let t = time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
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
    history::nth_first_parent(repo.objects(), start, steps)?
        .ok_or_else(|| unknown(&format!("history of {} is shorter than {steps} commits", start.short())))
}

fn resolve_base(repo: &Repo, rev: &str) -> Result<CommitId> {
    let unknown = |detail: String| Error::UnknownRevision {
        rev: rev.to_string(),
        detail,
    };
    if let Some((branch, rest)) = rev.split_once("@{") {
        let t = rest
            .strip_suffix('}')
            .and_then(parse_time_ms)
            .ok_or_else(|| unknown("expected BRANCH@{TIME} with TIME in ms or RFC 3339".into()))?;
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
            0 => Err(unknown("no branch, and no commit with that prefix".into())),
            1 => Ok(matches[0]),
            count => Err(Error::AmbiguousRevision {
                prefix: rev.to_string(),
                count,
            }),
        };
    }
    Err(unknown("not a branch, commit id, HEAD, or BRANCH@{TIME}".into()))
}
