//! The registry's row type: what the registry knows of a tool (its name, family, host rule,
//! listing rules, UI page, body type, computation and reference), and the enums of its
//! columns. Each family module declares its own rows (`ROWS`) with it; the registry
//! ([`crate::registry`]) puts them together. It uses no other module of the API but the
//! request vocabulary, the catalog's run type and the session type its computations take.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::request::DataRequest;
use crate::session::Session;
use oxprof_model::XSpace;
use oxprof_model::schema::{
    GPU_PLANE_PREFIX, HOST_THREADS_PLANE_NAME, METADATA_PLANE_NAME, StatType, TPU_PLANE_PREFIX,
};
use oxprof_report::Report;
pub use oxprof_report::ToolId;
use oxprof_xprof::op_stats::OpStats;
use oxprof_xprof::op_stats::convert::StepSelection;
pub use oxprof_xprof::tools::hlo_stats::DeviceTool;
use serde::Serialize;
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

/// Computes a tool's answer for a request, when it may be a bare body
/// ([`crate::request::Answer::Body`]).
pub type AnswerWith = fn(&Session, &ServedRun, &DataRequest, bool) -> Result<crate::request::Answer, ApiError>;

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
    /// By the module of the tool's family, as a bare body (a trace's events, a binary
    /// protobuf) or a report.
    Answer(AnswerWith),
}

/// One tool.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// Its id: XProf's name (the `tag` of `/data`), typed.
    pub id: ToolId,
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
    /// Its place in XProf's frontend menu order (`_get_active_tools`; `None`: after those,
    /// alphabetically).
    pub menu: Option<u8>,
    /// What it shows when it is one of the device tools (their notes depend on it).
    pub device: Option<DeviceTool>,
    /// Parameters XProf's UI always sends with it, applied to HTTP requests without them.
    pub defaults: &'static [(&'static str, &'static str)],
    /// The tool that replaces it in `/run_tools` when both are listed.
    pub superseded_by: Option<ToolId>,
}

impl Tool {
    /// Whether oxprof computes it.
    pub fn available(&self) -> bool {
        self.compute.is_some()
    }

    /// XProf's name of it (the `tag` of `/data`).
    pub fn name(&self) -> &'static str {
        self.id.name()
    }

    /// Whether `name` names this tool.
    pub fn is(&self, name: &str) -> bool {
        self.id == name || self.aliases.contains(&name)
    }
}

/// The content type of the tools' JSON bodies.
pub const JSON: &str = "application/json";

/// The `resolution` XProf's UI asks `trace_viewer@` for (its default), applied to HTTP
/// requests without one.
pub const DEFAULT_TRACE_RESOLUTION: &str = "8000";

/// What a run's first host offers, for [`Listed`] and [`Offered`] (a pod's partials carry
/// it: a pod result lists its tools without the hosts' files).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Features {
    gpu: bool,
    hlo: bool,
    megascale: bool,
    counters: bool,
    pub(crate) host_plane: bool,
    pub(crate) pytorch: bool,
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

    pub(crate) fn lists(&self, listed: Listed) -> bool {
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
