//! [`Bucket`]: the synchronous face of an `object_store` client — a small tokio runtime the
//! backend owns, the repository's prefix, and each failure turned into a typed
//! [`StoreError::Service`] naming the key.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::stream::{self, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    GetOptions, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion,
};

use crate::error::{ServiceError, StoreError};

/// The result of a conditional write ([`Bucket::put`]).
#[derive(Debug)]
pub(super) enum Put {
    /// Written.
    Done,
    /// Refused: `PutMode::Create` found the key taken, or `PutMode::Update` found another
    /// version than the one given (HTTP 412 or 409).
    Refused,
}

/// One object store, at one prefix, driven synchronously.
pub(super) struct Bucket {
    store: Arc<dyn ObjectStore>,
    /// The repository's prefix within the store (`Path::ROOT`: the whole bucket).
    prefix: Path,
    /// The runtime the requests run on. Always `Some` until drop, which shuts it down
    /// without waiting (dropping a runtime inside another's context would panic).
    runtime: Option<tokio::runtime::Runtime>,
    /// The store's URL, for messages.
    location: String,
    /// Requests in flight at once in a batch.
    concurrency: usize,
    /// What was sent and received.
    counts: Counts,
}

/// Requests and bytes, counted as they complete.
#[derive(Default)]
struct Counts {
    gets: AtomicU64,
    bytes_read: AtomicU64,
    puts: AtomicU64,
    bytes_written: AtomicU64,
    other: AtomicU64,
}

/// What an [`ObjectStoreBackend`](super::ObjectStoreBackend) has asked of its service since
/// it was opened (for benchmarks and `stats`-like reports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// Reads (`GET`), found or not.
    pub gets: u64,
    /// Bytes those reads returned.
    pub bytes_read: u64,
    /// Writes (`PUT`), refused ones included.
    pub puts: u64,
    /// Bytes those writes sent.
    pub bytes_written: u64,
    /// Listings, existence checks and deletes.
    pub other: u64,
}

impl Drop for Bucket {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Bucket {
    pub(super) fn new(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        location: String,
        concurrency: usize,
    ) -> Result<Bucket, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cairn-object-store")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Backend(format!("starting the object-store runtime for {location}: {e}")))?;
        Ok(Bucket {
            store,
            prefix,
            runtime: Some(runtime),
            location,
            concurrency: concurrency.max(1),
            counts: Counts::default(),
        })
    }

    /// What was asked of the service so far.
    pub(super) fn counts(&self) -> RequestCounts {
        let c = &self.counts;
        RequestCounts {
            gets: c.gets.load(Ordering::Relaxed),
            bytes_read: c.bytes_read.load(Ordering::Relaxed),
            puts: c.puts.load(Ordering::Relaxed),
            bytes_written: c.bytes_written.load(Ordering::Relaxed),
            other: c.other.load(Ordering::Relaxed),
        }
    }

    fn count_get(&self, bytes: Option<usize>) {
        self.counts.gets.fetch_add(1, Ordering::Relaxed);
        self.counts
            .bytes_read
            .fetch_add(bytes.unwrap_or(0) as u64, Ordering::Relaxed);
    }

    fn count_put(&self, bytes: usize) {
        self.counts.puts.fetch_add(1, Ordering::Relaxed);
        self.counts.bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn count_other(&self) {
        self.counts.other.fetch_add(1, Ordering::Relaxed);
    }

    /// The store's URL.
    pub(super) fn location(&self) -> &str {
        &self.location
    }

    /// Runs `fut` to completion on the store's runtime. Called from a thread inside
    /// another tokio runtime (a server's handler), it runs on a scoped thread of its own:
    /// blocking on a runtime from within one would panic.
    fn block<F: Future + Send>(&self, fut: F) -> F::Output
    where
        F::Output: Send,
    {
        let rt = self.runtime.as_ref().expect("the runtime lives until drop");
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| {
                s.spawn(|| rt.block_on(fut))
                    .join()
                    .expect("object-store request panicked")
            })
        } else {
            rt.block_on(fut)
        }
    }

    /// The full path of `key` under the prefix.
    fn path(&self, key: &str) -> Path {
        // Keys are made by `keys.rs` from safe characters only, so each part is kept as is.
        let mut parts: Vec<object_store::path::PathPart<'_>> = self.prefix.parts().collect();
        parts.extend(key.split('/').map(object_store::path::PathPart::from));
        Path::from_iter(parts)
    }

    /// A typed error for `op` on `key`.
    pub(super) fn error(&self, op: &'static str, key: &str, e: object_store::Error) -> StoreError {
        service_error(&self.location, op, key, e)
    }

    /// Reads `key`: its bytes and version, `None` if absent.
    pub(super) fn get(&self, key: &str) -> Result<Option<(Vec<u8>, UpdateVersion)>, StoreError> {
        let path = self.path(key);
        let got = self
            .block(get_one(&self.store, &path))
            .map_err(|e| self.error("get", key, e))?;
        self.count_get(got.as_ref().map(|(b, _)| b.len()));
        Ok(got)
    }

    /// Reads many keys at once (up to the concurrency limit in flight), in the order
    /// given; `None` for those absent.
    pub(super) fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let store = &self.store;
        let fut = stream::iter(keys.iter().map(|k| {
            let path = self.path(k);
            async move {
                let got = get_one(store, &path)
                    .await
                    .map(|o| o.map(|(b, _)| b))
                    .map_err(|e| self.error("get", k, e))?;
                self.count_get(got.as_ref().map(Vec::len));
                Ok(got)
            }
        }))
        .buffered(self.concurrency)
        .try_collect::<Vec<_>>();
        self.block(fut)
    }

    /// True if `key` exists.
    pub(super) fn exists(&self, key: &str) -> Result<bool, StoreError> {
        let path = self.path(key);
        self.count_other();
        match self.block(self.store.head(&path)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.error("head", key, e)),
        }
    }

    /// Which of `keys` exist, asked at once (up to the concurrency limit in flight).
    pub(super) fn exists_many(&self, keys: &[String]) -> Result<Vec<bool>, StoreError> {
        let store = &self.store;
        let fut = stream::iter(keys.iter().map(|k| {
            let path = self.path(k);
            async move {
                self.count_other();
                match store.head(&path).await {
                    Ok(_) => Ok(true),
                    Err(object_store::Error::NotFound { .. }) => Ok(false),
                    Err(e) => Err(self.error("head", k, e)),
                }
            }
        }))
        .buffered(self.concurrency)
        .try_collect::<Vec<_>>();
        self.block(fut)
    }

    /// Writes `bytes` at `key` in `mode`.
    pub(super) fn put(&self, key: &str, bytes: Vec<u8>, mode: PutMode) -> Result<Put, StoreError> {
        let path = self.path(key);
        self.count_put(bytes.len());
        let fut = self
            .store
            .put_opts(&path, PutPayload::from(bytes), PutOptions::from(mode));
        match self.block(fut) {
            Ok(_) => Ok(Put::Done),
            Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                Ok(Put::Refused)
            }
            Err(e) => Err(self.error("put", key, e)),
        }
    }

    /// Writes values, many at once, with `mode`: `PutMode::Create` for immutable values (a
    /// key already taken counts as written: its content is the same by construction, it
    /// is named by it), `PutMode::Overwrite` to replace what a key holds.
    pub(super) fn put_many(&self, items: Vec<(String, Vec<u8>)>, mode: PutMode) -> Result<(), StoreError> {
        let store = &self.store;
        let create = matches!(mode, PutMode::Create);
        let fut = stream::iter(items.into_iter().map(|(k, bytes)| {
            let path = self.path(&k);
            let opts = PutOptions::from(mode.clone());
            async move {
                self.count_put(bytes.len());
                match store.put_opts(&path, PutPayload::from(bytes), opts).await {
                    Ok(_) => Ok(()),
                    Err(object_store::Error::AlreadyExists { .. }) if create => Ok(()),
                    Err(e) => Err(self.error("put", &k, e)),
                }
            }
        }))
        .buffer_unordered(self.concurrency)
        .try_collect::<Vec<()>>();
        self.block(fut).map(drop)
    }

    /// Deletes keys, many at once; absent ones are ignored.
    pub(super) fn delete_many(&self, keys: Vec<String>) -> Result<(), StoreError> {
        let store = &self.store;
        let fut = stream::iter(keys.into_iter().map(|k| {
            let path = self.path(&k);
            async move {
                self.count_other();
                match store.delete(&path).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(e) => Err(self.error("delete", &k, e)),
                }
            }
        }))
        .buffer_unordered(self.concurrency)
        .try_collect::<Vec<()>>();
        self.block(fut).map(drop)
    }

    /// Lists directory `dir` (`objects`, `refs`, …): each object's file name with its
    /// metadata, in no particular order. Objects in deeper directories are left out.
    pub(super) fn list(&self, dir: &str) -> Result<Vec<(String, ObjectMeta)>, StoreError> {
        let base = self.path(dir);
        let depth = base.parts().count();
        self.count_other();
        let metas: Vec<ObjectMeta> = self
            .block(self.store.list(Some(&base)).try_collect())
            .map_err(|e| self.error("list", dir, e))?;
        Ok(metas
            .into_iter()
            .filter_map(|m| {
                let parts: Vec<_> = m.location.parts().collect();
                if parts.len() != depth + 1 {
                    return None;
                }
                let name = parts[depth].as_ref().to_owned();
                Some((name, m))
            })
            .collect())
    }
}

/// Reads one object: bytes and version, `None` if absent.
async fn get_one(store: &Arc<dyn ObjectStore>, path: &Path) -> object_store::Result<Option<(Vec<u8>, UpdateVersion)>> {
    match store.get_opts(path, GetOptions::default()).await {
        Ok(r) => {
            let version = UpdateVersion {
                e_tag: r.meta.e_tag.clone(),
                version: r.meta.version.clone(),
            };
            let bytes = r.bytes().await?;
            Ok(Some((bytes.to_vec(), version)))
        }
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A typed error for `op` on `key` of the store at `location`.
pub(super) fn service_error(location: &str, op: &'static str, key: &str, e: object_store::Error) -> StoreError {
    use object_store::Error as E;
    let kind = match &e {
        E::Generic { .. } => "Generic",
        E::NotFound { .. } => "NotFound",
        E::InvalidPath { .. } => "InvalidPath",
        E::JoinError { .. } => "JoinError",
        E::NotSupported { .. } => "NotSupported",
        E::AlreadyExists { .. } => "AlreadyExists",
        E::Precondition { .. } => "Precondition",
        E::NotModified { .. } => "NotModified",
        E::NotImplemented { .. } => "NotImplemented",
        E::PermissionDenied { .. } => "PermissionDenied",
        E::Unauthenticated { .. } => "Unauthenticated",
        E::UnknownConfigurationKey { .. } => "UnknownConfigurationKey",
        _ => "Other",
    };
    let detail = error_chain(&e);
    ServiceError {
        location: location.to_owned(),
        op,
        key: key.to_owned(),
        kind,
        status: http_status(&detail),
        detail,
    }
    .into_store_error()
}

/// The messages of `e` and its sources, joined.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let msg = s.to_string();
        if !out.contains(&msg) {
            out.push_str(": ");
            out.push_str(&msg);
        }
        source = s.source();
    }
    out
}

/// The HTTP status a client error's message names (`object_store` keeps the status in a
/// type it does not export; its message always spells it "status code: NNN" or as the
/// status line "NNN Reason").
fn http_status(detail: &str) -> Option<u16> {
    let at = detail.find("status code: ")? + "status code: ".len();
    detail.get(at..at + 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn status_is_read_from_the_message() {
        assert_eq!(
            super::http_status("Server returned non-2xx status code: 503 Service Unavailable"),
            Some(503)
        );
        assert_eq!(super::http_status("connection refused"), None);
    }
}
