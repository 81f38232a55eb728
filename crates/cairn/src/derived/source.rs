//! The retrieval pipeline's view of a repository.

use std::sync::Arc;

use cairn_core::CommitId;
use cairn_index::IndexNeeds;
use cairn_retrieve::{EmbedError, ModelEmbedder, ResolvedCommit, RetrievalSource, SourceCause, SourceError};

use crate::error::Error;
use crate::repo::Repo;

/// A repository failure as the retrieval source's: damage stays damage, and any other
/// failure keeps the typed [`Error`] as its cause ([`crate::ErrorKind::of_retrieve`]
/// classifies it by that error's own kind).
fn storage(e: Error) -> SourceError {
    match e.kind() {
        crate::ErrorKind::Corrupt => SourceError::Corrupt(e.to_string()),
        _ => SourceError::Storage(SourceCause::new(e)),
    }
}

impl RetrievalSource for Repo {
    fn resolve(&self, at: Option<&str>, needs: &IndexNeeds) -> Result<ResolvedCommit, SourceError> {
        let to_source = |rev: &str, e: Error| match e {
            Error::UnknownRevision { rev, detail } => SourceError::UnknownRevision { rev, detail },
            Error::AmbiguousRevision { prefix, count } => SourceError::UnknownRevision {
                rev: prefix,
                detail: format!("ambiguous: matches {count} commits"),
            },
            Error::UnknownBranch(b) => SourceError::UnknownRevision {
                rev: rev.to_string(),
                detail: format!("unknown branch `{b}`"),
            },
            other => storage(other),
        };
        let id = match at {
            Some(rev) if rev != "HEAD" => Repo::resolve(self, rev).map_err(|e| to_source(rev, e))?,
            _ => match self.head().map_err(|e| to_source("HEAD", e))? {
                Some(id) => id,
                None => {
                    let branch = self.current_branch().map_err(|e| to_source("HEAD", e))?;
                    return Err(SourceError::NoCommits {
                        branch: branch.as_str().to_string(),
                    });
                }
            },
        };
        self.resolved(id, needs).map_err(|(rev, e)| to_source(&rev, e))
    }

    fn resolve_commit(&self, commit: &CommitId, needs: &IndexNeeds) -> Result<ResolvedCommit, SourceError> {
        self.resolved(*commit, needs).map_err(|(_, e)| match e {
            Error::UnknownRevision { rev, detail } => SourceError::UnknownRevision { rev, detail },
            other => storage(other),
        })
    }

    /// The repository's embedder policy, the one every interface's retrievals go
    /// through: `name` if given (an embedder set with [`Repo::set_embedder`]), else the
    /// default — the first configured embedder, in name order, whose dense model holds
    /// vectors ([`Repo::default_query_embedder`]), or none. Nothing is loaded until a
    /// text is embedded.
    fn query_embedder(&self, name: Option<&str>) -> Result<Option<ModelEmbedder>, EmbedError> {
        let (name, e) = match name {
            Some(n) => {
                let e = Repo::query_embedder(self, n).map_err(|e| EmbedError::new(e.to_string()))?;
                (n.to_string(), e)
            }
            None => match self.default_embedder() {
                Ok(Some((n, config))) => {
                    let e = self.query_embedder_with(&n, config);
                    (n, e)
                }
                Ok(None) => return Ok(None),
                Err(e) => {
                    return Err(EmbedError::new(format!(
                        "the embedder configuration cannot be read: {e}"
                    )))
                }
            },
        };
        Ok(Some((name, Arc::new(e))))
    }
}

impl Repo {
    /// The commit `id` with its view holding `needs` (its object read once: the view's
    /// assembly takes it from the handle's commit cache). The error names the commit.
    fn resolved(&self, id: CommitId, needs: &IndexNeeds) -> Result<ResolvedCommit, (String, Error)> {
        let c = self.commit_shared(&id).map_err(|e| (id.to_hex(), e))?;
        let (indexes, repairs) = self.derived().index_view(&id, needs).map_err(|e| (id.to_hex(), e))?;
        Ok(ResolvedCommit {
            commit: id,
            timestamp_ms: c.timestamp_ms,
            indexes,
            repairs,
        })
    }

    /// Starts a retrieval over this repository (at the current head unless `.at(rev)`).
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    ///
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?).with_label("Doc").with_text("how wings stall"))?;
    /// tx.put_node(Node::new(NodeId::new("b")?).with_label("Doc").with_text("rocket nozzles"))?;
    /// tx.commit("docs")?;
    /// let result = repo.retrieve().label("Doc").text("wing stall").limit(1).execute()?;
    /// assert_eq!(result.items[0].id.as_str(), "a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// If the repository has an embedder for a dense model it holds vectors of
    /// ([`Repo::set_embedder`]), the query `text` is also embedded for that model's dense
    /// lane (the first such name in name order; the lane report's `embedded` says so),
    /// unless the spec gives a `vector` — as for every retrieval over the repository,
    /// built here or run from a spec ([`Retrieval::from_spec`](cairn_retrieve::Retrieval::from_spec)):
    /// see [`RetrievalSource::query_embedder`]. [`Retrieval::embedder`](cairn_retrieve::Retrieval::embedder)
    /// names another, [`Retrieval::no_embed`](cairn_retrieve::Retrieval::no_embed) turns it off.
    pub fn retrieve(&self) -> cairn_retrieve::Retrieval<&Repo> {
        cairn_retrieve::Retrieval::new(self)
    }
}
