//! JSON Schema pieces shared by several tools: a time, a node and an edge in the import
//! format, a retrieval spec, `expected_head`.

use serde_json::{json, Value};

/// A time: integer ms since the epoch, or a string.
pub(super) fn time(description: &str) -> Value {
    json!({
        "type": ["integer", "string"],
        "description": format!(
            "{description} Integer ms since the epoch, or a string: RFC 3339 (2024-06-01T09:30:00Z), \
             a date and time read as UTC (2024-06-01T09:30), or a date (2024-06-01, midnight UTC)."
        ),
    })
}

/// A time that may be `null` (an open end).
fn open_time(description: &str) -> Value {
    let mut t = time(description);
    t["type"] = json!(["integer", "string", "null"]);
    t
}

/// Property values: any JSON but no nulls at the top (the import format's `props`).
fn props() -> Value {
    json!({
        "type": "object",
        "description": "Properties: strings, numbers, booleans, lists and maps.",
        "additionalProperties": true,
    })
}

/// A node in the import format (`{"node": …}` of `cairn import`).
pub(super) fn node() -> Value {
    json!({
        "type": "object",
        "description": "A node, as in the import format. A put replaces the whole node; absent fields are empty.",
        "properties": {
            "id": {"type": "string", "description": "Stable id you choose (1..=256 bytes), e.g. `alice-lives-in-paris`."},
            "labels": {"type": "array", "items": {"type": "string"}, "description": "Labels, e.g. [\"Fact\"]."},
            "text": {"type": "string", "description": "The text recall searches and returns."},
            "props": props(),
            "embeddings": {
                "type": "object",
                "description": "Dense vectors by model name: {\"minilm\": [0.1, ...]} (one dimension per model per repository).",
                "additionalProperties": {"type": "array", "items": {"type": "number"}},
            },
            "sparse": {
                "type": "object",
                "description": "Sparse vectors by model name: {\"kw\": {\"indices\": [3, 9], \"values\": [1.0, 0.5]}} (indices sorted, unique).",
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "indices": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                        "values": {"type": "array", "items": {"type": "number"}},
                    },
                    "required": ["indices", "values"],
                    "additionalProperties": false,
                },
            },
            "valid_from": open_time("Start of the fact's validity (inclusive); absent: since always."),
            "valid_until": open_time("End of the fact's validity (exclusive); absent: until further notice."),
        },
        "required": ["id"],
        "additionalProperties": false,
    })
}

/// An edge in the import format (`{"edge": …}`).
pub(super) fn edge() -> Value {
    json!({
        "type": "object",
        "description": "A typed edge between two nodes, as in the import format.",
        "properties": {
            "source": {"type": "string", "description": "Source node id."},
            "target": {"type": "string", "description": "Target node id."},
            "kind": {"type": "string", "description": "Edge type, e.g. `lives_in`."},
            "weight": {"type": "number", "description": "Weight (default 1.0)."},
            "props": props(),
            "valid_from": open_time("Start of validity (inclusive)."),
            "valid_until": open_time("End of validity (exclusive)."),
        },
        "required": ["source", "target", "kind"],
        "additionalProperties": false,
    })
}

/// `expected_head`: compare-and-swap.
pub(super) fn expected_head() -> Value {
    json!({
        "type": ["string", "null"],
        "description": "Compare-and-swap: commit only if the branch head is this commit id (64 hex digits, \
                        as a previous call returned it); null: only if the branch has no commit yet. \
                        On a mismatch nothing is committed and the error code is `conflict`.",
    })
}

/// The properties of a retrieval spec (`cairn retrieve --spec`), keyed by field.
pub(super) fn spec_properties() -> serde_json::Map<String, Value> {
    let props = json!({
        "text": {"type": "string", "description": "Query text (BM25 lane `text`)."},
        "vector": {
            "type": "object",
            "description": "Dense query: {\"model\": \"minilm\", \"embedding\": [...]} (lane `dense:<model>`).",
            "properties": {
                "model": {"type": "string"},
                "embedding": {"type": "array", "items": {"type": "number"}},
            },
            "required": ["model", "embedding"],
        },
        "sparse": {
            "type": "object",
            "description": "Sparse query: {\"model\": \"kw\", \"indices\": [...], \"values\": [...]}.",
            "properties": {
                "model": {"type": "string"},
                "indices": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                "values": {"type": "array", "items": {"type": "number"}},
            },
            "required": ["model", "indices", "values"],
        },
        "labels_all": {"type": "array", "items": {"type": "string"}, "description": "Keep nodes with every one of these labels."},
        "labels_any": {"type": "array", "items": {"type": "string"}, "description": "Keep nodes with at least one of these labels."},
        "where": {
            "type": "array",
            "description": "Property gates, all must hold: {\"key\", \"op\": \"eq\", \"value\"}, {\"key\", \"op\": \"in\", \"values\"}, \
                            {\"key\", \"op\": \"range\", \"min\", \"max\"} (inclusive, either end optional), {\"key\", \"op\": \"exists\"}.",
            "items": {
                "type": "object",
                "properties": {
                    "key": {"type": "string"},
                    "op": {"type": "string", "enum": ["eq", "in", "range", "exists"]},
                    "value": {},
                    "values": {"type": "array"},
                    "min": {"type": "number"},
                    "max": {"type": "number"},
                },
                "required": ["key", "op"],
            },
        },
        "valid_at": {
            "type": ["integer", "string"],
            "description": "Facts valid at this time: ms since the epoch, a time string (RFC 3339, 2024-06-01T09:30, 2024-06-01), \
                            or \"all_time\" for every fact whatever its validity. Default: the commit's time.",
        },
        "expand": {
            "type": "object",
            "description": "Graph expansion from the top hits: {\"hops\": 2, \"max_nodes\": 50, \"direction\": \"out\"|\"in\"|\"both\", \"kinds\": [\"cites\"]}.",
        },
        "fusion": {"type": "object", "description": "Lane fusion: {\"method\": \"score\" (default: dense lanes as cosines, text and sparse min-max, text weight 0.4)|\"min_max\"|\"dbsf\"|\"rrf\"|\"weighted_rrf\", \"k\": 60 (RRF only), \"weights\": {\"text\": 0.4}}."},
        "token_budget": {"type": "integer", "minimum": 1, "description": "Most estimated tokens of packed context (default unlimited)."},
        "limit": {"type": "integer", "minimum": 1, "description": "Most items (default 10)."},
        "text_cap": {"type": "integer", "minimum": 0, "description": "Characters of node text per item (default 1000)."},
        "depth": {"type": "integer", "minimum": 1, "description": "Candidates each lane fetches."},
        "render_props": {"type": "array", "items": {"type": "string"}, "description": "Property keys rendered into each item."},
        "ann": {"type": "boolean", "description": "Approximate dense search (HNSW)."},
        "list": {"type": "boolean", "description": "List mode: no ranking; the nodes that pass the gates, in id order, `limit` at a time."},
        "after": {"type": "string", "description": "List mode: start after this node id."},
        "explain": {"type": "boolean", "description": "Explain every item's rank."},
        "embed": {"type": "boolean", "description": "false: never embed the query text into a dense lane (default: the repository's embedder embeds it, if it has one)."},
        "embedder": {"type": "string", "description": "The repository's query embedder to use, by name (default: the first, in name order, whose model has vectors)."},
    });
    match props {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}
