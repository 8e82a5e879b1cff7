//! TPU grouping: XProf's `ConnectIntraThreadTPU` (step or module events are the only nodes
//! of a TPU plane; events of other lines lend them their context stats) and
//! `GroupTpuXPlaneEvents` (merge consecutive Steps-line events of one group, name them, and
//! give every other line's events the group of the overlapping grouping-line event).

use super::forest::Forest;
use super::kinds::{PlaneKinds, Span, StatKind, sparse_core_id, tensor_core_id};
use super::tables::NO_GROUP;
use oxprof_model::schema::{
    SPARSE_CORE_MODULE_LINE_NAME, SPARSE_CORE_STEP_LINE_NAME, STEP_LINE_NAME, XLA_MODULE_LINE_NAME,
};
use oxprof_model::{XLine, XPlane};
use std::collections::BTreeMap;

/// What `MergeHostSteps` did to a kept Steps-line event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergedStep {
    /// The event's duration after merging (`SetEndTimestampPs` of the last merged event).
    pub duration_ps: i64,
    /// `step_idle_time_ps` XProf set on it.
    pub step_idle_time_ps: i64,
    /// `device_offset_ps` / `device_duration_ps` XProf set when it merged device spans.
    pub device_span_ps: Option<(u64, u64)>,
}

/// XProf's `GetGroupingLineForTPU`: the (last) non-empty Steps line, else the (last)
/// non-empty module line.
pub(crate) fn grouping_line(plane: &XPlane) -> Option<usize> {
    let mut step = None;
    let mut module = None;
    for (i, line) in plane.lines.iter().enumerate() {
        if line.name == STEP_LINE_NAME || line.name == SPARSE_CORE_STEP_LINE_NAME {
            step = Some(i);
        } else if line.name == XLA_MODULE_LINE_NAME || line.name == SPARSE_CORE_MODULE_LINE_NAME {
            module = Some(i);
        }
    }
    let non_empty = |i: Option<usize>| i.filter(|&i| plane.lines[i].event_count() > 0);
    non_empty(step).or(non_empty(module))
}

/// `ConnectIntraThreadTPU`: grouping-line events become nodes (in file order); an event of
/// another line that a step includes gives that step its producer/consumer stats.
///
/// ```text
/// Steps      |step 0 (node)------|  |step 1 (node)-----|
/// XLA Ops      |op _p=3|  |op|         |op _c=9|
///              └─ step 0 produces 3    └─ step 1 consumes 9
/// ```
pub(crate) fn connect_intra_thread_tpu(forest: &mut Forest<'_>, plane_index: usize) {
    let space = forest.space;
    let plane = &space.planes[plane_index];
    let tc_id = tensor_core_id(&plane.name);
    if tc_id.is_none() && sparse_core_id(&plane.name).is_none() {
        return;
    }
    let Some(grouping) = grouping_line(plane) else { return };
    let base = forest.line_base[plane_index];
    let line = &plane.lines[grouping];
    let global = base + grouping as u32;
    let start = forest.node_count() as u32;
    let mut steps: Vec<(u32, Span)> = Vec::with_capacity(line.event_count());
    for event in line.events(plane) {
        let (node, facts) = forest.add_tpu_step_node(plane_index, global, line, event.index() as u32);
        forest.attribute_context(&facts, node);
        steps.push((node, Span::of(&event)));
    }
    forest.line_nodes[global as usize] = (start, forest.node_count() as u32);
    for (li, other) in plane.lines.iter().enumerate() {
        if li == grouping {
            continue;
        }
        let mut parent = 0usize;
        for event in other.events(plane) {
            let span = Span::of(&event);
            while steps.get(parent).is_some_and(|s| s.1.end() <= span.begin) {
                parent += 1;
            }
            let Some(&(node, step_span)) = steps.get(parent) else { break };
            if step_span.includes(span) {
                let facts = forest.facts_of(plane_index, other, event.index());
                forest.attribute_context(&facts, node);
            }
        }
    }
    if tc_id.is_some() {
        forest.tensor_core_steps.push(steps.into_iter().map(|s| s.0).collect());
    }
}

/// Per-plane results of `GroupTpuXPlaneEvents`.
#[derive(Debug, Default)]
pub(crate) struct TpuPlaneOutcome {
    /// `(line, event)` of Steps-line events `MergeHostSteps` removed.
    pub(crate) removed: Vec<(u32, u32)>,
    /// Kept Steps-line events it changed.
    pub(crate) merged: BTreeMap<(u32, u32), MergedStep>,
    /// Step names added by `AddGroupMetadataToStepEvents`.
    pub(crate) step_names: Vec<((u32, u32), String)>,
}

/// `GroupTpuXPlaneEvents` on one device plane, over its per-line dense group tables.
pub(crate) fn group_tpu_plane(
    plane: &XPlane,
    kinds: &PlaneKinds,
    groups: &mut [Vec<u32>],
    names: &BTreeMap<i64, super::forest::GroupBuild>,
) -> TpuPlaneOutcome {
    let mut outcome = TpuPlaneOutcome::default();
    let step_line = plane.lines.iter().rposition(|l| l.name == STEP_LINE_NAME || l.name == SPARSE_CORE_STEP_LINE_NAME);
    let Some(grouping) = grouping_line(plane) else { return outcome };
    // Effective spans of the grouping line after the merge (None: removed).
    let mut grouping_spans: Vec<Option<Span>> =
        plane.lines[grouping].events(plane).map(|e| Some(Span::of(&e))).collect();
    if let Some(step_line) = step_line {
        let line = &plane.lines[step_line];
        let (removed, merged) = merge_host_steps(plane, line, kinds, &groups[step_line]);
        if removed.len() < line.event_count() {
            for &e in &removed {
                outcome.removed.push((step_line as u32, e));
                if step_line == grouping
                    && let Some(s) = grouping_spans.get_mut(e as usize)
                {
                    *s = None;
                }
            }
        }
        for (&e, m) in &merged {
            outcome.merged.insert((step_line as u32, e), *m);
            if step_line == grouping
                && let Some(Some(s)) = grouping_spans.get_mut(e as usize)
            {
                s.duration = m.duration_ps as u64;
            }
        }
        // AddGroupMetadataToStepEvents (after RemoveEvents).
        if !names.is_empty() {
            for (e, &g) in groups[step_line].iter().enumerate() {
                let removed_here = outcome.removed.contains(&(step_line as u32, e as u32));
                if g != NO_GROUP
                    && !removed_here
                    && let Some(meta) = names.get(&i64::from(g))
                {
                    outcome.step_names.push(((step_line as u32, e as u32), meta.name.clone()));
                }
            }
        }
    }
    for li in 0..plane.lines.len() {
        if Some(li) == step_line {
            continue;
        }
        group_line(plane, grouping, &grouping_spans, groups, li);
    }
    outcome
}

/// `MergeHostSteps`: consecutive Steps-line events of one group become the first of them,
/// stretched to the end of the last; ungrouped events are dropped. Returns the removed
/// event indices and the changes to kept events.
///
/// ```text
/// before  |g0|g0 |g0|  |g1 |      |--| (no group)
/// after   |g0-------|  |g1 |
/// ```
fn merge_host_steps(
    plane: &XPlane,
    line: &XLine,
    kinds: &PlaneKinds,
    groups: &[u32],
) -> (Vec<u32>, BTreeMap<u32, MergedStep>) {
    let mut removed = Vec::new();
    let mut merged: BTreeMap<u32, MergedStep> = BTreeMap::new();
    let mut current: Option<(u32, u32)> = None; // (group, kept event)
    let mut device_span: Option<Span> = None;
    let mut idle: i64 = 0;
    for event in line.events(plane) {
        let index = event.index() as u32;
        let group = groups.get(index as usize).copied().unwrap_or(NO_GROUP);
        let scan = kinds.scan(&event);
        let step_idle = scan.get(StatKind::StepIdleTimePs).map(|v| v.int_or_uint() as i64);
        let device = match (scan.get(StatKind::DeviceOffsetPs), scan.get(StatKind::DeviceDurationPs)) {
            (Some(o), Some(d)) => Some(Span { begin: o.int_or_uint(), duration: d.int_or_uint() }),
            _ => None,
        };
        if group == NO_GROUP {
            current = None;
            idle = 0;
            removed.push(index);
        } else if current.map(|c| c.0) != Some(group) {
            current = Some((group, index));
            device_span = None;
            if let Some(v) = step_idle {
                idle = v;
            }
            if device.is_some() {
                device_span = device;
            }
            merged.insert(
                index,
                MergedStep { duration_ps: event.duration_ps(), step_idle_time_ps: idle, device_span_ps: None },
            );
        } else if let Some((_, kept)) = current {
            if let Some(v) = step_idle {
                idle = idle.wrapping_add(v);
            }
            let kept_ts = line.event(plane, kept as usize).timestamp_ps();
            if let Some(entry) = merged.get_mut(&kept) {
                if let Some(span) = device_span {
                    let expanded = span.expand_to_include(device.unwrap_or_else(|| Span::of(&event)));
                    device_span = Some(expanded);
                    entry.device_span_ps = Some((expanded.begin, expanded.duration));
                }
                entry.duration_ps = event.end_timestamp_ps().wrapping_sub(kept_ts);
                entry.step_idle_time_ps = idle;
            }
            removed.push(index);
        }
    }
    (removed, merged)
}

/// `GroupLine`: each event of `line` without a group gets the group of the grouping-line
/// event that overlaps it, found by XProf's forward-only `XEventContextTracker`.
fn group_line(plane: &XPlane, grouping: usize, spans: &[Option<Span>], groups: &mut [Vec<u32>], line_index: usize) {
    let line = &plane.lines[line_index];
    let mut tracker: Option<usize> = None; // XEventContextTracker::current_index_
    let mut cached: Option<(usize, Span)> = None; // GroupQueue::group_event_visitor_
    let mut cached_group = NO_GROUP;
    // Indices of the grouping line that survived MergeHostSteps, in order.
    let kept: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].is_some()).collect();
    for event in line.events(plane) {
        let span = Span::of(&event);
        if cached.is_none_or(|(_, s)| !s.overlaps(span)) {
            cached = None;
            let mut found = None;
            if let Some(k) = tracker
                && let Some(s) = kept.get(k).and_then(|&i| spans[i])
                && s.overlaps(span)
            {
                found = Some(k);
            }
            if found.is_none() {
                let mut k = tracker.map_or(0, |t| t + 1);
                while let Some(&i) = kept.get(k) {
                    let Some(s) = spans[i] else { break };
                    if s.begin > span.end() {
                        break;
                    }
                    if s.end() < span.begin {
                        k += 1;
                        continue;
                    }
                    tracker = Some(k);
                    if s.overlaps(span) {
                        found = Some(k);
                    }
                    break;
                }
            }
            cached_group = NO_GROUP;
            if let Some(k) = found
                && let Some(&i) = kept.get(k)
                && let Some(s) = spans[i]
            {
                cached = Some((i, s));
                cached_group = groups[grouping].get(i).copied().unwrap_or(NO_GROUP);
            }
        }
        if cached_group != NO_GROUP
            && let Some(slot) = groups[line_index].get_mut(event.index())
            && *slot == NO_GROUP
        {
            *slot = cached_group;
        }
    }
}
