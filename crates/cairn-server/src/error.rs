//! The typed errors of the HTTP API: every failure is answered with a status and a JSON
//! body `{"error": {"code": "...", "message": "..."}}` whose `code` is stable.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// The stable machine-readable code of an API error (the `error.code` field of the body).
///
/// ```
/// use cairn_server::ErrorCode;
/// assert_eq!(ErrorCode::Conflict.as_str(), "conflict");
/// assert_eq!(ErrorCode::Conflict.status().as_u16(), 409);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// 400: a malformed body, query or path (bad JSON, an unknown field, a bad id or spec,
    /// a bad import line).
    BadRequest,
    /// 401: no bearer token, or one the server does not know.
    Unauthorized,
    /// 403: a known token of another tenant.
    Forbidden,
    /// 404: no such route, tenant, revision, branch or node.
    NotFound,
    /// 405: the route exists with another method.
    MethodNotAllowed,
    /// 409: the branch moved (lost compare-and-swap race, or `expected_head` is stale):
    /// nothing was changed; read the new head and retry.
    Conflict,
    /// 409: a branch or tag of that name exists.
    AlreadyExists,
    /// 409: a merge whose conflicts were not settled; nothing was committed.
    MergeConflicts,
    /// 413: the request body is over the server's limit.
    PayloadTooLarge,
    /// 503: the request took longer than the server's request timeout. A write may still
    /// land: retry it with `expected_head` to make the retry safe.
    Timeout,
    /// 503: the repository is held by another process, or the server is shutting down.
    Unavailable,
    /// 507: the disk is full; nothing was committed.
    NoSpace,
    /// 502: the repository's embedder failed while embedding on write (its service or
    /// model; the message says which and why): nothing was committed.
    Embedder,
    /// 500: anything else (a storage or corruption failure); the message says what.
    Internal,
}

impl ErrorCode {
    /// The code as it appears in the JSON body.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::Conflict => "conflict",
            ErrorCode::AlreadyExists => "already_exists",
            ErrorCode::MergeConflicts => "merge_conflicts",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::NoSpace => "no_space",
            ErrorCode::Internal => "internal",
            ErrorCode::Embedder => "embedder",
        }
    }

    /// The HTTP status answered with this code.
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::BadRequest => StatusCode::BAD_REQUEST,
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::Forbidden => StatusCode::FORBIDDEN,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::Conflict | ErrorCode::AlreadyExists | ErrorCode::MergeConflicts => StatusCode::CONFLICT,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::Timeout | ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::NoSpace => StatusCode::INSUFFICIENT_STORAGE,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Embedder => StatusCode::BAD_GATEWAY,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API error: a code, a message for people, and optional structured details (a
/// merge's conflicts).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The stable code.
    pub code: ErrorCode,
    /// What went wrong, naming the input at fault.
    pub message: String,
    /// Structured details (the `error.details` field), if any.
    pub details: Option<serde_json::Value>,
}

impl ApiError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// A 400 [`ErrorCode::BadRequest`].
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::BadRequest, message)
    }

    /// A 404 [`ErrorCode::NotFound`].
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::NotFound, message)
    }

    /// A 500 [`ErrorCode::Internal`].
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Internal, message)
    }

    /// The JSON body of the error.
    pub fn body(&self) -> serde_json::Value {
        let mut error = serde_json::json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.details {
            error["details"] = d.clone();
        }
        serde_json::json!({ "error": error })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.code.status(), axum::Json(self.body())).into_response()
    }
}

impl From<cairn::Error> for ApiError {
    /// By [`cairn::Error::kind`], the one classification every front end maps from (a
    /// merge's unresolved conflicts keep their own code).
    fn from(e: cairn::Error) -> ApiError {
        let code = match &e {
            cairn::Error::MergeConflicts(_) => ErrorCode::MergeConflicts,
            _ => kind_code(e.kind()),
        };
        ApiError::new(code, e.to_string())
    }
}

impl From<cairn::retrieve::RetrieveError> for ApiError {
    fn from(e: cairn::retrieve::RetrieveError) -> ApiError {
        ApiError::new(kind_code(cairn::ErrorKind::of_retrieve(&e)), e.to_string())
    }
}

/// The HTTP code of an error kind.
fn kind_code(kind: cairn::ErrorKind) -> ErrorCode {
    use cairn::ErrorKind as K;
    match kind {
        K::InvalidInput => ErrorCode::BadRequest,
        K::NotFound => ErrorCode::NotFound,
        K::AlreadyExists => ErrorCode::AlreadyExists,
        K::Conflict => ErrorCode::Conflict,
        K::Locked => ErrorCode::Unavailable,
        K::NoSpace => ErrorCode::NoSpace,
        K::Embedder => ErrorCode::Embedder,
        // Damage and other storage failures: the message names what.
        _ => ErrorCode::Internal,
    }
}
