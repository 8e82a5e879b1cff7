//! XProf's tools, one module each, rendering OpStats (or the model) into XProf's wire
//! formats.

pub mod datatable;
