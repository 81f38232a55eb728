//! The branches of a repository as `branch` listings show them (`cairn branch`, the
//! server's `GET /branches`).

use cairn_core::CommitId;
use serde::Serialize;

use crate::error::Result;
use crate::repo::Repo;

/// The branches and the current one, in name order. The current branch is listed even
/// before its first commit (it has no ref then: `head` is `None`).
///
/// As JSON (`GET /branches`): `{"branches": [{"head", "name"}], "current"}` (keys in
/// alphabetical order, as the server has always answered; `head` is null for the
/// current branch before its first commit).
///
/// ```
/// use cairn::{BranchList, Node, NodeId, Repo};
///
/// let repo = Repo::in_memory()?;
/// let list = BranchList::read(&repo)?;
/// assert_eq!(list.branches.len(), 1);
/// assert_eq!(list.branches[0].name, list.current);
/// assert_eq!(list.branches[0].head, None); // no commit yet
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BranchList {
    /// Every branch, by name.
    pub branches: Vec<BranchHead>,
    /// The current branch.
    pub current: String,
}

/// One branch and its head commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BranchHead {
    /// The head commit (`None`: the current branch before its first commit).
    pub head: Option<CommitId>,
    /// The branch's name.
    pub name: String,
}

impl BranchList {
    /// The repository's branches ([`Repo::branches`]) and current branch
    /// ([`Repo::current_branch`]), the current one included even without a commit.
    pub fn read(repo: &Repo) -> Result<BranchList> {
        let current = repo.current_branch()?.to_string();
        let mut branches: Vec<BranchHead> = repo
            .branches()?
            .into_iter()
            .map(|(name, head)| BranchHead { head: Some(head), name })
            .collect();
        if !branches.iter().any(|b| b.name == current) {
            branches.push(BranchHead {
                head: None,
                name: current.clone(),
            });
        }
        branches.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(BranchList { branches, current })
    }
}
