//! Step grouping: which step (group) each event belongs to, as XProf's preprocessing
//! (`PreprocessSingleHostXSpace` → `GroupTfEvents` / `GroupTpuEventsOSS`, the EventForest of
//! `xla/tsl/profiler/utils/group_events.cc`) computes it.
//!
//! The model is read-only, so instead of adding `group_id`, `step_name` and `is_eager` stats
//! to events as XProf does, the results live in side tables addressed by
//! `(plane, line, event)` indexes. For XSpaces that are already grouped (they carry
//! `group_id` stats), the file's own stats are reported.

use oxprof_format::{XSpace, schema::StatType};
use std::collections::BTreeMap;

/// Sentinel for "no group" in the dense tables.
const NO_GROUP: u32 = u32::MAX;

/// What XProf knows about one group (step).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupMetadata {
    /// Group name, e.g. `train 5`.
    pub name: String,
    /// Groups this one was reached from.
    pub parents: Vec<i64>,
    /// Groups reached from this one.
    pub children: Vec<i64>,
}

/// Group ids and derived per-event facts for one XSpace.
#[derive(Debug, Clone, Default)]
pub struct EventGroups {
    /// `[plane][line][event]` → group id (`NO_GROUP` when none).
    group_ids: Vec<Vec<Vec<u32>>>,
    /// Events marked eagerly executed (`is_eager` = 1), as `(plane, line, event)`.
    eager: std::collections::HashSet<(u32, u32, u32)>,
    /// Step names XProf adds to non-implicit roots, as `(plane, line, event)` → name.
    step_names: BTreeMap<(u32, u32, u32), String>,
    /// Group metadata by group id.
    groups: BTreeMap<i64, GroupMetadata>,
    /// Whether grouping ran (false: already grouped, or skipped because of loop ops).
    computed: bool,
}

impl EventGroups {
    /// The group of an event.
    pub fn group_id(&self, plane: usize, line: usize, event: usize) -> Option<i64> {
        let id = *self.group_ids.get(plane)?.get(line)?.get(event)?;
        (id != NO_GROUP).then_some(i64::from(id))
    }

    /// Whether an event was executed eagerly (XProf's `is_eager` stat).
    pub fn is_eager(&self, plane: usize, line: usize, event: usize) -> bool {
        self.eager.contains(&(plane as u32, line as u32, event as u32))
    }

    /// The `step_name` XProf gives a step root event.
    pub fn step_name(&self, plane: usize, line: usize, event: usize) -> Option<&str> {
        self.step_names.get(&(plane as u32, line as u32, event as u32)).map(String::as_str)
    }

    /// Group metadata by group id.
    pub fn groups(&self) -> &BTreeMap<i64, GroupMetadata> {
        &self.groups
    }

    /// Whether oxprof computed the grouping (false when the file was already grouped or
    /// grouping was skipped).
    pub fn computed(&self) -> bool {
        self.computed
    }

    /// Reads the grouping a file already carries (`group_id`, `is_eager`, `step_name`
    /// stats). Used for already-grouped XSpaces.
    pub fn from_file_stats(space: &XSpace) -> EventGroups {
        let mut out = EventGroups::default();
        for (pi, plane) in space.planes.iter().enumerate() {
            let mut plane_ids = Vec::with_capacity(plane.lines.len());
            for (li, line) in plane.lines.iter().enumerate() {
                let mut ids = vec![NO_GROUP; line.event_count()];
                for (ei, event) in line.events(plane).enumerate() {
                    for stat in event.stats() {
                        match stat.stat_type() {
                            Some(StatType::GroupId) => {
                                if let Some(g) = stat.as_i64().and_then(|g| u32::try_from(g).ok()) {
                                    ids[ei] = g;
                                }
                            }
                            Some(StatType::IsEager) if stat.as_i64().unwrap_or(0) != 0 => {
                                out.eager.insert((pi as u32, li as u32, ei as u32));
                            }
                            Some(StatType::StepName) => {
                                if let Some(s) = stat.as_str() {
                                    out.step_names.insert((pi as u32, li as u32, ei as u32), s.to_string());
                                }
                            }
                            _ => {}
                        }
                    }
                }
                plane_ids.push(ids);
            }
            out.group_ids.push(plane_ids);
        }
        out
    }
}

/// Groups the events of one host's XSpace into steps, as XProf's preprocessing does.
pub fn group_events(space: &XSpace) -> EventGroups {
    // Placeholder until the EventForest port lands: already-grouped files only.
    EventGroups::from_file_stats(space)
}
