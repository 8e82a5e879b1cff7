//! The capture state machine against in-process tonic ProfilerService servers that
//! misbehave on purpose: UNAVAILABLE then OK, too slow, oversized, empty, writing the
//! profile themselves, not a profiler server at all.

mod common;

use common::*;
use oxprof_capture::session::{WorkerState, XSpaceSource};
use oxprof_capture::{CaptureError, CaptureOptions, CaptureSession};
use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tonic::codegen::tokio_stream::wrappers::TcpListenerStream;

#[tokio::test]
async fn unavailable_then_ok_retries_with_backoff_and_saves() {
    let (address, server) = start(Behaviour::UnavailableThenOk(2)).await;
    let logdir = tempfile::tempdir().unwrap();
    let session = CaptureSession::new(vec![address.clone()], logdir.path(), fast_options()).unwrap();
    let (progress, events) = recorder();
    let report = session.run(Some(progress)).await.unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let capture = &report.captured[0];
    assert_eq!(capture.attempts, 3);
    assert_eq!(capture.source, XSpaceSource::Response);
    let expected = logdir
        .path()
        .canonicalize()
        .unwrap()
        .join("plugins/profile/s1")
        .join(format!("{}.xplane.pb", address.replace(':', "_")));
    assert_eq!(capture.path, expected);
    assert_eq!(std::fs::read(&expected).unwrap(), XSPACE);
    // Two back-offs were reported, 50 ms then 100 ms, each with the server's message.
    let waits: Vec<(u32, Duration, String)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match &e.state {
            WorkerState::BackingOff { attempt, wait, error } => Some((*attempt, *wait, error.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(waits.len(), 2);
    assert_eq!((waits[0].0, waits[0].1), (1, Duration::from_millis(50)));
    assert_eq!((waits[1].0, waits[1].1), (2, Duration::from_millis(100)));
    assert!(waits[0].2.contains("warming up"), "{}", waits[0].2);
    // The request asked for the XSpace in the response and named the file like XProf.
    let requests = server.requests.lock().unwrap();
    assert!(requests.iter().all(|r| r.emit_xspace && r.host_name == address && r.session_id == "s1"));
    assert!(requests[0].repository_root.ends_with("plugins/profile"));
}

#[tokio::test]
async fn unavailable_beyond_retries_fails_with_attempt_count() {
    let (address, _server) = start(Behaviour::UnavailableThenOk(10)).await;
    let logdir = tempfile::tempdir().unwrap();
    let options = CaptureOptions { retries: 1, ..fast_options() };
    let report = CaptureSession::new(vec![address], logdir.path(), options).unwrap().run(None).await.unwrap();
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].attempts, 2);
    assert!(matches!(report.failed[0].error, CaptureError::Rpc { code: tonic::Code::Unavailable, .. }));
    // Nothing captured: no empty run directory is left behind.
    assert!(!report.run_dir.exists());
}

#[tokio::test]
async fn slow_server_hits_the_deadline() {
    let (address, _server) = start(Behaviour::Slow(Duration::from_secs(30))).await;
    let logdir = tempfile::tempdir().unwrap();
    let options = CaptureOptions { deadline_margin: Duration::from_millis(300), ..fast_options() };
    let started = Instant::now();
    let report = CaptureSession::new(vec![address], logdir.path(), options).unwrap().run(None).await.unwrap();
    let took = started.elapsed();
    assert!(matches!(report.failed[0].error, CaptureError::Deadline { .. }), "{:?}", report.failed[0].error);
    assert_eq!(report.failed[0].attempts, 1, "deadlines are not retried");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(report.failed[0].error.to_string().contains("did not return the profile within"));
}

#[tokio::test]
async fn terminate_ends_the_session_early() {
    let (address, _server) = start(Behaviour::Slow(Duration::from_secs(30))).await;
    let logdir = tempfile::tempdir().unwrap();
    let options = CaptureOptions { duration: Duration::from_secs(30), ..fast_options() };
    let session = CaptureSession::new(vec![address], logdir.path(), options).unwrap();
    let started = Instant::now();
    let (report, refused) = tokio::join!(session.run(None), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        session.terminate_all().await
    });
    assert!(refused.is_empty());
    let report = report.unwrap();
    assert_eq!(report.captured.len(), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn oversized_response_is_reported_not_retried() {
    let (address, server) = start(Behaviour::Big(2 << 20)).await;
    let logdir = tempfile::tempdir().unwrap();
    let options = CaptureOptions { max_response_bytes: 1 << 20, ..fast_options() };
    let report = CaptureSession::new(vec![address], logdir.path(), options).unwrap().run(None).await.unwrap();
    let error = &report.failed[0].error;
    assert!(matches!(error, CaptureError::ResponseTooLarge { limit_mb: 1, .. }), "{error:?}");
    assert!(error.to_string().contains("--max-response-mb"));
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn empty_trace_is_retried_then_reported() {
    let (address, server) = start(Behaviour::Empty).await;
    let logdir = tempfile::tempdir().unwrap();
    let options = CaptureOptions { retries: 1, ..fast_options() };
    let report = CaptureSession::new(vec![address], logdir.path(), options).unwrap().run(None).await.unwrap();
    assert!(matches!(report.failed[0].error, CaptureError::EmptyTrace { .. }));
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn server_writing_to_a_shared_filesystem_is_picked_up() {
    let (address, _server) = start(Behaviour::WritesItself).await;
    let logdir = tempfile::tempdir().unwrap();
    let report = CaptureSession::new(vec![address], logdir.path(), fast_options()).unwrap().run(None).await.unwrap();
    assert_eq!(report.captured[0].source, XSpaceSource::SharedFilesystem);
    assert_eq!(std::fs::read(&report.captured[0].path).unwrap(), XSPACE);
}

#[tokio::test]
async fn server_writing_elsewhere_says_where() {
    let (address, _server) = start(Behaviour::WroteElsewhere).await;
    let logdir = tempfile::tempdir().unwrap();
    let report =
        CaptureSession::new(vec![address.clone()], logdir.path(), fast_options()).unwrap().run(None).await.unwrap();
    let message = report.failed[0].error.to_string();
    let expected = report.run_dir.join(format!("{}.xplane.pb", address.replace(':', "_")));
    assert!(message.contains(&expected.display().to_string()), "{message}");
    assert!(message.contains("on its own machine"), "{message}");
}

#[tokio::test]
async fn two_workers_partial_success_keeps_the_good_one() {
    let (good, _server) = start(Behaviour::UnavailableThenOk(0)).await;
    let dead = free_port_address();
    let logdir = tempfile::tempdir().unwrap();
    let options = CaptureOptions { retries: 0, ..fast_options() };
    let report =
        CaptureSession::new(vec![good.clone(), dead.clone()], logdir.path(), options).unwrap().run(None).await.unwrap();
    assert_eq!(report.captured.len(), 1);
    assert_eq!(report.captured[0].address, good);
    assert_eq!(report.failed[0].address, dead);
    assert!(matches!(report.failed[0].error, CaptureError::Refused { .. }));
    let json = report.to_json();
    assert_eq!(json["failed"][0]["kind"], "refused");
}

#[tokio::test]
async fn refused_connection_is_one_clear_line_and_retried() {
    let dead = free_port_address();
    let logdir = tempfile::tempdir().unwrap();
    let options = CaptureOptions { retries: 2, ..fast_options() };
    let started = Instant::now();
    let report = CaptureSession::new(vec![dead], logdir.path(), options).unwrap().run(None).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(report.failed[0].attempts, 3);
    let message = report.failed[0].error.to_string();
    assert!(message.contains("connection refused") && !message.contains('\n'), "{message}");
}

#[tokio::test]
async fn http1_server_is_the_wrong_protocol() {
    let address = start_http1_server();
    let logdir = tempfile::tempdir().unwrap();
    let report = CaptureSession::new(vec![address], logdir.path(), fast_options()).unwrap().run(None).await.unwrap();
    let error = &report.failed[0].error;
    assert!(matches!(error, CaptureError::WrongProtocol { .. }), "{error:?}");
    assert!(error.to_string().contains("HTTP/1.1 400 Bad Request"), "{error}");
    assert_eq!(report.failed[0].attempts, 1, "the wrong protocol is not retried");
}

#[tokio::test]
async fn grpc_server_without_the_profiler_service() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_routes(tonic::service::Routes::default())
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    let logdir = tempfile::tempdir().unwrap();
    let report = CaptureSession::new(vec![address], logdir.path(), fast_options()).unwrap().run(None).await.unwrap();
    let error = &report.failed[0].error;
    assert!(matches!(error, CaptureError::NotAProfilerServer { .. }), "{error:?}");
}

#[tokio::test]
async fn monitor_unimplemented_is_explained() {
    let (address, _server) = start(Behaviour::Empty).await;
    let mut client = oxprof_capture::ProfilerClient::connect(&address, Duration::from_secs(2), 1 << 20).await.unwrap();
    let error = client.monitor(Duration::from_millis(10), 1, false, Duration::from_secs(2)).await.unwrap_err();
    assert!(error.to_string().contains("does not implement Monitor"), "{error}");
}

/// A peer that accepts the connection and never says a word is named as such at the
/// handshake, not after a whole capture's deadline as "the program may be stuck".
#[tokio::test]
async fn a_silent_peer_is_named_at_the_handshake() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let logdir = tempfile::tempdir().unwrap();
    let options = CaptureOptions { connect_timeout: Duration::from_millis(500), ..fast_options() };
    let started = Instant::now();
    let report = CaptureSession::new(vec![address], logdir.path(), options).unwrap().run(None).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "hang guard: {:?}", started.elapsed());
    let error = &report.failed[0].error;
    assert!(matches!(error, CaptureError::NoHttp2Answer { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("accepted the connection but sent no gRPC (HTTP/2) answer within 500ms"), "{message}");
    assert!(message.contains("is this the profiler server's port"), "{message}");
    assert!(!message.contains("stuck"), "{message}");
    assert_eq!(report.failed[0].attempts, 1, "not retried");
    assert_eq!(error.http_status(), 502);
}

/// A peer speaking another text protocol (here an SSH banner) is quoted as text.
#[tokio::test]
async fn a_text_answer_is_shown_as_text() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\x1b\r\n");
            let mut buffer = [0u8; 1024];
            let _ = stream.read(&mut buffer);
        }
    });
    let logdir = tempfile::tempdir().unwrap();
    let report = CaptureSession::new(vec![address], logdir.path(), fast_options()).unwrap().run(None).await.unwrap();
    let error = &report.failed[0].error;
    assert!(matches!(error, CaptureError::WrongProtocol { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(r#"other than HTTP/2: "SSH-2.0-OpenSSH_9.2p1 Debian-2\x1b""#), "{message}");
}

/// The route's service (XProf's parameters, the default policy) captures as XProf does.
#[test]
fn route_captures_like_xprof() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (address, _server) = runtime.block_on(start(Behaviour::UnavailableThenOk(0)));
    let logdir = tempfile::tempdir().unwrap();
    let query = [("service_addr", address.as_str()), ("duration", "100"), ("session_id", "from_ui")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let service = oxprof_capture::CaptureService::new(logdir.path().to_path_buf(), Default::default());
    let response = service.handle_blocking(&query);
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body["result"], "Capture profile successfully. Please refresh.");
    assert_eq!(response.body["run"], "from_ui");
    assert!(
        logdir.path().join("plugins/profile/from_ui").join(format!("{}.xplane.pb", address.replace(':', "_"))).exists()
    );
}
