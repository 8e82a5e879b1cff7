//! Capture profiles from live TensorFlow and JAX programs over the ProfilerService gRPC
//! protocol (`tensorflow.ProfilerService`, what `jax.profiler.start_server(port)` and
//! `tf.profiler.experimental.server.start(port)` run), into XProf's log directory layout.
//!
//! - [`client`]: one connection, `Profile` / `Terminate` / `Monitor`, precise errors.
//! - [`session`]: the per-worker state machine (connect timeout, deadline, retries with
//!   capped backoff) over several workers at once, saving `<host_port>.xplane.pb` files.
//! - [`options`]: the request (as XProf's client builds it, plus `emit_xspace`).
//! - [`cli`]: `oxprof capture`; [`route`]: XProf's `/capture_profile` for the server.

pub mod cli;
pub mod client;
pub mod error;
pub mod options;
pub mod route;
pub mod session;

pub use client::ProfilerClient;
pub use error::CaptureError;
pub use options::{CaptureOptions, parse_address_list, parse_duration};
pub use session::{CaptureReport, CaptureSession, ProgressEvent, ProgressFn, WorkerState, capture};

/// Generated messages and the tonic client/server of `tensorflow.ProfilerService`
/// (vendored TSL protos, see `proto/`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("tensorflow");
}
