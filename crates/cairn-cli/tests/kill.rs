//! kill -9 in the middle of `index build`, `gc` and `init`, through the `cairn` binary.
//! Each command is first timed undisturbed; then, on fresh copies of the same repository,
//! it is killed with SIGKILL at a spread of moments through it. After each kill:
//!
//! - `fsck` passes (derived data a kill left half-written may be reported apart, as a
//!   cache to rebuild; the data may not be);
//! - `stats`, `log` and a hybrid retrieval give the undisturbed answers;
//! - running the command again succeeds, and the answers are still the same.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{copy_tree, Sandbox};

const NODES: usize = 6_000;
/// Kills per command, spread evenly over the first half of its undisturbed run time.
const KILLS: u32 = 16;

fn corpus(s: &Sandbox, from: usize, to: usize) -> String {
    let words = [
        "wing", "stall", "lift", "drag", "flow", "shock", "boundary", "layer", "heat", "mach", "nozzle", "vortex",
    ];
    let mut lines = String::new();
    for i in from..to {
        let text: Vec<&str> = (0..16).map(|j| words[(i * 7 + j * j * 3 + j) % words.len()]).collect();
        let vector: Vec<String> = (0..32)
            .map(|j| format!("{:.3}", ((i * 13 + j * 5) % 23) as f32 / 23.0 - 0.5))
            .collect();
        lines.push_str(&format!(
            "{{\"node\": {{\"id\": \"n{i}\", \"labels\": [\"{}\"], \"text\": \"{} {i}\", \"embeddings\": {{\"m\": [{}]}}}}}}\n",
            if i % 10 == 0 { "Rare" } else { "Doc" },
            text.join(" "),
            vector.join(", ")
        ));
    }
    s.file(&format!("part-{from}.jsonl"), &lines)
}

const RETRIEVE: &[&str] = &[
    "retrieve",
    "--text",
    "stall vortex",
    "--label",
    "Doc",
    "--limit",
    "10",
    "--json",
];

fn items(json: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["items"].to_string()
}

/// What the repository answers: log, stats, retrieval items.
fn answers(s: &Sandbox) -> (String, String, String) {
    (s.ok(&["log"]), s.ok(&["stats"]), items(&s.ok(RETRIEVE)))
}

/// Runs `args` in `s` and kills it with SIGKILL after `delay` (if it is still running).
/// True if the kill came before the command finished.
fn run_and_kill(s: &Sandbox, args: &[&str], delay: Duration) -> bool {
    let mut child = s
        .command()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cairn");
    let start = Instant::now();
    while start.elapsed() < delay {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let killed = child.try_wait().unwrap().is_none();
    child.kill().unwrap();
    child.wait().unwrap();
    killed
}

fn check_after_kill(s: &Sandbox, want: &(String, String, String), what: &str) {
    let fsck = s.run(&["fsck"]);
    assert!(
        fsck.status.success(),
        "{what}: fsck: {}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
    assert_eq!(&answers(s), want, "{what}");
}

/// Kills `args` at `KILLS` moments through its undisturbed run on copies of `pristine`,
/// checks each, then runs it again to the end and checks again.
fn kill_during(pristine: &Sandbox, args: &[&str]) {
    let timing = Sandbox::new();
    copy_tree(&pristine.repo(), &timing.repo());
    let t = Instant::now();
    timing.ok(args);
    let took = t.elapsed();
    let want = answers(&timing);
    assert_eq!(want, answers(pristine), "{args:?} changes no answer");
    let mut interrupted = 0;
    for k in 1..=KILLS {
        // Over the first half: a run on a copy is quicker than the timed (first) one.
        let delay = took * k / (2 * (KILLS + 1));
        let s = Sandbox::new();
        copy_tree(&pristine.repo(), &s.repo());
        let what = format!("{args:?} killed after {delay:?} of {took:?}");
        interrupted += u32::from(run_and_kill(&s, args, delay));
        check_after_kill(&s, &want, &what);
        s.ok(args);
        check_after_kill(&s, &want, &format!("{what}, then run again"));
    }
    let store = if pristine.repo().join("conf").exists() {
        "sled"
    } else {
        "segment"
    };
    eprintln!("{store}: {args:?}: {took:?} undisturbed; {interrupted} of {KILLS} kills interrupted it");
    assert!(interrupted > 0, "{args:?}: no kill came before the command finished");
}

fn imported(store: &str) -> Sandbox {
    let s = Sandbox::new();
    s.ok(&["init", "--store", store]);
    for part in 0..3 {
        s.ok(&["import", &corpus(&s, part * NODES / 3, (part + 1) * NODES / 3)]);
    }
    s
}

#[test]
fn kill_during_index_build() {
    for store in ["segment", "sled"] {
        kill_during(&imported(store), &["index", "build"]);
    }
}

#[test]
fn kill_during_gc() {
    for store in ["segment", "sled"] {
        kill_during_gc_on(store);
    }
}

fn kill_during_gc_on(store: &str) {
    let s = imported(store);
    // Garbage: a branch with commits of its own, deleted, and derived data of the
    // commits before the head.
    s.ok(&["index", "build", "HEAD~1"]);
    s.ok(&["branch", "create", "scratch"]);
    s.ok(&["branch", "switch", "scratch"]);
    s.ok(&["import", &corpus(&s, NODES, NODES + 300)]);
    s.ok(&["index", "build"]);
    s.ok(&["branch", "switch", "main"]);
    s.ok(&["branch", "delete", "scratch"]);
    s.ok(&["index", "build"]);
    kill_during(&s, &["gc", "--now"]);
}

#[test]
fn kill_during_init() {
    for store in ["segment", "sled"] {
        kill_during_init_on(store);
    }
}

fn kill_during_init_on(store: &str) {
    let timing = Sandbox::new();
    let t = Instant::now();
    timing.ok(&["init", "--store", store]);
    let took = t.elapsed();
    let mut interrupted = 0;
    // init is short: kill at every half-millisecond through twice its undisturbed time.
    let steps = (took.as_micros() as u64 * 2 / 500).clamp(8, 200);
    for k in 0..steps {
        let s = Sandbox::new();
        let delay = Duration::from_micros(500 * k);
        interrupted += u32::from(run_and_kill(&s, &["init", "--store", store], delay));
        let what = format!("{store}: init killed after {delay:?} of {took:?}");
        // Either the repository is there, or init can make it now; nothing in between.
        let again = s.run(&["init", "--store", store]);
        if !again.status.success() {
            let err = String::from_utf8_lossy(&again.stderr);
            assert!(err.contains("already"), "{what}: init again: {err}");
        }
        s.ok(&["fsck"]);
        s.ok(&["import", &corpus(&s, 0, 5)]);
        assert_eq!(s.ok(&["log"]).lines().count(), 1, "{what}");
        s.ok(&["fsck"]);
    }
    eprintln!("{store}: init: {took:?} undisturbed; {interrupted} of {steps} kills interrupted it");
}
