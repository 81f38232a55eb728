//! The OpenAI-compatible embedder against a stub server on loopback: canned HTTP/1.1
//! responses, one connection per request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn_embed::{OpenAiConfig, OpenAiEmbedder, OpenAiError};
use cairn_retrieve::Embedder;

/// A request the stub received: its headers (lower-cased names) and its JSON body.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: serde_json::Value,
}

/// What the stub answers to a request (given the request number, 0-based, and the body).
enum Reply {
    Respond(u16, String),
    /// Read the request, answer nothing, hold the connection this long.
    Hang(Duration),
}

/// Serves `replies` on a fresh loopback port; returns its base URL and what it saw.
fn stub(reply: impl Fn(usize, &serde_json::Value) -> Reply + Send + 'static) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let Some(req) = read_request(&stream) else { continue };
            let r = reply(n, &req.body);
            log.lock().unwrap().push(req);
            match r {
                Reply::Respond(status, body) => respond(stream, status, &body),
                Reply::Hang(d) => {
                    std::thread::sleep(d);
                    drop(stream);
                }
            }
        }
    });
    (url, seen)
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
        if k == "content-length" {
            length = v.parse().ok()?;
        }
        headers.push((k, v));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        path,
        headers,
        body: serde_json::from_slice(&body).ok()?,
    })
}

fn respond(mut stream: TcpStream, status: u16, body: &str) {
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    let _ = stream.flush();
}

/// A deterministic fake vector of `text` (3 dims), shifted by `salt`.
fn vector_of(text: &str, salt: f32) -> Vec<f32> {
    let n = text.len() as f32;
    vec![n + salt, 1.0, -(n * 0.5)]
}

/// An OpenAI-shaped response for the body's inputs, in reverse `index` order (the client
/// must sort by index).
fn embeddings_response(body: &serde_json::Value, salt: f32) -> String {
    let inputs = body["input"].as_array().unwrap();
    let mut data: Vec<serde_json::Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": vector_of(t.as_str().unwrap(), salt)}))
        .collect();
    data.reverse();
    serde_json::json!({"object": "list", "data": data, "model": body["model"]}).to_string()
}

fn fast(url: &str) -> OpenAiConfig {
    OpenAiConfig::new(url, "test-embed")
        .with_api_key_env("CAIRN_TEST_OPENAI_KEY_UNSET")
        .with_timeout(Duration::from_secs(5))
        .with_retries(2, Duration::from_millis(5), Duration::from_millis(20))
}

#[test]
fn embeds_in_order_sorted_by_index() {
    let (url, seen) = stub(|_, body| Reply::Respond(200, embeddings_response(body, 0.0)));
    let e = OpenAiEmbedder::new(fast(&url)).unwrap();
    let v = e.embed_texts(&["a", "bbb", "cc"]).unwrap();
    assert_eq!(
        v,
        vec![vector_of("a", 0.0), vector_of("bbb", 0.0), vector_of("cc", 0.0)]
    );
    assert_eq!(e.dim(), Some(3));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/embeddings");
    assert_eq!(
        seen[0].body,
        serde_json::json!({"model": "test-embed", "input": ["a", "bbb", "cc"]})
    );
    // The key variable is unset: no Authorization header.
    assert!(!seen[0].headers.iter().any(|(k, _)| k == "authorization"));
    drop(seen);
    // The trait's single and batch calls agree.
    assert_eq!(Embedder::embed(&e, "bbb").unwrap(), vector_of("bbb", 0.0));
}

#[test]
fn splits_into_batches() {
    let (url, seen) = stub(|_, body| Reply::Respond(200, embeddings_response(body, 0.0)));
    let e = OpenAiEmbedder::new(fast(&url).with_batch_size(2)).unwrap();
    let texts = ["a", "bb", "ccc", "dddd", "eeeee"];
    let v = e.embed_batch(&texts).unwrap();
    assert_eq!(v, texts.iter().map(|t| vector_of(t, 0.0)).collect::<Vec<_>>());
    let seen = seen.lock().unwrap();
    let inputs: Vec<serde_json::Value> = seen.iter().map(|s| s.body["input"].clone()).collect();
    assert_eq!(
        inputs,
        vec![
            serde_json::json!(["a", "bb"]),
            serde_json::json!(["ccc", "dddd"]),
            serde_json::json!(["eeeee"])
        ]
    );
}

#[test]
fn sends_the_api_key_from_the_named_variable() {
    // A variable name no other test uses; set before the embedder reads it.
    std::env::set_var("CAIRN_TEST_OPENAI_KEY_SET", "sk-test-123");
    let (url, seen) = stub(|_, body| Reply::Respond(200, embeddings_response(body, 0.0)));
    let e = OpenAiEmbedder::new(fast(&url).with_api_key_env("CAIRN_TEST_OPENAI_KEY_SET")).unwrap();
    e.embed_texts(&["x"]).unwrap();
    let seen = seen.lock().unwrap();
    let auth = seen[0]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    assert_eq!(auth.as_deref(), Some("Bearer sk-test-123"));
    // Debug never shows the key.
    assert!(!format!("{e:?}").contains("sk-test-123"));
}

#[test]
fn retries_a_server_error_then_succeeds() {
    let (url, seen) = stub(|n, body| match n {
        0 => Reply::Respond(500, r#"{"error": "overloaded"}"#.into()),
        1 => Reply::Respond(429, r#"{"error": "slow down"}"#.into()),
        _ => Reply::Respond(200, embeddings_response(body, 0.0)),
    });
    let e = OpenAiEmbedder::new(fast(&url)).unwrap();
    assert_eq!(e.embed_texts(&["abc"]).unwrap(), vec![vector_of("abc", 0.0)]);
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[test]
fn gives_up_after_the_retries() {
    let (url, seen) = stub(|_, _| Reply::Respond(503, "busy".into()));
    let e = OpenAiEmbedder::new(fast(&url)).unwrap();
    match e.embed_texts(&["abc"]).unwrap_err() {
        OpenAiError::Status {
            status, attempts, body, ..
        } => {
            assert_eq!((status, attempts, body.as_str()), (503, 3, "busy"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[test]
fn a_401_is_not_retried_and_names_the_key_variable() {
    let (url, seen) = stub(|_, _| Reply::Respond(401, r#"{"error": {"message": "Incorrect API key"}}"#.into()));
    let e = OpenAiEmbedder::new(fast(&url)).unwrap();
    let err = e.embed_texts(&["abc"]).unwrap_err();
    match &err {
        OpenAiError::Status {
            status, attempts, body, ..
        } => {
            assert_eq!((*status, *attempts), (401, 1));
            assert!(body.contains("Incorrect API key"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("CAIRN_TEST_OPENAI_KEY_UNSET"), "{err}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn malformed_json_is_a_typed_error() {
    let (url, _) = stub(|_, _| Reply::Respond(200, r#"{"data": [{"index": 0, "embedding": [1.0, "#.into()));
    let e = OpenAiEmbedder::new(fast(&url)).unwrap();
    assert!(matches!(e.embed_texts(&["abc"]), Err(OpenAiError::BadJson { .. })));
}

#[test]
fn wrong_count_wrong_dimension_and_non_finite_are_typed_errors() {
    // One vector for two texts.
    let (url, _) = stub(|_, _| Reply::Respond(200, r#"{"data": [{"index": 0, "embedding": [1.0]}]}"#.into()));
    let e = OpenAiEmbedder::new(fast(&url)).unwrap();
    assert!(matches!(
        e.embed_texts(&["a", "b"]),
        Err(OpenAiError::WrongCount {
            expected: 2,
            got: 1,
            ..
        })
    ));

    // A repeated index.
    let (url, _) = stub(|_, _| {
        Reply::Respond(
            200,
            r#"{"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}"#.into(),
        )
    });
    let e = OpenAiEmbedder::new(fast(&url)).unwrap();
    assert!(matches!(
        e.embed_texts(&["a", "b"]),
        Err(OpenAiError::WrongCount { .. })
    ));

    // The configured dimension is 4; the service returns 3.
    let (url, _) = stub(|_, body| Reply::Respond(200, embeddings_response(body, 0.0)));
    let e = OpenAiEmbedder::new(fast(&url).with_dim(4)).unwrap();
    assert!(matches!(
        e.embed_texts(&["a"]),
        Err(OpenAiError::WrongDimension {
            input: 0,
            expected: 4,
            got: 3
        })
    ));

    // Vectors of one call disagree.
    let (url, _) = stub(|_, _| {
        Reply::Respond(
            200,
            r#"{"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [2.0]}]}"#.into(),
        )
    });
    let e = OpenAiEmbedder::new(fast(&url)).unwrap();
    assert!(matches!(
        e.embed_texts(&["a", "b"]),
        Err(OpenAiError::WrongDimension { input: 1, .. })
    ));

    // 1e39 does not fit an f32.
    let (url, _) = stub(|_, _| Reply::Respond(200, r#"{"data": [{"index": 0, "embedding": [1.0, 1e39]}]}"#.into()));
    let e = OpenAiEmbedder::new(fast(&url)).unwrap();
    assert!(matches!(
        e.embed_texts(&["a"]),
        Err(OpenAiError::NonFinite { input: 0, component: 1 })
    ));
}

#[test]
fn a_silent_server_times_out() {
    let (url, seen) = stub(|_, _| Reply::Hang(Duration::from_secs(3)));
    let config = fast(&url).with_timeout(Duration::from_millis(300)).with_retries(
        1,
        Duration::from_millis(5),
        Duration::from_millis(5),
    );
    let e = OpenAiEmbedder::new(config).unwrap();
    match e.embed_texts(&["abc"]).unwrap_err() {
        OpenAiError::Timeout { attempts, .. } => assert_eq!(attempts, 2),
        other => panic!("unexpected {other:?}"),
    }
    // (The stub serves one connection at a time: the retry may still wait in its backlog.)
    assert!(!seen.lock().unwrap().is_empty());
}

#[test]
fn a_closed_port_is_a_connection_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = OpenAiEmbedder::new(fast(&format!("http://127.0.0.1:{port}"))).unwrap();
    match e.embed_texts(&["abc"]).unwrap_err() {
        OpenAiError::Connection { attempts, .. } => assert_eq!(attempts, 3),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn bad_settings_are_refused() {
    for config in [
        OpenAiConfig::new("ftp://x", "m"),
        OpenAiConfig::new("http://", "m"),
        OpenAiConfig::new("http://localhost:1", ""),
        OpenAiConfig::new("http://localhost:1", "m").with_batch_size(0),
        OpenAiConfig::new("http://localhost:1", "m").with_dim(0),
        OpenAiConfig::new("http://localhost:1", "m").with_api_key_env(""),
    ] {
        assert!(
            matches!(
                OpenAiEmbedder::new(config.clone()),
                Err(OpenAiError::InvalidConfig { .. })
            ),
            "{config:?}"
        );
    }
}
