//! What the CLI's end-to-end tests share: the repository root and `oxprof ARGS` run with a
//! hard time limit, the tests' own analysis cache and the repository as its directory.
// Each test file uses the part it needs.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long one `oxprof` may run before the test calls it hung.
const HANG: Duration = Duration::from_secs(120);

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `oxprof ARGS` in the repository's directory, stdin empty.
pub fn oxprof(args: &[&str]) -> Output {
    oxprof_with_stdin(args, "")
}

/// `oxprof ARGS` with `stdin` written to it: a hang past two minutes fails the test (the
/// child is killed), and so does a panic message on stderr.
pub fn oxprof_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxprof"))
        // The persistent analysis cache of these tests, not the user's.
        .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
        .args(args)
        .current_dir(repo_root())
        .stdin(if stdin.is_empty() { Stdio::null() } else { Stdio::piped() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(mut pipe) = child.stdin.take() {
        let input = stdin.to_string();
        // Written beside the wait: a child answering before it read everything cannot block us.
        std::thread::spawn(move || pipe.write_all(input.as_bytes()));
    }
    let pid = child.id();
    let (sender, receiver) = mpsc::channel();
    // Output read while waiting: a child writing more than a pipe holds cannot block.
    std::thread::spawn(move || sender.send(child.wait_with_output()));
    let out = match receiver.recv_timeout(HANG) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // The child this test started, by its id.
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("oxprof {args:?} hung for {} s", HANG.as_secs());
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "oxprof {args:?} panicked: {stderr}");
    Output { code: out.status.code().unwrap_or(-1), stdout: String::from_utf8_lossy(&out.stdout).into_owned(), stderr }
}
