//! `serve(path)`: oxprof's web UI and HTTP API for a notebook, in this process, on a tokio
//! runtime of its own (its threads never touch Python), bound to 127.0.0.1, until
//! `stop()` or until the object is dropped, with the CLI's persistent analysis cache. Its
//! pages may be shown in an iframe by pages served from loopback (a local Jupyter), and by
//! no other.

use crate::cache;
use crate::errors::{one_line, raise};
use oxprof_api::LoadLimits;
use oxprof_api::http::LOOPBACK_FRAME_ANCESTORS;
use oxprof_server::{RunningServer, ServeOptions};
use pyo3::prelude::*;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;
use tokio::runtime::Runtime;

/// A server running in this process.
#[pyclass(frozen, module = "oxprof._oxprof")]
pub struct NativeServer {
    /// `http://127.0.0.1:PORT/`.
    #[pyo3(get)]
    url: String,
    /// The port it listens on.
    #[pyo3(get)]
    port: u16,
    /// Why the persistent cache asked for could not be opened.
    #[pyo3(get)]
    cache_warning: Option<String>,
    running: Mutex<Option<(Runtime, RunningServer)>>,
}

/// Starts serving `path` (`None`: the bundled demo) on 127.0.0.1:`port` (0: any free
/// port); returns once it listens.
#[pyfunction]
#[pyo3(signature = (path = None, *, port = 0, cache_bytes = oxprof_api::session::DEFAULT_CACHE_BYTES,
    max_profile_bytes = None, embeddable = true, log_requests = false,
    persistent_cache = true, cache_dir = None, cache_dir_bytes = cache::DEFAULT_CACHE_DIR_BYTES))]
#[allow(clippy::too_many_arguments)]
pub fn serve(
    py: Python<'_>,
    path: Option<PathBuf>,
    port: u16,
    cache_bytes: usize,
    max_profile_bytes: Option<u64>,
    embeddable: bool,
    log_requests: bool,
    persistent_cache: bool,
    cache_dir: Option<PathBuf>,
    cache_dir_bytes: u64,
) -> PyResult<NativeServer> {
    let mut limits = LoadLimits::default();
    if let Some(bytes) = max_profile_bytes {
        limits = limits.with_max_profile_bytes(bytes);
    }
    let frame_ancestors =
        if embeddable { LOOPBACK_FRAME_ANCESTORS.iter().map(|s| s.to_string()).collect() } else { Vec::new() };
    let (disk_cache, cache_warning) = cache::open(persistent_cache, cache_dir, cache_dir_bytes);
    let options = ServeOptions {
        path,
        disk_cache,
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port,
        cache_bytes,
        log_requests,
        limits,
        frame_ancestors,
        ..ServeOptions::default()
    };
    let started = py.detach(|| -> std::io::Result<(Runtime, RunningServer)> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("oxprof-serve")
            .enable_all()
            .build()?;
        let server = runtime.block_on(oxprof_server::start(options))?;
        Ok((runtime, server))
    });
    let (runtime, server) = started.map_err(|e| {
        let class = if e.kind() == std::io::ErrorKind::NotFound { "ProfileNotFound" } else { "Error" };
        raise(py, class, format!("cannot serve: {}", one_line(&e)))
    })?;
    Ok(NativeServer {
        url: server.url(),
        port: server.addr.port(),
        cache_warning,
        running: Mutex::new(Some((runtime, server))),
    })
}

/// Stops `running`: requests in flight get the server's grace period, then its runtime's
/// threads are left to finish on their own.
fn stop(running: (Runtime, RunningServer)) {
    let (runtime, server) = running;
    // A server that failed while running has nothing left to stop.
    let _ = runtime.block_on(server.shutdown());
    runtime.shutdown_timeout(Duration::from_millis(100));
}

#[pymethods]
impl NativeServer {
    /// Whether it still serves.
    #[getter]
    fn running(&self) -> bool {
        self.running.lock().map(|r| r.is_some()).unwrap_or(false)
    }

    /// Stops serving (a second call does nothing).
    fn stop(&self, py: Python<'_>) {
        let running = self.running.lock().map(|mut r| r.take()).unwrap_or(None);
        if let Some(running) = running {
            py.detach(|| stop(running));
        }
    }
}

impl Drop for NativeServer {
    fn drop(&mut self) {
        if let Some(running) = self.running.get_mut().ok().and_then(Option::take) {
            stop(running);
        }
    }
}
