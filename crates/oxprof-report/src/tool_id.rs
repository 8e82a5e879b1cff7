//! Tool identities: XProf's name of each tool, typed. This is the registry's id column
//! (`oxprof_api::registry::tools()` names each row by one of these, and its tests check that
//! every id has exactly one row), so that code naming a tool (the SQL tables built from a
//! tool's report, the diff's sections, the trace rows) says which with a checked constant
//! instead of a string. Strings become ids only at the edges, through the registry.

use serde::{Deserialize, Deserializer, Serialize};

/// One tool's identity (XProf's name, the `tag` of `/data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ToolId(&'static str);

impl ToolId {
    /// `trace_viewer@`.
    pub const TRACE_VIEWER_STREAMING: ToolId = ToolId("trace_viewer@");
    /// `overview_page`.
    pub const OVERVIEW_PAGE: ToolId = ToolId("overview_page");
    /// `input_pipeline_analyzer`.
    pub const INPUT_PIPELINE_ANALYZER: ToolId = ToolId("input_pipeline_analyzer");
    /// `framework_op_stats`.
    pub const FRAMEWORK_OP_STATS: ToolId = ToolId("framework_op_stats");
    /// `memory_profile`.
    pub const MEMORY_PROFILE: ToolId = ToolId("memory_profile");
    /// `op_profile`.
    pub const OP_PROFILE: ToolId = ToolId("op_profile");
    /// `hlo_stats`.
    pub const HLO_STATS: ToolId = ToolId("hlo_stats");
    /// `roofline_model`.
    pub const ROOFLINE_MODEL: ToolId = ToolId("roofline_model");
    /// `kernel_stats`.
    pub const KERNEL_STATS: ToolId = ToolId("kernel_stats");
    /// `memory_viewer`.
    pub const MEMORY_VIEWER: ToolId = ToolId("memory_viewer");
    /// `graph_viewer`.
    pub const GRAPH_VIEWER: ToolId = ToolId("graph_viewer");
    /// `megascale_stats`.
    pub const MEGASCALE_STATS: ToolId = ToolId("megascale_stats");
    /// `perf_counters`.
    pub const PERF_COUNTERS: ToolId = ToolId("perf_counters");
    /// `utilization_viewer`.
    pub const UTILIZATION_VIEWER: ToolId = ToolId("utilization_viewer");
    /// `pod_viewer`.
    pub const POD_VIEWER: ToolId = ToolId("pod_viewer");
    /// `tf_data_bottleneck_analysis`.
    pub const TF_DATA_BOTTLENECK_ANALYSIS: ToolId = ToolId("tf_data_bottleneck_analysis");
    /// `pytorch_overview`.
    pub const PYTORCH_OVERVIEW: ToolId = ToolId("pytorch_overview");
    /// `pytorch_op_stats`.
    pub const PYTORCH_OP_STATS: ToolId = ToolId("pytorch_op_stats");
    /// `pytorch_kernel_stats`.
    pub const PYTORCH_KERNEL_STATS: ToolId = ToolId("pytorch_kernel_stats");
    /// `pytorch_memory`.
    pub const PYTORCH_MEMORY: ToolId = ToolId("pytorch_memory");
    /// `pytorch_modules`.
    pub const PYTORCH_MODULES: ToolId = ToolId("pytorch_modules");
    /// `hta_distributed`.
    pub const HTA_DISTRIBUTED: ToolId = ToolId("hta_distributed");
    /// `hta_gpu_idle`.
    pub const HTA_GPU_IDLE: ToolId = ToolId("hta_gpu_idle");
    /// `trace_viewer`.
    pub const TRACE_VIEWER: ToolId = ToolId("trace_viewer");
    /// `module_list`.
    pub const MODULE_LIST: ToolId = ToolId("module_list");
    /// `smart_suggestion`.
    pub const SMART_SUGGESTION: ToolId = ToolId("smart_suggestion");
    /// `inference_profile`.
    pub const INFERENCE_PROFILE: ToolId = ToolId("inference_profile");

    /// Every id, in the registry's order: XProf's `GetAvailableToolNames` order, then
    /// oxprof's own tools, then the tools XProf names by URL only.
    pub const ALL: &'static [ToolId] = &[
        ToolId::TRACE_VIEWER_STREAMING,
        ToolId::OVERVIEW_PAGE,
        ToolId::INPUT_PIPELINE_ANALYZER,
        ToolId::FRAMEWORK_OP_STATS,
        ToolId::MEMORY_PROFILE,
        ToolId::OP_PROFILE,
        ToolId::HLO_STATS,
        ToolId::ROOFLINE_MODEL,
        ToolId::KERNEL_STATS,
        ToolId::MEMORY_VIEWER,
        ToolId::GRAPH_VIEWER,
        ToolId::MEGASCALE_STATS,
        ToolId::PERF_COUNTERS,
        ToolId::UTILIZATION_VIEWER,
        ToolId::POD_VIEWER,
        ToolId::TF_DATA_BOTTLENECK_ANALYSIS,
        ToolId::PYTORCH_OVERVIEW,
        ToolId::PYTORCH_OP_STATS,
        ToolId::PYTORCH_KERNEL_STATS,
        ToolId::PYTORCH_MEMORY,
        ToolId::PYTORCH_MODULES,
        ToolId::HTA_DISTRIBUTED,
        ToolId::HTA_GPU_IDLE,
        ToolId::TRACE_VIEWER,
        ToolId::MODULE_LIST,
        ToolId::SMART_SUGGESTION,
        ToolId::INFERENCE_PROFILE,
    ];

    /// The id of a tool outside this table: a registry row declared by a module built only
    /// with a feature (the example tool). The registry checks that no two rows share an id,
    /// so a declared id cannot shadow one of the table's.
    pub const fn declared(name: &'static str) -> ToolId {
        ToolId(name)
    }

    /// The id in the table named `name` (XProf's own name, no alias: the registry resolves
    /// those). For reading back what oxprof wrote (a diff's JSON).
    pub fn of_name(name: &str) -> Option<ToolId> {
        ToolId::ALL.iter().copied().find(|id| id.0 == name)
    }

    /// XProf's name of the tool.
    pub const fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for ToolId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Read back by name from the table (an unknown name is an error, never a new id).
impl<'de> Deserialize<'de> for ToolId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ToolId, D::Error> {
        let name = String::deserialize(deserializer)?;
        ToolId::of_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown tool {name:?}")))
    }
}

impl PartialEq<str> for ToolId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ToolId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_back_from_their_names_only() {
        for id in ToolId::ALL {
            let json = serde_json::to_string(id).unwrap();
            assert_eq!(serde_json::from_str::<ToolId>(&json).unwrap(), *id);
        }
        assert!(serde_json::from_str::<ToolId>("\"tensorflow_stats\"").is_err());
        assert!(serde_json::from_str::<ToolId>("\"no_such_tool\"").is_err());
    }

    #[test]
    fn ids_are_distinct() {
        let mut names: Vec<&str> = ToolId::ALL.iter().map(|id| id.name()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before);
    }
}
