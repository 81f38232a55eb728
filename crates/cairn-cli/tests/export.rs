//! `cairn export`: the output imports into a fresh repository as the same node and edge
//! roots; `-o` replaces its file only once the export is complete.

mod common;

use std::fs;
use std::path::Path;

use common::{Sandbox, CORPUS, UPDATE};

/// `stats --json`'s (node_root, edge_root) of a revision.
fn roots(s: &Sandbox, rev: &str) -> (serde_json::Value, serde_json::Value) {
    let stats = s.json(&["stats", "--at", rev, "--json"]);
    (stats["node_root"].clone(), stats["edge_root"].clone())
}

/// Imports `file` into a new repository and returns it.
fn imported(file: &str) -> Sandbox {
    let copy = Sandbox::init();
    copy.ok(&["import", file]);
    copy
}

/// Files in `dir` other than the repository.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "repo")
        .collect();
    names.sort();
    names
}

#[test]
fn the_sample_round_trips_at_head_and_before() {
    let s = Sandbox::sample();

    // HEAD, on standard output.
    let out = s.run(&["export"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let head = String::from_utf8(out.stdout).unwrap();
    let summary = String::from_utf8(out.stderr).unwrap();
    assert_eq!(summary.lines().count(), 1, "one summary line on stderr: {summary}");
    assert!(
        summary.starts_with("exported 40 nodes and 38 edges of commit "),
        "{summary}"
    );
    let file = s.file("head.jsonl", &head);
    let copy = imported(&file);
    assert_eq!(roots(&s, "HEAD"), roots(&copy, "HEAD"));
    assert_ne!(roots(&s, "HEAD").0, serde_json::Value::Null);

    // HEAD~1, through -o.
    let path = s.dir.path().join("first.jsonl");
    let path = path.to_str().unwrap();
    let said = s.ok(&["export", "HEAD~1", "-o", path]);
    assert!(said.contains("exported") && said.contains(path), "{said}");
    let copy = imported(path);
    assert_eq!(roots(&s, "HEAD~1"), roots(&copy, "HEAD"));
    assert_ne!(roots(&s, "HEAD~1"), roots(&s, "HEAD"));

    // Exporting the copy gives the same bytes: the output depends only on the content.
    let again = copy.ok(&["export"]);
    assert_eq!(again, fs::read_to_string(path).unwrap());
}

/// Every awkward thing the format holds, in the import format a person would write
/// (RFC 3339 times, `-0.0`, a patch and an invalidate on top).
const AWKWARD: &str = r#"{"node": {"id": "a \"quoted\" id\n", "labels": ["Doc", "Ünïcødé", "with \"quotes\""], "text": "quote \" backslash \\ newline \n cr \r tab \t nul \u0000 é 日本 🦀 \u2028 \ufeff", "props": {"nested": {"list": [1, -2.5, null, true, false, "s\n"], "empty_list": [], "empty_map": {}, "deep": [[[{"k": [1.0, 2]}]]]}, "int": 9223372036854775807, "neg": -9223372036854775808, "float": 1e300, "whole": 3.0, "tiny": 5e-324, "zero": -0.0, "ключ \"key\"": "значение"}, "embeddings": {"dense": [-0.0, 1e-45, 1e-38, 3.4e38, 0.1961, 1.17549435e-38, -3.4028235e38, 0.30000001192092896]}, "sparse": {"kw": {"indices": [0, 3, 4294967295], "values": [1.0, -0.0, 1e-45]}, "none": {"indices": [], "values": []}}, "valid_from": "2018-09-01T00:00:00Z", "valid_until": 1735689600000}}
{"node": {"id": "🦀", "text": " ", "embeddings": {"dense": [1, 2, 3, 4, 5, 6, 7, 8]}, "valid_from": -1}}
{"node": {"id": "plain"}}
{"node": {"id": "ends", "valid_until": "2024-06-01"}}
{"edge": {"source": "a \"quoted\" id\n", "target": "🦀", "kind": "cites \"x\"", "weight": -0.125, "props": {"m": {"x": [1, {"y": "z"}]}, "w": 0.1}, "valid_from": "2020-01-01T00:00:00+02:00", "valid_until": "2030-01-01"}}
{"edge": {"source": "🦀", "target": "🦀", "kind": "self", "weight": -0.0}}
{"edge": {"source": "plain", "target": "ends", "kind": "one", "weight": 1.0}}
{"edge": {"source": "plain", "target": "🦀", "kind": "big", "weight": 1.7976931348623157e308, "valid_until": 0}}
{"patch": {"id": "plain", "labels_add": ["Patched"], "props": {"p": [1.5e-7]}}}
{"invalidate": {"id": "🦀", "valid_until": "2025-01-01T12:30"}}
"#;

#[test]
fn awkward_content_round_trips() {
    let s = Sandbox::init();
    let input = s.file("awkward.jsonl", AWKWARD);
    s.ok(&["import", &input]);
    let export = s.dir.path().join("export.jsonl");
    let export = export.to_str().unwrap();
    s.ok(&["export", "-o", export]);
    let text = fs::read_to_string(export).unwrap();
    assert_eq!(text.lines().count(), 4 + 4, "{text}");
    assert!(!text.contains("-0.0"), "-0.0 is stored as 0.0: {text}");
    assert!(
        text.contains("1e-45") && text.contains("5e-324") && text.contains("\"whole\":3.0"),
        "{text}"
    );

    let copy = imported(export);
    assert_eq!(roots(&s, "HEAD"), roots(&copy, "HEAD"));
    // The nodes read back the same, down to the JSON `show` prints.
    for id in ["a \"quoted\" id\n", "🦀", "plain", "ends"] {
        let mut a = s.json(&["show", id, "--json"]);
        let mut b = copy.json(&["show", id, "--json"]);
        a.as_object_mut().unwrap().remove("commit");
        b.as_object_mut().unwrap().remove("commit");
        assert_eq!(a, b, "node {id:?}");
    }
    assert_eq!(copy.ok(&["export"]), text);
}

#[test]
fn json_summary_goes_to_stdout_with_o_and_to_stderr_without() {
    let s = Sandbox::sample();
    let head = s.rev("HEAD");
    let path = s.dir.path().join("out.jsonl");
    let summary = s.json(&["export", "-o", path.to_str().unwrap(), "--json"]);
    assert_eq!(summary["commit"], head.as_str());
    assert_eq!(
        (summary["nodes"].as_u64(), summary["edges"].as_u64()),
        (Some(40), Some(38))
    );

    let out = s.run(&["export", "--json"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        fs::read_to_string(&path).unwrap()
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let line: serde_json::Value = serde_json::from_str(&stderr).unwrap();
    assert_eq!(line, summary);
}

#[test]
fn o_replaces_its_file_only_when_complete() {
    let s = Sandbox::sample();
    let dir = s.dir.path();
    let path = dir.join("out.jsonl");
    let path_s = path.to_str().unwrap();

    // An unknown revision: exit 1, a clear error, no file, no temporary file.
    let (stdout, stderr) = s.fails(&["export", "no-such-rev", "-o", path_s], 1);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.starts_with("error: unknown revision `no-such-rev`"), "{stderr}");
    assert!(!path.exists());
    assert_eq!(files_in(dir), Vec::<String>::new());

    // An existing file is left as it was by a failed export...
    fs::write(&path, "old contents\n").unwrap();
    s.fails(&["export", "HEAD~5", "-o", path_s], 1);
    assert_eq!(fs::read_to_string(&path).unwrap(), "old contents\n");
    assert_eq!(files_in(dir), vec!["out.jsonl".to_string()]);

    // ... and replaced whole by one that succeeds.
    s.ok(&["export", "-o", path_s]);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("{\"node\":") && text.ends_with("}\n"), "{text}");
    assert_eq!(text.lines().count(), 40 + 38);
    assert_eq!(files_in(dir), vec!["out.jsonl".to_string()]);

    // A directory that does not exist: exit 1, naming the path.
    let missing = dir.join("no-such-dir").join("out.jsonl");
    let (_, stderr) = s.fails(&["export", "-o", missing.to_str().unwrap()], 1);
    assert!(
        stderr.starts_with("error: cannot write output: ") && stderr.contains("no-such-dir"),
        "{stderr}"
    );

    // A path that is a directory: the rename fails, the temporary file is removed.
    let sub = dir.join("sub");
    fs::create_dir(&sub).unwrap();
    let (_, stderr) = s.fails(&["export", "-o", sub.to_str().unwrap()], 1);
    assert!(
        stderr.starts_with("error: cannot write output: ") && stderr.contains("sub"),
        "{stderr}"
    );
    assert_eq!(files_in(dir), vec!["out.jsonl".to_string(), "sub".to_string()]);
    assert_eq!(fs::read_dir(&sub).unwrap().count(), 0);
}

#[test]
fn an_empty_repository_has_nothing_to_export() {
    let s = Sandbox::init();
    let (stdout, stderr) = s.fails(&["export"], 1);
    assert!(stdout.is_empty());
    assert!(stderr.starts_with("error: unknown revision `HEAD`"), "{stderr}");
}

#[test]
fn the_sample_files_themselves_import_to_the_export() {
    // Importing the two sample files into one commit gives the HEAD the two commits give
    // (same content), and the export of either is the same text.
    let s = Sandbox::sample();
    let both = Sandbox::init();
    let joined = format!(
        "{}{}",
        fs::read_to_string(CORPUS).unwrap(),
        fs::read_to_string(UPDATE).unwrap()
    );
    let file = both.file("both.jsonl", &joined);
    both.ok(&["import", &file]);
    assert_eq!(roots(&s, "HEAD"), roots(&both, "HEAD"));
    assert_eq!(s.ok(&["export"]), both.ok(&["export"]));
}

#[cfg(unix)]
#[test]
fn o_through_a_symlink_replaces_the_file_it_links_to() {
    let s = Sandbox::sample();
    let real = s.dir.path().join("real.jsonl");
    fs::write(&real, "old\n").unwrap();
    let link = s.dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    s.ok(&["export", "-o", link.to_str().unwrap()]);
    assert!(
        fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
        "the link stays a link"
    );
    assert_eq!(fs::read_to_string(&real).unwrap(), s.ok(&["export"]));
}

/// A path that is not a regular file (here a named pipe; `/dev/stdout` alike) is written
/// directly, never renamed over.
#[cfg(unix)]
#[test]
fn o_to_a_pipe_writes_into_it() {
    use std::os::unix::fs::FileTypeExt;

    let s = Sandbox::sample();
    let fifo = s.dir.path().join("pipe");
    match std::process::Command::new("mkfifo").arg(&fifo).status() {
        Ok(st) if st.success() => {}
        _ => {
            eprintln!("skipping: mkfifo is not available");
            return;
        }
    }
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
    };
    let said = s.ok(&["export", "-o", fifo.to_str().unwrap()]);
    assert!(said.starts_with("exported 40 nodes"), "{said}");
    let read = reader.join().unwrap();
    assert_eq!(read, s.ok(&["export"]));
    assert!(
        fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(),
        "still a pipe"
    );
    assert_eq!(files_in(s.dir.path()), vec!["pipe".to_string()]);
}

/// `cairn export | head -1`: the reader leaving is not a failure.
#[test]
fn a_reader_that_leaves_early_is_not_an_error() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let s = Sandbox::init();
    // Well over a pipe's buffer, so the export is still writing when the reader leaves.
    let lines: String = (0..5000)
        .map(|i| {
            format!(
                "{{\"node\": {{\"id\": \"n{i:05}\", \"text\": \"{}\"}}}}\n",
                "x".repeat(100)
            )
        })
        .collect();
    let file = s.file("many.jsonl", &lines);
    s.ok(&["import", &file]);
    let mut child = s
        .command()
        .arg("export")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with(r#"{"node":{"id":"n00000""#), "{first}");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("error"));
}
