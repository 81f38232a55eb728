//! The sync protocol's routes (`cairn clone/fetch/push/pull` against this server): a thin
//! layer over [`cairn::SyncServer`], which defines every body (storage-format §5.3).
//! They sit behind the same tenant tokens as every other route; a push's object upload
//! and its branch move each hold the tenant's write lock.

use axum::response::{IntoResponse, Response};
use cairn::SyncBranch;

use super::{blocking, pretty, JsonBytes};
use crate::error::ApiError;
use crate::extract::{Body, JsonBody, TenantRepo};

/// An octet-stream answer.
fn octets(bytes: Vec<u8>) -> Response {
    ([(axum::http::header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
}

/// `GET /sync/refs`: the branches, the current branch, the dimension records and the
/// settings a clone copies.
pub(crate) async fn refs(TenantRepo(t): TenantRepo) -> Result<JsonBytes, ApiError> {
    blocking(move || pretty(&t.repo.sync_server().refs()?)).await
}

/// `POST /sync/missing`, body: hashes; answer: one byte per hash, 1 if missing here.
pub(crate) async fn missing(TenantRepo(t): TenantRepo, Body(body): Body) -> Result<Response, ApiError> {
    blocking(move || Ok(octets(t.repo.sync_server().missing(&body)?))).await
}

/// `POST /sync/get`, body: hashes; answer: each object as `u32le(len) ‖ bytes`.
pub(crate) async fn get(TenantRepo(t): TenantRepo, Body(body): Body) -> Result<Response, ApiError> {
    blocking(move || Ok(octets(t.repo.sync_server().get(&body)?))).await
}

/// `POST /sync/put`, body: objects (each `hash ‖ u32le(len) ‖ bytes`, children first);
/// answer `{"objects": n}` once they are durable.
pub(crate) async fn put(TenantRepo(t): TenantRepo, Body(body): Body) -> Result<JsonBytes, ApiError> {
    blocking(move || {
        let _write = t.write_lock();
        let n = t.repo.sync_server().put(&body)?;
        pretty(&serde_json::json!({ "objects": n }))
    })
    .await
}

/// `POST /sync/branch`, body JSON `{"branch", "old", "new", "dims"}`: moves the branch by
/// compare-and-swap (409 `conflict` if it is not at `old`).
pub(crate) async fn branch(
    TenantRepo(t): TenantRepo,
    JsonBody(req): JsonBody<SyncBranch>,
) -> Result<JsonBytes, ApiError> {
    blocking(move || {
        let _write = t.write_lock();
        let old = t.repo.sync_server().branch(&req)?;
        pretty(&serde_json::json!({ "old": old.map(|c| c.to_hex()), "new": req.new }))
    })
    .await
}
