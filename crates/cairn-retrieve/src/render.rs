//! Rendering an item to the compact, deterministic text an agent reads.
//!
//! Format, one line per part, parts absent when empty:
//!
//! ```text
//! id: <node id>
//! labels: <label>, <label>          (sorted, as stored)
//! <key>: <value as JSON>            (one line per `render_props` key the node has, in the order asked)
//! text: <text, at most text_cap characters, then "…" if cut>
//! ```
//!
//! The text is cut after `text_cap` Unicode scalar values (so never inside a character)
//! and marked with `…` when cut. Property values are compact JSON (strings quoted).

#[cfg(test)]
use cairn_core::Node;
use cairn_index::{CommitIndexes, Ordinal};

/// Characters of node text rendered per item unless `text_cap` says otherwise.
pub const DEFAULT_TEXT_CAP_CHARS: usize = 1000;

/// Renders `node` (see the [module docs](self) for the format).
#[cfg(test)]
pub(crate) fn render_node(node: &Node, props: &[String], text_cap_chars: usize) -> String {
    let labels: Vec<&str> = node.labels.iter().map(String::as_str).collect();
    render_parts(
        node.id.as_str(),
        &labels,
        |k| node.props.get(k),
        &node.text,
        props,
        text_cap_chars,
    )
}

/// Renders the node at `ordinal` from the view's columns (no vector is read). Errors: its
/// text cannot be read ([`CommitIndexes::text`]).
pub(crate) fn render_item(
    view: &CommitIndexes,
    ordinal: Ordinal,
    props: &[String],
    text_cap_chars: usize,
) -> Result<String, cairn_index::IndexError> {
    let labels = view.labels_of(ordinal);
    Ok(render_parts(
        view.id(ordinal),
        &labels,
        |k| view.prop(ordinal, k),
        &view.text(ordinal)?,
        props,
        text_cap_chars,
    ))
}

/// The fewest characters the rendering of an item with an id of `id_chars` characters and
/// this text can have: its `id:` line and, for a non-empty text, its `text:` line (labels
/// and properties only add).
pub(crate) fn min_rendered_chars(id_chars: usize, text_chars: usize, text_cap_chars: usize) -> usize {
    let id_line = 4 + id_chars;
    if text_chars == 0 || text_cap_chars == 0 {
        return id_line;
    }
    // A cut text shows `text_cap_chars` characters and the `…`.
    let shown = if text_chars > text_cap_chars {
        text_cap_chars + 1
    } else {
        text_chars
    };
    id_line + 7 + shown
}

fn render_parts<'a>(
    id: &str,
    labels: &[&str],
    prop: impl Fn(&str) -> Option<&'a cairn_core::Value>,
    text: &str,
    props: &[String],
    text_cap_chars: usize,
) -> String {
    let mut out = format!("id: {id}");
    if !labels.is_empty() {
        out.push_str("\nlabels: ");
        out.push_str(&labels.join(", "));
    }
    for key in props {
        if let Some(v) = prop(key) {
            // A stored Value always serializes (finite floats, string keys).
            let json = serde_json::to_string(v).unwrap_or_default();
            out.push('\n');
            out.push_str(key);
            out.push_str(": ");
            out.push_str(&json);
        }
    }
    if !text.is_empty() && text_cap_chars > 0 {
        out.push_str("\ntext: ");
        out.push_str(&cap_chars(text, text_cap_chars));
    }
    out
}

/// The first `cap` characters of `text`, plus `…` if anything was cut.
fn cap_chars(text: &str, cap: usize) -> String {
    match text.char_indices().nth(cap) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::NodeId;

    #[test]
    fn renders_id_labels_props_text() {
        let node = Node::new(NodeId::new("doc-1").unwrap())
            .with_label("Paper")
            .with_label("Document")
            .with_prop("year", 1958i64)
            .with_prop("title", "Wings")
            .with_prop("secret", "x")
            .with_text("Stall occurs when the angle of attack is too high.");
        let props = vec!["title".to_string(), "year".to_string(), "missing".to_string()];
        assert_eq!(
            render_node(&node, &props, 12),
            "id: doc-1\nlabels: Document, Paper\ntitle: \"Wings\"\nyear: 1958\ntext: Stall occurs…"
        );
        assert_eq!(render_node(&node, &[], 0), "id: doc-1\nlabels: Document, Paper");
    }

    #[test]
    fn caps_on_char_boundaries() {
        assert_eq!(cap_chars("héllo", 2), "hé…");
        assert_eq!(cap_chars("héllo", 5), "héllo");
        assert_eq!(cap_chars("日本語", 1), "日…");
        assert_eq!(cap_chars("", 3), "");
    }
}
