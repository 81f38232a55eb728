//! The JSON Lines import format ([`Repo::import_jsonl`]; documented there).

mod capped;

use std::io::{BufRead, Read};

use cairn_core::limits::{MAX_EMBEDDING_DIM, MAX_IMPORT_LINE_BYTES, MAX_LABELS, MAX_MODELS_PER_NODE, MAX_SPARSE_NNZ};
use cairn_core::{CommitId, Edge, EdgeKey, Node, NodeId, SparseVector, Validity};

use crate::patch::NodePatch;
use serde::Deserialize;

use self::capped::{Capped, CappedMap, Props};

use crate::error::{Error, Result};
use crate::repo::Repo;
use crate::rev::{parse_time_ms, TIME_FORMS};
use crate::transaction::Transaction;

/// A time in the import format: integer ms or a string ([`TIME_FORMS`]). Any other JSON
/// value is read as [`TimeSpec::Other`] (described, not kept), so the error can name the
/// field it was found in.
#[derive(Debug, Clone)]
enum TimeSpec {
    Ms(i64),
    Text(String),
    Other(String),
}

impl<'de> Deserialize<'de> for TimeSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = TimeSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "a time: {TIME_FORMS}")
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<TimeSpec, E> {
                Ok(TimeSpec::Ms(v))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<TimeSpec, E> {
                Ok(i64::try_from(v).map_or_else(|_| TimeSpec::Other(format!("the number {v}")), TimeSpec::Ms))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<TimeSpec, E> {
                Ok(TimeSpec::Other(format!("the number {v:?}")))
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<TimeSpec, E> {
                Ok(TimeSpec::Other(format!("`{v}`")))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<TimeSpec, E> {
                Ok(TimeSpec::Text(v.to_string()))
            }
            fn visit_unit<E>(self) -> std::result::Result<TimeSpec, E> {
                Ok(TimeSpec::Other("`null`".into()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<TimeSpec, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(TimeSpec::Other("a list".into()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<TimeSpec, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(TimeSpec::Other("an object".into()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl TimeSpec {
    fn ms(&self, field: &str) -> std::result::Result<i64, String> {
        match self {
            TimeSpec::Ms(ms) => Ok(*ms),
            TimeSpec::Text(s) => {
                parse_time_ms(s).ok_or_else(|| format!("`{field}`: {s:?} is not a time: expected {TIME_FORMS}"))
            }
            TimeSpec::Other(what) => Err(format!(
                "`{field}`: {what} is not a time: expected {TIME_FORMS} (integer ms as a JSON number or a string, the others as strings)"
            )),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SparseSpec {
    indices: Capped<u32, MAX_SPARSE_NNZ>,
    values: Capped<f32, MAX_SPARSE_NNZ>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeSpec {
    id: String,
    #[serde(default)]
    labels: Capped<String, MAX_LABELS>,
    #[serde(default)]
    text: String,
    #[serde(default)]
    props: Props,
    #[serde(default)]
    embeddings: CappedMap<Capped<f32, MAX_EMBEDDING_DIM>, MAX_MODELS_PER_NODE>,
    #[serde(default)]
    sparse: CappedMap<SparseSpec, MAX_MODELS_PER_NODE>,
    valid_from: Option<TimeSpec>,
    valid_until: Option<TimeSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EdgeSpec {
    source: String,
    target: String,
    kind: String,
    weight: Option<f64>,
    #[serde(default)]
    props: Props,
    valid_from: Option<TimeSpec>,
    valid_until: Option<TimeSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EdgeKeySpec {
    source: String,
    kind: String,
    target: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InvalidateSpec {
    id: String,
    valid_until: TimeSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InvalidateEdgeSpec {
    source: String,
    kind: String,
    target: String,
    valid_until: TimeSpec,
}

/// Absent: `None`; `null`: `Some(None)`.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchSpec {
    id: String,
    #[serde(default)]
    labels_add: Capped<String, MAX_LABELS>,
    #[serde(default)]
    labels_remove: Capped<String, MAX_LABELS>,
    #[serde(default)]
    props: Props,
    #[serde(default)]
    props_remove: Capped<String, MAX_PATCH_REMOVALS>,
    text: Option<String>,
    #[serde(default)]
    embeddings: CappedMap<Capped<f32, MAX_EMBEDDING_DIM>, MAX_MODELS_PER_NODE>,
    #[serde(default, deserialize_with = "present")]
    valid_from: Option<Option<TimeSpec>>,
    #[serde(default, deserialize_with = "present")]
    valid_until: Option<Option<TimeSpec>>,
}

/// At most this many property removals in one patch (a node has at most this many
/// property bytes, so more names could not all be present).
const MAX_PATCH_REMOVALS: usize = 4096;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Node(NodeSpec),
    Edge(EdgeSpec),
    DeleteNode(String),
    DeleteEdge(EdgeKeySpec),
    Invalidate(InvalidateSpec),
    InvalidateEdge(InvalidateEdgeSpec),
    Patch(PatchSpec),
}

/// One parsed import operation.
#[derive(Debug, Clone, PartialEq)]
pub enum ImportOp {
    /// Put a node.
    PutNode(Node),
    /// Put an edge.
    PutEdge(Edge),
    /// Delete a node (and its edges).
    DeleteNode(NodeId),
    /// Delete an edge.
    DeleteEdge(EdgeKey),
    /// End a node's validity at a time (ms).
    Invalidate(NodeId, i64),
    /// End an edge's validity at a time (ms).
    InvalidateEdge(EdgeKey, i64),
    /// Change part of a node.
    Patch(NodeId, NodePatch),
}

fn node_id(s: String) -> std::result::Result<NodeId, String> {
    NodeId::new(s).map_err(|e| e.to_string())
}

fn validity(from: Option<TimeSpec>, until: Option<TimeSpec>) -> std::result::Result<Validity, String> {
    Ok(Validity {
        valid_from_ms: from.map(|t| t.ms("valid_from")).transpose()?,
        valid_until_ms: until.map(|t| t.ms("valid_until")).transpose()?,
    })
}

/// Parses one line of the format (without applying it).
pub fn parse_line(line: &str) -> std::result::Result<ImportOp, String> {
    // serde_json's position ("at line 1 column 24") is within the line; callers report the
    // file's line number, so keep only the column.
    let parsed: Line = serde_json::from_str(line).map_err(|e| {
        if let Some(shape) = shape_error(line) {
            return shape;
        }
        let msg = e.to_string();
        let msg = match msg.rfind(" at line 1 column ") {
            Some(i) => format!("{} (column {})", &msg[..i], &msg[i + " at line 1 column ".len()..]),
            None => msg,
        };
        if e.is_eof() {
            // `{` alone on a line: a pretty-printed object, the commonest first mistake.
            format!("{msg}: the import format is JSON Lines, one complete object per line (a pretty-printed object spread over several lines cannot be read)")
        } else {
            msg
        }
    })?;
    Ok(match parsed {
        Line::Node(n) => {
            let labels = n
                .labels
                .within()
                .map_err(|len| format!("`labels` has {len} entries, the limit is {MAX_LABELS}"))?;
            let models =
                |field: &str, total: usize| format!("`{field}` has {total} models, the limit is {MAX_MODELS_PER_NODE}");
            if n.embeddings.total > MAX_MODELS_PER_NODE {
                return Err(models("embeddings", n.embeddings.total));
            }
            if n.sparse.total > MAX_MODELS_PER_NODE {
                return Err(models("sparse", n.sparse.total));
            }
            let mut embeddings = std::collections::BTreeMap::new();
            for (model, vector) in n.embeddings.entries {
                let vector = vector.within().map_err(|dim| {
                    format!("embedding `{model}` has {dim} dimensions (allowed 1..={MAX_EMBEDDING_DIM})")
                })?;
                embeddings.insert(model, vector);
            }
            let mut sparse = std::collections::BTreeMap::new();
            for (model, s) in n.sparse.entries {
                let over =
                    |len: usize| format!("sparse vector `{model}` has {len} entries, the limit is {MAX_SPARSE_NNZ}");
                let indices = s.indices.within().map_err(over)?;
                let values = s.values.within().map_err(over)?;
                sparse.insert(model, SparseVector::new(indices, values));
            }
            ImportOp::PutNode(Node {
                id: node_id(n.id)?,
                labels: labels.into_iter().collect(),
                props: n.props.0,
                text: n.text,
                embeddings,
                sparse,
                validity: validity(n.valid_from, n.valid_until)?,
            })
        }
        Line::Edge(e) => ImportOp::PutEdge(Edge {
            source: node_id(e.source)?,
            kind: e.kind,
            target: node_id(e.target)?,
            weight: e.weight.unwrap_or(1.0),
            props: e.props.0,
            validity: validity(e.valid_from, e.valid_until)?,
        }),
        Line::DeleteNode(id) => ImportOp::DeleteNode(node_id(id)?),
        Line::Invalidate(i) => ImportOp::Invalidate(node_id(i.id)?, i.valid_until.ms("valid_until")?),
        Line::InvalidateEdge(i) => ImportOp::InvalidateEdge(
            EdgeKey {
                source: node_id(i.source)?,
                kind: i.kind,
                target: node_id(i.target)?,
            },
            i.valid_until.ms("valid_until")?,
        ),
        Line::Patch(p) => {
            let over = |field: &str, len: usize, cap: usize| format!("`{field}` has {len} entries, the limit is {cap}");
            let labels_add = p.labels_add.within().map_err(|n| over("labels_add", n, MAX_LABELS))?;
            let labels_remove = p
                .labels_remove
                .within()
                .map_err(|n| over("labels_remove", n, MAX_LABELS))?;
            let props_remove = p
                .props_remove
                .within()
                .map_err(|n| over("props_remove", n, MAX_PATCH_REMOVALS))?;
            if p.embeddings.total > MAX_MODELS_PER_NODE {
                return Err(format!(
                    "`embeddings` has {} models, the limit is {MAX_MODELS_PER_NODE}",
                    p.embeddings.total
                ));
            }
            let mut embeddings = std::collections::BTreeMap::new();
            for (model, vector) in p.embeddings.entries {
                let vector = vector.within().map_err(|dim| {
                    format!("embedding `{model}` has {dim} dimensions (allowed 1..={MAX_EMBEDDING_DIM})")
                })?;
                embeddings.insert(model, vector);
            }
            let end = |t: Option<Option<TimeSpec>>, field: &str| -> std::result::Result<Option<Option<i64>>, String> {
                t.map(|t| t.map(|t| t.ms(field)).transpose()).transpose()
            };
            ImportOp::Patch(
                node_id(p.id)?,
                NodePatch {
                    labels_add: labels_add.into_iter().collect(),
                    labels_remove: labels_remove.into_iter().collect(),
                    props_set: p.props.0,
                    props_remove: props_remove.into_iter().collect(),
                    text: p.text,
                    embeddings,
                    valid_from_ms: end(p.valid_from, "valid_from")?,
                    valid_until_ms: end(p.valid_until, "valid_until")?,
                },
            )
        }
        Line::DeleteEdge(k) => ImportOp::DeleteEdge(EdgeKey {
            source: node_id(k.source)?,
            kind: k.kind,
            target: node_id(k.target)?,
        }),
    })
}

/// The operations a line may hold, one per line.
const OPERATIONS: [&str; 7] = [
    "node",
    "edge",
    "delete_node",
    "delete_edge",
    "invalidate",
    "invalidate_edge",
    "patch",
];

/// Why a line that did not parse has the wrong shape, if it does: an object with no key,
/// several keys, or one that is not an operation. `None` for anything else (bad JSON, or
/// a well-shaped line whose operation is wrong), which serde's message describes.
fn shape_error(line: &str) -> Option<String> {
    /// An object's keys in order, values skipped.
    struct Keys(Vec<String>);
    impl<'de> Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            struct Visitor;
            impl<'de> serde::de::Visitor<'de> for Visitor {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some((k, serde::de::IgnoredAny)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                        keys.push(k);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(Visitor)
        }
    }
    let expected = format!(
        "a line is an object with exactly one of {} or {}",
        OPERATIONS[..6].join(", "),
        OPERATIONS[6]
    );
    let Keys(keys) = match serde_json::from_str::<Keys>(line) {
        Ok(keys) => keys,
        // Valid JSON but not an object: say what a line is.
        Err(e) if e.is_data() => {
            let hint = if line.trim_start().starts_with('[') {
                " (the import format is JSON Lines: one object per line, not one JSON array)"
            } else {
                ""
            };
            return Some(format!("{expected}; found {}{hint}", json_kind(line)));
        }
        Err(_) => return None,
    };
    let known = |k: &str| OPERATIONS.contains(&k);
    match keys.as_slice() {
        [] => Some(format!("{expected} (found none)")),
        [one] if !known(one) => Some(format!("{expected} (found `{one}`)")),
        [_] => None,
        many => {
            let names: Vec<String> = many.iter().map(|k| format!("`{k}`")).collect();
            Some(format!("{expected} (found {})", names.join(" and ")))
        }
    }
}

/// "a list", "a string", ... for a JSON value that is not an object.
fn json_kind(line: &str) -> &'static str {
    match line.trim_start().as_bytes().first() {
        Some(b'[') => "a list",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// What an import did. As JSON (`cairn import --json`, `POST /import`):
/// `{"commit", "head", "operations"}`, `commit` null when no commit was made.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ImportSummary {
    /// The commit made; `None` when the import changed nothing (no operation, or only
    /// operations that left every node and edge as it was) and an empty commit was not
    /// asked for.
    pub commit: Option<CommitId>,
    /// The branch's head after the import: the new commit, or the unchanged head (`None`
    /// on a branch with no commit yet).
    pub head: Option<CommitId>,
    /// Operations applied.
    pub operations: u64,
}

impl Repo {
    /// Imports a JSON Lines stream as one commit on the current branch (see
    /// *The import format* below), authored `cairn`. `progress` is called with the bytes
    /// read so far. For another author, use [`Transaction::import_jsonl`].
    ///
    /// # The import format
    ///
    /// The JSON Lines import format (`cairn import`), one operation per line, each line an
    /// object with exactly one key:
    ///
    /// ```text
    /// {"node": {"id", "labels", "text", "props", "embeddings": {"model": [f32...]},
    ///           "sparse": {"model": {"indices": [...], "values": [...]}}, "valid_from", "valid_until"}}
    /// {"edge": {"source", "target", "kind", "weight", "props", "valid_from", "valid_until"}}
    /// {"delete_node": "ID"}
    /// {"delete_edge": {"source", "kind", "target"}}
    /// {"invalidate": {"id", "valid_until"}}
    /// {"invalidate_edge": {"source", "kind", "target", "valid_until"}}
    /// {"patch": {"id", "labels_add", "labels_remove", "props", "props_remove", "text",
    ///            "embeddings", "valid_from", "valid_until"}}
    /// ```
    ///
    /// A `node` put replaces the whole node; absent fields are empty (`weight` defaults to
    /// 1.0). `invalidate` ends a node's (or edge's) validity without re-sending it; `patch`
    /// changes only what it names ([`NodePatch`]: `props` are set, `null`
    /// for `valid_from`/`valid_until` opens that end). Both are validated as a put is, and
    /// fail if the node or edge does not exist. Times are integer ms since the epoch or
    /// strings: RFC 3339, a date and time without an offset (read as UTC) or a plain date
    /// (midnight UTC); see [`parse_time_ms`]. Blank lines are skipped. A whole file is one commit: on any bad line the import stops with
    /// [`Error::Import`] naming the line, and nothing is committed. An import that changes
    /// nothing makes no commit ([`ImportSummary::commit`] is `None`; see
    /// [`Transaction::commit_import`]).
    ///
    /// A line is at most [`MAX_IMPORT_LINE_BYTES`] long (the largest node the caps allow,
    /// written as JSON, is about half that). Lists and maps are read only up to their caps
    /// (labels, dimensions, sparse entries, models, property bytes and nesting), so a line
    /// far over a cap is refused while being read, in memory bounded by the line's length.
    pub fn import_jsonl(
        &self,
        reader: impl BufRead,
        message: &str,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ImportSummary> {
        let mut tx = self.transaction()?;
        let operations = tx.import_jsonl(reader, progress)?;
        tx.commit_import(message, operations, false)
    }
}

impl Transaction<'_> {
    /// Commits an import of `operations` operations (applied with
    /// [`Transaction::import_jsonl`] or one by one), unless it changes nothing: no
    /// operation, or only operations that leave every node and edge as the base has it
    /// ([`Transaction::changes_nothing`]). Then no commit is made, the head stays, and
    /// [`ImportSummary::commit`] is `None`, so an agent re-importing what it knows does
    /// not fill the log with empty commits. `allow_empty` commits anyway.
    ///
    /// ```
    /// use cairn::Repo;
    /// let repo = Repo::in_memory()?;
    /// let line = r#"{"node": {"id": "a", "text": "hello"}}"#;
    /// let first = repo.import_jsonl(line.as_bytes(), "first", &mut |_| {})?;
    /// assert!(first.commit.is_some());
    /// let again = repo.import_jsonl(line.as_bytes(), "again", &mut |_| {})?;
    /// assert_eq!((again.commit, again.head), (None, first.commit));
    ///
    /// let mut tx = repo.transaction()?;
    /// let operations = tx.import_jsonl(line.as_bytes(), &mut |_| {})?;
    /// let forced = tx.commit_import("again, on purpose", operations, true)?;
    /// assert!(forced.commit.is_some() && forced.commit != first.commit);
    /// # Ok::<(), cairn::Error>(())
    /// ```
    pub fn commit_import(self, message: &str, operations: u64, allow_empty: bool) -> Result<ImportSummary> {
        if !allow_empty && (operations == 0 || self.changes_nothing()?) {
            let head = self.base();
            return Ok(ImportSummary {
                commit: None,
                head,
                operations,
            });
        }
        let commit = self.commit(message)?;
        Ok(ImportSummary {
            commit: Some(commit),
            head: Some(commit),
            operations,
        })
    }

    /// Applies a JSON Lines stream to this transaction (in the [import format](Repo::import_jsonl)):
    /// stops at the first bad line with [`Error::Import`] naming it. Returns the number of
    /// operations applied. Nothing is committed: call [`Transaction::commit`].
    pub fn import_jsonl(&mut self, reader: impl BufRead, progress: &mut dyn FnMut(u64)) -> Result<u64> {
        let mut operations = 0u64;
        let mut bytes = 0u64;
        let mut reader = reader;
        let mut buf = Vec::new();
        for lineno in 1usize.. {
            let line = match read_line(&mut reader, &mut buf) {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(detail) => {
                    return Err(Error::Import {
                        line: lineno,
                        detail,
                        source: None,
                    })
                }
            };
            bytes += line.len() as u64 + 1;
            if lineno % 1024 == 0 {
                progress(bytes);
            }
            if line.trim().is_empty() {
                continue;
            }
            let op = parse_line(line).map_err(|detail| Error::Import {
                line: lineno,
                detail,
                source: None,
            })?;
            let applied = match op {
                ImportOp::PutNode(n) => self.put_node(n),
                ImportOp::PutEdge(e) => self.put_edge(e),
                ImportOp::DeleteNode(id) => self.delete_node(&id),
                ImportOp::DeleteEdge(k) => self.delete_edge(&k),
                ImportOp::Invalidate(id, t) => self.invalidate(&id, t),
                ImportOp::InvalidateEdge(k, t) => self.invalidate_edge(&k, t),
                ImportOp::Patch(id, patch) => self.patch_node(&id, patch),
            };
            applied.map_err(|e| match e.kind() {
                // The line's fault: named by its number.
                crate::ErrorKind::InvalidInput | crate::ErrorKind::NotFound => Error::Import {
                    line: lineno,
                    detail: e.to_string(),
                    source: Some(Box::new(e)),
                },
                // Not the line's: damage, a full disk, the embedder — as they are.
                _ => e,
            })?;
            operations += 1;
        }
        progress(bytes);
        Ok(operations)
    }
}

/// Reads one line into `buf` (cleared first) and returns it without its `\n` or `\r\n`;
/// `None` at the end of input. A line longer than [`MAX_IMPORT_LINE_BYTES`] is refused
/// after reading one byte past the cap, so its tail is never held in memory.
fn read_line<'b>(reader: &mut impl BufRead, buf: &'b mut Vec<u8>) -> std::result::Result<Option<&'b str>, String> {
    buf.clear();
    let cap = MAX_IMPORT_LINE_BYTES as u64;
    let read = reader
        .by_ref()
        .take(cap + 1)
        .read_until(b'\n', buf)
        .map_err(|e| format!("cannot read: {e}"))?;
    if read == 0 {
        return Ok(None);
    }
    let mut line: &[u8] = buf;
    if let Some(rest) = line.strip_suffix(b"\n") {
        line = rest.strip_suffix(b"\r").unwrap_or(rest);
    } else if read as u64 > cap {
        return Err(format!(
            "the line is longer than {MAX_IMPORT_LINE_BYTES} bytes, the limit for one import line"
        ));
    }
    std::str::from_utf8(line)
        .map(Some)
        .map_err(|e| format!("the line is not UTF-8 ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_line_kind() {
        let n = parse_line(r#"{"node": {"id": "a", "labels": ["L"], "text": "t", "valid_from": "2024-01-01T00:00:00Z", "valid_until": 1800000000000}}"#).unwrap();
        let ImportOp::PutNode(n) = n else { panic!("not a node") };
        assert_eq!(n.validity.valid_from_ms, Some(1_704_067_200_000));
        assert!(
            matches!(parse_line(r#"{"edge": {"source": "a", "target": "b", "kind": "k"}}"#).unwrap(), ImportOp::PutEdge(e) if e.weight == 1.0)
        );
        assert!(matches!(
            parse_line(r#"{"delete_node": "a"}"#).unwrap(),
            ImportOp::DeleteNode(_)
        ));
        assert!(matches!(
            parse_line(r#"{"delete_edge": {"source": "a", "kind": "k", "target": "b"}}"#).unwrap(),
            ImportOp::DeleteEdge(_)
        ));
        assert!(parse_line(r#"{"node": {"id": "a"}, "edge": {}}"#).is_err());
        assert!(parse_line(r#"{"node": {"id": "a", "bogus": 1}}"#).is_err());
        assert!(parse_line(r#"{"node": {"id": ""}}"#).is_err());
    }
}
