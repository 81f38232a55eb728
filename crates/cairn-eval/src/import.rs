//! Importing a judged collection into a repository, the same way every time:
//!
//! | collection | graph |
//! |---|---|
//! | corpus document | node `id` = document id, label [`DOCUMENT_LABEL`], text = `(title + " " + text)` trimmed, embedding [`EVAL_MODEL`] |
//! | `doc_meta.jsonl` fields (Cranfield, CISI) | string properties of the node (`author`, `bib`) |
//! | `links.tsv` row (CISI) | edge of kind [`LINK_KIND`] with the row's weight |

use cairn::{CommitId, Edge, Error, Node, NodeId, Repo, Result};

use crate::collection::{Collection, DocMeta};

/// The dense model name the collection's embeddings are stored under.
pub const EVAL_MODEL: &str = "minilm";
/// The label every imported document carries.
pub const DOCUMENT_LABEL: &str = "Document";
/// The edge kind of `links.tsv` rows.
pub const LINK_KIND: &str = "cites";

/// Imports collection `c` as one commit on the current branch (see the
/// [module docs](self) for the mapping), without document metadata; with `with_links`,
/// `links.tsv` becomes edges (none if the collection has no links).
pub fn import_collection(repo: &Repo, c: &Collection, with_links: bool) -> Result<CommitId> {
    import_collection_with_meta(repo, c, &DocMeta::default(), with_links)
}

/// [`import_collection`], with `meta`'s fields as string properties of the documents it
/// names. Every document and link goes into one transaction: a failure (an id that is not
/// a valid node id, a link to an unknown document, a dimension other than the
/// repository's for [`EVAL_MODEL`]) commits nothing.
pub fn import_collection_with_meta(repo: &Repo, c: &Collection, meta: &DocMeta, with_links: bool) -> Result<CommitId> {
    let mut tx = repo.transaction()?;
    for (i, d) in c.corpus.iter().enumerate() {
        let mut node = Node::new(node_id(&d.id)?)
            .with_label(DOCUMENT_LABEL)
            .with_text(d.full_text())
            .with_embedding(EVAL_MODEL, c.doc_embedding(i).to_vec());
        for (k, v) in meta.0.get(&d.id).into_iter().flatten() {
            node = node.with_prop(k.clone(), v.clone());
        }
        tx.put_node(node)?;
    }
    let links = match (&c.links, with_links) {
        (Some(links), true) => links.as_slice(),
        _ => &[],
    };
    for l in links {
        let edge = Edge::new(node_id(&l.source)?, LINK_KIND, node_id(&l.target)?);
        tx.put_edge(edge.with_weight(l.weight))?;
    }
    tx.commit(&format!(
        "import evaluation collection: {} documents, {} links",
        c.corpus.len(),
        links.len()
    ))
}

fn node_id(id: &str) -> Result<NodeId> {
    NodeId::new(id).map_err(|e| Error::InvalidArgument(format!("collection id {id:?}: {e}")))
}
