//! A bounded load test of `cairn serve`: a synthetic repository (10,000 nodes by default)
//! served in-process on 127.0.0.1, N client threads each sending a fixed number of
//! requests over one kept-alive connection; prints requests/s and p50/p99 latency for
//! hybrid-free text retrieval, a retrieval with a dense lane, and node reads.
//!
//! `cargo bench -p cairn-server --bench load` (settings: `CAIRN_BENCH_NODES`,
//! `CAIRN_BENCH_REQUESTS` per thread). Loopback only, bounded in count: it stops by itself.

use std::time::{Duration, Instant};

use cairn::{Repo, Transaction};
use cairn_server::{Repos, RunningServer, Server, ServerOptions};
use cairn_testkit::{corpus, env_usize, text, unit_vector, Rng};

fn build_repo(nodes: usize) -> Repo {
    let repo = Repo::in_memory().expect("repo");
    let mut tx: Transaction<'_> = repo.transaction().expect("tx");
    for n in corpus(nodes) {
        tx.put_node(n).expect("put");
    }
    tx.commit("synthetic corpus").expect("commit");
    repo.build_indexes("HEAD").expect("indexes");
    repo
}

/// Sends `requests` requests from each of `threads` threads; returns every latency and
/// the wall time.
fn run(
    url: &str,
    threads: usize,
    requests: usize,
    make: fn(&mut Rng) -> (&'static str, String, Option<String>),
) -> (Vec<Duration>, Duration) {
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let url = url.to_string();
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(60)).build();
                let mut rng = Rng(0xbe4c + t as u64);
                let mut lat = Vec::with_capacity(requests);
                for _ in 0..requests {
                    let (method, path, body) = make(&mut rng);
                    let req = agent.request(method, &format!("{url}{path}"));
                    let t0 = Instant::now();
                    let r = match body {
                        Some(b) => req.send_string(&b),
                        None => req.call(),
                    };
                    let r = r.expect("request");
                    let _ = r.into_string().expect("body");
                    lat.push(t0.elapsed());
                }
                lat
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.join().expect("client thread"));
    }
    (all, started.elapsed())
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn text_query(rng: &mut Rng) -> (&'static str, String, Option<String>) {
    let spec = serde_json::json!({"text": text(rng, 3), "limit": 10});
    ("POST", "/retrieve".into(), Some(spec.to_string()))
}

fn hybrid_query(rng: &mut Rng) -> (&'static str, String, Option<String>) {
    let spec = serde_json::json!({
        "text": text(rng, 3),
        "vector": {"model": "minilm", "embedding": unit_vector(rng, 384)},
        "limit": 10
    });
    ("POST", "/retrieve".into(), Some(spec.to_string()))
}

fn node_read(rng: &mut Rng) -> (&'static str, String, Option<String>) {
    let nodes = env_usize("CAIRN_BENCH_NODES", 10_000) as u64;
    ("GET", format!("/nodes/doc-{:07}", rng.next() % nodes), None)
}

fn main() {
    let nodes = env_usize("CAIRN_BENCH_NODES", 10_000);
    let requests = env_usize("CAIRN_BENCH_REQUESTS", 250);
    let t0 = Instant::now();
    let repo = build_repo(nodes);
    eprintln!(
        "built {nodes} nodes with indexes in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let server = RunningServer::start(
        Server::new(Repos::Single(repo), ServerOptions::default()),
        "127.0.0.1:0".parse().expect("addr"),
    )
    .expect("server");
    let url = server.url();
    // Warm-up: the first query of a commit loads its indexes.
    run(&url, 1, 5, text_query);
    run(&url, 1, 5, hybrid_query);

    println!("| workload | threads | requests | req/s | p50 ms | p99 ms |");
    println!("|---|---:|---:|---:|---:|---:|");
    type Make = fn(&mut Rng) -> (&'static str, String, Option<String>);
    let workloads: [(&str, Make); 3] = [
        ("retrieve text", text_query),
        ("retrieve text+dense", hybrid_query),
        ("GET node", node_read),
    ];
    for (name, make) in workloads {
        for threads in [1, 4, 8] {
            let (mut lat, wall) = run(&url, threads, requests, make);
            lat.sort();
            println!(
                "| {name} | {threads} | {} | {:.0} | {:.2} | {:.2} |",
                lat.len(),
                lat.len() as f64 / wall.as_secs_f64(),
                pct(&lat, 0.5),
                pct(&lat, 0.99)
            );
        }
    }
    server.shutdown().expect("shutdown");
}
