//! A huge import line is refused in memory bounded by its length: at most 4 × the line +
//! 256 MiB of peak RSS (measured in a child process, so earlier tests' memory does not
//! count). Lines: 200 MB of one string (over the line cap), and just under the line cap
//! of labels, of properties and of dimensions (each far over its own cap).
//!
//! Linux only (peak RSS is read from `/proc/self/status`); elsewhere the test says so
//! and passes.

use std::io::Read;
use std::process::Command;

use cairn::{Error, Repo};
use cairn_core::limits::MAX_IMPORT_LINE_BYTES;

/// Environment variable that makes this binary the child: it names the line to import.
const CHILD: &str = "CAIRN_HUGE_LINE_CHILD";

/// A line `prefix` + `unit` × n + `suffix` of exactly `len` bytes (then `\n`), produced
/// on the fly so the parent never holds it.
struct Generated {
    parts: [Vec<u8>; 3],
    repeats: usize,
    state: (usize, usize, usize),
}

impl Generated {
    fn new(prefix: &str, unit: &str, suffix: &str, len: usize) -> Generated {
        let repeats = (len - prefix.len() - suffix.len()) / unit.len();
        Generated {
            parts: [prefix.into(), unit.into(), format!("{suffix}\n").into_bytes()],
            repeats,
            state: (0, 0, 0),
        }
    }

    fn len(&self) -> usize {
        self.parts[0].len() + self.parts[1].len() * self.repeats + self.parts[2].len() - 1
    }
}

impl Read for Generated {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let (part, repeat, offset) = &mut self.state;
        let mut written = 0;
        while written < out.len() && *part < 3 {
            let bytes = &self.parts[*part];
            let n = (bytes.len() - *offset).min(out.len() - written);
            out[written..written + n].copy_from_slice(&bytes[*offset..*offset + n]);
            written += n;
            *offset += n;
            if *offset == bytes.len() {
                *offset = 0;
                if *part == 1 && *repeat + 1 < self.repeats {
                    *repeat += 1;
                } else {
                    *part += 1;
                }
            }
        }
        Ok(written)
    }
}

fn line(kind: &str) -> Generated {
    let near_cap = MAX_IMPORT_LINE_BYTES - 1024;
    match kind {
        "string" => Generated::new(r#"{"node": {"id": "a", "text": ""#, "x", r#""}}"#, 200_000_000),
        "labels" => Generated::new(r#"{"node": {"id": "a", "labels": ["l""#, r#","l""#, "]}}", near_cap),
        "props" => Generated::new(r#"{"node": {"id": "a", "props": {"p": [0"#, ",0", "]}}}", near_cap),
        "dims" => Generated::new(r#"{"node": {"id": "a", "embeddings": {"m": [0"#, ",0", "]}}}", near_cap),
        other => panic!("unknown line kind {other}"),
    }
}

/// Peak resident set of this process, in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The child: imports one generated line, checks it was refused, prints its peak RSS.
fn child(kind: &str) {
    let repo = Repo::in_memory().unwrap();
    let reader = std::io::BufReader::with_capacity(1 << 16, line(kind));
    match repo.import_jsonl(reader, "huge", &mut |_| {}) {
        Err(Error::Import { line: 1, detail, .. }) => println!("\nDETAIL {detail}"),
        other => panic!("{kind}: expected a refusal of line 1, got {other:?}"),
    }
    assert!(repo.head().unwrap().is_none(), "{kind}: a refused line committed");
    println!("\nPEAK {}", peak_rss().expect("VmHWM"));
}

#[test]
fn huge_lines_are_refused_in_bounded_memory() {
    if let Ok(kind) = std::env::var(CHILD) {
        child(&kind);
        return;
    }
    if peak_rss().is_none() {
        eprintln!("skipped: no /proc/self/status here, so peak RSS cannot be read");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for (kind, names) in [
        ("string", "longer than"),
        ("labels", "`labels` has"),
        ("props", "`props` is more than"),
        ("dims", "dimensions"),
    ] {
        let out = Command::new(&exe)
            .args([
                "--exact",
                "huge_lines_are_refused_in_bounded_memory",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, kind)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{kind}: child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let detail = stdout.lines().find_map(|l| l.strip_prefix("DETAIL ")).unwrap();
        assert!(detail.contains(names), "{kind}: {detail}");
        let peak: u64 = stdout
            .lines()
            .find_map(|l| l.strip_prefix("PEAK "))
            .unwrap()
            .parse()
            .unwrap();
        let len = line(kind).len() as u64;
        let bound = 4 * len + (256 << 20);
        eprintln!(
            "{kind}: line {} MiB, peak RSS {} MiB (bound {} MiB)",
            len >> 20,
            peak >> 20,
            bound >> 20
        );
        assert!(peak <= bound, "{kind}: peak RSS {peak} over {bound}");
    }
}
