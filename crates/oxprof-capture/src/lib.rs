//! Capture profiles from live TensorFlow and JAX programs over the ProfilerService gRPC
//! protocol (`tensorflow.ProfilerService`, what `jax.profiler.start_server(port)` and
//! `tf.profiler.experimental.server.start(port)` run), into XProf's log directory layout.
//!
//! - [`client`]: one connection, `Profile` / `Terminate` / `Monitor`, precise errors.
//! - [`session`]: the per-worker state machine (connect timeout, deadline, retries with
//!   capped backoff) over several workers at once, saving `<host_port>.xplane.pb` files.
//! - [`options`]: the request (as XProf's client builds it, plus `emit_xspace`) and its
//!   hard limits (duration and delay up to 1 h each).
//! - [`files`]: the run directory and its files: plain session ids, a new run each time,
//!   no symbolic link followed, no file replaced, nothing left behind on failure.
//! - [`cli`]: `oxprof capture` (the user's own command: any target).
//! - [`route`]: XProf's `/capture_profile` for the server, as a [`CaptureService`] held by
//!   the server, within a [`policy::CapturePolicy`]: loopback targets only unless allowed
//!   (`--capture-allow`), at most 4 captures at once (more are refused: HTTP 429),
//!   duration and delay up to 10 min each. Its module docs list the HTTP statuses.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod cli;
pub mod client;
pub mod error;
pub mod files;
pub mod options;
pub mod policy;
pub mod route;
pub mod session;

pub use client::ProfilerClient;
pub use error::CaptureError;
pub use options::{CaptureOptions, parse_address_list, parse_duration};
pub use policy::{AllowedTarget, CaptureLimiter, CapturePermit, CapturePolicy, ResolvedTarget};
pub use route::{CaptureService, RouteResponse};
pub use session::{CaptureReport, CaptureSession, ProgressEvent, ProgressFn, WorkerState, capture};

/// Generated messages and the tonic client/server of `tensorflow.ProfilerService`
/// (vendored TSL protos, see `proto/`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("tensorflow");
}
