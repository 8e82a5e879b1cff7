//! oxprof's format layer: profile files on disk into the model.
//!
//! * [`load_xspace`] / [`load_xspace_with`] / [`decode_bytes`]: XSpace files (`.xplane.pb`,
//!   optionally gzip-compressed) into an [`XSpace`], memory-mapped and released as they are
//!   decoded (by `oxprof-xspace`), within explicit [`LoadLimits`] (budgets against hostile
//!   input; the other entry points use the defaults).
//! * [`discover`]: runs and hosts under a log directory, the way XProf lays them out.
//!
//! Invariant: the IO layer. The model (`oxprof-model`) and the XSpace codec
//! (`oxprof-xspace`) know nothing of files; analyses know nothing of this crate.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod discovery;
mod error;
pub mod formats;
#[cfg(target_os = "linux")]
mod inflating;
pub mod io_wait;
mod load;
#[cfg(target_os = "linux")]
mod mapguard;
pub mod progress;
pub mod store;

// The model lives in `oxprof-model` and the codec in `oxprof-xspace`; re-exported while
// callers move to them.
pub use oxprof_model::{limits, schema};
pub use oxprof_xspace::{
    DecodeError, WireError, decode_xspace, decode_xspace_lines_of, decode_xspace_with, decode_xspace_within,
};

pub use discovery::{Discovery, DiscoveryError, HostFile, Run, discover};
pub use error::LoadError;
pub use formats::{Detected, Format, FormatSpec, detect};
pub use load::{
    decode_bytes, decode_bytes_lines_of, decode_bytes_with, decode_stream_lines_of, decode_stream_spilled, load_xspace,
    load_xspace_lines_of, load_xspace_with, return_freed_large_blocks_to_the_os,
};
pub use oxprof_model::{
    Allowance, DiagnosticKind, Diagnostics, Event, EventMetadata, EventMetadataId, IntValue, KeepPages, Limit,
    LimitExceeded, LoadLimits, ReleasePages, Severity, Stat, StatMetadata, StatMetadataId, StatValue, Stats, StrId,
    StringTable, XLine, XPlane, XSpace,
};
pub use store::{FileStat, LocalStore, ProfileStore};
