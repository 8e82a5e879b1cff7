//! The trace viewer's data: one host's XSpace turned into an indexed set of trace events
//! (XProf's `ConvertXSpaceToTraceEventsContainer` + the zoom-level storage of its
//! streaming trace viewer), and the views served from that index.
//!
//! * [`TraceIndex::build`] (`index.rs`): devices (processes) and resources (threads) with
//!   XProf's ids, every event of every track sorted as XProf sorts them, XProf's per-event
//!   `serial` (unique id among equal timestamps) and zoom level (the coarsest of XProf's 13
//!   resolutions, 1 s … 1 ps, at which the event is visible). Only 4–6 bytes per event:
//!   timestamps, names and stats are read from the decoded model on demand.
//! * [`xprof`]: XProf 2.24.2's `trace_viewer@` JSON for a window and resolution, one
//!   event's details, and name-prefix search.
//! * [`lod`]: oxprof's own level-of-detail API for the UI (bounded items per track at any
//!   zoom, hidden events counted, no event cap).
//! * [`cache`]: the index serialized beside the profile (versioned, validated).
//! * [`multi`]: several hosts as one trace (XProf's multi-host merge) for the LOD API.
//! * [`aggregate`]: exact per-name statistics of a selection (tracks × time range) and an
//!   event's self time, for the UI's selections.
//!
//! Built on `oxprof-grouping`'s step groups; pure functions of the model (the cache is
//! written to and read from a caller's sink).

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod aggregate;
mod cache_format;
mod derived;
mod index;
pub mod lod;
pub mod multi;
mod numfmt;
mod tpu_derived;
mod tpu_groups;
mod visibility;
pub mod xprof;

#[cfg(test)]
mod tests;

pub use cache_format::{CacheError, read_index, read_index_from, write_index, write_index_to};
pub use index::{
    BuildOptions, DeviceInfo, EventRef, FlowEntry, HOST_THREADS_DEVICE_ID, LAYER_RESOLUTIONS_PS, ResourceInfo,
    TraceIndex, TrackInfo, TrackKind,
};
pub use numfmt::stdlib_hash_bytes;
pub use visibility::DISABLE_STREAMING_THRESHOLD;

/// Pid offset between hosts in a merged multi-host trace (XProf's `kMaxDevicesPerHost`).
pub const MAX_DEVICES_PER_HOST: u32 = 1000;

pub mod cache {
    //! The on-disk cache of a [`super::TraceIndex`]: see [`super::write_index`] and
    //! [`super::read_index`].
    pub use super::cache_format::{CACHE_VERSION, CacheError};
}
