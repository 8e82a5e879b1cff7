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
//! Each attempt has its own deadlines: `connect_timeout` for the connection and again for
//! the HTTP/2 handshake, then delay + duration + margin for the `Profile` call.
//!
//! The run directory is claimed when the session is made (see [`crate::files`]: never an
//! existing run, never through a symbolic link), files are published without replacing
//! anything, a worker whose save fails leaves no file, and a run left empty is removed
//! with the directories made for it.

use crate::client::ProfilerClient;
use crate::error::CaptureError;
use crate::files::{RunDir, write_new_file};
use crate::options::{CaptureOptions, build_profile_request, host_file_stem, repository_root, start_timestamp_ns};
use crate::policy::ResolvedTarget;
use crate::proto::ProfileResponse;
use std::net::SocketAddr;
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

/// A capture session, prepared: the session id is fixed and the run directory claimed
/// before it runs, so that a caller can `terminate` it from elsewhere. The run directory
/// is removed when the last clone of the session is dropped if nothing was saved in it.
#[derive(Debug, Clone)]
pub struct CaptureSession {
    addresses: Vec<String>,
    /// Per address: the socket addresses to connect to (checked by a policy), or `None`
    /// to resolve the name at each connection.
    pinned: Vec<Option<Vec<SocketAddr>>>,
    options: CaptureOptions,
    logdir: PathBuf,
    run_dir: Arc<RunDir>,
}

impl CaptureSession {
    /// Checks the options, creates `logdir` and claims the run directory
    /// `<logdir>/plugins/profile/<session>` (an existing run is
    /// [`CaptureError::SessionExists`] for a session id of the user's; the default id, the
    /// time, gets a suffix). `addresses` must already be normalized (see
    /// [`crate::parse_address_list`]).
    pub fn new(addresses: Vec<String>, logdir: &Path, options: CaptureOptions) -> Result<Self, CaptureError> {
        let pinned = vec![None; addresses.len()];
        Self::build(addresses, pinned, logdir, options)
    }

    /// [`CaptureSession::new`] for targets checked by a [`crate::CapturePolicy`]: each
    /// worker connects only to the socket addresses its name resolved to when checked.
    pub fn with_targets(
        targets: Vec<ResolvedTarget>,
        logdir: &Path,
        options: CaptureOptions,
    ) -> Result<Self, CaptureError> {
        let (addresses, pinned) = targets.into_iter().map(|t| (t.address, Some(t.socket_addrs))).unzip();
        Self::build(addresses, pinned, logdir, options)
    }

    fn build(
        addresses: Vec<String>,
        pinned: Vec<Option<Vec<SocketAddr>>>,
        logdir: &Path,
        options: CaptureOptions,
    ) -> Result<Self, CaptureError> {
        options.validate()?;
        if addresses.is_empty() {
            return Err(CaptureError::BadOption("no worker address given".into()));
        }
        // Creates the log directory if needed (removed again, with the rest, if the capture
        // saves nothing).
        let run_dir = RunDir::claim(logdir, options.session_id.as_deref(), SystemTime::now())?;
        let logdir = run_dir.logdir().to_path_buf();
        Ok(CaptureSession { addresses, pinned, options, logdir, run_dir: Arc::new(run_dir) })
    }

    /// The session (run) name.
    pub fn session_id(&self) -> &str {
        self.run_dir.session_id()
    }

    /// The absolute log directory.
    pub fn logdir(&self) -> &Path {
        &self.logdir
    }

    /// The run directory the profiles go to.
    pub fn run_dir(&self) -> PathBuf {
        self.run_dir.path().to_path_buf()
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
    /// worker in the report.
    pub async fn run(&self, progress: Option<ProgressFn>) -> Result<CaptureReport, CaptureError> {
        let started = Instant::now();
        let run_dir = self.run_dir();
        // Every worker's first attempt starts tracing at the same wall-clock instant.
        let shared_start_ns = start_timestamp_ns(SystemTime::now(), self.options.delay);
        let mut tasks = tokio::task::JoinSet::new();
        for (index, (address, pinned)) in self.addresses.iter().zip(&self.pinned).enumerate() {
            let worker = WorkerJob {
                index,
                address: address.clone(),
                pinned: pinned.clone(),
                options: self.options.clone(),
                session_id: self.session_id().to_string(),
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
            session_id: self.session_id().to_string(),
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
            // Leave no empty run behind (a no-op when something is in it).
            self.run_dir.remove_if_empty();
        }
        Ok(report)
    }

    /// Sends `Terminate(session_id)` to every worker, so that their `Profile` calls
    /// return early with what they collected. Returns the workers that did not accept.
    pub async fn terminate_all(&self) -> Vec<(String, CaptureError)> {
        let mut tasks = tokio::task::JoinSet::new();
        for (address, pinned) in self.addresses.iter().zip(&self.pinned) {
            let address = address.clone();
            let pinned = pinned.clone();
            let session_id = self.session_id().to_string();
            let options = self.options.clone();
            tasks.spawn(async move {
                let result = async {
                    let mut client = connect(&address, pinned.as_deref(), &options).await?;
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

/// Connects to `address`: at the pinned socket addresses if any, else resolving it.
async fn connect(
    address: &str,
    pinned: Option<&[SocketAddr]>,
    options: &CaptureOptions,
) -> Result<ProfilerClient, CaptureError> {
    match pinned {
        Some(targets) => {
            ProfilerClient::connect_to(address, targets, options.connect_timeout, options.max_response_bytes).await
        }
        None => ProfilerClient::connect(address, options.connect_timeout, options.max_response_bytes).await,
    }
}

/// Everything one worker's state machine needs (owned, to run as its own task).
struct WorkerJob {
    index: usize,
    address: String,
    pinned: Option<Vec<SocketAddr>>,
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
        let mut client = connect(&self.address, self.pinned.as_deref(), options).await?;
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
    /// client and server share the filesystem. On failure the files of this attempt are
    /// removed again.
    async fn save(&self, response: ProfileResponse, asked_at: SystemTime) -> Result<WorkerCapture, CaptureError> {
        let mut written = Vec::new();
        let result = self.save_files(response, asked_at, &mut written).await;
        if result.is_err() {
            for path in written {
                let _ = tokio::fs::remove_file(path).await;
            }
        }
        result
    }

    async fn save_files(
        &self,
        response: ProfileResponse,
        asked_at: SystemTime,
        written: &mut Vec<PathBuf>,
    ) -> Result<WorkerCapture, CaptureError> {
        let stem = host_file_stem(&self.address);
        let target_name = format!("{stem}.xplane.pb");
        let ProfileResponse { tool_data, empty_trace, xspace } = response;
        let mut xspace = (!xspace.is_empty()).then_some(xspace);
        for tool in tool_data {
            if tool.name == "xplane.pb" {
                if xspace.is_none() && !tool.data.is_empty() {
                    xspace = Some(tool.data);
                }
                continue;
            }
            let safe_name: String = tool.name.chars().map(|c| if matches!(c, '/' | '\\') { '_' } else { c }).collect();
            if safe_name.is_empty() || safe_name.starts_with('.') || safe_name.contains('\0') {
                continue;
            }
            let path = save_file(&self.run_dir, format!("{stem}.{safe_name}"), tool.data).await?;
            written.push(path);
        }
        let tool_files = written.clone();
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
            let size = bytes.len() as u64;
            let path = save_file(&self.run_dir, target_name, bytes).await?;
            return Ok(capture(path, size, XSpaceSource::Response));
        }
        if empty_trace {
            return Err(CaptureError::EmptyTrace { address: self.address.clone() });
        }
        // The server saved it itself at <repository_root>/<session>/<stem>.xplane.pb. A file
        // from before the request is an old capture. File times come from the kernel's
        // coarse clock, which lags the clock `asked_at` was read from by up to a tick, so a
        // file written just after the request can look a few ms older than it.
        let target = self.run_dir.join(target_name);
        let written_after = |m: SystemTime| m.checked_add(MTIME_SLACK).is_none_or(|m| m >= asked_at);
        match tokio::fs::symlink_metadata(&target).await {
            Ok(meta) if meta.is_file() && meta.len() > 0 && meta.modified().map(written_after).unwrap_or(true) => {
                Ok(capture(target, meta.len(), XSpaceSource::SharedFilesystem))
            }
            _ => Err(CaptureError::ServerWroteRemotely { address: self.address.clone(), remote_path: target }),
        }
    }
}

/// How much older than the request a server-written file may look (coarse file clock).
const MTIME_SLACK: Duration = Duration::from_millis(100);

/// Writes `data` as `dir/name` on a blocking thread (see [`write_new_file`]: a temporary
/// file of its own, published without replacing anything, removed on failure).
async fn save_file(dir: &Path, name: String, data: Vec<u8>) -> Result<PathBuf, CaptureError> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || write_new_file(&dir, &name, &data))
        .await
        .map_err(|e| CaptureError::Internal(format!("the file writer stopped: {e}")))?
}
