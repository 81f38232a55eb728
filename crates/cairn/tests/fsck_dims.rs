//! The dense-dimension records (`meta/dense-dim/<model>`) under faults (issue 22, item 1):
//! `fsck` checks each against the stored vectors and names a missing, damaged, malformed or
//! orphaned one; `repair_dims` (`cairn fsck --repair`) writes it again from the stored
//! vectors, or removes the orphan; a repaired record refuses a vector of another length.

use cairn::{Error, Node, NodeId, Repo, StoreKind};

const NAME: &str = "meta/dense-dim/m";

fn repo(dir: &tempfile::TempDir) -> Repo {
    let repo = Repo::init_with(dir.path().join("repo"), StoreKind::Segment).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..20 {
        tx.put_node(
            Node::new(NodeId::new(format!("n{i}")).unwrap()).with_embedding("m", vec![i as f32, 1.0, 0.5, 2.0]),
        )
        .unwrap();
    }
    tx.commit("vectors").unwrap();
    repo
}

fn problems(repo: &Repo) -> Vec<String> {
    repo.fsck().unwrap().problems
}

/// After a repair: fsck is clean, and a 3-dim `m` vector is refused again.
fn repaired(repo: &Repo) {
    let done = repo.repair_dims().unwrap();
    assert!(done.iter().any(|d| d.contains(NAME)), "{done:?}");
    assert_eq!(problems(repo), Vec::<String>::new());
    let mut tx = repo.transaction().unwrap();
    let err = tx
        .put_node(Node::new(NodeId::new("bad").unwrap()).with_embedding("m", vec![1.0, 2.0, 3.0]))
        .unwrap_err();
    assert!(matches!(err, Error::Validation(_)), "{err:?}");
}

#[test]
fn a_sound_repository_has_no_dimension_problem() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(&dir);
    assert_eq!(problems(&repo), Vec::<String>::new());
    assert_eq!(repo.repair_dims().unwrap(), Vec::<String>::new());
}

#[test]
fn a_deleted_record_is_named_and_written_again_from_the_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(&dir);
    let value = repo.store().get_ref(NAME).unwrap().unwrap();
    repo.store().cas_ref(NAME, Some(&value), None).unwrap();
    let p = problems(&repo);
    assert!(
        p.iter()
            .any(|l| l.contains(NAME) && l.contains("missing") && l.contains("4 dimensions")),
        "{p:?}"
    );
    repaired(&repo);
    assert_eq!(repo.store().get_ref(NAME).unwrap().unwrap(), value);
}

#[test]
fn a_malformed_record_is_named_and_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(&dir);
    let value = repo.store().get_ref(NAME).unwrap().unwrap();
    repo.store().cas_ref(NAME, Some(&value), Some(&[4, 0, 0])).unwrap();
    let p = problems(&repo);
    assert!(p.iter().any(|l| l.contains(NAME) && l.contains("3 bytes")), "{p:?}");
    repaired(&repo);
}

#[test]
fn a_record_of_another_dimension_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(&dir);
    let value = repo.store().get_ref(NAME).unwrap().unwrap();
    repo.store()
        .cas_ref(NAME, Some(&value), Some(&7u32.to_le_bytes()))
        .unwrap();
    let p = problems(&repo);
    assert!(p.iter().any(|l| l.contains(NAME) && l.contains("says 7")), "{p:?}");
}

#[test]
fn a_damaged_record_file_is_named_and_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    {
        repo(&dir);
    }
    // The ref's file: `refs/<hex of the name>`; flip its last byte.
    let hex: String = NAME.bytes().map(|b| format!("{b:02x}")).collect();
    let file = path.join("refs").join(hex);
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&file, bytes).unwrap();
    let repo = Repo::open(&path).unwrap();
    let p = problems(&repo);
    assert!(p.iter().any(|l| l.contains(NAME) && l.contains("damaged")), "{p:?}");
    repaired(&repo);
}

#[test]
fn a_record_no_node_needs_is_named_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(&dir);
    // What a refused write could leave: `x` registered, no node holding it.
    repo.store()
        .cas_ref("meta/dense-dim/x", None, Some(&384u32.to_le_bytes()))
        .unwrap();
    let p = problems(&repo);
    assert!(
        p.iter()
            .any(|l| l.contains("meta/dense-dim/x") && l.contains("no stored node")),
        "{p:?}"
    );
    let done = repo.repair_dims().unwrap();
    assert!(done.iter().any(|d| d.contains("meta/dense-dim/x removed")), "{done:?}");
    assert_eq!(problems(&repo), Vec::<String>::new());
    // A 3-dim `x` vector is now the model's first.
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new("x1").unwrap()).with_embedding("x", vec![1.0, 2.0, 3.0]))
        .unwrap();
    tx.commit("x").unwrap();
    assert_eq!(repo.dense_dim("x").unwrap(), Some(3));
}

#[test]
fn a_lost_record_is_recovered_from_the_committed_vectors_not_relearned() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo(&dir);
    let value = repo.store().get_ref(NAME).unwrap().unwrap();
    repo.store().cas_ref(NAME, Some(&value), None).unwrap();
    assert_eq!(repo.dense_dim("m").unwrap(), None);
    // A vector of another length is refused: the dimension comes from the 4-d vectors
    // committed, not from this write.
    let mut tx = repo.transaction().unwrap();
    let err = tx
        .put_node(Node::new(NodeId::new("bad").unwrap()).with_embedding("m", vec![1.0, 2.0, 3.0]))
        .unwrap_err();
    match err {
        Error::Validation(cairn::ValidationError::DimensionMismatch { expected, got, .. }) => {
            assert_eq!((expected, got), (4, 3))
        }
        other => panic!("unexpected {other:?}"),
    }
    // One of the right length lands, and its commit writes the record again.
    tx.put_node(Node::new(NodeId::new("good").unwrap()).with_embedding("m", vec![1.0, 2.0, 3.0, 4.0]))
        .unwrap();
    tx.commit("good").unwrap();
    assert_eq!(repo.store().get_ref(NAME).unwrap().unwrap(), value);
    assert_eq!(problems(&repo), Vec::<String>::new());
}

/// The intent a writer leaves before registering a dimension (storage-format.md §6.4).
fn intent(commit: cairn::Hash, expected: Option<cairn::CommitId>, dim: u32, branch: &str) -> Vec<u8> {
    let mut v = commit.as_bytes().to_vec();
    v.extend_from_slice(expected.map_or(cairn::Hash::ZERO, |c| c.0).as_bytes());
    v.extend_from_slice(&dim.to_le_bytes());
    v.extend_from_slice(branch.as_bytes());
    v
}

#[test]
fn a_registration_left_by_a_crash_is_taken_back_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    let head = {
        let repo = Repo::init_with(&path, StoreKind::Segment).unwrap();
        let mut tx = repo.transaction().unwrap();
        tx.put_node(Node::new(NodeId::new("a").unwrap()).with_text("no vectors"))
            .unwrap();
        let head = tx.commit("text").unwrap();
        // What a writer that died between registering `m` and moving main leaves.
        let s = repo.store();
        s.cas_ref(
            "meta/dense-dim-intent/m",
            None,
            Some(&intent(cairn::Hash::of(b"never landed"), Some(head), 3, "main")),
        )
        .unwrap();
        s.cas_ref("meta/dense-dim/m", None, Some(&3u32.to_le_bytes())).unwrap();
        // And one whose branch moved on since: the registration is kept.
        s.cas_ref(
            "meta/dense-dim-intent/k",
            None,
            Some(&intent(cairn::Hash::of(b"other"), None, 2, "main")),
        )
        .unwrap();
        s.cas_ref("meta/dense-dim/k", None, Some(&2u32.to_le_bytes())).unwrap();
        head
    };
    let repo = Repo::open(&path).unwrap();
    assert_eq!(repo.dense_dim("m").unwrap(), None, "taken back");
    assert_eq!(repo.dense_dim("k").unwrap(), Some(2), "kept: main moved on");
    assert!(repo.store().list_refs("meta/dense-dim-intent/").unwrap().is_empty());
    assert_eq!(repo.head().unwrap(), Some(head));
    // `m` is free again: a 4-d vector registers 4.
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new("v").unwrap()).with_embedding("m", vec![1.0; 4]))
        .unwrap();
    tx.commit("m vectors").unwrap();
    assert_eq!(repo.dense_dim("m").unwrap(), Some(4));
    // A commit leaves no intent behind.
    assert!(repo.store().list_refs("meta/dense-dim-intent/").unwrap().is_empty());
}
