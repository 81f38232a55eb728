//! [`moto`]: moto's standalone S3 server (PyPI `moto[server]`) on loopback, for the
//! object-store tests. It honours conditional writes (`If-None-Match: *` and `If-Match`),
//! which the object-store backend's compare-and-swap needs.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A running moto server: its endpoint. It lives as long as the test process (a watchdog
/// ends it within a second of the process's exit).
#[derive(Debug)]
pub struct Moto {
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    port: u16,
}

/// The process's moto server, started on first use on a free loopback port, with the
/// `AWS_*` environment variables set for it (endpoint, plain http, dummy credentials,
/// region) and `CAIRN_CACHE_DIR` set to a directory of this process's own, removed with
/// the server. `None`, after printing why, if it cannot start (python3 or moto missing): the
/// caller skips its test.
pub fn moto() -> Option<&'static Moto> {
    static SERVER: OnceLock<Option<Moto>> = OnceLock::new();
    SERVER
        .get_or_init(|| match start() {
            Ok(m) => Some(m),
            Err(why) => {
                eprintln!("SKIPPED: the moto S3 server could not start ({why}); install it with `python3 -m pip install 'moto[server]'`");
                None
            }
        })
        .as_ref()
}

fn start() -> Result<Moto, String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    // The local caches of the repositories the tests open, kept apart from the user's.
    let cache = std::env::temp_dir().join(format!("cairn-moto-cache-{}", std::process::id()));
    // The watchdog ends the server when this process is gone, and removes the caches, so
    // no test run leaves either behind.
    let script = format!(
        "python3 -m moto.server -H 127.0.0.1 -p {port} >/dev/null 2>&1 & S=$!; \
         while kill -0 {pid} 2>/dev/null && kill -0 $S 2>/dev/null; do sleep 0.5; done; kill $S 2>/dev/null; rm -rf '{cache}'",
        pid = std::process::id(),
        cache = cache.display()
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("sh: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("nothing listened on 127.0.0.1:{port} within 30 s"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let endpoint = format!("http://127.0.0.1:{port}");
    // Set once, before any test of the process opens a store: every test uses these.
    for (k, v) in [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("CAIRN_CACHE_DIR", &cache.display().to_string()),
    ] {
        std::env::set_var(k, v);
    }
    let m = Moto { endpoint, port };
    // A request moto answers proves it is moto, not another listener.
    m.create_bucket("cairn-probe")?;
    Ok(m)
}

impl Moto {
    /// Creates bucket `name` (3..=63 lowercase letters, digits, `-`).
    pub fn create_bucket(&self, name: &str) -> Result<(), String> {
        let (status, body) = self.request("PUT", &format!("/{name}"))?;
        if status == 200 || body.contains("BucketAlreadyOwnedByYou") {
            Ok(())
        } else {
            Err(format!("creating bucket {name}: HTTP {status}: {body}"))
        }
    }

    /// A new bucket of its own for one test (`cairn-<tag>-<n>`), and its `s3://` URL.
    pub fn new_bucket(&self, tag: &str) -> String {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "cairn-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        self.create_bucket(&name).expect("creating a bucket in moto");
        format!("s3://{name}")
    }

    fn request(&self, method: &str, path: &str) -> Result<(u16, String), String> {
        self.request_with_body(method, path, &[])
    }

    fn request_with_body(&self, method: &str, path: &str, body: &[u8]) -> Result<(u16, String), String> {
        let (status, bytes) = self.request_bytes(method, path, body)?;
        Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// One plain HTTP/1.1 request. moto accepts unsigned requests that create a bucket
    /// (not those that replace or delete an object a signed request wrote: tests damage
    /// objects through `object_store`).
    fn request_bytes(&self, method: &str, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
        s.write_all(body).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).map_err(|e| e.to_string())?;
        let split = out.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no HTTP header")?;
        let head = String::from_utf8_lossy(&out[..split]).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or("no HTTP status")?;
        let mut rest = out[split + 4..].to_vec();
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            rest = dechunk(&rest);
        }
        Ok((status, rest))
    }
}

/// The body of a chunked HTTP response.
fn dechunk(mut bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = bytes.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&bytes[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        out.extend_from_slice(&bytes[start..(start + size).min(bytes.len())]);
        bytes = &bytes[(start + size + 2).min(bytes.len())..];
    }
    out
}
