//! One capture session over several workers: every worker runs its own connection
//! state machine concurrently, and each successful worker's XSpace lands in
//! `<logdir>/plugins/profile/<session>/<host_port>.xplane.pb`.
//!
//! Per worker:
//!
//! ```text
//!  Connecting ──ok──▶ Profiling ──response──▶ Saving ──▶ Captured
//!      │                  │
//!      └──── error ───────┤ retryable and attempts left?
//!                         ├── yes ─▶ BackingOff (wait ½ s, 1 s, 2 s … ≤ cap) ─▶ Connecting
//!                         └── no ──▶ Failed
//! ```
//!
//! Each attempt has its own deadlines: `connect_timeout` for the connection, then
//! delay + duration + margin for the `Profile` call.

use crate::client::ProfilerClient;
use crate::error::CaptureError;
use crate::options::{
    CaptureOptions, build_profile_request, default_session_id, host_file_stem, repository_root, start_timestamp_ns,
};
use crate::proto::ProfileResponse;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Where a worker's state machine is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerState {
    /// Opening the connection (attempt number, 1-based).
    Connecting {
        /// Attempt number.
        attempt: u32,
    },
    /// Waiting for the server to trace and send the data.
    Profiling {
        /// Attempt number.
        attempt: u32,
    },
    /// Waiting before the next attempt.
    BackingOff {
        /// The attempt that failed.
        attempt: u32,
        /// The wait.
        wait: Duration,
        /// Why it failed (one line).
        error: String,
    },
    /// Writing the profile.
    Saving,
    /// Done: the profile is on disk.
    Captured {
        /// Its size in bytes.
        bytes: u64,
    },
    /// Done: no profile from this worker.
    Failed {
        /// Why (one line).
        error: String,
    },
}

/// A state change of one worker, reported while the capture runs.
#[derive(Debug, Clone)]
pub struct ProgressEvent {
    /// Index of the worker in the address list.
    pub worker: usize,
    /// Its address.
    pub address: String,
    /// Total attempts allowed (retries + 1).
    pub max_attempts: u32,
    /// The new state.
    pub state: WorkerState,
}

/// Receives progress events (from several tasks at once).
pub type ProgressFn = Arc<dyn Fn(&ProgressEvent) + Send + Sync>;

/// How the XSpace reached the run directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XSpaceSource {
    /// The server returned it in `ProfileResponse.xspace` (or as `xplane.pb` tool data).
    Response,
    /// The server wrote it itself under the request's repository root, which is the same
    /// path on this machine (client and server share the filesystem).
    SharedFilesystem,
}

/// A worker that was captured.
#[derive(Debug, Clone)]
pub struct WorkerCapture {
    /// Its address.
    pub address: String,
    /// The `.xplane.pb` file.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// How it got there.
    pub source: XSpaceSource,
    /// Further files the server returned as tool data (`<host>.<tool>`).
    pub tool_files: Vec<PathBuf>,
    /// Attempts used.
    pub attempts: u32,
    /// Time from the first attempt to the saved file.
    pub elapsed: Duration,
}

/// A worker that could not be captured.
#[derive(Debug)]
pub struct WorkerFailure {
    /// Its address.
    pub address: String,
    /// The last attempt's error.
    pub error: CaptureError,
    /// Attempts used.
    pub attempts: u32,
}

/// The outcome of a capture session.
#[derive(Debug)]
pub struct CaptureReport {
    /// The session (run) name.
    pub session_id: String,
    /// The log directory (absolute).
    pub logdir: PathBuf,
    /// `<logdir>/plugins/profile/<session_id>`.
    pub run_dir: PathBuf,
    /// Captured workers, in address order.
    pub captured: Vec<WorkerCapture>,
    /// Failed workers, in address order.
    pub failed: Vec<WorkerFailure>,
    /// Wall time of the whole session.
    pub elapsed: Duration,
}

impl CaptureReport {
    /// A JSON summary (for `--json` and the server route).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "session_id": self.session_id,
            "logdir": self.logdir,
            "run_dir": self.run_dir,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "captured": self.captured.iter().map(|c| serde_json::json!({
                "address": c.address,
                "path": c.path,
                "bytes": c.bytes,
                "source": match c.source { XSpaceSource::Response => "response", XSpaceSource::SharedFilesystem => "shared_filesystem" },
                "tool_files": c.tool_files,
                "attempts": c.attempts,
                "elapsed_s": c.elapsed.as_secs_f64(),
            })).collect::<Vec<_>>(),
            "failed": self.failed.iter().map(|f| serde_json::json!({
                "address": f.address,
                "kind": f.error.kind(),
                "error": f.error.to_string(),
                "attempts": f.attempts,
            })).collect::<Vec<_>>(),
        })
    }
}

/// A capture session, prepared: the session id and run directory are fixed before it
/// runs, so that a caller can `terminate` it from elsewhere.
#[derive(Debug, Clone)]
pub struct CaptureSession {
    addresses: Vec<String>,
    options: CaptureOptions,
    session_id: String,
    logdir: PathBuf,
}

impl CaptureSession {
    /// Checks the options, creates `logdir` and fixes the session id. `addresses` must
    /// already be normalized (see [`crate::parse_address_list`]).
    pub fn new(addresses: Vec<String>, logdir: &Path, options: CaptureOptions) -> Result<Self, CaptureError> {
        options.validate()?;
        if addresses.is_empty() {
            return Err(CaptureError::BadOption("no worker address given".into()));
        }
        std::fs::create_dir_all(logdir).map_err(|source| CaptureError::Io { path: logdir.to_path_buf(), source })?;
        let logdir =
            std::fs::canonicalize(logdir).map_err(|source| CaptureError::Io { path: logdir.to_path_buf(), source })?;
        let session_id = options.session_id.clone().unwrap_or_else(|| default_session_id(SystemTime::now()));
        Ok(CaptureSession { addresses, options, session_id, logdir })
    }

    /// The session (run) name.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The absolute log directory.
    pub fn logdir(&self) -> &Path {
        &self.logdir
    }

    /// The run directory the profiles go to.
    pub fn run_dir(&self) -> PathBuf {
        repository_root(&self.logdir).join(&self.session_id)
    }

    /// The worker addresses.
    pub fn addresses(&self) -> &[String] {
        &self.addresses
    }

    /// The options.
    pub fn options(&self) -> &CaptureOptions {
        &self.options
    }

    /// Captures every worker concurrently. Never fails as a whole: failures are per
    /// worker in the report (only the run directory's creation can fail).
    pub async fn run(&self, progress: Option<ProgressFn>) -> Result<CaptureReport, CaptureError> {
        let started = Instant::now();
        let run_dir = self.run_dir();
        std::fs::create_dir_all(&run_dir).map_err(|source| CaptureError::Io { path: run_dir.clone(), source })?;
        // Every worker's first attempt starts tracing at the same wall-clock instant.
        let shared_start_ns = start_timestamp_ns(SystemTime::now(), self.options.delay);
        let mut tasks = tokio::task::JoinSet::new();
        for (index, address) in self.addresses.iter().enumerate() {
            let worker = WorkerJob {
                index,
                address: address.clone(),
                options: self.options.clone(),
                session_id: self.session_id.clone(),
                repository_root: repository_root(&self.logdir),
                run_dir: run_dir.clone(),
                progress: progress.clone(),
            };
            tasks.spawn(async move { (index, worker.run(shared_start_ns).await) });
        }
        let mut results: Vec<Option<Result<WorkerCapture, WorkerFailure>>> =
            std::iter::repeat_with(|| None).take(self.addresses.len()).collect();
        while let Some(joined) = tasks.join_next().await {
            if let Ok((index, result)) = joined
                && let Some(slot) = results.get_mut(index)
            {
                *slot = Some(result);
            }
        }
        let mut report = CaptureReport {
            session_id: self.session_id.clone(),
            logdir: self.logdir.clone(),
            run_dir: run_dir.clone(),
            captured: Vec::new(),
            failed: Vec::new(),
            elapsed: started.elapsed(),
        };
        for (address, result) in self.addresses.iter().zip(results) {
            match result {
                Some(Ok(capture)) => report.captured.push(capture),
                Some(Err(failure)) => report.failed.push(failure),
                None => report.failed.push(WorkerFailure {
                    address: address.clone(),
                    error: CaptureError::Interrupted,
                    attempts: 0,
                }),
            }
        }
        if report.captured.is_empty() {
            // Leave no empty run behind (fails harmlessly when something is in it).
            let _ = std::fs::remove_dir(&run_dir);
        }
        Ok(report)
    }

    /// Sends `Terminate(session_id)` to every worker, so that their `Profile` calls
    /// return early with what they collected. Returns the workers that did not accept.
    pub async fn terminate_all(&self) -> Vec<(String, CaptureError)> {
        let mut tasks = tokio::task::JoinSet::new();
        for address in &self.addresses {
            let address = address.clone();
            let session_id = self.session_id.clone();
            let options = self.options.clone();
            tasks.spawn(async move {
                let result = async {
                    let mut client =
                        ProfilerClient::connect(&address, options.connect_timeout, options.max_response_bytes).await?;
                    client.terminate(&session_id).await
                }
                .await;
                (address, result)
            });
        }
        let mut refused = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            if let Ok((address, Err(e))) = joined {
                refused.push((address, e));
            }
        }
        refused
    }
}

/// Captures from addresses into `<logdir>/plugins/profile/<session>/`: the one-call form of
/// [`CaptureSession`].
pub async fn capture(
    addresses: Vec<String>,
    logdir: &Path,
    options: CaptureOptions,
    progress: Option<ProgressFn>,
) -> Result<CaptureReport, CaptureError> {
    CaptureSession::new(addresses, logdir, options)?.run(progress).await
}

/// Everything one worker's state machine needs (owned, to run as its own task).
struct WorkerJob {
    index: usize,
    address: String,
    options: CaptureOptions,
    session_id: String,
    repository_root: PathBuf,
    run_dir: PathBuf,
    progress: Option<ProgressFn>,
}

impl WorkerJob {
    fn report(&self, state: WorkerState) {
        if let Some(progress) = &self.progress {
            progress(&ProgressEvent {
                worker: self.index,
                address: self.address.clone(),
                max_attempts: self.options.retries.saturating_add(1),
                state,
            });
        }
    }

    /// The attempt loop (see the module docs).
    async fn run(self, shared_start_ns: u64) -> Result<WorkerCapture, WorkerFailure> {
        let started = Instant::now();
        let max_attempts = self.options.retries.saturating_add(1);
        let mut attempt = 1;
        loop {
            let start_ns =
                if attempt == 1 { shared_start_ns } else { start_timestamp_ns(SystemTime::now(), self.options.delay) };
            let result = self.attempt(attempt, start_ns).await;
            match result {
                Ok(mut capture) => {
                    capture.attempts = attempt;
                    capture.elapsed = started.elapsed();
                    self.report(WorkerState::Captured { bytes: capture.bytes });
                    return Ok(capture);
                }
                Err(error) if error.is_retryable() && attempt < max_attempts => {
                    let wait = self.options.backoff_before(attempt + 1);
                    self.report(WorkerState::BackingOff { attempt, wait, error: error.summary() });
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(error) => {
                    self.report(WorkerState::Failed { error: error.to_string() });
                    return Err(WorkerFailure { address: self.address.clone(), error, attempts: attempt });
                }
            }
        }
    }

    async fn attempt(&self, attempt: u32, start_ns: u64) -> Result<WorkerCapture, CaptureError> {
        self.report(WorkerState::Connecting { attempt });
        let options = &self.options;
        let mut client =
            ProfilerClient::connect(&self.address, options.connect_timeout, options.max_response_bytes).await?;
        self.report(WorkerState::Profiling { attempt });
        let request = build_profile_request(options, &self.repository_root, &self.session_id, &self.address, start_ns);
        let asked_at = SystemTime::now();
        let response = client.profile(request, options.deadline()).await?;
        self.report(WorkerState::Saving);
        self.save(response, asked_at).await
    }

    /// Stores the response: the XSpace (from `xspace`, or from `xplane.pb` tool data of
    /// old servers) and any other tool data as `<host>.<tool>`, as XProf's `SaveProfile`.
    /// When the response holds no XSpace but the trace is not empty, the server wrote it
    /// under the request's repository root itself: that is this very run directory when
    /// client and server share the filesystem.
    async fn save(&self, response: ProfileResponse, asked_at: SystemTime) -> Result<WorkerCapture, CaptureError> {
        let stem = host_file_stem(&self.address);
        let target = self.run_dir.join(format!("{stem}.xplane.pb"));
        let ProfileResponse { tool_data, empty_trace, xspace } = response;
        let mut xspace = (!xspace.is_empty()).then_some(xspace);
        let mut tool_files = Vec::new();
        for tool in tool_data {
            if tool.name == "xplane.pb" {
                if xspace.is_none() && !tool.data.is_empty() {
                    xspace = Some(tool.data);
                }
                continue;
            }
            let safe_name: String = tool.name.chars().map(|c| if matches!(c, '/' | '\\') { '_' } else { c }).collect();
            if safe_name.is_empty() || safe_name.starts_with('.') {
                continue;
            }
            let path = self.run_dir.join(format!("{stem}.{safe_name}"));
            write_atomically(&path, &tool.data).await?;
            tool_files.push(path);
        }
        let capture = |path: PathBuf, bytes: u64, source| WorkerCapture {
            address: self.address.clone(),
            path,
            bytes,
            source,
            tool_files: tool_files.clone(),
            attempts: 0,
            elapsed: Duration::ZERO,
        };
        if let Some(bytes) = xspace {
            if empty_trace {
                return Err(CaptureError::EmptyTrace { address: self.address.clone() });
            }
            write_atomically(&target, &bytes).await?;
            return Ok(capture(target, bytes.len() as u64, XSpaceSource::Response));
        }
        if empty_trace {
            return Err(CaptureError::EmptyTrace { address: self.address.clone() });
        }
        // The server saved it itself at <repository_root>/<session>/<stem>.xplane.pb. A file
        // from before the request is an old capture. File times come from the kernel's
        // coarse clock, which lags the clock `asked_at` was read from by up to a tick, so a
        // file written just after the request can look a few ms older than it.
        let written_after = |m: SystemTime| m + MTIME_SLACK >= asked_at;
        match tokio::fs::metadata(&target).await {
            Ok(meta) if meta.len() > 0 && meta.modified().map(written_after).unwrap_or(true) => {
                Ok(capture(target, meta.len(), XSpaceSource::SharedFilesystem))
            }
            _ => Err(CaptureError::ServerWroteRemotely { address: self.address.clone(), remote_path: target }),
        }
    }
}

/// How much older than the request a server-written file may look (coarse file clock).
const MTIME_SLACK: Duration = Duration::from_millis(100);

/// Writes `<path>.part` and renames it, so that readers never see half a profile.
async fn write_atomically(path: &Path, data: &[u8]) -> Result<(), CaptureError> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".part");
    let partial = PathBuf::from(partial);
    let io = |source| CaptureError::Io { path: path.to_path_buf(), source };
    tokio::fs::write(&partial, data).await.map_err(io)?;
    tokio::fs::rename(&partial, path).await.map_err(io)
}
