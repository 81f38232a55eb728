//! `cairn --remote URL <command>`: run a command against a `cairn serve` server instead of
//! opening the repository. The command's arguments are the local command's own (read from
//! clap's matches by their ids), sent as the server's JSON endpoints; `--json` prints
//! what the server answered, which is what the local `--json` prints.
//!
//! Supported: `retrieve`/`ls` (the flags listed in [`RETRIEVE_FLAGS`], `--spec`,
//! `--batch`; results are printed as JSON), `import`, `log`, `show` (JSON), `stats`,
//! `history`, `diff` (JSON), `fsck`, `mcp` (a stdio bridge to the server's `POST /mcp`:
//! `remote_mcp.rs`). Any other command says it is not supported with
//! `--remote`. The bearer token is `$CAIRN_TOKEN`. For a tenant of a `--root` server,
//! the URL includes the tenant: `http://HOST:PORT/t/TENANT`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use cairn::NodeId;
use clap::parser::ValueSource;
use clap::ArgMatches;

use crate::error::CliError;
use crate::output::{format_time_s, write_field};

/// The commands `--remote` supports.
pub const SUPPORTED: &str = "retrieve, ls, import, log, show, stats, history, diff, fsck, mcp";

/// The `retrieve` flags `--remote` turns into a spec (any other query flag: use `--spec`).
pub const RETRIEVE_FLAGS: &[&str] = &[
    "text",
    "label",
    "any_label",
    "at",
    "valid_at",
    "all_time",
    "limit",
    "depth",
    "text_cap",
    "token_budget",
    "explain",
    "render_prop",
    "list",
    "after",
    "spec",
    "batch",
    "json",
];

/// A client of one server.
pub(crate) struct Remote {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Remote {
    pub(crate) fn new(url: &str) -> Remote {
        Remote {
            base: url.trim_end_matches('/').to_string(),
            token: std::env::var("CAIRN_TOKEN").ok().filter(|t| !t.is_empty()),
            agent: ureq::AgentBuilder::new().timeout(Duration::from_secs(3600)).build(),
        }
    }

    /// Sends a request; a 2xx body is returned, an error answer becomes a [`CliError`]
    /// with the server's code and message.
    fn send(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, String)],
        body: Option<&[u8]>,
    ) -> Result<Vec<u8>, CliError> {
        let mut req = self.agent.request(method, &format!("{}{path}", self.base));
        for (k, v) in query {
            req = req.query(k, v);
        }
        if let Some(t) = &self.token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let result = match body {
            Some(b) => req.set("Content-Type", "application/json").send_bytes(b),
            None => req.call(),
        };
        self.answer(result)
    }

    /// A 2xx body, or the error answer as a [`CliError`] with the server's code and
    /// message.
    fn answer(&self, result: Result<ureq::Response, ureq::Error>) -> Result<Vec<u8>, CliError> {
        match result {
            Ok(r) => read_body(r),
            Err(ureq::Error::Status(status, r)) => {
                let body = read_body(r)?;
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let (code, message) = match (v["error"]["code"].as_str(), v["error"]["message"].as_str()) {
                    (Some(c), Some(m)) => (c.to_string(), m.to_string()),
                    _ => (status.to_string(), String::from_utf8_lossy(&body).into_owned()),
                };
                // The CLI sends the token from the environment: say so where the server
                // asks for one.
                let hint = match (status, &self.token) {
                    (401, None) => " (set CAIRN_TOKEN to the server's token)",
                    (401, Some(_)) | (403, _) => " (CAIRN_TOKEN holds a token this server does not accept here)",
                    _ => "",
                };
                Err(CliError::Refused(format!("server: {message} [{code}]{hint}")))
            }
            Err(e) => Err(CliError::Refused(format!(
                "cannot reach the server at {}: {e}",
                self.base
            ))),
        }
    }

    /// The server's URL (without a final `/`).
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// Posts one MCP message to `/mcp` (`remote_mcp.rs`) with the protocol version agreed
    /// so far; `None` when the server has nothing to send back (202).
    pub(crate) fn post_mcp(
        &self,
        message: &str,
        version: Option<&str>,
        author: Option<&str>,
    ) -> Result<Option<String>, CliError> {
        let mut req = self.agent.post(&format!("{}/mcp", self.base));
        if let Some(a) = author {
            req = req.query("author", a);
        }
        if let Some(t) = &self.token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        if let Some(v) = version {
            req = req.set("MCP-Protocol-Version", v);
        }
        let result = req
            .set("Content-Type", "application/json")
            .set("Accept", "application/json")
            .send_bytes(message.as_bytes());
        let accepted = matches!(&result, Ok(r) if r.status() == 202);
        let body = self.answer(result)?;
        if accepted || body.is_empty() {
            return Ok(None);
        }
        String::from_utf8(body)
            .map(Some)
            .map_err(|_| CliError::Refused("the server's MCP answer is not UTF-8".into()))
    }

    fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Vec<u8>, CliError> {
        self.send("GET", path, query, None)
    }
}

fn read_body(r: ureq::Response) -> Result<Vec<u8>, CliError> {
    let mut body = Vec::new();
    r.into_reader()
        .read_to_end(&mut body)
        .map_err(|e| CliError::Refused(format!("reading the server's answer: {e}")))?;
    Ok(body)
}

/// Path segment encoding of a node id.
fn segment(id: &NodeId) -> String {
    let mut s = String::new();
    for b in id.as_str().bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

fn flag(m: &ArgMatches, id: &str) -> bool {
    m.try_get_one::<bool>(id).ok().flatten().copied().unwrap_or(false)
}

fn opt<T: Clone + Send + Sync + 'static>(m: &ArgMatches, id: &str) -> Option<T> {
    m.try_get_one::<T>(id).ok().flatten().cloned()
}

fn many<T: Clone + Send + Sync + 'static>(m: &ArgMatches, id: &str) -> Vec<T> {
    m.try_get_many::<T>(id)
        .ok()
        .flatten()
        .map(|v| v.cloned().collect())
        .unwrap_or_default()
}

fn write_body(out: &mut dyn Write, body: &[u8]) -> Result<(), CliError> {
    out.write_all(body)?;
    if !body.ends_with(b"\n") {
        writeln!(out)?;
    }
    Ok(())
}

fn parse(body: &[u8]) -> Result<serde_json::Value, CliError> {
    Ok(serde_json::from_slice(body)?)
}

/// Runs the parsed command against the server at `url`.
pub fn run(url: &str, matches: &ArgMatches, out: &mut dyn Write) -> Result<(), CliError> {
    let remote = Remote::new(url);
    let Some((name, m)) = matches.subcommand() else {
        return Err(CliError::Refused("no command given".into()));
    };
    match name {
        "retrieve" => retrieve(&remote, matches, m, false, out),
        "ls" => retrieve(&remote, matches, m, true, out),
        "import" => import(&remote, m, out),
        "log" => log(&remote, m, out),
        "show" => show(&remote, m, out),
        "stats" => stats(&remote, m, out),
        "history" => history(&remote, m, out),
        "diff" => diff(&remote, m, out),
        "fsck" => fsck(&remote, m, out),
        "mcp" => crate::remote_mcp::bridge(&remote, m, std::io::stdin().lock(), out),
        other => Err(CliError::Refused(format!(
            "`cairn {other}` is not supported with --remote (supported: {SUPPORTED})"
        ))),
    }
}

fn retrieve(remote: &Remote, top: &ArgMatches, m: &ArgMatches, ls: bool, out: &mut dyn Write) -> Result<(), CliError> {
    // The command's own flags: not the global options (`--repo`, `--remote`...), not the
    // argument groups (`query`, and `Args`, named after the struct).
    let global: Vec<&str> = top.ids().map(|id| id.as_str()).collect();
    let unsupported: Vec<String> = m
        .ids()
        .map(|id| id.as_str().to_string())
        .filter(|id| !RETRIEVE_FLAGS.contains(&id.as_str()) && !global.contains(&id.as_str()))
        .filter(|id| id != "query" && !id.starts_with(|c: char| c.is_ascii_uppercase()))
        .filter(|id| {
            matches!(
                m.value_source(id),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
        })
        .collect();
    if !unsupported.is_empty() {
        return Err(CliError::Refused(format!(
            "with --remote, `retrieve` takes only --{} (and --spec for anything else); not: --{}",
            RETRIEVE_FLAGS.join(", --").replace('_', "-"),
            unsupported.join(", --").replace('_', "-")
        )));
    }
    if let Some(file) = opt::<PathBuf>(m, "batch") {
        return batch(remote, &file, out);
    }
    let spec = match opt::<String>(m, "spec") {
        Some(s) => s,
        None => {
            let mut spec = serde_json::Map::new();
            let mut put = |k: &str, v: serde_json::Value| {
                spec.insert(k.to_string(), v);
            };
            if let Some(t) = opt::<String>(m, "text") {
                put("text", t.into());
            }
            let labels = many::<String>(m, "label");
            if !labels.is_empty() {
                put("labels_all", labels.into());
            }
            let any = many::<String>(m, "any_label");
            if !any.is_empty() {
                put("labels_any", any.into());
            }
            if let Some(at) = opt::<String>(m, "at") {
                put("at", at.into());
            }
            if let Some(t) = opt::<i64>(m, "valid_at") {
                put("valid_at", t.into());
            }
            if flag(m, "all_time") {
                put("valid_at", "all_time".into());
            }
            for key in ["limit", "depth", "text_cap", "token_budget"] {
                if let Some(n) = opt::<usize>(m, key) {
                    put(key, n.into());
                }
            }
            if flag(m, "explain") {
                put("explain", true.into());
            }
            let props = many::<String>(m, "render_prop");
            if !props.is_empty() {
                put("render_props", props.into());
            }
            if ls || flag(m, "list") {
                put("list", true.into());
            }
            if let Some(a) = opt::<String>(m, "after") {
                put("after", a.into());
            }
            serde_json::Value::Object(spec).to_string()
        }
    };
    let body = remote.send("POST", "/retrieve", &[], Some(spec.as_bytes()))?;
    if flag(m, "json") {
        return write_body(out, &body);
    }
    // The same human form as the local command, from the same result.
    let result: cairn::retrieve::RetrievalResult = serde_json::from_slice(&body)?;
    crate::commands::retrieve::write_human(out, &result)
}

/// `--batch FILE`: one spec per line, one result line each; failures on standard error.
fn batch(remote: &Remote, file: &PathBuf, out: &mut dyn Write) -> Result<(), CliError> {
    let read_error = |source| CliError::Read {
        path: file.clone(),
        source,
    };
    let reader: Box<dyn BufRead> = if file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(BufReader::new(std::fs::File::open(file).map_err(read_error)?))
    };
    let mut lines = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(read_error)?;
        if !line.trim().is_empty() {
            lines.push((i + 1, line));
        }
    }
    let (mut total, mut failed) = (0usize, 0usize);
    // One request per spec (on one kept-alive connection): each result printed as the
    // server serialized it, byte for byte.
    for (n, line) in lines {
        total += 1;
        match remote.send("POST", "/retrieve", &[], Some(line.as_bytes())) {
            Ok(body) => {
                write_body(out, &body)?;
                out.flush()?;
            }
            Err(CliError::Refused(msg)) => {
                failed += 1;
                out.flush()?;
                let _ = writeln!(std::io::stderr(), "error: line {n}: {msg}");
            }
            Err(e) => return Err(e),
        }
    }
    if failed > 0 {
        return Err(CliError::BatchFailed { failed, total });
    }
    Ok(())
}

fn import(remote: &Remote, m: &ArgMatches, out: &mut dyn Write) -> Result<(), CliError> {
    let file = opt::<PathBuf>(m, "file").unwrap_or_else(|| "-".into());
    let from_stdin = file.as_os_str() == "-";
    let mut body = Vec::new();
    if from_stdin {
        std::io::stdin().lock().read_to_end(&mut body)?;
    } else {
        body = std::fs::read(&file).map_err(|source| CliError::Read {
            path: file.clone(),
            source,
        })?;
    }
    let message = opt::<String>(m, "message").unwrap_or_else(|| {
        let name = if from_stdin {
            "standard input".to_string()
        } else {
            file.file_name()
                .unwrap_or(file.as_os_str())
                .to_string_lossy()
                .into_owned()
        };
        format!("import {name}")
    });
    let mut query = vec![("message", message)];
    if let Some(a) = opt::<String>(m, "author") {
        query.push(("author", a));
    }
    if flag(m, "allow_empty") {
        query.push(("allow_empty", "true".into()));
    }
    let answer = remote.send("POST", "/import", &query, Some(&body))?;
    if flag(m, "json") {
        return write_body(out, &answer);
    }
    let v = parse(&answer)?;
    match v["commit"].as_str() {
        Some(commit) => {
            let ops = v["operations"].as_u64().unwrap_or(0);
            let plural = if ops == 1 { "" } else { "s" };
            writeln!(out, "imported {ops} operation{plural}: commit {commit}")?;
        }
        None => match (v["operations"].as_u64().unwrap_or(0), v["head"].as_str()) {
            (0, _) => writeln!(
                out,
                "nothing to import: no operation, no commit made (--allow-empty commits anyway)"
            )?,
            (ops, head) => writeln!(
                out,
                "no changes: {ops} operation{} the graph as it is, no commit made (HEAD stays at {}) \
                 (--allow-empty commits anyway)",
                if ops == 1 { " left" } else { "s left" },
                head.unwrap_or("no commit yet")
            )?,
        },
    }
    Ok(())
}

fn log(remote: &Remote, m: &ArgMatches, out: &mut dyn Write) -> Result<(), CliError> {
    let mut query = Vec::new();
    if let Some(rev) = opt::<String>(m, "rev") {
        query.push(("rev", rev));
    }
    if let Some(n) = opt::<usize>(m, "max_count") {
        query.push(("limit", n.to_string()));
    }
    let body = remote.get("/log", &query)?;
    if flag(m, "json") {
        return write_body(out, &body);
    }
    for c in parse(&body)?.as_array().into_iter().flatten() {
        let id = c["commit"].as_str().unwrap_or("");
        let subject = c["message"].as_str().unwrap_or("").lines().next().unwrap_or("");
        writeln!(
            out,
            "{}  {}  {}  {subject}",
            &id[..id.len().min(12)],
            format_time_s(c["timestamp_ms"].as_i64().unwrap_or(0)),
            c["author"].as_str().unwrap_or("")
        )?;
    }
    Ok(())
}

fn show(remote: &Remote, m: &ArgMatches, out: &mut dyn Write) -> Result<(), CliError> {
    let id = opt::<NodeId>(m, "id").ok_or_else(|| CliError::Refused("no node id".into()))?;
    let mut query = Vec::new();
    if let Some(at) = opt::<String>(m, "at") {
        query.push(("at", at));
    }
    if let Some(t) = opt::<i64>(m, "valid_at") {
        query.push(("valid_at", t.to_string()));
    }
    let json = flag(m, "json");
    // The text form counts the edges even without --edges.
    if flag(m, "edges") || !json {
        query.push(("edges", "true".into()));
    }
    let body = remote.get(&format!("/nodes/{}", segment(&id)), &query)?;
    if json {
        return write_body(out, &body);
    }
    let mut shown: cairn::ShownNode = serde_json::from_slice(&body)?;
    let edges = shown
        .edges
        .take()
        .ok_or_else(|| CliError::Refused("the server's answer has no edges".into()))?;
    crate::commands::show::write_human(out, shown, edges, flag(m, "edges"))
}

fn stats(remote: &Remote, m: &ArgMatches, out: &mut dyn Write) -> Result<(), CliError> {
    let mut query = Vec::new();
    if let Some(at) = opt::<String>(m, "at") {
        query.push(("at", at));
    }
    let body = remote.get("/stats", &query)?;
    if flag(m, "json") {
        return write_body(out, &body);
    }
    let v = parse(&body)?;
    let text = |k: &str| match &v[k] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "(empty)".to_string(),
        other => other.to_string(),
    };
    write_field(out, "commit", [text("commit")])?;
    write_field(out, "nodes", [text("nodes")])?;
    write_field(out, "edges", [text("edges")])?;
    write_field(out, "generation", [text("generation")])?;
    write_field(out, "node root", [text("node_root")])?;
    write_field(out, "edge root", [text("edge_root")])?;
    Ok(())
}

fn history(remote: &Remote, m: &ArgMatches, out: &mut dyn Write) -> Result<(), CliError> {
    let id = opt::<NodeId>(m, "id").ok_or_else(|| CliError::Refused("no node id".into()))?;
    let (branch, max_count) = (opt::<String>(m, "branch"), opt::<usize>(m, "max_count"));
    let mut query = Vec::new();
    if let Some(b) = &branch {
        query.push(("branch", b.clone()));
    }
    if let Some(n) = max_count {
        query.push(("limit", n.to_string()));
    }
    let body = remote.get(&format!("/nodes/{}/history", segment(&id)), &query)?;
    if flag(m, "json") {
        return write_body(out, &body);
    }
    let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let rows: Vec<crate::commands::history::Row> = parse(&body)?
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| crate::commands::history::Row {
            commit: text(&e["commit"]),
            timestamp_ms: e["timestamp_ms"].as_i64().unwrap_or(0),
            change: e["change"].as_str().unwrap_or("?").to_string(),
            message: text(&e["message"]),
        })
        .collect();
    crate::commands::history::write_rows(out, id.as_str(), branch.as_deref(), max_count, &rows)
}

fn diff(remote: &Remote, m: &ArgMatches, out: &mut dyn Write) -> Result<(), CliError> {
    let mut query = vec![("from", opt::<String>(m, "from").unwrap_or_default())];
    if let Some(to) = opt::<String>(m, "to") {
        query.push(("to", to));
    }
    let body = remote.get("/diff", &query)?;
    if flag(m, "json") {
        return write_body(out, &body);
    }
    let report: cairn::DiffReport = serde_json::from_slice(&body)?;
    crate::commands::diff::write_human(out, &report)
}

fn fsck(remote: &Remote, m: &ArgMatches, out: &mut dyn Write) -> Result<(), CliError> {
    if flag(m, "repair") {
        return Err(CliError::Refused(
            "`fsck --repair` is not supported with --remote".into(),
        ));
    }
    let body = remote.get("/fsck", &[])?;
    let v = parse(&body)?;
    let problems = v["problems"].as_array().map_or(0, Vec::len);
    if flag(m, "json") {
        write_body(out, &body)?;
    } else {
        for p in v["problems"].as_array().into_iter().flatten() {
            writeln!(out, "problem: {}", p.as_str().unwrap_or(""))?;
        }
        let verdict = if problems == 0 { "ok" } else { "damaged" };
        writeln!(
            out,
            "checked {} objects, {} commits, {} derived entries: {verdict}",
            v["objects_checked"], v["commits_checked"], v["derived_checked"]
        )?;
    }
    if problems > 0 {
        return Err(CliError::FsckProblems(problems));
    }
    Ok(())
}
