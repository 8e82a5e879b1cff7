//! `open(path)`: a session over a log directory, run directory or profile file, kept as
//! long as the Python object lives, so that a second tool of the same run reuses what the
//! first decoded and analysed (within `cache_bytes`); its runs, their hosts, and `tool`.
//! Per-host analyses also go to the persistent cache the CLI uses ([`crate::cache`]), so
//! that a later process answers from disk.

use crate::cache;
use crate::errors::{api_error, raise};
use crate::report::{NativeReport, Output};
use oxprof_api::answer;
use oxprof_api::data::DataRequest;
use oxprof_api::session::{Session, SessionOptions};
use oxprof_api::{ApiError, DiskCache, LoadLimits, registry};
use oxprof_format::DiscoveryError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// A session over one path.
#[pyclass(frozen, module = "oxprof._oxprof")]
pub struct NativeProfile {
    session: Arc<Session>,
    path: PathBuf,
    disk_cache: Option<Arc<DiskCache>>,
    /// Why the persistent cache asked for could not be opened.
    #[pyo3(get)]
    cache_warning: Option<String>,
}

/// Opens `path` (discovering its runs now: a path without profiles fails here).
#[pyfunction]
#[pyo3(signature = (path, *, max_profile_bytes = None, cache_bytes = oxprof_api::session::DEFAULT_CACHE_BYTES,
    persistent_cache = true, cache_dir = None, cache_dir_bytes = cache::DEFAULT_CACHE_DIR_BYTES))]
pub fn open(
    py: Python<'_>,
    path: PathBuf,
    max_profile_bytes: Option<u64>,
    cache_bytes: usize,
    persistent_cache: bool,
    cache_dir: Option<PathBuf>,
    cache_dir_bytes: u64,
) -> PyResult<NativeProfile> {
    // As the CLI does: large freed blocks go back to the OS (peak memory is the model).
    oxprof_format::return_freed_large_blocks_to_the_os();
    let mut limits = LoadLimits::default();
    if let Some(bytes) = max_profile_bytes {
        limits = limits.with_max_profile_bytes(bytes);
    }
    // The caller owns the files (as with the CLI): runs are not confined to the path.
    let (disk_cache, cache_warning) = cache::open(persistent_cache, cache_dir, cache_dir_bytes);
    let options = SessionOptions {
        cache_bytes,
        confine_to_root: false,
        limits,
        disk_cache: disk_cache.clone(),
        ..Default::default()
    };
    let opened = py.detach(|| -> Result<Session, ApiError> {
        let session = Session::open_path(&path, options)
            .map_err(|cause| ApiError::Discovery(DiscoveryError::Io { path: path.clone(), cause }))?;
        if session.catalog().current().runs.is_empty() {
            // Discovery's own words, naming the path as given.
            session.store().discover(None)?;
            return Err(ApiError::NotFound(format!("{}: no profiles found", path.display())));
        }
        Ok(session)
    });
    let session = opened.map_err(|e| api_error(py, e))?;
    Ok(NativeProfile { session: Arc::new(session), path, disk_cache, cache_warning })
}

#[pymethods]
impl NativeProfile {
    /// The path as given.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The persistent cache's directory and counters (`None`: not used).
    fn cache_info<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.disk_cache.as_deref().map(|c| cache::info(py, c)).transpose()
    }

    /// Every run with its hosts, newest run first: a local directory scanned afresh (new
    /// captures appear at once), a bucket listed at most every 2 s (as `/runs`).
    fn runs(&self, py: Python<'_>) -> Vec<(String, Vec<String>)> {
        let snapshot = py.detach(|| self.session.catalog().refreshed());
        snapshot.runs.iter().map(|r| (r.name.clone(), r.hosts.iter().map(|h| h.host.clone()).collect())).collect()
    }

    /// One tool's report for `run` (`None`: the newest) and `host` (`None`: every host,
    /// as XProf's `ALL_HOSTS`), with the tool's parameters. Computed with the GIL released.
    #[pyo3(signature = (name, run = None, host = None, params = None))]
    fn tool(
        &self,
        py: Python<'_>,
        name: &str,
        run: Option<String>,
        host: Option<String>,
        params: Option<BTreeMap<String, String>>,
    ) -> PyResult<NativeReport> {
        let tool = registry::resolve(name).map_err(|e| raise(py, "UnknownTool", e.to_string()))?;
        let request = DataRequest { run, tool: tool.id, host, params: params.unwrap_or_default() };
        let session = &self.session;
        let computed = py.detach(|| -> Result<(String, Output), ApiError> {
            let served = session.run(request.run.as_deref())?;
            let answer = answer::answer(session, &served, &request, false)?;
            if answer.is_binary() {
                return Ok((served.name, Output::Binary(answer.into_body().0.into_bytes())));
            }
            let report = answer.into_report()?;
            Ok((served.name, Output::Report(report)))
        });
        let (run, output) = computed.map_err(|e| api_error(py, e))?;
        Ok(NativeReport::new(request.tool.name().to_string(), run, request.host, output))
    }
}
