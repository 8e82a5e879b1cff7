//! Test helpers for every oxprof crate, and only for tests: this crate is a
//! dev-dependency, never a dependency (`crates/oxprof/tests/architecture.rs` checks it), so
//! production crates export no test helpers.
//!
//! * [`XSpaceBuilder`] (`xspace.rs`): tiny profiles as real `.xplane.pb` bytes, through the
//!   model's name-level builder and `oxprof-xspace`'s encoder; hostile inputs ([`bombs`]);
//!   the committed profiles ([`fixtures`]); [`error_chain`].
//! * [`crosscheck`]: the XSpace decoder compared with prost field by field (tests over real
//!   profiles and mutations, and the fuzz target).
//! * [`jsoncmp`]: structural JSON comparison with numeric tolerance, for goldens.
//! * [`files`]: where the repository and third-party profiles are; reading gzipped text,
//!   JSON references and profiles.
//! * [`golden`]: the golden tests' cases (profile, hosts, XProf's outputs) and tally.
//! * [`hlo`]: hand-built HLO shapes and instructions.
//! * [`pod`]: a synthetic TPU pod of any number of hosts, with stragglers and slow-input
//!   hosts planted, for tests and benchmarks.
//! * [`tpu`]: what the synthetic TPU profiles share (XLA's and the profiler's messages, XLA
//!   ops' metadata, TensorCore stats, DCN collectives, reproducible gzip).
//!
//! Helpers here may panic: a panic is a test's failure.

pub mod crosscheck;
pub mod files;
pub mod golden;
pub mod hlo;
pub mod http;
pub mod jsoncmp;
pub mod pod;
pub mod tpu;
mod xspace;

/// prost types generated from the vendored `xplane.proto` (to cross-check, never to read).
#[allow(missing_docs, clippy::all)]
mod pb {
    include!(concat!(env!("OUT_DIR"), "/tensorflow.profiler.rs"));
}

pub use crosscheck::crosscheck;
pub use xspace::{EventBuilder, LineBuilder, PlaneBuilder, Value, XSpaceBuilder, bombs, error_chain, fixtures};
