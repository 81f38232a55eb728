//! JSON-RPC 2.0 framing: what a message must look like, the error codes, and how a
//! response is written.
//!
//! Responses are assembled from JSON fragments that are each already valid JSON (the
//! request's id, and a result serialized once), so a tool's structured result reaches the
//! client byte for byte as the library serialized it — the same bytes `cairn retrieve
//! --json` prints — rather than after a round trip through `serde_json::Value` (which
//! would print an `f32` score with `f64` digits).

use serde_json::{Map, Value};

/// Invalid JSON was received (JSON-RPC 2.0 "Parse error").
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object (JSON-RPC 2.0 "Invalid Request").
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist (JSON-RPC 2.0 "Method not found").
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters: a `tools/call` without a tool name, an unknown tool,
/// arguments that are not an object (JSON-RPC 2.0 "Invalid params"). A tool's own
/// argument values are checked by the tool and refused with a tool result whose
/// `isError` is true, so the model can read the message and correct itself.
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed while handling a valid request (JSON-RPC 2.0 "Internal error").
pub const INTERNAL_ERROR: i64 = -32603;

/// A protocol-level failure, answered with a JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    /// One of the codes above.
    pub code: i64,
    /// What was wrong, for a human.
    pub message: String,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }
}

/// A message that passed the envelope checks.
#[derive(Debug)]
pub(crate) enum Message {
    /// A request: it gets exactly one response with this id.
    Request {
        /// A string or a number, echoed back verbatim.
        id: Value,
        method: String,
        params: Option<Value>,
    },
    /// A notification (no id): it gets no response, whatever happens.
    Notification { method: String, params: Option<Value> },
    /// A response to a request of ours (we send none): ignored.
    Response,
}

/// Checks one parsed message's envelope. `Err` carries the id to answer with (`null`
/// when the message has no usable id) and the error.
pub(crate) fn classify(message: Value) -> Result<Message, (Value, RpcError)> {
    let Value::Object(mut obj) = message else {
        return Err((
            Value::Null,
            RpcError::new(INVALID_REQUEST, "a JSON-RPC message must be a JSON object"),
        ));
    };
    let id = obj.remove("id");
    let reply_id = match &id {
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        _ => Value::Null,
    };
    let invalid = |message: &str| Err((reply_id.clone(), RpcError::new(INVALID_REQUEST, message)));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("`jsonrpc` must be \"2.0\"");
    }
    if !obj.contains_key("method") && (obj.contains_key("result") || obj.contains_key("error")) {
        return Ok(Message::Response);
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        Some(_) => return invalid("`method` must be a string"),
        None => return invalid("a request needs a `method`"),
    };
    let params = obj.remove("params");
    if let Some(p) = &params {
        if !p.is_object() && !p.is_array() {
            return invalid("`params` must be an object or an array");
        }
    }
    match id {
        None => Ok(Message::Notification { method, params }),
        Some(Value::String(_) | Value::Number(_)) => Ok(Message::Request {
            id: reply_id,
            method,
            params,
        }),
        Some(_) => invalid("`id` must be a string or a number"),
    }
}

/// The params of a method that takes named params: an object (absent: empty).
pub(crate) fn params_object(params: Option<Value>) -> Result<Map<String, Value>, RpcError> {
    match params {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(RpcError::invalid_params("`params` must be an object")),
    }
}

/// A success response; `result_json` is the result, already serialized.
pub(crate) fn success(id: &Value, result_json: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result_json}}}"#, id_json(id))
}

/// An error response.
pub(crate) fn failure(id: &Value, error: &RpcError) -> String {
    let error = serde_json::json!({"code": error.code, "message": error.message});
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id_json(id))
}

/// A JSON value as compact JSON. `Value`'s `Display` never fails.
fn id_json(id: &Value) -> String {
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Message, (Value, RpcError)> {
        classify(serde_json::from_str(s).unwrap())
    }

    #[test]
    fn envelopes() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#),
            Ok(Message::Request { .. })
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Ok(Message::Response)
        ));
        let (id, e) = parse(r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#).unwrap_err();
        assert_eq!((id, e.code), (Value::from("a"), INVALID_REQUEST));
        let (id, e) = parse(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).unwrap_err();
        assert_eq!((id, e.code), (Value::Null, INVALID_REQUEST));
        let (_, e) = parse(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":3}"#).unwrap_err();
        assert_eq!(e.code, INVALID_REQUEST);
        let (_, e) = parse("[1]").unwrap_err();
        assert_eq!(e.code, INVALID_REQUEST);
    }

    #[test]
    fn responses_are_valid_json() {
        let ok = success(&Value::from(3), r#"{"a":1}"#);
        let v: Value = serde_json::from_str(&ok).unwrap();
        assert_eq!(v["result"]["a"], 1);
        let err = failure(&Value::Null, &RpcError::new(PARSE_ERROR, "bad \"json\""));
        let v: Value = serde_json::from_str(&err).unwrap();
        assert_eq!(v["error"]["code"], PARSE_ERROR);
        assert!(v["id"].is_null());
    }
}
