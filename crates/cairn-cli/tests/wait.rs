//! One process per repository at a time: a second one fails at once naming the cause, or
//! with `--wait SECONDS` waits for the first to finish.

mod common;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Sandbox;

#[test]
fn a_second_process_fails_at_once_or_waits_with_wait() {
    let s = Sandbox::init();
    // `import -` holds the repository open while it reads standard input (it waits for
    // the lock itself, as the probes below may hold it for a moment).
    let mut holder = s
        .command()
        .args(["--wait", "60", "import", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = holder.stdin.take().unwrap();
    stdin.write_all(b"{\"node\": {\"id\": \"a\"}}\n").unwrap();
    stdin.flush().unwrap();
    // Until it has the lock, a second process could still get in first.
    let start = Instant::now();
    loop {
        let out = s.run(&["log"]);
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("in use by another process"), "{err}");
            assert!(err.contains("give --wait SECONDS"), "the way out is named: {err}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the importer never took the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // A wait that runs out says it waited.
    let err = s.fails_stderr(&["--wait", "0.1", "log"], 1);
    assert!(
        err.contains("still in use by another process after waiting 0.1 s"),
        "{err}"
    );
    // With --wait, the reader waits for the importer, then sees its commit.
    let waiter = s
        .command()
        .args(["--wait", "30", "log"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(stdin);
    assert!(holder.wait().unwrap().success());
    let out = waiter.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

#[test]
fn a_wait_that_is_not_a_number_of_seconds_is_a_usage_error() {
    let s = Sandbox::new();
    s.ok(&["init"]);
    for bad in ["abc", "-1", "inf", "NaN"] {
        let err = s.fails_stderr(&[&format!("--wait={bad}"), "log"], 2);
        assert!(err.contains("expected a number of seconds >= 0"), "{bad}: {err}");
    }
    s.ok(&["--wait", "0.5", "log"]);
}

/// Two `cairn init` processes started together on one new path: exactly one succeeds (the
/// other finds the first's repository, or its lock), in every round (issue 22, item 5).
#[test]
fn of_two_racing_inits_exactly_one_succeeds() {
    for round in 0..8 {
        let s = Sandbox::new();
        let children: Vec<_> = (0..2)
            .map(|_| {
                s.command()
                    .arg("init")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("spawn cairn init")
            })
            .collect();
        let ok: Vec<bool> = children
            .into_iter()
            .map(|mut c| c.wait().expect("wait").success())
            .collect();
        assert_eq!(ok.iter().filter(|&&o| o).count(), 1, "round {round}: {ok:?}");
        s.ok(&["log"]);
    }
}
