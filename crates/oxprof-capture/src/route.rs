//! XProf's `GET /capture_profile` for oxprof's server: the same query parameters and the
//! same JSON answers as XProf's `profile_plugin.capture_route_impl`.
//!
//! Query parameters (all optional except `service_addr`):
//! `service_addr` (host:port, comma-separated list, `grpc://` accepted), `duration` (ms,
//! default 1000), `num_retry` (default 0), `host_tracer_level` (2), `device_tracer_level`
//! (1), `python_tracer_level` (0), `delay` (ms, 0), `session_id` (oxprof extension: run
//! name), `is_tpu_name` and `worker_list` (Cloud TPU only: refused with a clear message).
//!
//! Answers: 200 `{"result": "Capture profile successfully. Please refresh.", "run": …}`
//! when at least one worker was captured (XProf also succeeds when some workers fail;
//! oxprof lists them in `"failed"`), else 500 `{"error": "…"}`.

use crate::options::{CaptureOptions, parse_address_list};
use crate::session::CaptureSession;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Status code and JSON body of a `/capture_profile` answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteResponse {
    /// HTTP status (200 or 500, as XProf).
    pub status: u16,
    /// The JSON body.
    pub body: serde_json::Value,
}

impl RouteResponse {
    fn error(message: impl Into<String>) -> Self {
        RouteResponse { status: 500, body: serde_json::json!({ "error": message.into() }) }
    }
}

/// The options a `/capture_profile` query asks for (XProf's defaults), or the error
/// message to answer with.
pub fn options_from_query(query: &BTreeMap<String, String>) -> Result<(Vec<String>, CaptureOptions), String> {
    let number = |key: &str, default: u64| -> Result<u64, String> {
        match query.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(v) => v.parse::<u64>().map_err(|_| format!("invalid literal for int() with base 10: {v:?} ({key})")),
        }
    };
    if query.get("is_tpu_name").map(String::as_str) == Some("true") {
        return Err("TPU names are not supported by oxprof: give the workers' host:port addresses".into());
    }
    if query.get("worker_list").is_some_and(|w| !w.trim().is_empty()) {
        return Err("worker_list (Cloud TPU sessions) is not supported by oxprof: list every worker's \
                    host:port in service_addr instead"
            .into());
    }
    let service_addr = query.get("service_addr").map(String::as_str).unwrap_or("");
    let addresses = parse_address_list(service_addr).map_err(|e| e.to_string())?;
    let level = |key: &str, default: u64, max: u64| -> Result<u32, String> {
        let value = number(key, default)?;
        if value > max {
            return Err(format!("{key} must be 0..={max}"));
        }
        Ok(value as u32)
    };
    let options = CaptureOptions {
        duration: Duration::from_millis(number("duration", 1000)?),
        delay: Duration::from_millis(number("delay", 0)?),
        host_tracer_level: level("host_tracer_level", 2, 3)?,
        device_tracer_level: level("device_tracer_level", 1, 1)?,
        python_tracer_level: level("python_tracer_level", 0, 1)?,
        retries: number("num_retry", 0)?.min(100) as u32,
        session_id: query.get("session_id").filter(|s| !s.is_empty()).cloned(),
        ..CaptureOptions::default()
    };
    options.validate().map_err(|e| e.to_string())?;
    Ok((addresses, options))
}

/// Handles `GET /capture_profile?…`: captures into `logdir` (the server's log directory)
/// and answers like XProf. Runs as long as the capture (duration + collection).
pub async fn capture_profile(logdir: Option<&Path>, query: &BTreeMap<String, String>) -> RouteResponse {
    let Some(logdir) = logdir else {
        return RouteResponse::error("logdir is not set, abort capturing.");
    };
    let (addresses, options) = match options_from_query(query) {
        Ok(parsed) => parsed,
        Err(message) => return RouteResponse::error(message),
    };
    let session = match CaptureSession::new(addresses, logdir, options) {
        Ok(session) => session,
        Err(e) => return RouteResponse::error(e.to_string()),
    };
    let report = match session.run(None).await {
        Ok(report) => report,
        Err(e) => return RouteResponse::error(e.to_string()),
    };
    let details = report.to_json();
    if report.captured.is_empty() {
        let errors: Vec<String> = report.failed.iter().map(|f| f.error.to_string()).collect();
        let mut body = serde_json::json!({ "error": errors.join("; ") });
        if let (Some(map), Some(failed)) = (body.as_object_mut(), details.get("failed")) {
            map.insert("failed".into(), failed.clone());
        }
        return RouteResponse { status: 500, body };
    }
    RouteResponse {
        status: 200,
        body: serde_json::json!({
            "result": "Capture profile successfully. Please refresh.",
            "run": report.session_id,
            "captured": details.get("captured"),
            "failed": details.get("failed"),
        }),
    }
}

/// [`capture_profile`] for synchronous callers (e.g. a handler running in
/// `tokio::task::spawn_blocking`): runs the capture on a thread of its own with its own
/// runtime, so it is safe to call from any thread, inside a tokio runtime or not.
pub fn capture_profile_blocking(logdir: Option<&Path>, query: &BTreeMap<String, String>) -> RouteResponse {
    let logdir = logdir.map(Path::to_path_buf);
    let query = query.clone();
    let worker = std::thread::Builder::new().name("oxprof-capture".into()).spawn(move || {
        match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(runtime) => runtime.block_on(capture_profile(logdir.as_deref(), &query)),
            Err(e) => RouteResponse::error(format!("cannot start the capture: {e}")),
        }
    });
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(response)) => response,
        _ => RouteResponse::error("the capture failed unexpectedly"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn xprof_defaults() {
        let (addresses, o) = options_from_query(&query(&[("service_addr", "grpc://localhost:9999")])).unwrap();
        assert_eq!(addresses, vec!["localhost:9999"]);
        assert_eq!(o.duration, Duration::from_secs(1));
        assert_eq!((o.host_tracer_level, o.device_tracer_level, o.python_tracer_level, o.retries), (2, 1, 0, 0));
    }

    #[test]
    fn ui_query_parses() {
        let q = query(&[
            ("service_addr", "a:1,b:2"),
            ("duration", "2500"),
            ("is_tpu_name", "false"),
            ("worker_list", ""),
            ("num_retry", "2"),
            ("host_tracer_level", "3"),
            ("device_tracer_level", "0"),
            ("python_tracer_level", "1"),
            ("delay", "100"),
        ]);
        let (addresses, o) = options_from_query(&q).unwrap();
        assert_eq!(addresses.len(), 2);
        assert_eq!(o.duration, Duration::from_millis(2500));
        assert_eq!(o.delay, Duration::from_millis(100));
        assert_eq!((o.host_tracer_level, o.device_tracer_level, o.python_tracer_level, o.retries), (3, 0, 1, 2));
    }

    #[test]
    fn bad_queries_are_errors() {
        assert!(options_from_query(&query(&[])).is_err());
        assert!(options_from_query(&query(&[("service_addr", "x:1"), ("duration", "abc")])).is_err());
        assert!(options_from_query(&query(&[("service_addr", "x:1"), ("host_tracer_level", "4")])).is_err());
        assert!(options_from_query(&query(&[("service_addr", "x:1"), ("is_tpu_name", "true")])).is_err());
    }

    #[test]
    fn blocking_form_works_inside_a_runtime() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let response = runtime.block_on(async {
            tokio::task::spawn_blocking(|| capture_profile_blocking(None, &query(&[("service_addr", "x:1")])))
                .await
                .unwrap()
        });
        assert_eq!(response.status, 500);
    }

    #[tokio::test]
    async fn no_logdir_is_xprofs_error() {
        let r = capture_profile(None, &query(&[("service_addr", "x:1")])).await;
        assert_eq!(r.status, 500);
        assert_eq!(r.body["error"], "logdir is not set, abort capturing.");
    }
}
