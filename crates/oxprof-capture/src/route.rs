//! XProf's `/capture_profile` for oxprof's server: the same query parameters and the
//! same JSON answers as XProf's `profile_plugin.capture_route_impl`, within a
//! [`CapturePolicy`] (allowed targets, limits; see [`crate::policy`]).
//!
//! Query parameters (all optional except `service_addr`):
//! `service_addr` (host:port, comma-separated list, `grpc://` accepted, at most
//! [`CapturePolicy::max_workers`], 64 by default), `duration` (ms,
//! default 1000, at most [`CapturePolicy::max_duration`], 10 min by default), `num_retry`
//! (default 0, at most [`CapturePolicy::max_retries`], 10), `host_tracer_level` (2),
//! `device_tracer_level` (1), `python_tracer_level` (0), `delay` (ms, 0, at most
//! [`CapturePolicy::max_delay`], 10 min), `session_id` (oxprof extension: the run name, a
//! new one; see [`crate::files::validate_session_id`]), `is_tpu_name` and `worker_list`
//! (Cloud TPU only: refused with a clear message).
//!
//! The server holds one [`CaptureService`]: it owns the policy, a [`CaptureLimiter`] and
//! one small tokio runtime on a thread of its own (started at the first capture) on which
//! every capture runs, so a request costs neither a thread nor a runtime of its own, and a
//! request beyond the limit is refused before anything is started.
//!
//! Checks, in order: the log directory is set (500), parameters (400), concurrency (429),
//! targets (names resolved, every address checked; 403), the run directory (409, 500),
//! then the capture.
//!
//! | status | when | body |
//! | --- | --- | --- |
//! | 200 | at least one worker captured (XProf also succeeds when some fail; oxprof lists them in `failed`) | `{"result": "Capture profile successfully. Please refresh.", "run", "captured", "failed"}` |
//! | 400 | a bad parameter: malformed or out of range number, bad address, bad session id, a name that does not resolve, TPU names | `{"error"}` |
//! | 403 | a target outside the allow-list ([`CaptureError::TargetNotAllowed`], names `--capture-allow`) | `{"error"}` |
//! | 409 | the run `session_id` exists already | `{"error"}` |
//! | 429 | [`CapturePolicy::max_concurrent`] captures are running | `{"error"}` |
//! | 500 | a local failure: no log directory, cannot write (disk full, …), a symbolic link in the way | `{"error"}` (+ `failed`) |
//! | 502 | every worker failed and at least one because of the peer (refused, no answer, not a profiler server, deadline, empty trace, …) | `{"error", "failed"}` |
//!
//! When every worker failed, the status is the highest of their errors' statuses
//! ([`CaptureError::http_status`]), so any peer failure makes it 502.

use crate::error::CaptureError;
use crate::options::{CaptureOptions, human_duration, parse_address_list};
use crate::policy::{CaptureLimiter, CapturePermit, CapturePolicy};
use crate::session::{CaptureReport, CaptureSession};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// XProf's answer to a successful capture.
pub const SUCCESS_MESSAGE: &str = "Capture profile successfully. Please refresh.";

/// XProf's answer when the server has no log directory.
pub const NO_LOGDIR_MESSAGE: &str = "logdir is not set, abort capturing.";

/// Status code and JSON body of a `/capture_profile` answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteResponse {
    /// HTTP status (see the module docs).
    pub status: u16,
    /// The JSON body.
    pub body: serde_json::Value,
}

impl RouteResponse {
    /// `{"error": message}` with `status`.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        RouteResponse { status, body: serde_json::json!({ "error": message.into() }) }
    }

    /// The answer to a failure: its status ([`CaptureError::http_status`]) and message.
    pub fn from_error(error: &CaptureError) -> Self {
        RouteResponse::error(error.http_status(), error.to_string())
    }

    /// The answer to a finished capture: 200 when a worker was captured, else the
    /// highest status of the workers' errors.
    pub fn from_report(report: &CaptureReport) -> Self {
        let details = report.to_json();
        if report.captured.is_empty() {
            let errors: Vec<String> = report.failed.iter().map(|f| f.error.to_string()).collect();
            let status = report.failed.iter().map(|f| f.error.http_status()).max().unwrap_or(500);
            let mut body = serde_json::json!({ "error": errors.join("; ") });
            if let (Some(map), Some(failed)) = (body.as_object_mut(), details.get("failed")) {
                map.insert("failed".into(), failed.clone());
            }
            return RouteResponse { status, body };
        }
        RouteResponse {
            status: 200,
            body: serde_json::json!({
                "result": SUCCESS_MESSAGE,
                "run": report.session_id,
                "captured": details.get("captured"),
                "failed": details.get("failed"),
            }),
        }
    }
}

/// The addresses and options a `/capture_profile` query asks for (XProf's defaults),
/// within `policy`'s limits; every error is a bad request (400).
pub fn options_from_query(
    query: &BTreeMap<String, String>,
    policy: &CapturePolicy,
) -> Result<(Vec<String>, CaptureOptions), CaptureError> {
    let number = |key: &str, default: u64| -> Result<u64, CaptureError> {
        match query.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(v) => v.parse::<u64>().map_err(|_| {
                let shown: String = v.chars().take(40).collect();
                CaptureError::BadOption(format!("invalid literal for int() with base 10: {shown:?} ({key})"))
            }),
        }
    };
    // Compared as integers before any `Duration` arithmetic: nothing can overflow.
    let millis = |key: &str, default: u64, limit: Duration| -> Result<Duration, CaptureError> {
        let value = number(key, default)?;
        let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        if value > limit_ms {
            return Err(CaptureError::BadOption(format!(
                "{key}={value} ms is more than this server's limit of {limit_ms} ms ({})",
                human_duration(limit)
            )));
        }
        Ok(Duration::from_millis(value))
    };
    if query.get("is_tpu_name").map(String::as_str) == Some("true") {
        return Err(CaptureError::BadOption(
            "TPU names are not supported by oxprof: give the workers' host:port addresses".into(),
        ));
    }
    if query.get("worker_list").is_some_and(|w| !w.trim().is_empty()) {
        return Err(CaptureError::BadOption(
            "worker_list (Cloud TPU sessions) is not supported by oxprof: list every worker's host:port in \
             service_addr instead"
                .into(),
        ));
    }
    let service_addr = query.get("service_addr").map(String::as_str).unwrap_or("");
    let addresses = parse_address_list(service_addr)?;
    if addresses.len() > policy.max_workers {
        return Err(CaptureError::BadOption(format!(
            "service_addr lists {} workers, more than this server's limit of {}",
            addresses.len(),
            policy.max_workers
        )));
    }
    let level = |key: &str, default: u64, max: u64| -> Result<u32, CaptureError> {
        let value = number(key, default)?;
        if value > max {
            return Err(CaptureError::BadOption(format!("{key} must be 0..={max}")));
        }
        Ok(value as u32)
    };
    let retries = number("num_retry", 0)?;
    if retries > u64::from(policy.max_retries) {
        return Err(CaptureError::BadOption(format!(
            "num_retry={retries} is more than this server's limit of {}",
            policy.max_retries
        )));
    }
    let options = CaptureOptions {
        duration: millis("duration", 1000, policy.duration_limit())?,
        delay: millis("delay", 0, policy.delay_limit())?,
        host_tracer_level: level("host_tracer_level", 2, 3)?,
        device_tracer_level: level("device_tracer_level", 1, 1)?,
        python_tracer_level: level("python_tracer_level", 0, 1)?,
        retries: retries as u32,
        session_id: query.get("session_id").filter(|s| !s.is_empty()).cloned(),
        ..CaptureOptions::default()
    };
    options.validate()?;
    Ok((addresses, options))
}

/// The `/capture_profile` route of a server: its log directory, policy, concurrency
/// limiter and capture runtime (see the module docs). Clones share all of them.
#[derive(Debug, Clone)]
pub struct CaptureService {
    inner: Arc<ServiceInner>,
}

#[derive(Debug)]
struct ServiceInner {
    logdir: Option<PathBuf>,
    policy: CapturePolicy,
    limiter: CaptureLimiter,
    runtime: Arc<CaptureRuntime>,
}

impl CaptureService {
    /// Captures into `logdir` (`<logdir>/plugins/profile/<session>/`) within `policy`.
    /// Starts nothing: the capture runtime starts with the first capture.
    pub fn new(logdir: PathBuf, policy: CapturePolicy) -> Self {
        let limiter = CaptureLimiter::new(policy.max_concurrent);
        CaptureService::from_parts(Some(logdir), policy, limiter, Arc::new(CaptureRuntime::default()))
    }

    fn from_parts(
        logdir: Option<PathBuf>,
        policy: CapturePolicy,
        limiter: CaptureLimiter,
        runtime: Arc<CaptureRuntime>,
    ) -> Self {
        CaptureService { inner: Arc::new(ServiceInner { logdir, policy, limiter, runtime }) }
    }

    /// The policy.
    pub fn policy(&self) -> &CapturePolicy {
        &self.inner.policy
    }

    /// The limiter (e.g. to show how many captures run).
    pub fn limiter(&self) -> &CaptureLimiter {
        &self.inner.limiter
    }

    /// Handles `/capture_profile?…` (the query's parameters) and answers like XProf (see
    /// the module docs). Blocks for as long as the capture runs (duration + collection);
    /// call it on a blocking thread (e.g. in `tokio::task::spawn_blocking`), never on an
    /// async runtime's worker. A request beyond the concurrency limit returns at once.
    pub fn handle_blocking(&self, params: &BTreeMap<String, String>) -> RouteResponse {
        let (job, runtime) = match self.prepare(params) {
            Ok(prepared) => prepared,
            Err(response) => return response,
        };
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = sender.send(job.run().await);
        });
        receiver.recv().unwrap_or_else(|_| {
            RouteResponse::from_error(&CaptureError::Internal("the capture stopped before it answered".into()))
        })
    }

    /// [`Self::handle_blocking`] for async callers: the capture runs on the service's
    /// runtime and this future waits for it (on any runtime).
    pub async fn handle(&self, params: &BTreeMap<String, String>) -> RouteResponse {
        let (job, runtime) = match self.prepare(params) {
            Ok(prepared) => prepared,
            Err(response) => return response,
        };
        match runtime.spawn(job.run()).await {
            Ok(response) => response,
            Err(e) => RouteResponse::from_error(&CaptureError::Internal(format!("the capture stopped: {e}"))),
        }
    }

    /// The checks that answer at once: log directory, parameters, concurrency (the
    /// permit is taken before anything is started); then the runtime to run on.
    fn prepare(
        &self,
        params: &BTreeMap<String, String>,
    ) -> Result<(CaptureJob, tokio::runtime::Handle), RouteResponse> {
        let inner = &self.inner;
        let Some(logdir) = inner.logdir.clone() else {
            return Err(RouteResponse::error(500, NO_LOGDIR_MESSAGE));
        };
        let (addresses, options) =
            options_from_query(params, &inner.policy).map_err(|e| RouteResponse::from_error(&e))?;
        let permit = inner.limiter.try_acquire().map_err(|e| RouteResponse::from_error(&e))?;
        let runtime = inner.runtime.handle().map_err(|e| RouteResponse::from_error(&e))?;
        let job = CaptureJob { logdir, addresses, options, policy: inner.policy.clone(), _permit: permit };
        Ok((job, runtime))
    }
}

/// One admitted capture: holds its permit until it ends (also when its caller gave up).
struct CaptureJob {
    logdir: PathBuf,
    addresses: Vec<String>,
    options: CaptureOptions,
    policy: CapturePolicy,
    _permit: CapturePermit,
}

impl CaptureJob {
    async fn run(self) -> RouteResponse {
        let targets = match self.policy.resolve_targets(&self.addresses, self.options.connect_timeout).await {
            Ok(targets) => targets,
            Err(e) => return RouteResponse::from_error(&e),
        };
        let session = match CaptureSession::with_targets(targets, &self.logdir, self.options) {
            Ok(session) => session,
            Err(e) => return RouteResponse::from_error(&e),
        };
        match session.run(None).await {
            Ok(report) => RouteResponse::from_report(&report),
            Err(e) => RouteResponse::from_error(&e),
        }
    }
}

/// The multi-thread runtime captures run on, on a thread of its own (so it is never
/// dropped inside another runtime); started on first use, stopped when dropped.
#[derive(Debug, Default)]
struct CaptureRuntime {
    running: Mutex<Option<RuntimeThread>>,
}

#[derive(Debug)]
struct RuntimeThread {
    handle: tokio::runtime::Handle,
    /// Dropping it ends the runtime's thread.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl CaptureRuntime {
    fn handle(&self) -> Result<tokio::runtime::Handle, CaptureError> {
        let mut running =
            self.running.lock().map_err(|_| CaptureError::Internal("the capture runtime's lock is poisoned".into()))?;
        if let Some(thread) = running.as_ref() {
            return Ok(thread.handle.clone());
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, started) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("oxprof-capture".into())
            .spawn(move || {
                let built = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("oxprof-capture-worker")
                    .enable_all()
                    .build();
                let runtime = match built {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = ready.send(Ok(runtime.handle().clone()));
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .map_err(|e| CaptureError::Internal(format!("no thread for the captures: {e}")))?;
        let handle = started
            .recv()
            .map_err(|_| CaptureError::Internal("the capture runtime did not start".into()))?
            .map_err(|e| CaptureError::Internal(format!("no runtime for the captures: {e}")))?;
        *running = Some(RuntimeThread { handle: handle.clone(), _stop: stop });
        Ok(handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::DEFAULT_MAX_CONCURRENT;

    fn query(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn parse(pairs: &[(&str, &str)]) -> Result<(Vec<String>, CaptureOptions), CaptureError> {
        options_from_query(&query(pairs), &CapturePolicy::default())
    }

    #[test]
    fn xprof_defaults() {
        let (addresses, o) = parse(&[("service_addr", "grpc://localhost:9999")]).unwrap();
        assert_eq!(addresses, vec!["localhost:9999"]);
        assert_eq!(o.duration, Duration::from_secs(1));
        assert_eq!((o.host_tracer_level, o.device_tracer_level, o.python_tracer_level, o.retries), (2, 1, 0, 0));
    }

    #[test]
    fn ui_query_parses() {
        let (addresses, o) = parse(&[
            ("service_addr", "a:1,b:2"),
            ("duration", "2500"),
            ("is_tpu_name", "false"),
            ("worker_list", ""),
            ("num_retry", "2"),
            ("host_tracer_level", "3"),
            ("device_tracer_level", "0"),
            ("python_tracer_level", "1"),
            ("delay", "100"),
        ])
        .unwrap();
        assert_eq!(addresses.len(), 2);
        assert_eq!(o.duration, Duration::from_millis(2500));
        assert_eq!(o.delay, Duration::from_millis(100));
        assert_eq!((o.host_tracer_level, o.device_tracer_level, o.python_tracer_level, o.retries), (3, 0, 1, 2));
    }

    #[test]
    fn bad_queries_are_bad_requests() {
        for pairs in [
            &[][..],
            &[("service_addr", "x:1"), ("duration", "abc")],
            &[("service_addr", "x:1"), ("duration", "0")],
            &[("service_addr", "x:1"), ("duration", "-5")],
            &[("service_addr", "x:1"), ("host_tracer_level", "4")],
            &[("service_addr", "x:1"), ("is_tpu_name", "true")],
            &[("service_addr", "x:1"), ("worker_list", "a,b")],
            &[("service_addr", "x:1"), ("session_id", "../x")],
            &[("service_addr", "x:1"), ("session_id", "a\0b")],
            &[("service_addr", "x")],
        ] {
            let error = parse(pairs).unwrap_err();
            assert_eq!(error.http_status(), 400, "{pairs:?}: {error}");
        }
    }

    /// Durations, delays and retries are bounded by the policy; 2^64-1 ms is a 400 that
    /// names the limit, not a panic.
    #[test]
    fn numbers_are_bounded() {
        let max = u64::MAX.to_string();
        for (key, value, limit) in [
            ("duration", max.as_str(), "limit of 600000 ms (10 min)"),
            ("duration", "600001", "limit of 600000 ms (10 min)"),
            ("delay", max.as_str(), "limit of 600000 ms (10 min)"),
            ("num_retry", max.as_str(), "limit of 10"),
            ("num_retry", "11", "limit of 10"),
            ("duration", "99999999999999999999999", "invalid literal"),
        ] {
            let error = parse(&[("service_addr", "x:1"), (key, value)]).unwrap_err();
            assert_eq!(error.http_status(), 400);
            let message = error.to_string();
            assert!(message.contains(key) && message.contains(limit), "{key}={value}: {message}");
        }
        let many: Vec<String> = (1..=65).map(|port| format!("127.0.0.1:{port}")).collect();
        let error = parse(&[("service_addr", &many.join(","))]).unwrap_err();
        assert!(error.to_string().contains("lists 65 workers, more than this server's limit of 64"), "{error}");
        let (_, o) = parse(&[("service_addr", "x:1"), ("duration", "600000"), ("delay", "600000")]).unwrap();
        assert_eq!(o.deadline(), Duration::from_secs(1230));
        // A policy can lower or raise its limits, never above the hard ones (1 h).
        let policy = CapturePolicy { max_duration: Duration::MAX, ..CapturePolicy::default() };
        let q = query(&[("service_addr", "x:1"), ("duration", "3600001")]);
        assert!(options_from_query(&q, &policy).unwrap_err().to_string().contains("limit of 3600000 ms (1 h)"));
    }

    #[test]
    fn blocking_form_works_inside_a_runtime() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let response = runtime.block_on(async {
            tokio::task::spawn_blocking(|| {
                let service = CaptureService::from_parts(
                    None,
                    CapturePolicy::loopback_only(),
                    CaptureLimiter::new(DEFAULT_MAX_CONCURRENT),
                    Arc::new(CaptureRuntime::default()),
                );
                service.handle_blocking(&query(&[("service_addr", "x:1")]))
            })
            .await
            .unwrap()
        });
        assert_eq!(response.status, 500);
        assert_eq!(response.body["error"], NO_LOGDIR_MESSAGE);
    }
}
