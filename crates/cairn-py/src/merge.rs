//! Merging from Python: one call computes a three-way merge, applies a strategy and
//! per-conflict resolutions, and (unless asked only to preview) commits it. The report is
//! JSON: kind, heads, conflicts with the three versions in the import format, the edges
//! the merge drops, and the new head.

use cairn::{Conflict, EdgeKey, MergeOutcome, MergeStrategy, Resolution};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use serde_json::json;

use crate::convert;
use crate::errors::{Conflict as ConflictError, InvalidInput, OrPyErr};
use crate::repo::PyRepo;

fn strategy(name: &str) -> PyResult<MergeStrategy> {
    match name {
        "manual" => Ok(MergeStrategy::Manual),
        "ours" => Ok(MergeStrategy::Ours),
        "theirs" => Ok(MergeStrategy::Theirs),
        other => Err(InvalidInput::new_err(format!(
            "strategy: expected \"manual\", \"ours\" or \"theirs\", got {other:?}"
        ))),
    }
}

/// What a resolution names: a node id, or an edge as `(source, kind, target)`.
enum Target {
    Node(cairn::NodeId),
    Edge(EdgeKey),
}

fn target(key: &Bound<'_, PyAny>) -> PyResult<Target> {
    if let Ok(s) = key.downcast::<PyString>() {
        return Ok(Target::Node(convert::node_id(s.to_str()?)?));
    }
    if let Ok(t) = key.downcast::<PyTuple>() {
        if let Ok((source, kind, target)) = t.extract::<(String, String, String)>() {
            return Ok(Target::Edge(EdgeKey {
                source: convert::node_id(&source)?,
                kind,
                target: convert::node_id(&target)?,
            }));
        }
    }
    Err(InvalidInput::new_err(format!(
        "resolutions: a key is a node id or a (source, kind, target) tuple, got {key:?}"
    )))
}

/// `"ours"`, `"theirs"`, `"base"`, `None` (delete) or a new node/edge dict.
fn resolution(target: &Target, value: &Bound<'_, PyAny>) -> PyResult<Resolution> {
    if let Ok(s) = value.extract::<String>() {
        return match s.as_str() {
            "ours" => Ok(Resolution::Ours),
            "theirs" => Ok(Resolution::Theirs),
            "base" => Ok(Resolution::Base),
            other => Err(InvalidInput::new_err(format!(
                "resolutions: expected \"ours\", \"theirs\", \"base\", None or a new value, got {other:?}"
            ))),
        };
    }
    let deleted = value.is_none();
    Ok(match target {
        Target::Node(_) if deleted => Resolution::Node(None),
        Target::Node(_) => Resolution::Node(Some(convert::node(value)?)),
        Target::Edge(_) if deleted => Resolution::Edge(None),
        Target::Edge(_) => Resolution::Edge(Some(convert::edge(value)?)),
    })
}

fn conflict_json(i: usize, c: &Conflict, outcome: &MergeOutcome) -> serde_json::Value {
    let resolved = outcome.resolution(i).is_some();
    match c {
        Conflict::Node { id, base, ours, theirs } => {
            let v = |n: &Option<cairn::Node>| n.as_ref().map(|n| convert::raw(convert::node_json(n)));
            json!({"type": "node", "id": id.as_str(), "base": v(base), "ours": v(ours), "theirs": v(theirs), "resolved": resolved})
        }
        Conflict::Edge {
            key,
            base,
            ours,
            theirs,
        } => {
            let v = |e: &Option<cairn::Edge>| e.as_ref().map(|e| convert::raw(convert::edge_json(e)));
            json!({"type": "edge", "source": key.source.as_str(), "kind": key.kind, "target": key.target.as_str(),
                   "base": v(base), "ours": v(ours), "theirs": v(theirs), "resolved": resolved})
        }
    }
}

#[pymethods]
impl PyRepo {
    /// Merges revision `theirs` into branch `into` (default: the current branch) and
    /// returns a JSON report. `strategy` settles every conflict (`manual` leaves them);
    /// `resolutions` maps a node id or an edge `(source, kind, target)` to `"ours"`,
    /// `"theirs"`, `"base"`, `None` (delete) or a new node/edge dict, applied after the
    /// strategy. With `commit` (the default) the merge is committed without the GIL and
    /// `Conflict` is raised, naming them, while a conflict is unresolved; with
    /// `commit=False` nothing changes and the report lists the conflicts.
    #[pyo3(signature = (theirs, into=None, strategy="manual", resolutions=None, message=None, commit=true, author=None, timestamp_ms=None))]
    #[allow(clippy::too_many_arguments)]
    fn merge_json(
        &self,
        py: Python<'_>,
        theirs: &str,
        into: Option<String>,
        strategy: &str,
        resolutions: Option<&Bound<'_, PyDict>>,
        message: Option<String>,
        commit: bool,
        author: Option<&str>,
        timestamp_ms: Option<i64>,
    ) -> PyResult<String> {
        let repo = self.repo()?;
        let strategy = self::strategy(strategy)?;
        let mut settle = Vec::new();
        if let Some(r) = resolutions {
            for (k, v) in r.iter() {
                let t = target(&k)?;
                let res = resolution(&t, &v)?;
                settle.push((t, res));
            }
        }
        let ours = match into {
            Some(b) => b,
            None => repo.current_branch().py_err()?.to_string(),
        };
        let theirs_rev = theirs.to_string();
        let mut outcome = py
            .allow_threads(|| repo.merge_with(&ours, &theirs_rev, strategy))
            .py_err()?;
        if let Some(a) = author {
            outcome.set_author(a).py_err()?;
        }
        for (t, res) in settle {
            match t {
                Target::Node(id) => outcome.resolve_node(&id, res),
                Target::Edge(key) => outcome.resolve_edge(&key, res),
            }
            .py_err()?;
        }
        let dropped = outcome.dropped_edges().py_err()?;
        let head = if commit {
            if outcome.unresolved() > 0 {
                let subjects: Vec<String> = outcome
                    .conflicts()
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| outcome.resolution(*i).is_none())
                    .map(|(_, c)| c.subject())
                    .collect();
                return Err(ConflictError::new_err(format!(
                    "merge has {} unresolved conflict(s): {}; resolve them or choose a strategy (nothing was changed)",
                    subjects.len(),
                    subjects.join(", ")
                )));
            }
            let message = message.unwrap_or_else(|| format!("merge {theirs} into {ours}"));
            let id = py
                .allow_threads(|| match timestamp_ms {
                    Some(ts) => outcome.commit_at(&message, ts),
                    None => outcome.commit(&message),
                })
                .py_err()?;
            Some(id.to_hex())
        } else {
            None
        };
        let conflicts: Vec<serde_json::Value> = outcome
            .conflicts()
            .iter()
            .enumerate()
            .map(|(i, c)| conflict_json(i, c, &outcome))
            .collect();
        let report = json!({
            "kind": outcome.kind(),
            "branch": outcome.branch(),
            "ours": outcome.ours().map(|c| c.to_hex()),
            "theirs": outcome.theirs().to_hex(),
            "base": outcome.base().map(|c| c.to_hex()),
            "conflicts": conflicts,
            "dropped_edges": dropped.iter().map(|k| json!({"source": k.source.as_str(), "kind": k.kind, "target": k.target.as_str()})).collect::<Vec<_>>(),
            "commit": head,
        });
        Ok(report.to_string())
    }
}
