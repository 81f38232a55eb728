//! A temporary repository driven through the `cairn` binary, shared by the CLI test files.

#![allow(dead_code)] // each test file uses a different subset

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sample/corpus.jsonl");
pub const UPDATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sample/update.jsonl");

/// A temporary directory holding one repository (`<dir>/repo`) and any input files.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// A sandbox with an initialised repository.
    pub fn init() -> Sandbox {
        let s = Sandbox::new();
        s.ok(&["init"]);
        s
    }

    /// A repository holding the sample corpus (one commit), then the update (a second).
    pub fn sample() -> Sandbox {
        let s = Sandbox::init();
        s.ok(&["import", CORPUS]);
        s.ok(&["import", UPDATE]);
        s
    }

    pub fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    pub fn file(&self, name: &str, contents: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, contents).expect("write input file");
        p.to_str().expect("utf-8 path").to_string()
    }

    pub fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cairn"));
        c.arg("--repo").arg(self.repo()).env_remove("CAIRN_REPO");
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("run cairn")
    }

    /// Runs with `stdin` as standard input.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn cairn");
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs, asserts exit code 0, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "cairn {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// Runs, asserts a failure with exit code `code`, returns (stdout, stderr).
    pub fn fails(&self, args: &[&str], code: i32) -> (String, String) {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "cairn {args:?}: stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8(out.stdout).expect("utf-8 stdout"),
            String::from_utf8(out.stderr).expect("utf-8 stderr"),
        )
    }

    /// Runs, asserts a failure with exit code `code`, returns stderr.
    pub fn fails_stderr(&self, args: &[&str], code: i32) -> String {
        self.fails(args, code).1
    }

    /// Commits on the current branch.
    pub fn commit_count(&self) -> usize {
        self.json(&["log", "--json"]).as_array().expect("log is an array").len()
    }

    pub fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).expect("valid JSON output")
    }

    /// The full id of a revision.
    pub fn rev(&self, rev: &str) -> String {
        self.json(&["log", rev, "-n", "1", "--json"])[0]["commit"]
            .as_str()
            .expect("a commit id")
            .to_string()
    }
}

/// The ids of a retrieval result's items, in rank order.
pub fn item_ids(result: &Value) -> Vec<String> {
    result["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["id"].as_str().expect("item id").to_string())
        .collect()
}

pub use cairn_testkit::files;

/// Copies a repository directory, files and the store's (possibly empty) directories.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    for rel in files(from) {
        let dest = to.join(&rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(from.join(&rel), dest).unwrap();
    }
    // Empty directories too (a segment store's `derived/` may hold nothing yet); only
    // those the original has, so a sled repository is not mistaken for a segment one.
    for d in ["objects", "derived", "refs"] {
        if from.join(d).is_dir() {
            std::fs::create_dir_all(to.join(d)).unwrap();
        }
    }
}

/// Runs `cairn ARGS` with its output discarded and kills it (SIGKILL) after `after`,
/// finished or not: what a crash at that moment leaves behind. `CAIRN_REPO` and
/// `CAIRN_REMOTE` from the environment are not passed on (the arguments name the repository).
pub fn run_killed_after(args: &[&str], after: std::time::Duration) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(args)
        .env_remove("CAIRN_REPO")
        .env_remove("CAIRN_REMOTE")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cairn");
    std::thread::sleep(after);
    let _ = child.kill();
    let _ = child.wait();
}

/// A `cairn serve` process on a loopback port, over the sandbox's repository, and the URL
/// it listens on.
pub struct Served {
    pub child: std::process::Child,
    pub url: String,
}

impl Served {
    pub fn start(s: &Sandbox, extra: &[&str]) -> Served {
        use std::io::BufRead;
        let mut child = s
            .command()
            .env_remove("CAIRN_REMOTE")
            .env_remove("CAIRN_TOKEN")
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn cairn serve");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("read the listening line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Served { child, url }
    }

    /// SIGTERM, and wait for a clean exit.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        assert!(exit.success(), "cairn serve exited with {exit}");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
