//! `oxprof capture` end to end. Without Python: a dead address, a port that is not a
//! profiler server, bad arguments. With a real JAX (CPU) training loop running
//! `jax.profiler.start_server(port)` (scripts/live/jax-train-server.py, in the venv that
//! scripts/ci/setup-python.sh makes): one worker whose overview page shows the loop's steps,
//! two workers at once (one run, two hosts, ALL_HOSTS overview and pod viewer), a live
//! worker next to a dead one (partial success), and a capture shorter than one step.
//!
//! The live tests print `SKIP` and pass when the venv is absent, unless
//! `OXPROF_REQUIRE_LIVE=1` (CI), where its absence fails them.

use oxprof_api::data::{DataRequest, data};
use oxprof_api::registry::ToolId;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `oxprof ARGS` with a hard time limit.
fn oxprof(args: &[&str]) -> Output {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxprof"))
        // The persistent analysis cache of these tests, not the user's.
        .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = started + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("oxprof {args:?} hung for 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "oxprof {args:?} panicked: {stderr}");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr,
        took: started.elapsed(),
    }
}

/// A loopback address where nothing listens (a port bound and released).
fn dead_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

fn stem(address: &str) -> String {
    address.replace(':', "_")
}

#[test]
fn a_dead_address_fails_fast_with_one_line_and_exit_code_2() {
    let logdir = tempfile::tempdir().unwrap();
    let address = dead_address();
    let out = oxprof(&["capture", &address, "--logdir", logdir.path().to_str().unwrap(), "--retries", "0"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains(&address) && out.stderr.contains("connection refused"), "{}", out.stderr);
    assert!(out.stderr.contains("start_server"), "the message says how to start a server: {}", out.stderr);
    assert!(out.took < Duration::from_secs(5), "took {:?}", out.took);
    assert!(!logdir.path().join("plugins").exists(), "no empty run is left, nor the directories made for it");
}

#[test]
fn retries_wait_and_report_each_attempt() {
    let logdir = tempfile::tempdir().unwrap();
    let address = dead_address();
    let out = oxprof(&["capture", &address, "--logdir", logdir.path().to_str().unwrap(), "--retries", "2"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("attempt 1 of 3 failed"), "{}", out.stderr);
    assert!(out.stderr.contains("attempt 2 of 3 failed"), "{}", out.stderr);
    assert!(out.stderr.contains("failed after 3 attempts"), "{}", out.stderr);
    // Backoff 0.5 s then 1 s.
    assert!(out.took >= Duration::from_millis(1500), "took {:?}", out.took);
    assert!(out.took < Duration::from_secs(10), "took {:?}", out.took);
}

#[test]
fn a_port_that_is_not_a_profiler_server_is_named_as_such() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = [0u8; 1024];
            let _ = stream.read(&mut buffer);
            let _ = stream.write_all(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let logdir = tempfile::tempdir().unwrap();
    let out = oxprof(&["capture", &address, "--logdir", logdir.path().to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "not retried: {}", out.stderr);
    assert!(out.stderr.contains("is not a profiler server"), "{}", out.stderr);
    assert!(out.stderr.contains("HTTP/1.0 404 Not Found"), "{}", out.stderr);
}

#[test]
fn bad_capture_arguments_are_exit_code_2() {
    for args in [
        &["capture", "localhost"][..],
        &["capture", "localhost:99999"],
        &["capture", "localhost:1", "--duration", "2h"],
        &["capture", "localhost:1", "--host-tracer-level", "4"],
        &["capture", "localhost:1", "--session-id", "../x"],
        &["capture", "localhost:1", "--session-id", ".hidden"],
        &["capture", "localhost:1", "--duration", "61m"],
        &["capture", "localhost:1", "--delay", "3601s"],
    ] {
        let out = oxprof(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(!out.stderr.trim().is_empty());
    }
}

#[test]
fn an_existing_run_is_never_added_to() {
    let logdir = tempfile::tempdir().unwrap();
    let run = logdir.path().join("plugins/profile/run1");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("other_host.xplane.pb"), b"x").unwrap();
    let out =
        oxprof(&["capture", &dead_address(), "--logdir", logdir.path().to_str().unwrap(), "--session-id", "run1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("run \"run1\" exists already"), "{}", out.stderr);
    assert!(out.stderr.contains("choose another session id"), "{}", out.stderr);
    let files: Vec<_> = run.read_dir().unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files, vec![std::ffi::OsString::from("other_host.xplane.pb")]);
}

#[test]
fn a_silent_port_is_named_as_such() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let logdir = tempfile::tempdir().unwrap();
    let out = oxprof(&["capture", &address, "--logdir", logdir.path().to_str().unwrap(), "--connect-timeout", "1s"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "not retried: {}", out.stderr);
    assert!(out.stderr.contains("sent no gRPC (HTTP/2) answer within 1s"), "{}", out.stderr);
    assert!(out.stderr.contains("is this the profiler server's port"), "{}", out.stderr);
}

// ---------------------------------------------------------------- live JAX workers

/// The venv's python, or `None` (after printing SKIP) when there is no venv and
/// OXPROF_REQUIRE_LIVE is not 1.
fn live_python(test: &str) -> Option<PathBuf> {
    let venv =
        std::env::var_os("OXPROF_PYTHON_VENV").map(PathBuf::from).unwrap_or_else(|| repo_root().join(".venv-test"));
    let python = venv.join("bin/python");
    if python.exists() {
        return Some(python);
    }
    let required = std::env::var("OXPROF_REQUIRE_LIVE").is_ok_and(|v| v == "1");
    assert!(!required, "OXPROF_REQUIRE_LIVE=1 but {} is missing: run scripts/ci/setup-python.sh", python.display());
    eprintln!("SKIP {test}: no Python venv at {} (run scripts/ci/setup-python.sh)", venv.display());
    None
}

/// A running `scripts/live/jax-train-server.py`; killed on drop.
struct JaxWorker {
    child: Child,
    address: String,
}

impl JaxWorker {
    fn start(python: &Path, extra_args: &[&str]) -> JaxWorker {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let script = repo_root().join("scripts/live/jax-train-server.py");
        let mut child = Command::new(python)
            .arg(&script)
            .args(["--port", &port.to_string()])
            .args(extra_args)
            .env("JAX_PLATFORMS", "cpu")
            .env("TF_CPP_MIN_LOG_LEVEL", "2")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (lines_tx, lines_rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines_tx.send(line);
            }
        });
        let stderr = child.stderr.take().unwrap();
        let (err_tx, err_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut text);
            let _ = err_tx.send(text);
        });
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            match lines_rx.recv_timeout(Duration::from_millis(200)) {
                Ok(line) if line.starts_with("READY") => break,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let stderr = err_rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
                    panic!("the JAX worker did not start: {stderr}");
                }
            }
        }
        JaxWorker { child, address: format!("127.0.0.1:{port}") }
    }
}

impl Drop for JaxWorker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn overview(logdir: &Path, run: &str, host: Option<&str>) -> Value {
    let request = DataRequest {
        run: Some(run.to_string()),
        host: host.map(str::to_string),
        ..DataRequest::new(ToolId::OVERVIEW_PAGE)
    };
    data(logdir, &request).unwrap().json.unwrap()
}

/// Step names of the overview's step-time table ("train 12", ...).
fn overview_steps(overview: &Value) -> Vec<String> {
    overview[1]["rows"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r["c"][0]["v"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn capture(logdir: &Path, addresses: &str, session: &str, extra: &[&str]) -> Output {
    let mut args = vec!["capture", addresses, "--logdir", logdir.to_str().unwrap(), "--session-id", session];
    args.extend_from_slice(extra);
    oxprof(&args)
}

#[test]
fn live_jax_capture_opens_and_overview_shows_the_steps() {
    let Some(python) = live_python("live_jax_capture_opens_and_overview_shows_the_steps") else { return };
    let worker = JaxWorker::start(&python, &[]);
    let logdir = tempfile::tempdir().unwrap();
    let out = capture(logdir.path(), &worker.address, "live", &["--duration", "2s"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    eprintln!("capture of 2 s took {:?}", out.took);
    let logdir_abs = logdir.path().canonicalize().unwrap();
    assert!(out.stdout.contains(&format!("oxprof serve {}", logdir_abs.display())), "{}", out.stdout);
    let file = logdir_abs.join("plugins/profile/live").join(format!("{}.xplane.pb", stem(&worker.address)));
    let space = oxprof_format::load_xspace(&file).unwrap();
    assert!(space.plane("/host:CPU").is_some_and(|_| space.event_count() > 1000), "{} events", space.event_count());

    let overview = overview(logdir.path(), "live", None);
    let steps = overview_steps(&overview);
    assert!(steps.len() >= 10, "{} steps: {steps:?}", steps.len());
    assert!(steps.iter().all(|s| s.starts_with("train ")), "{steps:?}");
    assert_eq!(overview[2]["p"]["host_count"], "1");
}

#[test]
fn live_two_workers_make_one_run_with_two_hosts() {
    let Some(python) = live_python("live_two_workers_make_one_run_with_two_hosts") else { return };
    let a = JaxWorker::start(&python, &[]);
    let b = JaxWorker::start(&python, &["--name", "train"]);
    let logdir = tempfile::tempdir().unwrap();
    let addresses = format!("{},{}", a.address, b.address);
    let out = capture(logdir.path(), &addresses, "pod", &["--duration", "1500ms", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    eprintln!("capture of 2 workers x 1.5 s took {:?}", out.took);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["captured"].as_array().unwrap().len(), 2, "{report}");
    let run_dir = logdir.path().join("plugins/profile/pod");
    for worker in [&a, &b] {
        assert!(run_dir.join(format!("{}.xplane.pb", stem(&worker.address))).exists());
    }
    // One run with two hosts: the ALL_HOSTS overview merges both. Both processes run on
    // this machine, so XProf counts one host name with two tasks.
    let all = overview(logdir.path(), "pod", Some("ALL_HOSTS"));
    assert_eq!(all[2]["p"]["task_count"], "2 (num tasks per host = 2)", "{}", all[2]);
    assert!(overview_steps(&all).len() >= 5);
    // Each host alone still opens.
    for worker in [&a, &b] {
        let one = overview(logdir.path(), "pod", Some(&stem(&worker.address)));
        assert!(!overview_steps(&one).is_empty());
    }
    // The pod viewer works on the multi-host run.
    let request =
        DataRequest { run: Some("pod".into()), host: Some("ALL_HOSTS".into()), ..DataRequest::new(ToolId::POD_VIEWER) };
    let pod = data(logdir.path(), &request).unwrap();
    // Its per-core stats hold one entry per worker (task) for the first step.
    let pod = pod.json.unwrap();
    let first = &pod["podStatsSequence"]["podStatsMap"][0]["podStatsPerCore"];
    assert_eq!(first.as_object().map(|m| m.len()), Some(2), "{first}");
}

#[test]
fn live_worker_next_to_a_dead_one_is_a_partial_success() {
    let Some(python) = live_python("live_worker_next_to_a_dead_one_is_a_partial_success") else { return };
    let worker = JaxWorker::start(&python, &[]);
    let dead = dead_address();
    let logdir = tempfile::tempdir().unwrap();
    let addresses = format!("{},{dead}", worker.address);
    let out = capture(logdir.path(), &addresses, "partial", &["--duration", "1s", "--retries", "1"]);
    assert_eq!(out.code, 1, "partial success: {}", out.stderr);
    assert!(out.stderr.contains(&format!("capture from {dead} failed")), "{}", out.stderr);
    assert!(out.stdout.contains("Captured 1 of 2"), "{}", out.stdout);
    assert!(out.stdout.contains(&format!("missing: {dead}")), "{}", out.stdout);
    let run_dir = logdir.path().join("plugins/profile/partial");
    assert!(run_dir.join(format!("{}.xplane.pb", stem(&worker.address))).exists());
    assert!(!overview_steps(&overview(logdir.path(), "partial", None)).is_empty());
}

#[test]
fn live_capture_shorter_than_one_step() {
    let Some(python) = live_python("live_capture_shorter_than_one_step") else { return };
    // Each step computes for 1.5 s inside its annotation; the capture lasts 0.3 s.
    let worker = JaxWorker::start(&python, &["--step-ms", "1500"]);
    let logdir = tempfile::tempdir().unwrap();
    let out = capture(logdir.path(), &worker.address, "short", &["--duration", "300ms"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let file = logdir.path().join("plugins/profile/short").join(format!("{}.xplane.pb", stem(&worker.address)));
    oxprof_format::load_xspace(&file).unwrap();
    // The profile opens; no whole step fits in it.
    let request = DataRequest { run: Some("short".into()), ..DataRequest::new(ToolId::OVERVIEW_PAGE) };
    let response = data(logdir.path(), &request).unwrap();
    let steps = overview_steps(response.json.as_ref().unwrap());
    eprintln!("short capture: steps {steps:?}, notes {:?}", response.notes);
    assert!(steps.len() <= 1, "{steps:?}");
}

#[test]
fn live_idle_program_reports_an_empty_trace() {
    let Some(python) = live_python("live_idle_program_reports_an_empty_trace") else { return };
    // The server runs, the program does nothing: JAX answers `empty_trace`.
    let worker = JaxWorker::start(&python, &["--idle"]);
    let logdir = tempfile::tempdir().unwrap();
    let out = capture(logdir.path(), &worker.address, "idle", &["--duration", "300ms", "--retries", "1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("attempt 1 of 2 failed: empty trace"), "{}", out.stderr);
    assert!(out.stderr.contains("captured no trace events (empty trace)"), "{}", out.stderr);
    assert!(!logdir.path().join("plugins/profile/idle").exists());
}

/// The server's `/capture_profile` handler (XProf's parameters and answers, the default
/// policy), on a real worker.
#[test]
fn live_ui_capture_route_makes_a_new_run() {
    let Some(python) = live_python("live_ui_capture_route_makes_a_new_run") else { return };
    let worker = JaxWorker::start(&python, &[]);
    let logdir = tempfile::tempdir().unwrap();
    let query = [
        ("service_addr", format!("grpc://{}", worker.address)),
        ("duration", "1000".to_string()),
        ("is_tpu_name", "false".to_string()),
        ("worker_list", String::new()),
        ("num_retry", "1".to_string()),
        ("host_tracer_level", "2".to_string()),
        ("device_tracer_level", "1".to_string()),
        ("python_tracer_level", "0".to_string()),
        ("delay", "0".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let service = oxprof_capture::CaptureService::new(
        logdir.path().to_path_buf(),
        oxprof_capture::CapturePolicy::loopback_only(),
    );
    let response = service.handle_blocking(&query);
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body["result"], "Capture profile successfully. Please refresh.");
    let run = response.body["run"].as_str().unwrap().to_string();
    assert!(!overview_steps(&overview(logdir.path(), &run, None)).is_empty());
}
