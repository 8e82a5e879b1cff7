//! XSpace → OpStats, the per-host database behind most tools, and the multi-host combine.

pub mod combine;
pub mod convert;
pub mod device_op_metrics;
pub mod duty_cycle;
pub mod environment;
pub mod event_span;
pub mod hardware;
pub mod host_op_metrics;
pub mod kernel_stats;
pub mod op_metrics_db;
pub mod step_events;
pub mod step_intersection;
pub mod steps_db;
pub mod tf_functions;
pub mod types;

pub use types::*;

/// XProf's OpStats JSON read through oxprof's types (fields oxprof does not model are
/// dropped), for tests that compare with it.
#[cfg(test)]
pub(crate) fn load_op_stats(path: &std::path::Path) -> OpStats {
    oxprof_testkit::files::read_json_as(path)
}
