//! XProf's tools, one module each: each computes a typed report from OpStats (or the
//! model) and renders it into XProf's body with the dialects of `oxprof_wire`.

pub mod dcn_perfetto;
pub mod dcn_slack;
pub mod event_time_fraction;
pub mod framework_op_stats;
pub mod graph_viewer;
pub mod graphviz_html;
pub mod hlo_stats;
pub mod input_pipeline;
pub mod kernel_stats;
pub mod megascale;
pub mod memory_profile;
pub mod memory_viewer;
pub mod op_profile;
pub mod op_record;
pub mod overview_page;
pub mod perf_counters;
pub mod pod_viewer;
pub mod roofline_model;
pub mod smart_suggestion;
pub mod step_breakdown;
pub mod tf_data;
mod tpu_counter_ids_v6e;
mod tpu_counter_ids_v7x;
pub mod utilization_viewer;
