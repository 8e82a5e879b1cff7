//! Why a capture failed: one error type whose messages are single, actionable lines, the
//! rules that decide which failures are worth another attempt, and the HTTP status each
//! failure is answered with by the `/capture_profile` route.
//!
//! Every message carries its whole cause as text and no variant has an
//! [`std::error::Error::source`]: printed with anyhow's `{:#}` (which appends each source
//! after `: `), a cause would otherwise appear twice.

use std::path::PathBuf;
use std::time::Duration;

/// A failure to capture from one worker (or to set up the capture).
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The address is not `host:port`.
    #[error("bad address {address:?}: {reason}")]
    BadAddress {
        /// The address as given.
        address: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The host name does not resolve.
    #[error("cannot resolve {address}: {reason}")]
    Unresolvable {
        /// The address as given.
        address: String,
        /// The resolver's message.
        reason: String,
    },
    /// Nothing listens on the port.
    #[error(
        "connection refused by {address}: nothing listens there (start the profiler server in the program: \
         jax.profiler.start_server(PORT) or tf.profiler.experimental.server.start(PORT))"
    )]
    Refused {
        /// The address.
        address: String,
    },
    /// The TCP connection did not complete in time (host down, firewall, wrong IP).
    #[error("no answer from {address} within {timeout:?} (host down, firewalled, or wrong address)")]
    ConnectTimeout {
        /// The address.
        address: String,
        /// The connect timeout.
        timeout: Duration,
    },
    /// Another network failure while connecting.
    #[error("cannot connect to {address}: {reason}")]
    Connect {
        /// The address.
        address: String,
        /// What the network stack said.
        reason: String,
    },
    /// Something listens, but it does not speak gRPC over HTTP/2.
    #[error("{address} is not a profiler server: {what}")]
    WrongProtocol {
        /// The address.
        address: String,
        /// What the port answered instead.
        what: String,
    },
    /// The port accepted the TCP connection but never answered the HTTP/2 handshake.
    #[error(
        "{address} accepted the connection but sent no gRPC (HTTP/2) answer within {wait:?}: is this the \
         profiler server's port (the one given to start_server())?"
    )]
    NoHttp2Answer {
        /// The address.
        address: String,
        /// How long the handshake was waited for.
        wait: Duration,
    },
    /// A gRPC server without `tensorflow.ProfilerService`.
    #[error("{address} speaks gRPC but has no profiler service (tensorflow.ProfilerService): {message}")]
    NotAProfilerServer {
        /// The address.
        address: String,
        /// The server's status message.
        message: String,
    },
    /// The server (which answered the gRPC handshake) did not answer within duration + margin.
    #[error(
        "{address} did not return the profile within {deadline:?} (capture length + margin); the program may be \
         stuck or the trace too large to collect"
    )]
    Deadline {
        /// The address.
        address: String,
        /// The deadline that passed.
        deadline: Duration,
    },
    /// The response exceeds the client's message size limit.
    #[error(
        "the profile from {address} is larger than the {limit_mb} MiB limit ({detail}); capture for a shorter \
         time, lower --host-tracer-level/--python-tracer-level, or raise --max-response-mb"
    )]
    ResponseTooLarge {
        /// The address.
        address: String,
        /// The limit in MiB.
        limit_mb: usize,
        /// gRPC's message (holds the actual size).
        detail: String,
    },
    /// The server collected no events.
    #[error(
        "{address} captured no trace events (empty trace): is the program running work during the capture? \
         try a longer --duration or --delay"
    )]
    EmptyTrace {
        /// The address.
        address: String,
    },
    /// The server wrote the XSpace on its own filesystem and did not return it.
    #[error(
        "{address} wrote its profile to {} on its own machine and did not send it back (the server ignores \
         emit_xspace: an old TensorFlow/JAX); copy that file to the same path here",
        remote_path.display()
    )]
    ServerWroteRemotely {
        /// The address.
        address: String,
        /// The path on the server's machine.
        remote_path: PathBuf,
    },
    /// Any other gRPC status.
    #[error("{address} answered {code}: {message}")]
    Rpc {
        /// The address.
        address: String,
        /// The gRPC code.
        code: tonic::Code,
        /// The server's message.
        message: String,
    },
    /// Writing the profile locally failed.
    ///
    /// The IO error is part of the message and deliberately not a `source` (see the
    /// module docs).
    #[error("cannot write {}: {error}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The IO error.
        error: std::io::Error,
    },
    /// A directory on the way to the run directory is a symbolic link or not a directory.
    #[error(
        "refusing to write under {}: it is {what}, not a directory of the log directory; captures are written \
         into real directories only (replace it with a directory)",
        path.display()
    )]
    UnsafeDirectory {
        /// The path.
        path: PathBuf,
        /// What it is instead ("a symbolic link", "a file", ...).
        what: &'static str,
    },
    /// The run directory exists already: a capture never writes into an existing run.
    #[error(
        "run {session_id:?} exists already ({}): choose another session id (captures never add to an existing run)",
        path.display()
    )]
    SessionExists {
        /// The session (run) name.
        session_id: String,
        /// The existing run directory (or whatever is at its path).
        path: PathBuf,
    },
    /// The session id cannot name a run directory.
    #[error(
        "bad session id {session_id:?}: {reason} (use 1 to {max} letters, digits, '_', '-' and '.', not starting \
         with '.' or '-')",
        max = crate::files::MAX_SESSION_ID_LEN
    )]
    BadSessionId {
        /// The session id as given.
        session_id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A file to be written exists already (captures never overwrite a file).
    #[error("{} exists already: not overwriting it", path.display())]
    FileExists {
        /// The file.
        path: PathBuf,
    },
    /// The capture target is not on the server's allow-list.
    #[error(
        "capture target {address} is not allowed: {reason}; oxprof serve captures only from loopback addresses \
         and those allowed with --capture-allow HOST[:PORT], IP[:PORT] or CIDR (e.g. --capture-allow {suggestion})"
    )]
    TargetNotAllowed {
        /// The address as given.
        address: String,
        /// Why (e.g. which address it resolves to).
        reason: String,
        /// An allow-list entry that would allow it.
        suggestion: String,
    },
    /// The server runs as many captures as it allows at once.
    #[error("{running} captures already running (this server runs at most {max} at once); wait for one to finish")]
    TooManyCaptures {
        /// Captures running now.
        running: usize,
        /// The limit.
        max: usize,
    },
    /// A bad option (duration, tracer level, ...).
    #[error("{0}")]
    BadOption(String),
    /// The capture could not be started (no thread or runtime).
    #[error("cannot start the capture: {0}")]
    Internal(String),
    /// The capture was interrupted by the user.
    #[error("capture interrupted")]
    Interrupted,
}

impl CaptureError {
    /// Whether another attempt may succeed: the worker may still be starting (refused,
    /// UNAVAILABLE), a previous session is still running (ALREADY_EXISTS), gRPC lost the
    /// stream while the worker restarted ("Stream removed"), or the trace was empty. These
    /// are the cases XProf's `ShouldRetryTracing` retries (its empty trace is UNAVAILABLE).
    pub fn is_retryable(&self) -> bool {
        match self {
            CaptureError::Refused { .. }
            | CaptureError::ConnectTimeout { .. }
            | CaptureError::Connect { .. }
            | CaptureError::EmptyTrace { .. } => true,
            CaptureError::Rpc { code, message, .. } => {
                matches!(code, tonic::Code::Unavailable | tonic::Code::AlreadyExists)
                    || (*code == tonic::Code::Unknown && message == "Stream removed")
            }
            _ => false,
        }
    }

    /// A short form for progress lines (retries), without the advice of the full message.
    pub fn summary(&self) -> String {
        match self {
            CaptureError::Refused { .. } => "connection refused".into(),
            CaptureError::ConnectTimeout { timeout, .. } => format!("no answer within {timeout:?}"),
            CaptureError::EmptyTrace { .. } => "empty trace".into(),
            CaptureError::Rpc { code, message, .. } => format!("{code:?}: {message}"),
            other => other.to_string(),
        }
    }

    /// A short name of the failure kind for machine-readable reports.
    pub fn kind(&self) -> &'static str {
        match self {
            CaptureError::BadAddress { .. } => "bad_address",
            CaptureError::Unresolvable { .. } => "unresolvable",
            CaptureError::Refused { .. } => "refused",
            CaptureError::ConnectTimeout { .. } => "connect_timeout",
            CaptureError::Connect { .. } => "connect",
            CaptureError::WrongProtocol { .. } => "wrong_protocol",
            CaptureError::NotAProfilerServer { .. } => "not_a_profiler_server",
            CaptureError::Deadline { .. } => "deadline",
            CaptureError::ResponseTooLarge { .. } => "response_too_large",
            CaptureError::EmptyTrace { .. } => "empty_trace",
            CaptureError::ServerWroteRemotely { .. } => "server_wrote_remotely",
            CaptureError::Rpc { .. } => "rpc",
            CaptureError::Io { .. } => "io",
            CaptureError::UnsafeDirectory { .. } => "unsafe_directory",
            CaptureError::SessionExists { .. } => "session_exists",
            CaptureError::BadSessionId { .. } => "bad_session_id",
            CaptureError::FileExists { .. } => "file_exists",
            CaptureError::TargetNotAllowed { .. } => "target_not_allowed",
            CaptureError::TooManyCaptures { .. } => "too_many_captures",
            CaptureError::NoHttp2Answer { .. } => "no_http2_answer",
            CaptureError::BadOption(_) => "bad_option",
            CaptureError::Internal(_) => "internal",
            CaptureError::Interrupted => "interrupted",
        }
    }

    /// The HTTP status the `/capture_profile` route answers this failure with: 400 for a
    /// bad request (parameters, address, session id, a name that does not resolve), 403
    /// for a target outside the allow-list, 409 for an existing run or file, 429 when too
    /// many captures run, 502 when the profiler at the address failed or did not answer
    /// (the peer's problem, not the server's), 500 for local failures (disk, directories).
    pub fn http_status(&self) -> u16 {
        match self {
            CaptureError::BadAddress { .. }
            | CaptureError::Unresolvable { .. }
            | CaptureError::BadSessionId { .. }
            | CaptureError::BadOption(_) => 400,
            CaptureError::TargetNotAllowed { .. } => 403,
            CaptureError::SessionExists { .. } | CaptureError::FileExists { .. } => 409,
            CaptureError::TooManyCaptures { .. } => 429,
            CaptureError::Refused { .. }
            | CaptureError::ConnectTimeout { .. }
            | CaptureError::Connect { .. }
            | CaptureError::WrongProtocol { .. }
            | CaptureError::NoHttp2Answer { .. }
            | CaptureError::NotAProfilerServer { .. }
            | CaptureError::Deadline { .. }
            | CaptureError::ResponseTooLarge { .. }
            | CaptureError::EmptyTrace { .. }
            | CaptureError::ServerWroteRemotely { .. }
            | CaptureError::Rpc { .. } => 502,
            CaptureError::Io { .. }
            | CaptureError::UnsafeDirectory { .. }
            | CaptureError::Internal(_)
            | CaptureError::Interrupted => 500,
        }
    }

    /// An IO failure on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        CaptureError::Io { path: path.into(), error }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// One error of every variant, with causes as they really come (an IO error, a
    /// resolver's message, a gRPC status).
    fn every_variant() -> Vec<CaptureError> {
        let address = || "127.0.0.1:9999".to_string();
        vec![
            CaptureError::BadAddress { address: "x".into(), reason: "expected host:port".into() },
            CaptureError::Unresolvable { address: address(), reason: "failed to lookup address information".into() },
            CaptureError::Refused { address: address() },
            CaptureError::ConnectTimeout { address: address(), timeout: Duration::from_secs(5) },
            CaptureError::Connect { address: address(), reason: "Network is unreachable (os error 101)".into() },
            CaptureError::WrongProtocol { address: address(), what: "it answers HTTP/1 (\"HTTP/1.1 400\")".into() },
            CaptureError::NoHttp2Answer { address: address(), wait: Duration::from_secs(5) },
            CaptureError::NotAProfilerServer { address: address(), message: "unknown service".into() },
            CaptureError::Deadline { address: address(), deadline: Duration::from_secs(32) },
            CaptureError::ResponseTooLarge { address: address(), limit_mb: 1, detail: "message too large".into() },
            CaptureError::EmptyTrace { address: address() },
            CaptureError::ServerWroteRemotely { address: address(), remote_path: "/r/h.xplane.pb".into() },
            CaptureError::Rpc { address: address(), code: tonic::Code::Internal, message: "boom".into() },
            CaptureError::Io {
                path: "/l/plugins/profile/r/h.xplane.pb".into(),
                error: std::io::Error::from_raw_os_error(28),
            },
            CaptureError::UnsafeDirectory { path: "/l/plugins".into(), what: "a symbolic link" },
            CaptureError::SessionExists { session_id: "run1".into(), path: "/l/plugins/profile/run1".into() },
            CaptureError::BadSessionId { session_id: "../x".into(), reason: "it contains a path separator" },
            CaptureError::FileExists { path: "/l/plugins/profile/r/h.xplane.pb".into() },
            CaptureError::TargetNotAllowed {
                address: "10.0.0.1:9999".into(),
                reason: "10.0.0.1 is neither a loopback address nor allowed".into(),
                suggestion: "10.0.0.1:9999".into(),
            },
            CaptureError::TooManyCaptures { running: 4, max: 4 },
            CaptureError::BadOption("duration=1 ms is more than this server's limit".into()),
            CaptureError::Internal("no thread: Resource temporarily unavailable (os error 11)".into()),
            CaptureError::Interrupted,
        ]
    }

    /// Printed as anyhow prints a chain (`{:#}`: the message, then each source after
    /// `: `), no error says its cause twice: no variant has a source whose text its own
    /// message already holds, and no `: `-separated segment repeats.
    #[test]
    fn messages_say_their_cause_once() {
        let errors = every_variant();
        // Every variant is covered: this match has no wildcard, so a new variant must be
        // added here (and to the list above, which the count checks).
        let kinds: BTreeSet<&str> = errors
            .iter()
            .map(|e| match e {
                CaptureError::BadAddress { .. }
                | CaptureError::Unresolvable { .. }
                | CaptureError::Refused { .. }
                | CaptureError::ConnectTimeout { .. }
                | CaptureError::Connect { .. }
                | CaptureError::WrongProtocol { .. }
                | CaptureError::NoHttp2Answer { .. }
                | CaptureError::NotAProfilerServer { .. }
                | CaptureError::Deadline { .. }
                | CaptureError::ResponseTooLarge { .. }
                | CaptureError::EmptyTrace { .. }
                | CaptureError::ServerWroteRemotely { .. }
                | CaptureError::Rpc { .. }
                | CaptureError::Io { .. }
                | CaptureError::UnsafeDirectory { .. }
                | CaptureError::SessionExists { .. }
                | CaptureError::BadSessionId { .. }
                | CaptureError::FileExists { .. }
                | CaptureError::TargetNotAllowed { .. }
                | CaptureError::TooManyCaptures { .. }
                | CaptureError::BadOption(_)
                | CaptureError::Internal(_)
                | CaptureError::Interrupted => e.kind(),
            })
            .collect();
        assert_eq!(kinds.len(), 23, "one sample per variant: {kinds:?}");
        for error in errors {
            let kind = error.kind();
            let mut segments = vec![error.to_string()];
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                segments.push(cause.to_string());
                source = cause.source();
            }
            for (i, earlier) in segments.iter().enumerate() {
                for later in &segments[i + 1..] {
                    assert!(!earlier.contains(later.as_str()), "{kind}: {later:?} repeats in {earlier:?}");
                }
            }
            let chain = format!("{:#}", anyhow::Error::from(error));
            let parts: Vec<&str> = chain.split(": ").collect();
            for pair in parts.windows(2) {
                assert_ne!(pair[0], pair[1], "{kind}: {chain}");
            }
            assert!(!chain.contains('\n'), "{kind}: one line: {chain}");
        }
        // The IO cause is in the message, once.
        let io = CaptureError::Io { path: "/x".into(), error: std::io::Error::from_raw_os_error(28) };
        let chain = format!("{:#}", anyhow::Error::from(io));
        assert_eq!(chain.matches("No space left on device").count(), 1, "{chain}");
    }

    #[test]
    fn statuses_are_the_documented_ones() {
        let status = |kind: &str| every_variant().into_iter().find(|e| e.kind() == kind).unwrap().http_status();
        assert_eq!(status("bad_option"), 400);
        assert_eq!(status("bad_session_id"), 400);
        assert_eq!(status("target_not_allowed"), 403);
        assert_eq!(status("session_exists"), 409);
        assert_eq!(status("too_many_captures"), 429);
        assert_eq!(status("io"), 500);
        assert_eq!(status("refused"), 502);
        assert_eq!(status("no_http2_answer"), 502);
        assert_eq!(status("deadline"), 502);
    }
}
