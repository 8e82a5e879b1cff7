//! `oxprof capture`: its arguments, a progress display on stderr, the summary on stdout
//! (or the writer the caller gives), and the exit code (0 all workers captured, 1 some, 2
//! none or bad arguments).
//!
//! The user runs it: any target may be captured from (no [`crate::CapturePolicy`]), for
//! up to [`crate::options::MAX_DURATION`] (1 h) after up to [`crate::options::MAX_DELAY`]
//! (1 h). The session id is checked as for the server (a new run, a plain name).

use crate::error::CaptureError;
use crate::options::{CaptureOptions, MAX_GRPC_MESSAGE_BYTES, parse_address_list, parse_duration};
use crate::session::{CaptureReport, CaptureSession, ProgressEvent, ProgressFn, WorkerState, XSpaceSource};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Exit code: every worker captured.
pub const EXIT_OK: u8 = 0;
/// Exit code: some workers captured, some failed.
pub const EXIT_PARTIAL: u8 = 1;
/// Exit code: nothing captured, or bad arguments.
pub const EXIT_FAILED: u8 = 2;

/// Capture a profile from running TensorFlow/JAX programs (their profiler servers).
#[derive(Debug, Clone, clap::Args)]
pub struct CaptureArgs {
    /// Profiler server addresses, host:port (comma-separated and/or repeated; grpc:// is accepted),
    /// as started by jax.profiler.start_server(PORT) or tf.profiler.experimental.server.start(PORT).
    #[arg(value_name = "ADDR[,ADDR...]", required = true)]
    pub addresses: Vec<String>,
    /// Log directory; profiles go to <logdir>/plugins/profile/<session>/<host_port>.xplane.pb.
    #[arg(long, default_value = ".")]
    pub logdir: PathBuf,
    /// How long to trace (e.g. 2s, 500ms, 1m; at most 1 hour).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Host tracer level: 0 off, 1 user annotations, 2 default, 3 verbose.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=3))]
    pub host_tracer_level: u32,
    /// Device tracer level: 0 off, 1 on.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1))]
    pub device_tracer_level: u32,
    /// Python tracer level: 0 off, 1 on.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=1))]
    pub python_tracer_level: u32,
    /// Start tracing this long after the request (the same instant on every worker; at most 1 hour).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub delay: Duration,
    /// Further attempts per worker when it is unavailable or returns an empty trace.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// Run name, a new one: letters, digits, '_', '-', '.' (default: the current UTC time,
    /// YYYY_MM_DD_HH_MM_SS).
    #[arg(long)]
    pub session_id: Option<String>,
    /// Time allowed to open each connection.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// Time allowed beyond delay + duration for a server to collect and send its profile.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub deadline_margin: Duration,
    /// Largest profile accepted from one worker, in MiB (at most 2047, gRPC's limit).
    #[arg(long, default_value_t = 2047, value_parser = clap::value_parser!(u64).range(1..=2047))]
    pub max_response_mb: u64,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

impl CaptureArgs {
    /// The capture options these arguments ask for.
    pub fn options(&self) -> CaptureOptions {
        CaptureOptions {
            duration: self.duration,
            delay: self.delay,
            host_tracer_level: self.host_tracer_level,
            device_tracer_level: self.device_tracer_level,
            python_tracer_level: self.python_tracer_level,
            retries: self.retries,
            session_id: self.session_id.clone(),
            connect_timeout: self.connect_timeout,
            deadline_margin: self.deadline_margin,
            max_response_bytes: usize::try_from(self.max_response_mb << 20)
                .unwrap_or(MAX_GRPC_MESSAGE_BYTES)
                .min(MAX_GRPC_MESSAGE_BYTES),
            ..CaptureOptions::default()
        }
    }
}

/// Runs `oxprof capture` and returns the process exit code.
pub fn run(args: &CaptureArgs) -> u8 {
    run_with(args, &mut std::io::stdout())
}

/// [`run`], with the summary written to `out` (the `oxprof` binary's standard output,
/// which ends the process quietly when closed, or a buffer printed later).
pub fn run_with(args: &CaptureArgs, out: &mut dyn Write) -> u8 {
    match run_inner(args, out) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "oxprof: {e}");
            EXIT_FAILED
        }
    }
}

fn run_inner(args: &CaptureArgs, out: &mut dyn Write) -> Result<u8, CaptureError> {
    let addresses = parse_address_list(&args.addresses.join(","))?;
    let session = CaptureSession::new(addresses, &args.logdir, args.options())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CaptureError::Internal(format!("no runtime for the capture: {e}")))?;
    let display = Arc::new(ProgressDisplay::new(&session));
    let sink = Arc::clone(&display);
    let progress: ProgressFn = Arc::new(move |event: &ProgressEvent| sink.on_event(event));
    let ticker = display.start_ticker();
    let report = runtime.block_on(async {
        let run = session.run(Some(progress));
        tokio::pin!(run);
        let mut interrupted = false;
        loop {
            tokio::select! {
                report = &mut run => break report,
                _ = tokio::signal::ctrl_c(), if !interrupted => {
                    interrupted = true;
                    display.line("interrupted: asking the workers to stop early and send what they have (Ctrl-C again to abort)");
                    for (address, error) in session.terminate_all().await {
                        display.line(&format!("{address}: terminate failed: {error}"));
                    }
                    tokio::spawn(async {
                        if tokio::signal::ctrl_c().await.is_ok() {
                            std::process::exit(130);
                        }
                    });
                }
            }
        }
    });
    display.stop();
    if let Some(handle) = ticker {
        let _ = handle.join();
    }
    let report = report?;
    if let Err(e) = print_report(&report, args.json, out) {
        // The capture is saved; only its summary is lost.
        let _ = writeln!(std::io::stderr(), "oxprof: cannot write the capture's summary: {e}");
        return Ok(EXIT_FAILED);
    }
    Ok(if report.failed.is_empty() {
        EXIT_OK
    } else if report.captured.is_empty() {
        EXIT_FAILED
    } else {
        EXIT_PARTIAL
    })
}

fn print_report(report: &CaptureReport, json: bool, out: &mut dyn Write) -> std::io::Result<()> {
    for failure in &report.failed {
        let attempts =
            if failure.attempts > 1 { format!(" after {} attempts", failure.attempts) } else { String::new() };
        let _ =
            writeln!(std::io::stderr(), "oxprof: capture from {} failed{attempts}: {}", failure.address, failure.error);
    }
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report.to_json()).unwrap_or_default())?;
        return out.flush();
    }
    if report.captured.is_empty() {
        return Ok(());
    }
    let total = report.captured.len() + report.failed.len();
    writeln!(
        out,
        "Captured {} of {total} worker(s) in {:.1} s into {}",
        report.captured.len(),
        report.elapsed.as_secs_f64(),
        report.run_dir.display()
    )?;
    for capture in &report.captured {
        let name = capture.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let how = match capture.source {
            XSpaceSource::Response => "",
            XSpaceSource::SharedFilesystem => " (written by the server on this machine)",
        };
        writeln!(out, "  {}  {name}  {}{how}", capture.address, human_bytes(capture.bytes))?;
    }
    if !report.failed.is_empty() {
        let failed: Vec<&str> = report.failed.iter().map(|f| f.address.as_str()).collect();
        writeln!(out, "  missing: {} (see the errors above)", failed.join(", "))?;
    }
    writeln!(out, "View it with: oxprof serve {}", shell_quote(&report.logdir.to_string_lossy()))?;
    out.flush()
}

fn human_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

fn shell_quote(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The progress display: one line per state change worth telling, plus (on a terminal)
/// a status line refreshed five times a second.
struct ProgressDisplay {
    tty: bool,
    started: Instant,
    duration: Duration,
    delay: Duration,
    states: Mutex<Vec<(String, Option<WorkerState>)>>,
    done: AtomicBool,
}

impl ProgressDisplay {
    fn new(session: &CaptureSession) -> Self {
        let tty = std::io::stderr().is_terminal();
        let display = ProgressDisplay {
            tty,
            started: Instant::now(),
            duration: session.options().duration,
            delay: session.options().delay,
            states: Mutex::new(session.addresses().iter().map(|a| (a.clone(), None)).collect()),
            done: AtomicBool::new(false),
        };
        if tty {
            display.line(&format!(
                "capturing {} worker(s) for {:.1} s into run {}",
                session.addresses().len(),
                session.options().duration.as_secs_f64(),
                session.session_id()
            ));
        }
        display
    }

    /// Prints a line above the status line.
    fn line(&self, text: &str) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K");
        }
        let _ = writeln!(err, "capture: {text}");
    }

    fn on_event(&self, event: &ProgressEvent) {
        if let Ok(mut states) = self.states.lock()
            && let Some(slot) = states.get_mut(event.worker)
        {
            slot.1 = Some(event.state.clone());
        }
        match &event.state {
            WorkerState::BackingOff { attempt, wait, error } => self.line(&format!(
                "{}: attempt {attempt} of {} failed: {error}; retrying in {:.1} s",
                event.address,
                event.max_attempts,
                wait.as_secs_f64()
            )),
            WorkerState::Captured { bytes } if self.tty => {
                self.line(&format!("{}: captured {}", event.address, human_bytes(*bytes)));
            }
            _ => {}
        }
    }

    fn status_line(&self) -> String {
        const SPINNER: [char; 4] = ['|', '/', '-', '\\'];
        let elapsed = self.started.elapsed();
        let frame = SPINNER[(elapsed.as_millis() / 200 % 4) as usize];
        let mut parts = Vec::new();
        if let Ok(states) = self.states.lock() {
            for (address, state) in states.iter() {
                let what = match state {
                    None => "waiting".to_string(),
                    Some(WorkerState::Connecting { .. }) => "connecting".into(),
                    Some(WorkerState::Profiling { .. }) if elapsed > self.delay.saturating_add(self.duration) => {
                        "collecting".into()
                    }
                    Some(WorkerState::Profiling { .. }) => "tracing".into(),
                    Some(WorkerState::BackingOff { wait, .. }) => format!("retry in {:.1}s", wait.as_secs_f64()),
                    Some(WorkerState::Saving) => "saving".into(),
                    Some(WorkerState::Captured { .. }) => "done".into(),
                    Some(WorkerState::Failed { .. }) => "failed".into(),
                };
                parts.push(format!("{address} {what}"));
            }
        }
        format!(
            "{frame} {:.1} s / {:.1} s  {}",
            elapsed.as_secs_f64(),
            self.delay.saturating_add(self.duration).as_secs_f64(),
            parts.join(" · ")
        )
    }

    fn start_ticker(self: &Arc<Self>) -> Option<std::thread::JoinHandle<()>> {
        if !self.tty {
            return None;
        }
        let display = Arc::clone(self);
        Some(std::thread::spawn(move || {
            while !display.done.load(Ordering::Relaxed) {
                let line = display.status_line();
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K{line}");
                let _ = err.flush();
                drop(err);
                std::thread::sleep(Duration::from_millis(200));
            }
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }))
    }

    fn stop(&self) {
        self.done.store(true, Ordering::Relaxed);
    }
}
