//! What `diff` compares: one run's typed reports ([`RunReports`]), and where they came
//! from ([`Source`]).
//!
//! This is the seam for every kind of profile: the API layer fills it from an XSpace run
//! through the tool registry's analyses, a saved summary ([`crate::summary`]) stores it as
//! it is, and an importer of another format (PyTorch traces: per-step times as an
//! `OverviewPage`'s step details, operators as `FrameworkOpStats` rows, CUDA kernels as
//! `KernelStats` rows) plugs in by filling the same reports. Nothing in the comparison
//! knows which format a report came from.

use oxprof_analysis::tools::{
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
        self
    }
}

/// Where a run's reports came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
