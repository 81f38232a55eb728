//! Reads: a node, its edges and history, the log, a diff, branches, stats, fsck. Each
//! answers what the matching `cairn ... --json` command prints, byte for byte.

use axum::extract::State as Shared;
use cairn::diff::{edge_field_changes, node_field_changes, FieldChange};
use cairn::export::{EdgeLine, NodeLine};
use cairn::{ChangeKind, CommitId, LogEntry, NodeHistoryEntry};
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

#[derive(Serialize)]
struct Shown<'a> {
    commit: CommitId,
    #[serde(flatten)]
    node: NodeLine<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_at: Option<ValidAtCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    edges: Option<Edges<'a>>,
}

#[derive(Serialize)]
struct Edges<'a> {
    out: Vec<EdgeLine<'a>>,
    #[serde(rename = "in")]
    incoming: Vec<EdgeLine<'a>>,
}

#[derive(Serialize)]
struct ValidAtCheck {
    time_ms: i64,
    valid: bool,
}

/// `GET /nodes/{id}?at=&valid_at=&edges=true`: `cairn show ID --json`.
pub(crate) async fn node(
    TenantRepo(t): TenantRepo,
    NodeIdParam(id): NodeIdParam,
    Params(p): Params<NodeParams>,
) -> Result<JsonBytes, ApiError> {
    blocking(move || {
        let repo = &t.repo;
        let at = repo.resolve(p.at.as_deref().unwrap_or("HEAD"))?;
        let node = repo.node_at(&at, &id)?.ok_or_else(|| cairn::Error::NodeNotFound {
            id: id.clone(),
            at: Some(at),
        })?;
        let valid_at = match p.valid_at.as_deref().map(|s| parse_time("valid_at", s)).transpose()? {
            Some(t) => Some(ValidAtCheck {
                time_ms: t,
                valid: repo.view_at(&at)?.valid_at(t).node(&node.id)?.is_some(),
            }),
            None => None,
        };
        let (out, incoming) = if p.edges {
            (repo.edges_from(&at, &node.id)?, repo.edges_to(&at, &node.id)?)
        } else {
            (Vec::new(), Vec::new())
        };
        pretty(&Shown {
            commit: at,
            node: NodeLine::of(&node),
            valid_at,
            edges: p.edges.then(|| Edges {
                out: out.iter().map(EdgeLine::of).collect(),
                incoming: incoming.iter().map(EdgeLine::of).collect(),
            }),
        })
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
        let out = repo.edges_from(&at, &id)?;
        let incoming = repo.edges_to(&at, &id)?;
        #[derive(Serialize)]
        struct Answer<'a> {
            commit: CommitId,
            #[serde(flatten)]
            edges: Edges<'a>,
        }
        pretty(&Answer {
            commit: at,
            edges: Edges {
                out: out.iter().map(EdgeLine::of).collect(),
                incoming: incoming.iter().map(EdgeLine::of).collect(),
            },
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
    blocking(move || {
        let repo = &t.repo;
        let entries = match &p.branch {
            Some(rev) => repo.history_of(rev, &id, p.limit)?,
            None => match repo.head()? {
                Some(head) => repo.history_of(&head.to_hex(), &id, p.limit)?,
                None => Vec::new(),
            },
        };
        #[derive(Serialize)]
        struct Entry<'a> {
            #[serde(flatten)]
            entry: &'a NodeHistoryEntry,
            message: String,
        }
        let with_messages = entries
            .iter()
            .map(|e| {
                Ok(Entry {
                    entry: e,
                    message: repo.commit(&e.commit)?.message,
                })
            })
            .collect::<Result<Vec<_>, cairn::Error>>()?;
        pretty(&with_messages)
    })
    .await
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
    blocking(move || {
        let repo = &t.repo;
        let (from, to) = match &p.to {
            Some(to) => (repo.resolve(&p.from)?, repo.resolve(to)?),
            None => {
                let to = repo.resolve(&p.from)?;
                match repo.commit(&to)?.parents.first().copied() {
                    Some(parent) => (parent, to),
                    None => {
                        return Err(ApiError::bad_request(format!(
                            "{} is a root commit: it has no parent to compare with (give `to`)",
                            to.short()
                        )))
                    }
                }
            }
        };
        let diff = repo.diff(&from, &to)?;
        let json = |v: Result<serde_json::Value, serde_json::Error>| v.map_err(|e| ApiError::internal(e.to_string()));
        let with = |v: serde_json::Value, fields: &[FieldChange]| -> Result<serde_json::Value, ApiError> {
            let mut v = v;
            v["fields"] = json(serde_json::to_value(fields))?;
            Ok(v)
        };
        let mut nodes = Vec::with_capacity(diff.nodes.len());
        for n in &diff.nodes {
            let fields = match n.kind {
                ChangeKind::Changed => match (repo.node_at(&from, &n.id)?, repo.node_at(&to, &n.id)?) {
                    (Some(b), Some(a)) => node_field_changes(&b, &a),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            nodes.push(with(json(serde_json::to_value(n))?, &fields)?);
        }
        let mut edges = Vec::with_capacity(diff.edges.len());
        for e in &diff.edges {
            let fields = match e.kind {
                ChangeKind::Changed => match (repo.edge_at(&from, &e.key)?, repo.edge_at(&to, &e.key)?) {
                    (Some(b), Some(a)) => edge_field_changes(&b, &a),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            edges.push(with(json(serde_json::to_value(e))?, &fields)?);
        }
        pretty(&serde_json::json!({"from": diff.from, "to": diff.to, "nodes": nodes, "edges": edges}))
    })
    .await
}

/// `GET /branches`: `{"current": NAME, "branches": [{"name", "head"}]}` (`head` is null
/// for the current branch before its first commit).
pub(crate) async fn branches(TenantRepo(t): TenantRepo) -> Result<JsonBytes, ApiError> {
    blocking(move || {
        let repo = &t.repo;
        let current = repo.current_branch()?.to_string();
        let mut rows: Vec<(String, Option<CommitId>)> =
            repo.branches()?.into_iter().map(|(b, c)| (b, Some(c))).collect();
        if !rows.iter().any(|(b, _)| *b == current) {
            rows.push((current.clone(), None));
            rows.sort();
        }
        let branches: Vec<serde_json::Value> = rows
            .into_iter()
            .map(|(name, head)| serde_json::json!({"name": name, "head": head}))
            .collect();
        pretty(&serde_json::json!({"current": current, "branches": branches}))
    })
    .await
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
