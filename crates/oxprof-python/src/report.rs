//! One tool's computed output as Python reads it: XProf's body, the typed report as JSON
//! text, oxprof's notes, Markdown, and the report's tables as pyarrow record batches
//! (`oxprof-arrow` builds them with the GIL released; pyarrow imports them through the
//! Arrow C data interface, without copying).

use crate::errors::{one_line, raise};
use arrow_pyarrow::ToPyArrow;
use oxprof_report::Report;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// A table handed to Python: its name, a `pyarrow.RecordBatch`, and what the conversion
/// widened.
type ArrowTable<'py> = (String, Bound<'py, PyAny>, Vec<String>);

/// What a tool computed.
pub(crate) enum Output {
    /// A report (typed, or XProf's body as it is).
    Report(Box<dyn Report>),
    /// A binary body (`graph_viewer` with `type=pb`).
    Binary(Vec<u8>),
}

/// One tool's output for one run and host selection.
#[pyclass(frozen, module = "oxprof._oxprof")]
pub struct NativeReport {
    /// The tool's own name (an alias given is resolved).
    #[pyo3(get)]
    tool: String,
    /// The run's name.
    #[pyo3(get)]
    run: String,
    /// The host asked for (`None`: every host).
    #[pyo3(get)]
    host: Option<String>,
    output: Output,
}

impl NativeReport {
    pub(crate) fn new(tool: String, run: String, host: Option<String>, output: Output) -> NativeReport {
        NativeReport { tool, run, host, output }
    }

    fn report(&self) -> Option<&dyn Report> {
        match &self.output {
            Output::Report(report) => Some(report.as_ref()),
            Output::Binary(_) => None,
        }
    }
}

#[pymethods]
impl NativeReport {
    /// `(content_type, body)`: XProf's body, `str` (or `bytes` for a binary body).
    fn xprof_body<'py>(&self, py: Python<'py>) -> (String, Bound<'py, PyAny>) {
        match &self.output {
            Output::Binary(bytes) => ("application/octet-stream".to_string(), PyBytes::new(py, bytes).into_any()),
            Output::Report(report) => {
                let body = py.detach(|| report.xprof_body());
                (body.content_type.to_string(), PyString::new(py, &body.text).into_any())
            }
        }
    }

    /// The typed report as JSON text (`None` for a binary body).
    fn report_json(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let Some(report) = self.report() else { return Ok(None) };
        let text = py.detach(|| serde_json::to_string(&report.to_json()));
        text.map(Some).map_err(|e| raise(py, "InternalError", format!("cannot write the report as JSON: {e}")))
    }

    /// oxprof's notes on this output, for people (not part of XProf's body).
    fn notes(&self) -> Vec<String> {
        self.report().map(|r| r.notes()).unwrap_or_default()
    }

    /// Every table as Markdown (`None` when the output has no tables).
    fn markdown(&self, py: Python<'_>) -> Option<String> {
        let report = self.report()?;
        py.detach(|| oxprof_api::markdown::report_markdown(report))
    }

    /// `[(name, pyarrow.RecordBatch, notes)]`, one per table in reading order; the notes
    /// say what the conversion widened (normally nothing). Needs pyarrow.
    fn arrow_tables<'py>(&self, py: Python<'py>) -> PyResult<Vec<ArrowTable<'py>>> {
        let Some(report) = self.report() else { return Ok(Vec::new()) };
        let converted = py.detach(|| {
            report
                .tables()
                .iter()
                .map(|table| oxprof_arrow::record_batch(table).map(|c| (table.name.clone(), c)))
                .collect::<Result<Vec<_>, _>>()
        });
        let converted = converted.map_err(|e| raise(py, "InternalError", one_line(&e)))?;
        converted.into_iter().map(|(name, c)| Ok((name, c.batch.to_pyarrow(py)?, c.notes))).collect()
    }
}
