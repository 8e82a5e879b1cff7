//! `oxprof._oxprof`, the native half of the `oxprof` Python package: Python's calls in,
//! `oxprof-api`'s answers out. It holds no analysis of its own; the pure-Python package
//! (`python/oxprof/`) gives it its public shape (properties, DataFrames, notebook display).
//!
//! * [`profile`]: `open(path)` → a session over the path; its runs, hosts and tools.
//! * [`report`]: one tool's report: XProf's body, the typed report as JSON, its tables as
//!   pyarrow record batches (built by `oxprof-arrow`).
//! * [`diff`]: `diff(a, b)`, `oxprof diff` as JSON and Markdown.
//! * [`server`]: the web UI served from a background runtime, for notebooks.
//! * [`cache`]: the persistent analysis cache, opened as the CLI opens it.
//! * [`errors`]: `ApiError` → the `oxprof.errors` classes, with the CLI's one-line messages.
//!
//! Decoding, analysis and table building run with the GIL released.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod cache;
mod diff;
mod errors;
mod profile;
mod report;
mod server;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The tools oxprof computes: one dict per tool (name, aliases, title, summary, family).
#[pyfunction]
fn tools(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    for tool in oxprof_api::registry::tools().iter().filter(|t| t.available()) {
        let dict = PyDict::new(py);
        dict.set_item("name", tool.name())?;
        dict.set_item("aliases", tool.aliases.to_vec())?;
        dict.set_item("title", tool.title)?;
        dict.set_item("summary", tool.summary)?;
        let family = serde_json::to_value(tool.family).ok().and_then(|v| v.as_str().map(str::to_string));
        dict.set_item("family", family)?;
        out.push(dict);
    }
    Ok(out)
}

/// The module.
#[pymodule]
fn _oxprof(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(profile::open, m)?)?;
    m.add_function(wrap_pyfunction!(server::serve, m)?)?;
    m.add_function(wrap_pyfunction!(diff::diff, m)?)?;
    m.add_function(wrap_pyfunction!(tools, m)?)?;
    m.add_class::<profile::NativeProfile>()?;
    m.add_class::<report::NativeReport>()?;
    m.add_class::<server::NativeServer>()?;
    Ok(())
}
