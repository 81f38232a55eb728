//! One bad byte must not cost the whole repository. A 300-node repository with its
//! indexes built gets one flipped byte, at a spread of offsets in every one of its files;
//! then, through the `cairn` binary:
//!
//! - the repository opens and `log` works (unless the flip hit what `log` reads — the
//!   branch's ref or a commit — which it then names, and `fsck` reports);
//! - `fsck` either says ok, or names the damage;
//! - when `fsck` says ok, every read works and returns the undamaged answer (`show` of
//!   every node, a hybrid retrieval, `stats`);
//! - when it does not, a read returns the undamaged answer or fails naming the damage —
//!   it never returns other data.
//!
//! Also: deleting any one file, and a damaged index part (derived data) costs nothing but
//! a rebuild.

mod common;

use std::fs;

use common::{copy_tree, files, Sandbox};

const NODES: usize = 300;

fn corpus(s: &Sandbox, from: usize, to: usize) -> String {
    let words = [
        "wing", "stall", "lift", "drag", "flow", "shock", "boundary", "layer", "heat", "mach",
    ];
    let mut lines = String::new();
    for i in from..to {
        let text: Vec<&str> = (0..12).map(|j| words[(i * 7 + j * 3) % words.len()]).collect();
        let vector: Vec<String> = (0..8)
            .map(|j| format!("{:.3}", ((i * 13 + j * 5) % 17) as f32 / 17.0))
            .collect();
        lines.push_str(&format!(
            "{{\"node\": {{\"id\": \"n{i}\", \"labels\": [\"Doc\"], \"text\": \"{} {i}\", \"embeddings\": {{\"m\": [{}]}}}}}}\n",
            text.join(" "),
            vector.join(", ")
        ));
    }
    s.file(&format!("part-{from}.jsonl"), &lines)
}

/// What the undamaged repository answers.
struct Answers {
    log: String,
    stats: String,
    nodes: Vec<String>,
    retrieval: String,
}

const RETRIEVE: &[&str] = &[
    "retrieve",
    "--text",
    "stall boundary",
    "--label",
    "Doc",
    "--limit",
    "5",
    "--json",
];

fn answers(s: &Sandbox) -> Answers {
    Answers {
        log: s.ok(&["log"]),
        stats: s.ok(&["stats"]),
        nodes: (0..NODES)
            .map(|i| s.ok(&["show", &format!("n{i}"), "--json"]))
            .collect(),
        retrieval: retrieval_items(&s.ok(RETRIEVE)),
    }
}

/// A retrieval's items (the warnings may differ: a rebuilt part says so).
fn retrieval_items(json: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["items"].to_string()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// True if an error message names damage (rather than some unrelated failure).
fn names_damage(msg: &str) -> bool {
    ["corrupt", "not found", "missing", "damaged", "unreadable"]
        .iter()
        .any(|w| msg.contains(w))
}

fn check(s: &Sandbox, want: &Answers, what: &str) {
    let log = s.run(&["log"]);
    if log.status.success() {
        if String::from_utf8_lossy(&log.stdout) != want.log {
            // Only a lost branch ref changes the log (the branch is then empty): its
            // commits are still there, and fsck names the newest as dangling.
            assert_eq!(String::from_utf8_lossy(&log.stdout), "", "{what}: log differs");
            let head = want.log.split_whitespace().next().unwrap();
            let fsck = s.run(&["fsck"]);
            let out = String::from_utf8_lossy(&fsck.stdout);
            let tag = format!("dangling: commit {head}");
            let at = out.find(&tag).unwrap_or_else(|| panic!("{what}: {out}")) + "dangling: commit ".len();
            s.ok(&["branch", "create", "recovered", "--at", &out[at..at + 64]]);
            s.ok(&["branch", "switch", "recovered"]);
            assert_eq!(s.ok(&["log"]), want.log, "{what}: recovered log");
            return;
        }
    } else {
        // Only if the damage hit what `log` reads (a ref, a commit): named, and fsck says so.
        assert!(names_damage(&stderr(&log)), "{what}: log failed: {}", stderr(&log));
        assert!(
            !s.run(&["fsck"]).status.success(),
            "{what}: log failed but fsck says ok"
        );
        return;
    }
    let fsck = s.run(&["fsck"]);
    let fsck_ok = fsck.status.success();
    let all_ok = |args: &[&str], expected: &str, out: &std::process::Output, transform: &dyn Fn(&str) -> String| {
        if out.status.success() {
            assert_eq!(
                transform(&String::from_utf8_lossy(&out.stdout)),
                expected,
                "{what}: `cairn {args:?}` answered differently (fsck ok: {fsck_ok})"
            );
        } else {
            assert!(
                !fsck_ok,
                "{what}: fsck says ok but `cairn {args:?}` failed: {}",
                stderr(out)
            );
            assert!(names_damage(&stderr(out)), "{what}: `cairn {args:?}`: {}", stderr(out));
        }
    };
    let same = |x: &str| x.to_owned();
    all_ok(&["stats"], &want.stats, &s.run(&["stats"]), &same);
    for (i, node) in want.nodes.iter().enumerate() {
        let args = ["show", &format!("n{i}"), "--json"];
        all_ok(&args, node, &s.run(&args), &same);
    }
    all_ok(RETRIEVE, &want.retrieval, &s.run(RETRIEVE), &|x| retrieval_items(x));
}

#[test]
fn one_bad_byte_costs_at_most_what_it_hits() {
    let s = Sandbox::init();
    s.ok(&["import", &corpus(&s, 0, 100)]);
    s.ok(&["import", &corpus(&s, 100, 200)]);
    s.ok(&["import", &corpus(&s, 200, NODES)]);
    s.ok(&["index", "build"]);
    let want = answers(&s);
    let pristine = s.repo();
    let all = files(&pristine);
    assert!(all.iter().any(|p| p.starts_with("derived")), "{all:?}");
    let mut cases = 0;
    for rel in &all {
        if rel.as_os_str() == "lock" {
            continue;
        }
        let len = fs::metadata(pristine.join(rel)).unwrap().len() as usize;
        // Six offsets per file, spread over it (all of a small file's first bytes).
        let offsets: Vec<usize> = if len <= 6 {
            (0..len).collect()
        } else {
            (0..6).map(|k| k * (len - 1) / 5).collect()
        };
        for pos in offsets {
            let damaged = Sandbox::new();
            copy_tree(&pristine, &damaged.repo());
            let path = damaged.repo().join(rel);
            let mut bytes = fs::read(&path).unwrap();
            bytes[pos] ^= 0x08;
            fs::write(&path, &bytes).unwrap();
            check(&damaged, &want, &format!("{} byte {pos}", rel.display()));
            cases += 1;
        }
    }
    eprintln!("{cases} single-byte flips over {} files", all.len());
    assert!(cases >= 30, "{cases}");
}

#[test]
fn deleting_any_one_file_costs_at_most_what_it_held() {
    let s = Sandbox::init();
    s.ok(&["import", &corpus(&s, 0, NODES)]);
    s.ok(&["index", "build"]);
    let want = answers(&s);
    for rel in files(&s.repo()) {
        if rel.as_os_str() == "lock" {
            continue;
        }
        let damaged = Sandbox::new();
        copy_tree(&s.repo(), &damaged.repo());
        fs::remove_file(damaged.repo().join(&rel)).unwrap();
        check(&damaged, &want, &format!("without {}", rel.display()));
    }
}

#[test]
fn damaged_derived_data_is_rebuilt_and_fsck_repair_clears_it() {
    let s = Sandbox::init();
    s.ok(&["import", &corpus(&s, 0, NODES)]);
    s.ok(&["index", "build"]);
    let want = retrieval_items(&s.ok(RETRIEVE));
    // Flip a byte in the middle of every derived segment.
    for rel in files(&s.repo()) {
        if rel.starts_with("derived") && rel.extension().is_some_and(|e| e == "seg") {
            let path = s.repo().join(&rel);
            let mut bytes = fs::read(&path).unwrap();
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0x01;
            fs::write(&path, bytes).unwrap();
        }
    }
    let fsck = s.run(&["fsck"]);
    assert!(
        fsck.status.success(),
        "derived damage alone is not data damage: {}",
        stderr(&fsck)
    );
    assert_eq!(retrieval_items(&s.ok(RETRIEVE)), want);
    s.ok(&["fsck", "--repair"]);
    assert_eq!(retrieval_items(&s.ok(RETRIEVE)), want);
}

#[test]
fn a_lost_or_damaged_head_is_reported_and_repaired() {
    let s = Sandbox::init();
    s.ok(&["import", &corpus(&s, 0, 20)]);
    let log = s.ok(&["log"]);
    // HEAD's ref file: the hex of "HEAD". First damaged, then gone.
    let head = s.repo().join("refs").join("48454144");
    let mut bytes = fs::read(&head).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    fs::write(&head, &bytes).unwrap();
    for round in ["damaged", "missing"] {
        assert_eq!(s.ok(&["log"]), log, "{round}: the stand-in branch is main");
        let fsck = s.run(&["fsck"]);
        assert!(!fsck.status.success(), "{round}");
        let out = String::from_utf8_lossy(&fsck.stdout);
        assert!(out.contains(&format!("HEAD is {round}")), "{round}: {out}");
        let repair = s.ok(&["fsck", "--repair"]);
        assert!(
            repair.contains("repaired: HEAD set to branch main"),
            "{round}: {repair}"
        );
        s.ok(&["fsck"]);
        fs::remove_file(&head).unwrap();
    }
}
