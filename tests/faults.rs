//! Injected faults at the `Store` seam, on any machine (no mount needed): a store that runs
//! out of space after a byte budget, one whose derived entries read as damaged, and one
//! whose object reads fail (an I/O error is reported as itself, never as a missing object). The
//! repository on top must fail the write that did not fit with `NoSpace`, change nothing,
//! keep answering reads, and work again once space is back; damaged derived data (index
//! chunks, the time index) must be rebuilt from the objects, never fail a read.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use cairn::{Error, Hash, Node, NodeId, Repo};
use cairn_store::{CasOutcome, DerivedEntry, MemoryStore, Store, StoreError, StoreStats};

/// A store over [`MemoryStore`] with faults switched on and off by the test.
struct FaultStore {
    inner: MemoryStore,
    /// Bytes that may still be written (objects, derived, refs); below zero: no space.
    budget: AtomicI64,
    /// Every ref move fails as on a full disk (the objects before it fit).
    refuse_refs: std::sync::atomic::AtomicBool,
    /// Derived entries that read as damaged until they are written again or deleted.
    damaged: parking_lot::Mutex<BTreeSet<Vec<u8>>>,
    /// Objects whose reads fail as a backend's I/O failure does.
    unreadable: parking_lot::Mutex<BTreeSet<Hash>>,
}

impl FaultStore {
    fn new() -> FaultStore {
        FaultStore {
            inner: MemoryStore::new(),
            budget: AtomicI64::new(i64::MAX),
            refuse_refs: std::sync::atomic::AtomicBool::new(false),
            damaged: parking_lot::Mutex::new(BTreeSet::new()),
            unreadable: parking_lot::Mutex::new(BTreeSet::new()),
        }
    }

    /// Takes `bytes` from the budget, or fails as a full disk does, writing nothing.
    fn spend(&self, bytes: usize, what: &str) -> Result<(), StoreError> {
        let left = self.budget.load(Ordering::SeqCst);
        if left < bytes as i64 {
            return Err(StoreError::NoSpace {
                path: "(fault store)".into(),
                detail: format!("{what}: No space left on device (os error 28)"),
            });
        }
        self.budget.fetch_sub(bytes as i64, Ordering::SeqCst);
        Ok(())
    }

    fn damaged(&self, key: &[u8]) -> bool {
        self.damaged.lock().contains(key)
    }

    /// Damages every stored entry of the time index (`tl/`) and every chunk part (`ck/`).
    fn damage_derived(&self) {
        let mut damaged = self.damaged.lock();
        for prefix in [&b"tl/"[..], b"ck/"] {
            damaged.extend(self.inner.derived_keys(prefix).unwrap());
        }
        assert!(!damaged.is_empty());
    }
}

impl Store for FaultStore {
    fn get(&self, hash: &Hash) -> Result<Option<Arc<[u8]>>, StoreError> {
        if self.unreadable.lock().contains(hash) {
            return Err(StoreError::Backend("injected read failure".into()));
        }
        self.inner.get(hash)
    }
    fn contains(&self, hash: &Hash) -> Result<bool, StoreError> {
        self.inner.contains(hash)
    }
    fn put_batch(&self, objects: &[(Hash, Vec<u8>)]) -> Result<(), StoreError> {
        self.spend(objects.iter().map(|(_, v)| v.len() + 32).sum(), "writing objects")?;
        self.inner.put_batch(objects)
    }
    fn object_hashes(&self) -> Result<Vec<Hash>, StoreError> {
        self.inner.object_hashes()
    }
    fn delete_objects(&self, hashes: &[Hash]) -> Result<(), StoreError> {
        self.inner.delete_objects(hashes)
    }
    fn get_ref(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get_ref(name)
    }
    fn cas_ref(&self, name: &str, expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<CasOutcome, StoreError> {
        if self.refuse_refs.load(Ordering::SeqCst) {
            return Err(StoreError::NoSpace {
                path: "(fault store)".into(),
                detail: format!("moving ref `{name}`: No space left on device (os error 28)"),
            });
        }
        // Removing a ref needs no room (a file unlinked), as on a real full disk.
        if let Some(new) = new {
            self.spend(name.len() + new.len(), "moving a ref")?;
        }
        self.inner.cas_ref(name, expected, new)
    }
    fn list_refs(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.inner.list_refs(prefix)
    }
    fn get_derived(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if self.damaged(key) {
            return Err(StoreError::Corrupt {
                space: "derived",
                key: String::from_utf8_lossy(key).into_owned(),
                detail: "crc32 mismatch (injected)".into(),
            });
        }
        self.inner.get_derived(key)
    }
    fn put_derived(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), StoreError> {
        self.spend(
            entries.iter().map(|(k, v)| k.len() + v.len()).sum(),
            "writing derived data",
        )?;
        // A rewritten entry is sound again.
        let mut damaged = self.damaged.lock();
        for (k, _) in entries {
            damaged.remove(k);
        }
        self.inner.put_derived(entries)
    }
    fn delete_derived(&self, keys: &[Vec<u8>]) -> Result<(), StoreError> {
        let mut damaged = self.damaged.lock();
        for k in keys {
            damaged.remove(k);
        }
        self.inner.delete_derived(keys)
    }
    fn scan_derived(&self, prefix: &[u8]) -> Result<Vec<DerivedEntry>, StoreError> {
        let entries = self.inner.scan_derived(prefix)?;
        if let Some((k, _)) = entries.iter().find(|(k, _)| self.damaged(k)) {
            return Err(StoreError::Corrupt {
                space: "derived",
                key: String::from_utf8_lossy(k).into_owned(),
                detail: "crc32 mismatch (injected)".into(),
            });
        }
        Ok(entries)
    }
    fn derived_keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>, StoreError> {
        self.inner.derived_keys(prefix)
    }
    fn last_derived_at_or_before(&self, prefix: &[u8], upper: &[u8]) -> Result<Option<DerivedEntry>, StoreError> {
        self.inner.last_derived_at_or_before(prefix, upper)
    }
    fn flush(&self) -> Result<(), StoreError> {
        self.inner.flush()
    }
    fn flush_objects(&self) -> Result<(), StoreError> {
        self.inner.flush_objects()
    }
    fn append_ref_log(&self, record: &[u8]) -> Result<(), StoreError> {
        // A full disk can reach the ref log alone, after a move succeeded.
        self.spend(record.len(), "appending to the ref log")?;
        self.inner.append_ref_log(record)
    }
    fn ref_log(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        self.inner.ref_log()
    }
    fn retain_ref_log(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<(), StoreError> {
        self.inner.retain_ref_log(keep)
    }
    fn stats(&self) -> Result<StoreStats, StoreError> {
        self.inner.stats()
    }
    fn is_persistent(&self) -> bool {
        // Derived data is stored (as by an on-disk store), so damage to it can be injected.
        true
    }
}

fn doc(i: usize, words: &str) -> Node {
    Node::new(NodeId::new(format!("doc-{i:04}")).unwrap())
        .with_label("Doc")
        .with_text(format!("{words} {i}"))
        .with_embedding("m", vec![(i % 7) as f32 + 1.0, (i % 5) as f32, 1.0])
}

fn retrieve(repo: &Repo, at: Option<&str>) -> String {
    let mut r = repo
        .retrieve()
        .text("stall flow")
        .vector("m", &[1.0, 2.0, 1.0])
        .limit(10)
        .exact();
    if let Some(at) = at {
        r = r.at(at);
    }
    serde_json::to_string(&r.execute().unwrap().items).unwrap()
}

/// A repository holding a first commit of 200 nodes, at time 1.
fn first_commit() -> (Arc<FaultStore>, Repo) {
    let store = Arc::new(FaultStore::new());
    let repo = Repo::with_store(Arc::clone(&store) as Arc<dyn Store>).unwrap();
    let mut tx = repo.transaction().unwrap();
    for i in 0..200 {
        tx.put_node(doc(i, "wing stall flow")).unwrap();
    }
    tx.commit_at("first", 1).unwrap();
    (store, repo)
}

/// The second commit: 200 more nodes, at time 2.
fn second_commit(repo: &Repo) -> cairn::Result<cairn::CommitId> {
    let mut tx = repo.transaction()?;
    for i in 200..400 {
        tx.put_node(doc(i, "boundary layer"))?;
    }
    tx.commit_at("second", 2)
}

#[test]
fn a_full_disk_fails_the_write_changes_nothing_and_passes() {
    // What the second commit writes.
    let needed = {
        let (store, repo) = first_commit();
        let before = store.budget.load(Ordering::SeqCst);
        second_commit(&repo).unwrap();
        before - store.budget.load(Ordering::SeqCst)
    };
    // Room for part of it only, at a spread of budgets, and room for its objects but not
    // the ref: the write fails with NoSpace and leaves the branch, the reads and fsck as
    // they were; once space is back it goes through, with nothing to repair first.
    let cases = [0i64, 100, needed / 4, needed / 2, needed * 3 / 4, -1];
    for budget in cases {
        let (store, repo) = first_commit();
        let first = repo.head().unwrap();
        let answer = retrieve(&repo, None);
        if budget < 0 {
            store.refuse_refs.store(true, Ordering::SeqCst);
        } else {
            store.budget.store(budget, Ordering::SeqCst);
        }
        match second_commit(&repo) {
            Err(Error::Store(e)) => {
                assert!(matches!(e, StoreError::NoSpace { .. }), "budget {budget}: {e}");
                assert!(e.to_string().contains("No space left"), "{e}");
            }
            other => panic!("budget {budget} of {needed}: {other:?}"),
        }
        eprintln!("budget {budget} of {needed}: refused");
        assert_eq!(repo.head().unwrap(), first, "budget {budget}");
        assert_eq!(retrieve(&repo, None), answer, "budget {budget}");
        assert!(repo.fsck().unwrap().is_ok(), "budget {budget}");

        store.budget.store(i64::MAX, Ordering::SeqCst);
        store.refuse_refs.store(false, Ordering::SeqCst);
        let second = second_commit(&repo).unwrap();
        assert_eq!(repo.head().unwrap(), Some(second));
        assert_eq!(repo.nodes_at(&second, None).unwrap().len(), 400);
        let report = repo.fsck().unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
    }
    // The last bytes a commit writes are its time-index entry (derived data) and its
    // reflog record, both after the branch moved: without room for them the commit
    // stands, "as of" rebuilds the entry from the commits, and the reflog lacks the move.
    let (store, repo) = first_commit();
    let reflog_before = repo.reflog("main").unwrap().len();
    store.budget.store(needed - 1, Ordering::SeqCst);
    let second = second_commit(&repo).unwrap();
    assert_eq!(
        repo.reflog("main").unwrap().len(),
        reflog_before,
        "the record did not fit"
    );
    store.budget.store(i64::MAX, Ordering::SeqCst);
    assert_eq!(repo.as_of("main", 1).unwrap(), repo.resolve("HEAD~1").ok());
    assert_eq!(repo.as_of("main", 2).unwrap(), Some(second));
    assert!(repo.fsck().unwrap().is_ok());
    // With room, the next move is recorded as usual.
    let mut tx = repo.transaction().unwrap();
    tx.put_node(doc(9_999, "after the disk was freed")).unwrap();
    let third = tx.commit_at("third", 3).unwrap();
    assert_eq!(repo.reflog("main").unwrap()[0].new, Some(third));
}

#[test]
fn an_object_read_that_fails_fails_the_index_build_with_that_error_not_as_missing() {
    let (store, repo) = first_commit();
    drop(repo);
    // A node in the middle of a chunk: the build reads its chunk's nodes in batches, and
    // the nodes after it in its batch are never read.
    let node = doc(100, "wing stall flow");
    let hash = cairn_core::codec::hash_object(&cairn_core::codec::encode_node(&node));
    store.unreadable.lock().insert(hash);
    let fresh = Repo::with_store(Arc::clone(&store) as Arc<dyn Store>).unwrap();
    let err = fresh.retrieve().text("wing").limit(5).execute().unwrap_err();
    let message = err.to_string();
    assert!(message.contains("injected read failure"), "{message}");
    assert!(!message.contains("not found"), "{message}");
    // Readable again: the same repository answers.
    store.unreadable.lock().clear();
    assert!(!fresh
        .retrieve()
        .text("wing")
        .limit(5)
        .execute()
        .unwrap()
        .items
        .is_empty());
}

#[test]
fn damaged_derived_data_is_rebuilt_for_queries_and_as_of() {
    let store = Arc::new(FaultStore::new());
    let repo = Repo::with_store(Arc::clone(&store) as Arc<dyn Store>).unwrap();
    let mut times = Vec::new();
    for c in 0..6 {
        let mut tx = repo.transaction().unwrap();
        for i in c * 50..(c + 1) * 50 {
            tx.put_node(doc(i, "wing stall flow")).unwrap();
        }
        let t = 1_700_000_000_000 + c as i64 * 60_000;
        tx.commit_at(&format!("c{c}"), t).unwrap();
        times.push(t);
    }
    let head = retrieve(&repo, None);
    let old = retrieve(&repo, Some("HEAD~3"));
    let as_of: Vec<_> = times.iter().map(|t| repo.as_of("main", *t).unwrap()).collect();

    // Every stored time-index entry and chunk part now reads as damaged, in a fresh handle
    // (no in-memory cache).
    store.damage_derived();
    let fresh = Repo::with_store(Arc::clone(&store) as Arc<dyn Store>).unwrap();
    for (t, want) in times.iter().zip(&as_of) {
        assert_eq!(fresh.as_of("main", *t).unwrap(), *want, "as of {t}");
        assert_eq!(fresh.as_of("main", t + 1).unwrap(), *want, "as of {t} + 1 ms");
    }
    assert_eq!(fresh.as_of("main", times[0] - 1).unwrap(), None);
    assert_eq!(retrieve(&fresh, None), head);
    assert_eq!(retrieve(&fresh, Some("HEAD~3")), old);
    let report = fresh.fsck().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn an_index_build_that_cannot_store_says_so_and_queries_still_answer() {
    let (store, repo) = first_commit();
    let answer = {
        let (_, twin) = first_commit();
        retrieve(&twin, None)
    };
    store.budget.store(1_000, Ordering::SeqCst);
    match repo.build_indexes("HEAD") {
        Err(Error::Store(e)) => assert!(matches!(e, StoreError::NoSpace { .. }), "{e}"),
        other => panic!("{other:?}"),
    }
    // Built in memory all the same: the query answers, from this process's cache.
    assert_eq!(retrieve(&repo, None), answer);
    store.budget.store(i64::MAX, Ordering::SeqCst);
    let fresh = Repo::with_store(Arc::clone(&store) as Arc<dyn Store>).unwrap();
    let report = fresh.build_indexes("HEAD").unwrap();
    assert!(report.stored_values > 0, "{report:?}");
    assert_eq!(retrieve(&fresh, None), answer);
}

/// A commit that brings a new dense model and fails on a full disk after registering its
/// dimension (the branch ref did not fit) takes the registration back: the model stays
/// free, and a vector of another length commits once space is back (issue 22, item 2).
#[test]
fn a_refused_commit_does_not_keep_its_new_models_dimension() {
    let fresh = || {
        let store = Arc::new(FaultStore::new());
        let repo = Repo::with_store(Arc::clone(&store) as Arc<dyn Store>).unwrap();
        let mut tx = repo.transaction().unwrap();
        tx.put_node(doc(0, "wing")).unwrap();
        tx.commit_at("first", 1).unwrap();
        (store, repo)
    };
    let commit_n = |repo: &Repo, dim: usize| {
        let mut tx = repo.transaction()?;
        tx.put_node(doc(1, "flow").with_embedding("n", vec![1.0; dim]))?;
        tx.commit_at("new model", 2)
    };
    let needed = {
        let (store, repo) = fresh();
        let before = store.budget.load(Ordering::SeqCst);
        commit_n(&repo, 3).unwrap();
        before - store.budget.load(Ordering::SeqCst)
    };
    let mut refused = 0;
    for budget in (needed - 600).max(0)..needed {
        let (store, repo) = fresh();
        store.budget.store(budget, Ordering::SeqCst);
        if commit_n(&repo, 3).is_ok() {
            continue;
        }
        refused += 1;
        assert_eq!(repo.dense_dim("n").unwrap(), None, "budget {budget} of {needed}");
        store.budget.store(i64::MAX, Ordering::SeqCst);
        let report = repo.fsck().unwrap();
        assert!(report.is_ok(), "budget {budget}: {:?}", report.problems);
        commit_n(&repo, 2).unwrap();
        assert_eq!(repo.dense_dim("n").unwrap(), Some(2));
    }
    assert!(refused > 10, "only {refused} budgets refused the commit");
}
