//! The `data` request: one tool's output for a run and a host selection, with the body
//! XProf's `/data/plugin/profile/data?run=&tag=&host=` returns.
//!
//! Host selection follows XProf: `host=ALL_HOSTS` or no host means every host of the run
//! (their OpStats combined); `host=h` means that host's file only.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::registry;
use crate::session::{Session, SessionOptions};
use oxprof_analysis::op_stats::OpStats;
use oxprof_analysis::op_stats::convert::{HostAnalysis, StepSelection, combine_hosts};
use oxprof_format::HostFile;
use oxprof_model::LoadLimits;
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

/// The step database each OpStats tool reads in XProf 2.24.2.
fn step_selection(tool: &str) -> StepSelection {
    match tool {
        "overview_page" | "input_pipeline_analyzer" => StepSelection::DropIncomplete,
        _ => StepSelection::All,
    }
}

/// A session for one-shot callers (the CLI, tests): nothing is kept between calls, and
/// runs are not confined to the path (the caller owns the files).
pub fn one_shot_session(path: &Path) -> Result<Session, ApiError> {
    one_shot_session_with(path, LoadLimits::default())
}

/// [`one_shot_session`] with other input budgets (`--max-profile-bytes`).
pub fn one_shot_session_with(path: &Path, limits: LoadLimits) -> Result<Session, ApiError> {
    Session::open(path, SessionOptions { limits, ..SessionOptions::one_shot() })
        .map_err(|cause| ApiError::Discovery(oxprof_format::DiscoveryError::Io { path: path.to_path_buf(), cause }))
}

/// A session over `path` that keeps what it computes (within the default bound), and its
/// run `run` (`None`: the newest): for callers asking several questions of one run, such
/// as the trace routes' tests and benchmarks.
pub fn open_run(path: &Path, run: Option<&str>) -> Result<(Session, ServedRun), ApiError> {
    let options = SessionOptions { confine_to_root: false, ..SessionOptions::default() };
    let session = Session::open(path, options)
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
/// `use_saved_result=false`) recomputes what the session keeps.
pub fn answer(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<DataResponse, ApiError> {
    let tool = registry::find(&request.tool).ok_or_else(|| ApiError::UnknownTool(request.tool.clone()))?;
    let answer = tool.answer.ok_or_else(|| ApiError::NotYetAvailable { tool: tool.name.to_string() })?;
    if tool.name == request.tool {
        return answer(session, run, request, refresh);
    }
    // An alias (`tensorflow_stats`, a trailing `^`): the tool under its own name.
    answer(session, run, &DataRequest { tool: tool.name.to_string(), ..request.clone() }, refresh)
}

/// [`registry::Answer`] of the OpStats tools: each host's analysis (kept by the session),
/// combined, then rendered.
pub(crate) fn op_stats_answer(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<DataResponse, ApiError> {
    let tool = request.tool.as_str();
    let files = select_hosts(run, request.host.as_deref())?;
    let analyses = session.host_analyses(&files, refresh)?;
    let op_stats = combine_hosts(&analyses, step_selection(tool));
    let json = render_op_stats_tool(tool, &op_stats, &request.params)?;
    let mut notes: Vec<String> = analyses.iter().zip(&files).flat_map(|(a, f)| host_notes(&f.host, a)).collect();
    notes.extend(oxprof_analysis::tools::hlo_stats::device_tool_notes(tool, &op_stats));
    let body = match tool {
        // A proto message: XProf prints it with protobuf's JSON printer (field order).
        "op_profile" => oxprof_analysis::tools::op_profile::proto_json_text(&json),
        // DataTables: nlohmann::json's `dump()`, joined by `absl::StrCat`.
        "overview_page" => oxprof_analysis::tools::json_text::overview_page_text(&json),
        "input_pipeline_analyzer" | "framework_op_stats" | "kernel_stats" | "hlo_stats" | "roofline_model" => {
            oxprof_analysis::tools::json_text::data_table_text(&json)
        }
        // A proto message printed by protobuf's JSON printer (field-number order).
        "pod_viewer" => oxprof_analysis::tools::json_text::pod_viewer_text(&json),
        _ => json.to_string(),
    };
    Ok(DataResponse { content_type: "application/json", body, json: Some(json), notes })
}

fn render_op_stats_tool(tool: &str, op_stats: &OpStats, params: &BTreeMap<String, String>) -> Result<Value, ApiError> {
    use oxprof_analysis::tools;
    match tool {
        "kernel_stats" => Ok(tools::kernel_stats::kernel_stats(op_stats)),
        "hlo_stats" => Ok(tools::hlo_stats::hlo_stats(op_stats)),
        "roofline_model" => Ok(tools::roofline_model::roofline_model(op_stats)),
        "op_profile" => {
            let grouping = tools::op_profile::Grouping::from_param(params.get("group_by").map(String::as_str));
            Ok(tools::op_profile::op_profile(op_stats, grouping))
        }
        "framework_op_stats" => Ok(tools::framework_op_stats::framework_op_stats(op_stats)),
        "pod_viewer" => Ok(tools::pod_viewer::pod_viewer(op_stats)),
        "overview_page" => Ok(tools::overview_page::overview_page(op_stats)),
        "input_pipeline_analyzer" => Ok(tools::input_pipeline::input_pipeline_analyzer(op_stats)),
        _ => Err(ApiError::NotYetAvailable { tool: tool.to_string() }),
    }
}

fn host_notes(host: &str, analysis: &HostAnalysis) -> Vec<String> {
    analysis.advice.iter().map(|a| format!("{host}: {a}")).collect()
}
