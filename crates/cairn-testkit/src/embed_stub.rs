//! A stub OpenAI-compatible embeddings service on loopback, for tests of the HTTP
//! embedder's wiring (repository, CLI): `POST /v1/embeddings` answered with
//! `vector(text, request number)` for every input.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A running stub service (it lives until the test process ends).
#[derive(Debug, Clone)]
pub struct EmbedStub {
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// Requests answered so far.
    pub requests: Arc<AtomicUsize>,
    /// The input texts of each request, in order.
    pub inputs: Arc<Mutex<Vec<Vec<String>>>>,
}

impl EmbedStub {
    /// Requests answered so far.
    pub fn request_count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Starts a stub that answers every request with `vector(text, n)` for each input, `n`
/// being the 0-based request number (so a test can make the service drift).
pub fn embed_stub(vector: fn(&str, usize) -> Vec<f32>) -> EmbedStub {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let url = format!("http://{}", listener.local_addr().expect("local address"));
    let requests = Arc::new(AtomicUsize::new(0));
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let (count, log) = (Arc::clone(&requests), Arc::clone(&inputs));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let Some(body) = read_body(&stream) else { continue };
            let n = count.fetch_add(1, Ordering::SeqCst);
            let texts: Vec<String> = body["input"]
                .as_array()
                .map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            let data: Vec<serde_json::Value> = texts
                .iter()
                .enumerate()
                .map(|(i, t)| serde_json::json!({"index": i, "embedding": vector(t, n)}))
                .collect();
            log.lock().expect("stub log").push(texts);
            respond(stream, &serde_json::json!({ "data": data }).to_string());
        }
    });
    EmbedStub { url, requests, inputs }
}

fn read_body(stream: &TcpStream) -> Option<serde_json::Value> {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn respond(mut stream: TcpStream, body: &str) {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}
