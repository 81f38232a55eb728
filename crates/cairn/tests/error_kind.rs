//! `Error::kind`: the one classification every front end maps from. Damage is never bad
//! input and bad input never damage.

use cairn::retrieve::{RetrieveError, SourceCause, SourceError};
use cairn::{Error, ErrorKind, GraphError, Hash, IndexError, Node, NodeId, Repo, StoreError, ValidationError};

fn id(s: &str) -> NodeId {
    NodeId::new(s).unwrap()
}

#[test]
fn every_family_has_its_kind() {
    let corrupt_store = || StoreError::corrupt_object(&Hash::of(b"x"), "checksum");
    let cases: Vec<(Error, ErrorKind)> = vec![
        (Error::InvalidArgument("x".into()), ErrorKind::InvalidInput),
        (
            Error::Import {
                line: 3,
                detail: "bad".into(),
                source: None,
            },
            ErrorKind::InvalidInput,
        ),
        (Error::UnknownBranch("b".into()), ErrorKind::NotFound),
        (Error::BranchExists("b".into()), ErrorKind::AlreadyExists),
        (Error::MergeConflicts(2), ErrorKind::Conflict),
        (Error::Store(corrupt_store()), ErrorKind::Corrupt),
        (Error::Store(StoreError::Locked { path: "p".into() }), ErrorKind::Locked),
        (
            Error::Store(StoreError::NoSpace {
                path: "p".into(),
                detail: "d".into(),
            }),
            ErrorKind::NoSpace,
        ),
        (Error::Store(StoreError::Backend("io".into())), ErrorKind::Storage),
        (Error::Graph(GraphError::Store(corrupt_store())), ErrorKind::Corrupt),
        // A damaged stored index is damage (the server called it a bad request).
        (Error::Index(IndexError::BadStoredIndex("x".into())), ErrorKind::Corrupt),
        (Error::Index(IndexError::UnreadableRow("x".into())), ErrorKind::Corrupt),
        (
            Error::Index(IndexError::DimensionMismatch {
                model: "m".into(),
                expected: 3,
                got: 2,
            }),
            ErrorKind::InvalidInput,
        ),
        (
            Error::Retrieve(RetrieveError::Source(SourceError::Corrupt("x".into()))),
            ErrorKind::Corrupt,
        ),
        (Error::Retrieve(RetrieveError::NoLane), ErrorKind::InvalidInput),
        // A repository's own failure under a retrieval keeps its kind through the seam.
        (
            Error::Retrieve(RetrieveError::Source(SourceError::Storage(SourceCause::new(
                Error::Store(StoreError::Locked { path: "p".into() }),
            )))),
            ErrorKind::Locked,
        ),
        (
            Error::Retrieve(RetrieveError::Source(SourceError::Storage(SourceCause::message("x")))),
            ErrorKind::Storage,
        ),
    ];
    for (e, kind) in cases {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
    assert_eq!(ErrorKind::Corrupt.as_str(), "corrupt");
    assert_eq!(ErrorKind::InvalidInput.to_string(), "invalid_input");
}

#[test]
fn errors_met_through_the_api_have_their_kind() {
    let repo = Repo::in_memory().unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(id("a")).with_embedding("m", vec![1.0, 0.0]))
        .unwrap();
    tx.commit("a").unwrap();

    let mut tx = repo.transaction().unwrap();
    let e = tx
        .put_node(Node::new(id("b")).with_embedding("m", vec![1.0, 0.0, 0.0]))
        .unwrap_err();
    assert!(matches!(
        e,
        Error::Validation(ValidationError::DimensionMismatch { .. })
    ));
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(repo.resolve("nope").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(
        repo.create_branch("main", None).unwrap_err().kind(),
        ErrorKind::AlreadyExists
    );

    let r = repo.retrieve().text("x").at("nope").execute().unwrap_err();
    assert_eq!(ErrorKind::of_retrieve(&r), ErrorKind::NotFound);
    let r = repo.retrieve().vector("m", &[1.0]).execute().unwrap_err();
    assert_eq!(ErrorKind::of_retrieve(&r), ErrorKind::InvalidInput);

    // A second process's open of a held repository: locked.
    let dir = tempfile::tempdir().unwrap();
    let _held = Repo::init(dir.path().join("r")).unwrap();
    let e = Repo::open(dir.path().join("r")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
}

/// A line refused by the operation it names carries that typed error as its source; a
/// line that does not parse has none.
#[test]
fn an_import_line_keeps_the_typed_error_behind_it() {
    let repo = Repo::in_memory().unwrap();
    let bad_op = "{\"delete_node\": \"ghost\"}\n";
    let mut tx = repo.transaction().unwrap();
    let e = tx.import_jsonl(bad_op.as_bytes(), &mut |_| {}).unwrap_err();
    match &e {
        Error::Import {
            line: 1,
            source: Some(inner),
            ..
        } => {
            assert!(matches!(**inner, Error::NodeNotFound { .. }), "{inner:?}");
            assert!(std::error::Error::source(&e).is_some());
        }
        other => panic!("expected an import error with a source, got {other:?}"),
    }
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = tx.import_jsonl("{not json\n".as_bytes(), &mut |_| {}).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Import {
                line: 1,
                source: None,
                ..
            }
        ),
        "{e:?}"
    );
}
