//! Writes: a JSON Lines import as one commit, a new branch, a merge, an index build.
//! Every write to a repository holds its write lock, so writes are serialized; each
//! still moves its branch by compare-and-swap, and `expected_head` makes the swap
//! explicit: the write lands only if the branch is where the client saw it.

use std::sync::Arc;

use axum::extract::State as Shared;
use cairn::{CommitId, MergeKind, MergeStrategy};
use serde::Deserialize;

use super::{blocking, pretty, JsonBytes};
use crate::error::{ApiError, ErrorCode};
use crate::extract::{Body, JsonBody, Params, TenantRepo};
use crate::state::State;

/// `POST /import` parameters (`cairn import`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImportParams {
    message: Option<String>,
    author: Option<String>,
    /// The branch written [default: the current branch].
    branch: Option<String>,
    /// The commit the client expects the branch to be at (full hex id, or `none` for a
    /// branch with no commit yet); 409 `conflict` if it is elsewhere.
    expected_head: Option<String>,
    #[serde(default)]
    allow_empty: bool,
}

/// The `expected_head` parameter: `none` (or empty) for a branch with no commit.
fn parse_expected(s: &str) -> Result<Option<CommitId>, ApiError> {
    if s.is_empty() || s == "none" {
        return Ok(None);
    }
    CommitId::from_hex(s)
        .map(Some)
        .map_err(|e| ApiError::bad_request(format!("`expected_head`: {e} (a full commit id, or `none`)")))
}

fn show(c: Option<CommitId>) -> String {
    c.map_or_else(|| "none".to_string(), |c| c.to_hex())
}

/// `POST /import?message=&author=&branch=&expected_head=&allow_empty=`, body JSON Lines:
/// one commit (`cairn import --json`: `{"commit", "operations"}`). An import with no
/// operation, or whose operations leave every node and edge as it is, makes no commit
/// unless `allow_empty`: `commit` is null and `head` is the unchanged head. A bad line
/// changes nothing (400 naming the line).
pub(crate) async fn import(
    Shared(state): Shared<Arc<State>>,
    TenantRepo(t): TenantRepo,
    Params(p): Params<ImportParams>,
    Body(body): Body,
) -> Result<JsonBytes, ApiError> {
    let expected = p.expected_head.as_deref().map(parse_expected).transpose()?;
    blocking(move || {
        let _write = t.write_lock();
        let repo = &t.repo;
        let mut tx = match &p.branch {
            Some(b) => repo.transaction_on(b)?,
            None => repo.transaction()?,
        };
        if let Some(expected) = expected {
            if tx.base() != expected {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    format!(
                        "the branch moved: expected_head is {}, the branch is at {}; nothing was changed",
                        show(expected),
                        show(tx.base())
                    ),
                ));
            }
        }
        if let Some(author) = p.author {
            tx.set_author(author)?;
        }
        let operations = tx.import_jsonl(std::io::Cursor::new(&body[..]), &mut |_| {})?;
        // No operation, or none that changes a node or an edge: no commit, the head stays.
        let message = p.message.unwrap_or_else(|| "import over HTTP".to_string());
        let summary = tx.commit_import(&message, operations, p.allow_empty)?;
        if summary.commit.is_some() {
            state.metrics.record_commit();
        }
        pretty(&summary)
    })
    .await
}

/// `POST /branches` body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewBranch {
    name: String,
    /// Where it starts [default: HEAD].
    at: Option<String>,
}

/// `POST /branches` `{"name", "at"}`: creates a branch; answers `{"name", "head"}`.
pub(crate) async fn create_branch(
    TenantRepo(t): TenantRepo,
    JsonBody(b): JsonBody<NewBranch>,
) -> Result<JsonBytes, ApiError> {
    blocking(move || {
        let _write = t.write_lock();
        let head = t.repo.create_branch(&b.name, b.at.as_deref())?;
        pretty(&serde_json::json!({"name": b.name, "head": head}))
    })
    .await
}

/// `POST /merge` body (`cairn merge`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MergeRequest {
    /// What to merge: a branch or any revision.
    theirs: String,
    /// The branch merged into [default: the current branch].
    into: Option<String>,
    /// `manual` (default: conflicts fail with 409 `merge_conflicts`), `ours` or `theirs`.
    #[serde(default)]
    strategy: Strategy,
    message: Option<String>,
    author: Option<String>,
    /// As for imports: the head `into` must be at.
    expected_head: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Strategy {
    #[default]
    Manual,
    Ours,
    Theirs,
}

/// `POST /merge` `{"theirs", "into", "strategy", "message", "author", "expected_head"}`:
/// `cairn merge --json`'s outcome. Unsettled conflicts: 409 `merge_conflicts`, the
/// outcome (with the conflicts in full) in `error.details`, nothing committed.
pub(crate) async fn merge(
    Shared(state): Shared<Arc<State>>,
    TenantRepo(t): TenantRepo,
    JsonBody(m): JsonBody<MergeRequest>,
) -> Result<JsonBytes, ApiError> {
    let expected = m.expected_head.as_deref().map(parse_expected).transpose()?;
    blocking(move || {
        let _write = t.write_lock();
        let repo = &t.repo;
        let ours = match &m.into {
            Some(b) => b.clone(),
            None => repo.current_branch()?.to_string(),
        };
        let strategy = match m.strategy {
            Strategy::Manual => MergeStrategy::Manual,
            Strategy::Ours => MergeStrategy::Ours,
            Strategy::Theirs => MergeStrategy::Theirs,
        };
        let mut merge = repo.merge_with(&ours, &m.theirs, strategy)?;
        if let Some(expected) = expected {
            if merge.ours() != expected {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    format!(
                        "the branch moved: expected_head is {}, `{ours}` is at {}; nothing was changed",
                        show(expected),
                        show(merge.ours())
                    ),
                ));
            }
        }
        if let Some(a) = m.author {
            merge.set_author(a)?;
        }
        let unresolved = merge.unresolved();
        let dropped = merge.dropped_edges()?;
        let commit = if unresolved == 0 {
            let message = m.message.unwrap_or_else(|| format!("merge {} into {ours}", m.theirs));
            let c = merge.commit(&message)?;
            if merge.kind() != MergeKind::UpToDate {
                state.metrics.record_commit();
            }
            Some(c)
        } else {
            None
        };
        let outcome = merge.summary(commit, dropped)?;
        if unresolved > 0 {
            let mut e = ApiError::new(
                ErrorCode::MergeConflicts,
                format!(
                    "merge has {unresolved} conflict(s); choose a strategy (`ours` or `theirs`); nothing was committed"
                ),
            );
            e.details = Some(serde_json::to_value(&outcome).map_err(|e| ApiError::internal(e.to_string()))?);
            return Err(e);
        }
        pretty(&outcome)
    })
    .await
}

/// `POST /index` body (`cairn index build`).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct IndexRequest {
    /// The revision [default: HEAD].
    at: Option<String>,
    /// Also build the HNSW unit graphs.
    #[serde(default)]
    graphs: bool,
}

/// `POST /index` `{"at", "graphs"}` (an empty body is `{}`): `cairn index build --json`.
pub(crate) async fn index_build(TenantRepo(t): TenantRepo, Body(body): Body) -> Result<JsonBytes, ApiError> {
    let req: IndexRequest = if body.iter().all(u8::is_ascii_whitespace) {
        IndexRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?
    };
    blocking(move || {
        pretty(
            &t.repo
                .build_indexes_with(req.at.as_deref().unwrap_or("HEAD"), req.graphs)?,
        )
    })
    .await
}
