//! The `data` request: one tool's report for a run and a host selection ([`compute`], by
//! the tool's registry row), whose body is what XProf's
//! `/data/plugin/profile/data?run=&tag=&host=` returns ([`answer`]).
//!
//! Host selection follows XProf: `host=ALL_HOSTS` or no host means every host of the run
//! (their OpStats combined); `host=h` means that host's file only.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::registry::{self, Computation};
use crate::session::{Session, SessionOptions};
use oxprof_format::HostFile;
use oxprof_model::LoadLimits;
use oxprof_report::{Report, Table, XprofBody};
use oxprof_xprof::op_stats::convert::{HostAnalysis, StepSelection, combine_hosts};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The host selector meaning "every host of the run".
pub const ALL_HOSTS: &str = "ALL_HOSTS";

/// A request for one tool's data.
#[derive(Debug, Clone, Default)]
pub struct DataRequest {
    /// Run name (`None`: the newest run).
    pub run: Option<String>,
    /// Tool name (`tag` in XProf's URL).
    pub tool: String,
    /// Host (`None` or `ALL_HOSTS`: all hosts).
    pub host: Option<String>,
    /// Further tool parameters.
    pub params: BTreeMap<String, String>,
}

/// A tool's response.
#[derive(Debug, Clone)]
pub struct DataResponse {
    /// MIME type of `body`.
    pub content_type: &'static str,
    /// The body, byte for byte what XProf's server returns (before compression).
    pub body: String,
    /// The JSON value of `body`, when it is JSON.
    pub json: Option<Value>,
    /// oxprof's own notes for users (e.g. why no steps were found); not part of `body`.
    pub notes: Vec<String>,
}

/// A body written while it is sent, for bodies too large to build in memory: a closure
/// that owns what it reads (e.g. `Arc`s of decoded profiles) and writes the bytes.
pub struct BodyWriter(Box<WriteBody>);

type WriteBody = dyn FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + Send;

impl BodyWriter {
    /// A body written by `write`.
    pub fn new(write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + Send + 'static) -> Self {
        BodyWriter(Box::new(write))
    }

    /// Writes the body to `sink` (an error: the sink failed, e.g. the client went away).
    pub fn write_to(self, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
        (self.0)(sink)
    }

    /// The whole body in memory (tests, the CLI).
    pub fn into_bytes(self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing into memory cannot fail.
        let _ = self.write_to(&mut out);
        out
    }
}

impl std::fmt::Debug for BodyWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodyWriter")
    }
}

/// Resolves a run under `path` (discovering it afresh).
pub fn select_run(path: &Path, run: Option<&str>) -> Result<ServedRun, ApiError> {
    one_shot_session(path)?.run(run)
}

/// The files a host selection means, as XProf selects them.
pub fn select_hosts<'a>(run: &'a ServedRun, host: Option<&str>) -> Result<Vec<&'a HostFile>, ApiError> {
    match host {
        None | Some("") | Some(ALL_HOSTS) => Ok(run.hosts.iter().collect()),
        Some(h) => run.hosts.iter().find(|f| f.host == h).map(|f| vec![f]).ok_or_else(|| ApiError::UnknownHost {
            host: h.to_string(),
            run: run.name.clone(),
            available: run.hosts.iter().map(|f| f.host.as_str()).collect::<Vec<_>>().join(", "),
        }),
    }
}

/// A session for one-shot callers (the CLI, tests): nothing is kept between calls, and
/// runs are not confined to the path (the caller owns the files).
pub fn one_shot_session(path: &Path) -> Result<Session, ApiError> {
    one_shot_session_with(path, LoadLimits::default())
}

/// [`one_shot_session`] with other input budgets (`--max-profile-bytes`).
pub fn one_shot_session_with(path: &Path, limits: LoadLimits) -> Result<Session, ApiError> {
    local_session(path, SessionOptions { limits, ..SessionOptions::one_shot() })
}

/// A session over a local `path` with `options`.
pub fn local_session(path: &Path, options: SessionOptions) -> Result<Session, ApiError> {
    Session::open_path(path, options)
        .map_err(|cause| ApiError::Discovery(oxprof_format::DiscoveryError::Io { path: path.to_path_buf(), cause }))
}

/// A session over `path` that keeps what it computes (within the default bound), and its
/// run `run` (`None`: the newest): for callers asking several questions of one run, such
/// as the trace routes' tests and benchmarks.
pub fn open_run(path: &Path, run: Option<&str>) -> Result<(Session, ServedRun), ApiError> {
    let options = SessionOptions { confine_to_root: false, ..SessionOptions::default() };
    let session = Session::open_path(path, options)
        .map_err(|cause| ApiError::Discovery(oxprof_format::DiscoveryError::Io { path: path.to_path_buf(), cause }))?;
    let run = session.run(run)?;
    Ok((session, run))
}

/// Answers a data request for the profiles under `path`, computing everything afresh.
pub fn data(path: &Path, request: &DataRequest) -> Result<DataResponse, ApiError> {
    let session = one_shot_session(path)?;
    let run = session.run(request.run.as_deref())?;
    answer(&session, &run, request, false)
}

/// Answers a data request for `run` of `session`; `refresh` (XProf's
/// `use_saved_result=false`) recomputes what the session keeps. The response carries
/// XProf's body and, when it is JSON, its parsed value (what tests compare with XProf's
/// files); callers that only send the body use [`compute`].
pub fn answer(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<DataResponse, ApiError> {
    let report = compute(session, run, request, refresh)?;
    let body = report.xprof_body();
    Ok(DataResponse {
        content_type: body.content_type,
        json: report.xprof_body_json(),
        body: body.text,
        notes: report.notes(),
    })
}

/// The report of a data request: what its registry row computes for `run` of `session`
/// (`refresh`: recompute what the session keeps). Aliases are answered under the tool's
/// own name.
pub fn compute(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let tool = registry::find(&request.tool).ok_or_else(|| ApiError::UnknownTool(request.tool.clone()))?;
    let computation = tool.compute.ok_or_else(|| ApiError::NotYetAvailable { tool: tool.name.to_string() })?;
    let renamed;
    let request = if tool.name == request.tool {
        request
    } else {
        // An alias (`tensorflow_stats`, a trailing `^`): the tool under its own name.
        renamed = DataRequest { tool: tool.name.to_string(), ..request.clone() };
        &renamed
    };
    match computation {
        Computation::OpStats { steps, report } => op_stats_report(session, run, request, refresh, steps, report),
        Computation::Custom(compute) => compute(session, run, request, refresh),
    }
}

/// XProf's `/data_csv` of a report: the first DataTable of its JSON body as CSV, or `None`
/// when the body has none.
pub fn xprof_csv(report: &dyn Report) -> Option<String> {
    oxprof_wire::csv::data_csv(&report.xprof_body_json()?)
}

/// The OpStats tools: each host's analysis (kept by the session), combined with the step
/// database the tool reads, then the tool's report, with oxprof's notes on the hosts and
/// on the device tools.
fn op_stats_report(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
    steps: StepSelection,
    report: registry::OpStatsReport,
) -> Result<Box<dyn Report>, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let analyses = session.host_analyses(&files, refresh)?;
    let op_stats = combine_hosts(&analyses, steps);
    let mut notes: Vec<String> = analyses.iter().zip(&files).flat_map(|(a, f)| host_notes(&f.host, a)).collect();
    notes.extend(oxprof_xprof::tools::hlo_stats::device_tool_notes(&request.tool, &op_stats));
    Ok(with_notes(report(&op_stats, &request.params), notes))
}

fn host_notes(host: &str, analysis: &HostAnalysis) -> Vec<String> {
    analysis.advice.iter().map(|a| format!("{host}: {a}")).collect()
}

/// `report` with oxprof's `notes` before its own.
pub fn with_notes(report: Box<dyn Report>, notes: Vec<String>) -> Box<dyn Report> {
    if notes.is_empty() {
        return report;
    }
    Box::new(Noted { report, notes })
}

/// A report with notes from the layer that computed it (hosts, selection).
#[derive(Debug)]
struct Noted {
    report: Box<dyn Report>,
    notes: Vec<String>,
}

impl Report for Noted {
    fn xprof_body(&self) -> XprofBody {
        self.report.xprof_body()
    }

    fn to_json(&self) -> Value {
        self.report.to_json()
    }

    fn tables(&self) -> Vec<Table> {
        self.report.tables()
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        notes.extend(self.report.notes());
        notes
    }

    fn xprof_body_json(&self) -> Option<Value> {
        self.report.xprof_body_json()
    }
}

/// The output of a tool that has no typed report (the trace viewer's events, the graph
/// viewer's text, the module list): XProf's body as it is, its JSON value when the
/// producer kept one, and notes. It has no tables.
#[derive(Debug)]
pub struct BodyReport(pub DataResponse);

impl Report for BodyReport {
    fn xprof_body(&self) -> XprofBody {
        XprofBody { content_type: self.0.content_type, text: self.0.body.clone() }
    }

    /// The JSON value, or the body as a JSON string when it is not JSON.
    fn to_json(&self) -> Value {
        match &self.0.json {
            Some(json) => json.clone(),
            None => serde_json::from_str(&self.0.body).unwrap_or_else(|_| Value::String(self.0.body.clone())),
        }
    }

    fn tables(&self) -> Vec<Table> {
        Vec::new()
    }

    fn notes(&self) -> Vec<String> {
        self.0.notes.clone()
    }

    /// Only the value the producer kept: a trace body is not parsed again.
    fn xprof_body_json(&self) -> Option<Value> {
        self.0.json.clone()
    }
}

impl DataResponse {
    /// As a report (see [`BodyReport`]).
    pub fn into_report(self) -> Box<dyn Report> {
        Box::new(BodyReport(self))
    }
}
