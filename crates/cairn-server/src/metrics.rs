//! Request metrics, served as Prometheus text at `GET /metrics`: requests by route,
//! method and status, a latency histogram by route, and commits made.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Tables {
    /// (route, method, status) → requests.
    requests: BTreeMap<(String, String, u16), u64>,
    /// route → latencies.
    latency: BTreeMap<String, Histogram>,
}

/// The server's counters. Cheap to update from many threads.
#[derive(Default)]
pub struct Metrics {
    tables: Mutex<Tables>,
    commits: AtomicU64,
}

impl Metrics {
    /// Records one answered request.
    pub fn record(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        let mut t = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        *t.requests
            .entry((route.to_string(), method.to_string(), status))
            .or_default() += 1;
        let h = t.latency.entry(route.to_string()).or_default();
        let s = elapsed.as_secs_f64();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if s <= *bound {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += s;
    }

    /// Records one commit made through the server (import, merge).
    pub fn record_commit(&self) {
        self.commits.fetch_add(1, Ordering::Relaxed);
    }

    /// Commits made through the server since it started.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self) -> String {
        let t = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        out.push_str("# HELP cairn_http_requests_total HTTP requests answered, by route, method and status.\n");
        out.push_str("# TYPE cairn_http_requests_total counter\n");
        for ((route, method, status), n) in &t.requests {
            let _ = writeln!(
                out,
                "cairn_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {n}",
                escape(route)
            );
        }
        out.push_str("# HELP cairn_http_request_duration_seconds Time to answer a request, by route.\n");
        out.push_str("# TYPE cairn_http_request_duration_seconds histogram\n");
        for (route, h) in &t.latency {
            let route = escape(route);
            for (bound, n) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(
                    out,
                    "cairn_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "cairn_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "cairn_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "cairn_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.count
            );
        }
        out.push_str("# HELP cairn_commits_total Commits made through the server (imports, merges).\n");
        out.push_str("# TYPE cairn_commits_total counter\n");
        let _ = writeln!(out, "cairn_commits_total {}", self.commits());
        out
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
