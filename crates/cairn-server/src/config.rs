//! The server's configuration file: tenants and the blake3 hashes of their bearer tokens.
//!
//! The file is JSON; tokens are never stored, only their hashes:
//!
//! ```json
//! {"tenants": {"acme": {"tokens": ["<64 hex digits: blake3 of the token>"]}}}
//! ```
//!
//! `cairn serve token add TENANT --config FILE` makes a token, adds its hash to the file
//! and prints the token once; [`hash_token`] (or `cairn serve token hash`) gives the
//! hash of a token made some other way.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why a configuration could not be read, written or changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read or written.
    #[error("config file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid configuration (syntax, unknown field, bad hash).
    #[error("config file {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the position.
        message: String,
    },
    /// A tenant name outside `[A-Za-z0-9_-]{1,64}`.
    #[error("invalid tenant name {0:?}: use 1 to 64 of A-Z a-z 0-9 _ -")]
    TenantName(String),
    /// No randomness source for a new token.
    #[error("cannot read random bytes for a token: {0}")]
    Random(std::io::Error),
}

/// One tenant's entry: the hashes of the tokens that may use its repository.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// blake3 hashes of the tenant's tokens, 64 lowercase hex digits each.
    #[serde(default)]
    pub tokens: Vec<String>,
}

/// The server's configuration: tenants by name.
///
/// ```
/// use cairn_server::{hash_token, Config};
/// let mut config = Config::default();
/// let token = config.add_token("acme")?;
/// assert_eq!(config.tenant_of(&token), Some("acme"));
/// assert_eq!(config.tenants["acme"].tokens, vec![hash_token(&token)]);
/// assert_eq!(config.tenant_of("guess"), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Tenants by name (in `--repo` mode the one repository is tenant [`DEFAULT_TENANT`](crate::DEFAULT_TENANT)).
    #[serde(default)]
    pub tenants: BTreeMap<String, TenantConfig>,
}

/// The blake3 hash of a token, as the configuration stores it (64 lowercase hex digits).
///
/// ```
/// assert_eq!(cairn_server::hash_token("secret").len(), 64);
/// ```
pub fn hash_token(token: &str) -> String {
    blake3::hash(token.as_bytes()).to_hex().to_string()
}

/// Checks a tenant name: 1 to 64 of `A-Z a-z 0-9 _ -` (so it is also a safe directory
/// name under `--root`).
pub fn check_tenant_name(name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(ConfigError::TenantName(name.to_string()))
    }
}

impl Config {
    /// Reads and checks a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(&text).map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        })
    }

    /// Parses and checks a configuration (tenant names, hash syntax).
    pub fn parse(text: &str) -> Result<Config, String> {
        let config: Config = serde_json::from_str(text).map_err(|e| e.to_string())?;
        for (name, tenant) in &config.tenants {
            check_tenant_name(name).map_err(|e| e.to_string())?;
            for h in &tenant.tokens {
                if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                    return Err(format!(
                        "tenant {name:?}: {h:?} is not a token hash (64 lowercase hex digits, blake3 of the token)"
                    ));
                }
            }
        }
        Ok(config)
    }

    /// Reads the file at `path`, or an empty configuration if there is none.
    pub fn load_or_default(path: &Path) -> Result<Config, ConfigError> {
        if path.exists() {
            Config::load(path)
        } else {
            Ok(Config::default())
        }
    }

    /// Writes the configuration to `path` (through a temporary file renamed over it, so a
    /// crash leaves the old file or the new one).
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        let io = |source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut text = serde_json::to_string_pretty(self).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        text.push('\n');
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Makes a new random token for `tenant` (adding the tenant if it is new), stores its
    /// hash, and returns the token: the only time it is seen.
    pub fn add_token(&mut self, tenant: &str) -> Result<String, ConfigError> {
        check_tenant_name(tenant)?;
        let token = new_token()?;
        self.tenants
            .entry(tenant.to_string())
            .or_default()
            .tokens
            .push(hash_token(&token));
        Ok(token)
    }

    /// The tenant a token belongs to, if any.
    pub fn tenant_of(&self, token: &str) -> Option<&str> {
        let h = hash_token(token);
        self.tenants
            .iter()
            .find(|(_, t)| t.tokens.iter().any(|k| constant_time_eq(k.as_bytes(), h.as_bytes())))
            .map(|(name, _)| name.as_str())
    }
}

/// Equality whose time does not depend on where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `cairn_` and 64 hex digits of 32 bytes from the operating system's random source.
fn new_token() -> Result<String, ConfigError> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(ConfigError::Random)?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("cairn_{hex}"))
}
