//! What `diff` compares: one run's typed reports ([`RunReports`]), and where they came
//! from ([`Source`]).
//!
//! This is the seam for every kind of profile: the API layer fills it from an XSpace run
//! through the tool registry's analyses, a saved summary ([`crate::summary`]) stores it as
//! it is, and an importer of another format plugs in by filling the same reports.
//!
//! PyTorch runs (Kineto traces) also carry torch-tb-profiler's views: `pytorch_overview`
//! (per-step breakdown from `ProfilerStep#N`, which XProf's step database does not
//! recognise) and `pytorch_op_stats` (ATen operators, which are not XProf framework ops).
//! When both sides have them, the comparison takes steps and framework ops from them
//! instead ([`crate::steps::compare_pytorch`], [`crate::ops`]).

use oxprof_pytorch::{operators::PytorchOpStats, overview::PytorchOverview};
use oxprof_xprof::tools::{
    framework_op_stats::FrameworkOpStats, hlo_stats::HloStats, kernel_stats::KernelStats,
    memory_profile::MemoryProfile, overview_page::OverviewPage,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One run's reports, as the tools compute them for one host selection. A report a run
/// does not have (no device, no allocator events) is `None` or empty, and the sections
/// reading it are left out of the comparison with a note.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunReports {
    /// `overview_page` (steps: XProf's selection, first and last dropped when there are
    /// more than five): the per-step breakdown and, in `input_analysis`, the input
    /// pipeline analysis (`input_pipeline_analyzer`'s report).
    #[serde(default)]
    pub overview_page: Option<OverviewPage>,
    /// `framework_op_stats` (every step).
    #[serde(default)]
    pub framework_op_stats: Option<FrameworkOpStats>,
    /// `kernel_stats` (every step).
    #[serde(default)]
    pub kernel_stats: Option<KernelStats>,
    /// `hlo_stats` (every step).
    #[serde(default)]
    pub hlo_stats: Option<HloStats>,
    /// `memory_profile` of each host that recorded allocator events, by host name.
    #[serde(default)]
    pub memory_profile: BTreeMap<String, MemoryProfile>,
    /// How many steps the op tables' totals span (every step found), so that runs
    /// profiled for different numbers of steps are compared per step; `None` or 0: the
    /// totals are compared as they are.
    #[serde(default)]
    pub op_table_steps: Option<u64>,
    /// `pytorch_overview` of a PyTorch run (one worker's trace): every `ProfilerStep#N`
    /// with torch-tb-profiler's breakdown. Absent for XSpace runs (and left out of their
    /// summaries, which stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pytorch_overview: Option<PytorchOverview>,
    /// `pytorch_op_stats` of a PyTorch run (the same worker): operators by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pytorch_op_stats: Option<PytorchOpStats>,
    /// What the API layer left out while filling these reports (a PyTorch run of several
    /// workers: only the first one's PyTorch views); the comparison repeats them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl RunReports {
    /// The reports as a summary file keeps them: what the comparison reads. Memory
    /// profiles keep each allocator's summary (peaks, fragmentation) without its timeline
    /// and live allocations; framework op stats keep the table with IDLE (the comparison
    /// leaves IDLE out itself), not its copy without.
    pub fn for_summary(mut self) -> RunReports {
        for profile in self.memory_profile.values_mut() {
            for allocator in profile.allocators.values_mut() {
                allocator.snapshots.clear();
                allocator.sampled_timeline.clear();
                allocator.active_allocations.clear();
                allocator.special_allocations.clear();
            }
            profile.strings.truncate(1);
        }
        if let Some(stats) = &mut self.framework_op_stats {
            stats.without_idle.clear();
        }
        // The comparison reads operators by name only.
        if let Some(stats) = &mut self.pytorch_op_stats {
            stats.by_name_input.clear();
            stats.by_name_stack.clear();
        }
        self
    }
}

/// Where a run's reports came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Source {
    /// The profile as the user named it: a path (CLI) or a run name (server).
    pub path: String,
    /// The run's name.
    pub run: String,
    /// The host selection: a host name or `ALL_HOSTS`.
    pub host: String,
    /// The hosts read.
    pub hosts: Vec<String>,
    /// The saved summary the reports were read from (`None`: computed from the profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl Source {
    /// What people read for this side: `path (run R, host H)`, and the summary file when
    /// the reports came from one.
    pub fn label(&self) -> String {
        let mut label = self.path.clone();
        let mut facts = Vec::new();
        if !self.run.is_empty() && !self.path.ends_with(&self.run) {
            facts.push(format!("run {}", self.run));
        }
        if !self.host.is_empty() {
            facts.push(format!("host {}", self.host));
        }
        if !facts.is_empty() {
            label.push_str(&format!(" ({})", facts.join(", ")));
        }
        if let Some(summary) = &self.summary {
            label = format!("{summary}: summary of {label}");
        }
        label
    }
}
