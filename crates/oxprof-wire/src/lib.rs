//! XProf's wire formats, byte for byte: what XProf's server writes, one module per library
//! it writes with. Tools describe their output with typed values (a [`datatable::DataTable`],
//! or a `serde_json::Value` shaped like XProf's proto JSON) and pick the dialect of the
//! library XProf used for that tool's body; this crate knows no tool.
//!
//! | module | imitates |
//! | --- | --- |
//! | [`nlohmann`] | nlohmann::json `dump()` (Grisu2 doubles): XProf's DataTable bodies |
//! | [`protobuf_json`] | protobuf's `MessageToJsonString`: field order, int64 as strings, `SimpleDtoa` |
//! | [`python_json`] | Python's `json.dumps(sort_keys=True)`: XProf's listing routes |
//! | [`gviz_api`] | Python's `gviz_api.DataTable.ToJSon()`: the old TensorBoard tools |
//! | [`cxx_printf`] | C's `printf` (`%g`, `%.Nf`), absl's `StrCat(double)` and `CEscape`, tsl's `FormatDouble` |
//! | [`csv`] | XProf's `/data_csv` (Python's `csv` over the JSON body) |
//! | [`trace_events`] | the trace viewer's JSON (`JsonEventWriter`, `JsonEscape`) and the legacy one's (Python's `json`) |
//! | [`perfetto`] | Perfetto's trace protos (prost), gzipped as `GzipOutputStream` writes them |
//!
//! and one format of oxprof's own: [`artifact`], the versioned files one oxprof process
//! writes for another (a pod's per-host partial results).
//!
//! [`datatable`] is the Google DataTable (columns, rows, properties) most tools fill.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod artifact;
pub mod csv;
pub mod cxx_printf;
pub mod datatable;
pub mod gviz_api;
mod json_string;
pub mod nlohmann;
pub mod perfetto;
pub mod protobuf_json;
pub mod python_json;
pub mod trace_events;
