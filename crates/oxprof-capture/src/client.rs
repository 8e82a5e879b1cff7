//! One connection to one profiler server: connects with a timeout, calls `Profile`,
//! `Terminate` and `Monitor`, and turns network and gRPC failures into [`CaptureError`]s
//! that say what is on the other end (probing the port when a failure looks like the
//! wrong protocol).

use crate::error::CaptureError;
use crate::proto::profiler_service_client::ProfilerServiceClient;
use crate::proto::{MonitorRequest, MonitorResponse, ProfileRequest, ProfileResponse, TerminateRequest};
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tonic::transport::{Channel, Endpoint};

/// A connected client of one worker's `tensorflow.ProfilerService`.
#[derive(Debug, Clone)]
pub struct ProfilerClient {
    address: String,
    connect_timeout: Duration,
    max_response_bytes: usize,
    inner: ProfilerServiceClient<Channel>,
}

impl ProfilerClient {
    /// Connects to `address` (`host:port`).
    ///
    /// The TCP connection is tried first on its own, so that a refused port, a timeout
    /// and a name that does not resolve each get their own message; then the HTTP/2
    /// channel is opened.
    pub async fn connect(
        address: &str,
        connect_timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<Self, CaptureError> {
        check_tcp(address, connect_timeout).await?;
        let endpoint = Endpoint::from_shared(format!("http://{address}"))
            .map_err(|e| CaptureError::BadAddress { address: address.to_string(), reason: e.to_string() })?
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true);
        let channel = match timeout(connect_timeout, endpoint.connect()).await {
            Err(_) => {
                return Err(CaptureError::ConnectTimeout { address: address.to_string(), timeout: connect_timeout });
            }
            Ok(Err(e)) => {
                let reason = error_chain(&e);
                return Err(diagnose(address, connect_timeout, None, reason).await);
            }
            Ok(Ok(channel)) => channel,
        };
        let inner = ProfilerServiceClient::new(channel).max_decoding_message_size(max_response_bytes);
        Ok(ProfilerClient { address: address.to_string(), connect_timeout, max_response_bytes, inner })
    }

    /// The address this client talks to.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Runs one profiling session: blocks until the server has traced and collected
    /// (at most `deadline`).
    pub async fn profile(
        &mut self,
        request: ProfileRequest,
        deadline: Duration,
    ) -> Result<ProfileResponse, CaptureError> {
        let mut request = tonic::Request::new(request);
        request.set_timeout(deadline);
        match timeout(deadline, self.inner.profile(request)).await {
            Err(_) => Err(CaptureError::Deadline { address: self.address.clone(), deadline }),
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(self.classify(status, deadline).await),
        }
    }

    /// Asks the server to end session `session_id` now; its `Profile` call then returns
    /// what was collected so far.
    pub async fn terminate(&mut self, session_id: &str) -> Result<(), CaptureError> {
        let wait = self.connect_timeout;
        let mut request = tonic::Request::new(TerminateRequest { session_id: session_id.to_string() });
        request.set_timeout(wait);
        match timeout(wait, self.inner.terminate(request)).await {
            Err(_) => Err(CaptureError::Deadline { address: self.address.clone(), deadline: wait }),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(status)) => Err(self.classify(status, wait).await),
        }
    }

    /// Calls `Monitor` (utilization summary over `duration`). JAX's and TensorFlow's
    /// stock servers answer UNIMPLEMENTED; only TPU servers implement it.
    pub async fn monitor(
        &mut self,
        duration: Duration,
        monitoring_level: i32,
        timestamp: bool,
        margin: Duration,
    ) -> Result<MonitorResponse, CaptureError> {
        let deadline = duration + margin;
        let duration_ms = duration.as_millis().min(u128::from(u64::MAX)) as u64;
        let mut request = tonic::Request::new(MonitorRequest { duration_ms, monitoring_level, timestamp });
        request.set_timeout(deadline);
        match timeout(deadline, self.inner.monitor(request)).await {
            Err(_) => Err(CaptureError::Deadline { address: self.address.clone(), deadline }),
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => Err(CaptureError::Rpc {
                address: self.address.clone(),
                code: status.code(),
                message: "this server does not implement Monitor (only TPU servers do)".into(),
            }),
            Ok(Err(status)) => Err(self.classify(status, deadline).await),
        }
    }

    /// Maps a failed call's status to an error, probing the port when the status may
    /// come from the transport rather than from a profiler server.
    async fn classify(&self, status: tonic::Status, deadline: Duration) -> CaptureError {
        let address = self.address.clone();
        let message = status.message().to_string();
        match status.code() {
            tonic::Code::DeadlineExceeded => CaptureError::Deadline { address, deadline },
            tonic::Code::Cancelled if message.contains("Timeout expired") => {
                CaptureError::Deadline { address, deadline }
            }
            tonic::Code::OutOfRange | tonic::Code::ResourceExhausted if message.contains("too large") => {
                CaptureError::ResponseTooLarge { address, limit_mb: self.max_response_bytes >> 20, detail: message }
            }
            code @ (tonic::Code::Unknown
            | tonic::Code::Cancelled
            | tonic::Code::Internal
            | tonic::Code::Unavailable
            | tonic::Code::Unimplemented) => {
                let reason = match std::error::Error::source(&status) {
                    Some(source) => format!("{message}: {}", error_chain(source)),
                    None => message.clone(),
                };
                match diagnose(&address, self.connect_timeout, Some(code), reason).await {
                    CaptureError::Connect { .. } => CaptureError::Rpc { address, code, message },
                    other => other,
                }
            }
            code => CaptureError::Rpc { address, code, message },
        }
    }
}

/// Resolves `address` and opens (then closes) a TCP connection to it.
async fn check_tcp(address: &str, connect_timeout: Duration) -> Result<(), CaptureError> {
    let targets: Vec<SocketAddr> = match timeout(connect_timeout, tokio::net::lookup_host(address)).await {
        Err(_) => {
            return Err(CaptureError::Unresolvable {
                address: address.to_string(),
                reason: "name lookup timed out".into(),
            });
        }
        Ok(Err(e)) => return Err(CaptureError::Unresolvable { address: address.to_string(), reason: e.to_string() }),
        Ok(Ok(found)) => found.collect(),
    };
    let mut last = CaptureError::Unresolvable { address: address.to_string(), reason: "no address found".into() };
    for target in targets {
        match timeout(connect_timeout, TcpStream::connect(target)).await {
            Ok(Ok(_stream)) => return Ok(()),
            Err(_) => last = CaptureError::ConnectTimeout { address: address.to_string(), timeout: connect_timeout },
            Ok(Err(e)) => last = io_connect_error(address, connect_timeout, &e),
        }
    }
    Err(last)
}

fn io_connect_error(address: &str, connect_timeout: Duration, e: &std::io::Error) -> CaptureError {
    match e.kind() {
        ErrorKind::ConnectionRefused => CaptureError::Refused { address: address.to_string() },
        ErrorKind::TimedOut => CaptureError::ConnectTimeout { address: address.to_string(), timeout: connect_timeout },
        _ => CaptureError::Connect { address: address.to_string(), reason: e.to_string() },
    }
}

/// What a port answers to the HTTP/2 connection preface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeResult {
    /// Nothing listens.
    Refused,
    /// The connection failed otherwise.
    Unreachable(String),
    /// It answered with an HTTP/2 SETTINGS frame: it speaks HTTP/2 (gRPC's transport).
    Http2,
    /// It answered HTTP/1.x (first line of the answer).
    Http1(String),
    /// It answered bytes that are neither (the first few, hex).
    Other(String),
    /// It closed the connection without a byte.
    Closed,
    /// It kept the connection open without answering.
    Silent,
}

/// Sends the HTTP/2 client preface and an empty SETTINGS frame to `address` and looks at
/// the first bytes of the answer.
pub async fn probe(address: &str, wait: Duration) -> ProbeResult {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    let mut stream = match timeout(wait, TcpStream::connect(address)).await {
        Err(_) => return ProbeResult::Unreachable("connect timed out".into()),
        Ok(Err(e)) if e.kind() == ErrorKind::ConnectionRefused => return ProbeResult::Refused,
        Ok(Err(e)) => return ProbeResult::Unreachable(e.to_string()),
        Ok(Ok(stream)) => stream,
    };
    if stream.write_all(PREFACE).await.is_err() {
        return ProbeResult::Closed;
    }
    let mut buffer = [0u8; 256];
    let mut filled = 0;
    let mut timed_out = false;
    // Read until a frame header or an HTTP/1 status line is complete.
    while filled < 9 || (buffer.starts_with(b"HTTP/") && !buffer[..filled].contains(&b'\n')) {
        match timeout(wait, stream.read(&mut buffer[filled..])).await {
            Err(_) => {
                timed_out = true;
                break;
            }
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => filled += n,
        }
        if filled == buffer.len() {
            break;
        }
    }
    let answer = &buffer[..filled];
    if answer.is_empty() {
        return if timed_out { ProbeResult::Silent } else { ProbeResult::Closed };
    }
    if answer.starts_with(b"HTTP/") {
        let line = answer.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or_default();
        return ProbeResult::Http1(String::from_utf8_lossy(line).into_owned());
    }
    // An HTTP/2 frame header: 24-bit length, type (4 = SETTINGS), flags, stream id.
    if answer.len() >= 9 && answer.get(3) == Some(&4) {
        return ProbeResult::Http2;
    }
    // A TLS record (handshake 0x16 or alert 0x15, version 3.x): a TLS-only server.
    if matches!(answer, [0x15 | 0x16, 0x03, ..]) {
        return ProbeResult::Other("a TLS record: the server expects TLS, oxprof speaks plain gRPC".into());
    }
    if filled < 9 && answer.iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) {
        return ProbeResult::Other(String::from_utf8_lossy(answer).trim().to_string());
    }
    let hex: String = answer.iter().take(12).map(|b| format!("{b:02x}")).collect();
    ProbeResult::Other(hex)
}

/// Turns a failure whose cause is unclear into a precise error by probing the port:
/// a web server, a non-HTTP service or a closed port each get their own message;
/// if the port speaks HTTP/2, the failure stays a plain connection error (`Connect`),
/// or `NotAProfilerServer` for UNIMPLEMENTED.
async fn diagnose(address: &str, wait: Duration, code: Option<tonic::Code>, reason: String) -> CaptureError {
    let address_owned = address.to_string();
    match probe(address, wait.min(Duration::from_secs(3))).await {
        ProbeResult::Refused => CaptureError::Refused { address: address_owned },
        ProbeResult::Unreachable(why) => CaptureError::Connect { address: address_owned, reason: why },
        ProbeResult::Http1(line) => CaptureError::WrongProtocol {
            address: address_owned,
            what: format!(
                "it answers HTTP/1 ({line:?}), like a web server or the profiler UI's port; \
                 pass the port given to start_server()"
            ),
        },
        ProbeResult::Other(first) => CaptureError::WrongProtocol {
            address: address_owned,
            what: format!("it answers something other than HTTP/2 ({first:?})"),
        },
        ProbeResult::Closed => CaptureError::WrongProtocol {
            address: address_owned,
            what: "it closed the connection at the HTTP/2 handshake".into(),
        },
        ProbeResult::Silent => CaptureError::WrongProtocol {
            address: address_owned,
            what: "it accepted the connection but never answered the HTTP/2 handshake".into(),
        },
        ProbeResult::Http2 if code == Some(tonic::Code::Unimplemented) => {
            CaptureError::NotAProfilerServer { address: address_owned, message: reason }
        }
        ProbeResult::Http2 => CaptureError::Connect { address: address_owned, reason },
    }
}

/// `error: cause: cause ...` on one line.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
