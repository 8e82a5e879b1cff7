//! oxprof's format layer: decodes profiler files into a compact, typed, read-only model.
//!
//! * [`decode_xspace`] / [`load_xspace`]: XSpace protobuf bytes or files (`.xplane.pb`,
//!   optionally gzip-compressed) into an [`XSpace`]; [`load_xspace_with`] within explicit
//!   [`LoadLimits`] (budgets against hostile input; the other entry points use the defaults).
//! * [`discover`]: runs and hosts under a log directory, the way XProf lays them out.
//! * [`schema`]: stat and event types resolved by name, as XProf resolves them.
//! * [`hlo`]: the XLA HLO modules a profile carries, decoded into a small model.
//! * [`testing`]: a builder that writes XSpace bytes for tests.
//!
//! Invariant: nothing outside this crate sees protobuf wire types; the model holds
//! interned strings and dense typed ids. Odd input is repaired and counted in
//! [`Diagnostics`], never dropped silently; only structurally broken input is an error.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod decode;
pub mod discovery;
mod error;
pub mod hlo;
mod load;
#[cfg(target_os = "linux")]
mod mapguard;
pub mod testing;
mod wire;

// The model lives in `oxprof-model`; re-exported while callers move to it.
pub use oxprof_model::{limits, schema};

/// prost types generated from the vendored `xplane.proto` (used to write, never to read).
#[allow(missing_docs, clippy::all)]
mod pb {
    include!(concat!(env!("OUT_DIR"), "/tensorflow.profiler.rs"));
}

pub use decode::{
    KeepPages, ReleasePages, decode_xspace, decode_xspace_lines_of, decode_xspace_with, decode_xspace_within,
};
pub use discovery::{Discovery, DiscoveryError, HostFile, Run, discover};
pub use error::{DecodeError, LoadError, WireError};
pub use load::{
    decode_bytes, decode_bytes_with, load_xspace, load_xspace_lines_of, load_xspace_with,
    return_freed_large_blocks_to_the_os,
};
pub use oxprof_model::{
    Allowance, DiagnosticKind, Diagnostics, Event, EventMetadata, EventMetadataId, IntValue, Limit, LimitExceeded,
    LoadLimits, Severity, Stat, StatMetadata, StatMetadataId, StatValue, Stats, StrId, StringTable, XLine, XPlane,
    XSpace,
};
