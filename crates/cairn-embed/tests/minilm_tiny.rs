//! The MiniLM code path on a tiny randomly initialised BERT written by the test
//! (config.json, a WordPiece tokenizer.json, model.safetensors): loading, tokenising,
//! truncation, batching, normalisation, determinism and load errors — everywhere, with
//! no model download.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cairn_embed::{find_model_dir, MiniLm, ModelError, MAX_TOKENS, MODEL_DIR_ENV};
use cairn_retrieve::Embedder;
use safetensors::{Dtype, View};
use serde_json::json;

const HIDDEN: usize = 32;
const HEADS: usize = 4;
const LAYERS: usize = 2;
const INTER: usize = 64;
const MAX_POS: usize = 300;

/// The tokenizer's vocabulary: specials, letters, `##` letters, digits, punctuation.
fn vocab() -> Vec<String> {
    let mut v: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let letters: Vec<char> = ('a'..='z').collect();
    v.extend(letters.iter().map(|c| c.to_string()));
    v.extend(letters.iter().map(|c| format!("##{c}")));
    v.extend(('0'..='9').map(|c| c.to_string()));
    v.extend(('0'..='9').map(|c| format!("##{c}")));
    v.extend([".", ",", "!", "?"].iter().map(|s| s.to_string()));
    v
}

fn tokenizer_json() -> serde_json::Value {
    let vocab: BTreeMap<String, usize> = vocab().into_iter().enumerate().map(|(i, t)| (t, i)).collect();
    let special = |id: usize, content: &str| {
        json!({"id": id, "content": content, "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false, "special": true})
    };
    json!({
        "version": "1.0",
        // Like the real file, tokenizer.json asks for other truncation and padding:
        // the loader must replace them (256, no padding).
        "truncation": {"direction": "Right", "max_length": 8, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 16}, "direction": "Right", "pad_to_multiple_of": null,
                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": [special(0, "[PAD]"), special(1, "[UNK]"), special(2, "[CLS]"), special(3, "[SEP]")],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab}
    })
}

fn config_json(vocab_size: usize) -> serde_json::Value {
    json!({
        "architectures": ["BertModel"], "model_type": "bert",
        "hidden_act": "gelu", "hidden_size": HIDDEN, "intermediate_size": INTER,
        "layer_norm_eps": 1e-12, "max_position_embeddings": MAX_POS,
        "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
        "pad_token_id": 0, "position_embedding_type": "absolute",
        "type_vocab_size": 2, "vocab_size": vocab_size
    })
}

/// Deterministic pseudo-random numbers in [-1, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, scale: f32, offset: f32) -> Vec<f32> {
        (0..n).map(|_| offset + scale * self.next()).collect()
    }
}

/// The tensors of a random tiny BERT (names as in a Hugging Face `BertModel`).
fn tensors(vocab_size: usize) -> BTreeMap<String, (Vec<usize>, Vec<f32>)> {
    let mut r = Rng(42);
    let mut t = BTreeMap::new();
    let mut put = |name: String, shape: Vec<usize>, scale: f32, offset: f32, r: &mut Rng| {
        let n = shape.iter().product();
        t.insert(name, (shape, r.vec(n, scale, offset)));
    };
    put(
        "embeddings.word_embeddings.weight".into(),
        vec![vocab_size, HIDDEN],
        1.0,
        0.0,
        &mut r,
    );
    put(
        "embeddings.position_embeddings.weight".into(),
        vec![MAX_POS, HIDDEN],
        0.3,
        0.0,
        &mut r,
    );
    put(
        "embeddings.token_type_embeddings.weight".into(),
        vec![2, HIDDEN],
        0.3,
        0.0,
        &mut r,
    );
    put("embeddings.LayerNorm.weight".into(), vec![HIDDEN], 0.1, 1.0, &mut r);
    put("embeddings.LayerNorm.bias".into(), vec![HIDDEN], 0.1, 0.0, &mut r);
    for l in 0..LAYERS {
        let p = format!("encoder.layer.{l}");
        for n in ["query", "key", "value"] {
            put(
                format!("{p}.attention.self.{n}.weight"),
                vec![HIDDEN, HIDDEN],
                0.4,
                0.0,
                &mut r,
            );
            put(format!("{p}.attention.self.{n}.bias"), vec![HIDDEN], 0.1, 0.0, &mut r);
        }
        put(
            format!("{p}.attention.output.dense.weight"),
            vec![HIDDEN, HIDDEN],
            0.3,
            0.0,
            &mut r,
        );
        put(
            format!("{p}.attention.output.dense.bias"),
            vec![HIDDEN],
            0.1,
            0.0,
            &mut r,
        );
        put(
            format!("{p}.attention.output.LayerNorm.weight"),
            vec![HIDDEN],
            0.1,
            1.0,
            &mut r,
        );
        put(
            format!("{p}.attention.output.LayerNorm.bias"),
            vec![HIDDEN],
            0.1,
            0.0,
            &mut r,
        );
        put(
            format!("{p}.intermediate.dense.weight"),
            vec![INTER, HIDDEN],
            0.3,
            0.0,
            &mut r,
        );
        put(format!("{p}.intermediate.dense.bias"), vec![INTER], 0.1, 0.0, &mut r);
        put(
            format!("{p}.output.dense.weight"),
            vec![HIDDEN, INTER],
            0.2,
            0.0,
            &mut r,
        );
        put(format!("{p}.output.dense.bias"), vec![HIDDEN], 0.1, 0.0, &mut r);
        put(format!("{p}.output.LayerNorm.weight"), vec![HIDDEN], 0.1, 1.0, &mut r);
        put(format!("{p}.output.LayerNorm.bias"), vec![HIDDEN], 0.1, 0.0, &mut r);
    }
    t
}

/// A float32 tensor for `safetensors::serialize`.
struct F32Tensor {
    shape: Vec<usize>,
    bytes: Vec<u8>,
}
impl View for &F32Tensor {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

fn safetensors_bytes(t: &BTreeMap<String, (Vec<usize>, Vec<f32>)>) -> Vec<u8> {
    let owned: Vec<(String, F32Tensor)> = t
        .iter()
        .map(|(k, (shape, v))| {
            let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            (
                k.clone(),
                F32Tensor {
                    shape: shape.clone(),
                    bytes,
                },
            )
        })
        .collect();
    safetensors::serialize(owned.iter().map(|(k, v)| (k.as_str(), v)), None).unwrap()
}

/// Writes the tiny model into `dir` (config vocabulary `vocab_size`).
fn write_model_with(dir: &Path, vocab_size: usize) {
    std::fs::write(dir.join("config.json"), config_json(vocab_size).to_string()).unwrap();
    std::fs::write(dir.join("tokenizer.json"), tokenizer_json().to_string()).unwrap();
    std::fs::write(dir.join("model.safetensors"), safetensors_bytes(&tensors(vocab_size))).unwrap();
}

fn write_model(dir: &Path) {
    write_model_with(dir, vocab().len());
}

fn tiny() -> (tempfile::TempDir, MiniLm) {
    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path());
    let m = MiniLm::load(tmp.path()).unwrap();
    (tmp, m)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `n` words of 3 letters: 3·n word pieces (a letter and two `##` letters each).
fn words(n: usize, seed: usize) -> String {
    (0..n)
        .map(|i| {
            let c = |k: usize| (b'a' + ((i * 7 + seed * 3 + k * 11) % 26) as u8) as char;
            format!("{}{}{}", c(0), c(1), c(2))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

// ------------------------------------------------------------------ a plain reference

/// A straightforward float64 BERT forward pass + mean pooling + L2 norm, over the same
/// weights: checks the optimised float32 pass computes the right function.
fn reference(t: &BTreeMap<String, (Vec<usize>, Vec<f32>)>, ids: &[u32]) -> Vec<f64> {
    let w = |n: &str| -> Vec<f64> { t[n].1.iter().map(|&x| x as f64).collect() };
    let n = ids.len();
    let ln = |x: &mut Vec<Vec<f64>>, p: &str| {
        let (g, b) = (w(&format!("{p}.weight")), w(&format!("{p}.bias")));
        for row in x.iter_mut() {
            let mean = row.iter().sum::<f64>() / HIDDEN as f64;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / HIDDEN as f64;
            for d in 0..HIDDEN {
                row[d] = (row[d] - mean) / (var + 1e-12).sqrt() * g[d] + b[d];
            }
        }
    };
    let lin = |x: &Vec<Vec<f64>>, p: &str, dout: usize| -> Vec<Vec<f64>> {
        let (wt, b) = (w(&format!("{p}.weight")), w(&format!("{p}.bias")));
        let din = x[0].len();
        x.iter()
            .map(|row| {
                (0..dout)
                    .map(|o| b[o] + (0..din).map(|k| row[k] * wt[o * din + k]).sum::<f64>())
                    .collect()
            })
            .collect()
    };
    let (we, pe, te) = (
        w("embeddings.word_embeddings.weight"),
        w("embeddings.position_embeddings.weight"),
        w("embeddings.token_type_embeddings.weight"),
    );
    let mut x: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..HIDDEN)
                .map(|d| we[ids[i] as usize * HIDDEN + d] + pe[i * HIDDEN + d] + te[d])
                .collect()
        })
        .collect();
    ln(&mut x, "embeddings.LayerNorm");
    let hd = HIDDEN / HEADS;
    for l in 0..LAYERS {
        let p = format!("encoder.layer.{l}");
        let q = lin(&x, &format!("{p}.attention.self.query"), HIDDEN);
        let k = lin(&x, &format!("{p}.attention.self.key"), HIDDEN);
        let v = lin(&x, &format!("{p}.attention.self.value"), HIDDEN);
        let mut ctx = vec![vec![0.0; HIDDEN]; n];
        for h in 0..HEADS {
            for i in 0..n {
                let s: Vec<f64> = (0..n)
                    .map(|j| (0..hd).map(|d| q[i][h * hd + d] * k[j][h * hd + d]).sum::<f64>() / (hd as f64).sqrt())
                    .collect();
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = s.iter().map(|v| (v - m).exp()).collect();
                let z: f64 = e.iter().sum();
                for d in 0..hd {
                    ctx[i][h * hd + d] = (0..n).map(|j| e[j] / z * v[j][h * hd + d]).sum();
                }
            }
        }
        let mut a = lin(&ctx, &format!("{p}.attention.output.dense"), HIDDEN);
        for i in 0..n {
            for d in 0..HIDDEN {
                a[i][d] += x[i][d];
            }
        }
        ln(&mut a, &format!("{p}.attention.output.LayerNorm"));
        let mut inter = lin(&a, &format!("{p}.intermediate.dense"), INTER);
        for row in inter.iter_mut() {
            for v in row.iter_mut() {
                *v = 0.5 * *v * (1.0 + libm::erf(*v / 2f64.sqrt()));
            }
        }
        let mut o = lin(&inter, &format!("{p}.output.dense"), HIDDEN);
        for i in 0..n {
            for d in 0..HIDDEN {
                o[i][d] += a[i][d];
            }
        }
        ln(&mut o, &format!("{p}.output.LayerNorm"));
        x = o;
    }
    let mut pooled: Vec<f64> = (0..HIDDEN)
        .map(|d| x.iter().map(|r| r[d]).sum::<f64>() / n as f64)
        .collect();
    let norm = pooled.iter().map(|v| v * v).sum::<f64>().sqrt();
    for v in pooled.iter_mut() {
        *v /= norm;
    }
    pooled
}

// ------------------------------------------------------------------------------ tests

#[test]
fn matches_a_plain_float64_forward_pass() {
    let (_tmp, m) = tiny();
    let t = tensors(vocab().len());
    for text in [
        "a",
        "hello world, again!",
        "The 42 QUICK brown foxes jumped.",
        &words(120, 1),
    ] {
        let ids = m.token_ids(text).unwrap();
        let want = reference(&t, &ids);
        let got = m.embed(text).unwrap();
        let cos: f64 = got.iter().zip(&want).map(|(g, w)| *g as f64 * w).sum();
        let maxdiff = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (*g as f64 - w).abs())
            .fold(0.0, f64::max);
        assert!(cos > 0.99999, "{text:?}: cosine {cos}");
        assert!(maxdiff < 1e-4, "{text:?}: max abs difference {maxdiff}");
    }
}

#[test]
fn tokenises_with_cls_and_sep_and_gives_unit_vectors() {
    let (_tmp, m) = tiny();
    assert_eq!(m.dim(), HIDDEN);
    assert_eq!(m.max_tokens(), MAX_TOKENS);
    // "Hi, ok" -> [CLS] h ##i , o ##k [SEP] (lower-cased, punctuation split)
    let v = vocab();
    let id = |s: &str| v.iter().position(|t| t == s).unwrap() as u32;
    assert_eq!(
        m.token_ids("Hi, ok").unwrap(),
        vec![
            id("[CLS]"),
            id("h"),
            id("##i"),
            id(","),
            id("o"),
            id("##k"),
            id("[SEP]")
        ]
    );
    assert_eq!(m.token_ids("").unwrap(), vec![id("[CLS]"), id("[SEP]")]);
    for text in ["", "x", "some words here", &words(400, 2)] {
        let e = m.embed(text).unwrap();
        assert_eq!(e.len(), HIDDEN);
        assert!(e.iter().all(|x| x.is_finite()));
        let norm: f64 = e.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{text:?}: norm {norm}");
    }
    // Different texts, different vectors.
    assert_ne!(bits(&m.embed("abc").unwrap()), bits(&m.embed("abd").unwrap()));
}

#[test]
fn truncates_to_256_word_pieces() {
    let (_tmp, m) = tiny();
    let long = words(200, 3); // 600 word pieces
    let ids = m.token_ids(&long).unwrap();
    assert_eq!(ids.len(), MAX_TOKENS);
    assert_eq!(ids[0], 2, "[CLS] first");
    assert_eq!(*ids.last().unwrap(), 3, "[SEP] kept last");
    // What lies past the cut changes nothing.
    let longer = format!("{long} {}", words(50, 9));
    assert_eq!(bits(&m.embed(&long).unwrap()), bits(&m.embed(&longer).unwrap()));
    // A text of exactly 254 pieces + 2 specials is not cut; one more piece is.
    let exact = words(84, 4) + " ab"; // 84·3 + 2 = 254
    assert_eq!(m.token_ids(&exact).unwrap().len(), 256);
    let over = words(85, 4);
    assert_eq!(m.token_ids(&over).unwrap().len(), 256);
    assert_eq!(m.token_ids(&words(10, 0)).unwrap().len(), 32);
}

#[test]
fn batch_equals_one_by_one_bit_for_bit() {
    let (_tmp, m) = tiny();
    let owned: Vec<String> = vec![
        "".into(),
        "short".into(),
        words(200, 5),
        "short".into(),
        words(7, 6),
        "MIXED Case, punctuation!?".into(),
        words(60, 7),
    ];
    let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
    let batch = m.embed_batch(&texts).unwrap();
    assert_eq!(batch.len(), texts.len());
    for (t, v) in texts.iter().zip(&batch) {
        assert_eq!(bits(&m.embed(t).unwrap()), bits(v), "{t:?}");
    }
    // A batch larger than one forward pass (40 × 256 tokens): same vectors.
    let big_owned: Vec<String> = (0..40).map(|i| words(100, i)).collect();
    let big: Vec<&str> = big_owned.iter().map(String::as_str).collect();
    let together = m.embed_batch(&big).unwrap();
    for (i, t) in big.iter().enumerate().step_by(7) {
        assert_eq!(bits(&m.embed(t).unwrap()), bits(&together[i]));
    }
    assert!(m.embed_batch(&[]).unwrap().is_empty());
}

/// Env var that turns [`child_writes_embeddings`] on: `model_dir|out_file`.
const CHILD: &str = "CAIRN_EMBED_TINY_CHILD";

fn probes() -> Vec<String> {
    vec!["".into(), "one".into(), words(30, 1), words(150, 2)]
}

#[test]
#[ignore = "run as a child process by identical_bytes_across_processes_and_thread_counts"]
fn child_writes_embeddings() {
    let Ok(arg) = std::env::var(CHILD) else { return };
    let (dir, out) = arg.split_once('|').unwrap();
    let m = MiniLm::load(dir).unwrap();
    let owned = probes();
    let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
    let bytes: Vec<u8> = m
        .embed_batch(&texts)
        .unwrap()
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    std::fs::write(out, bytes).unwrap();
}

#[test]
fn identical_bytes_across_processes_and_thread_counts() {
    let (tmp, m) = tiny();
    let here: Vec<u8> = probes()
        .iter()
        .flat_map(|t| m.embed(t).unwrap())
        .flat_map(|x| x.to_le_bytes())
        .collect();
    // Every thread count with the kernel this CPU picks, and the portable kernel forced
    // by the environment variable.
    let runs = [
        ("1", None),
        ("2", None),
        ("5", None),
        ("7", None),
        ("1", Some("portable")),
        ("5", Some("portable")),
        ("2", Some("avx2")),
    ];
    for (threads, kernel) in runs {
        let out = tmp.path().join(format!("out-{threads}-{kernel:?}"));
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--ignored", "--exact", "child_writes_embeddings", "--test-threads=1"])
            .env("RAYON_NUM_THREADS", threads)
            .env(CHILD, format!("{}|{}", tmp.path().display(), out.display()));
        match kernel {
            Some(k) => cmd.env(KERNEL_ENV, k),
            None => cmd.env_remove(KERNEL_ENV),
        };
        let res = cmd.output().unwrap();
        assert!(res.status.success(), "child: {}", String::from_utf8_lossy(&res.stderr));
        let bytes = std::fs::read(&out).unwrap();
        assert!(
            bytes == here,
            "RAYON_NUM_THREADS={threads} {KERNEL_ENV}={kernel:?}: other bytes than this process"
        );
    }
}

/// The bits of the portable kernel (plain Rust, `f32::mul_add`) for [`GOLDEN_TEXT`]
/// on the tiny model: they hold on every CPU. Regenerate (only for a deliberate change
/// of the arithmetic) with `CAIRN_EMBED_PRINT_GOLDEN=1`.
const GOLDEN_TINY: [u32; HIDDEN] = [
    0xbd065ce9, 0xbec85d11, 0x3e39fe25, 0xbcac9465, 0xbb14cd29, 0x3c726feb, 0x3dd34e55, 0x3e00ab64, 0xbe249115,
    0xbe10ed2b, 0x3d5b815e, 0x3bfc9054, 0x3e5b38fa, 0x3d584623, 0xbddb8326, 0xbe27f05f, 0x3e8c8fb7, 0xbeb6440e,
    0xbdd373ef, 0x3e1391cb, 0x3e0c7cc9, 0x3e21d9d3, 0xbec0d09e, 0x3d8a97f4, 0xbc332990, 0x3e163512, 0xbd1c1a0e,
    0xbdd8b5fb, 0xbe5b9d3b, 0xbb6fbfe3, 0x3dedbff9, 0x3eba4b41,
];

const GOLDEN_TEXT: &str = "Flutter of a swept wing, 42 times!";

const KERNEL_ENV: &str = "CAIRN_EMBED_KERNEL";

#[test]
fn portable_kernel_matches_the_golden_vector_and_the_simd_kernels() {
    let (_tmp, simd) = tiny();
    let (_tmp2, mut portable) = tiny();
    portable.use_portable_kernel();
    assert_eq!(portable.kernel_name(), "portable");
    let golden = bits(&portable.embed(GOLDEN_TEXT).unwrap());
    if std::env::var_os("CAIRN_EMBED_PRINT_GOLDEN").is_some() {
        println!("GOLDEN_TINY = {:#010x?}", golden);
    }
    assert_eq!(golden, GOLDEN_TINY, "the portable kernel's bits changed");
    // Whatever kernel this CPU picks gives the same bits as the portable one.
    let owned: Vec<String> = probes()
        .into_iter()
        .chain([words(200, 11), GOLDEN_TEXT.into()])
        .collect();
    let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
    let a = portable.embed_batch(&texts).unwrap();
    let b = simd.embed_batch(&texts).unwrap();
    for ((t, x), y) in texts.iter().zip(&a).zip(&b) {
        assert_eq!(bits(x), bits(y), "{} kernel vs portable: {t:?}", simd.kernel_name());
    }
}

#[test]
fn concurrent_callers_get_the_same_bits() {
    let (_tmp, m) = tiny();
    let text = words(40, 8);
    let want = bits(&m.embed(&text).unwrap());
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..4).map(|_| s.spawn(|| bits(&m.embed(&text).unwrap()))).collect();
        for h in hs {
            assert_eq!(h.join().unwrap(), want);
        }
    });
}

// ------------------------------------------------------------------------- errors

fn open_err(dir: &Path) -> ModelError {
    MiniLm::open(dir).expect_err("must not load")
}

#[test]
fn a_missing_file_is_named() {
    for name in ["config.json", "tokenizer.json", "model.safetensors"] {
        let tmp = tempfile::tempdir().unwrap();
        write_model(tmp.path());
        std::fs::remove_file(tmp.path().join(name)).unwrap();
        match open_err(tmp.path()) {
            ModelError::MissingFile { path } => assert_eq!(path, tmp.path().join(name)),
            other => panic!("{name}: {other:?}"),
        }
        let msg = MiniLm::load(tmp.path()).unwrap_err().message;
        assert!(msg.contains(name), "{msg}");
    }
    let missing = open_err(Path::new("/nonexistent/cairn-minilm"));
    assert!(matches!(missing, ModelError::MissingFile { .. }));
}

#[test]
fn a_bad_config_is_a_typed_error() {
    let cases: Vec<(&str, String)> = vec![
        ("not json", "{ nope".into()),
        ("missing field", json!({"hidden_size": 32}).to_string()),
        ("heads", {
            let mut c = config_json(vocab().len());
            c["num_attention_heads"] = json!(5);
            c.to_string()
        }),
        ("activation", {
            let mut c = config_json(vocab().len());
            c["hidden_act"] = json!("relu");
            c.to_string()
        }),
        ("zero layers", {
            let mut c = config_json(vocab().len());
            c["num_hidden_layers"] = json!(0);
            c.to_string()
        }),
    ];
    for (what, text) in cases {
        let tmp = tempfile::tempdir().unwrap();
        write_model(tmp.path());
        std::fs::write(tmp.path().join("config.json"), text).unwrap();
        match open_err(tmp.path()) {
            ModelError::BadConfig { path, reason } => {
                assert_eq!(path, tmp.path().join("config.json"), "{what}");
                assert!(!reason.is_empty());
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn a_bad_tokenizer_is_a_typed_error() {
    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path());
    std::fs::write(tmp.path().join("tokenizer.json"), "{\"model\": 3}").unwrap();
    assert!(matches!(open_err(tmp.path()), ModelError::BadTokenizer { .. }));
}

#[test]
fn bad_weights_are_a_typed_error() {
    let bad = |bytes: Vec<u8>| {
        let tmp = tempfile::tempdir().unwrap();
        write_model(tmp.path());
        std::fs::write(tmp.path().join("model.safetensors"), bytes).unwrap();
        match open_err(tmp.path()) {
            ModelError::BadWeights { path, reason } => {
                assert_eq!(path, tmp.path().join("model.safetensors"));
                reason
            }
            other => panic!("{other:?}"),
        }
    };
    // Truncated file.
    let mut full = safetensors_bytes(&tensors(vocab().len()));
    full.truncate(full.len() / 2);
    bad(full);
    // Garbage.
    bad(b"not a safetensors file".to_vec());
    // A tensor missing.
    let mut t = tensors(vocab().len());
    t.remove("encoder.layer.1.output.dense.bias");
    let reason = bad(safetensors_bytes(&t));
    assert!(reason.contains("encoder.layer.1.output.dense.bias"), "{reason}");
    // A tensor of the wrong shape.
    let mut t = tensors(vocab().len());
    t.insert(
        "embeddings.LayerNorm.bias".into(),
        (vec![HIDDEN + 1], vec![0.0; HIDDEN + 1]),
    );
    let reason = bad(safetensors_bytes(&t));
    assert!(reason.contains("embeddings.LayerNorm.bias"), "{reason}");
}

#[test]
fn token_ids_outside_the_vocabulary_are_an_error_not_a_panic() {
    // config and weights for 60 ids, a tokenizer that also emits ids 60..80 (digits).
    let tmp = tempfile::tempdir().unwrap();
    write_model_with(tmp.path(), 60);
    let m = MiniLm::load(tmp.path()).unwrap();
    assert!(m.embed("abc").is_ok());
    let err = m.embed("abc 7").unwrap_err();
    assert!(err.message.contains("vocabulary"), "{}", err.message);
    assert!(m.embed_batch(&["abc", "9"]).is_err());
}

#[test]
fn find_model_dir_prefers_the_env_var() {
    let dir = PathBuf::from("/somewhere/minilm");
    // This test binary reads the variable nowhere else.
    std::env::set_var(MODEL_DIR_ENV, &dir);
    assert_eq!(find_model_dir(), Some(dir));
    std::env::remove_var(MODEL_DIR_ENV);
}
