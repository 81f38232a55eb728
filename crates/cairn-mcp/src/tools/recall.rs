//! `recall`: a retrieval, with the arguments of a retrieval spec (`cairn retrieve --spec`).
//! The text is the packed context; the structured content is the result exactly as
//! `cairn retrieve --json` prints it (same commit and spec ⇒ the same bytes).

use cairn::retrieve::{Retrieval, RetrievalResult, RetrieveSpec};
use serde_json::{json, Map, Value};

use super::{schema, spec_from, Context, Tool, ToolOutput};
use crate::error::ToolError;
use crate::time::format_ms;

pub(super) const TOOL: Tool = Tool {
    name: "recall",
    title: "Recall",
    description:
        "Retrieve what the memory holds about a query: hybrid search (BM25 `text`, optional dense `vector` and \
                  `sparse`) within label/property gates and a validity time, optional graph expansion, packed under a \
                  token budget. Deterministic: the same commit and arguments give the same answer. The text result is \
                  the packed context (best first); the structured result has every item with its score, labels, props \
                  and validity, and warnings (e.g. `validity_excluded`: facts hidden because they were not valid at \
                  `valid_at`). The arguments are those of a `cairn retrieve` JSON spec; `at` reads an older revision \
                  (a commit id, `HEAD~1`, or `main@{2024-06-01}` for the head as of a time).",
    read_only: true,
    input_schema,
    run,
};

fn input_schema() -> Value {
    let mut props = schema::spec_properties();
    props.insert(
        "query".into(),
        json!({"type": "string", "description": "The same as `text` (the name `as_of` uses for its retrieval): give one of them."}),
    );
    props.insert(
        "at".into(),
        json!({"type": "string", "description": "Revision to read (default: the branch head): a commit id or prefix, a branch, \
                                                 HEAD~N, or BRANCH@{TIME} for the head the branch had at that time."}),
    );
    json!({
        "type": "object",
        "properties": props,
        "description": "A retrieval spec: at least one of `text`, `vector`, `sparse`, or `list: true`.",
    })
}

fn run(ctx: &Context<'_>, mut args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
    // `query` (a string) is another name for `text`.
    if let Some(q) = args.remove("query") {
        if args.contains_key("text") {
            return Err(ToolError::InvalidArguments(
                "give the query text as `text` or as `query`, not both".into(),
            ));
        }
        if !q.is_string() {
            return Err(ToolError::InvalidArguments(
                "`query` must be a string (the query text)".into(),
            ));
        }
        args.insert("text".into(), q);
    }
    let spec = spec_from(args, "")?;
    retrieve(ctx, spec)
}

/// Runs `spec` as `cairn retrieve --spec` does (the repository's embedder policy decides
/// the query embedding) and renders the result (shared with `as_of`).
pub(super) fn retrieve(ctx: &Context<'_>, spec: RetrieveSpec) -> Result<ToolOutput, ToolError> {
    let result = Retrieval::from_spec(ctx.repo, spec).execute()?;
    let structured =
        serde_json::to_string(&result).map_err(|e| ToolError::InvalidArguments(format!("cannot encode: {e}")))?;
    Ok(ToolOutput {
        text: context_text(&result),
        structured,
    })
}

/// The packed context as a model reads it: a header line (commit, validity time, items),
/// the items' rendered texts in rank order separated by blank lines (exactly what the
/// token budget counted), then the warnings.
fn context_text(r: &RetrievalResult) -> String {
    let valid_at = r.valid_at.map_or_else(|| "all time".to_string(), format_ms);
    let mut out = format!(
        "commit {} · facts valid at {valid_at} · {} item{}",
        r.commit.map_or_else(|| "(none yet)".to_string(), |c| c.short()),
        r.items.len(),
        if r.items.len() == 1 { "" } else { "s" }
    );
    if r.items.is_empty() {
        out.push_str("\n\n(nothing recalled)");
    }
    for item in &r.items {
        out.push_str("\n\n");
        out.push_str(&item.text);
    }
    for w in &r.warnings {
        let code = serde_json::to_value(w.code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        out.push_str(&format!("\n\nwarning[{code}]: {}", w.message));
    }
    out
}
