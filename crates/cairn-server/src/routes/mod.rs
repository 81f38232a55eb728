//! The HTTP routes: one module per group, each handler a thin layer over one `cairn`
//! call run on a blocking thread.

pub(crate) mod mcp;
pub(crate) mod read;
pub(crate) mod retrieve;
pub(crate) mod sync;
pub(crate) mod write;

use std::sync::Arc;

use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use cairn::NodeId;
use serde::Serialize;

use crate::error::ApiError;
use crate::state::State;

/// The routes of one repository (mounted at `/` or at `/t/{tenant}`).
pub(crate) fn repo_routes() -> Router<Arc<State>> {
    Router::new()
        .route("/retrieve", post(retrieve::retrieve))
        .route("/import", post(write::import))
        .route("/nodes/{id}", get(read::node))
        .route("/nodes/{id}/edges", get(read::edges))
        .route("/nodes/{id}/history", get(read::history))
        .route("/log", get(read::log))
        .route("/diff", get(read::diff))
        .route("/branches", get(read::branches).post(write::create_branch))
        .route("/merge", post(write::merge))
        .route("/index", post(write::index_build))
        .route("/fsck", get(read::fsck))
        .route("/stats", get(read::stats))
        .route("/mcp", post(mcp::mcp))
        .route("/sync/refs", get(sync::refs))
        .route("/sync/missing", post(sync::missing))
        .route("/sync/get", post(sync::get))
        .route("/sync/put", post(sync::put))
        .route("/sync/branch", post(sync::branch))
}

/// Runs a blocking Cairn call on tokio's blocking pool.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the request's task failed: {e}")))?
}

/// A 200 answer whose body is already-serialized JSON.
pub(crate) struct JsonBytes(pub(crate) Vec<u8>);

impl IntoResponse for JsonBytes {
    fn into_response(self) -> Response {
        let mut r = self.0.into_response();
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        r
    }
}

/// `value` as the CLI's `--json` prints it: pretty, with a final newline.
pub(crate) fn pretty(value: &impl Serialize) -> Result<JsonBytes, ApiError> {
    let mut v = serde_json::to_vec_pretty(value).map_err(|e| ApiError::internal(e.to_string()))?;
    v.push(b'\n');
    Ok(JsonBytes(v))
}

/// The `{id}` path parameter as a node id.
pub(crate) struct NodeIdParam(pub(crate) NodeId);

impl<S: Send + Sync> FromRequestParts<S> for NodeIdParam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request(e.body_text()))?;
        let raw = params
            .iter()
            .find(|(k, _)| *k == "id")
            .map(|(_, v)| v.to_string())
            .ok_or_else(|| ApiError::internal("route without a node id"))?;
        NodeId::new(raw)
            .map(NodeIdParam)
            .map_err(|e| ApiError::bad_request(format!("invalid node id: {e}")))
    }
}

/// A time parameter: ms since the epoch or any form [`cairn::parse_time_ms`] reads.
pub(crate) fn parse_time(field: &str, s: &str) -> Result<i64, ApiError> {
    cairn::parse_time_ms(s).ok_or_else(|| {
        ApiError::bad_request(format!(
            "`{field}`: {s:?} is not a time: expected {}",
            cairn::TIME_FORMS
        ))
    })
}
