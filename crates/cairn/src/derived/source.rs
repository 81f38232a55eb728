//! The retrieval pipeline's view of a repository.

use cairn_index::IndexNeeds;
use cairn_retrieve::{ResolvedCommit, RetrievalSource, SourceError};

use crate::error::Error;
use crate::repo::Repo;

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
            other => SourceError::Storage(other.to_string()),
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
        let c = self.commit(&id).map_err(|e| to_source(&id.to_hex(), e))?;
        let (indexes, repairs) = self
            .index_view(&id, needs)
            .map_err(|e| SourceError::Storage(e.to_string()))?;
        Ok(ResolvedCommit {
            commit: id,
            timestamp_ms: c.timestamp_ms,
            indexes,
            repairs,
        })
    }
}

impl Repo {
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
    /// unless the spec gives a `vector`. [`Repo::retrieve_without_embedder`] does not.
    pub fn retrieve(&self) -> cairn_retrieve::Retrieval<&Repo> {
        let retrieval = cairn_retrieve::Retrieval::new(self);
        match crate::embedders::auto_query_embedder(self) {
            Some((name, embedder)) => retrieval.embed_text_with(name, embedder),
            None => retrieval,
        }
    }
}
