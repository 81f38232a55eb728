//! [`OpenAiEmbedder`]: embeds texts through an OpenAI-compatible HTTP service
//! (`POST {base_url}/v1/embeddings`).
//!
//! The request is `{"model": MODEL, "input": [TEXT, ...]}`; the response's
//! `data[i].embedding` arrays, ordered by `data[i].index`, are the vectors. Texts go in
//! batches of at most [`OpenAiConfig::batch_size`]; a request that meets HTTP 429, a 5xx
//! status, a timeout or a connection error is retried after an exponential backoff
//! (`initial_backoff · 2^(attempt-1)`, capped at `max_backoff`, no jitter), at most
//! [`OpenAiConfig::max_retries`] times. Every vector is checked: the count, each index
//! once, one dimension for all (the configured one, else the first one seen), finite
//! components. A failure is a typed [`OpenAiError`].
//!
//! The API key is read from the environment variable named by
//! [`OpenAiConfig::api_key_env`] when the embedder is made, sent as
//! `Authorization: Bearer KEY`, and never written anywhere (nor printed by `Debug`). With
//! the variable unset or empty no `Authorization` header is sent (a local server may need
//! none).
//!
//! A remote model is not deterministic over time (the service may change it): Cairn's
//! repositories cache the vectors of query texts so a replayed query is byte-identical.

use std::io::Read;
use std::sync::OnceLock;
use std::time::Duration;

use cairn_retrieve::{EmbedError, Embedder};
use serde::Deserialize;

/// The default environment variable holding the API key.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// The most bytes of a response body read (a larger response is an error).
const MAX_RESPONSE_BYTES: u64 = 256 << 20;

/// The most characters of an error response's body kept in [`OpenAiError::Status`].
const BODY_EXCERPT_CHARS: usize = 500;

/// How an [`OpenAiEmbedder`] talks to its service.
///
/// ```
/// use cairn_embed::OpenAiConfig;
///
/// let config = OpenAiConfig::new("https://api.openai.com", "text-embedding-3-small").with_batch_size(32);
/// assert_eq!(config.api_key_env, "OPENAI_API_KEY");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// The service's base URL, `http://` or `https://`, without `/v1/embeddings` (a
    /// trailing `/` is ignored).
    pub base_url: String,
    /// The service's model name, sent as `model`.
    pub model: String,
    /// The NAME of the environment variable holding the API key (default
    /// [`DEFAULT_API_KEY_ENV`]). The key itself is never stored.
    pub api_key_env: String,
    /// The expected dimension; `None`: the first vector received sets it.
    pub dim: Option<usize>,
    /// The most texts per request (default 64, at least 1).
    pub batch_size: usize,
    /// The time limit of one request, connecting included (default 60 s).
    pub timeout: Duration,
    /// How many times a failed request is retried (default 4; 0: never).
    pub max_retries: u32,
    /// The wait before the first retry, doubled for each further one (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest wait between two tries (default 8 s).
    pub max_backoff: Duration,
}

impl OpenAiConfig {
    /// A configuration with the defaults for everything but the URL and the model.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: DEFAULT_API_KEY_ENV.to_string(),
            dim: None,
            batch_size: 64,
            timeout: Duration::from_secs(60),
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }

    /// Reads the API key from the environment variable `name` instead.
    pub fn with_api_key_env(mut self, name: impl Into<String>) -> OpenAiConfig {
        self.api_key_env = name.into();
        self
    }

    /// Expects vectors of `dim` components.
    pub fn with_dim(mut self, dim: usize) -> OpenAiConfig {
        self.dim = Some(dim);
        self
    }

    /// Sends at most `n` texts per request.
    pub fn with_batch_size(mut self, n: usize) -> OpenAiConfig {
        self.batch_size = n;
        self
    }

    /// Gives each request at most `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> OpenAiConfig {
        self.timeout = timeout;
        self
    }

    /// Retries a failed request at most `n` times, waiting `initial`, `2·initial`, …
    /// (at most `max`) before each retry.
    pub fn with_retries(mut self, n: u32, initial: Duration, max: Duration) -> OpenAiConfig {
        self.max_retries = n;
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// The endpoint: `{base_url}/v1/embeddings`.
    pub fn endpoint(&self) -> String {
        format!("{}/v1/embeddings", self.base_url.trim_end_matches('/'))
    }

    /// Checks every setting.
    pub fn check(&self) -> Result<(), OpenAiError> {
        let bad = |field: &'static str, detail: String| Err(OpenAiError::InvalidConfig { field, detail });
        let url = self.base_url.trim();
        let host = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
        if host.is_none_or(|h| h.trim_end_matches('/').is_empty()) {
            return bad(
                "base_url",
                format!("`{}` is not an http:// or https:// URL", self.base_url),
            );
        }
        if url != self.base_url {
            return bad("base_url", format!("`{}` has surrounding spaces", self.base_url));
        }
        if self.model.trim().is_empty() {
            return bad("model", "the model name is empty".into());
        }
        if self.api_key_env.is_empty() || self.api_key_env.contains(['=', '\0']) {
            return bad(
                "api_key_env",
                format!("`{}` is not an environment variable name", self.api_key_env),
            );
        }
        if self.batch_size == 0 {
            return bad("batch_size", "must be at least 1".into());
        }
        if self.dim == Some(0) {
            return bad("dim", "must be at least 1".into());
        }
        if self.timeout.is_zero() {
            return bad("timeout", "must be more than zero".into());
        }
        Ok(())
    }
}

/// Why an [`OpenAiEmbedder`] could not embed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenAiError {
    /// A setting of the [`OpenAiConfig`] is unusable.
    #[error("invalid embedder setting `{field}`: {detail}")]
    InvalidConfig {
        /// The setting.
        field: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// The service answered with an error status (after the retries, for 429 and 5xx).
    #[error("{url} answered HTTP {status} after {attempts} attempt(s): {body}{hint}")]
    Status {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the response body (at most 500 characters).
        body: String,
        /// How many requests were sent.
        attempts: u32,
        /// A hint (e.g. that the API key variable is unset), or empty.
        hint: String,
    },
    /// No answer within the timeout (after the retries).
    #[error("{url} did not answer within {timeout_ms} ms ({attempts} attempt(s))")]
    Timeout {
        /// The endpoint.
        url: String,
        /// The timeout of one request, ms.
        timeout_ms: u64,
        /// How many requests were sent.
        attempts: u32,
    },
    /// The service could not be reached (after the retries).
    #[error("cannot reach {url} ({attempts} attempt(s)): {detail}")]
    Connection {
        /// The endpoint.
        url: String,
        /// The transport's message.
        detail: String,
        /// How many requests were sent.
        attempts: u32,
    },
    /// The response is not the JSON expected.
    #[error("the embeddings response is not valid: {detail}")]
    BadJson {
        /// What is wrong.
        detail: String,
    },
    /// The response holds another number of vectors than texts sent, or an index twice
    /// or out of range.
    #[error("the embeddings response holds {got} vector(s) for {expected} text(s){detail}")]
    WrongCount {
        /// Texts sent.
        expected: usize,
        /// Vectors received.
        got: usize,
        /// More detail (a repeated or out-of-range index), or empty.
        detail: String,
    },
    /// A vector has another dimension than expected.
    #[error("vector {input} has {got} dimensions, expected {expected}")]
    WrongDimension {
        /// Position of the text in the call.
        input: usize,
        /// The expected dimension.
        expected: usize,
        /// The vector's length.
        got: usize,
    },
    /// A vector has a component that is not a finite `f32` (too large in magnitude).
    #[error("vector {input} has a non-finite component at position {component}")]
    NonFinite {
        /// Position of the text in the call.
        input: usize,
        /// Position of the component.
        component: usize,
    },
}

/// An [`Embedder`] over an OpenAI-compatible embeddings endpoint. Blocking; safe to share
/// between threads.
///
/// ```no_run
/// use cairn_embed::{OpenAiConfig, OpenAiEmbedder};
///
/// let embedder = OpenAiEmbedder::new(OpenAiConfig::new("https://api.openai.com", "text-embedding-3-small"))?;
/// let vectors = embedder.embed_texts(&["how wings stall", "rocket nozzles"])?;
/// assert_eq!(vectors.len(), 2);
/// # Ok::<(), cairn_embed::OpenAiError>(())
/// ```
pub struct OpenAiEmbedder {
    config: OpenAiConfig,
    url: String,
    api_key: Option<String>,
    agent: ureq::Agent,
    /// The dimension: configured, or set by the first vector received.
    dim: OnceLock<usize>,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("config", &self.config)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set)"))
            .finish()
    }
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    /// Read as `f64` so a number out of `f32` range is reported as such (it becomes
    /// infinite when narrowed), not as malformed JSON.
    embedding: Vec<f64>,
}

impl OpenAiEmbedder {
    /// An embedder for `config` (checked), reading the API key from its variable now.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiEmbedder, OpenAiError> {
        config.check()?;
        let api_key = std::env::var(&config.api_key_env).ok().filter(|k| !k.is_empty());
        let agent = ureq::AgentBuilder::new()
            .timeout(config.timeout)
            .timeout_connect(config.timeout)
            .build();
        let dim = OnceLock::new();
        if let Some(d) = config.dim {
            let _ = dim.set(d);
        }
        Ok(OpenAiEmbedder {
            url: config.endpoint(),
            config,
            api_key,
            agent,
            dim,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The dimension: the configured one, else the one of the first vector received
    /// (`None` before any).
    pub fn dim(&self) -> Option<usize> {
        self.dim.get().copied()
    }

    /// The vectors of `texts`, in order: one request per [`OpenAiConfig::batch_size`]
    /// texts.
    pub fn embed_texts(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, OpenAiError> {
        let mut out = Vec::with_capacity(texts.len());
        for (b, batch) in texts.chunks(self.config.batch_size).enumerate() {
            let first = b * self.config.batch_size;
            out.extend(self.request(batch, first)?);
        }
        Ok(out)
    }

    /// One request for `texts` (positions in the call start at `first`).
    fn request(&self, texts: &[&str], first: usize) -> Result<Vec<Vec<f32>>, OpenAiError> {
        let body = serde_json::json!({ "model": self.config.model, "input": texts }).to_string();
        let text = self.post(&body)?;
        let response: Response = serde_json::from_str(&text).map_err(|e| OpenAiError::BadJson {
            detail: format!("{e} (body starts: {})", excerpt(&text)),
        })?;
        let got = response.data.len();
        let wrong = |detail: String| OpenAiError::WrongCount {
            expected: texts.len(),
            got,
            detail,
        };
        if got != texts.len() {
            return Err(wrong(String::new()));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in response.data {
            let slot = slots
                .get_mut(item.index)
                .ok_or_else(|| wrong(format!(": index {} is out of range", item.index)))?;
            if slot.is_some() {
                return Err(wrong(format!(": index {} appears twice", item.index)));
            }
            *slot = Some(item.embedding.iter().map(|&x| x as f32).collect());
        }
        let vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
        for (i, v) in vectors.iter().enumerate() {
            let input = first + i;
            let expected = *self.dim.get_or_init(|| v.len());
            if v.len() != expected || v.is_empty() {
                return Err(OpenAiError::WrongDimension {
                    input,
                    expected,
                    got: v.len(),
                });
            }
            if let Some(component) = v.iter().position(|x| !x.is_finite()) {
                return Err(OpenAiError::NonFinite { input, component });
            }
        }
        Ok(vectors)
    }

    /// POSTs `body`, retrying as configured; the response body of a success.
    fn post(&self, body: &str) -> Result<String, OpenAiError> {
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let mut req = self.agent.post(&self.url).set("Content-Type", "application/json");
            if let Some(key) = &self.api_key {
                req = req.set("Authorization", &format!("Bearer {key}"));
            }
            let failure = match req.send_string(body) {
                Ok(resp) => match read_body(resp) {
                    Ok(text) => return Ok(text),
                    Err(e) => self.transport_error(&e, attempts),
                },
                Err(ureq::Error::Status(status, resp)) => {
                    let text = read_body(resp).unwrap_or_default();
                    let hint = if matches!(status, 401 | 403) && self.api_key.is_none() {
                        format!(
                            " (no API key was sent: the environment variable {} is unset)",
                            self.config.api_key_env
                        )
                    } else {
                        String::new()
                    };
                    let err = OpenAiError::Status {
                        url: self.url.clone(),
                        status,
                        body: excerpt(&text),
                        attempts,
                        hint,
                    };
                    if !(status == 429 || (500..600).contains(&status)) {
                        return Err(err);
                    }
                    err
                }
                Err(ureq::Error::Transport(t)) => {
                    use ureq::ErrorKind as K;
                    let retryable = matches!(t.kind(), K::ConnectionFailed | K::Io | K::Dns);
                    let err = self.transport_error(&t, attempts);
                    if !retryable {
                        return Err(err);
                    }
                    err
                }
            };
            if attempts > self.config.max_retries {
                return Err(failure);
            }
            std::thread::sleep(self.backoff(attempts));
        }
    }

    /// The wait after failed attempt number `attempts` (1-based).
    fn backoff(&self, attempts: u32) -> Duration {
        let factor = 1u32.checked_shl(attempts.saturating_sub(1)).unwrap_or(u32::MAX);
        self.config
            .initial_backoff
            .checked_mul(factor)
            .unwrap_or(self.config.max_backoff)
            .min(self.config.max_backoff)
    }

    fn transport_error(&self, e: &(dyn std::error::Error + 'static), attempts: u32) -> OpenAiError {
        if is_timeout(e) {
            OpenAiError::Timeout {
                url: self.url.clone(),
                timeout_ms: u64::try_from(self.config.timeout.as_millis()).unwrap_or(u64::MAX),
                attempts,
            }
        } else {
            OpenAiError::Connection {
                url: self.url.clone(),
                detail: e.to_string(),
                attempts,
            }
        }
    }
}

/// True if `e` or one of its sources is an I/O timeout.
fn is_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if matches!(io.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) {
                return true;
            }
        }
        cur = err.source();
    }
    false
}

/// The body of `resp` as text, at most [`MAX_RESPONSE_BYTES`].
fn read_body(resp: ureq::Response) -> Result<String, std::io::Error> {
    let mut bytes = Vec::new();
    resp.into_reader()
        .take(MAX_RESPONSE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_RESPONSE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the response is larger than {MAX_RESPONSE_BYTES} bytes"),
        ));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The first [`BODY_EXCERPT_CHARS`] characters of `text`, marked if cut.
fn excerpt(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(BODY_EXCERPT_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

impl Embedder for OpenAiEmbedder {
    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed_batch(&[text])?;
        Ok(v.pop().unwrap_or_default())
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_texts(texts).map_err(|e| EmbedError::new(e.to_string()))
    }
}
