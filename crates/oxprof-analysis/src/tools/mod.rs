//! XProf's tools, one module each, rendering OpStats (or the model) into XProf's wire
//! formats.

pub mod csv;
pub mod datatable;
pub mod framework_op_stats;
pub mod input_pipeline;
pub mod op_record;
pub mod overview_page;
pub mod pod_viewer;
pub mod step_breakdown;
