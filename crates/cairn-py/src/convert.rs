//! Python values in, Cairn values out: plain Python data (dicts, lists, numbers, strings,
//! NumPy arrays) to JSON, to nodes and edges in the import format, and to `f32` vectors.
//!
//! Nodes, edges and patches are read through the import format's own parser
//! ([`cairn::parse_import_line`]), so a dict is accepted exactly when the same object
//! would be accepted as a line of `cairn import`, with the same field names, defaults,
//! time forms and messages. Only dense vectors skip the JSON step: they are read straight
//! from any object exporting a buffer of `float32` (a NumPy array, `array.array('f')`,
//! a `memoryview`), or else from a sequence of numbers.

use cairn::{parse_import_line, ImportOp};
use cairn::{Edge, Node, NodeId, NodePatch};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value as Json};

use crate::errors::InvalidInput;

/// Deepest nesting of lists and dicts read (the store's own cap is lower; this only stops
/// a self-referencing list from recursing forever).
const MAX_DEPTH: usize = 128;

/// Converts plain Python data to JSON: `None`, `bool`, `int` (64-bit), finite `float`,
/// `str`, `list`/`tuple`, `dict` with `str` keys, and anything with a `tolist()` method
/// (NumPy arrays and scalars). Anything else is [`InvalidInput`] naming `what`.
pub fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Json> {
    to_json_at(obj, what, 0)
}

fn to_json_at(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Json> {
    if depth > MAX_DEPTH {
        return Err(InvalidInput::new_err(format!(
            "{what}: nested deeper than {MAX_DEPTH} levels"
        )));
    }
    if obj.is_none() {
        return Ok(Json::Null);
    }
    if let Ok(b) = obj.downcast::<PyBool>() {
        return Ok(Json::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Json::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Json::from(u));
        }
        return Err(InvalidInput::new_err(format!(
            "{what}: integer {obj} does not fit in 64 bits"
        )));
    }
    if obj.is_instance_of::<PyFloat>() {
        let f: f64 = obj.extract()?;
        return Number::from_f64(f)
            .map(Json::Number)
            .ok_or_else(|| InvalidInput::new_err(format!("{what}: {f} is not a finite number")));
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(Json::String(s.to_str()?.to_owned()));
    }
    if let Ok(d) = obj.downcast::<PyDict>() {
        let mut out = Map::new();
        for (k, v) in d.iter() {
            let key = k
                .downcast::<PyString>()
                .map_err(|_| InvalidInput::new_err(format!("{what}: dict key {k:?} is not a string")))?;
            let key = key.to_str()?.to_owned();
            let inner = format!("{what}.{key}");
            out.insert(key, to_json_at(&v, &inner, depth + 1)?);
        }
        return Ok(Json::Object(out));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for (i, v) in obj.try_iter()?.enumerate() {
            out.push(to_json_at(&v?, &format!("{what}[{i}]"), depth + 1)?);
        }
        return Ok(Json::Array(out));
    }
    if obj.hasattr("tolist")? {
        return to_json_at(&obj.call_method0("tolist")?, what, depth + 1);
    }
    let ty = obj.get_type().name()?.to_string();
    Err(InvalidInput::new_err(format!(
        "{what}: a value of type {ty} has no JSON form (expected None, bool, int, float, str, list, dict or a NumPy array)"
    )))
}

/// Reads a dense vector: straight from a buffer of `float32` if `obj` exports one (no
/// per-element conversion), else from a sequence of numbers (each rounded to `f32`).
/// The buffer must be one-dimensional.
pub fn to_vector(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<f32>> {
    if let Ok(buf) = PyBuffer::<f32>::get(obj) {
        if buf.dimensions() != 1 {
            return Err(InvalidInput::new_err(format!(
                "{what}: expected a one-dimensional vector, got {} dimensions (shape {:?})",
                buf.dimensions(),
                buf.shape()
            )));
        }
        return buf.to_vec(obj.py());
    }
    if obj.is_instance_of::<PyString>() {
        return Err(InvalidInput::new_err(format!(
            "{what}: expected a vector of numbers, got a string"
        )));
    }
    obj.extract::<Vec<f32>>().map_err(|e| {
        InvalidInput::new_err(format!(
            "{what}: expected a one-dimensional sequence of numbers or a float32 buffer: {e}"
        ))
    })
}

/// The dict's items except `skip`, as a JSON object.
fn json_without(d: &Bound<'_, PyDict>, skip: &str, what: &str) -> PyResult<Json> {
    let copy = d.copy()?;
    if copy.contains(skip)? {
        copy.del_item(skip)?;
    }
    to_json(copy.as_any(), what)
}

fn as_dict<'a, 'py>(obj: &'a Bound<'py, PyAny>, what: &str) -> PyResult<&'a Bound<'py, PyDict>> {
    obj.downcast::<PyDict>().map_err(|_| {
        let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        InvalidInput::new_err(format!("{what}: expected a dict, got {ty}"))
    })
}

/// Parses `{"<op>": value}` with the import format's parser.
fn parse_op(op: &str, value: Json) -> PyResult<ImportOp> {
    let line = serde_json::json!({ op: value }).to_string();
    parse_import_line(&line).map_err(|e| InvalidInput::new_err(format!("{op}: {e}")))
}

/// A dense vector of one model.
type ModelVector = (String, Vec<f32>);

/// The dense vectors of a node dict's `embeddings` entry (none if absent), read with
/// [`to_vector`].
fn embeddings(d: &Bound<'_, PyDict>) -> PyResult<Vec<ModelVector>> {
    let Some(e) = d.get_item("embeddings")? else {
        return Ok(Vec::new());
    };
    if e.is_none() {
        return Ok(Vec::new());
    }
    let e = as_dict(&e, "embeddings")?;
    let mut out = Vec::with_capacity(e.len());
    for (model, v) in e.iter() {
        let model: String = model
            .extract()
            .map_err(|_| InvalidInput::new_err("embeddings: model names must be strings"))?;
        let vector = to_vector(&v, &format!("embeddings[{model:?}]"))?;
        out.push((model, vector));
    }
    Ok(out)
}

/// A node from a dict in the import format's field names (`id`, `labels`, `text`,
/// `props`, `embeddings`, `sparse`, `valid_from`, `valid_until`).
pub fn node(obj: &Bound<'_, PyAny>) -> PyResult<Node> {
    let d = as_dict(obj, "node")?;
    let rest = json_without(d, "embeddings", "node")?;
    let mut node = match parse_op("node", rest)? {
        ImportOp::PutNode(n) => n,
        _ => unreachable!("a `node` line parses to a node"),
    };
    for (model, v) in embeddings(d)? {
        node.embeddings.insert(model, v);
    }
    Ok(node)
}

/// An edge from a dict in the import format's field names (`source`, `target`, `kind`,
/// `weight`, `props`, `valid_from`, `valid_until`).
pub fn edge(obj: &Bound<'_, PyAny>) -> PyResult<Edge> {
    let d = as_dict(obj, "edge")?;
    match parse_op("edge", to_json(d.as_any(), "edge")?)? {
        ImportOp::PutEdge(e) => Ok(e),
        _ => unreachable!("an `edge` line parses to an edge"),
    }
}

/// A node patch from a dict in the import format's `patch` field names (`id`,
/// `labels_add`, `labels_remove`, `props`, `props_remove`, `text`, `embeddings`,
/// `valid_from`, `valid_until`).
pub fn patch(obj: &Bound<'_, PyAny>) -> PyResult<(NodeId, NodePatch)> {
    let d = as_dict(obj, "patch")?;
    let rest = json_without(d, "embeddings", "patch")?;
    let (id, mut patch) = match parse_op("patch", rest)? {
        ImportOp::Patch(id, p) => (id, p),
        _ => unreachable!("a `patch` line parses to a patch"),
    };
    for (model, v) in embeddings(d)? {
        patch.embeddings.insert(model, v);
    }
    Ok((id, patch))
}

/// A node id, or [`InvalidInput`].
pub fn node_id(id: &str) -> PyResult<NodeId> {
    NodeId::new(id).map_err(|e| crate::errors::to_py(e.into()))
}

/// A time argument: integer ms since the epoch, or a string in a form
/// [`cairn::parse_time_ms`] reads.
pub fn time_ms(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if let Ok(ms) = obj.extract::<i64>() {
        if !obj.is_instance_of::<PyBool>() {
            return Ok(ms);
        }
    }
    if let Ok(s) = obj.extract::<String>() {
        return cairn::parse_time_ms(&s).ok_or_else(|| {
            InvalidInput::new_err(format!(
                "{what}: {s:?} is not a time: expected ms since the epoch, RFC 3339, a date and time (UTC) or a date"
            ))
        });
    }
    Err(InvalidInput::new_err(format!(
        "{what}: expected ms since the epoch (int) or a time string"
    )))
}

/// JSON text of a node in the import format (what `cairn show --json` prints).
pub fn node_json(n: &Node) -> String {
    serde_json::to_string(&cairn::NodeLine::of(n)).expect("a node serializes")
}

/// JSON text of an edge in the import format.
pub fn edge_json(e: &Edge) -> String {
    serde_json::to_string(&cairn::EdgeLine::of(e)).expect("an edge serializes")
}

/// A JSON array of already-serialized items.
pub fn json_array(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items.into_iter().collect();
    format!("[{}]", items.join(","))
}

/// Already-serialized JSON as a value that serializes verbatim.
pub fn raw(json: String) -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string(json).expect("serde_json wrote valid JSON")
}
