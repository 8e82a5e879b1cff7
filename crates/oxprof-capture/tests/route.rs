//! `CaptureService`, the server's `/capture_profile`, against fake profiler servers on
//! 127.0.0.1: statuses, the concurrency limit, the allow-list, session ids and runs,
//! concurrent identical captures.

mod common;

use common::*;
use oxprof_capture::{CapturePolicy, CaptureService, RouteResponse};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

fn query(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A runtime for the fake servers (the service runs captures on its own).
fn servers() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if std::fs::symlink_metadata(&path).unwrap().is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn error_of(response: &RouteResponse) -> String {
    response.body["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn captures_and_answers_like_xprof() {
    let rt = servers();
    let (address, _server) = rt.block_on(start(Behaviour::UnavailableThenOk(0)));
    let logdir = tempfile::tempdir().unwrap();
    let service = CaptureService::new(logdir.path().to_path_buf(), CapturePolicy::loopback_only());
    let response =
        service.handle_blocking(&query(&[("service_addr", &format!("grpc://{address}")), ("duration", "100")]));
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body["result"], "Capture profile successfully. Please refresh.");
    let run = response.body["run"].as_str().unwrap();
    assert_eq!(
        files_under(logdir.path()),
        vec![format!("plugins/profile/{run}/{}.xplane.pb", address.replace(':', "_"))]
    );
    assert_eq!(service.limiter().running(), 0, "the permit is released");
    // The async form, from another runtime.
    let response = rt.block_on(service.handle(&query(&[("service_addr", &address), ("session_id", "async")])));
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body["run"], "async");
}

#[test]
fn failures_have_their_own_statuses() {
    let rt = servers();
    let (address, _server) = rt.block_on(start(Behaviour::UnavailableThenOk(0)));
    let logdir = tempfile::tempdir().unwrap();
    let service = CaptureService::new(logdir.path().to_path_buf(), CapturePolicy::default());
    let max = u64::MAX.to_string();
    for (pairs, status, says) in [
        (vec![("service_addr", address.as_str()), ("duration", max.as_str())], 400, "limit of 600000 ms (10 min)"),
        (vec![("service_addr", address.as_str()), ("delay", max.as_str())], 400, "limit of 600000 ms (10 min)"),
        (vec![("service_addr", address.as_str()), ("num_retry", "1000")], 400, "limit of 10"),
        (vec![("service_addr", address.as_str()), ("session_id", "../x")], 400, "path separator"),
        (vec![("service_addr", "nowhere.invalid:9")], 400, "cannot resolve"),
        (vec![("service_addr", "10.255.255.1:9999")], 403, "--capture-allow"),
        (vec![("service_addr", &free_port_address())], 502, "connection refused"),
    ] {
        let response = service.handle_blocking(&query(&pairs));
        assert_eq!(response.status, status, "{pairs:?}: {}", response.body);
        assert!(error_of(&response).contains(says), "{pairs:?}: {}", response.body);
        assert!(response.body.get("result").is_none());
    }
    // Nothing was left behind by any of them.
    assert_eq!(files_under(logdir.path()), Vec::<String>::new());
    let dead = free_port_address();
    let response = service.handle_blocking(&query(&[("service_addr", &dead)]));
    assert_eq!(response.body["failed"][0]["kind"], "refused", "{}", response.body);
    assert!(!logdir.path().join("plugins").exists(), "no empty run is left, nor the directories made for it");
}

/// More captures than the limit are refused at once (429) while the others run, instead
/// of each holding a thread: 50 requests against a server that never answers.
#[test]
fn captures_beyond_the_limit_are_refused_at_once() {
    const REQUESTS: usize = 50;
    let rt = servers();
    let (slow, server) = rt.block_on(start(Behaviour::Slow(Duration::from_secs(60))));
    let (fast, _fast_server) = rt.block_on(start(Behaviour::UnavailableThenOk(0)));
    let logdir = tempfile::tempdir().unwrap();
    let policy = CapturePolicy { max_concurrent: 4, ..CapturePolicy::default() };
    let service = CaptureService::new(logdir.path().to_path_buf(), policy);
    let (sender, answers) = mpsc::channel();
    for _ in 0..REQUESTS {
        let (service, sender, slow) = (service.clone(), sender.clone(), slow.clone());
        std::thread::spawn(move || {
            let response = service.handle_blocking(&query(&[("service_addr", &slow), ("duration", "100")]));
            let _ = sender.send(response);
        });
    }
    // The refusals come while the four admitted captures still wait for the server.
    let hang_guard = Duration::from_secs(20);
    for _ in 0..REQUESTS - 4 {
        let response = answers.recv_timeout(hang_guard).expect("refusals are immediate");
        assert_eq!(response.status, 429, "{}", response.body);
        let message = error_of(&response);
        assert!(message.starts_with("4 captures already running"), "{message}");
        assert!(message.contains("wait for one to finish"), "{message}");
    }
    assert_eq!(service.limiter().running(), 4);
    // Release the four: they capture and answer 200, each into a run of its own.
    let mut runs = Vec::new();
    while runs.len() < 4 {
        server.terminated.notify_waiters();
        if let Ok(response) = answers.recv_timeout(Duration::from_millis(50)) {
            assert_eq!(response.status, 200, "{}", response.body);
            runs.push(response.body["run"].as_str().unwrap().to_string());
        }
    }
    runs.sort();
    runs.dedup();
    assert_eq!(runs.len(), 4, "distinct runs: {runs:?}");
    assert_eq!(service.limiter().running(), 0);
    let response = service.handle_blocking(&query(&[("service_addr", &fast)]));
    assert_eq!(response.status, 200, "{}", response.body);
}

#[test]
fn only_allowed_targets_are_captured() {
    let rt = servers();
    let (address, server) = rt.block_on(start(Behaviour::UnavailableThenOk(0)));
    let port = address.rsplit_once(':').unwrap().1;
    let logdir = tempfile::tempdir().unwrap();
    let service = CaptureService::new(logdir.path().to_path_buf(), CapturePolicy::loopback_only());
    // A name resolving to loopback is fine (localhost may be ::1 first: the fake server
    // listens on 127.0.0.1 only, so this also covers trying each checked address).
    let response = service.handle_blocking(&query(&[("service_addr", &format!("localhost:{port}"))]));
    assert_eq!(response.status, 200, "{}", response.body);
    for target in ["10.255.255.1:9999", "[::ffff:10.0.0.1]:9999", "0.0.0.0:9999", "[2001:db8::1]:9999"] {
        let response = service.handle_blocking(&query(&[("service_addr", target)]));
        assert_eq!(response.status, 403, "{target}: {}", response.body);
        let message = error_of(&response);
        assert!(message.contains("is not allowed") && message.contains("--capture-allow"), "{message}");
    }
    // One disallowed worker refuses the whole request: nothing is captured.
    let calls = server.calls.load(std::sync::atomic::Ordering::SeqCst);
    let response = service.handle_blocking(&query(&[("service_addr", &format!("{address},10.255.255.1:9999"))]));
    assert_eq!(response.status, 403, "{}", response.body);
    assert_eq!(server.calls.load(std::sync::atomic::Ordering::SeqCst), calls);
    // An allow-list of one port of one address.
    let policy = CapturePolicy { allow: vec![CapturePolicy::parse_allow(&address).unwrap()], ..Default::default() };
    let service = CaptureService::new(logdir.path().to_path_buf(), policy);
    assert_eq!(service.handle_blocking(&query(&[("service_addr", &address)])).status, 200);
    let other = free_port_address();
    let response = service.handle_blocking(&query(&[("service_addr", &other)]));
    assert_eq!(response.status, 403, "{}", response.body);
}

#[test]
fn runs_are_always_new() {
    let rt = servers();
    let (address, _server) = rt.block_on(start(Behaviour::UnavailableThenOk(0)));
    let stem = address.replace(':', "_");
    let logdir = tempfile::tempdir().unwrap();
    let service = CaptureService::new(logdir.path().to_path_buf(), CapturePolicy::default());
    let capture =
        |session: &str| service.handle_blocking(&query(&[("service_addr", &address), ("session_id", session)]));
    assert_eq!(capture("run1").status, 200);
    let file = logdir.path().join("plugins/profile/run1").join(format!("{stem}.xplane.pb"));
    std::fs::write(&file, b"the first capture").unwrap();
    // The same run again: 409, and the run is untouched (no host added, no file replaced).
    let response = capture("run1");
    assert_eq!(response.status, 409, "{}", response.body);
    assert!(error_of(&response).contains("choose another session id"), "{}", response.body);
    assert_eq!(std::fs::read(&file).unwrap(), b"the first capture");
    for bad in ["..", ".", "a/b", "/etc", "a\0b", ".hidden", &"x".repeat(200)] {
        let response = capture(bad);
        assert_eq!(response.status, 400, "{bad:?}: {}", response.body);
    }
    assert_eq!(files_under(logdir.path()), vec![format!("plugins/profile/run1/{stem}.xplane.pb")]);
}

#[cfg(unix)]
#[test]
fn symbolic_links_are_never_written_through() {
    use std::os::unix::fs::symlink;
    let rt = servers();
    let (address, _server) = rt.block_on(start(Behaviour::UnavailableThenOk(0)));
    let outside = tempfile::tempdir().unwrap();
    let logdir = tempfile::tempdir().unwrap();
    let service = CaptureService::new(logdir.path().to_path_buf(), CapturePolicy::default());
    std::fs::create_dir_all(logdir.path().join("plugins/profile")).unwrap();
    symlink(outside.path(), logdir.path().join("plugins/profile/evil")).unwrap();
    let response = service.handle_blocking(&query(&[("service_addr", &address), ("session_id", "evil")]));
    assert_eq!(response.status, 409, "{}", response.body);
    std::fs::remove_file(logdir.path().join("plugins/profile/evil")).unwrap();
    std::fs::remove_dir(logdir.path().join("plugins/profile")).unwrap();
    symlink(outside.path(), logdir.path().join("plugins/profile")).unwrap();
    let response = service.handle_blocking(&query(&[("service_addr", &address)]));
    assert_eq!(response.status, 500, "{}", response.body);
    assert!(error_of(&response).contains("is a symbolic link"), "{}", response.body);
    assert_eq!(files_under(outside.path()), Vec::<String>::new(), "nothing written outside the logdir");
}

/// Identical captures at once (same session id, same worker): one wins, the others are
/// told the run exists; with the default session id each gets a run of its own. Never a
/// silent overwrite, never a temporary file left.
#[test]
fn concurrent_identical_captures_never_overwrite() {
    const CAPTURES: usize = 16;
    let rt = servers();
    let (address, _server) = rt.block_on(start(Behaviour::UnavailableThenOk(0)));
    let logdir = tempfile::tempdir().unwrap();
    let policy = CapturePolicy { max_concurrent: CAPTURES, ..CapturePolicy::default() };
    let service = CaptureService::new(logdir.path().to_path_buf(), policy);
    let run_all = |pairs: Vec<(&'static str, String)>| -> Vec<RouteResponse> {
        let barrier = Arc::new(Barrier::new(CAPTURES));
        let threads: Vec<_> = (0..CAPTURES)
            .map(|_| {
                let (service, barrier) = (service.clone(), Arc::clone(&barrier));
                let q: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
                std::thread::spawn(move || {
                    barrier.wait();
                    service.handle_blocking(&q)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    };
    let same = run_all(vec![("service_addr", address.clone()), ("session_id", "same".into())]);
    let statuses: Vec<u16> = same.iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|&&s| s == 409).count(), CAPTURES - 1, "{statuses:?}");
    let stem = address.replace(':', "_");
    assert_eq!(files_under(logdir.path()), vec![format!("plugins/profile/same/{stem}.xplane.pb")]);

    let default_ids = run_all(vec![("service_addr", address.clone())]);
    let mut runs: Vec<String> = default_ids
        .iter()
        .map(|r| {
            assert_eq!(r.status, 200, "{}", r.body);
            r.body["run"].as_str().unwrap().to_string()
        })
        .collect();
    runs.sort();
    runs.dedup();
    assert_eq!(runs.len(), CAPTURES, "{runs:?}");
    let files = files_under(logdir.path());
    assert_eq!(files.len(), CAPTURES + 1, "{files:?}");
    assert!(files.iter().all(|f| f.ends_with(&format!("/{stem}.xplane.pb"))), "no temporary file left: {files:?}");
}
