//! `Repo::init_with(.., StoreKind::Sled)` builds a new repository beside its path and
//! renames it into place, so a process killed during sled's first writes never leaves a
//! half-made database at the path (the CLI's kill test covers the kill itself).

use cairn::{Error, Node, NodeId, Repo, StoreKind};

fn side(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    dir.join(format!(".{name}.cairn-init"))
}

fn usable(path: &std::path::Path) {
    let repo = Repo::open(path).unwrap();
    let mut tx = repo.transaction().unwrap();
    tx.put_node(Node::new(NodeId::new("a").unwrap())).unwrap();
    tx.commit("first").unwrap();
    assert!(repo.fsck().unwrap().is_ok());
}

#[test]
fn sled_init_makes_the_repository_beside_its_path_and_moves_it_in() {
    let dir = tempfile::tempdir().unwrap();
    // A new path, an empty directory, a directory with a file in it (made in place).
    let new = dir.path().join("new");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let occupied = dir.path().join("occupied");
    std::fs::create_dir(&occupied).unwrap();
    std::fs::write(occupied.join("notes.txt"), "mine").unwrap();
    for path in [&new, &empty, &occupied] {
        drop(Repo::init_with(path, StoreKind::Sled).unwrap());
        usable(path);
    }
    assert_eq!(std::fs::read_to_string(occupied.join("notes.txt")).unwrap(), "mine");
    for name in ["new", "empty", "occupied"] {
        assert!(!side(dir.path(), name).exists(), "{name}: no side directory is left");
    }
    // A repository is never replaced.
    assert!(matches!(
        Repo::init_with(&new, StoreKind::Sled),
        Err(Error::AlreadyExists { .. })
    ));
    assert_eq!(Repo::open(&new).unwrap().log(None, None).unwrap().len(), 1);
}

#[test]
fn an_interrupted_sled_init_leaves_only_a_side_directory_that_the_next_init_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repo");
    // What a kill during sled's first writes leaves: a partial database in the side
    // directory (here: sled's config and a torn data file), and nothing at the path.
    let left = side(dir.path(), "repo");
    std::fs::create_dir(&left).unwrap();
    std::fs::write(left.join("conf"), b"segment_size: 524288\n").unwrap();
    std::fs::write(left.join("db"), [0xde, 0xad, 0xbe]).unwrap();
    assert!(matches!(Repo::open(&path), Err(Error::NotARepo { .. })));
    drop(Repo::init_with(&path, StoreKind::Sled).unwrap());
    usable(&path);
    assert!(!left.exists());
}

/// Two `init`s racing on one new path: exactly one succeeds; the other finds the first's
/// repository (or its lock), never initialises it a second time (issue 22, item 5).
#[test]
fn of_two_racing_inits_exactly_one_succeeds() {
    for round in 0..24 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repo");
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<bool> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        // Dropped at once: the lock is released, as when a CLI `init` exits.
                        Repo::init_with(&path, StoreKind::Segment).is_ok()
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert_eq!(
            results.iter().filter(|&&ok| ok).count(),
            1,
            "round {round}: {results:?}"
        );
        usable(&path);
    }
}
