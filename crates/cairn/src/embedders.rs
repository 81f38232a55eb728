//! Embedders a repository remembers: which [`Embedder`] serves which dense model name,
//! so a retrieval can be asked in words and an import can fill in vectors.
//!
//! A repository keeps one configuration per dense model name in one ref
//! (`meta/embedders`, a JSON object; `storage-format.md` §5.1): a local MiniLM model
//! directory ([`EmbedderConfig::Local`]) or an OpenAI-compatible service
//! ([`EmbedderConfig::OpenAi`], whose API key is read from an environment variable whose
//! *name* is stored, never the key).
//!
//! - Every retrieval over a repository — [`Repo::retrieve`], a spec run with
//!   [`Retrieval::from_spec`], and so the CLI, the server, MCP and Python alike — embeds
//!   the query text by itself when the repository has an embedder for a dense model it
//!   holds vectors of (the first such name in name order; the spec's `embedder` names
//!   another), unless the spec gives a vector or says `"embed": false`
//!   ([`Retrieval::no_embed`]); the lane report says so
//!   ([`LaneReport::embedded`](cairn_retrieve::LaneReport::embedded)). The policy lives
//!   in one place, the repository's
//!   [`RetrievalSource::query_embedder`](cairn_retrieve::RetrievalSource::query_embedder).
//! - [`Repo::embed_nodes`] gives every node that has text but no vector of the model one,
//!   in batches, in one commit.
//! - Query vectors of a remote service are cached in the repository by (model name,
//!   blake3 of the text) ([`QueryEmbedder`]), so a replayed query is byte-identical even
//!   if the service changes. The cache is not derived data: it cannot be rebuilt
//!   identically, so it lives in the ref space (`embed-cache/<name>/<hex>`) and `gc`
//!   leaves it alone. A local MiniLM is deterministic and uses no cache.
//!
//! ```
//! use cairn::{EmbedderConfig, OpenAiSettings, Repo};
//!
//! let repo = Repo::in_memory()?;
//! let settings = OpenAiSettings::new("http://127.0.0.1:8080", "text-embedding-3-small").with_dim(1536);
//! repo.set_embedder("oa", EmbedderConfig::OpenAi(settings))?;
//! assert_eq!(repo.embedders()?.len(), 1);
//! assert!(repo.remove_embedder("oa")?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cairn_core::{Hash, Node};
use cairn_embed::{MiniLm, OpenAiConfig, OpenAiEmbedder};
use cairn_retrieve::{EmbedError, Embedder, Retrieval};
use cairn_store::{CasOutcome, StoreError};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::repo::Repo;

/// The ref holding every embedder configuration: a JSON object, name → configuration.
const CONFIG_REF: &str = "meta/embedders";
/// Ref-name prefix of the query-vector cache.
const CACHE_PREFIX: &str = "embed-cache/";
/// The longest embedder name (so a cache ref name stays within 127 bytes).
pub const MAX_EMBEDDER_NAME: usize = 48;
/// The default number of texts per embedding call of [`Repo::embed_nodes`].
pub const DEFAULT_EMBED_BATCH: usize = 32;

/// How a repository embeds text for one dense model name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EmbedderConfig {
    /// A local MiniLM (BERT) model directory ([`cairn_embed::MiniLm`]); deterministic,
    /// no cache.
    Local {
        /// The model directory (`config.json`, `tokenizer.json`, `model.safetensors`).
        dir: PathBuf,
    },
    /// An OpenAI-compatible HTTP service ([`cairn_embed::OpenAiEmbedder`]); its query
    /// vectors are cached in the repository.
    #[serde(rename = "openai")]
    OpenAi(OpenAiSettings),
}

/// The stored settings of an OpenAI-compatible embedder (no secret: the key stays in the
/// environment variable named by `api_key_env`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenAiSettings {
    /// Base URL, e.g. `https://api.openai.com` (the request goes to `/v1/embeddings`).
    pub base_url: String,
    /// The service's model name.
    pub model: String,
    /// The NAME of the environment variable holding the API key.
    pub api_key_env: String,
    /// The dimension expected (`None`: the repository's registered one, else the first
    /// vector's).
    pub dim: Option<usize>,
    /// The most texts per request.
    pub batch_size: usize,
    /// The time limit of one request, ms.
    pub timeout_ms: u64,
    /// How many times a failed request is retried (429, 5xx, timeouts, connection errors).
    pub max_retries: u32,
}

impl OpenAiSettings {
    /// Settings with the defaults of [`OpenAiConfig::new`].
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiSettings {
        let c = OpenAiConfig::new(base_url, model);
        OpenAiSettings {
            base_url: c.base_url,
            model: c.model,
            api_key_env: c.api_key_env,
            dim: c.dim,
            batch_size: c.batch_size,
            timeout_ms: u64::try_from(c.timeout.as_millis()).unwrap_or(u64::MAX),
            max_retries: c.max_retries,
        }
    }

    /// Reads the API key from the environment variable `name`.
    pub fn with_api_key_env(mut self, name: impl Into<String>) -> OpenAiSettings {
        self.api_key_env = name.into();
        self
    }

    /// Expects `dim` components.
    pub fn with_dim(mut self, dim: usize) -> OpenAiSettings {
        self.dim = Some(dim);
        self
    }

    /// Sends at most `n` texts per request.
    pub fn with_batch_size(mut self, n: usize) -> OpenAiSettings {
        self.batch_size = n;
        self
    }

    /// Gives each request at most `ms` milliseconds.
    pub fn with_timeout_ms(mut self, ms: u64) -> OpenAiSettings {
        self.timeout_ms = ms;
        self
    }

    /// Retries a failed request at most `n` times.
    pub fn with_max_retries(mut self, n: u32) -> OpenAiSettings {
        self.max_retries = n;
        self
    }

    /// The client configuration (with `dim` if the settings have none).
    fn client_config(&self, dim: Option<usize>) -> OpenAiConfig {
        let mut c = OpenAiConfig::new(&self.base_url, &self.model)
            .with_api_key_env(&self.api_key_env)
            .with_batch_size(self.batch_size)
            .with_timeout(Duration::from_millis(self.timeout_ms));
        c.max_retries = self.max_retries;
        c.dim = self.dim.or(dim);
        c
    }
}

/// Why an embedder call failed. Nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedderError {
    /// An embedder name that cannot be used.
    #[error("invalid embedder name `{name}`: {detail}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why.
        detail: String,
    },
    /// No embedder is configured under this name.
    #[error("no embedder named `{0}` (see `cairn embedder list`)")]
    Unknown(String),
    /// A configuration that cannot be used (bad URL, unreadable model directory, …).
    #[error("embedder `{name}`: {detail}")]
    Config {
        /// The embedder name.
        name: String,
        /// Why.
        detail: String,
    },
    /// The embedder's dimension differs from the one the repository registered for the
    /// model.
    #[error(
        "embedder `{name}` makes {got}-dimensional vectors, but the repository's `{name}` vectors have {registered}"
    )]
    DimensionMismatch {
        /// The embedder (= dense model) name.
        name: String,
        /// The embedder's dimension.
        got: usize,
        /// The repository's.
        registered: usize,
    },
    /// The embedder failed on a text.
    #[error("embedder `{name}` failed: {detail}")]
    Embed {
        /// The embedder name.
        name: String,
        /// The embedder's message.
        detail: String,
    },
    /// A stored configuration is not readable.
    #[error("the stored configuration of embedder `{name}` is damaged: {detail}")]
    Damaged {
        /// The embedder name.
        name: String,
        /// What is wrong.
        detail: String,
    },
    /// The repository failed.
    #[error(transparent)]
    Repo(#[from] Error),
}

impl From<StoreError> for EmbedderError {
    fn from(e: StoreError) -> EmbedderError {
        EmbedderError::Repo(e.into())
    }
}

/// Checks an embedder name: 1..=48 bytes of ASCII letters, digits and `. _ -`, not
/// starting with `.` or `-`.
fn check_name(name: &str) -> Result<(), EmbedderError> {
    let bad = |detail: &str| {
        Err(EmbedderError::InvalidName {
            name: name.into(),
            detail: detail.into(),
        })
    };
    if name.is_empty() || name.len() > MAX_EMBEDDER_NAME {
        return bad("must be 1..=48 bytes");
    }
    if !name.bytes().all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c)) {
        return bad("only ASCII letters, digits and . _ - are allowed");
    }
    if name.starts_with(['.', '-']) {
        return bad("must not start with . or -");
    }
    Ok(())
}

fn cache_ref(name: &str, text: &str) -> String {
    format!("{CACHE_PREFIX}{name}/{}", Hash::of(text.as_bytes()).to_hex())
}

/// A cache value: `u32le(dim) ‖ dim × f32le`.
fn encode_vector(v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 4 * v.len());
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// Decodes a cache value, checking its length, its dimension against `dim` (if known) and
/// that every component is finite.
fn decode_vector(bytes: &[u8], dim: Option<usize>) -> Result<Vec<f32>, String> {
    let head: [u8; 4] = bytes
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("{} bytes, shorter than its header", bytes.len()))?;
    let n = u32::from_le_bytes(head) as usize;
    if n == 0 || bytes.len() != 4 + 4 * n {
        return Err(format!("{} bytes for a {n}-dimensional vector", bytes.len()));
    }
    if let Some(d) = dim.filter(|d| *d != n) {
        return Err(format!("{n} dimensions, the model has {d}"));
    }
    let v: Vec<f32> = bytes[4..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if v.iter().any(|x| !x.is_finite()) {
        return Err("a component is not finite".into());
    }
    Ok(v)
}

/// Local models loaded in this process, by directory: loading reads ~90 MB, so every
/// repository and retrieval shares one copy.
fn loaded_models() -> &'static Mutex<HashMap<PathBuf, Arc<MiniLm>>> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<MiniLm>>>> = OnceLock::new();
    LOADED.get_or_init(Mutex::default)
}

fn load_local(name: &str, dir: &std::path::Path) -> Result<Arc<MiniLm>, EmbedderError> {
    let mut loaded = loaded_models().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = loaded.get(dir) {
        return Ok(Arc::clone(m));
    }
    let model = MiniLm::load(dir).map_err(|e| EmbedderError::Config {
        name: name.into(),
        detail: format!("cannot load the model in {}: {}", dir.display(), e.message),
    })?;
    let model = Arc::new(model);
    loaded.insert(dir.to_path_buf(), Arc::clone(&model));
    Ok(model)
}

/// Builds the embedder a configuration describes (`dim`: the repository's registered
/// dimension for the model, if any). Shared by query embedding, [`Repo::embed_nodes`] and
/// embedding on write (`embed_on_write.rs`).
pub(crate) fn build_embedder(
    name: &str,
    config: &EmbedderConfig,
    dim: Option<usize>,
) -> Result<Arc<dyn Embedder>, EmbedderError> {
    match config {
        EmbedderConfig::Local { dir } => {
            let model = load_local(name, dir)?;
            if let Some(registered) = dim.filter(|d| *d != model.dim()) {
                return Err(EmbedderError::DimensionMismatch {
                    name: name.into(),
                    got: model.dim(),
                    registered,
                });
            }
            Ok(model)
        }
        EmbedderConfig::OpenAi(s) => {
            let e = OpenAiEmbedder::new(s.client_config(dim)).map_err(|e| EmbedderError::Config {
                name: name.into(),
                detail: e.to_string(),
            })?;
            Ok(Arc::new(e))
        }
    }
}

impl Repo {
    /// Remembers that `config` embeds text for dense model `name` (replacing an earlier
    /// configuration of that name; a changed configuration drops the name's cached query
    /// vectors). Checks the configuration first: a local model is loaded, and its
    /// dimension, or an OpenAI configuration's `dim`, must equal the repository's
    /// registered dimension for `name` ([`EmbedderError::DimensionMismatch`]). Sends no
    /// request to a service.
    pub fn set_embedder(&self, name: &str, config: EmbedderConfig) -> Result<(), EmbedderError> {
        check_name(name)?;
        let registered = self.dense_dim(name)?;
        match &config {
            EmbedderConfig::Local { .. } => {
                build_embedder(name, &config, registered)?;
            }
            EmbedderConfig::OpenAi(s) => {
                s.client_config(None).check().map_err(|e| EmbedderError::Config {
                    name: name.into(),
                    detail: e.to_string(),
                })?;
                if let (Some(got), Some(registered)) = (s.dim, registered) {
                    if got != registered {
                        return Err(EmbedderError::DimensionMismatch {
                            name: name.into(),
                            got,
                            registered,
                        });
                    }
                }
            }
        }
        let value = serde_json::to_value(&config).map_err(|e| EmbedderError::Config {
            name: name.into(),
            detail: format!("cannot be stored: {e}"),
        })?;
        loop {
            let (current, mut map) = self.read_embedders()?;
            let replaced = match map.get(name) {
                Some(old) if *old == value => return Ok(()),
                Some(_) => true,
                None => false,
            };
            map.insert(name.to_string(), value.clone());
            if self.write_embedders(current.as_deref(), &map)? {
                if replaced {
                    self.drop_embed_cache(name)?;
                }
                return Ok(());
            }
        }
    }

    /// The stored map of configurations (raw JSON per name) and the bytes it was read
    /// from.
    #[allow(clippy::type_complexity)]
    fn read_embedders(&self) -> Result<(Option<Vec<u8>>, BTreeMap<String, serde_json::Value>), EmbedderError> {
        let Some(bytes) = self.store().get_ref(CONFIG_REF)? else {
            return Ok((None, BTreeMap::new()));
        };
        let map = serde_json::from_slice(&bytes).map_err(|e| EmbedderError::Damaged {
            name: "(all)".into(),
            detail: format!("{CONFIG_REF} is not a JSON object of configurations: {e}"),
        })?;
        Ok((Some(bytes), map))
    }

    /// Replaces the map if it still holds `expected`; false if another writer came first.
    fn write_embedders(
        &self,
        expected: Option<&[u8]>,
        map: &BTreeMap<String, serde_json::Value>,
    ) -> Result<bool, EmbedderError> {
        let new = if map.is_empty() {
            None
        } else {
            Some(serde_json::to_vec(map).map_err(|e| EmbedderError::Config {
                name: "(all)".into(),
                detail: format!("cannot be stored: {e}"),
            })?)
        };
        Ok(matches!(
            self.store().cas_ref(CONFIG_REF, expected, new.as_deref())?,
            CasOutcome::Swapped
        ))
    }

    /// The configured embedders, in name order. One ref read: cheap enough for every
    /// [`Repo::retrieve`].
    pub fn embedders(&self) -> Result<Vec<(String, EmbedderConfig)>, EmbedderError> {
        let (_, map) = self.read_embedders()?;
        map.into_iter()
            .map(|(name, value)| {
                let config = parse_config(&name, value)?;
                Ok((name, config))
            })
            .collect()
    }

    /// The embedder configured for `name`, if any.
    pub fn embedder(&self, name: &str) -> Result<Option<EmbedderConfig>, EmbedderError> {
        check_name(name)?;
        let (_, mut map) = self.read_embedders()?;
        map.remove(name).map(|v| parse_config(name, v)).transpose()
    }

    /// Forgets the embedder of `name` and its cached query vectors; false if there was
    /// none. The vectors already committed stay.
    pub fn remove_embedder(&self, name: &str) -> Result<bool, EmbedderError> {
        check_name(name)?;
        loop {
            let (current, mut map) = self.read_embedders()?;
            if map.remove(name).is_none() {
                return Ok(false);
            }
            if self.write_embedders(current.as_deref(), &map)? {
                self.drop_embed_cache(name)?;
                return Ok(true);
            }
        }
    }

    /// Deletes every cached query vector of `name`.
    fn drop_embed_cache(&self, name: &str) -> Result<(), EmbedderError> {
        let prefix = format!("{CACHE_PREFIX}{name}/");
        for (key, value) in self.store().list_refs(&prefix)? {
            // A concurrent writer may have replaced it: that one is left.
            self.store().cas_ref(&key, Some(&value), None)?;
        }
        Ok(())
    }

    /// The query embedder of `name`: it embeds with the configured embedder, and for a
    /// remote service caches each text's vector in the repository (see [`QueryEmbedder`]).
    /// Builds nothing yet (a local model loads on the first text).
    pub fn query_embedder(&self, name: &str) -> Result<QueryEmbedder, EmbedderError> {
        let config = self
            .embedder(name)?
            .ok_or_else(|| EmbedderError::Unknown(name.into()))?;
        Ok(self.query_embedder_with(name, config))
    }

    /// [`Repo::query_embedder`] of a configuration already read.
    pub(crate) fn query_embedder_with(&self, name: &str, config: EmbedderConfig) -> QueryEmbedder {
        // One built embedder per (name, configuration) and repository handle.
        let built = {
            let mut cache = self.inner.built_embedders.lock();
            match cache.get(name) {
                Some((c, slot)) if *c == config => Arc::clone(slot),
                _ => {
                    let slot = BuiltSlot::default();
                    cache.insert(name.to_string(), (config.clone(), Arc::clone(&slot)));
                    slot
                }
            }
        };
        QueryEmbedder {
            repo: self.clone(),
            name: name.into(),
            config,
            built,
            warnings: Arc::default(),
        }
    }

    /// The embedder [`Repo::retrieve`] uses by itself: the first configured name (in name
    /// order) whose dense model has a registered dimension (vectors were committed).
    pub fn default_query_embedder(&self) -> Result<Option<String>, EmbedderError> {
        Ok(self.default_embedder()?.map(|(name, _)| name))
    }

    /// [`Repo::default_query_embedder`] with its configuration (one read of them all).
    pub(crate) fn default_embedder(&self) -> Result<Option<(String, EmbedderConfig)>, EmbedderError> {
        for (name, config) in self.embedders()? {
            if self.dense_dim(&name)?.is_some() {
                return Ok(Some((name, config)));
            }
        }
        Ok(None)
    }

    /// [`Repo::retrieve`] without the automatic query embedding
    /// ([`Retrieval::no_embed`], spec `"embed": false`): `text` drives the BM25 lane only.
    pub fn retrieve_without_embedder(&self) -> Retrieval<&Repo> {
        Retrieval::new(self).no_embed()
    }

    /// Gives every node of the current head that has text but no vector of `name` one,
    /// embedded by the configured embedder `batch_size` texts at a time, and commits them
    /// all with `message` (no commit if there is nothing to embed). `progress` is called
    /// with (nodes done, nodes to do) after each batch (and the observer of
    /// [`Repo::set_progress`] with [`Step::Embed`](crate::Step::Embed)). On any failure nothing is
    /// committed. The vectors' dimension must be the repository's for `name`
    /// ([`EmbedderError::DimensionMismatch`]). Uses no cache.
    ///
    /// ```no_run
    /// # let repo = cairn::Repo::in_memory()?;
    /// let report = repo.embed_nodes("minilm", 32, "embed with minilm", &mut |done, total| {
    ///     eprintln!("{done}/{total}");
    /// })?;
    /// println!("{} nodes embedded", report.embedded);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn embed_nodes(
        &self,
        name: &str,
        batch_size: usize,
        message: &str,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<EmbedNodesReport, EmbedderError> {
        let config = self
            .embedder(name)?
            .ok_or_else(|| EmbedderError::Unknown(name.into()))?;
        if batch_size == 0 {
            return Err(EmbedderError::Config {
                name: name.into(),
                detail: "the batch size must be at least 1".into(),
            });
        }
        let Some(head) = self.head()? else {
            return Ok(EmbedNodesReport {
                commit: None,
                embedded: 0,
            });
        };
        let mut todo: Vec<Node> = Vec::new();
        for node in self.iter_nodes_at(&head)? {
            let node = node?;
            if !node.text.is_empty() && !node.embeddings.contains_key(name) {
                todo.push(node);
            }
        }
        if todo.is_empty() {
            return Ok(EmbedNodesReport {
                commit: None,
                embedded: 0,
            });
        }
        let mut dim = self.dense_dim(name)?;
        let embedder = build_embedder(name, &config, dim)?;
        let total = todo.len();
        progress(0, total);
        let meter = self.meter(crate::progress::Step::Embed, Some(total as u64));
        let mut tx = self.transaction()?;
        let mut done = 0;
        for chunk in todo.chunks(batch_size) {
            let texts: Vec<&str> = chunk.iter().map(|n| n.text.as_str()).collect();
            let vectors = embedder.embed_batch(&texts).map_err(|e| EmbedderError::Embed {
                name: name.into(),
                detail: e.message,
            })?;
            if vectors.len() != chunk.len() {
                return Err(EmbedderError::Embed {
                    name: name.into(),
                    detail: format!("{} vectors for {} texts", vectors.len(), chunk.len()),
                });
            }
            for (node, v) in chunk.iter().zip(vectors) {
                let registered = *dim.get_or_insert(v.len());
                if v.len() != registered {
                    return Err(EmbedderError::DimensionMismatch {
                        name: name.into(),
                        got: v.len(),
                        registered,
                    });
                }
                let mut node = node.clone();
                node.embeddings.insert(name.to_string(), v);
                tx.put_node(node)?;
            }
            done += chunk.len();
            progress(done, total);
            meter.add(chunk.len() as u64);
        }
        let commit = tx.commit(message)?;
        Ok(EmbedNodesReport {
            commit: Some(commit),
            embedded: total,
        })
    }
}

fn parse_config(name: &str, value: serde_json::Value) -> Result<EmbedderConfig, EmbedderError> {
    serde_json::from_value(value).map_err(|e| EmbedderError::Damaged {
        name: name.into(),
        detail: e.to_string(),
    })
}

/// What [`Repo::embed_nodes`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmbedNodesReport {
    /// The commit holding the new vectors (`None`: nothing to embed).
    pub commit: Option<cairn_core::CommitId>,
    /// How many nodes got a vector.
    pub embedded: usize,
}

/// The query embedder of one configured name ([`Repo::query_embedder`]): an
/// [`Embedder`] for a retrieval.
///
/// For a remote service ([`EmbedderConfig::OpenAi`]) each text's vector is cached in the
/// repository under (name, blake3 of the text): the first embedding of a text is stored
/// and every later one returns the stored bytes, so a replayed query is byte-identical
/// even if the service changed. A cache entry that is damaged (its checksum, its length,
/// its dimension, a non-finite component) is never returned: the text is embedded again,
/// the entry replaced, and a warning kept ([`QueryEmbedder::warnings`]). A local model
/// is deterministic and uses no cache.
///
/// Clones share the loaded embedder and the warnings.
#[derive(Clone)]
pub struct QueryEmbedder {
    repo: Repo,
    name: String,
    config: EmbedderConfig,
    built: BuiltSlot,
    warnings: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for QueryEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryEmbedder")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish()
    }
}

impl QueryEmbedder {
    /// The name (= dense model) it embeds for.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The warnings so far (damaged cache entries met and replaced), oldest first.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The warnings so far, emptying the list (shared by the clones).
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn warn(&self, message: String) {
        self.warnings.lock().unwrap_or_else(|e| e.into_inner()).push(message);
    }

    fn embedder(&self, dim: Option<usize>) -> Result<Arc<dyn Embedder>, EmbedderError> {
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = built.as_ref() {
            return Ok(Arc::clone(e));
        }
        let e = build_embedder(&self.name, &self.config, dim)?;
        *built = Some(Arc::clone(&e));
        Ok(e)
    }

    /// Embeds one text without the cache, checking dimension and finiteness.
    fn fetch(&self, text: &str, dim: Option<usize>) -> Result<Vec<f32>, EmbedderError> {
        let v = self.embedder(dim)?.embed(text).map_err(|e| EmbedderError::Embed {
            name: self.name.clone(),
            detail: e.message,
        })?;
        if let Some(registered) = dim.filter(|d| *d != v.len()) {
            return Err(EmbedderError::DimensionMismatch {
                name: self.name.clone(),
                got: v.len(),
                registered,
            });
        }
        if v.is_empty() || v.iter().any(|x| !x.is_finite()) {
            return Err(EmbedderError::Embed {
                name: self.name.clone(),
                detail: "the vector is empty or has a non-finite component".into(),
            });
        }
        Ok(v)
    }

    /// The vector of `text`, through the cache for a remote service.
    pub fn embed_text(&self, text: &str) -> Result<Vec<f32>, EmbedderError> {
        let dim = self.repo.dense_dim(&self.name)?;
        if matches!(self.config, EmbedderConfig::Local { .. }) {
            return self.fetch(text, dim);
        }
        let store = self.repo.store();
        let key = cache_ref(&self.name, text);
        let mut expected: Option<Vec<u8>> = None;
        match store.get_ref(&key) {
            Ok(Some(bytes)) => match decode_vector(&bytes, dim) {
                Ok(v) => return Ok(v),
                Err(detail) => {
                    self.warn(format!(
                        "the cached query vector of embedder `{}` for this text is damaged ({detail}): embedded again",
                        self.name
                    ));
                    expected = Some(bytes);
                }
            },
            Ok(None) => {}
            Err(StoreError::Corrupt { detail, .. }) => {
                self.warn(format!(
                    "the cached query vector of embedder `{}` for this text is damaged ({detail}): embedded again",
                    self.name
                ));
                store.remove_damaged_ref(&key)?;
            }
            Err(e) => return Err(e.into()),
        }
        let v = self.fetch(text, dim)?;
        match store.cas_ref(&key, expected.as_deref(), Some(&encode_vector(&v)))? {
            CasOutcome::Swapped => Ok(v),
            // Another caller cached this text first: its vector is the one every replay
            // sees.
            CasOutcome::Conflict { current: Some(bytes) } => {
                decode_vector(&bytes, dim).map_err(|detail| EmbedderError::Embed {
                    name: self.name.clone(),
                    detail: format!("a concurrent cache entry is damaged: {detail}"),
                })
            }
            CasOutcome::Conflict { current: None } => Ok(v),
        }
    }
}

impl Embedder for QueryEmbedder {
    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed_text(text).map_err(|e| EmbedError::new(e.to_string()))
    }

    fn take_warnings(&self) -> Vec<String> {
        QueryEmbedder::take_warnings(self)
    }
}

/// Where a query embedder keeps the embedder it built (empty until first used).
pub(crate) type BuiltSlot = Arc<Mutex<Option<Arc<dyn Embedder>>>>;

/// The embedders a repository handle has built, by name, with the configuration each was
/// built from (a changed configuration builds anew).
pub(crate) type BuiltEmbedders = parking_lot::Mutex<BTreeMap<String, (EmbedderConfig, BuiltSlot)>>;
