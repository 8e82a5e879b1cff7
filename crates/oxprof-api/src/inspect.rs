//! The `inspect` request: every run and host under a path, each file decoded and
//! summarised. A host that fails to load is reported in place; the others still are.

use crate::ApiError;
use oxprof_format::ProfileStore;
use oxprof_model::LoadLimits;
use oxprof_xprof::inspect::{SpaceSummary, summarize_space};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// Summary of everything under a path.
#[derive(Debug, Clone, Serialize)]
pub struct InspectReport {
    /// Runs, newest first.
    pub runs: Vec<RunReport>,
    /// Directories that could not be read while searching.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedDir>,
}

/// A directory skipped during discovery.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedDir {
    /// The directory.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// One run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Run name as XProf shows it.
    pub run: String,
    /// Hosts, sorted by name.
    pub hosts: Vec<HostReport>,
}

/// One host: its summary, or why it could not be read.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    /// Host name.
    pub host: String,
    /// Path of its file.
    pub file: String,
    /// Size of its file in bytes.
    pub bytes: u64,
    /// The file's format as its content says (`XSpace`, `XSpace, gzip`), when recognised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The summary, when the file decoded.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SpaceSummary>,
    /// The error, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl InspectReport {
    /// Hosts that failed to load.
    pub fn failures(&self) -> impl Iterator<Item = &HostReport> {
        self.runs.iter().flat_map(|r| &r.hosts).filter(|h| h.error.is_some())
    }
}

/// Inspects every run and host under `path` (log directory, run directory or file).
/// Files are decoded one at a time, so memory stays that of the largest file.
pub fn inspect(path: &Path) -> Result<InspectReport, ApiError> {
    inspect_with(path, &LoadLimits::default())
}

/// [`inspect`] within other input budgets.
pub fn inspect_with(path: &Path, limits: &LoadLimits) -> Result<InspectReport, ApiError> {
    let store = oxprof_objstore::open_store(path, &oxprof_objstore::RemoteOptions::default()).map_err(|e| {
        ApiError::Discovery(oxprof_format::DiscoveryError::Io { path: path.to_path_buf(), cause: e.into_io() })
    })?;
    inspect_store(&*store, limits)
}

/// Inspects every run and host of a store, within `limits`.
pub fn inspect_store(store: &dyn ProfileStore, limits: &LoadLimits) -> Result<InspectReport, ApiError> {
    let discovery = store.discover(None)?;
    let runs = discovery
        .runs
        .iter()
        .map(|run| RunReport {
            run: run.name.clone(),
            hosts: run
                .hosts
                .iter()
                .map(|h| {
                    let bytes = store.stat(&h.path).map(|s| s.size).unwrap_or(0);
                    let format = store.detect(&h.path).ok().map(|d| {
                        let name = d.format.spec().name;
                        if d.gzip { format!("{name}, gzip") } else { name.to_string() }
                    });
                    let (summary, error) = match store.load(&h.path, limits, &|_| true) {
                        Ok(space) => (Some(summarize_space(&space)), None),
                        Err(e) => (None, Some(e.to_string())),
                    };
                    let file = h.path.display().to_string();
                    HostReport { host: h.host.clone(), file, bytes, format, summary, error }
                })
                .collect(),
        })
        .collect();
    let skipped =
        discovery.skipped.into_iter().map(|(p, reason)| SkippedDir { path: p.display().to_string(), reason }).collect();
    Ok(InspectReport { runs, skipped })
}

/// Renders a report as readable text tables.
pub fn render_text(report: &InspectReport) -> String {
    let mut out = String::new();
    for run in &report.runs {
        let _ = writeln!(out, "run {}", run.run);
        for host in &run.hosts {
            let format = host.format.as_deref().map(|f| format!(", {f}")).unwrap_or_default();
            let _ = writeln!(out, "  host {}  ({}, {} bytes{format})", host.host, host.file, host.bytes);
            if let Some(err) = &host.error {
                let _ = writeln!(out, "    ERROR: {err}");
                continue;
            }
            let Some(s) = &host.summary else { continue };
            if !s.hostnames.is_empty() {
                let _ = writeln!(out, "    hostnames: {}", s.hostnames.join(", "));
            }
            for e in &s.errors {
                let _ = writeln!(out, "    profiler error: {e}");
            }
            for w in &s.warnings {
                let _ = writeln!(out, "    profiler warning: {w}");
            }
            let _ = writeln!(
                out,
                "    {:<40} {:>6} {:>6} {:>10} {:>9} {:>9} {:>12}",
                "plane", "id", "lines", "events", "ev_meta", "stat_meta", "span_ms"
            );
            for p in &s.planes {
                let _ = writeln!(
                    out,
                    "    {:<40} {:>6} {:>6} {:>10} {:>9} {:>9} {:>12}",
                    p.name,
                    p.id,
                    p.lines.len(),
                    p.events,
                    p.event_metadata,
                    p.stat_metadata,
                    p.span_ps.map_or("-".to_string(), |s| format!("{:.3}", s as f64 / 1e9)),
                );
                for l in &p.lines {
                    let _ = writeln!(
                        out,
                        "      line {:<38} {:>20} {:>10} {:>12}",
                        l.name,
                        l.id,
                        l.events,
                        l.span_ps.map_or("-".to_string(), |s| format!("{:.3}", s as f64 / 1e9)),
                    );
                }
                if !p.stats_in_use.is_empty() {
                    let _ = writeln!(out, "      stats in use: {}", p.stats_in_use.join(", "));
                }
            }
            for d in &s.diagnostics {
                let _ = writeln!(out, "    note [{}] {} x{}: {}", d.severity, d.code, d.count, d.message);
            }
        }
    }
    for s in &report.skipped {
        let _ = writeln!(out, "skipped {}: {}", s.path, s.reason);
    }
    out
}
