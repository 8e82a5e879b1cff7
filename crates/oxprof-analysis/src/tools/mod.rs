//! XProf's tools, one module each, rendering OpStats (or the model) into XProf's wire
//! formats.

pub mod csv;
pub mod datatable;
pub mod framework_op_stats;
pub mod graph_viewer;
pub mod graphviz_html;
pub mod hlo_stats;
pub mod input_pipeline;
pub mod json_text;
pub mod kernel_stats;
pub mod memory_profile;
pub mod memory_viewer;
pub mod op_profile;
pub mod op_record;
pub mod overview_page;
pub mod pod_viewer;
pub mod roofline_model;
pub mod step_breakdown;
pub mod tf_data;
