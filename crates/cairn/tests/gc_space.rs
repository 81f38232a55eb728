//! `gc` gives disk space back at every size (`storage-format.md` §6.10): a repository
//! within one segment ends near its live size, and a kill at any step of gc's deletes
//! and compactions leaves `fsck` ok, every live object readable and no deleted one back,
//! in the object log and in the derived log.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use cairn::{GcOptions, Node, NodeId, Repo};
use cairn_core::Hash;
use cairn_store::{FileChange, FileStep, SegmentStore, Store};
use cairn_testkit::{copy_tree, files, text, tree_bytes, unit_vector, Rng};

/// A record's bytes beside its key and value: header (15) and value crc (4), §6.7.
const RECORD_OVERHEAD: u64 = 15 + 4;

fn node(rng: &mut Rng, name: &str) -> Node {
    Node::new(NodeId::new(name).unwrap())
        .with_label("Note")
        .with_text(text(rng, 20))
        .with_embedding("tiny", unit_vector(rng, 8))
}

/// Commits `n` nodes named `prefix-i` on `branch`, in one commit.
fn import(repo: &Repo, branch: &str, prefix: &str, n: usize) {
    let mut rng = Rng(0x9c + n as u64);
    let mut tx = repo.transaction_on(branch).unwrap();
    for i in 0..n {
        tx.put_node(node(&mut rng, &format!("{prefix}-{i:05}"))).unwrap();
    }
    tx.commit(&format!("import {n}")).unwrap();
}

/// The issue's steps up to gc: a small indexed `main`, then a big import on a new branch,
/// indexed, and the branch deleted.
fn small_then_big_branch_deleted(repo: &Repo, small: usize, big: usize) {
    import(repo, "main", "small", small);
    repo.build_indexes("main").unwrap();
    big_branch_deleted(repo, big);
}

fn big_branch_deleted(repo: &Repo, big: usize) {
    repo.create_branch("big", None).unwrap();
    import(repo, "big", "big", big);
    repo.build_indexes("big").unwrap();
    repo.delete_branch("big").unwrap();
}

fn main_nodes(repo: &Repo) -> Vec<Node> {
    let head = repo.branch_head("main").unwrap().unwrap();
    repo.nodes_at(&head, None).unwrap()
}

/// Bytes of a log's segment files under the repository `dir` (`objects` or `derived`).
fn segment_bytes(dir: &Path, log: &str) -> u64 {
    files(&dir.join(log))
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .map(|p| std::fs::metadata(dir.join(log).join(p)).unwrap().len())
        .sum()
}

/// What a store holds: every object's hash, and every derived entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Contents {
    objects: BTreeSet<Hash>,
    derived: BTreeMap<Vec<u8>, Vec<u8>>,
}

fn contents(store: &dyn Store) -> Contents {
    Contents {
        objects: store.object_hashes().unwrap().into_iter().collect(),
        derived: store.scan_derived(b"").unwrap().into_iter().collect(),
    }
}

/// Live record bytes of each log: (objects, derived).
fn live_bytes(store: &dyn Store) -> (u64, u64) {
    let objects = store
        .object_hashes()
        .unwrap()
        .iter()
        .map(|h| RECORD_OVERHEAD + 32 + store.get(h).unwrap().unwrap().len() as u64)
        .sum();
    let derived = store
        .scan_derived(b"")
        .unwrap()
        .iter()
        .map(|(k, v)| RECORD_OVERHEAD + (k.len() + v.len()) as u64)
        .sum();
    (objects, derived)
}

#[test]
fn gc_after_a_big_branch_is_deleted_ends_near_the_live_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r");
    let repo = Repo::init(&path).unwrap();
    import(&repo, "main", "small", 80);
    repo.build_indexes("main").unwrap();
    let want = main_nodes(&repo);
    drop(repo);
    let small = tree_bytes(&path);

    let repo = Repo::open(&path).unwrap();
    big_branch_deleted(&repo, 4000);
    let full = repo.store().disk_bytes().unwrap().unwrap();
    let report = repo.gc_with(&GcOptions::now()).unwrap();
    assert!(report.objects_removed > 4000, "{report:?}");
    assert!(report.derived_removed > 0, "{report:?}");
    assert!(report.disk_bytes_before >= full, "{report:?}");
    assert_eq!(report.disk_bytes_after, repo.store().disk_bytes().unwrap().unwrap());
    assert_eq!(
        report.bytes_returned,
        report.disk_bytes_before - report.disk_bytes_after
    );
    // Each log fits in one segment: it ends at most twice its live bytes (the bound of
    // §6.10), here exactly its live bytes, as gc found each mostly dead.
    let (live_objects, live_derived) = live_bytes(repo.store().as_ref());
    assert_eq!(segment_bytes(&path, "objects"), live_objects);
    assert_eq!(segment_bytes(&path, "derived"), live_derived);
    assert!(repo.fsck().unwrap().is_ok());
    assert_eq!(main_nodes(&repo), want);
    // Closed (hints written), the directory is about what it was before the branch.
    drop(repo);
    let after = tree_bytes(&path);
    eprintln!(
        "small repo {small} bytes; with the branch {full}; after gc {} (closed {after}); returned {}",
        report.disk_bytes_after, report.bytes_returned
    );
    assert!(
        after <= small + small / 4,
        "{small} bytes before the branch, {after} after gc"
    );
    assert!(report.bytes_returned > full / 2, "{report:?}");
    let repo = Repo::open(&path).unwrap();
    assert_eq!(main_nodes(&repo), want);
    // Nothing left to give back.
    let again = repo.gc_with(&GcOptions::now()).unwrap();
    assert_eq!((again.objects_removed, again.bytes_returned), (0, 0), "{again:?}");
}

/// The files and contents at one step of gc.
struct Stop {
    step: FileStep,
    /// The changed file's path in the repository's directory (and in the copy).
    rel: std::path::PathBuf,
    copy: tempfile::TempDir,
    contents: Contents,
}

/// Runs gc on the issue's scenario (scaled down) in a store of `segment`-byte segments,
/// copying the files at every step.
fn stops_during_gc(segment: u64) -> (Vec<Node>, Vec<Stop>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SegmentStore::open_with_segment_bytes(dir.path(), segment).unwrap());
    let repo = Repo::with_store(store.clone()).unwrap();
    // Enough nodes on main that its index values share segments with the big branch's
    // (index parts hold no vectors nor texts: 40 nodes' fit in one 64 KiB segment alone).
    small_then_big_branch_deleted(&repo, 120, 600);
    let want = main_nodes(&repo);
    let stops: Arc<Mutex<Vec<Stop>>> = Arc::default();
    {
        let (weak, stops, root) = (Arc::downgrade(&store), Arc::clone(&stops), dir.path().to_path_buf());
        store.on_file_step(Some(Arc::new(move |step: &FileStep| {
            let store = weak.upgrade().expect("open");
            let copy = tempfile::tempdir().unwrap();
            copy_tree(&root, copy.path());
            stops.lock().unwrap().push(Stop {
                step: step.clone(),
                rel: step.path.strip_prefix(&root).expect("in the store").to_path_buf(),
                copy,
                contents: contents(store.as_ref()),
            });
        })));
    }
    repo.gc_with(&GcOptions::now()).unwrap();
    store.on_file_step(None);
    let stops = std::mem::take(&mut *stops.lock().unwrap());
    (want, stops)
}

/// Opens a copy: fsck passes, `main` reads the same, and (unless `torn`) it holds
/// exactly `want`; then gc again finishes the work, and all of that still holds.
fn check_copy(dir: &Path, want: Option<&Contents>, main: &[Node], what: &str) {
    let repo = Repo::open(dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    let fsck = repo.fsck().unwrap();
    assert!(fsck.is_ok(), "{what}: {:?}", fsck.problems);
    assert_eq!(main_nodes(&repo), main, "{what}: main");
    if let Some(want) = want {
        assert_eq!(&contents(repo.store().as_ref()), want, "{what}: contents");
    }
    repo.gc_with(&GcOptions::now())
        .unwrap_or_else(|e| panic!("{what}: gc again: {e}"));
    let fsck = repo.fsck().unwrap();
    assert!(fsck.is_ok(), "{what}: after gc again: {:?}", fsck.problems);
    assert_eq!(main_nodes(&repo), main, "{what}: main after gc again");
}

#[test]
fn a_kill_at_any_step_of_gc_leaves_fsck_ok_and_every_live_object() {
    // One segment per log (the issue's case), then many small ones.
    for segment in [64 << 20, 64 << 10] {
        let (main, stops) = stops_during_gc(segment);
        // gc sealed and compacted both logs' newest segments.
        for space in ["object", "derived"] {
            let removed = stops
                .iter()
                .filter(|s| s.step.space == space && s.step.change == FileChange::Removed)
                .count();
            let created = stops
                .iter()
                .filter(|s| s.step.space == space && s.step.change == FileChange::Created)
                .count();
            assert!(
                removed > 0 && created > 0,
                "{segment}: {space}: {removed} removed, {created} created"
            );
        }
        for (i, stop) in stops.iter().enumerate() {
            let what = format!("{segment}-byte segments, kill {i} after {:?}", stop.step);
            if let FileChange::Appended { from, to } = stop.step.change {
                let torn = tempfile::tempdir().unwrap();
                copy_tree(stop.copy.path(), torn.path());
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(torn.path().join(&stop.rel))
                    .unwrap();
                file.set_len(from + (to - from) / 2).unwrap();
                check_copy(torn.path(), None, &main, &format!("{what}, torn"));
            }
            check_copy(stop.copy.path(), Some(&stop.contents), &main, &what);
        }
        eprintln!("{segment}-byte segments: {} kill points", stops.len());
    }
}
