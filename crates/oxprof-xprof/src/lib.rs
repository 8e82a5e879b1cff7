//! XProf's analyses with XProf's numbers: pure functions from the decoded model (grouped
//! by `oxprof-grouping`) to typed reports ([`oxprof_report::Report`]). No IO and no HTTP
//! here; callers load files and render outputs.
//!
//! * [`op_stats`]: a host's OpStats (XProf's `ConvertXSpaceToOpStats`) and their combination
//!   over hosts;
//! * [`tools`]: one module per XProf tool over OpStats or the planes themselves;
//! * [`inference`]: the inference (serving) analysis of requests and batches;
//! * [`hlo_lookup`], [`advice`], [`model_tracker`], [`inspect`]: HLO facts of ops, the
//!   overview's advice, framework models, and a profile's shape for `oxprof inspect`.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod advice;
pub mod hlo_lookup;
pub mod inference;
pub mod inspect;
pub mod model_tracker;
pub mod op_stats;
pub mod tools;
