//! Step grouping: which step (group) each event belongs to, as XProf's preprocessing
//! (`PreprocessSingleHostXSpace` → `PreprocessXPlane`, `GroupTfEvents` /
//! `GroupTpuEventsOSS`, the EventForest of `xla/tsl/profiler/utils/group_events.cc`, and
//! `ProcessUngroupedEvents` of the derived timelines) computes it.
//!
//! The model is read-only, so instead of adding `group_id`, `step_name` and `is_eager` stats
//! to events as XProf does, the results live in compact side tables addressed by
//! `(plane, line, event)` indexes. For XSpaces that are already grouped (every host and
//! device plane defines a `group_id` stat), the file's own stats are reported.
//!
//! Pipeline (each step a port of the XProf function named):
//! 1. `IsXSpaceGrouped` → [`EventGroups::from_file_stats`].
//! 2. `CheckLoopOp` → nothing is grouped.
//! 3. `PreprocessXPlane` mutators (`preprocess.rs`): their effect on context stats is
//!    computed, not applied (the threadpool `Region` mutator is ported but off: XProf
//!    2.24.2's step database matches only without it).
//! 4. The event forest (`forest.rs`, TPU planes in `tpu.rs`): intra-thread nesting,
//!    inter-thread connections, context groups, TF loops, root grouping, eager marking.
//! 5. `GroupTpuXPlaneEvents` (TPU only) and `ProcessUngroupedEvents` (GPU planes,
//!    `derived.rs`).
//!
//! This crate sits under both XProf's analyses (`oxprof-xprof`) and the trace viewer
//! (`oxprof-trace`), with the two primitives they share with it: framework op names
//! ([`tf_op`]) and libstdc++'s unstable sorts ([`cxx_sort`]). Pure functions of the model:
//! no IO.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod cxx_sort;
mod derived;
mod forest;
mod kinds;
mod preprocess;
mod tables;
pub mod tf_op;
mod tpu;

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

pub use tpu::MergedStep;

use forest::{Forest, NONE, NodeType};
use kinds::{EventKind, PlaneKinds, StatKind};
use oxprof_model::XSpace;
use oxprof_model::schema::{GPU_PLANE_PREFIX, TPU_PLANE_PREFIX, is_device_plane, is_host_plane};
use std::collections::{BTreeMap, BTreeSet};
use tables::{LineGroups, NO_GROUP, RunBuilder};

/// What XProf knows about one group (step).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupMetadata {
    /// Group name, e.g. `train 5`.
    pub name: String,
    /// Groups this one was reached from (sorted).
    pub parents: Vec<i64>,
    /// Groups reached from this one (sorted).
    pub children: Vec<i64>,
}

/// Group ids and derived per-event facts for one XSpace.
#[derive(Debug, Clone, Default)]
pub struct EventGroups {
    /// `[plane][line]` → group id of each event.
    group_ids: Vec<Vec<LineGroups>>,
    /// `[plane][line]` → sorted indexes of events with `is_eager` = 1.
    eager: Vec<Vec<Vec<u32>>>,
    /// Step names XProf adds, as `(plane, line, event)` → name.
    step_names: BTreeMap<(u32, u32, u32), String>,
    /// TPU Steps-line events `MergeHostSteps` removed.
    removed: BTreeSet<(u32, u32, u32)>,
    /// TPU Steps-line events `MergeHostSteps` changed.
    merged: BTreeMap<(u32, u32, u32), MergedStep>,
    /// Group metadata by group id.
    groups: BTreeMap<i64, GroupMetadata>,
    /// Whether grouping ran (false: already grouped, or skipped because of loop ops).
    computed: bool,
}

impl EventGroups {
    /// The group of an event.
    pub fn group_id(&self, plane: usize, line: usize, event: usize) -> Option<i64> {
        let id = self.group_ids.get(plane)?.get(line)?.get(event);
        (id != NO_GROUP).then_some(i64::from(id))
    }

    /// The groups of all events of a line, in event order (faster than [`Self::group_id`]
    /// per event for whole-line scans).
    pub fn line_group_ids(&self, plane: usize, line: usize) -> impl Iterator<Item = Option<i64>> + '_ {
        self.group_ids
            .get(plane)
            .and_then(|p| p.get(line))
            .into_iter()
            .flat_map(|l| l.iter())
            .map(|id| (id != NO_GROUP).then_some(i64::from(id)))
    }

    /// Whether an event was executed eagerly (XProf's `is_eager` stat).
    pub fn is_eager(&self, plane: usize, line: usize, event: usize) -> bool {
        self.eager
            .get(plane)
            .and_then(|p| p.get(line))
            .is_some_and(|events| events.binary_search(&(event as u32)).is_ok())
    }

    /// The `step_name` XProf gives a step root event (or a TPU Steps-line event).
    pub fn step_name(&self, plane: usize, line: usize, event: usize) -> Option<&str> {
        self.step_names.get(&(plane as u32, line as u32, event as u32)).map(String::as_str)
    }

    /// The step names of one line's events, as `(event, name)` in event order (for
    /// whole-line scans).
    pub fn line_step_names(&self, plane: usize, line: usize) -> impl Iterator<Item = (usize, &str)> + '_ {
        let (p, l) = (plane as u32, line as u32);
        self.step_names.range((p, l, 0)..=(p, l, u32::MAX)).map(|(&(_, _, e), name)| (e as usize, name.as_str()))
    }

    /// Whether XProf's `MergeHostSteps` removed this TPU Steps-line event.
    pub fn is_removed(&self, plane: usize, line: usize, event: usize) -> bool {
        self.removed.contains(&(plane as u32, line as u32, event as u32))
    }

    /// How XProf's `MergeHostSteps` changed this kept TPU Steps-line event (new duration,
    /// `step_idle_time_ps`, merged device span).
    pub fn merged_step(&self, plane: usize, line: usize, event: usize) -> Option<&MergedStep> {
        self.merged.get(&(plane as u32, line as u32, event as u32))
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

    /// Approximate heap bytes of the tables.
    pub fn heap_bytes(&self) -> usize {
        let lines: usize = self.group_ids.iter().flatten().map(LineGroups::heap_bytes).sum();
        let eager: usize = self.eager.iter().flatten().map(|e| e.capacity() * 4).sum();
        lines + eager + self.step_names.values().map(|s| s.len() + 48).sum::<usize>()
    }

    /// Reads the grouping a file already carries (`group_id`, `is_eager`, `step_name`
    /// stats). Used for already-grouped XSpaces.
    pub fn from_file_stats(space: &XSpace) -> EventGroups {
        let mut out = EventGroups::default();
        for (pi, plane) in space.planes.iter().enumerate() {
            let kinds = PlaneKinds::new(plane);
            let mut plane_ids = Vec::with_capacity(plane.lines.len());
            let mut plane_eager = Vec::with_capacity(plane.lines.len());
            for (li, line) in plane.lines.iter().enumerate() {
                let mut ids = RunBuilder::default();
                let mut eager = Vec::new();
                for event in line.events(plane) {
                    let scan = kinds.scan(&event);
                    let id = scan.get(StatKind::GroupId).and_then(|g| u32::try_from(g.int_value()).ok());
                    ids.push(id.unwrap_or(NO_GROUP));
                    if scan.get(StatKind::IsEager).is_some_and(|v| v.int_value() != 0) {
                        eager.push(event.index() as u32);
                    }
                    if let Some(name) = kinds.str_stat(&event, StatKind::StepName) {
                        out.step_names.insert((pi as u32, li as u32, event.index() as u32), name.to_string());
                    }
                }
                plane_ids.push(ids.finish());
                plane_eager.push(eager);
            }
            out.group_ids.push(plane_ids);
            out.eager.push(plane_eager);
        }
        out
    }

    /// No groups at all (grouping skipped).
    fn ungrouped(space: &XSpace) -> EventGroups {
        EventGroups {
            group_ids: space
                .planes
                .iter()
                .map(|p| p.lines.iter().map(|l| LineGroups::ungrouped(l.event_count())).collect())
                .collect(),
            eager: space.planes.iter().map(|p| vec![Vec::new(); p.lines.len()]).collect(),
            ..EventGroups::default()
        }
    }
}

/// Every host and device plane defines a `group_id` stat: the file carries its own grouping
/// everywhere grouping reads, so its stats are taken as they are and nothing is regrouped.
/// Stricter than XProf's `IsXSpaceGrouped` (any plane at all:
/// [`oxprof_model::schema::is_xspace_grouped`]), which decides whether XProf preprocesses.
pub fn every_plane_grouped(space: &XSpace) -> bool {
    space
        .planes
        .iter()
        .filter(|p| is_host_plane(&p.name) || is_device_plane(&p.name))
        .all(|p| p.stat_metadata().iter().any(|m| p.str(m.name) == "group_id"))
}

/// Whether any event can come out of grouping with `is_eager` set: the file carries its
/// own grouping (its `is_eager` stats), or an event is named `EagerExecute` (only below one
/// is an event eager). When false, what reads `is_eager` need not wait for the grouping.
pub fn may_have_eager_events(space: &XSpace) -> bool {
    every_plane_grouped(space)
        || space.planes.iter().any(|p| {
            p.event_metadata()
                .iter()
                .any(|m| kinds::resolve_event_name(p.str(m.name)).0 == EventKind::EagerKernelExecute)
        })
}

/// XProf's `CheckLoopOp`: any plane names a TF loop op in its event metadata.
fn has_loop_ops(space: &XSpace) -> bool {
    space
        .planes
        .iter()
        .any(|p| p.event_metadata().iter().any(|m| kinds::resolve_event_name(p.str(m.name)).0 == EventKind::LoopOp))
}

/// Groups the events of one host's XSpace into steps, as XProf's preprocessing does.
///
/// Memory: one node per event that can matter (roots, producer/consumer events, inter-
/// thread endpoints, `EagerExecute`, events with naming stats), ~14 bytes each, plus the
/// context key table while the forest is built; results are run-length encoded per line.
pub fn group_events(space: &XSpace) -> EventGroups {
    group_events_beside(space, || ()).0
}

/// [`group_events`], and `side` run on the core grouping leaves free: after the parallel
/// intra-thread sweep, the forest's graph steps run on one thread (inter-thread and
/// context edges, root processing), and `side` runs beside them. For work that does not
/// need the groups (e.g. the host op database when no event can be eager).
pub fn group_events_beside<T: Send>(space: &XSpace, side: impl FnOnce() -> T + Send) -> (EventGroups, T) {
    if every_plane_grouped(space) {
        return rayon::join(|| EventGroups::from_file_stats(space), side);
    }
    if has_loop_ops(space) {
        return rayon::join(|| EventGroups::ungrouped(space), side);
    }
    let is_tpu = space.planes.iter().any(|p| p.name.starts_with(TPU_PLANE_PREFIX));
    let mut forest = Forest::new(space);
    forest.connect_intra_thread();
    rayon::join(
        move || {
            forest.connect_inter_thread();
            let loop_roots = forest.process_tensorflow_loop();
            forest.finish_graph();
            forest.create_event_groups(loop_roots);
            layout(space, &mut forest, is_tpu)
        },
        side,
    )
}

/// The group runs of every line of a non-TPU plane without eager events, its lines' stack-
/// free ranges laid out in parallel and joined; `None` when a line was not swept in ranges
/// (threadpool regions).
fn parallel_line_groups(forest: &Forest<'_>, plane_index: usize) -> Option<Vec<LineGroups>> {
    use rayon::prelude::*;
    let plane = &forest.space.planes[plane_index];
    let base = forest.line_base[plane_index] as usize;
    let mut jobs = Vec::new();
    for (li, line) in plane.lines.iter().enumerate() {
        let cuts = &forest.line_cuts[base + li];
        if !forest.regions[base + li].is_empty() || (cuts.is_empty() && line.event_count() > 0) {
            return None;
        }
        jobs.extend(cuts.iter().map(|range| (li, range.clone())));
    }
    let runs: Vec<Vec<(u32, u32)>> =
        jobs.par_iter().map(|(li, range)| forest.anchor_group_runs(plane_index, *li, range.clone())).collect();
    let mut lines: Vec<Vec<(u32, u32)>> = vec![Vec::new(); plane.lines.len()];
    for ((li, _), chunk) in jobs.iter().zip(runs) {
        let line = &mut lines[*li];
        for run in chunk {
            if line.last().is_none_or(|&(_, g)| g != run.1) {
                line.push(run);
            }
        }
    }
    Some(
        lines
            .into_iter()
            .zip(&plane.lines)
            .map(|(runs, l)| LineGroups::from_runs(l.event_count() as u32, runs))
            .collect(),
    )
}

/// Lays the forest's groups out per line: the anchor sweep for non-TPU planes, TPU line
/// grouping for device planes of a TPU space, `ProcessUngroupedEvents` for GPU planes.
fn layout(space: &XSpace, forest: &mut Forest<'_>, is_tpu: bool) -> EventGroups {
    let mut out = EventGroups { computed: true, ..EventGroups::default() };
    out.step_names = std::mem::take(&mut forest.step_names);
    let no_eager = forest.has_no_eager_executes();
    for (pi, plane) in space.planes.iter().enumerate() {
        let post_process = plane.name.starts_with(GPU_PLANE_PREFIX) || (is_tpu && is_device_plane(&plane.name));
        if no_eager
            && !post_process
            && !plane.name.starts_with(TPU_PLANE_PREFIX)
            && let Some(lines) = parallel_line_groups(forest, pi)
        {
            out.group_ids.push(lines);
            out.eager.push(vec![Vec::new(); plane.lines.len()]);
            continue;
        }
        let mut plane_eager: Vec<Vec<u32>> = vec![Vec::new(); plane.lines.len()];
        let post_process = plane.name.starts_with(GPU_PLANE_PREFIX) || (is_tpu && is_device_plane(&plane.name));
        let mut dense: Vec<Vec<u32>> = Vec::new();
        let mut compact: Vec<LineGroups> = Vec::new();
        let tf_op: Vec<bool> = plane
            .event_metadata()
            .iter()
            .map(|m| kinds::resolve_event_name(plane.str(m.name)) == (EventKind::TfOpRun, true))
            .collect();
        for (li, line) in plane.lines.iter().enumerate() {
            let global = forest.line_base[pi] as usize + li;
            let count = line.event_count();
            let eager = &mut plane_eager[li];
            // Lines visited in file order stream into runs; others fill a dense table.
            let streaming =
                !post_process && forest.regions[global].is_empty() && !plane.name.starts_with(TPU_PLANE_PREFIX);
            let mut runs = RunBuilder::default();
            let mut ids = if streaming { Vec::new() } else { vec![NO_GROUP; count] };
            if plane.name.starts_with(TPU_PLANE_PREFIX) {
                let (start, end) = forest.line_nodes[global];
                for node in start..end {
                    let event = forest.node_event[node as usize] as usize;
                    if let Some(slot) = ids.get_mut(event) {
                        *slot = forest.group[node as usize];
                    }
                    if matches!(forest.node_type[node as usize], NodeType::KernelExecute | NodeType::TfOpRun)
                        && forest.is_eager(node)
                    {
                        eager.push(event as u32);
                    }
                }
            } else {
                forest.for_each_anchor(pi, li, |f, index, anchor| {
                    let index = index as usize;
                    if index >= count {
                        return; // a threadpool region: not in the model
                    }
                    let group = if anchor == NONE { NO_GROUP } else { f.group[anchor as usize] };
                    if streaming {
                        runs.push(group);
                    } else if let Some(slot) = ids.get_mut(index) {
                        *slot = group;
                    }
                    let (first, end) = f.line_nodes[global];
                    let is_node_here =
                        (first..end).contains(&anchor) && f.node_event[anchor as usize] as usize == index;
                    let marks_eager = if is_node_here {
                        matches!(f.node_type[anchor as usize], NodeType::KernelExecute | NodeType::TfOpRun)
                    } else {
                        tf_op.get(line.event(plane, index).metadata_id().index()).copied().unwrap_or(false)
                    };
                    if marks_eager && f.is_eager(anchor) {
                        eager.push(index as u32);
                    }
                });
                eager.sort_unstable();
            }
            if post_process {
                dense.push(ids);
            } else if streaming {
                compact.push(runs.finish());
            } else {
                compact.push(LineGroups::from_dense(ids));
            }
        }
        if post_process {
            if is_tpu && is_device_plane(&plane.name) {
                let tpu = tpu::group_tpu_plane(plane, &forest.kinds[pi], &mut dense, &forest.metadata);
                for (line, event) in tpu.removed {
                    out.removed.insert((pi as u32, line, event));
                }
                for ((line, event), merged) in tpu.merged {
                    out.merged.insert((pi as u32, line, event), merged);
                }
                for ((line, event), name) in tpu.step_names {
                    out.step_names.entry((pi as u32, line, event)).or_insert(name);
                }
            }
            if plane.name.starts_with(GPU_PLANE_PREFIX) {
                derived::process_ungrouped_events(plane, &mut dense);
            }
            compact = dense.into_iter().map(LineGroups::from_dense).collect();
        }
        out.group_ids.push(compact);
        out.eager.push(plane_eager);
    }
    out.groups = std::mem::take(&mut forest.metadata)
        .into_iter()
        .map(|(id, g)| {
            (
                id,
                GroupMetadata {
                    name: g.name,
                    parents: g.parents.into_iter().collect(),
                    children: g.children.into_iter().collect(),
                },
            )
        })
        .collect();
    out
}
