//! Reads: a node, its edges and history, the log, a diff, branches, stats, fsck. Each
//! answers what the matching `cairn ... --json` command prints, byte for byte.

use axum::extract::State as Shared;
use cairn::{BranchList, CommitId, DiffReport, HistoryLine, LogEntry, NodeEdges, ShownNode};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::{blocking, parse_time, pretty, JsonBytes, NodeIdParam};
use crate::error::ApiError;
use crate::extract::{Params, TenantRepo};
use crate::state::State;

/// `?at=REV` (default `HEAD`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct At {
    at: Option<String>,
}

/// `GET /nodes/{id}` parameters (`cairn show`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeParams {
    at: Option<String>,
    valid_at: Option<String>,
    #[serde(default)]
    edges: bool,
}

/// `GET /nodes/{id}?at=&valid_at=&edges=true`: `cairn show ID --json`.
pub(crate) async fn node(
    TenantRepo(t): TenantRepo,
    NodeIdParam(id): NodeIdParam,
    Params(p): Params<NodeParams>,
) -> Result<JsonBytes, ApiError> {
    blocking(move || {
        let valid_at = p.valid_at.as_deref().map(|s| parse_time("valid_at", s)).transpose()?;
        let rev = p.at.as_deref().unwrap_or("HEAD");
        pretty(&ShownNode::read(&t.repo, rev, &id, valid_at, p.edges)?)
    })
    .await
}

/// `GET /nodes/{id}/edges?at=`: `{"commit", "out": [...], "in": [...]}` in the export
/// format's field names. A node absent at the revision is 404.
pub(crate) async fn edges(
    TenantRepo(t): TenantRepo,
    NodeIdParam(id): NodeIdParam,
    Params(p): Params<At>,
) -> Result<JsonBytes, ApiError> {
    blocking(move || {
        let repo = &t.repo;
        let at = repo.resolve(p.at.as_deref().unwrap_or("HEAD"))?;
        if repo.node_at(&at, &id)?.is_none() {
            return Err(cairn::Error::NodeNotFound { id, at: Some(at) }.into());
        }
        #[derive(Serialize)]
        struct Answer {
            commit: CommitId,
            #[serde(flatten)]
            edges: NodeEdges,
        }
        pretty(&Answer {
            commit: at,
            edges: NodeEdges::read(repo, &at, &id)?,
        })
    })
    .await
}

/// `GET /nodes/{id}/history` parameters (`cairn history`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryParams {
    branch: Option<String>,
    limit: Option<usize>,
}

/// `GET /nodes/{id}/history?branch=&limit=`: `cairn history ID --json`.
pub(crate) async fn history(
    TenantRepo(t): TenantRepo,
    NodeIdParam(id): NodeIdParam,
    Params(p): Params<HistoryParams>,
) -> Result<JsonBytes, ApiError> {
    blocking(move || pretty(&HistoryLine::list(&t.repo, p.branch.as_deref(), &id, p.limit)?)).await
}

/// `GET /log` parameters (`cairn log`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogParams {
    rev: Option<String>,
    limit: Option<usize>,
}

/// `GET /log?rev=&limit=`: `cairn log [REV] [-n N] --json`.
pub(crate) async fn log(TenantRepo(t): TenantRepo, Params(p): Params<LogParams>) -> Result<JsonBytes, ApiError> {
    blocking(move || {
        let commits = t.repo.log(p.rev.as_deref(), p.limit)?;
        let entries: Vec<LogEntry> = commits.iter().map(|(id, c)| LogEntry::new(*id, c)).collect();
        pretty(&entries)
    })
    .await
}

/// `GET /diff` parameters (`cairn diff FROM [TO]`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DiffParams {
    from: String,
    to: Option<String>,
}

/// `GET /diff?from=&to=`: `cairn diff FROM [TO] --json` (without `to`: `from` against
/// its first parent).
pub(crate) async fn diff(TenantRepo(t): TenantRepo, Params(p): Params<DiffParams>) -> Result<JsonBytes, ApiError> {
    blocking(move || pretty(&DiffReport::for_revisions(&t.repo, &p.from, p.to.as_deref())?)).await
}

/// `GET /branches`: the [`BranchList`], `{"branches": [{"head", "name"}], "current": NAME}`
/// (`head` is null for the current branch before its first commit).
pub(crate) async fn branches(TenantRepo(t): TenantRepo) -> Result<JsonBytes, ApiError> {
    blocking(move || pretty(&BranchList::read(&t.repo)?)).await
}

/// `GET /stats?at=`: `cairn stats --json`.
pub(crate) async fn stats(TenantRepo(t): TenantRepo, Params(p): Params<At>) -> Result<JsonBytes, ApiError> {
    blocking(move || {
        let at = t.repo.resolve(p.at.as_deref().unwrap_or("HEAD"))?;
        pretty(&t.repo.stats(&at)?)
    })
    .await
}

/// `GET /fsck`: `cairn fsck --json` (the report; a damaged repository is still 200 with
/// its problems listed: read `problems`).
pub(crate) async fn fsck(TenantRepo(t): TenantRepo, Params(_): Params<Empty>) -> Result<JsonBytes, ApiError> {
    blocking(move || pretty(&t.repo.fsck()?)).await
}

/// No parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Empty {}

/// `GET /health`: `{"status": "ok"}` while the server runs.
pub(crate) async fn health(Shared(_): Shared<Arc<State>>) -> JsonBytes {
    JsonBytes(br#"{"status":"ok"}"#.to_vec())
}
