//! The tools, in one table: every other place that needs to know a tool (the CLI's help
//! and parser, `/run_tools`, `/hosts`, `/oxprof/api/info`, the UI's Tools menu, `data`'s
//! computation, the golden tests) reads it from here.
//!
//! Adding a tool is one analysis module (a typed report implementing
//! `oxprof_report::Report`), one row in [`TOOLS`] (its computation) and one UI
//! page (`ui/src/pages/`, registered under the row's `page`); `tests/registry.rs` fails
//! when a row is missing from any of those places. XProf's bodies, CSV and Markdown all
//! come from the report the row computes.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::data::DataRequest;
use crate::session::Session;
use oxprof_model::XSpace;
use oxprof_model::schema::{
    GPU_PLANE_PREFIX, HOST_THREADS_PLANE_NAME, METADATA_PLANE_NAME, StatType, TPU_PLANE_PREFIX,
};
use oxprof_report::Report;
use oxprof_xprof::op_stats::OpStats;
use oxprof_xprof::op_stats::convert::StepSelection;
use oxprof_xprof::tools::{
    framework_op_stats::FrameworkOpStats, hlo_stats::HloStats, input_pipeline::InputPipelineAnalysis,
    kernel_stats::KernelStats, op_profile, pod_viewer::PodViewer, roofline_model::RooflineModel,
};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Which part of oxprof computes a tool (what it reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Rendered from the (combined) OpStats of the selected hosts (`crate::data`).
    OpStats,
    /// The trace viewer (`crate::trace`).
    Trace,
    /// The host planes' allocator events (`crate::memory_profile`).
    MemoryProfile,
    /// One HLO module of the run (`crate::hlo_tools`).
    Hlo,
    /// The host planes' tf.data iterator events (`crate::tf_data`).
    TfData,
    /// A PyTorch (Kineto) trace's host and GPU events (`crate::pytorch`).
    PyTorch,
    /// PyTorch runs' host and GPU events, HTA's analyses (`crate::hta`).
    Hta,
    /// Read from the selected hosts' XSpaces directly: device counters, DCN collectives,
    /// smart suggestions (`crate::counters`).
    XSpace,
    /// Listed by XProf, not computed by oxprof yet.
    NotYet,
}

/// XProf's rule for the `/hosts` list of a run with several hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hosts {
    /// Each host on its own.
    Each,
    /// Each host, and `ALL_HOSTS` (their data combined).
    EachAndAll,
    /// `ALL_HOSTS` only.
    AllOnly,
}

/// When XProf's `GetAvailableToolNames` lists a tool for a run (from its first host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Listed {
    /// Always.
    Always,
    /// When the profile has GPU planes.
    WithGpu,
    /// When the profile carries HLO protos.
    WithHlo,
    /// When the host plane has `MegaScale:` events.
    WithMegascale,
    /// When TPU planes have counter events.
    WithCounters,
    /// Never (oxprof's own tools, and XProf's tools its frontend asks for by name).
    Never,
}

/// How oxprof's UI offers a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Offered {
    /// When XProf lists it for the run ([`Listed`]).
    AsXprof,
    /// For every run with a host plane (oxprof shows what XProf hides).
    Always,
    /// For runs imported from PyTorch profiler traces.
    PyTorch,
    /// Not in the Tools menu (an alias-like legacy body, or a tool oxprof lacks).
    No,
}

/// Where a tool's expected outputs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reference {
    /// XProf's own outputs, recorded as `<profile>/xprof_out/<tool>[.variant].<ext>`.
    Xprof,
    /// oxprof's own expected outputs in this test file (XProf has no output to compare
    /// with: a retired tool, or a body XProf's recorder leaves out).
    Own(&'static str),
    /// Nothing yet (XProf's tools oxprof does not compute).
    None,
}

/// Computes a tool's report for a request (`bool`: recompute what the session keeps).
pub type Compute = fn(&Session, &ServedRun, &DataRequest, bool) -> Result<Box<dyn Report>, ApiError>;

/// An OpStats tool's report of the combined OpStats, with the request's parameters.
pub type OpStatsReport = fn(&OpStats, &BTreeMap<String, String>) -> Box<dyn Report>;

/// How a tool's report is computed.
#[derive(Debug, Clone, Copy)]
pub enum Computation {
    /// From the OpStats of the selected hosts combined (`crate::data`), with the step
    /// database XProf 2.24.2 gives the tool.
    OpStats {
        /// Which steps the combined step database keeps.
        steps: StepSelection,
        /// The report.
        report: OpStatsReport,
    },
    /// By the module of the tool's family.
    Custom(Compute),
}

/// One tool.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// XProf's name (the `tag` of `/data`).
    pub name: &'static str,
    /// Other names XProf accepts for it.
    pub aliases: &'static [&'static str],
    /// The name people read (menus, headings).
    pub title: &'static str,
    /// One line on what it shows (CLI help).
    pub summary: &'static str,
    /// What computes it.
    pub family: Family,
    /// XProf's `/hosts` rule.
    pub hosts: Hosts,
    /// When XProf's `/run_tools` lists it.
    pub listed: Listed,
    /// When oxprof's UI offers it.
    pub offered: Offered,
    /// The UI page showing it (`ui/src/pages/index.ts`).
    pub page: &'static str,
    /// The content type of its `/data` body.
    pub content_type: &'static str,
    /// The computation (`None`: XProf has it, oxprof does not yet).
    pub compute: Option<Computation>,
    /// Where the golden tests get its expected outputs.
    pub reference: Reference,
}

impl Tool {
    /// Whether oxprof computes it.
    pub fn available(&self) -> bool {
        self.compute.is_some()
    }

    /// Whether `name` names this tool.
    pub fn is(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

const JSON: &str = "application/json";

/// Every tool, in the order of XProf's `GetAvailableToolNames` (then oxprof's own, then
/// the tools XProf names that oxprof does not compute).
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "trace_viewer@",
        aliases: &[],
        title: "Trace viewer",
        summary: "every event of the run on a timeline (XProf's streaming trace JSON; oxprof's LOD API browses all events)",
        family: Family::Trace,
        hosts: Hosts::Each,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "trace_viewer",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::trace::compute)),
        reference: Reference::Xprof,
    },
    Tool {
        name: "overview_page",
        aliases: &[],
        title: "Overview",
        summary: "step time and its breakdown, top ops, run environment and recommendations",
        family: Family::OpStats,
        hosts: Hosts::AllOnly,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "overview_page",
        content_type: JSON,
        // The OpStats path plus the inference latency table (`crate::inference`).
        compute: Some(Computation::Custom(crate::inference::overview)),
        reference: Reference::Xprof,
    },
    Tool {
        name: "input_pipeline_analyzer",
        aliases: &["input_pipeline"],
        title: "Input pipeline analyzer",
        summary: "whether steps wait for input, and which input ops cost the most",
        family: Family::OpStats,
        hosts: Hosts::EachAndAll,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "input_pipeline_analyzer",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::DropIncomplete,
            report: |op_stats, _| Box::new(InputPipelineAnalysis::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
    },
    Tool {
        name: "framework_op_stats",
        aliases: &["tensorflow_stats"],
        title: "Framework op stats",
        summary: "time per framework (TensorFlow/JAX) op on host and device",
        family: Family::OpStats,
        hosts: Hosts::EachAndAll,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "framework_op_stats",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(FrameworkOpStats::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
    },
    Tool {
        name: "memory_profile",
        aliases: &[],
        title: "Memory profile",
        summary: "allocator memory over time, its peak and what was live at it (one host)",
        family: Family::MemoryProfile,
        hosts: Hosts::Each,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "memory_profile",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::memory_profile::compute)),
        reference: Reference::Xprof,
    },
    Tool {
        name: "op_profile",
        aliases: &["hlo_op_profile"],
        title: "Op profile",
        summary: "device time of XLA ops by program or category, with FLOP rate and bandwidth",
        family: Family::OpStats,
        hosts: Hosts::Each,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "op_profile",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, params| {
                let grouping = op_profile::Grouping::from_param(params.get("group_by").map(String::as_str));
                Box::new(op_profile::OpProfile::from_op_stats(op_stats, grouping))
            },
        }),
        reference: Reference::Xprof,
    },
    Tool {
        name: "hlo_stats",
        aliases: &["hlo_op_stats"],
        title: "HLO op stats",
        summary: "every HLO op with its time, FLOP rate, bandwidth and bound",
        family: Family::OpStats,
        hosts: Hosts::Each,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "hlo_stats",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(HloStats::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
    },
    Tool {
        name: "roofline_model",
        aliases: &[],
        title: "Roofline model",
        summary: "ops against the device's compute and memory roofs",
        family: Family::OpStats,
        hosts: Hosts::Each,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "roofline_model",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(RooflineModel::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
    },
    Tool {
        name: "kernel_stats",
        aliases: &[],
        title: "GPU kernel stats",
        summary: "GPU kernels with their launch shapes, occupancy and time",
        family: Family::OpStats,
        hosts: Hosts::EachAndAll,
        listed: Listed::WithGpu,
        offered: Offered::AsXprof,
        page: "kernel_stats",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(KernelStats::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
    },
    Tool {
        name: "memory_viewer",
        aliases: &[],
        title: "Memory viewer",
        summary: "an HLO module's buffers over its program order (module_name=...)",
        family: Family::Hlo,
        hosts: Hosts::Each,
        listed: Listed::WithHlo,
        offered: Offered::AsXprof,
        page: "memory_viewer",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::hlo_tools::compute)),
        reference: Reference::Xprof,
    },
    Tool {
        name: "graph_viewer",
        aliases: &[],
        title: "Graph viewer",
        summary: "an HLO module as text or as a graph around one op (module_name=..., type=...)",
        family: Family::Hlo,
        hosts: Hosts::Each,
        listed: Listed::WithHlo,
        offered: Offered::AsXprof,
        page: "graph_viewer",
        content_type: "text/plain",
        compute: Some(Computation::Custom(crate::hlo_tools::compute)),
        reference: Reference::Xprof,
    },
    Tool {
        name: "megascale_stats",
        aliases: &[],
        title: "Megascale stats",
        summary: "DCN collectives across slices: slack, stalls and bandwidth per rendezvous",
        family: Family::XSpace,
        hosts: Hosts::EachAndAll,
        listed: Listed::WithMegascale,
        offered: Offered::AsXprof,
        page: "megascale_stats",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::counters::megascale_stats)),
        reference: Reference::Xprof,
    },
    Tool {
        name: "perf_counters",
        aliases: &[],
        title: "Perf counters",
        summary: "TPU/GPU performance counter values per chip and sample",
        family: Family::XSpace,
        hosts: Hosts::Each,
        listed: Listed::WithCounters,
        offered: Offered::AsXprof,
        page: "perf_counters",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::counters::perf_counters)),
        reference: Reference::Xprof,
    },
    Tool {
        name: "utilization_viewer",
        aliases: &[],
        title: "Utilization viewer",
        summary: "TPU v6e unit utilization from counters: scalar, vector, MXU, XLU, HBM, ICI, SparseCore",
        family: Family::XSpace,
        hosts: Hosts::Each,
        listed: Listed::WithCounters,
        offered: Offered::AsXprof,
        page: "utilization_viewer",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::counters::utilization_viewer)),
        reference: Reference::Xprof,
    },
    Tool {
        name: "pod_viewer",
        aliases: &[],
        title: "Pod viewer",
        summary: "each step on each core, with its bottleneck and breakdown",
        family: Family::OpStats,
        hosts: Hosts::AllOnly,
        listed: Listed::Never,
        offered: Offered::Always,
        page: "pod_viewer",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(PodViewer::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
    },
    Tool {
        name: "tf_data_bottleneck_analysis",
        aliases: &[],
        title: "tf.data bottleneck analysis",
        summary: "tf.data input pipelines, their slowest iterators and advice",
        family: Family::TfData,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::Always,
        page: "tf_data_bottleneck_analysis",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::tf_data::compute)),
        reference: Reference::Own("crates/oxprof-api/tests/tf_data.rs"),
    },
    // PyTorch (Kineto) traces: torch-tb-profiler's views, offered for PyTorch runs only.
    Tool {
        name: "pytorch_overview",
        aliases: &[],
        title: "PyTorch overview",
        summary: "PyTorch step time by Kernel/Memcpy/Memset/Runtime/DataLoader/CPU Exec/Other, GPU summary and recommendations (torch-tb-profiler's overview)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "pytorch_overview",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::pytorch::overview)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
    },
    Tool {
        name: "pytorch_op_stats",
        aliases: &[],
        title: "PyTorch operators",
        summary: "PyTorch operators by name, input shapes and call stack: calls, host and device self/total time, Tensor Cores (torch-tb-profiler's operator view)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "pytorch_op_stats",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::pytorch::operators)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
    },
    Tool {
        name: "pytorch_kernel_stats",
        aliases: &[],
        title: "PyTorch GPU kernels",
        summary: "GPU kernels by name and launching operator: calls, time, blocks per SM, occupancy, Tensor Cores (torch-tb-profiler's kernel view)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        // The kernel stats page shows either body.
        page: "kernel_stats",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::pytorch::kernels)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
    },
    Tool {
        name: "pytorch_memory",
        aliases: &[],
        title: "PyTorch memory",
        summary: "PyTorch allocated/reserved memory over time per device, peak, allocation events with operator and lifetime, memory by operator (torch-tb-profiler's memory view)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "pytorch_memory",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::pytorch::memory)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
    },
    Tool {
        name: "pytorch_modules",
        aliases: &[],
        title: "PyTorch modules",
        summary: "the nn.Module hierarchy with calls, operators, host and device total/self time per module (torch-tb-profiler's module view)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "pytorch_modules",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::pytorch::modules)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
    },
    // oxprof's own PyTorch tools with Holistic Trace Analysis' numbers (`crate::hta`).
    Tool {
        name: "hta_distributed",
        aliases: &[],
        title: "Distributed (HTA)",
        summary: "per rank of a PyTorch run: idle/compute/non-compute GPU time, comm-comp overlap, comm kernels, stragglers",
        family: Family::Hta,
        hosts: Hosts::AllOnly,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "hta_distributed",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::hta::compute_distributed)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_hta.rs"),
    },
    Tool {
        name: "hta_gpu_idle",
        aliases: &[],
        title: "GPU idle time and launches (HTA)",
        summary: "GPU idle time by cause (host wait, kernel wait, other), kernel launch delays, queue length per stream",
        family: Family::Hta,
        hosts: Hosts::EachAndAll,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "hta_gpu_idle",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::hta::compute_gpu_idle)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_hta.rs"),
    },
    Tool {
        name: "trace_viewer",
        aliases: &[],
        title: "Trace viewer (legacy JSON)",
        summary: "XProf's older whole-trace JSON of one host (up to 5 million events)",
        family: Family::Trace,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::No,
        page: "trace_viewer",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::trace::compute)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_trace.rs"),
    },
    Tool {
        name: "module_list",
        aliases: &[],
        title: "HLO module list",
        summary: "the run's HLO module names, comma-separated",
        family: Family::Hlo,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::No,
        page: "generic",
        content_type: "text/plain",
        compute: Some(Computation::Custom(crate::hlo_tools::compute)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_hlo_tools.rs"),
    },
    Tool {
        name: "smart_suggestion",
        aliases: &[],
        title: "Smart suggestions",
        summary: "XProf's rule-based advice on the run's bottleneck",
        family: Family::XSpace,
        hosts: Hosts::AllOnly,
        listed: Listed::Never,
        offered: Offered::Always,
        page: "smart_suggestion",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::counters::smart_suggestion)),
        reference: Reference::Xprof,
    },
    Tool {
        name: "inference_profile",
        aliases: &[],
        title: "Inference profile",
        summary: "requests and batches of inference (serving) runs: latency percentiles, batching, breakdown",
        family: Family::OpStats,
        hosts: Hosts::EachAndAll,
        listed: Listed::Never,
        offered: Offered::Always,
        page: "inference_profile",
        content_type: JSON,
        compute: Some(Computation::Custom(crate::inference::compute)),
        reference: Reference::Xprof,
    },
];

/// The tool `name` names (its name or an alias; XProf's trailing `^` ignored).
pub fn find(name: &str) -> Option<&'static Tool> {
    let name = name.trim_end_matches('^');
    TOOLS.iter().find(|t| t.is(name))
}

/// Why a name is not a tool oxprof computes: the one line the CLI and Python both show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolNameError {
    /// No tool has that name or alias.
    #[error("unknown tool {name:?}; the tools are {}", available_names().join(", "))]
    Unknown {
        /// The name given.
        name: String,
    },
    /// A tool XProf has that oxprof does not compute yet.
    #[error("{name:?} ({title}) is not computed by this version of oxprof")]
    NotComputed {
        /// The tool's name.
        name: &'static str,
        /// Its title.
        title: &'static str,
    },
}

/// The names of the tools oxprof computes, in [`TOOLS`] order.
pub fn available_names() -> Vec<&'static str> {
    TOOLS.iter().filter(|t| t.available()).map(|t| t.name).collect()
}

/// The tool `name` names (its name or an alias), if oxprof computes it.
pub fn resolve(name: &str) -> Result<&'static Tool, ToolNameError> {
    match find(name) {
        Some(tool) if tool.available() => Ok(tool),
        Some(tool) => Err(ToolNameError::NotComputed { name: tool.name, title: tool.title }),
        None => Err(ToolNameError::Unknown { name: name.to_string() }),
    }
}

/// What a run's first host offers, for [`Listed`] and [`Offered`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Features {
    gpu: bool,
    hlo: bool,
    megascale: bool,
    counters: bool,
    host_plane: bool,
    pytorch: bool,
}

impl Features {
    /// Read from the first host's XSpace: plane names and metadata, and the lines of TPU
    /// planes only (their counters).
    pub fn of(first_host: &XSpace) -> Features {
        Features {
            gpu: first_host.planes_with_prefix(GPU_PLANE_PREFIX).next().is_some(),
            hlo: first_host
                .planes
                .iter()
                .filter(|p| p.name == METADATA_PLANE_NAME)
                .any(|p| p.stat_metadata_of_type(StatType::HloProto).is_some()),
            megascale: first_host
                .plane(HOST_THREADS_PLANE_NAME)
                .is_some_and(|p| p.event_metadata().iter().any(|m| p.str(m.name).starts_with("MegaScale:"))),
            counters: first_host
                .planes_with_prefix(TPU_PLANE_PREFIX)
                .any(|p| p.lines.iter().any(|line| line.events(p).any(|e| e.stat(StatType::CounterValue).is_some()))),
            host_plane: first_host.plane(HOST_THREADS_PLANE_NAME).is_some(),
            pytorch: oxprof_pytorch::is_pytorch(first_host),
        }
    }

    fn lists(&self, listed: Listed) -> bool {
        match listed {
            Listed::Always => true,
            Listed::WithGpu => self.gpu,
            Listed::WithHlo => self.hlo,
            Listed::WithMegascale => self.megascale,
            Listed::WithCounters => self.counters,
            Listed::Never => false,
        }
    }
}

/// The tools XProf's `GetAvailableToolNames` lists for a run with these features, in its order.
pub fn xprof_listed(features: &Features) -> Vec<&'static str> {
    TOOLS.iter().filter(|t| features.lists(t.listed)).map(|t| t.name).collect()
}

/// The tools oxprof's UI offers for a run with these features.
pub fn offered(features: &Features) -> Vec<&'static Tool> {
    TOOLS
        .iter()
        .filter(|t| match t.offered {
            Offered::AsXprof => t.available() && features.lists(t.listed),
            Offered::Always => t.available() && features.host_plane,
            Offered::PyTorch => t.available() && features.pytorch,
            Offered::No => false,
        })
        .collect()
}

/// The registry as JSON (`/oxprof/api/info`).
pub fn to_json() -> Value {
    Value::Array(
        TOOLS
            .iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name,
                    "aliases": t.aliases,
                    "title": t.title,
                    "summary": t.summary,
                    "family": t.family,
                    "hosts": t.hosts,
                    "page": t.page,
                    "content_type": t.content_type,
                    "available": t.available(),
                    "reference": t.reference,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_tools_or_say_why_not() {
        assert_eq!(resolve("tensorflow_stats").map(|t| t.name), Ok("framework_op_stats"));
        assert_eq!(resolve("overview_page^").map(|t| t.name), Ok("overview_page"));
        let unknown = resolve("nope").unwrap_err().to_string();
        assert!(
            unknown.starts_with("unknown tool \"nope\"; the tools are trace_viewer@, overview_page, "),
            "{unknown}"
        );
        // Tools XProf has and oxprof lacks are named as such, not listed as choices.
        for tool in TOOLS.iter().filter(|t| t.family == Family::NotYet) {
            assert!(!unknown.contains(tool.name), "{unknown}");
            assert_eq!(
                resolve(tool.name).unwrap_err().to_string(),
                format!("{:?} ({}) is not computed by this version of oxprof", tool.name, tool.title)
            );
        }
    }
}
