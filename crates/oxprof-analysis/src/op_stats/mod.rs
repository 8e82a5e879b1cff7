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
