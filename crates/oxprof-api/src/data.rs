//! The `data` request: one tool's output for a run and a host selection, with the body
//! XProf's `/data/plugin/profile/data?run=&tag=&host=` returns.
//!
//! Host selection follows XProf: `host=ALL_HOSTS` or no host means every host of the run
//! (their OpStats combined); `host=h` means that host's file only.

use crate::ApiError;
use oxprof_analysis::op_stats::OpStats;
use oxprof_analysis::op_stats::convert::{HostAnalysis, StepSelection, combine_hosts, xspace_to_op_stats};
use oxprof_format::{HostFile, Run, discover, load_xspace};
use rayon::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The host selector meaning "every host of the run".
pub const ALL_HOSTS: &str = "ALL_HOSTS";

/// Tools oxprof serves from OpStats, with the names XProf uses (and legacy aliases).
pub const OP_STATS_TOOLS: &[&str] = &[
    "overview_page",
    "input_pipeline_analyzer",
    "framework_op_stats",
    "tensorflow_stats",
    "pod_viewer",
    "kernel_stats",
    "op_profile",
    "hlo_stats",
    "roofline_model",
];

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

/// Resolves a run under `path`.
pub fn select_run(path: &Path, run: Option<&str>) -> Result<Run, ApiError> {
    let discovery = discover(path)?;
    match run {
        None => discovery
            .runs
            .into_iter()
            .next()
            .ok_or_else(|| ApiError::UnknownRun { name: String::new(), available: String::new() }),
        Some(name) => {
            let available = discovery.runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", ");
            discovery
                .runs
                .into_iter()
                .find(|r| r.name == name)
                .ok_or_else(|| ApiError::UnknownRun { name: name.to_string(), available })
        }
    }
}

/// The files a host selection means, as XProf selects them.
pub fn select_hosts<'a>(run: &'a Run, host: Option<&str>) -> Result<Vec<&'a HostFile>, ApiError> {
    match host {
        None | Some("") | Some(ALL_HOSTS) => Ok(run.hosts.iter().collect()),
        Some(h) => run.hosts.iter().find(|f| f.host == h).map(|f| vec![f]).ok_or_else(|| ApiError::UnknownHost {
            host: h.to_string(),
            run: run.name.clone(),
            available: run.hosts.iter().map(|f| f.host.as_str()).collect::<Vec<_>>().join(", "),
        }),
    }
}

/// Where the OpStats tools get each host's analysis: [`ComputeEachTime`] (one-shot callers
/// such as the CLI and tests) or a cache kept by a long-lived caller (the HTTP service
/// keeps one, so that switching tools on a host does not convert it again).
pub trait HostAnalyses: Sync {
    /// The analysis of one host's file.
    fn analysis(&self, file: &HostFile) -> Result<Arc<HostAnalysis>, ApiError>;
}

/// Loads and converts the host on every request.
pub struct ComputeEachTime;

impl HostAnalyses for ComputeEachTime {
    fn analysis(&self, file: &HostFile) -> Result<Arc<HostAnalysis>, ApiError> {
        analyze_host(file).map(Arc::new)
    }
}

/// Loads and converts one host. The XSpace is dropped as soon as its OpStats exist, on a
/// pool thread so that rendering the answer does not wait for ~100 MB of tables to be
/// unmapped.
pub fn analyze_host(file: &HostFile) -> Result<HostAnalysis, ApiError> {
    let space = load_xspace(&file.path)?;
    let analysis = xspace_to_op_stats(&space);
    rayon::spawn(move || drop(space));
    Ok(analysis)
}

/// Loads and converts each selected host, in parallel.
pub fn analyze_hosts(files: &[&HostFile]) -> Result<Vec<HostAnalysis>, ApiError> {
    files.par_iter().map(|f| analyze_host(f)).collect()
}

/// (file size, modification time in ns) of a profile file: with its path, what caches of
/// results computed from the file are keyed by (a rewritten file is read again).
pub fn file_state(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos() as u64;
    Some((meta.len(), mtime))
}

/// The step database each OpStats tool reads in XProf 2.24.2.
fn step_selection(tool: &str) -> StepSelection {
    match tool {
        "overview_page" | "input_pipeline_analyzer" => StepSelection::DropIncomplete,
        _ => StepSelection::All,
    }
}

/// Which part of oxprof answers a tool. Each family lives in its own module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFamily {
    /// Rendered from the (combined) OpStats of the selected hosts: this module.
    OpStats,
    /// The trace viewer (`trace_viewer`, `trace_viewer@`): `crate::trace`.
    Trace,
    /// `memory_profile`, from the host planes' allocator events: `crate::memory_profile`.
    MemoryProfile,
    /// Tools over one HLO module (`memory_viewer`, `graph_viewer`, `module_list`): `crate::hlo_tools`.
    Hlo,
    /// `tf_data_bottleneck_analysis`, from the host planes' tf.data iterator events: `crate::tf_data`.
    TfData,
}

impl ToolFamily {
    /// The family answering `tool` (without XProf's trailing `^`), or `None` for unknown tools.
    pub fn of(tool: &str) -> Option<ToolFamily> {
        if OP_STATS_TOOLS.contains(&tool) {
            Some(ToolFamily::OpStats)
        } else if crate::trace::TOOLS.contains(&tool) {
            Some(ToolFamily::Trace)
        } else if crate::memory_profile::TOOLS.contains(&tool) {
            Some(ToolFamily::MemoryProfile)
        } else if crate::hlo_tools::TOOLS.contains(&tool) {
            Some(ToolFamily::Hlo)
        } else if crate::tf_data::TOOLS.contains(&tool) {
            Some(ToolFamily::TfData)
        } else {
            None
        }
    }
}

/// Answers a data request for the profiles under `path`, computing everything afresh.
pub fn data(path: &Path, request: &DataRequest) -> Result<DataResponse, ApiError> {
    data_with(path, request, &ComputeEachTime)
}

/// Answers a data request; the OpStats tools take each host's analysis from `analyses`.
pub fn data_with(path: &Path, request: &DataRequest, analyses: &dyn HostAnalyses) -> Result<DataResponse, ApiError> {
    let tool = request.tool.trim_end_matches('^');
    match ToolFamily::of(tool) {
        Some(ToolFamily::OpStats) => op_stats_data(path, tool, request, analyses),
        Some(ToolFamily::Trace) => crate::trace::data(path, tool, request),
        Some(ToolFamily::MemoryProfile) => crate::memory_profile::data(path, tool, request),
        Some(ToolFamily::Hlo) => crate::hlo_tools::data(path, tool, request),
        Some(ToolFamily::TfData) => crate::tf_data::data(path, tool, request),
        None => Err(ApiError::UnknownTool(tool.to_string())),
    }
}

fn op_stats_data(
    path: &Path,
    tool: &str,
    request: &DataRequest,
    source: &dyn HostAnalyses,
) -> Result<DataResponse, ApiError> {
    let run = select_run(path, request.run.as_deref())?;
    let files = select_hosts(&run, request.host.as_deref())?;
    let analyses: Vec<Arc<HostAnalysis>> = files.par_iter().map(|f| source.analysis(f)).collect::<Result<_, _>>()?;
    let op_stats = combine_hosts(&analyses, step_selection(tool));
    let json = render_op_stats_tool(tool, &op_stats, &request.params)?;
    let mut notes: Vec<String> = analyses.iter().zip(&files).flat_map(|(a, f)| host_notes(&f.host, a)).collect();
    notes.extend(oxprof_analysis::tools::hlo_stats::device_tool_notes(tool, &op_stats));
    let body = match tool {
        // A proto message: XProf prints it with protobuf's JSON printer (field order).
        "op_profile" => oxprof_analysis::tools::op_profile::proto_json_text(&json),
        // DataTables: nlohmann::json's `dump()`, joined by `absl::StrCat`.
        "overview_page" => oxprof_analysis::tools::json_text::overview_page_text(&json),
        "input_pipeline_analyzer"
        | "framework_op_stats"
        | "tensorflow_stats"
        | "kernel_stats"
        | "hlo_stats"
        | "roofline_model" => oxprof_analysis::tools::json_text::data_table_text(&json),
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
        "framework_op_stats" | "tensorflow_stats" => Ok(tools::framework_op_stats::framework_op_stats(op_stats)),
        "pod_viewer" => Ok(tools::pod_viewer::pod_viewer(op_stats)),
        "overview_page" => Ok(tools::overview_page::overview_page(op_stats)),
        "input_pipeline_analyzer" => Ok(tools::input_pipeline::input_pipeline_analyzer(op_stats)),
        _ => Err(ApiError::NotYetAvailable { tool: tool.to_string() }),
    }
}

fn host_notes(host: &str, analysis: &HostAnalysis) -> Vec<String> {
    analysis.advice.iter().map(|a| format!("{host}: {a}")).collect()
}
