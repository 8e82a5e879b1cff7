//! `diff(a, b, ...)`: `oxprof diff` for Python. Both sides are read and compared by
//! `oxprof_api::diff` (profiles or saved summaries, within the CLI's budgets, with the
//! CLI's persistent analysis cache unless turned off); gates are evaluated as the CLI does.
//! The result goes to Python as the typed `DiffReport`'s JSON text (what `oxprof diff
//! --format json` prints) with its Markdown; the package builds a DataFrame per section.

use crate::cache;
use crate::errors::{api_error, raise};
use oxprof_api::ApiError;
use oxprof_api::diff::{ReadOptions, SideRequest, diff_paths, markdown};
use oxprof_diff::gate::Gate;
use oxprof_diff::{DiffOptions, DiffReport};
use pyo3::prelude::*;
use std::path::PathBuf;

/// Compares B with A (the baseline): `(json, markdown, cache warning)` of the comparison
/// and its gates.
#[pyfunction]
#[pyo3(signature = (a, b, *, run_a = None, run_b = None, host_a = None, host_b = None, strip_templates = false, fail_if = Vec::new(), noise_check = true, top = 10, max_profile_bytes = None,
    persistent_cache = true, cache_dir = None, cache_dir_bytes = cache::DEFAULT_CACHE_DIR_BYTES))]
#[allow(clippy::too_many_arguments)]
pub fn diff(
    py: Python<'_>,
    a: PathBuf,
    b: PathBuf,
    run_a: Option<String>,
    run_b: Option<String>,
    host_a: Option<String>,
    host_b: Option<String>,
    strip_templates: bool,
    fail_if: Vec<String>,
    noise_check: bool,
    top: usize,
    max_profile_bytes: Option<u64>,
    persistent_cache: bool,
    cache_dir: Option<PathBuf>,
    cache_dir_bytes: u64,
) -> PyResult<(String, String, Option<String>)> {
    let gates = fail_if
        .iter()
        .map(|text| Gate::parse(text).map_err(|e| raise(py, "BadParameter", format!("fail_if {text:?}: {e}"))))
        .collect::<PyResult<Vec<Gate>>>()?;
    let mut read = ReadOptions::default();
    if let Some(bytes) = max_profile_bytes {
        read.profile = read.profile.with_max_profile_bytes(bytes);
    }
    let (disk_cache, cache_warning) = cache::open(persistent_cache, cache_dir, cache_dir_bytes);
    read.disk_cache = disk_cache;
    let options = DiffOptions { strip_templates, ..DiffOptions::default() };
    let computed = py.detach(|| -> Result<(String, String), ApiError> {
        let side_a = SideRequest { path: &a, run: run_a.as_deref(), host: host_a.as_deref() };
        let side_b = SideRequest { path: &b, run: run_b.as_deref(), host: host_b.as_deref() };
        let report = DiffReport::new(diff_paths(&side_a, &side_b, &options, &read)?, &gates, noise_check);
        // Plain data: serializing it cannot fail (non-finite numbers become null).
        let json = serde_json::to_string(&report).unwrap_or_default();
        Ok((json, markdown::render(&report, top.max(1))))
    });
    let (json, markdown) = computed.map_err(|e| api_error(py, e))?;
    Ok((json, markdown, cache_warning))
}
