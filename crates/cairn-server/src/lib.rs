//! # cairn-server
//!
//! An HTTP server over Cairn repositories, so that many processes share one repository
//! (a repository is opened by one process at a time; the server is that process). It is
//! what `cairn serve` runs.
//!
//! - **Routes** (under `/` for one repository, under `/t/{tenant}` with one repository
//!   per tenant): `POST /retrieve` (a spec, or an array of specs), `POST /import` (a JSON
//!   Lines body as one commit, `?expected_head=` for compare-and-swap), `GET
//!   /nodes/{id}`, `/nodes/{id}/edges`, `/nodes/{id}/history`, `/log`, `/diff`,
//!   `/branches` (and `POST` to create one), `POST /merge`, `POST /index`, `GET /fsck`,
//!   `GET /stats`, `POST /mcp` (the MCP tools over HTTP: one JSON-RPC message per request);
//!   and `GET /health`, `GET /metrics` (Prometheus text) at the root. Each
//!   answers what the matching `cairn … --json` command prints.
//! - **Errors** are typed: `{"error": {"code": "conflict", "message": "..."}}` with a
//!   stable [`ErrorCode`]; unknown fields and parameters are refused.
//! - **Concurrency**: reads run in parallel on tokio's blocking pool; writes to one
//!   repository are serialized and land by compare-and-swap on the branch head.
//! - **Auth**: bearer tokens per tenant, stored as blake3 hashes in a [`Config`]; without
//!   one the server only binds to a loopback address.
//!
//! ```
//! use cairn_server::{Repos, RunningServer, Server, ServerOptions};
//!
//! let repo = cairn::Repo::in_memory()?;
//! let server = Server::new(Repos::Single(repo), ServerOptions::default());
//! let running = RunningServer::start(server, "127.0.0.1:0".parse()?)?;
//! println!("listening on {}", running.url());
//! running.shutdown()?; // finishes requests in flight, then returns
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod config;
mod error;
mod extract;
mod metrics;
mod routes;
mod state;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State as Shared};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

pub use config::{check_tenant_name, hash_token, Config, ConfigError, TenantConfig};
pub use error::{ApiError, ErrorCode};
pub use metrics::Metrics;
pub use state::{Repos, ServerOptions, DEFAULT_TENANT};

use state::State;

/// Why a server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Binding or serving the socket failed.
    #[error("server I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A non-loopback address without a configuration (no authentication).
    #[error("refusing to serve {addr} without authentication: bind to a loopback address (127.0.0.1, the default) or give --config with tenant tokens")]
    Unauthenticated {
        /// The address asked for.
        addr: SocketAddr,
    },
}

/// A server over some [`Repos`]: build its [`Router`], or serve it on a listener.
pub struct Server {
    state: Arc<State>,
}

impl Server {
    /// A server over `repos` with `options`.
    pub fn new(repos: Repos, options: ServerOptions) -> Server {
        Server {
            state: Arc::new(State::new(repos, options)),
        }
    }

    /// The server's metrics (what `GET /metrics` renders).
    pub fn metrics(&self) -> &Metrics {
        &self.state.metrics
    }

    /// The axum router: every route, the body limit, the request timeout and the metrics
    /// around them.
    pub fn router(&self) -> Router {
        let state = self.state.clone();
        let repo = routes::repo_routes();
        let api = if state.multi_tenant() {
            Router::new().nest("/t/{tenant}", repo)
        } else {
            repo
        };
        api.route("/health", get(routes::read::health))
            .route("/metrics", get(metrics_text))
            .fallback(not_found)
            .method_not_allowed_fallback(method_not_allowed)
            .layer(middleware::from_fn_with_state(state.clone(), timeout))
            .layer(DefaultBodyLimit::max(state.options.max_body_bytes))
            .layer(middleware::from_fn_with_state(state.clone(), record))
            .with_state(state)
    }

    /// Serves on `listener` until `shutdown` completes, then stops accepting, finishes
    /// the requests in flight and waits for every write (a commit in flight lands).
    /// Without a [`Config`], refuses a listener on a non-loopback address.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let addr = listener.local_addr()?;
        if self.state.options.config.is_none() && !addr.ip().is_loopback() {
            return Err(ServerError::Unauthenticated { addr });
        }
        let router = self.router();
        axum::serve(listener, router).with_graceful_shutdown(shutdown).await?;
        // A request that timed out left its blocking task running: wait for the writes.
        let state = self.state.clone();
        let _ = tokio::task::spawn_blocking(move || {
            for t in state.open_tenants() {
                drop(t.write_lock());
            }
        })
        .await;
        Ok(())
    }
}

/// Completes on ctrl-c (SIGINT) or, on Unix, SIGTERM: the shutdown signal of `cairn serve`.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Binds `addr`, calls `on_listening` with the bound address, and serves until ctrl-c
/// or SIGTERM ([`shutdown_signal`]), then shuts down gracefully: what `cairn serve` does.
/// Blocks the calling thread.
pub fn serve_until_signal(
    server: Server,
    addr: SocketAddr,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), ServerError> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        if server.state.options.config.is_none() && !bound.ip().is_loopback() {
            return Err(ServerError::Unauthenticated { addr: bound });
        }
        on_listening(bound);
        server.serve(listener, shutdown_signal()).await
    })
}

/// A server running on its own thread and runtime (for tests, benches and embedding in
/// a synchronous program).
pub struct RunningServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ServerError>>>,
}

impl RunningServer {
    /// Binds `addr` (port 0: any free port) and serves `server` on a new thread.
    pub fn start(server: Server, addr: SocketAddr) -> Result<RunningServer, ServerError> {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind(addr))?;
        let addr = listener.local_addr()?;
        if server.state.options.config.is_none() && !addr.ip().is_loopback() {
            return Err(ServerError::Unauthenticated { addr });
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("cairn-server".into()).spawn(move || {
            runtime.block_on(server.serve(listener, async {
                let _ = stopped.await;
            }))
        })?;
        Ok(RunningServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops gracefully: requests in flight finish, then the thread ends.
    pub fn shutdown(mut self) -> Result<(), ServerError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<(), ServerError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(ServerError::Io(std::io::Error::other("server thread panicked")))),
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

async fn metrics_text(Shared(state): Shared<Arc<State>>) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}

async fn method_not_allowed(req: Request) -> ApiError {
    let method = req.method().clone();
    let path = req.uri().path();
    // The route within a tenant: `/t/{tenant}/retrieve` is `/retrieve`.
    let route = match path
        .strip_prefix("/t/")
        .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
    {
        Some(r) => r,
        None => path,
    };
    let allowed = match route {
        "/retrieve" | "/import" | "/merge" | "/index" => "POST",
        "/branches" => "GET or POST",
        _ => "GET",
    };
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{method} is not allowed on {path}: use {allowed}"),
    )
}

/// Answers 503 `timeout` past the request timeout.
async fn timeout(Shared(state): Shared<Arc<State>>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(state.options.request_timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError::new(
            ErrorCode::Timeout,
            format!(
                "the request took longer than {:?}; a write may still land (retry with expected_head)",
                state.options.request_timeout
            ),
        )
        .into_response(),
    }
}

/// Counts the request by route pattern, method and status, and times it.
async fn record(Shared(state): Shared<Arc<State>>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = req.method().to_string();
    let started = Instant::now();
    let response = next.run(req).await;
    state
        .metrics
        .record(&route, &method, response.status().as_u16(), started.elapsed());
    response
}
