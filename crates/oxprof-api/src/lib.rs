//! oxprof's API layer: turns requests (a path, a tool, parameters) into response bodies.
//! It loads files and calls the analyses; it knows nothing of sockets or terminals, so the
//! CLI and the server are thin shells around it and everything here is testable directly.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod answer;
pub mod catalog;
pub mod counters;
pub mod data;
pub mod diff;
mod error;
#[cfg(feature = "example-tool")]
pub mod example_tool;
pub mod hlo_tools;
pub mod hta;
pub mod http;
mod inference;
pub mod inspect;
pub mod markdown;
pub mod memory_profile;
pub mod op_stats;
mod partial;
mod persist;
pub mod pod;
mod pod_source;
pub mod pytorch;
pub mod registry;
pub mod request;
pub mod session;
pub mod table;
pub mod tf_data;
pub mod tool;
pub mod tool_lists;
pub mod trace;

pub use error::ApiError;
pub use oxprof_diskcache::DiskCache;
pub use oxprof_model::LoadLimits;
pub use persist::BUILD_FINGERPRINT;
