//! PyTorch analyses with torch-tb-profiler 0.4.3's numbers, on runs imported from Kineto
//! JSON by `oxprof-kineto`: one module per tool, each a typed report implementing
//! [`oxprof_report::Report`].
//!
//! * [`parse`]: the run read once as torch-tb-profiler's `RunProfileData` reads it (operator
//!   trees, runtimes and the device activity they launched, steps, role ranges);
//! * [`overview`]: step-time breakdown per step and on average, GPU summary, device
//!   properties, recommendations;
//! * [`operators`]: operators by name, by name and input shapes, by call stack;
//! * [`kernels`]: kernels by name and by name and launching operator;
//! * [`memory`]: allocated/reserved curves per device, allocation events, memory by operator;
//! * [`modules`]: the `nn.Module` hierarchy with host and device time per module.
//!
//! Golden tests against torch-tb-profiler's own backend: `crates/oxprof-api/tests/golden_torch_tb.rs`
//! with the files `scripts/ref/torch-tb.sh` writes under `testdata/torch-tb/`.
//!
//! [`hta`] holds Holistic Trace Analysis' analyses of the same runs. Pure functions of the
//! model: no IO.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod hta;
mod id_index;
pub mod kernels;
pub mod memory;
pub mod modules;
pub mod operators;
pub mod overview;
pub mod parse;
mod ranges;
mod start_order;
#[cfg(test)]
mod tests;

use oxprof_report::{Table, XprofBody};
use oxprof_wire::datatable::{Cell, ColumnType, DataTable};

pub use parse::{Parsed, is_pytorch, parse, parse_releasing};

/// The body these tools serve (XProf has none): their tables as a JSON array of DataTables
/// (what oxprof's table pages read), each with its name and title as properties. Notes
/// travel beside the body, as every tool's do.
pub(crate) fn tables_body(tables: &[Table]) -> XprofBody {
    let mut out = Vec::with_capacity(tables.len());
    for t in tables {
        let mut dt = DataTable::new();
        for c in &t.columns {
            let ty = match c.kind {
                oxprof_report::ColumnKind::Integer | oxprof_report::ColumnKind::Number => ColumnType::Number,
                oxprof_report::ColumnKind::Text => ColumnType::String,
                oxprof_report::ColumnKind::Boolean => ColumnType::Boolean,
            };
            dt.column(&c.name, ty, &c.label);
        }
        for row in &t.rows {
            dt.row(row.iter().map(|v| Cell::from(v.clone())).collect());
        }
        dt.prop("name", t.name.clone());
        dt.prop("title", t.title.clone().unwrap_or_default());
        for (k, v) in &t.facts {
            dt.prop(k, v.clone());
        }
        out.push(dt.to_json());
    }
    XprofBody::json(serde_json::Value::Array(out).to_string())
}

/// µs as a table cell.
pub(crate) fn us(v: f64) -> oxprof_wire::datatable::CellValue {
    oxprof_wire::datatable::CellValue::Number(v)
}
