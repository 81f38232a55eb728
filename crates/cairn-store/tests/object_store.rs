//! The object-store backend: its contract on `object_store`'s in-memory store (always),
//! and against moto's S3 server on loopback (skipped, with a message, where moto cannot
//! start): conditional writes honoured, racing writers, damage named.

use std::sync::Arc;

use cairn_core::Hash;
use cairn_store::object_store::memory::InMemory;
use cairn_store::object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use cairn_store::{CasOutcome, ObjectStoreBackend, ObjectStoreOptions, Store, StoreError};

fn in_memory(store: &Arc<InMemory>) -> ObjectStoreBackend {
    ObjectStoreBackend::with_object_store(
        Arc::clone(store) as Arc<dyn ObjectStore>,
        "repo",
        "memory://test",
        ObjectStoreOptions::default(),
    )
    .unwrap()
}

fn on_moto(tag: &str) -> Option<(String, ObjectStoreBackend)> {
    let moto = cairn_testkit::moto()?;
    let url = moto.new_bucket(tag);
    let store = ObjectStoreBackend::open(&format!("{url}/repo"), ObjectStoreOptions::default()).unwrap();
    Some((url, store))
}

/// The contract every backend keeps, on `store`.
fn keeps_the_contract(store: &dyn Store) {
    let objects: Vec<(Hash, Vec<u8>)> = (0..50u32)
        .map(|i| {
            let b = format!("object {i}").into_bytes();
            (Hash::of(&b), b)
        })
        .collect();
    store.put_batch(&objects).unwrap();
    store.put_batch(&objects[..3]).unwrap(); // idempotent
    for (h, b) in &objects {
        assert_eq!(store.get(h).unwrap().as_deref(), Some(&b[..]));
        assert!(store.contains(h).unwrap());
    }
    let absent = Hash::of(b"absent");
    assert_eq!(store.get(&absent).unwrap(), None);
    assert!(!store.contains(&absent).unwrap());
    let mut hashes: Vec<Hash> = objects.iter().map(|(h, _)| *h).collect();
    hashes.sort();
    assert_eq!(store.object_hashes().unwrap(), hashes);
    assert_eq!(store.stats().unwrap().objects, 50);
    store.delete_objects(&hashes[..10]).unwrap();
    assert_eq!(store.object_hashes().unwrap(), hashes[10..]);
    assert_eq!(store.get(&hashes[0]).unwrap(), None);

    // Refs: create, conflict with the current value, move, delete, create again.
    assert_eq!(
        store.cas_ref("refs/heads/main", None, Some(b"a")).unwrap(),
        CasOutcome::Swapped
    );
    assert_eq!(
        store.cas_ref("refs/heads/main", None, Some(b"b")).unwrap(),
        CasOutcome::Conflict {
            current: Some(b"a".to_vec())
        }
    );
    assert_eq!(
        store.cas_ref("refs/heads/main", Some(b"a"), Some(b"b")).unwrap(),
        CasOutcome::Swapped
    );
    assert_eq!(store.get_ref("refs/heads/main").unwrap(), Some(b"b".to_vec()));
    assert_eq!(
        store.cas_ref("refs/heads/x", None, Some(b"")).unwrap(),
        CasOutcome::Swapped
    );
    assert_eq!(
        store.get_ref("refs/heads/x").unwrap(),
        Some(Vec::new()),
        "an empty value is a value"
    );
    assert_eq!(
        store.cas_ref("HEAD", None, Some(b"ref: refs/heads/main")).unwrap(),
        CasOutcome::Swapped
    );
    assert_eq!(
        store.list_refs("refs/").unwrap(),
        vec![
            ("refs/heads/main".to_string(), b"b".to_vec()),
            ("refs/heads/x".to_string(), Vec::new())
        ]
    );
    assert_eq!(
        store.cas_ref("refs/heads/x", Some(b""), None).unwrap(),
        CasOutcome::Swapped
    );
    assert_eq!(store.get_ref("refs/heads/x").unwrap(), None);
    assert_eq!(store.list_refs("refs/heads/").unwrap().len(), 1);
    assert_eq!(
        store.cas_ref("refs/heads/x", Some(b""), None).unwrap(),
        CasOutcome::Conflict { current: None }
    );
    assert_eq!(
        store.cas_ref("refs/heads/x", None, Some(b"again")).unwrap(),
        CasOutcome::Swapped
    );
    assert!(store.cas_ref("", None, Some(b"x")).is_err(), "an empty name has no key");

    // The ref log: appends in order, a rewrite keeps what it is told to.
    for i in 0..5u8 {
        store.append_ref_log(&[i]).unwrap();
    }
    assert!(store.append_ref_log(&[]).is_err());
    assert_eq!(store.ref_log().unwrap(), (0..5u8).map(|i| vec![i]).collect::<Vec<_>>());
    store.retain_ref_log(&|r| r[0] % 2 == 0).unwrap();
    store.append_ref_log(&[9]).unwrap();
    assert_eq!(store.ref_log().unwrap(), vec![vec![0], vec![2], vec![4], vec![9]]);

    // Derived data: the local cache.
    store
        .put_derived(&[(b"tl/a".to_vec(), b"1".to_vec()), (b"tl/b".to_vec(), b"2".to_vec())])
        .unwrap();
    assert_eq!(store.get_derived(b"tl/a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(store.scan_derived(b"tl/").unwrap().len(), 2);
    assert_eq!(
        store.last_derived_at_or_before(b"tl/", b"tl/az").unwrap(),
        Some((b"tl/a".to_vec(), b"1".to_vec()))
    );
    store.delete_derived(&[b"tl/a".to_vec()]).unwrap();
    assert_eq!(store.derived_keys(b"tl/").unwrap(), vec![b"tl/b".to_vec()]);
    store.flush().unwrap();
}

#[test]
fn keeps_the_store_contract_in_memory() {
    let mem = Arc::new(InMemory::new());
    keeps_the_contract(&in_memory(&mem));
}

#[test]
fn keeps_the_store_contract_on_moto() {
    let Some((_, store)) = on_moto("contract") else { return };
    keeps_the_contract(&store);
}

/// Checked first: the backend's compare-and-swap relies on the server refusing a second
/// `If-None-Match: *` create and a stale `If-Match` update.
#[test]
fn moto_honours_conditional_writes() {
    let Some(moto) = cairn_testkit::moto() else { return };
    let url = moto.new_bucket("conditional");
    let (s3, rt) = raw_bucket(&url);
    rt.block_on(async {
        let path = "k".into();
        let create = || PutOptions::from(PutMode::Create);
        let first = s3
            .put_opts(&path, PutPayload::from_static(b"1"), create())
            .await
            .unwrap();
        let second = s3.put_opts(&path, PutPayload::from_static(b"2"), create()).await;
        assert!(
            matches!(second, Err(cairn_store::object_store::Error::AlreadyExists { .. })),
            "{second:?}"
        );
        let v1 = UpdateVersion::from(first);
        let update = |v: &UpdateVersion| PutOptions::from(PutMode::Update(v.clone()));
        s3.put_opts(&path, PutPayload::from_static(b"3"), update(&v1))
            .await
            .unwrap();
        let stale = s3.put_opts(&path, PutPayload::from_static(b"4"), update(&v1)).await;
        assert!(
            matches!(stale, Err(cairn_store::object_store::Error::Precondition { .. })),
            "{stale:?}"
        );
        let body = s3.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(&body[..], b"3");
    });
}

/// Two backends on one ref, as two machines: each swap lands exactly once, every loser is
/// told the value that beat it.
fn cas_races(a: &ObjectStoreBackend, b: &ObjectStoreBackend, rounds: usize) {
    let counter = |store: &ObjectStoreBackend| -> (usize, usize) {
        let (mut won, mut lost) = (0, 0);
        while won < rounds {
            let cur = store.get_ref("refs/heads/n").unwrap();
            let n = cur.as_deref().map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
            match store
                .cas_ref("refs/heads/n", cur.as_deref(), Some(&(n + 1).to_le_bytes()))
                .unwrap()
            {
                CasOutcome::Swapped => won += 1,
                CasOutcome::Conflict { current } => {
                    assert_ne!(current, cur, "a conflict reports the value that beat it");
                    lost += 1
                }
            }
        }
        (won, lost)
    };
    let ((wa, la), (wb, lb)) = std::thread::scope(|s| {
        let ta = s.spawn(|| counter(a));
        let tb = s.spawn(|| counter(b));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    let end = a.get_ref("refs/heads/n").unwrap().unwrap();
    assert_eq!(
        u64::from_le_bytes(end.try_into().unwrap()) as usize,
        wa + wb,
        "no swap lost"
    );
    eprintln!("cas race: {wa}+{wb} swaps, {la}+{lb} conflicts");
}

#[test]
fn racing_swaps_in_memory_each_land_once() {
    let mem = Arc::new(InMemory::new());
    cas_races(&in_memory(&mem), &in_memory(&mem), 200);
}

#[test]
fn racing_swaps_on_moto_each_land_once() {
    let Some((url, a)) = on_moto("race") else { return };
    let b = ObjectStoreBackend::open(&format!("{url}/repo"), ObjectStoreOptions::default()).unwrap();
    cas_races(&a, &b, 25);
}

#[test]
fn concurrent_ref_log_appends_all_land() {
    let mem = Arc::new(InMemory::new());
    let (a, b) = (in_memory(&mem), in_memory(&mem));
    std::thread::scope(|s| {
        s.spawn(|| (0..50u8).for_each(|i| a.append_ref_log(&[0, i]).unwrap()));
        s.spawn(|| (0..50u8).for_each(|i| b.append_ref_log(&[1, i]).unwrap()));
    });
    let log = a.ref_log().unwrap();
    assert_eq!(log.len(), 100);
    for w in 0..2u8 {
        let mine: Vec<u8> = log.iter().filter(|r| r[0] == w).map(|r| r[1]).collect();
        assert_eq!(mine, (0..50).collect::<Vec<_>>(), "each writer's records in its order");
    }
}

/// A client of the bucket at `bucket_url` that bypasses the backend, and a runtime to
/// drive it: the tests' own view of what the bucket holds.
fn raw_bucket(bucket_url: &str) -> (cairn_store::object_store::aws::AmazonS3, tokio::runtime::Runtime) {
    let s3 = cairn_store::object_store::aws::AmazonS3Builder::from_env()
        .with_url(bucket_url)
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (s3, rt)
}

/// Replaces `key` in the bucket at `bucket_url` with `bytes`, unconditionally: damage.
fn overwrite(bucket_url: &str, key: &str, bytes: &[u8]) {
    let (s3, rt) = raw_bucket(bucket_url);
    rt.block_on(s3.put(&key.into(), PutPayload::from(bytes.to_vec())))
        .unwrap();
}

#[test]
fn a_damaged_object_is_named_never_returned() {
    let Some((url, store)) = on_moto("damage") else { return };
    let bytes = b"a node's bytes".to_vec();
    let hash = Hash::of(&bytes);
    store.put_batch(&[(hash, bytes)]).unwrap();
    overwrite(&url, &format!("repo/objects/{}", hash.to_hex()), b"a node's bytez");
    // A fresh handle: nothing cached.
    let fresh = ObjectStoreBackend::open(&format!("{url}/repo"), ObjectStoreOptions::default()).unwrap();
    match fresh.get(&hash) {
        Err(StoreError::Corrupt {
            space,
            key: named,
            detail,
        }) => {
            assert_eq!(space, "object");
            assert_eq!(named, hash.to_hex());
            assert!(detail.contains(&format!("objects/{}", hash.to_hex())), "{detail}");
        }
        other => panic!("expected a corruption error, got {other:?}"),
    }
    // A damaged ref is named too, and set aside by a listing.
    store.cas_ref("refs/heads/main", None, Some(b"x")).unwrap();
    overwrite(&url, "repo/refs/refs_2Fheads_2Fmain", b"garbage");
    assert!(matches!(
        fresh.get_ref("refs/heads/main"),
        Err(StoreError::Corrupt { space: "ref", .. })
    ));
    assert_eq!(fresh.list_refs("refs/").unwrap(), vec![]);
    assert_eq!(
        fresh.damaged_refs("refs/").unwrap(),
        vec!["refs/heads/main".to_string()]
    );
    assert!(fresh.remove_damaged_ref("refs/heads/main").unwrap());
    assert_eq!(fresh.get_ref("refs/heads/main").unwrap(), None);
}

#[test]
fn service_failures_are_typed_and_name_the_key() {
    // Nothing listens on port 1: the request fails after its (here: no) retries.
    let s3 = cairn_store::object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("nowhere")
        .with_region("us-east-1")
        .with_access_key_id("x")
        .with_secret_access_key("x")
        .with_endpoint("http://127.0.0.1:1")
        .with_allow_http(true)
        .with_retry(cairn_store::object_store::RetryConfig {
            max_retries: 0,
            ..Default::default()
        })
        .build()
        .unwrap();
    let store =
        ObjectStoreBackend::with_object_store(Arc::new(s3), "p", "s3://nowhere/p", ObjectStoreOptions::default())
            .unwrap();
    let h = Hash::of(b"x");
    match store.get(&h) {
        Err(StoreError::Service(e)) => {
            assert_eq!(e.op, "get");
            assert_eq!(e.key, format!("objects/{}", h.to_hex()));
            assert_eq!(e.location, "s3://nowhere/p");
            assert_eq!(e.status, None, "no service answered");
        }
        other => panic!("expected a service error, got {other:?}"),
    }
    assert!(matches!(
        store.cas_ref("refs/heads/main", None, Some(b"x")),
        Err(StoreError::Service(_))
    ));
}

#[test]
fn bad_locations_are_refused() {
    for url in ["/a/path", "file:///x", "s3://", "ftp://x/y"] {
        assert!(
            matches!(
                ObjectStoreBackend::open(url, ObjectStoreOptions::default()),
                Err(StoreError::BadLocation { .. })
            ),
            "{url}"
        );
    }
}

/// An in-memory store whose writes can be made to fail: before reaching it (`refuse`), or
/// after it applied them (`lose`: the response lost, as when a connection drops).
#[derive(Debug)]
struct Flaky {
    inner: InMemory,
    refuse: std::sync::atomic::AtomicBool,
    lose: std::sync::atomic::AtomicBool,
}

impl std::fmt::Display for Flaky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Flaky")
    }
}

mod flaky_impl {
    use super::Flaky;
    use cairn_store::object_store::path::Path;
    use cairn_store::object_store::{
        CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
        PutOptions, PutPayload, PutResult, Result,
    };
    use futures_util::stream::BoxStream;
    use std::sync::atomic::Ordering;

    fn failure() -> cairn_store::object_store::Error {
        cairn_store::object_store::Error::Generic {
            store: "Flaky",
            source: "connection reset".into(),
        }
    }

    #[async_trait::async_trait]
    impl ObjectStore for Flaky {
        async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
            if self.refuse.load(Ordering::SeqCst) {
                return Err(failure());
            }
            let r = self.inner.put_opts(location, payload, opts).await?;
            if self.lose.load(Ordering::SeqCst) {
                return Err(failure());
            }
            Ok(r)
        }
        async fn put_multipart_opts(
            &self,
            location: &Path,
            opts: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(location, opts).await
        }
        async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
            self.inner.get_opts(location, options).await
        }
        fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
            self.inner.delete_stream(locations)
        }
        fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.inner.list(prefix)
        }
        async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }
        async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }
}

/// A ref write whose outcome is unknown is resolved by reading the ref back: one that landed
/// is a swap (once), one that did not is an error that changed nothing; the ref log likewise.
#[test]
fn a_write_of_unknown_outcome_is_resolved_by_reading_back() {
    use std::sync::atomic::Ordering;
    let flaky = Arc::new(Flaky {
        inner: InMemory::new(),
        refuse: false.into(),
        lose: false.into(),
    });
    let store = ObjectStoreBackend::with_object_store(
        Arc::clone(&flaky) as Arc<dyn ObjectStore>,
        "repo",
        "flaky://",
        ObjectStoreOptions::default(),
    )
    .unwrap();
    store.cas_ref("refs/heads/main", None, Some(b"a")).unwrap();

    // The response is lost, the write landed: a swap.
    flaky.lose.store(true, Ordering::SeqCst);
    assert_eq!(
        store.cas_ref("refs/heads/main", Some(b"a"), Some(b"b")).unwrap(),
        CasOutcome::Swapped
    );
    assert_eq!(
        store.cas_ref("refs/heads/new", None, Some(b"n")).unwrap(),
        CasOutcome::Swapped
    );
    store.append_ref_log(b"one record").unwrap();
    flaky.lose.store(false, Ordering::SeqCst);
    assert_eq!(store.get_ref("refs/heads/main").unwrap(), Some(b"b".to_vec()));
    assert_eq!(store.get_ref("refs/heads/new").unwrap(), Some(b"n".to_vec()));
    assert_eq!(store.ref_log().unwrap(), vec![b"one record".to_vec()], "appended once");

    // The write never reached the store: a typed error, and nothing changed.
    flaky.refuse.store(true, Ordering::SeqCst);
    match store.cas_ref("refs/heads/main", Some(b"b"), Some(b"c")) {
        Err(StoreError::Service(e)) => assert_eq!(e.key, "refs/refs_2Fheads_2Fmain"),
        other => panic!("expected a service error, got {other:?}"),
    }
    assert!(store.append_ref_log(b"lost").is_err());
    flaky.refuse.store(false, Ordering::SeqCst);
    assert_eq!(store.get_ref("refs/heads/main").unwrap(), Some(b"b".to_vec()));
    assert_eq!(store.ref_log().unwrap().len(), 1);
    assert_eq!(
        store.cas_ref("refs/heads/main", Some(b"b"), Some(b"c")).unwrap(),
        CasOutcome::Swapped
    );
}

/// Object ranges (an index part's rows and texts) come from the bucket once: a cache on
/// disk keeps a copy, which a later process over the same cache reads with no request.
#[test]
fn object_ranges_are_read_from_the_bucket_once_then_from_the_local_cache() {
    let mem = Arc::new(InMemory::new());
    let cache = tempfile::tempdir().unwrap();
    let open = || {
        ObjectStoreBackend::with_object_store(
            Arc::clone(&mem) as Arc<dyn ObjectStore>,
            "repo",
            "memory://test",
            ObjectStoreOptions::default().cache_dir(cache.path().join("c")),
        )
        .unwrap()
    };
    let bytes: Vec<u8> = (0..500u32).map(|i| (i * 7 % 251) as u8).collect();
    let hash = Hash::of(&bytes);
    {
        let writer = open();
        writer.put_batch(&[(hash, bytes.clone())]).unwrap();
    }
    let read = |store: &ObjectStoreBackend, offset: u64, len: usize| {
        let mut out = vec![0u8; len];
        store.read_object_at(&hash, offset, &mut out).unwrap().then_some(out)
    };
    let first = open();
    let gets = first.requests().gets;
    assert_eq!(read(&first, 100, 20), Some(bytes[100..120].to_vec()));
    assert_eq!(first.requests().gets, gets + 1, "one read of the bucket");
    assert_eq!(read(&first, 490, 20), None, "past the end");
    drop(first);
    let later = open();
    let gets = later.requests().gets;
    assert_eq!(read(&later, 0, 8), Some(bytes[..8].to_vec()));
    assert_eq!(read(&later, 492, 8), Some(bytes[492..].to_vec()));
    assert_eq!(later.requests().gets, gets, "read from the local cache");
    assert_eq!(read(&later, 0, 1).map(|_| ()), Some(()));
    let absent = Hash::of(b"absent");
    let mut out = [0u8; 1];
    assert!(!later.read_object_at(&absent, 0, &mut out).unwrap());
}
