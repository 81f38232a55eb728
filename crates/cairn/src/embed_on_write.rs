//! Embedding on write: every commit gives the nodes it writes the vectors of the
//! repository's embedders, in that same commit.
//!
//! A repository with embedders ([`Repo::set_embedder`]) embeds on write for each of them:
//! a node put in a [`Transaction`](crate::Transaction) — by the library, `cairn import`,
//! `POST /import`, MCP `remember` or Python — that carries text gets the embedder's
//! vector for its model when
//!
//! - it has none (unless the base commit holds the node with the same text and a vector
//!   of the model: that vector is kept, nothing is embedded), or
//! - its text differs from the base commit's version while its vector of the model is
//!   the base's (a patch of the text that did not set the vector: the vector would be
//!   stale, so it is embedded again).
//!
//! A node that gives its own vector otherwise keeps it; a node without text gets none.
//! Nodes are embedded in batches of [`DEFAULT_EMBED_BATCH`] as they are put (so a bulk
//! import holds at most a batch of them), and the rest at commit. An embedder that fails
//! fails the put or the commit with [`Error::Embedder`] and nothing is committed; its
//! nodes stay waiting, so a later commit of the same transaction tries again rather than
//! writing them without vectors. [`Transaction::embed_on_write`](crate::Transaction::embed_on_write)
//! turns it off for one transaction (`cairn import --no-embed-on-write`).

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_core::{Node, NodeId};
use cairn_retrieve::Embedder;

use crate::embedders::{build_embedder, EmbedderConfig, EmbedderError, DEFAULT_EMBED_BATCH};
use crate::error::{Error, Result};
use crate::progress::{Meter, Step};
use crate::repo::Repo;

/// One transaction's embedding on write: the repository's embedders, read at the first
/// put that needs them, and the nodes waiting for vectors.
pub(crate) struct OnWrite {
    /// Off for this transaction.
    off: bool,
    /// The configured embedders in name order, once read; each built on first use.
    embedders: Option<Vec<Configured>>,
    /// Nodes waiting for vectors (the latest put of an id wins), with the models each
    /// needs.
    waiting: BTreeMap<NodeId, (Node, Vec<String>)>,
    /// Progress of [`Step::Embed`], once anything is embedded.
    meter: Option<Meter>,
}

struct Configured {
    name: String,
    config: EmbedderConfig,
    built: Option<Arc<dyn Embedder>>,
}

impl OnWrite {
    pub(crate) fn new() -> OnWrite {
        OnWrite {
            off: false,
            embedders: None,
            waiting: BTreeMap::new(),
            meter: None,
        }
    }

    /// Turns embedding on write on or off for the rest of the transaction (nodes already
    /// waiting are still embedded).
    pub(crate) fn set_enabled(&mut self, on: bool) {
        self.off = !on;
    }

    /// True if nodes are waiting for vectors (so the transaction changes something).
    pub(crate) fn has_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// The node as it will be committed if it needs no embedding: `node` itself, or with
    /// the base's vectors of its unchanged text. `Ok(Err(node))` if it must wait for
    /// vectors (stale ones removed), to be handed to [`OnWrite::wait`].
    pub(crate) fn prepare(
        &mut self,
        repo: &Repo,
        base: &dyn Fn(&NodeId) -> Result<Option<Node>>,
        mut node: Node,
    ) -> Result<std::result::Result<Node, (Node, Vec<String>)>> {
        if self.off || node.text.is_empty() {
            return Ok(Ok(node));
        }
        let embedders = self.embedders(repo)?;
        if embedders.is_empty() {
            return Ok(Ok(node));
        }
        let names: Vec<String> = embedders.iter().map(|c| c.name.clone()).collect();
        let before = base(&node.id)?;
        let mut needs = Vec::new();
        for name in names {
            let old = before
                .as_ref()
                .filter(|b| b.text == node.text)
                .and_then(|b| b.embeddings.get(&name));
            match (node.embeddings.get(&name), old) {
                // Unchanged text: the base's vector stands in for a missing one.
                (None, Some(v)) => {
                    node.embeddings.insert(name, v.clone());
                }
                (None, None) => needs.push(name),
                (Some(v), None) => {
                    // Changed (or new) text: a vector carried over from the base is stale.
                    let stale = before
                        .as_ref()
                        .is_some_and(|b| b.text != node.text && b.embeddings.get(&name) == Some(v));
                    if stale {
                        node.embeddings.remove(&name);
                        needs.push(name);
                    }
                }
                (Some(_), Some(_)) => {}
            }
        }
        Ok(if needs.is_empty() { Ok(node) } else { Err((node, needs)) })
    }

    /// Queues a node [`OnWrite::prepare`] said must wait; true once a batch is full.
    pub(crate) fn wait(&mut self, node: Node, models: Vec<String>) -> bool {
        self.waiting.insert(node.id.clone(), (node, models));
        self.waiting.len() >= DEFAULT_EMBED_BATCH
    }

    /// Forgets a waiting node (deleted, or put again without needing vectors).
    pub(crate) fn forget(&mut self, id: &NodeId) {
        self.waiting.remove(id);
    }

    /// Embeds every waiting node, model by model in name order, a batch of texts per
    /// call, and returns them in id order with their vectors. They keep waiting until the
    /// transaction has staged them ([`OnWrite::staged`]); on failure nothing is returned.
    pub(crate) fn embed_waiting(&mut self, repo: &Repo) -> Result<Vec<Node>> {
        if self.waiting.is_empty() {
            return Ok(Vec::new());
        }
        let mut nodes: Vec<(Node, Vec<String>)> = self.waiting.values().cloned().collect();
        let models: Vec<String> = {
            let mut m: Vec<String> = nodes.iter().flat_map(|(_, ms)| ms.iter().cloned()).collect();
            m.sort();
            m.dedup();
            m
        };
        for model in &models {
            let embedder = self.built(repo, model)?;
            let at: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].1.contains(model)).collect();
            for batch in at.chunks(DEFAULT_EMBED_BATCH) {
                let texts: Vec<&str> = batch.iter().map(|&i| nodes[i].0.text.as_str()).collect();
                let vectors = embedder
                    .embed_batch(&texts)
                    .map_err(|e| embed_error(model, e.message))?;
                if vectors.len() != batch.len() {
                    return Err(embed_error(
                        model,
                        format!("{} vectors for {} texts", vectors.len(), batch.len()),
                    ));
                }
                for (&i, v) in batch.iter().zip(vectors) {
                    if v.is_empty() || v.iter().any(|x| !x.is_finite()) {
                        return Err(embed_error(
                            model,
                            "a vector is empty or has a non-finite component".into(),
                        ));
                    }
                    nodes[i].0.embeddings.insert(model.clone(), v);
                }
            }
        }
        let meter = self.meter.get_or_insert_with(|| repo.meter(Step::Embed, None));
        meter.add(nodes.len() as u64);
        Ok(nodes.into_iter().map(|(n, _)| n).collect())
    }

    /// The nodes [`OnWrite::embed_waiting`] returned are staged with their vectors: they
    /// wait no more.
    pub(crate) fn staged(&mut self) {
        self.waiting.clear();
    }

    fn embedders(&mut self, repo: &Repo) -> Result<&[Configured]> {
        if self.embedders.is_none() {
            let list = repo.embedders().map_err(boxed)?;
            self.embedders = Some(
                list.into_iter()
                    .map(|(name, config)| Configured {
                        name,
                        config,
                        built: None,
                    })
                    .collect(),
            );
        }
        Ok(self.embedders.as_deref().unwrap_or_default())
    }

    /// The embedder of `model`, built on first use (checked against the repository's
    /// dimension for the model).
    fn built(&mut self, repo: &Repo, model: &str) -> Result<Arc<dyn Embedder>> {
        let dim = repo.dense_dim(model)?;
        let c = self
            .embedders
            .as_mut()
            .and_then(|list| list.iter_mut().find(|c| c.name == model))
            .ok_or_else(|| boxed(EmbedderError::Unknown(model.into())))?;
        if c.built.is_none() {
            c.built = Some(build_embedder(&c.name, &c.config, dim).map_err(boxed)?);
        }
        Ok(Arc::clone(c.built.as_ref().expect("just built")))
    }
}

fn embed_error(model: &str, detail: String) -> Error {
    boxed(EmbedderError::Embed {
        name: model.into(),
        detail,
    })
}

fn boxed(e: EmbedderError) -> Error {
    match e {
        EmbedderError::Repo(e) => e,
        other => Error::Embedder(Box::new(other)),
    }
}
