//! Why a capture failed: one error type whose messages are single, actionable lines, and
//! the rules that decide which failures are worth another attempt.

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
    /// A gRPC server without `tensorflow.ProfilerService`.
    #[error("{address} speaks gRPC but has no profiler service (tensorflow.ProfilerService): {message}")]
    NotAProfilerServer {
        /// The address.
        address: String,
        /// The server's status message.
        message: String,
    },
    /// The server did not answer within duration + margin.
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
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// A bad option (duration, tracer level, ...).
    #[error("{0}")]
    BadOption(String),
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
            CaptureError::BadOption(_) => "bad_option",
            CaptureError::Interrupted => "interrupted",
        }
    }
}
