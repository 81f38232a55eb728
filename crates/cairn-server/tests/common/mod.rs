//! A server started in-process on a loopback port, and a small blocking HTTP client.

#![allow(dead_code)] // each test file uses a different subset

use std::time::Duration;

use cairn_server::{Repos, RunningServer, Server, ServerOptions};

pub const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sample/corpus.jsonl");
pub const UPDATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sample/update.jsonl");

/// An in-memory repository holding the sample corpus (one commit) and its update (a second).
pub fn sample_repo() -> cairn::Repo {
    let repo = cairn::Repo::in_memory().unwrap();
    for f in [CORPUS, UPDATE] {
        let text = std::fs::read_to_string(f).unwrap();
        repo.import_jsonl(text.as_bytes(), f, &mut |_| {}).unwrap();
    }
    repo
}

/// Serves `repos` on 127.0.0.1, any free port.
pub fn start(repos: Repos, options: ServerOptions) -> RunningServer {
    RunningServer::start(Server::new(repos, options), "127.0.0.1:0".parse().unwrap()).unwrap()
}

pub fn start_single(repo: cairn::Repo) -> RunningServer {
    start(Repos::Single(repo), ServerOptions::default())
}

/// A client: one agent (keep-alive), an optional bearer token.
pub struct Client {
    pub base: String,
    pub token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    pub fn new(server: &RunningServer) -> Client {
        Client::at(server.url())
    }

    pub fn at(base: String) -> Client {
        Client {
            base,
            token: None,
            agent: ureq::AgentBuilder::new().timeout(Duration::from_secs(60)).build(),
        }
    }

    pub fn with_token(mut self, token: &str) -> Client {
        self.token = Some(token.to_string());
        self
    }

    /// Sends `method path` with an optional body; returns the status and body text,
    /// whatever the status.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        let mut req = self.agent.request(method, &format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let result = match body {
            Some(b) => req.send_string(b),
            None => req.call(),
        };
        match result {
            Ok(r) => (r.status(), r.into_string().unwrap()),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap()),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    /// Like [`Client::call`], `None` when the connection failed (refused, reset).
    pub fn try_call(&self, method: &str, path: &str, body: Option<&str>) -> Option<(u16, String)> {
        let req = self.agent.request(method, &format!("{}{path}", self.base));
        let result = match body {
            Some(b) => req.send_string(b),
            None => req.call(),
        };
        match result {
            Ok(r) => Some((r.status(), r.into_string().ok()?)),
            Err(ureq::Error::Status(code, r)) => Some((code, r.into_string().ok()?)),
            Err(_) => None,
        }
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        self.call("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &str) -> (u16, String) {
        self.call("POST", path, Some(body))
    }

    /// GET, asserting 200, parsed as JSON.
    pub fn json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// POST, asserting 200, parsed as JSON.
    pub fn post_json(&self, path: &str, body: &str) -> serde_json::Value {
        let (status, text) = self.post(path, body);
        assert_eq!(status, 200, "POST {path}: {text}");
        serde_json::from_str(&text).unwrap()
    }
}

/// The `error.code` of an error body.
pub fn code(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    v["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error code: {body}"))
        .to_string()
}
