//! The fake profiler servers and helpers the integration tests share.
#![allow(dead_code)]

use oxprof_capture::proto::profiler_service_server::{ProfilerService, ProfilerServiceServer};
use oxprof_capture::proto::*;
use oxprof_capture::{CaptureOptions, ProgressEvent, ProgressFn};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::codegen::tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

/// How the fake server answers `Profile`.
#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    /// UNAVAILABLE this many times, then the XSpace bytes in the response.
    UnavailableThenOk(u32),
    /// Sleeps this long before answering (for deadlines) unless terminated.
    Slow(Duration),
    /// Returns an XSpace of this many bytes.
    Big(usize),
    /// Returns `empty_trace = true`.
    Empty,
    /// Writes the XSpace under the request's repository root and returns nothing.
    WritesItself,
    /// Claims a non-empty trace but neither returns nor writes it (a remote server).
    WroteElsewhere,
}

#[derive(Clone)]
pub struct FakeServer {
    pub behaviour: Behaviour,
    pub calls: Arc<AtomicU32>,
    pub requests: Arc<Mutex<Vec<ProfileRequest>>>,
    pub terminated: Arc<tokio::sync::Notify>,
}

pub const XSPACE: &[u8] = b"\x0a\x02\x08\x01 pretend XSpace";

#[tonic::async_trait]
impl ProfilerService for FakeServer {
    async fn profile(&self, request: Request<ProfileRequest>) -> Result<Response<ProfileResponse>, Status> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let request = request.into_inner();
        self.requests.lock().unwrap().push(request.clone());
        let ok = |xspace: Vec<u8>| Ok(Response::new(ProfileResponse { tool_data: vec![], empty_trace: false, xspace }));
        match self.behaviour {
            Behaviour::UnavailableThenOk(n) if call <= n => Err(Status::unavailable("warming up")),
            Behaviour::UnavailableThenOk(_) => ok(XSPACE.to_vec()),
            Behaviour::Slow(wait) => {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = self.terminated.notified() => {}
                }
                ok(XSPACE.to_vec())
            }
            Behaviour::Big(n) => ok(vec![7u8; n]),
            Behaviour::Empty => {
                Ok(Response::new(ProfileResponse { tool_data: vec![], empty_trace: true, xspace: vec![] }))
            }
            Behaviour::WritesItself => {
                let dir = PathBuf::from(&request.repository_root).join(&request.session_id);
                std::fs::create_dir_all(&dir).unwrap();
                let path = dir.join(format!("{}.xplane.pb", request.host_name.replace(':', "_")));
                std::fs::write(&path, XSPACE).unwrap();
                // File times come from the kernel's coarse clock and can look a few ms older
                // than the client's request time: make that happen every time.
                let file = std::fs::File::options().write(true).open(&path).unwrap();
                file.set_modified(std::time::SystemTime::now() - Duration::from_millis(20)).unwrap();
                ok(vec![])
            }
            Behaviour::WroteElsewhere => ok(vec![]),
        }
    }

    async fn terminate(&self, _request: Request<TerminateRequest>) -> Result<Response<TerminateResponse>, Status> {
        self.terminated.notify_waiters();
        Ok(Response::new(TerminateResponse {}))
    }

    async fn monitor(&self, _request: Request<MonitorRequest>) -> Result<Response<MonitorResponse>, Status> {
        Err(Status::unimplemented("unimplemented."))
    }

    async fn start_continuous_profiling(
        &self,
        _request: Request<ProfileRequest>,
    ) -> Result<Response<ContinuousProfilingResponse>, Status> {
        Err(Status::unimplemented(""))
    }

    async fn stop_continuous_profiling(
        &self,
        _request: Request<StopContinuousProfilingRequest>,
    ) -> Result<Response<StopContinuousProfilingResponse>, Status> {
        Err(Status::unimplemented(""))
    }

    async fn get_snapshot(&self, _request: Request<GetSnapshotRequest>) -> Result<Response<ProfileResponse>, Status> {
        Err(Status::unimplemented(""))
    }
}

/// Starts a fake server on a free loopback port; returns its address and handle.
pub async fn start(behaviour: Behaviour) -> (String, FakeServer) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let server = FakeServer {
        behaviour,
        calls: Arc::default(),
        requests: Arc::default(),
        terminated: Arc::new(tokio::sync::Notify::new()),
    };
    let service = ProfilerServiceServer::new(server.clone()).max_encoding_message_size(usize::MAX);
    tokio::spawn(
        tonic::transport::Server::builder().add_service(service).serve_with_incoming(TcpListenerStream::new(listener)),
    );
    (address, server)
}

pub fn fast_options() -> CaptureOptions {
    CaptureOptions {
        duration: Duration::from_millis(100),
        retries: 3,
        session_id: Some("s1".into()),
        connect_timeout: Duration::from_secs(2),
        deadline_margin: Duration::from_secs(5),
        backoff_initial: Duration::from_millis(50),
        backoff_max: Duration::from_millis(200),
        ..CaptureOptions::default()
    }
}

pub fn recorder() -> (ProgressFn, Arc<Mutex<Vec<ProgressEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    (Arc::new(move |e: &ProgressEvent| sink.lock().unwrap().push(e.clone())), events)
}

/// An address where nothing listens (a port bound and released).
pub fn free_port_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A plain HTTP/1 server (like a web UI) on the port.
pub fn start_http1_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = [0u8; 1024];
            let _ = stream.read(&mut buffer);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    address
}
