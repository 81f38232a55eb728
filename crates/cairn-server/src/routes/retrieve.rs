//! `POST /retrieve`: one retrieval spec (the body is a spec object) or a batch (the body is
//! an array of specs).

use cairn::retrieve::{Retrieval, RetrieveSpec};

use super::{blocking, JsonBytes};
use crate::error::ApiError;
use crate::extract::{Body, TenantRepo};

/// Most specs in one batch.
pub(crate) const MAX_BATCH: usize = 1000;

/// One spec object: the [`RetrievalResult`](cairn::retrieve::RetrievalResult) JSON,
/// byte for byte what the library serializes (and `cairn retrieve --spec S --json` prints
/// without its newline). A batch (a JSON array of specs): an array with, per spec in
/// order, its result or `{"error": {"code", "message"}}` (one bad spec does not fail the
/// others, as in `cairn retrieve --batch`).
pub(crate) async fn retrieve(TenantRepo(t): TenantRepo, Body(body): Body) -> Result<JsonBytes, ApiError> {
    let text = std::str::from_utf8(&body)
        .map_err(|e| ApiError::bad_request(format!("request body is not UTF-8: {e}")))?
        .to_string();
    if text.trim_start().starts_with('[') {
        let specs: Vec<serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
        if specs.len() > MAX_BATCH {
            return Err(ApiError::bad_request(format!(
                "a batch holds at most {MAX_BATCH} specs, got {}",
                specs.len()
            )));
        }
        return blocking(move || {
            let mut out = b"[".to_vec();
            for (i, spec) in specs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let result = RetrieveSpec::from_json(&spec.to_string())
                    .and_then(|spec| Retrieval::from_spec(&t.repo, spec).execute());
                let bytes = match result {
                    Ok(r) => serde_json::to_vec(&r),
                    Err(e) => serde_json::to_vec(&ApiError::from(e).body()),
                };
                out.extend(bytes.map_err(|e| ApiError::internal(e.to_string()))?);
            }
            out.push(b']');
            Ok(JsonBytes(out))
        })
        .await;
    }
    let spec = RetrieveSpec::from_json(&text)?;
    blocking(move || {
        let result = Retrieval::from_spec(&t.repo, spec).execute()?;
        serde_json::to_vec(&result)
            .map(JsonBytes)
            .map_err(|e| ApiError::internal(e.to_string()))
    })
    .await
}
