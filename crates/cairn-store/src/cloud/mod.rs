//! [`ObjectStoreBackend`]: a [`Store`] in an object store — S3 and S3-compatible services,
//! Google Cloud Storage, Azure Blob Storage — through the `object_store` crate.
//!
//! Layout under the repository's prefix ([`keys`], storage-format §5.4):
//! - objects under `objects/<hex hash>`, written once with `PutMode::Create`
//!   (`If-None-Match: *`; a key already taken is success, the content being its name) and
//!   checked against their blake3 hash on every read;
//! - each ref one object under `refs/`, moved by compare-and-swap on `PutMode::Update`
//!   (`If-Match: <etag>`) ([`refs`]);
//! - the ref log as numbered records under `reflog/`, each created once ([`reflog`]);
//! - derived data (index chunks, time indexes) in a segment store on local disk, a cache
//!   by key, and optionally under `derived/` in the bucket too
//!   ([`ObjectStoreOptions::remote_derived`]).
//!
//! Requests run on a small tokio runtime the backend owns; the [`Store`] methods block.

mod bucket;
mod cache;
mod keys;
mod reflog;
mod refs;

use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cairn_core::Hash;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreScheme, PutMode, RetryConfig};

use crate::backend::{check_ref_log_record, CasOutcome, DerivedEntry, Store, StoreDamage, StoreStats};
use crate::error::StoreError;
use crate::frame::{frame, unframe};
use crate::memory::MemoryStore;
use crate::segment::SegmentStore;

use bucket::Bucket;
pub use bucket::RequestCounts;
use cache::ObjectCache;

/// The URL schemes [`ObjectStoreBackend::open`] takes.
const SCHEMES: [&str; 8] = ["s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss"];

/// How an [`ObjectStoreBackend`] keeps its local caches and talks to the service.
///
/// ```
/// use cairn_store::ObjectStoreOptions;
/// let options = ObjectStoreOptions::default()
///     .cache_dir("/tmp/cairn-cache/my-bucket")
///     .object_cache_bytes(64 << 20)
///     .remote_derived(true);
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
pub struct ObjectStoreOptions {
    cache_dir: Option<PathBuf>,
    object_cache_bytes: usize,
    remote_derived: bool,
    concurrency: usize,
    max_retries: usize,
    retry_timeout: Duration,
}

impl Default for ObjectStoreOptions {
    fn default() -> ObjectStoreOptions {
        ObjectStoreOptions {
            cache_dir: None,
            object_cache_bytes: 256 << 20,
            remote_derived: false,
            concurrency: 32,
            max_retries: 10,
            retry_timeout: Duration::from_secs(180),
        }
    }
}

impl ObjectStoreOptions {
    /// The directory of the local derived-data cache (a segment store). Default:
    /// `<cache root>/objstore/<32 hex digits of the URL's blake3>`, where the cache root is
    /// `$CAIRN_CACHE_DIR`, else `$XDG_CACHE_HOME/cairn`, else `~/.cache/cairn` (on macOS
    /// `~/Library/Caches/cairn`, on Windows `%LOCALAPPDATA%\cairn`), else the temporary
    /// directory's `cairn-cache`.
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> ObjectStoreOptions {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Bytes of objects kept in memory after a read (default 256 MiB; 0 keeps none).
    pub fn object_cache_bytes(mut self, bytes: usize) -> ObjectStoreOptions {
        self.object_cache_bytes = bytes;
        self
    }

    /// Also keep derived data in the bucket (`derived/<hex key>`), so that another machine
    /// reads index chunks instead of building them; a local miss is then read from the
    /// bucket and kept locally. Default: off (derived data is built on each machine and
    /// cached on its disk).
    pub fn remote_derived(mut self, on: bool) -> ObjectStoreOptions {
        self.remote_derived = on;
        self
    }

    /// Requests in flight at once in a batch (default 32).
    pub fn concurrency(mut self, requests: usize) -> ObjectStoreOptions {
        self.concurrency = requests.max(1);
        self
    }

    /// Retries of a failed idempotent request (connection refused, HTTP 5xx, 429), with
    /// exponential backoff, and the time after which no retry starts (default 10 and
    /// 180 s).
    pub fn retries(mut self, max_retries: usize, timeout: Duration) -> ObjectStoreOptions {
        self.max_retries = max_retries;
        self.retry_timeout = timeout;
        self
    }

    fn retry_config(&self) -> RetryConfig {
        RetryConfig {
            max_retries: self.max_retries,
            retry_timeout: self.retry_timeout,
            ..RetryConfig::default()
        }
    }
}

/// A [`Store`] in an object store (module docs; storage-format §5.4).
///
/// Several processes on several machines may use one repository at once: objects are
/// written once under their hash, refs move only by conditional writes, the ref log's
/// records are created once each. What is local to one process: the object read cache,
/// and the derived-data cache (one process at a time per cache directory; a second
/// process on the same machine keeps its derived data in memory instead).
///
/// Not for a store that lacks conditional writes (`object_store`'s local file system has
/// no `PutMode::Update`): refs could not be moved safely there.
///
/// ```no_run
/// use cairn_store::{ObjectStoreBackend, ObjectStoreOptions, Store};
/// // Credentials and endpoint from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
/// // AWS_ENDPOINT_URL (and AWS_ALLOW_HTTP=true for a plain-http endpoint).
/// let store = ObjectStoreBackend::open("s3://my-bucket/memory", ObjectStoreOptions::default())?;
/// assert_eq!(store.get_ref("HEAD")?, None);
/// # Ok::<(), cairn_store::StoreError>(())
/// ```
pub struct ObjectStoreBackend {
    bucket: Bucket,
    objects: ObjectCache,
    refs: refs::Refs,
    reflog: reflog::RefLog,
    /// The derived-data cache on local disk (or in memory, see the type's docs).
    local: Box<dyn Store>,
    /// Where `local` keeps its files (`None`: in memory).
    local_dir: Option<PathBuf>,
    remote_derived: bool,
}

impl std::fmt::Debug for ObjectStoreBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStoreBackend")
            .field("location", &self.bucket.location())
            .field("cache", &self.local_dir)
            .finish_non_exhaustive()
    }
}

impl ObjectStoreBackend {
    /// True if `location` is a URL this backend opens (`s3://`, `s3a://`, `gs://`,
    /// `az://`, `adl://`, `azure://`, `abfs://`, `abfss://`).
    ///
    /// ```
    /// use cairn_store::ObjectStoreBackend;
    /// assert!(ObjectStoreBackend::is_url("s3://bucket/prefix"));
    /// assert!(!ObjectStoreBackend::is_url("/data/memory"));
    /// assert!(!ObjectStoreBackend::is_url("file:///data/memory"));
    /// ```
    pub fn is_url(location: &str) -> bool {
        location
            .split_once("://")
            .is_some_and(|(scheme, _)| SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()))
    }

    /// Opens the repository store at `url` (`s3://bucket/prefix`, `gs://…`, `az://…`), with
    /// credentials and settings from the provider's standard environment variables
    /// (`AmazonS3Builder::from_env` and its GCS and Azure counterparts: `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`,
    /// `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, …). Sends no request: an
    /// empty prefix is an empty store. [`StoreError::BadLocation`] for a URL it cannot use.
    pub fn open(url: &str, options: ObjectStoreOptions) -> Result<ObjectStoreBackend, StoreError> {
        let bad = |detail: String| StoreError::BadLocation {
            location: url.to_owned(),
            detail,
        };
        if !Self::is_url(url) {
            return Err(bad(format!(
                "not an object-store URL (schemes: {})",
                SCHEMES.map(|s| format!("{s}://")).join(", ")
            )));
        }
        let parsed = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(bad("no bucket (container) named".into()));
        }
        let (scheme, prefix) = ObjectStoreScheme::parse(&parsed).map_err(|e| bad(e.to_string()))?;
        // https through rustls with `ring` (see Cargo.toml); one provider per process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let retry = options.retry_config();
        let built: object_store::Result<Arc<dyn ObjectStore>> = match scheme {
            ObjectStoreScheme::AmazonS3 => object_store::aws::AmazonS3Builder::from_env()
                .with_url(url)
                .with_retry(retry)
                .build()
                .map(|s| Arc::new(s) as _),
            ObjectStoreScheme::GoogleCloudStorage => object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_url(url)
                .with_retry(retry)
                .build()
                .map(|s| Arc::new(s) as _),
            ObjectStoreScheme::MicrosoftAzure => object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_url(url)
                .with_retry(retry)
                .build()
                .map(|s| Arc::new(s) as _),
            other => return Err(bad(format!("{other:?} is not an object store this build opens"))),
        };
        let store = built.map_err(|e| bad(e.to_string()))?;
        let cache_dir = match &options.cache_dir {
            Some(d) => d.clone(),
            None => default_cache_dir(url),
        };
        Self::build(store, prefix, url.to_owned(), Some(cache_dir), &options)
    }

    /// A backend over an `object_store` you built yourself (a custom client, or
    /// `object_store::memory::InMemory` in tests), at `prefix` within it; `location` names it
    /// in messages. The derived-data cache is in `options`' cache directory, or in memory
    /// if none is given.
    pub fn with_object_store(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        location: &str,
        options: ObjectStoreOptions,
    ) -> Result<ObjectStoreBackend, StoreError> {
        let prefix = Path::parse(prefix).map_err(|e| StoreError::BadLocation {
            location: location.to_owned(),
            detail: e.to_string(),
        })?;
        Self::build(store, prefix, location.to_owned(), options.cache_dir.clone(), &options)
    }

    fn build(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        location: String,
        cache_dir: Option<PathBuf>,
        options: &ObjectStoreOptions,
    ) -> Result<ObjectStoreBackend, StoreError> {
        let (local, local_dir): (Box<dyn Store>, _) = match cache_dir {
            Some(dir) => match open_cache(&dir) {
                Ok(s) => (Box::new(s), Some(dir)),
                // Another process on this machine has the cache: keep derived data in
                // memory (rebuilt by this process as needed).
                Err(StoreError::Locked { .. }) => (Box::new(MemoryStore::keeping_derived()), None),
                Err(e) => return Err(e),
            },
            None => (Box::new(MemoryStore::keeping_derived()), None),
        };
        Ok(ObjectStoreBackend {
            bucket: Bucket::new(store, prefix, location, options.concurrency)?,
            objects: ObjectCache::new(options.object_cache_bytes),
            refs: refs::Refs::new(),
            reflog: reflog::RefLog::new(),
            local,
            local_dir,
            remote_derived: options.remote_derived,
        })
    }

    /// The store's URL (or the location given to [`ObjectStoreBackend::with_object_store`]).
    pub fn location(&self) -> &str {
        self.bucket.location()
    }

    /// The requests sent to the service since the store was opened, and their bytes.
    pub fn requests(&self) -> RequestCounts {
        self.bucket.counts()
    }

    /// The directory of the local derived-data cache (`None`: kept in memory).
    pub fn cache_dir(&self) -> Option<&FsPath> {
        self.local_dir.as_deref()
    }

    /// Reads a derived value from the bucket (with [`ObjectStoreOptions::remote_derived`])
    /// and keeps it locally.
    fn fetch_derived(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let name = keys::derived(key);
        let Some((bytes, _)) = self.bucket.get(&name)? else {
            return Ok(None);
        };
        let value = unframe(&bytes)
            .map_err(|d| StoreError::corrupt_derived(key, format!("object {name}: {d}")))?
            .to_vec();
        self.local.put_derived(&[(key.to_vec(), value.clone())])?;
        Ok(Some(value))
    }

    /// The derived keys kept in the bucket that start with `prefix`.
    fn remote_derived_keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self
            .bucket
            .list(keys::DERIVED)?
            .into_iter()
            .filter_map(|(file, _)| keys::derived_key(&file))
            .filter(|k| k.starts_with(prefix))
            .collect())
    }
}

/// Opens (creating) the local derived-data cache at `dir`.
fn open_cache(dir: &FsPath) -> Result<SegmentStore, StoreError> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| StoreError::Backend(format!("creating the cache directory {}: {e}", parent.display())))?;
    }
    SegmentStore::open(dir)
}

/// The default cache directory of the store at `url` ([`ObjectStoreOptions::cache_dir`]).
fn default_cache_dir(url: &str) -> PathBuf {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let root = env("CAIRN_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("cairn")))
        .or_else(|| {
            if cfg!(windows) {
                env("LOCALAPPDATA").map(|d| d.join("cairn"))
            } else if cfg!(target_os = "macos") {
                env("HOME").map(|d| d.join("Library/Caches/cairn"))
            } else {
                env("HOME").map(|d| d.join(".cache/cairn"))
            }
        })
        .unwrap_or_else(|| std::env::temp_dir().join("cairn-cache"));
    let id = blake3::hash(url.trim_end_matches('/').as_bytes()).to_hex();
    root.join("objstore").join(&id.as_str()[..32])
}

impl Store for ObjectStoreBackend {
    /// Reads `objects/<hex>` (or the read cache) and checks the bytes' blake3 hash: a
    /// mismatch is [`StoreError::Corrupt`] naming the object and its key.
    fn get(&self, hash: &Hash) -> Result<Option<Arc<[u8]>>, StoreError> {
        if let Some(bytes) = self.objects.get(hash) {
            return Ok(Some(bytes));
        }
        let key = keys::object(hash);
        let Some((bytes, _)) = self.bucket.get(&key)? else {
            return Ok(None);
        };
        let actual = Hash::of(&bytes);
        if actual != *hash {
            return Err(StoreError::corrupt_object(
                hash,
                format!(
                    "{} key {key} holds {} bytes whose blake3 hash is {}",
                    self.bucket.location(),
                    bytes.len(),
                    actual.to_hex()
                ),
            ));
        }
        let bytes: Arc<[u8]> = Arc::from(bytes);
        self.objects.insert(*hash, Arc::clone(&bytes));
        Ok(Some(bytes))
    }

    /// One positional read of the local cache's copy of the object, when the cache is on
    /// disk and holds one; else the object is read whole — from this process's cache or
    /// the bucket, its blake3 checked — and, with a cache on disk, copied there, so that
    /// the rows and texts index parts read from node objects (storage-format §7.3.1,
    /// §7.3.4) are local reads from then on. The copy is a cache: one that cannot be
    /// written is read from the bucket again next time.
    fn read_object_at(&self, hash: &Hash, offset: u64, out: &mut [u8]) -> Result<bool, StoreError> {
        let on_disk = self.local_dir.is_some();
        if on_disk && self.local.read_object_at(hash, offset, out)? {
            return Ok(true);
        }
        let Some(bytes) = self.get(hash)? else {
            return Ok(false);
        };
        if on_disk {
            let _ = self.local.put_batch(&[(*hash, bytes.to_vec())]);
        }
        Ok(crate::backend::copy_range(&bytes, offset, out))
    }

    fn contains(&self, hash: &Hash) -> Result<bool, StoreError> {
        if self.objects.known(hash) {
            return Ok(true);
        }
        let found = self.bucket.exists(&keys::object(hash))?;
        if found {
            self.objects.mark_present([*hash]);
        }
        Ok(found)
    }

    fn contains_many(&self, hashes: &[Hash]) -> Result<Vec<bool>, StoreError> {
        let unknown: Vec<Hash> = hashes.iter().filter(|h| !self.objects.known(h)).copied().collect();
        let found = self
            .bucket
            .exists_many(&unknown.iter().map(keys::object).collect::<Vec<_>>())?;
        self.objects
            .mark_present(unknown.iter().zip(&found).filter(|(_, f)| **f).map(|(h, _)| *h));
        Ok(hashes.iter().map(|h| self.objects.known(h)).collect())
    }

    /// Reads the objects not in the read cache concurrently into it (those whose bytes
    /// fail their hash are left out: the read that follows names them).
    fn prefetch(&self, hashes: &[Hash]) -> Result<(), StoreError> {
        let wanted: Vec<Hash> = hashes
            .iter()
            .filter(|h| self.objects.get(h).is_none())
            .copied()
            .collect();
        let got = self
            .bucket
            .get_many(&wanted.iter().map(keys::object).collect::<Vec<_>>())?;
        for (hash, bytes) in wanted.into_iter().zip(got) {
            if let Some(bytes) = bytes.filter(|b| Hash::of(b) == hash) {
                self.objects.insert(hash, Arc::from(bytes));
            }
        }
        Ok(())
    }

    /// Writes the objects not known to be stored, 32 requests at a time, each with
    /// `PutMode::Create`. Durable when it returns.
    fn put_batch(&self, objects: &[(Hash, Vec<u8>)]) -> Result<(), StoreError> {
        let items: Vec<(String, Vec<u8>)> = objects
            .iter()
            .filter(|(h, _)| !self.objects.known(h))
            .map(|(h, b)| (keys::object(h), b.clone()))
            .collect();
        self.bucket.put_many(items, PutMode::Create)?;
        self.objects.mark_present(objects.iter().map(|(h, _)| *h));
        Ok(())
    }

    fn object_hashes(&self) -> Result<Vec<Hash>, StoreError> {
        let mut hashes: Vec<Hash> = self
            .bucket
            .list(keys::OBJECTS)?
            .into_iter()
            .filter_map(|(file, _)| keys::object_hash(&file))
            .collect();
        hashes.sort_unstable();
        Ok(hashes)
    }

    fn delete_objects(&self, hashes: &[Hash]) -> Result<(), StoreError> {
        self.objects.remove(hashes);
        self.bucket.delete_many(hashes.iter().map(keys::object).collect())
    }

    fn get_ref(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.refs.get(&self.bucket, name)
    }

    /// Compare-and-swap on the service's conditional writes (`If-Match`,
    /// `If-None-Match: *`): atomic against every writer on every machine. A write whose
    /// outcome is unknown is resolved by reading the ref back.
    fn cas_ref(&self, name: &str, expected: Option<&[u8]>, new: Option<&[u8]>) -> Result<CasOutcome, StoreError> {
        self.refs.cas(&self.bucket, name, expected, new)
    }

    fn remove_damaged_ref(&self, name: &str) -> Result<bool, StoreError> {
        self.refs.remove_damaged(&self.bucket, name)
    }

    fn list_refs(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        Ok(self.refs.list(&self.bucket, prefix)?.refs)
    }

    fn damaged_refs(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        Ok(self.refs.list(&self.bucket, prefix)?.damaged)
    }

    fn get_derived(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        match self.local.get_derived(key)? {
            Some(v) => Ok(Some(v)),
            None if self.remote_derived => self.fetch_derived(key),
            None => Ok(None),
        }
    }

    fn get_derived_shared(&self, key: &[u8]) -> Result<Option<bytes::Bytes>, StoreError> {
        match self.local.get_derived_shared(key)? {
            Some(v) => Ok(Some(v)),
            None if self.remote_derived => Ok(self.fetch_derived(key)?.map(bytes::Bytes::from)),
            None => Ok(None),
        }
    }

    fn get_derived_shared_unchecked(&self, key: &[u8]) -> Result<Option<(bytes::Bytes, bool)>, StoreError> {
        match self.local.get_derived_shared_unchecked(key)? {
            Some(v) => Ok(Some(v)),
            // Fetched values are not said to be checked: the reader checks them.
            None if self.remote_derived => Ok(self.fetch_derived(key)?.map(|v| (bytes::Bytes::from(v), false))),
            None => Ok(None),
        }
    }

    fn with_derived(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool, StoreError> {
        if self.local.with_derived(key, f)? {
            return Ok(true);
        }
        match self
            .remote_derived
            .then(|| self.fetch_derived(key))
            .transpose()?
            .flatten()
        {
            Some(v) => {
                f(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn read_derived_at(&self, key: &[u8], offset: u64, out: &mut [u8]) -> Result<bool, StoreError> {
        if self.local.read_derived_at(key, offset, out)? {
            return Ok(true);
        }
        if self.remote_derived && self.fetch_derived(key)?.is_some() {
            return self.local.read_derived_at(key, offset, out);
        }
        Ok(false)
    }

    fn reads_derived_ranges(&self) -> bool {
        self.local.reads_derived_ranges()
    }

    fn put_derived(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), StoreError> {
        self.local.put_derived(entries)?;
        if self.remote_derived {
            let items = entries.iter().map(|(k, v)| (keys::derived(k), frame(v))).collect();
            self.bucket.put_many(items, PutMode::Overwrite)?;
        }
        Ok(())
    }

    fn delete_derived(&self, keys_: &[Vec<u8>]) -> Result<(), StoreError> {
        self.local.delete_derived(keys_)?;
        if self.remote_derived {
            self.bucket
                .delete_many(keys_.iter().map(|k| keys::derived(k)).collect())?;
        }
        Ok(())
    }

    fn scan_derived(&self, prefix: &[u8]) -> Result<Vec<DerivedEntry>, StoreError> {
        if !self.remote_derived {
            return self.local.scan_derived(prefix);
        }
        let mut out = Vec::new();
        for key in self.derived_keys(prefix)? {
            if let Some(v) = self.get_derived(&key)? {
                out.push((key, v));
            }
        }
        Ok(out)
    }

    /// Of the local cache only (the time indexes it serves are checked against the
    /// branch's head and rebuilt when they disagree).
    fn last_derived_at_or_before(&self, prefix: &[u8], upper: &[u8]) -> Result<Option<DerivedEntry>, StoreError> {
        self.local.last_derived_at_or_before(prefix, upper)
    }

    fn derived_keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut keys_ = self.local.derived_keys(prefix)?;
        if self.remote_derived {
            keys_.extend(self.remote_derived_keys(prefix)?);
            keys_.sort_unstable();
            keys_.dedup();
        }
        Ok(keys_)
    }

    /// Objects, refs and the ref log are durable in the service when their writes
    /// return; this flushes the local derived-data cache.
    fn flush(&self) -> Result<(), StoreError> {
        self.local.flush()
    }

    fn flush_objects(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Lists `objects/` (one listing request per thousand objects).
    fn stats(&self) -> Result<StoreStats, StoreError> {
        let (mut objects, mut object_bytes) = (0, 0);
        for (file, meta) in self.bucket.list(keys::OBJECTS)? {
            if keys::object_hash(&file).is_some() {
                objects += 1;
                object_bytes += meta.size;
            }
        }
        let local = self.local.stats()?;
        Ok(StoreStats {
            objects,
            object_bytes,
            derived: local.derived,
            derived_bytes: local.derived_bytes,
        })
    }

    fn compact(&self) -> Result<(), StoreError> {
        self.local.compact()
    }

    fn damage(&self) -> StoreDamage {
        let local = self.local.damage();
        StoreDamage {
            data: Vec::new(),
            // The local cache holds derived data only: any damage there costs a cache.
            derived: local
                .data
                .into_iter()
                .chain(local.derived)
                .chain(local.ref_log)
                .collect(),
            ref_log: self.reflog.damage(),
        }
    }

    fn append_ref_log(&self, record: &[u8]) -> Result<(), StoreError> {
        check_ref_log_record(record)?;
        self.reflog.append(&self.bucket, record)
    }

    fn ref_log(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        self.reflog.all(&self.bucket)
    }

    fn retain_ref_log(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<(), StoreError> {
        self.reflog.retain(&self.bucket, keep)
    }
}
