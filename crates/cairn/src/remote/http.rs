//! The client side of a `cairn serve` remote (`http://HOST:PORT`, or
//! `http://HOST:PORT/t/TENANT` for a tenant of a `--root` server): the requests of
//! [`super::wire`], with the bearer token from `$CAIRN_TOKEN` (the CLI's `--remote`
//! reads the same variable). Plain HTTP; put a TLS proxy in front of a server that is
//! reached over a network you do not trust.
//!
//! Every failure is [`Error::Remote`], naming the URL, the HTTP status where there was
//! one and the server's message — except a branch that moved under a push, which the
//! caller turns into [`Error::NotFastForward`].

use std::io::Read;
use std::time::Duration;

use cairn_core::{codec, Hash};

use super::wire::{self, SyncBranch, SyncRefs};
use crate::error::{Error, Result};

/// Per-request timeout (a batch is at most [`wire::MAX_BATCH`] objects).
const TIMEOUT: Duration = Duration::from_secs(600);

/// Largest answer body read (a `get` of [`wire::MAX_BATCH`] objects stays well below).
const MAX_ANSWER: u64 = 1 << 30;

/// A `cairn serve` remote.
#[derive(Debug)]
pub(crate) struct HttpRemote {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

/// What `POST /sync/branch` answered.
pub(crate) enum BranchMove {
    /// The branch moved.
    Moved,
    /// The branch was elsewhere (409): nothing changed.
    Conflict,
}

impl HttpRemote {
    /// A client of the server at `url` (`http://…`, no trailing slash needed).
    pub(crate) fn new(url: &str) -> HttpRemote {
        HttpRemote {
            base: url.trim_end_matches('/').to_string(),
            token: std::env::var("CAIRN_TOKEN").ok().filter(|t| !t.is_empty()),
            agent: ureq::AgentBuilder::new().timeout(TIMEOUT).build(),
        }
    }

    /// The remote's URL.
    pub(crate) fn url(&self) -> &str {
        &self.base
    }

    fn error(&self, status: Option<u16>, detail: String) -> Error {
        Error::Remote {
            url: self.base.clone(),
            status,
            detail,
        }
    }

    /// Sends a request; a 2xx answer's body, or `Err((status, message))` for an error
    /// answer, or the transport's failure as [`Error::Remote`].
    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<std::result::Result<Vec<u8>, (u16, String)>> {
        let mut req = self.agent.request(method, &format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let answer = match body {
            Some(b) => req.set("Content-Type", "application/octet-stream").send_bytes(b),
            None => req.call(),
        };
        let read = |r: ureq::Response| -> Result<Vec<u8>> {
            let mut out = Vec::new();
            r.into_reader()
                .take(MAX_ANSWER)
                .read_to_end(&mut out)
                .map_err(|e| self.error(None, format!("{method} {path}: reading the answer: {e}")))?;
            Ok(out)
        };
        match answer {
            Ok(r) => Ok(Ok(read(r)?)),
            Err(ureq::Error::Status(code, r)) => {
                let body = read(r).unwrap_or_default();
                // The server's error JSON: {"error": {"code", "message"}}.
                let message = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                    .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
                Ok(Err((code, message)))
            }
            Err(e) => Err(self.error(None, format!("{method} {path}: {e}"))),
        }
    }

    /// [`HttpRemote::send`], any error answer an [`Error::Remote`].
    fn ok(&self, method: &str, path: &str, body: Option<&[u8]>) -> Result<Vec<u8>> {
        self.send(method, path, body)?
            .map_err(|(code, message)| self.error(Some(code), format!("{method} {path}: {message}")))
    }

    /// `GET /sync/refs`.
    pub(crate) fn refs(&self) -> Result<SyncRefs> {
        let body = self.ok("GET", "/sync/refs", None)?;
        serde_json::from_slice(&body).map_err(|e| self.error(None, format!("GET /sync/refs: a malformed answer: {e}")))
    }

    /// Which of `hashes` the remote lacks.
    pub(crate) fn missing(&self, hashes: &[Hash]) -> Result<Vec<bool>> {
        let mut out = Vec::with_capacity(hashes.len());
        for batch in hashes.chunks(wire::MAX_BATCH) {
            let body = self.ok("POST", "/sync/missing", Some(&wire::encode_hashes(batch)))?;
            if body.len() != batch.len() {
                return Err(self.error(
                    None,
                    format!("POST /sync/missing: {} answers for {} hashes", body.len(), batch.len()),
                ));
            }
            out.extend(body.iter().map(|b| *b != 0));
        }
        Ok(out)
    }

    /// The objects `hashes` name, each checked against its name: a mismatch is
    /// [`Error::Remote`] naming the object, never returned.
    pub(crate) fn get(&self, hashes: &[Hash]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::with_capacity(hashes.len());
        let mut rest = hashes;
        while !rest.is_empty() {
            let batch = &rest[..rest.len().min(wire::MAX_BATCH)];
            let body = self.ok("POST", "/sync/get", Some(&wire::encode_hashes(batch)))?;
            // A prefix of the batch when the objects are large (`wire::MAX_ANSWER_BYTES`).
            let got = wire::decode_got(&body, batch.len())
                .ok_or_else(|| self.error(None, "POST /sync/get: a malformed answer".into()))?;
            rest = &rest[got.len()..];
            for (h, bytes) in batch.iter().zip(got) {
                if codec::hash_object(&bytes) != *h {
                    return Err(self.error(
                        None,
                        format!(
                            "object {} arrived damaged: its bytes do not match its blake3 name",
                            h.to_hex()
                        ),
                    ));
                }
                out.push(bytes);
            }
        }
        Ok(out)
    }

    /// Stores `objects` on the remote, in order (children before parents).
    pub(crate) fn put(&self, objects: &[(Hash, Vec<u8>)]) -> Result<()> {
        self.ok("POST", "/sync/put", Some(&wire::encode_objects(objects)))?;
        Ok(())
    }

    /// Moves a branch on the remote by compare-and-swap.
    pub(crate) fn move_branch(&self, req: &SyncBranch) -> Result<BranchMove> {
        let body = serde_json::to_vec(req).map_err(|e| self.error(None, e.to_string()))?;
        match self.send("POST", "/sync/branch", Some(&body))? {
            Ok(_) => Ok(BranchMove::Moved),
            Err((409, _)) => Ok(BranchMove::Conflict),
            Err((code, message)) => Err(self.error(Some(code), format!("POST /sync/branch: {message}"))),
        }
    }
}
