//! One connection to one profiler server: connects with a timeout, checks that the port
//! answers the HTTP/2 handshake (a silent peer or one speaking another protocol is named
//! as such at once, its answer shown as text), calls `Profile`, `Terminate` and `Monitor`,
//! and turns network and gRPC failures into [`CaptureError`]s that say what is on the
//! other end (probing the port when a failure looks like the wrong protocol).

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
    target: SocketAddr,
    connect_timeout: Duration,
    max_response_bytes: usize,
    inner: ProfilerServiceClient<Channel>,
}

impl ProfilerClient {
    /// Connects to `address` (`host:port`): resolves it, then [`Self::connect_to`].
    pub async fn connect(
        address: &str,
        connect_timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<Self, CaptureError> {
        let targets = resolve(address, connect_timeout).await?;
        Self::connect_to(address, &targets, connect_timeout, max_response_bytes).await
    }

    /// Connects to `address` at one of `targets` (what it resolved to, e.g. checked by a
    /// [`crate::CapturePolicy`]), never re-resolving the name.
    ///
    /// Each target is tried in turn with a TCP connection and the HTTP/2 handshake of its
    /// own, so that a refused port, a timeout, a silent peer and a peer speaking another
    /// protocol each get their own message before any gRPC call waits for a whole capture;
    /// then the gRPC channel is opened on the first target that answered HTTP/2.
    pub async fn connect_to(
        address: &str,
        targets: &[SocketAddr],
        connect_timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<Self, CaptureError> {
        let target = handshake_any(address, targets, connect_timeout).await?;
        let bad_address = |e: &dyn std::fmt::Display| CaptureError::BadAddress {
            address: address.to_string(),
            reason: e.to_string(),
        };
        let origin: tonic::codegen::http::Uri = format!("http://{address}").parse().map_err(|e| bad_address(&e))?;
        let endpoint = Endpoint::from_shared(format!("http://{target}"))
            .map_err(|e| bad_address(&e))?
            // The :authority the server sees stays the name the user gave.
            .origin(origin)
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true);
        let channel = match timeout(connect_timeout, endpoint.connect()).await {
            Err(_) => {
                return Err(CaptureError::ConnectTimeout { address: address.to_string(), timeout: connect_timeout });
            }
            Ok(Err(e)) => {
                let reason = error_chain(&e);
                return Err(diagnose(address, target, connect_timeout, None, reason).await);
            }
            Ok(Ok(channel)) => channel,
        };
        let inner = ProfilerServiceClient::new(channel).max_decoding_message_size(max_response_bytes);
        Ok(ProfilerClient { address: address.to_string(), target, connect_timeout, max_response_bytes, inner })
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
        let deadline = duration.saturating_add(margin);
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
                match diagnose(&address, self.target, self.connect_timeout, Some(code), reason).await {
                    CaptureError::Connect { .. } => CaptureError::Rpc { address, code, message },
                    other => other,
                }
            }
            code => CaptureError::Rpc { address, code, message },
        }
    }
}

/// Resolves `address` (`host:port`) within `wait`: the socket addresses, without
/// duplicates, in the resolver's order.
pub async fn resolve(address: &str, wait: Duration) -> Result<Vec<SocketAddr>, CaptureError> {
    let unresolvable = |reason: String| CaptureError::Unresolvable { address: address.to_string(), reason };
    let found: Vec<SocketAddr> = match timeout(wait, tokio::net::lookup_host(address)).await {
        Err(_) => return Err(unresolvable(format!("name lookup timed out after {wait:?}"))),
        Ok(Err(e)) => return Err(unresolvable(e.to_string())),
        Ok(Ok(found)) => found.collect(),
    };
    let mut unique: Vec<SocketAddr> = Vec::with_capacity(found.len());
    for target in found {
        if !unique.contains(&target) {
            unique.push(target);
        }
    }
    if unique.is_empty() {
        return Err(unresolvable("no address found".into()));
    }
    Ok(unique)
}

/// Tries each target's TCP connection and HTTP/2 handshake; the first that answers
/// HTTP/2, or the most telling failure (a peer that answered something beats one that
/// was unreachable).
async fn handshake_any(address: &str, targets: &[SocketAddr], wait: Duration) -> Result<SocketAddr, CaptureError> {
    let mut best: Option<CaptureError> = None;
    for &target in targets {
        match handshake(address, target, wait).await {
            Ok(()) => return Ok(target),
            Err(e) => {
                if best.as_ref().is_none_or(|b| telling(&e) > telling(b)) {
                    best = Some(e);
                }
            }
        }
    }
    Err(best.unwrap_or_else(|| CaptureError::Unresolvable {
        address: address.to_string(),
        reason: "no address found".into(),
    }))
}

/// How much a connection failure says about the port: a peer's answer, then a timeout,
/// then a refusal.
fn telling(error: &CaptureError) -> u8 {
    match error {
        CaptureError::WrongProtocol { .. } | CaptureError::NoHttp2Answer { .. } => 3,
        CaptureError::ConnectTimeout { .. } | CaptureError::Connect { .. } => 2,
        _ => 1,
    }
}

/// Opens a TCP connection to `target` and checks that it answers the HTTP/2 preface with
/// a SETTINGS frame (what any gRPC server does at once).
async fn handshake(address: &str, target: SocketAddr, wait: Duration) -> Result<(), CaptureError> {
    let mut stream = match timeout(wait, TcpStream::connect(target)).await {
        Err(_) => return Err(CaptureError::ConnectTimeout { address: address.to_string(), timeout: wait }),
        Ok(Err(e)) => return Err(io_connect_error(address, wait, &e)),
        Ok(Ok(stream)) => stream,
    };
    match preface_answer(&mut stream, wait).await {
        ProbeResult::Http2 => Ok(()),
        other => Err(probe_error(address, other, wait)),
    }
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
    /// It answered HTTP/1.x: the first line of the answer, as text (see [`peer_text`]).
    Http1(String),
    /// It answered something else, described as text (see [`peer_text`]).
    Other(String),
    /// It closed the connection without a byte.
    Closed,
    /// It kept the connection open without answering.
    Silent,
}

/// The HTTP/2 client preface and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Sends the HTTP/2 client preface and an empty SETTINGS frame to `address` and looks at
/// the answer (`wait` for the connection, then `wait` for the answer).
pub async fn probe(address: impl tokio::net::ToSocketAddrs, wait: Duration) -> ProbeResult {
    let mut stream = match timeout(wait, TcpStream::connect(address)).await {
        Err(_) => return ProbeResult::Unreachable("connect timed out".into()),
        Ok(Err(e)) if e.kind() == ErrorKind::ConnectionRefused => return ProbeResult::Refused,
        Ok(Err(e)) => return ProbeResult::Unreachable(e.to_string()),
        Ok(Ok(stream)) => stream,
    };
    preface_answer(&mut stream, wait).await
}

/// Sends the preface on a connected stream and reads the answer: until a frame header,
/// a line, 256 bytes, the end of the stream or `wait` in all.
async fn preface_answer(stream: &mut TcpStream, wait: Duration) -> ProbeResult {
    if stream.write_all(PREFACE).await.is_err() {
        return ProbeResult::Closed;
    }
    let now = tokio::time::Instant::now();
    // A year stands for "no limit" (an absurd `wait` must not overflow the instant).
    let until = now.checked_add(wait).unwrap_or_else(|| now + Duration::from_secs(365 * 86_400));
    let mut buffer = [0u8; 256];
    let mut filled = 0;
    let mut timed_out = false;
    while filled < buffer.len() {
        let read = match buffer.get_mut(filled..) {
            Some(rest) => tokio::time::timeout_at(until, stream.read(rest)).await,
            None => break,
        };
        match read {
            Err(_) => {
                timed_out = true;
                break;
            }
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => filled += n,
        }
        let answer = buffer.get(..filled).unwrap_or_default();
        // An HTTP/2 frame header is 9 bytes and starts with a zero byte (length < 2^16);
        // anything else is complete at its first line break.
        let frame_pending = answer.first() == Some(&0) && filled < 9;
        if (filled >= 9 && is_settings_frame(answer)) || (!frame_pending && answer.contains(&b'\n')) {
            break;
        }
        if is_tls_record(answer) {
            break;
        }
    }
    classify_answer(buffer.get(..filled).unwrap_or_default(), timed_out)
}

/// An HTTP/2 frame header of type SETTINGS (4) on stream 0.
fn is_settings_frame(answer: &[u8]) -> bool {
    answer.len() >= 9 && answer.get(3) == Some(&4) && answer.get(5..9) == Some(&[0, 0, 0, 0][..])
}

/// A TLS record (handshake 0x16 or alert 0x15, version 3.x).
fn is_tls_record(answer: &[u8]) -> bool {
    matches!(answer, [0x15 | 0x16, 0x03, ..])
}

/// What the first bytes a port answered mean.
fn classify_answer(answer: &[u8], timed_out: bool) -> ProbeResult {
    if answer.is_empty() {
        return if timed_out { ProbeResult::Silent } else { ProbeResult::Closed };
    }
    if is_settings_frame(answer) {
        return ProbeResult::Http2;
    }
    if is_tls_record(answer) {
        return ProbeResult::Other("a TLS record: the server expects TLS, oxprof speaks plain gRPC".into());
    }
    if answer.starts_with(b"HTTP/") {
        return ProbeResult::Http1(peer_text(answer));
    }
    ProbeResult::Other(format!("\"{}\"", peer_text(answer)))
}

/// The longest text shown of a peer's answer, in characters.
const PEER_TEXT_CHARS: usize = 200;

/// A peer's answer as one line of text: decoded as UTF-8 (invalid bytes as U+FFFD), the
/// first non-empty line, at most 200 characters (then `…`), with control characters,
/// `"` and `\` escaped (`\x1b`, `\u{85}`, `\"`), so it can be quoted in a message.
pub fn peer_text(answer: &[u8]) -> String {
    let text = String::from_utf8_lossy(answer);
    let line = text.split(['\r', '\n']).find(|line| !line.trim().is_empty()).unwrap_or_default();
    let mut out = String::new();
    for (count, c) in line.chars().enumerate() {
        if count == PEER_TEXT_CHARS {
            out.push('…');
            break;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x80 && c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The error for a port that did not answer the preface with HTTP/2.
fn probe_error(address: &str, result: ProbeResult, wait: Duration) -> CaptureError {
    let address_owned = address.to_string();
    let wrong = |what: String| CaptureError::WrongProtocol { address: address.to_string(), what };
    match result {
        ProbeResult::Refused => CaptureError::Refused { address: address_owned },
        ProbeResult::Unreachable(why) => CaptureError::Connect { address: address_owned, reason: why },
        ProbeResult::Http1(line) => wrong(format!(
            "it answers HTTP/1 (\"{line}\"), like a web server or the profiler UI's port; pass the port given to \
             start_server()"
        )),
        ProbeResult::Other(what) => wrong(format!("it answers something other than HTTP/2: {what}")),
        ProbeResult::Closed => wrong("it closed the connection at the HTTP/2 handshake".into()),
        ProbeResult::Silent => CaptureError::NoHttp2Answer { address: address_owned, wait },
        // Not an error: callers handle HTTP/2 themselves.
        ProbeResult::Http2 => CaptureError::Connect { address: address_owned, reason: "it speaks HTTP/2".into() },
    }
}

/// Turns a failure whose cause is unclear into a precise error by probing the port:
/// a web server, a non-HTTP service or a closed port each get their own message;
/// if the port speaks HTTP/2, the failure stays a plain connection error (`Connect`),
/// or `NotAProfilerServer` for UNIMPLEMENTED.
async fn diagnose(
    address: &str,
    target: SocketAddr,
    wait: Duration,
    code: Option<tonic::Code>,
    reason: String,
) -> CaptureError {
    let wait = wait.min(Duration::from_secs(3));
    match probe(target, wait).await {
        ProbeResult::Http2 if code == Some(tonic::Code::Unimplemented) => {
            CaptureError::NotAProfilerServer { address: address.to_string(), message: reason }
        }
        ProbeResult::Http2 => CaptureError::Connect { address: address.to_string(), reason },
        other => probe_error(address, other, wait),
    }
}

/// `error: cause: cause ...` on one line (a cause already in the text is not repeated).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_answers_read_as_text() {
        assert_eq!(peer_text(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\nmore"), "SSH-2.0-OpenSSH_9.2p1 Debian-2");
        assert_eq!(peer_text(b"\r\n\r\n-ERR unknown command 'PRI'\r\n"), "-ERR unknown command 'PRI'");
        assert_eq!(peer_text(b"a\x1b[31mb\x00c\"d\\e\tf"), "a\\x1b[31mb\\x00c\\\"d\\\\e\\x09f");
        assert_eq!(peer_text(b"caf\xc3\xa9 \xff\xfe"), "caf\u{e9} \u{fffd}\u{fffd}");
        assert_eq!(peer_text("x\u{85}y".as_bytes()), "x\\u{85}y");
        let long = peer_text(&[b'a'; 1000]);
        assert_eq!(long.chars().count(), PEER_TEXT_CHARS + 1);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn answers_are_classified() {
        let settings = [0u8, 0, 0, 4, 0, 0, 0, 0, 0];
        assert_eq!(classify_answer(&settings, false), ProbeResult::Http2);
        assert_eq!(classify_answer(b"", true), ProbeResult::Silent);
        assert_eq!(classify_answer(b"", false), ProbeResult::Closed);
        assert_eq!(
            classify_answer(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n", false),
            ProbeResult::Http1("HTTP/1.1 400 Bad Request".into())
        );
        assert_eq!(classify_answer(b"SSH-2.0-x\r\n", false), ProbeResult::Other("\"SSH-2.0-x\"".into()));
        assert!(
            matches!(classify_answer(&[0x16, 0x03, 0x01, 0, 5], false), ProbeResult::Other(t) if t.contains("TLS"))
        );
        let binary = classify_answer(&[0x00, 0x01, 0x02, 0xff, b'A', 0x07, 0x08, 0x09, 0x0a, 0x0b], false);
        assert_eq!(binary, ProbeResult::Other("\"\\x00\\x01\\x02\u{fffd}A\\x07\\x08\\x09\"".into()));
    }
}
