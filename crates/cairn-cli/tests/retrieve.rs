//! `cairn retrieve`, `cairn index build` and `cairn eval` end to end, on the sample corpus
//! (and on a real collection from `shared/eval`, if present).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{item_ids, Sandbox, CORPUS};
use serde_json::Value;

/// The sample's `fact-team-lead` embedding (model `tiny`, 8 dimensions).
const LEAD_VECTOR: [f32; 8] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.1961, 0.0, 0.9806];

#[test]
fn text_query_human_and_json() {
    let s = Sandbox::sample();
    let q = [
        "retrieve",
        "--text",
        "winglet induced drag",
        "--label",
        "Document",
        "--limit",
        "3",
    ];
    let human = s.ok(&q);
    let head = s.rev("HEAD");
    let first = human.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("commit {}  valid at ", &head[..12])),
        "{human}"
    );
    assert!(first.contains("tokens ") && first.contains("/unlimited"), "{human}");
    assert!(human.contains("  1. "), "{human}");
    let first_item = human.lines().find(|l| l.contains("  1. ")).unwrap();
    assert!(
        first_item.contains(" doc-7 ") && first_item.contains("[text #1 "),
        "{human}"
    );
    assert!(human.contains("     text: A blended winglet"), "{human}");

    let mut json_args = q.to_vec();
    json_args.push("--json");
    let raw = s.ok(&json_args);
    assert_eq!(raw.lines().count(), 1, "--json is one line");
    let r: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(r["commit"], head.as_str());
    let ids = item_ids(&r);
    assert_eq!(ids[0], "doc-7");
    assert_eq!(ids.len(), 3);

    // The label gate: only Person nodes, however well documents match.
    let r = s.json(&[
        "retrieve",
        "--text",
        "winglet tip vortices",
        "--label",
        "Person",
        "--json",
    ]);
    let ids = item_ids(&r);
    assert_eq!(ids[0], "person-aoyama");
    assert!(ids.iter().all(|id| id.starts_with("person-")), "{ids:?}");
}

#[test]
fn valid_at_and_at_select_the_fact_of_their_time() {
    let s = Sandbox::sample();
    let ask = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "retrieve",
            "--text",
            "who leads the aerodynamics group",
            "--label",
            "Fact",
            "--json",
        ];
        args.extend_from_slice(extra);
        item_ids(&s.json(&args))
    };
    // Before the change of lead: the superseded fact; after it: the new one.
    let before = ask(&["--valid-at", "2023-01-01T00:00:00Z"]);
    assert_eq!(before[0], "fact-team-lead");
    assert!(!before.contains(&"fact-team-lead-2024".to_string()));
    let after = ask(&["--valid-at", "2025-01-01T00:00:00Z"]);
    assert_eq!(after[0], "fact-team-lead-2024");
    assert!(!after.contains(&"fact-team-lead".to_string()));
    // The default validity time is the commit's timestamp (after the change).
    assert_eq!(ask(&[])[0], "fact-team-lead-2024");
    // Ms since the epoch work too (2023-01-01).
    assert_eq!(ask(&["--valid-at", "1672531200000"]), before);
    // Both with the gate off.
    let all = ask(&["--all-time"]);
    assert!(all.contains(&"fact-team-lead".to_string()) && all.contains(&"fact-team-lead-2024".to_string()));
    // The commit before the update never heard of the new lead.
    let old = s.json(&[
        "retrieve",
        "--text",
        "who leads the aerodynamics group",
        "--label",
        "Fact",
        "--at",
        "HEAD~1",
        "--valid-at",
        "2025-01-01T00:00:00Z",
        "--json",
    ]);
    assert_eq!(old["commit"], s.rev("HEAD~1").as_str());
    let ids = item_ids(&old);
    assert_eq!(ids[0], "fact-team-lead");
    assert!(!ids.contains(&"fact-team-lead-2024".to_string()));
}

#[test]
fn vector_files_property_gates_fusion_and_expansion() {
    let s = Sandbox::sample();
    let json = s.file("q.json", &serde_json::to_string(&LEAD_VECTOR).unwrap());
    let raw: Vec<u8> = LEAD_VECTOR.iter().flat_map(|v| v.to_le_bytes()).collect();
    let f32_path = s.dir.path().join("q.f32");
    std::fs::write(&f32_path, raw).unwrap();
    let f32_path = f32_path.to_str().unwrap();

    let dense = |file: &str, extra: &[&str]| -> Value {
        let mut args = vec!["retrieve", "--vector-model", "tiny", "--vector-file", file, "--json"];
        args.extend_from_slice(extra);
        s.json(&args)
    };
    let a = dense(&json, &["--where", "topic=organisation"]);
    assert_eq!(a, dense(f32_path, &["--where", "topic=organisation"]));
    assert_eq!(item_ids(&a), ["fact-team-lead-2024"]);
    assert!(a["lanes"][0]["name"] == "dense:tiny");

    // `--where` values are JSON when they parse (2021 is a number), `--where-range` is numeric.
    let mut ids = item_ids(&dense(&json, &["--where", "year=2021", "--limit", "20"]));
    ids.sort();
    assert_eq!(ids, ["doc-6", "doc-7", "doc-8", "doc-9", "project-winglet-study"]);
    let none = dense(&json, &["--where", "year=\"2021\""]);
    assert!(item_ids(&none).is_empty(), "a JSON string is not the number 2021");
    let ids = item_ids(&dense(&json, &["--where-range", "year=2022..", "--limit", "20"]));
    assert!(
        ids.contains(&"doc-17".to_string()) && !ids.contains(&"doc-9".to_string()),
        "{ids:?}"
    );

    // Two lanes, weighted fusion (weights weigh the default score fusion).
    let r = dense(
        &json,
        &[
            "--text",
            "aerodynamics group lead",
            "--weight",
            "text=0.5",
            "--limit",
            "2",
        ],
    );
    assert_eq!(r["lanes"].as_array().unwrap().len(), 2);
    assert_eq!(item_ids(&r)[0], "fact-team-lead-2024");

    // Expansion brings in a cited document with its path.
    let r = s.json(&[
        "retrieve",
        "--text",
        "vortex generators aileron",
        "--limit",
        "10",
        "--expand-hops",
        "1",
        "--expand-kind",
        "cites",
        "--expand-direction",
        "out",
        "--json",
    ]);
    let expanded: Vec<&Value> = r["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| !i["source_path"].is_null())
        .collect();
    assert!(!expanded.is_empty(), "{r}");
    let path = expanded[0]["source_path"].as_array().unwrap();
    assert_eq!(path.last(), Some(&expanded[0]["id"]));

    // Budget and rendering flags reach the result.
    let r = s.json(&[
        "retrieve",
        "--text",
        "stall",
        "--token-budget",
        "30",
        "--render-prop",
        "year",
        "--json",
    ]);
    assert_eq!(r["token_budget"], 30);
    assert!(r["tokens_used"].as_u64().unwrap() <= 30);
    let human = s.ok(&["retrieve", "--text", "stall", "--token-budget", "30"]);
    assert!(human.contains("warning[budget_dropped]: "), "{human}");

    // A whole spec instead of flags.
    let from_spec = s.json(&[
        "retrieve",
        "--spec",
        r#"{"text": "winglet induced drag", "limit": 3}"#,
        "--json",
    ]);
    let from_flags = s.json(&["retrieve", "--text", "winglet induced drag", "--limit", "3", "--json"]);
    assert_eq!(from_spec, from_flags);
}

#[test]
fn fusion_defaults_to_score_and_weights_weigh_the_method_chosen() {
    let s = Sandbox::sample();
    let v = s.file("q.json", &serde_json::to_string(&LEAD_VECTOR).unwrap());
    let help = s.ok(&["retrieve", "--help"]);
    assert!(help.contains("[default: score]"), "{help}");
    assert!(!help.contains("weighted_rrf when"), "{help}");
    // `--valid-at` lists the forms the time parser reads.
    assert!(
        help.contains("2024-06-01 09:30; read as UTC) or a date (2024-06-01; midnight UTC)"),
        "{help}"
    );
    let query = |extra: &[&str]| {
        let mut args = vec![
            "retrieve",
            "--text",
            "aerodynamics group lead",
            "--vector-model",
            "tiny",
            "--vector-file",
            &v,
            "--explain",
            "--json",
        ];
        args.extend(extra);
        s.json(&args)
    };
    let fusion_of = |r: &Value| r["items"][0]["explain"]["fusion"].as_str().unwrap().to_string();
    let text_weight = |r: &Value| {
        r["items"][0]["explain"]["terms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["lane"] == "text")
            .map(|t| t["weight"].as_f64().unwrap())
    };
    // No flag: score fusion (dense lanes as cosines), the text lane at 0.4.
    let plain = query(&[]);
    assert_eq!(fusion_of(&plain), "score (dense as cosine, others min-max)");
    assert_eq!(plain, query(&["--fusion", "score"]));
    // A weight alone weighs the score fusion; it does not switch to weighted RRF.
    let weighted = query(&["--weight", "text=2"]);
    assert_eq!(fusion_of(&weighted), "score (dense as cosine, others min-max)");
    assert_eq!(weighted, query(&["--fusion", "score", "--weight", "text=2"]));
    assert_ne!(weighted, plain);
    if let Some(w) = text_weight(&weighted) {
        assert_eq!(w, 2.0);
    }
    // RRF only when asked for; `--rrf-k` does not pick it by itself.
    assert_eq!(
        fusion_of(&query(&["--fusion", "weighted_rrf", "--weight", "text=2"])),
        "weighted_rrf (k = 60)"
    );
    assert_eq!(fusion_of(&query(&["--fusion", "dbsf"])), "dbsf (mean ± 3σ)");
    // The previous default, min-max on every lane, text 0.8.
    let min_max = query(&["--fusion", "min_max"]);
    assert_eq!(fusion_of(&min_max), "min_max");
    if let Some(w) = text_weight(&min_max) {
        assert_eq!(w, 0.8);
    }
    let (_, err) = s.fails(&["retrieve", "--text", "stall", "--rrf-k", "10"], 1);
    assert!(err.contains("fusion.k") && err.contains("`score`"), "{err}");
}

#[test]
fn explain_terms_sum_to_the_printed_score_with_expansion() {
    let s = Sandbox::sample();
    let human = s.ok(&[
        "retrieve",
        "--text",
        "vortex generators aileron",
        "--expand-hops",
        "2",
        "--explain",
    ]);
    let lines: Vec<&str> = human.lines().collect();
    let mut checked = 0;
    let mut via_path = 0;
    for (i, line) in lines.iter().enumerate() {
        // An item line: `  N. SCORE  ID  [...]`.
        let t = line.trim_start();
        let Some((n, rest)) = t.split_once(". ") else { continue };
        if n.parse::<usize>().is_err() || !line.starts_with(' ') {
            continue;
        }
        let score: f64 = rest.split_whitespace().next().unwrap().parse().unwrap();
        // After the item line (and its `via` line, if any).
        let why = lines[i + 1..]
            .iter()
            .map(|l| l.trim_start())
            .find(|l| l.starts_with("why: "))
            .unwrap();
        assert!(why.contains("expansion ("), "{why}");
        let sum: f64 = why
            .split_whitespace()
            .filter(|w| (w.starts_with('+') || w.starts_with('-')) && w.len() > 1)
            .map(|w| w.trim_end_matches(',').parse::<f64>().unwrap())
            .sum();
        assert!((sum - score).abs() < 0.0005, "{score} vs {sum}: {why}");
        if why.contains(" edge") && !why.contains("no edge") {
            via_path += 1;
        }
        checked += 1;
    }
    assert!(checked >= 3, "{human}");
    assert!(via_path >= 1, "no item reached over an edge: {human}");
    // A lane with one hit says `1 hit`.
    let one = s.ok(&["retrieve", "--text", "perpendicular"]);
    assert!(one.contains("lanes  text (1 hit)\n"), "{one}");
}

#[test]
fn batch_prints_good_lines_and_reports_bad_ones() {
    let s = Sandbox::sample();
    let good1 = r#"{"text": "winglet induced drag", "limit": 2}"#;
    let good3 = r#"{"text": "boundary layer transition", "labels_all": ["Document"], "limit": 2}"#;
    let batch = s.file(
        "batch.jsonl",
        &format!("{good1}\n{{\"text\": \"x\", \"colour\": 1}}\n{good3}\n"),
    );
    let (stdout, stderr) = s.fails(&["retrieve", "--batch", &batch], 1);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(
        lines[0].trim_end(),
        s.ok(&["retrieve", "--spec", good1, "--json"]).trim_end()
    );
    assert_eq!(
        lines[1].trim_end(),
        s.ok(&["retrieve", "--spec", good3, "--json"]).trim_end()
    );
    assert!(stderr.contains("error: line 2: malformed retrieval spec"), "{stderr}");
    assert!(stderr.contains("unknown field `colour`"), "{stderr}");
    assert!(
        stderr.trim_end().ends_with("error: 1 of 3 batch line(s) failed"),
        "{stderr}"
    );

    // Standard input; blank lines are skipped (line numbers still count them); an
    // execution error (unknown model) is a failed line too.
    let input = format!("\n{good1}\n{{\"vector\": {{\"model\": \"nope\", \"embedding\": [1]}}}}\n");
    let out = s.run_with_stdin(&["retrieve", "--batch", "-"], &input);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error: line 3: lane `dense:nope`"), "{stderr}");

    let ok = s.run_with_stdin(&["retrieve", "--batch", "-"], &format!("{good1}\n{good3}\n"));
    assert!(ok.status.success());
    assert_eq!(String::from_utf8_lossy(&ok.stdout).lines().count(), 2);
}

#[test]
fn retrieval_output_is_deterministic() {
    let s = Sandbox::sample();
    let v = s.file("q.json", &serde_json::to_string(&LEAD_VECTOR).unwrap());
    let args = [
        "retrieve",
        "--text",
        "stall at high angle of attack",
        "--vector-model",
        "tiny",
        "--vector-file",
        &v,
        "--expand-hops",
        "2",
        "--limit",
        "8",
        "--json",
    ];
    let a = s.run(&args);
    let b = s.run(&args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let h1 = s.ok(&[
        "retrieve",
        "--text",
        "stall",
        "--fusion",
        "score",
        "--vector-model",
        "tiny",
        "--vector-file",
        &v,
    ]);
    let h2 = s.ok(&[
        "retrieve",
        "--text",
        "stall",
        "--fusion",
        "score",
        "--vector-model",
        "tiny",
        "--vector-file",
        &v,
    ]);
    assert_eq!(h1, h2);
}

#[test]
fn usage_and_retrieval_errors() {
    let s = Sandbox::sample();
    for args in [
        &["retrieve", "--where", "year"][..],
        &["retrieve", "--where-range", "year=2020"],
        &["retrieve", "--weight", "text=heavy", "--text", "x"],
        &["retrieve", "--text", "x", "--spec", "{}"],
        &["retrieve", "--text", "x", "--valid-at", "yesterday"],
        &["retrieve", "--text", "x", "--valid-at", "0", "--all-time"],
        &["retrieve", "--vector-model", "tiny"],
        &["retrieve", "--sparse-model", "s", "--sparse", "{\"indices\": [1]}"],
        &["retrieve", "--text", "x", "--fusion", "borda"],
        &["retrieve", "--batch", "-", "--text", "x"],
    ] {
        s.fails(args, 2);
    }
    let (_, err) = s.fails(&["retrieve", "--label", "Fact"], 1);
    assert!(err.starts_with("error: a retrieval needs at least one lane"), "{err}");
    let (_, err) = s.fails(&["retrieve", "--text", "x", "--limit", "0"], 1);
    assert!(err.starts_with("error: invalid retrieval setting `limit`"), "{err}");
    let (_, err) = s.fails(&["retrieve", "--text", "x", "--at", "nope"], 1);
    assert!(err.starts_with("error: ") && err.contains("nope"), "{err}");
    let (_, err) = s.fails(&["retrieve", "--text", "x", "--rrf-k", "10", "--fusion", "score"], 1);
    assert!(err.contains("fusion.k"), "{err}");
    let bad = s.file("bad.json", "[1, \"two\"]");
    let (_, err) = s.fails(&["retrieve", "--vector-model", "tiny", "--vector-file", &bad], 1);
    assert!(
        err.starts_with(&format!("error: {bad}: expected a JSON array of numbers")),
        "{err}"
    );
    let short = s.file("short.f32", "abc");
    let (_, err) = s.fails(&["retrieve", "--vector-model", "tiny", "--vector-file", &short], 1);
    assert!(err.contains("not a whole number of f32 values"), "{err}");
}

#[test]
fn index_build_reports_the_commit() {
    let s = Sandbox::init();
    s.ok(&["import", CORPUS]);
    let report = s.json(&["index", "build", "--json"]);
    assert_eq!(report["commit"], s.rev("HEAD").as_str());
    assert_eq!(report["nodes"], s.json(&["stats", "--json"])["nodes"]);
    assert_eq!(report["dense"][0]["model"], "tiny");
    assert_eq!(report["dense"][0]["unit_graphs"], 0);
    assert!(report["stored_values"].as_u64().unwrap() > 0, "{report}");
    assert!(report["chunks"].as_u64().unwrap() >= 1);
    let human = s.ok(&["index", "build", "HEAD"]);
    assert!(
        human.starts_with(&format!("indexed commit {}: ", &s.rev("HEAD")[..12])),
        "{human}"
    );
    assert!(
        human.contains("dense tiny (") && human.contains("stored 0 values") && human.trim_end().ends_with(" s)"),
        "a second build stores nothing: {human}"
    );
    let graphs = s.json(&["index", "build", "--graphs", "--json"]);
    assert!(graphs["dense"][0]["unit_graphs"].as_u64().unwrap() >= 1, "{graphs}");
    let (_, err) = s.fails(&["index", "build", "HEAD~5"], 1);
    assert!(err.contains("HEAD~5"), "{err}");
}

fn cisi() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval/cisi");
    if dir.join("meta.json").exists() {
        Some(dir)
    } else {
        eprintln!("skipping: no evaluation collection at {}", dir.display());
        None
    }
}

#[test]
fn eval_on_a_few_cisi_queries() {
    let Some(dir) = cisi() else { return };
    let dir = dir.to_str().unwrap();
    let s = Sandbox::new();
    // With --repo: the repository is created and kept.
    let report = s.json(&[
        "eval",
        "--collection",
        dir,
        "--limit-queries",
        "5",
        "--lanes",
        "dense,hybrid-min-max",
        "--json",
    ]);
    assert_eq!(
        (report["documents"].as_u64(), report["queries"].as_u64()),
        (Some(1460), Some(5))
    );
    let rows = report["rows"].as_array().unwrap();
    let lanes: Vec<&str> = rows.iter().map(|r| r["lane"].as_str().unwrap()).collect();
    assert_eq!(lanes, ["dense (exact)", "hybrid min-max (text 0.8)"]);
    for r in rows {
        for metric in ["ndcg10", "recall100"] {
            let v = r[metric].as_f64().unwrap();
            assert!(v > 0.0 && v <= 1.0, "{metric} {v}");
        }
    }
    assert!(s.repo().join("CAIRN-STORE").is_file());
    let node = s.json(&["show", "1", "--json"]);
    assert_eq!(node["labels"], serde_json::json!(["Document"]));
    assert!(node["props"]["author"].is_string());

    // Again without importing: the same numbers from the kept repository.
    let again = s.json(&[
        "eval",
        "--collection",
        dir,
        "--limit-queries",
        "5",
        "--lanes",
        "dense",
        "--no-import",
        "--json",
    ]);
    assert_eq!(again["rows"][0]["ndcg10"], rows[0]["ndcg10"]);
    assert!(again["import_ms"].is_null());

    // Without --repo: a temporary repository, nothing left in the working directory.
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["eval", "--collection", dir, "--limit-queries", "2", "--lanes", "text"])
        .current_dir(s.dir.path())
        .env_remove("CAIRN_REPO")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("| lane ") && table.contains("| text (BM25) "), "{table}");
    assert!(!s.dir.path().join(".cairn").exists());

    let (_, err) = s.fails(&["eval", "--collection", dir, "--lanes", "hybrid-expand"], 1);
    assert!(err.contains("needs --links"), "{err}");
}

#[test]
fn a_time_expression_boosts_softly_unless_no_planner() {
    let s = Sandbox::sample();
    let q = [
        "retrieve",
        "--text",
        "team lead in 2020",
        "--valid-at",
        "2020-06-01",
        "--json",
    ];
    let planned = s.json(&q);
    assert_eq!(planned["plan"]["boosts"][0]["expression"], "2020", "{planned}");
    assert_eq!(planned["plan"]["boosted"], 1, "{planned}");
    let plain = s.json(&[&q[..], &["--no-planner"]].concat());
    assert!(plain.get("plan").is_none(), "{plain}");
    // The boost lifts the fact valid in 2020 above its unplanned score, never hides anything.
    let score = |v: &serde_json::Value| {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == "fact-team-lead")
            .map(|i| i["score"].as_f64().unwrap())
            .expect("the fact is retrieved")
    };
    assert!(score(&planned) > score(&plain));
    assert_eq!(
        planned["items"].as_array().unwrap().len(),
        plain["items"].as_array().unwrap().len()
    );
}

/// A new repository's first `cairn retrieve` succeeds with no items and says why (an
/// agent's empty memory is the normal start, not an error); other revisions still fail.
#[test]
fn retrieve_on_an_empty_repository_says_so_and_succeeds() {
    let s = Sandbox::init();
    let human = s.ok(&["retrieve", "--text", "what do I know about the user"]);
    assert!(human.starts_with("commit (none yet)"), "{human}");
    assert!(
        human.contains("(no items)") && human.contains("empty_repository"),
        "{human}"
    );
    let json = s.json(&["retrieve", "--text", "what do I know", "--json"]);
    assert!(json["commit"].is_null(), "{json}");
    assert_eq!(json["items"], serde_json::json!([]));
    assert_eq!(json["warnings"][0]["code"], "empty_repository", "{json}");
    let err = s.fails_stderr(&["retrieve", "--text", "x", "--at", "HEAD~1"], 1);
    assert!(
        err.contains("no commits yet") || err.contains("unknown revision"),
        "{err}"
    );
}

/// `--memory-mib` bounds what the index holds in memory (a budget this small keeps the
/// dense rows on disk); the answer is the same bytes under any budget.
#[test]
fn memory_budget_changes_no_answer() {
    let s = Sandbox::sample();
    let q = s.file("q.json", &serde_json::to_string(&LEAD_VECTOR).unwrap());
    let args = [
        "retrieve",
        "--vector-model",
        "tiny",
        "--vector-file",
        q.as_str(),
        "--text",
        "aerodynamics group lead",
        "--at",
        "HEAD",
        "--valid-at",
        "2025-01-01",
        "--limit",
        "5",
        "--json",
    ];
    let default = s.ok(&args);
    let mut tiny = vec!["--memory-mib", "0"];
    tiny.extend_from_slice(&args);
    assert_eq!(s.ok(&tiny), default);
    let (_, err) = s.fails(&["--memory-mib", "lots", "log"], 2);
    assert!(err.contains("--memory-mib"), "{err}");
}
