//! oxprof's analysis layer: pure functions from the decoded model to reports.
//! No IO and no HTTP here; callers load files and render outputs.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod advice;
mod cxx_sort;
pub mod grouping;
pub mod hlo_lookup;
pub mod hta;
pub mod inference;
pub mod inspect;
pub mod model_tracker;
pub mod op_stats;
pub mod pytorch;
pub mod tf_op;
pub mod tools;
pub mod trace;
