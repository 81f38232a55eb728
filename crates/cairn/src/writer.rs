//! The commit writer: the one path by which a commit is written and a branch moved.
//!
//! Transactions and merges describe what they change — node and edge ids mapped to a new
//! value hash or to removal, with the new objects already in a [`PendingWrites`] — and
//! call [`write_commit`]. It applies the change to the first parent's trees, writes the
//! objects in durability order (objects, flush, then the ref), registers the dense
//! dimensions the commit relies on, and moves the branch by compare-and-swap.
//! Fast-forward merges, which write no commit, move the branch with [`move_branch`].
//!
//! Dense dimensions are repository metadata (`meta/dense-dim/<model>`), registered once
//! per model. A writer registers them just before its compare-and-swap, under a lock
//! that every writer of the repository takes, and takes back the registrations it made
//! if the swap is lost, so a commit that never lands leaves no dimension behind. Because
//! another transaction may have read a registration that is later taken back, every
//! commit re-registers every dimension its new nodes rely on, not only those it
//! introduced.
//!
//! A crash between a new registration and the swap would leave the registration behind,
//! so each new one is preceded by an intent record (`meta/dense-dim-intent/<model>`: the
//! commit, the head it expected, the dimension, the branch), removed once the swap is
//! decided. Opening the repository ([`recover_dim_intents`]) takes back a registration
//! whose intent is still there while the branch still holds the head that commit expected
//! (so the commit never landed); otherwise it keeps the registration (an orphan is named
//! by `fsck`, removed by `fsck --repair`) and drops the intent.

use std::collections::BTreeMap;

use cairn_core::limits::{MAX_AUTHOR_BYTES, MAX_MESSAGE_BYTES};
use cairn_core::{Commit, CommitId, EdgeKey, Hash, NodeId, Subject, ValidationError};
use cairn_graph::refs::BranchName;
use cairn_graph::{EdgeTree, NodeTree, PendingWrites, ReverseEdgeTree};

use crate::dense_dims::dense_dim_key;
use crate::error::{Error, Result};
use crate::reflog::{self, RefAction};
use crate::repo::Repo;

/// The current time in ms since the epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// An author, checked against its cap.
pub(crate) fn checked_author(author: String) -> Result<String> {
    if author.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "author is empty (name one, or leave it unset for the default)".into(),
        ));
    }
    if author.len() > MAX_AUTHOR_BYTES {
        return Err(Error::InvalidArgument("author is over 1 KiB".into()));
    }
    Ok(author)
}

/// Refuses a commit message over its cap.
pub(crate) fn check_message(message: &str) -> Result<()> {
    if message.len() > MAX_MESSAGE_BYTES {
        return Err(Error::InvalidArgument("commit message is over 64 KiB".into()));
    }
    Ok(())
}

/// What a commit changes relative to its first parent.
#[derive(Debug, Default)]
pub(crate) struct ChangeSet {
    /// Node id → the new node object's hash, or `None` to remove the node.
    pub nodes: BTreeMap<NodeId, Option<Hash>>,
    /// Edge key → the new edge object's hash, or `None` to remove the edge. The forward
    /// and reverse edge trees both change.
    pub edges: BTreeMap<EdgeKey, Option<Hash>>,
    /// Dense models the new nodes carry: model → (dimension, a node carrying it, named if
    /// the dimension is refused).
    pub dims: BTreeMap<String, (usize, NodeId)>,
}

/// The parts of a new commit that are not its trees.
pub(crate) struct CommitHeader<'a> {
    /// Every parent, the first one being the commit the change applies to (the branch's
    /// head when the writer started); empty for a branch's first commit.
    pub parents: Vec<CommitId>,
    /// The first parent's commit, if any.
    pub base: Option<&'a Commit>,
    pub author: &'a str,
    pub message: &'a str,
    pub timestamp_ms: i64,
}

/// Proof that the caller holds the repository's gc lock for reading, from the moment it
/// started building the commit's objects until the ref has moved (see `gc.rs`).
pub(crate) type Publishing<'a> = parking_lot::RwLockReadGuard<'a, ()>;

/// Writes a commit applying `change` to `header.base`'s trees, with the objects already in
/// `out`, and moves `branch` from `header.parents[0]` (or from absent) to it.
///
/// Errors: [`Error::Conflict`] if the branch moved since (nothing registered, the
/// objects written are unreferenced until gc); a [`ValidationError::DimensionMismatch`]
/// if another writer registered another dimension for a model first; store errors.
pub(crate) fn write_commit(
    repo: &Repo,
    _publishing: &Publishing<'_>,
    branch: &BranchName,
    change: &ChangeSet,
    mut out: PendingWrites,
    header: CommitHeader<'_>,
) -> Result<CommitId> {
    let objs = repo.objects();
    let base = header.base;
    debug_assert_eq!(base.is_some(), !header.parents.is_empty());
    let (nodes, edges, edges_in, node_count, edge_count) = match base {
        Some(c) => (
            NodeTree::of(c),
            EdgeTree::of(c),
            ReverseEdgeTree::of(c),
            c.node_count,
            c.edge_count,
        ),
        None => (NodeTree::EMPTY, EdgeTree::EMPTY, ReverseEdgeTree::EMPTY, 0, 0),
    };

    let mut new_node_count = node_count as i64;
    for (id, after) in &change.nodes {
        let before = nodes.get(objs, id)?;
        if before != *after {
            new_node_count += after.is_some() as i64 - before.is_some() as i64;
        }
    }
    let new_nodes = nodes.apply(objs, &change.nodes, Some(node_count), &mut out)?;

    let mut new_edge_count = edge_count as i64;
    for (key, after) in &change.edges {
        let before = edges.get(objs, key)?;
        new_edge_count += after.is_some() as i64 - before.is_some() as i64;
    }
    let new_edges = edges.apply(objs, &change.edges, Some(edge_count), &mut out)?;
    let new_edges_in = edges_in.apply(objs, &change.edges, Some(edge_count), &mut out)?;

    let commit = Commit {
        parents: header.parents,
        node_root: new_nodes.root(),
        edge_root: new_edges.root(),
        edge_in_root: new_edges_in.root(),
        node_count: new_node_count.max(0) as u64,
        edge_count: new_edge_count.max(0) as u64,
        author: header.author.to_owned(),
        message: header.message.to_owned(),
        timestamp_ms: header.timestamp_ms,
        generation: base.map_or(0, |c| c.generation + 1),
        // Retired with index format 1 (storage-format.md §3.4): always None / 0.
        index_base: None,
        changes_since_base: 0,
    };
    let id = out.add_commit(&commit);

    // Durability order: objects, flush, then the ref (the compare-and-swap flushes).
    let store = repo.store();
    out.flush_to(store.as_ref())?;
    store.flush_objects()?;
    let expected = commit.parents.first().copied();
    let action = if commit.parents.len() > 1 {
        RefAction::Merge
    } else {
        RefAction::Commit
    };
    move_branch_as(repo, branch, expected, id, &commit, &change.dims, action)
}

/// Moves `branch` from `expected` to `id` by fast-forward (a commit it did not write):
/// [`move_branch_as`] recording [`RefAction::FastForward`] in the reflog.
pub(crate) fn move_branch(
    repo: &Repo,
    branch: &BranchName,
    expected: Option<CommitId>,
    id: CommitId,
    commit: &Commit,
    dims: &BTreeMap<String, (usize, NodeId)>,
) -> Result<CommitId> {
    move_branch_as(repo, branch, expected, id, commit, dims, RefAction::FastForward)
}

/// Moves `branch` from `expected` to `id` (whose commit is `commit` and whose objects are
/// durable), registering `dims` first and taking back the registrations it made if the
/// swap is lost. Records the new head in the time index and the move in the reflog.
fn move_branch_as(
    repo: &Repo,
    branch: &BranchName,
    expected: Option<CommitId>,
    id: CommitId,
    commit: &Commit,
    dims: &BTreeMap<String, (usize, NodeId)>,
    action: RefAction,
) -> Result<CommitId> {
    let refs = repo.refs();
    let _writers = repo.inner.dims_lock.lock();
    let mut registered = Vec::new();
    let undo = |registered: &[(String, [u8; 4])]| {
        for (key, value) in registered {
            // Best effort: a registration left behind only reserves the model's dimension.
            let _ = refs.remove_meta_if(key, value);
        }
    };
    let mut intents: Vec<(String, Vec<u8>)> = Vec::new();
    let drop_intents = |intents: &[(String, Vec<u8>)]| {
        for (key, value) in intents {
            let _ = refs.remove_meta_if(key, value);
        }
    };
    for (model, (dim, node)) in dims {
        let key = dense_dim_key(model);
        let value = (*dim as u32).to_le_bytes();
        // A registration this commit may make: say so first (crash recovery at open).
        if matches!(refs.meta(&key), Ok(None)) {
            let intent_key = format!("{DIM_INTENT_PREFIX}{model}");
            let intent = encode_intent(id, expected, *dim as u32, branch);
            if refs
                .register_meta(&intent_key, &intent)
                .is_ok_and(|prior| prior.is_none())
            {
                intents.push((intent_key, intent));
            }
        }
        match refs.register_meta(&key, &value) {
            Ok(None) => registered.push((key, value)),
            Ok(Some(stored)) if stored == value => {}
            Ok(Some(stored)) => {
                undo(&registered);
                drop_intents(&intents);
                let stored_dim = <[u8; 4]>::try_from(stored.as_slice()).map_or(0, u32::from_le_bytes) as usize;
                return Err(ValidationError::DimensionMismatch {
                    subject: Subject::Node(node.clone()),
                    model: model.clone(),
                    expected: stored_dim,
                    got: *dim,
                }
                .into());
            }
            Err(e) => {
                undo(&registered);
                drop_intents(&intents);
                return Err(e.into());
            }
        }
    }
    // On a store error the swap may or may not have lasted (storage contract): if the
    // branch still holds `expected`, it did not, and the registrations are taken back; if
    // that cannot be told, they stay (taking one back could orphan a commit that landed;
    // `fsck` names a registration no node needs, and `fsck --repair` removes it).
    let swapped = match refs.cas_branch(branch, expected, Some(id)) {
        Ok(swapped) => swapped,
        Err(e) => {
            if matches!(refs.branch(branch), Ok(now) if now == expected) {
                undo(&registered);
                drop_intents(&intents);
            }
            return Err(e.into());
        }
    };
    // The swap is decided: its registrations stand (it landed) or are taken back below.
    match swapped {
        Ok(()) => {
            // The time index is derived data: if recording fails, it is rebuilt from the
            // chain on next use, so the (already durable) commit still stands.
            drop_intents(&intents);
            let _ = repo.derived().record_head(branch.as_str(), &id, commit);
            reflog::record_move(repo, branch, expected, id, commit, action);
            Ok(id)
        }
        Err(actual) => {
            undo(&registered);
            drop_intents(&intents);
            Err(Error::Conflict {
                branch: branch.to_string(),
                expected: expected.map_or("none".into(), |c| c.to_hex()),
                actual: actual.map_or("none".into(), |c| c.to_hex()),
            })
        }
    }
}

/// Meta-key prefix of the dimension registration intents.
const DIM_INTENT_PREFIX: &str = "dense-dim-intent/";

/// An intent: `commit (32) ‖ expected head (32, zeros for none) ‖ u32le dim ‖ branch`.
fn encode_intent(commit: CommitId, expected: Option<CommitId>, dim: u32, branch: &BranchName) -> Vec<u8> {
    let mut v = Vec::with_capacity(68 + branch.as_str().len());
    v.extend_from_slice(commit.0.as_bytes());
    v.extend_from_slice(expected.map_or(Hash::ZERO, |c| c.0).as_bytes());
    v.extend_from_slice(&dim.to_le_bytes());
    v.extend_from_slice(branch.as_str().as_bytes());
    v
}

/// Takes back the dimension registrations of commits that never landed (a writer that
/// crashed between registering and its swap): for each intent left, if the branch still
/// holds the head the commit expected, the registration it names is removed; in every
/// case the intent goes. Returns what was taken back. Best effort: a store error leaves
/// things as they are (`fsck` names an orphaned registration). Run at open.
pub(crate) fn recover_dim_intents(repo: &Repo) -> Vec<String> {
    let refs = repo.refs();
    let Ok(intents) = refs.meta_list(DIM_INTENT_PREFIX) else {
        return Vec::new();
    };
    let mut taken_back = Vec::new();
    for (name, value) in intents {
        let Some(model) = name.strip_prefix(DIM_INTENT_PREFIX).map(str::to_string) else {
            continue;
        };
        let intent_key = format!("{DIM_INTENT_PREFIX}{model}");
        let parsed = (value.len() >= 68)
            .then(|| {
                let expected: [u8; 32] = value[32..64].try_into().ok()?;
                let dim: [u8; 4] = value[64..68].try_into().ok()?;
                let branch = BranchName::new(std::str::from_utf8(&value[68..]).ok()?).ok()?;
                let expected = (expected != [0; 32]).then(|| CommitId(Hash::from_bytes(expected)));
                Some((expected, dim, branch))
            })
            .flatten();
        if let Some((expected, dim, branch)) = parsed {
            if matches!(refs.branch(&branch), Ok(now) if now == expected)
                && refs.remove_meta_if(&dense_dim_key(&model), &dim).unwrap_or(false)
            {
                taken_back.push(model.clone());
            }
        }
        let _ = refs.remove_meta_if(&intent_key, &value);
    }
    taken_back
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The intent's bytes are storage-format.md's layout: commit ‖ expected head (zeros:
    /// none) ‖ u32le dimension ‖ branch name.
    #[test]
    fn an_intent_is_laid_out_as_documented() {
        let commit = CommitId(Hash::of(b"commit"));
        let expected = CommitId(Hash::of(b"parent"));
        let branch = BranchName::new("main").unwrap();
        let mut want = commit.0.as_bytes().to_vec();
        want.extend_from_slice(expected.0.as_bytes());
        want.extend_from_slice(&[3, 0, 0, 0]);
        want.extend_from_slice(b"main");
        assert_eq!(encode_intent(commit, Some(expected), 3, &branch), want);
        let first = encode_intent(commit, None, 384, &branch);
        assert_eq!(&first[32..64], &[0u8; 32]);
        assert_eq!(&first[64..68], &384u32.to_le_bytes());
    }
}
