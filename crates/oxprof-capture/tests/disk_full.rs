//! A capture whose profile cannot be written (file size limit, full disk) fails with one
//! clear message and leaves nothing behind: no `.part` file, no empty run directory, no
//! `plugins/profile` made for it.
//!
//! The file size limit (`RLIMIT_FSIZE`, with `SIGXFSZ` ignored so writes fail with
//! `EFBIG`) is set in a child process: this test binary runs itself again with
//! `OXPROF_TEST_FSIZE_CHILD` set. The full disk is a 256 KiB tmpfs, mounted only when
//! the test may mount (root); elsewhere that test prints SKIP.

#![cfg(unix)]

mod common;

use common::*;
use oxprof_capture::{CapturePolicy, CaptureService};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const CHILD_ENV: &str = "OXPROF_TEST_FSIZE_CHILD";

/// Captures a 1 MiB profile into `logdir` through the server's route and checks that it
/// failed as `expected` (the OS error text) and left nothing behind.
fn capture_fails_cleanly(logdir: &Path, expected: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (address, _server) = runtime.block_on(start(Behaviour::Big(1 << 20)));
    let service = CaptureService::new(logdir.to_path_buf(), CapturePolicy::default());
    let query: BTreeMap<String, String> = [("service_addr", address.as_str()), ("session_id", "full")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let response = service.handle_blocking(&query);
    assert_eq!(response.status, 500, "{}", response.body);
    let message = response.body["error"].as_str().unwrap();
    assert!(message.contains("cannot write") && message.contains("full"), "{message}");
    assert_eq!(message.matches(expected).count(), 1, "the cause once: {message}");
    assert_eq!(response.body["failed"][0]["kind"], "io");
    // Nothing remains: no run directory, no temporary file, and not the `plugins/profile`
    // the capture made for its run.
    let left: Vec<_> = std::fs::read_dir(logdir).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_file_size_limit_leaves_nothing_behind() {
    if let Some(logdir) = std::env::var_os(CHILD_ENV) {
        // The child: writes beyond 64 KiB fail with EFBIG instead of killing the process.
        // SAFETY: plain libc calls with valid arguments, before any file is written.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit { rlim_cur: 64 << 10, rlim_max: 64 << 10 };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
        }
        capture_fails_cleanly(Path::new(&logdir), "File too large");
        println!("CHILD-CHECKED");
        return;
    }
    let logdir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_file_size_limit_leaves_nothing_behind", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, logdir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("CHILD-CHECKED"), "the child ran the checks:\n{stdout}\n{stderr}");
}

/// A tmpfs mounted on a temporary directory, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then_some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_leaves_nothing_behind() {
    let Some(disk) = Tmpfs::mount("256k") else {
        eprintln!("SKIP a_full_disk_leaves_nothing_behind: cannot mount a tmpfs (needs root)");
        return;
    };
    capture_fails_cleanly(disk.0.path(), "No space left on device");
}
