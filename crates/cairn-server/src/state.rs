//! What the server holds: its repositories (one, or one per tenant under a root
//! directory), its configuration and its metrics.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn::Repo;

use crate::config::{check_tenant_name, Config};
use crate::error::{ApiError, ErrorCode};
use crate::metrics::Metrics;

/// The tenant name of the one repository in `--repo` mode (`/...` routes; a config file
/// gives its tokens under this name).
pub const DEFAULT_TENANT: &str = "default";

/// Which repositories a server serves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Repos {
    /// One repository, at the routes' root (`/log`, `/retrieve`...): tenant
    /// [`DEFAULT_TENANT`].
    Single(Repo),
    /// One repository per tenant, `DIR/<tenant>`, at `/t/<tenant>/...`; each is opened on
    /// its first request (it must exist: `cairn init --repo DIR/<tenant>`).
    Root(PathBuf),
}

/// The server's limits and access rules.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Largest request body accepted, in bytes (a larger one gets 413 `payload_too_large`).
    pub max_body_bytes: usize,
    /// Longest time a request may take before it is answered 503 `timeout`.
    pub request_timeout: Duration,
    /// Tenants and token hashes; `None`: no authentication (allowed only on a loopback
    /// address).
    pub config: Option<Config>,
}

impl Default for ServerOptions {
    /// 64 MiB bodies, 60 s per request, no authentication.
    fn default() -> ServerOptions {
        ServerOptions {
            max_body_bytes: 64 << 20,
            request_timeout: Duration::from_secs(60),
            config: None,
        }
    }
}

/// One repository being served: the handle, and the lock that serializes its writes.
pub(crate) struct Tenant {
    pub(crate) repo: Repo,
    /// Held by every write (import, merge, branch creation) from the start of its
    /// transaction to the moved ref, so writes without `expected_head` never lose a race
    /// to each other; `expected_head` is checked under it.
    pub(crate) write: Mutex<()>,
}

impl Tenant {
    fn new(repo: Repo) -> Arc<Tenant> {
        Arc::new(Tenant {
            repo,
            write: Mutex::new(()),
        })
    }

    /// Takes the write lock (a panicked writer left nothing half-done: commits are atomic).
    pub(crate) fn write_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.write.lock().unwrap_or_else(|p| p.into_inner())
    }
}

enum Mode {
    Single(Arc<Tenant>),
    Root {
        dir: PathBuf,
        open: Mutex<HashMap<String, Arc<Tenant>>>,
    },
}

/// The state every handler shares.
pub(crate) struct State {
    mode: Mode,
    pub(crate) options: ServerOptions,
    pub(crate) metrics: Metrics,
}

impl State {
    pub(crate) fn new(repos: Repos, options: ServerOptions) -> State {
        let mode = match repos {
            Repos::Single(repo) => Mode::Single(Tenant::new(repo)),
            Repos::Root(dir) => Mode::Root {
                dir,
                open: Mutex::new(HashMap::new()),
            },
        };
        State {
            mode,
            options,
            metrics: Metrics::default(),
        }
    }

    /// True when routes live under `/t/{tenant}`.
    pub(crate) fn multi_tenant(&self) -> bool {
        matches!(self.mode, Mode::Root { .. })
    }

    /// Checks that the request's `Authorization` header lets it use `tenant`'s
    /// repository: 401 without a known token, 403 with another tenant's.
    pub(crate) fn authorize(&self, authorization: Option<&str>, tenant: &str) -> Result<(), ApiError> {
        let Some(config) = &self.options.config else {
            return Ok(());
        };
        let token = authorization
            .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
            .map(str::trim)
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::Unauthorized,
                    "missing bearer token: send `Authorization: Bearer <token>`",
                )
            })?;
        match config.tenant_of(token) {
            Some(t) if t == tenant => Ok(()),
            Some(_) => Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("this token does not give access to tenant `{tenant}`"),
            )),
            None => Err(ApiError::new(ErrorCode::Unauthorized, "unknown bearer token")),
        }
    }

    /// The tenant's repository, opened on first use under `--root` (blocking: call from
    /// a blocking task).
    pub(crate) fn tenant_blocking(&self, name: &str) -> Result<Arc<Tenant>, ApiError> {
        match &self.mode {
            Mode::Single(t) => Ok(t.clone()),
            Mode::Root { dir, open } => {
                check_tenant_name(name).map_err(|e| ApiError::not_found(e.to_string()))?;
                let mut open = open.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(t) = open.get(name) {
                    return Ok(t.clone());
                }
                let path = dir.join(name);
                if !path.is_dir() {
                    return Err(ApiError::not_found(format!("no tenant `{name}`")));
                }
                let tenant = Tenant::new(Repo::open(&path)?);
                open.insert(name.to_string(), tenant.clone());
                Ok(tenant)
            }
        }
    }

    /// Every repository opened so far.
    pub(crate) fn open_tenants(&self) -> Vec<Arc<Tenant>> {
        match &self.mode {
            Mode::Single(t) => vec![t.clone()],
            Mode::Root { open, .. } => open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .cloned()
                .collect(),
        }
    }
}
