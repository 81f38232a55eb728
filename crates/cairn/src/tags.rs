//! Tags: names fixed on one commit each (a release, "before the migration"), which keep
//! it and its history from `gc` and resolve as revisions. Unlike a branch, a tag never
//! moves: it is created and deleted, never advanced by a commit.

use cairn_core::CommitId;
use cairn_graph::refs::BranchName;

use crate::error::{Error, Result};
use crate::repo::Repo;

impl Repo {
    /// Creates tag `name` at revision `at` (default: the current head); returns its commit.
    /// [`Error::TagExists`] if there is one of that name (tags never move);
    /// [`Error::InvalidArgument`] if a branch has that name (branches and tags share one
    /// namespace: a revision naming both means the branch, so the tag could never be named).
    ///
    /// ```
    /// use cairn::{Node, NodeId, Repo};
    /// let repo = Repo::in_memory()?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("a")?))?;
    /// let first = tx.commit("first")?;
    /// repo.create_tag("v1", None)?;
    /// let mut tx = repo.transaction()?;
    /// tx.put_node(Node::new(NodeId::new("b")?))?;
    /// tx.commit("second")?;
    /// assert_eq!(repo.resolve("v1")?, first);
    /// assert_eq!(repo.tags()?, vec![("v1".to_string(), first)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_tag(&self, name: &str, at: Option<&str>) -> Result<CommitId> {
        let tag = BranchName::new(name)?;
        // Under the gc lock, as for a branch: the commit cannot be collected before the
        // tag makes it reachable.
        let _publishing = self.inner.gc_lock.read();
        if self.refs().branch(&tag)?.is_some() {
            return Err(Error::InvalidArgument(format!(
                "`{name}` is a branch: a tag of the same name could never be named (a revision naming both means the branch)"
            )));
        }
        let target = self.rev_or_head(at)?;
        match self.refs().cas_tag(&tag, None, Some(target))? {
            Ok(()) => Ok(target),
            Err(_) => Err(Error::TagExists(name.into())),
        }
    }

    /// Deletes tag `name` ([`Error::UnknownTag`] if there is none). Its commits stay
    /// until `gc`, if nothing else reaches them.
    pub fn delete_tag(&self, name: &str) -> Result<()> {
        let tag = BranchName::new(name)?;
        let at = self.refs().tag(&tag)?.ok_or_else(|| Error::UnknownTag(name.into()))?;
        match self.refs().cas_tag(&tag, Some(at), None)? {
            Ok(()) => Ok(()),
            Err(_) => Err(Error::UnknownTag(name.into())),
        }
    }

    /// Tags with their commits, in name order.
    pub fn tags(&self) -> Result<Vec<(String, CommitId)>> {
        Ok(self
            .refs()
            .tags()?
            .into_iter()
            .map(|(t, c)| (t.to_string(), c))
            .collect())
    }
}
