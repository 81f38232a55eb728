//! Request extractors that answer every rejection with a typed JSON error: the tenant's
//! repository (after the token check), a JSON body, query parameters, a body as bytes.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ErrorCode};
use crate::state::{State, Tenant, DEFAULT_TENANT};

/// The repository a request is for, its token checked.
pub(crate) struct TenantRepo(pub(crate) Arc<Tenant>);

impl FromRequestParts<Arc<State>> for TenantRepo {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<State>) -> Result<Self, Self::Rejection> {
        let name = if state.multi_tenant() {
            let params = RawPathParams::from_request_parts(parts, state)
                .await
                .map_err(|e| ApiError::bad_request(e.body_text()))?;
            params
                .iter()
                .find(|(k, _)| *k == "tenant")
                .map(|(_, v)| v.to_string())
                .ok_or_else(|| ApiError::internal("route without a tenant"))?
        } else {
            DEFAULT_TENANT.to_string()
        };
        let authorization = parts.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        state.authorize(authorization, &name)?;
        let state = state.clone();
        let tenant = tokio::task::spawn_blocking(move || state.tenant_blocking(&name))
            .await
            .map_err(|e| ApiError::internal(format!("opening the repository failed: {e}")))??;
        Ok(TenantRepo(tenant))
    }
}

/// A JSON body deserialized into `T` (whose unknown fields are refused); any content type.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Body(bytes) = Body::from_request(req, state).await?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
    }
}

/// The raw body, within the size limit (413 `payload_too_large` past it).
pub(crate) struct Body(pub(crate) Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        Bytes::from_request(req, state).await.map(Body).map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(ErrorCode::PayloadTooLarge, "request body is over the server's limit")
            } else {
                ApiError::bad_request(format!("cannot read the request body: {}", e.body_text()))
            }
        })
    }
}

/// Query parameters deserialized into `T` (whose unknown parameters are refused).
pub(crate) struct Params<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(t)| Params(t))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}
