//! Store errors.

use cairn_core::Hash;

/// Errors from a [`Store`](crate::Store).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A stored value failed its checksum (or is too short to carry one).
    #[error("corrupt {space} entry {key}: {detail}")]
    Corrupt {
        /// Which key space: "object", "ref" or "derived".
        space: &'static str,
        /// The key: an object's hash in hex, a ref name, or a derived key in hex.
        key: String,
        /// What check failed.
        detail: String,
    },
    /// The backend failed (I/O error, database error).
    #[error("storage backend error: {0}")]
    Backend(String),
    /// The disk (or quota) has no room for a write. The write did not happen: the store
    /// is as it was before it, and works again once space is freed.
    #[error("no space left on the device holding {path}: {detail} (free some space and retry; nothing was changed)")]
    NoSpace {
        /// The store's directory.
        path: String,
        /// The operation that needed the space.
        detail: String,
    },
    /// An object-store service (S3, GCS, Azure) refused or failed a request, after the
    /// retries an idempotent request gets ([`ServiceError`] says which, on which key).
    #[error("{0}")]
    Service(Box<ServiceError>),
    /// A store location (an object-store URL) that cannot be used: unknown scheme, no
    /// bucket, a backend this build lacks, a bad setting.
    #[error("store location {location}: {detail}")]
    BadLocation {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The database is locked by another process.
    #[error("repository at {path} is in use by another process")]
    Locked {
        /// Path of the database.
        path: String,
    },
}

/// A failed request to an object-store service ([`StoreError::Service`]). Nothing was
/// changed by it, except where `op` says the outcome was unknown and could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("object store {location}: {op} of key {key} failed ({kind}{}): {detail}", status.map(|s| format!(", HTTP status {s}")).unwrap_or_default())]
#[non_exhaustive]
pub struct ServiceError {
    /// The store's URL (`s3://bucket/prefix`).
    pub location: String,
    /// What was attempted (`get`, `put`, `head`, `list`, `delete`, or a compare-and-swap
    /// whose outcome is unknown).
    pub op: &'static str,
    /// The key within the store (`objects/<hex>`, `refs/<name>`, …).
    pub key: String,
    /// The kind of failure `object_store` reported (`NotFound`, `PermissionDenied`,
    /// `Unauthenticated`, `Generic`, …).
    pub kind: &'static str,
    /// The HTTP status, when the service answered with one.
    pub status: Option<u16>,
    /// The service's message.
    pub detail: String,
}

impl ServiceError {
    /// A service error, boxed into a [`StoreError`].
    pub fn into_store_error(self) -> StoreError {
        StoreError::Service(Box::new(self))
    }
}

impl StoreError {
    /// True if `e` says the device (or a quota) is full.
    pub fn is_no_space(e: &std::io::Error) -> bool {
        // ENOSPC (28) and EDQUOT (122 on Linux) are what a full disk or quota gives.
        matches!(
            e.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        ) || matches!(e.raw_os_error(), Some(28 | 122))
    }

    /// A corruption error for the object `hash`.
    pub fn corrupt_object(hash: &Hash, detail: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            space: "object",
            key: hash.to_hex(),
            detail: detail.into(),
        }
    }

    /// A corruption error for the ref `name`.
    pub(crate) fn corrupt_ref(name: &str, detail: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            space: "ref",
            key: name.to_owned(),
            detail: detail.into(),
        }
    }

    /// A corruption error for the derived-data entry `key`.
    pub(crate) fn corrupt_derived(key: &[u8], detail: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            space: "derived",
            key: hex(key),
            detail: detail.into(),
        }
    }
}

pub(crate) use cairn_core::ids::hex;
