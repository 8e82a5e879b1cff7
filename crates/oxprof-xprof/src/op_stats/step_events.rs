//! XSpace → [`StepEvents`]: which markers delimit each step and what host threads and
//! device streams did during it (port of `xprof/convert/xplane_to_step_events.cc`), plus
//! the parts of XProf's preprocessing that the step database depends on for GPU profiles
//! that were not grouped when written (`ProcessUngroupedEvents` and
//! `DeriveStepEventsFromGroups` of `xprof/utils/derived_timeline.cc`), computed from
//! [`EventGroups`] instead of materialising stats and lines.
//!
//! Group ids always come from [`EventGroups`] (for already-grouped files it reports the
//! file's own `group_id` stats); every other stat is read from the event itself (not its
//! metadata), as XProf's `XEventVisitor` does.

use super::event_span::{
    EventType, EventTypeSpan, StepDetails, StepEvents, StepMarker, StepMarkerType, Timespan,
    intersect_combine_step_events_owned, union_combine_step_events_owned,
};
use super::types::{AllReduceInfo, OpMetricsDb};
use oxprof_grouping::EventGroups;
use oxprof_grouping::tf_op::{TfOpCategory, parse_tf_op_fullname};
use oxprof_model::schema::{
    SPARSE_CORE_OP_LINE_NAME, SPARSE_CORE_STEP_LINE_NAME, STEP_LINE_NAME, StatType, THREAD_ID_STEP_INFO,
    TPU_PLANE_PREFIX, is_derived_thread_id,
};
use oxprof_model::{Event, Stat, StatValue, XLine, XPlane, XSpace};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashSet};

/// Offset of SparseCore ids among core ids (`kSparseCoreIndexStart`).
pub const SPARSE_CORE_INDEX_START: u32 = 1_000_000;

/// Sentinel for "no group" in dense per-event tables.
const NO_GROUP: u32 = u32::MAX;

/// The TensorCore id of a TPU plane name (`/device:TPU:<n>`), as `GetTensorCoreId`.
pub fn tensor_core_id(plane_name: &str) -> Option<i32> {
    let digits = plane_name.strip_prefix(TPU_PLANE_PREFIX)?;
    // RE2 `([0-9]*)` into an int: empty or overflowing captures fail the match.
    if digits.bytes().all(|b| b.is_ascii_digit()) { digits.parse().ok() } else { None }
}

/// The SparseCore id of a plane name (`/device:TPU:<n> SparseCore[ <word>] <m>`), as
/// `GetSparseCoreId`.
pub fn sparse_core_id(plane_name: &str) -> Option<i32> {
    let rest = plane_name.strip_prefix(TPU_PLANE_PREFIX)?;
    let chip_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if chip_len == 0 {
        return None;
    }
    let rest = rest[chip_len..].strip_prefix(" SparseCore ")?;
    let rest = match rest.split_once(' ') {
        Some((word, id)) if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphabetic()) => id,
        Some(_) => return None,
        None => rest,
    };
    if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) { rest.parse().ok() } else { None }
}

/// XProf's `IsOpLineName`.
fn is_op_line_name(name: &str) -> bool {
    name == "XLA Ops" || name == "Framework Ops" || name == SPARSE_CORE_OP_LINE_NAME
}

/// `XStatVisitor::IntValue`: the int64 value; other kinds read as 0 (the proto default).
fn int_value(stat: &Stat<'_>) -> i64 {
    match stat.value {
        StatValue::Int64(x) => x,
        _ => 0,
    }
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// `ParseNumBytesFromMemcpyDetail`: the value after `num_bytes` in a `key:value` list
/// split on `:` and newlines; 0 when absent or not a number.
fn parse_num_bytes_from_memcpy_detail(detail: &str) -> u64 {
    let params: Vec<&str> = detail.split([':', '\n']).collect();
    for pair in params.chunks(2) {
        if pair[0] != "num_bytes" {
            continue;
        }
        // absl::SimpleAtoi: surrounding ASCII whitespace and a leading '+' are accepted.
        let text = pair.get(1).copied().unwrap_or("").trim_matches(|c: char| c.is_ascii_whitespace());
        return text.strip_prefix('+').unwrap_or(text).parse().unwrap_or(0);
    }
    0
}

/// What an event name alone says about a host event (cached per event metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostNameKind {
    /// `train…`, `test…` or `TraceContext…` without `/`: an explicit step marker.
    ExplicitMarker,
    /// Eager dispatch or `FunctionRun`: not real CPU compute.
    NotCompute,
    /// Infeed enqueue or host-to-device copy.
    HostToDevice,
    /// Host-to-host copy.
    HostToHost,
    /// Other compute; `executor_process` for `ExecutorState::Process…`,
    /// `iterator_get_next` for `IteratorGetNext…` (both case-insensitive).
    Compute { executor_process: bool, iterator_get_next: bool },
}

fn is_explicit_host_step_marker(name: &str) -> bool {
    (name.starts_with("train") || name.starts_with("test") || name.starts_with("TraceContext")) && !name.contains('/')
}

fn host_name_kind(name: &str) -> HostNameKind {
    if is_explicit_host_step_marker(name) {
        return HostNameKind::ExplicitMarker;
    }
    if ["EagerExecute", "EagerLocalExecute", "EagerKernelExecute", "FunctionRun"].iter().any(|p| name.starts_with(p)) {
        return HostNameKind::NotCompute;
    }
    let op = parse_tf_op_fullname(name);
    let infeed = op.category == TfOpCategory::TensorFlow && op.op_type.starts_with("InfeedEnqueue");
    if infeed || op.category == TfOpCategory::MemcpyHToD {
        HostNameKind::HostToDevice
    } else if op.category == TfOpCategory::MemcpyHToH {
        HostNameKind::HostToHost
    } else {
        HostNameKind::Compute {
            executor_process: starts_with_ignore_case(name, "ExecutorState::Process"),
            iterator_get_next: starts_with_ignore_case(name, "IteratorGetNext"),
        }
    }
}

/// `ClassifyCpuEvent` given the name's kind.
fn classify_cpu_event(kind: HostNameKind, has_device: bool, has_correlation_id: bool, root_stage: bool) -> EventType {
    match kind {
        HostNameKind::HostToDevice => EventType::HostToDevice,
        HostNameKind::HostToHost => EventType::HostToHost,
        HostNameKind::Compute { executor_process, iterator_get_next } => {
            if has_device && (has_correlation_id || executor_process) {
                EventType::HostPrepare
            } else if iterator_get_next || root_stage {
                EventType::HostWaitInput
            } else {
                EventType::HostCompute
            }
        }
        // Not classified: markers and non-compute events never become spans.
        HostNameKind::ExplicitMarker | HostNameKind::NotCompute => EventType::HostCompute,
    }
}

/// What a GPU event name alone says (cached per event metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GpuNameKind {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
    Collective,
    /// Compute; `half_name` when the name mentions `half` or `fp16`.
    Compute {
        half_name: bool,
    },
}

fn gpu_name_kind(name: &str) -> GpuNameKind {
    match parse_tf_op_fullname(name).category {
        TfOpCategory::MemcpyHToD => GpuNameKind::HostToDevice,
        TfOpCategory::MemcpyDToH => GpuNameKind::DeviceToHost,
        TfOpCategory::MemcpyDToD => GpuNameKind::DeviceToDevice,
        _ if starts_with_ignore_case(name, "nccl") => GpuNameKind::Collective,
        _ => GpuNameKind::Compute { half_name: name.contains("half") || name.contains("fp16") },
    }
}

/// `ClassifyGpuEvent`: copies by direction, NCCL collectives, else compute whose precision
/// comes from the tensor shapes if any, else from the kernel name.
fn classify_gpu_event(kind: GpuNameKind, tensor_shapes: &str) -> EventType {
    match kind {
        GpuNameKind::HostToDevice => EventType::HostToDevice,
        GpuNameKind::DeviceToHost => EventType::DeviceToHost,
        GpuNameKind::DeviceToDevice => EventType::DeviceToDevice,
        GpuNameKind::Collective => EventType::DeviceCollectives,
        GpuNameKind::Compute { half_name } => {
            let half = if tensor_shapes.is_empty() { half_name } else { tensor_shapes.contains("half") };
            if half { EventType::DeviceCompute16 } else { EventType::DeviceCompute32 }
        }
    }
}

/// A lazily filled per-event-metadata cache.
struct PerMetadata<T: Copy> {
    values: Vec<Option<T>>,
}

impl<T: Copy> PerMetadata<T> {
    fn new(plane: &XPlane) -> Self {
        PerMetadata { values: vec![None; plane.event_metadata().len()] }
    }

    fn get(&mut self, event: &Event<'_>, compute: impl FnOnce(&str) -> T) -> T {
        let index = event.metadata_id().index();
        match self.values.get_mut(index) {
            Some(Some(v)) => *v,
            Some(slot) => *slot.insert(compute(event.name())),
            None => compute(event.name()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Host threads.
// ---------------------------------------------------------------------------------------

/// Input-pipeline facts of an event on the ancestor stack of one host thread.
#[derive(Clone, Copy)]
struct PipelineRef {
    is_stage: bool,
    /// Descends from a pipeline stage (on this thread, or an async parent elsewhere).
    is_stage_descendant: bool,
    span: Timespan,
}

/// What every host thread of a plane is converted with.
#[derive(Clone, Copy)]
struct HostPlaneContext<'a> {
    plane_index: usize,
    plane: &'a XPlane,
    groups: &'a EventGroups,
    /// Keep only groups the device also ran (and classify launches as `HostPrepare`).
    device_step_events: Option<&'a StepEvents>,
    /// Producers `(_pt, _p)` of async work; `None` when the plane has no pipeline stages.
    async_pipeline_parents: Option<&'a HashSet<(u64, u64)>>,
}

/// Converts one host thread (`ConvertHostThreadsXLineToStepEvents`): every grouped event
/// becomes a step marker (explicit `train…` TraceMes, or step roots named by grouping) or
/// a typed span (real CPU work: compute, input wait, copies). With `device_step_events`,
/// only groups that also ran on the device are kept.
///
/// An event is a root input-pipeline stage (→ `HostWaitInput`) when it has an
/// `_ipl_stage_name` and neither an enclosing event on the thread nor an async producer
/// (matched by `_ct`/`_c` against another event's `_pt`/`_p`) is or descends from a stage.
fn host_line_step_events(
    ctx: &HostPlaneContext<'_>,
    line_index: usize,
    line: &XLine,
    range: std::ops::Range<usize>,
    kinds: &mut PerMetadata<HostNameKind>,
) -> StepEvents {
    let HostPlaneContext { plane_index, plane, groups, device_step_events, async_pipeline_parents } = *ctx;
    let mut result = StepEvents::new();
    let mut stack: Vec<PipelineRef> = Vec::new();
    let has_device = device_step_events.is_some();
    // Stats are read only when the plane has one this scan uses (most host events have
    // none of them); group ids and step names are walked along with the events.
    let reads_stats =
        async_pipeline_parents.is_some() || plane.stat_metadata_of_type(StatType::CorrelationId).is_some();
    let mut step_names = groups.line_step_names(plane_index, line_index).peekable();
    let line_groups = groups.line_group_ids(plane_index, line_index).chain(std::iter::repeat(None)).skip(range.start);
    let mut current: Option<(i64, &mut StepDetails)> = None;
    let events = range.map(|index| line.event(plane, index));
    for (event, group_id) in events.zip(line_groups) {
        while step_names.peek().is_some_and(|&(e, _)| e < event.index()) {
            step_names.next();
        }
        if group_id.is_none() && async_pipeline_parents.is_none() {
            continue; // Neither a step event nor on a thread whose pipeline stack matters.
        }
        let mut correlation_id = -1i64;
        let mut stage_name = "";
        let (mut consumer_type, mut consumer_id) = (None, None);
        if reads_stats {
            for stat in event.stats() {
                match stat.stat_type() {
                    Some(StatType::CorrelationId) => correlation_id = int_value(&stat),
                    Some(StatType::InputPipelineStageName) => stage_name = stat.as_str().unwrap_or(""),
                    Some(StatType::ConsumerType) => consumer_type = stat.as_u64(),
                    Some(StatType::ConsumerId) => consumer_id = stat.as_u64(),
                    _ => {}
                }
            }
        }
        // The pipeline stack only matters when the plane has pipeline stages at all.
        let mut root_stage = false;
        if let Some(parents) = async_pipeline_parents {
            let has_async_stage_parent = match (consumer_type, consumer_id) {
                (Some(t), Some(id)) => parents.contains(&(t, id)),
                _ => false,
            };
            let mut current = PipelineRef {
                is_stage: !stage_name.is_empty(),
                is_stage_descendant: has_async_stage_parent,
                span: Timespan::of_event(&event),
            };
            while stack.last().is_some_and(|parent| !parent.span.includes(&current.span)) {
                stack.pop();
            }
            if let Some(parent) = stack.last() {
                current.is_stage_descendant |= parent.is_stage_descendant || parent.is_stage;
            }
            stack.push(current);
            root_stage = current.is_stage && !current.is_stage_descendant;
        }

        let Some(group_id) = group_id else { continue };
        if group_id < 0 {
            continue;
        }
        if device_step_events.is_some_and(|d| !d.contains_key(&group_id)) {
            continue;
        }
        let step_name = match step_names.peek() {
            Some(&(e, name)) if e == event.index() => name,
            _ => "",
        };
        let kind = kinds.get(&event, host_name_kind);
        if kind == HostNameKind::NotCompute && step_name.is_empty() {
            continue;
        }
        let span = Timespan::of_event(&event);
        // Consecutive events mostly share a step: look the step up only when it changes.
        let details = match current.take() {
            Some((id, details)) if id == group_id => details,
            _ => result.entry(group_id).or_default(),
        };
        if kind == HostNameKind::ExplicitMarker {
            let marker = StepMarker { marker_type: StepMarkerType::ExplicitHost, core_id: None, span };
            details.add_marker(marker);
        } else if !step_name.is_empty() {
            let marker = StepMarker { marker_type: StepMarkerType::ImplicitHost, core_id: None, span };
            details.add_marker(marker);
        } else {
            let event_type = classify_cpu_event(kind, has_device, correlation_id >= 0, root_stage);
            details.add_event(EventTypeSpan { event_type, span });
        }
        if !step_name.is_empty() {
            details.set_step_name(step_name);
        }
        current = Some((group_id, details));
    }
    result
}

/// Events per piece when a host thread is scanned in parallel pieces.
const STEP_EVENTS_PIECE: usize = 1 << 18;

/// Converts the host-threads plane (`ConvertHostThreadsXPlaneToStepEvents`): the union of
/// all its threads' step events.
pub fn host_plane_step_events(
    space: &XSpace,
    plane_index: usize,
    groups: &EventGroups,
    device_step_events: Option<&StepEvents>,
) -> StepEvents {
    host_plane_step_events_in_pieces(space, plane_index, groups, device_step_events, STEP_EVENTS_PIECE)
}

/// [`host_plane_step_events`] with threads scanned in pieces of `piece` events.
fn host_plane_step_events_in_pieces(
    space: &XSpace,
    plane_index: usize,
    groups: &EventGroups,
    device_step_events: Option<&StepEvents>,
    piece: usize,
) -> StepEvents {
    let Some(plane) = space.planes.get(plane_index) else { return StepEvents::new() };
    // Producers of async input-pipeline work, needed only when the plane has stages.
    let async_pipeline_parents = plane.stat_metadata_of_type(StatType::InputPipelineStageName).map(|_| {
        let mut parents = HashSet::new();
        for event in plane.events() {
            let stats = event.stats();
            let producer_type = stats.get(StatType::ProducerType).and_then(|s| s.as_u64());
            let producer_id = stats.get(StatType::ProducerId).and_then(|s| s.as_u64());
            if let (Some(t), Some(id)) = (producer_type, producer_id) {
                parents.insert((t, id));
            }
        }
        parents
    });
    let ctx = HostPlaneContext {
        plane_index,
        plane,
        groups,
        device_step_events,
        async_pipeline_parents: async_pipeline_parents.as_ref(),
    };
    // Threads in parallel, long ones in pieces (without pipeline stages, events are
    // independent but for the merge of neighbouring spans, which the join replays).
    let mut pieces: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    for (line_index, line) in plane.lines.iter().enumerate() {
        let count = line.event_count();
        let piece = if async_pipeline_parents.is_some() { count.max(1) } else { piece.max(1) };
        let mut start = 0;
        loop {
            let end = count.min(start + piece);
            pieces.push((line_index, start..end));
            if end == count {
                break;
            }
            start = end;
        }
    }
    let scanned: Vec<StepEvents> = pieces
        .par_iter()
        .map_init(
            || PerMetadata::new(plane),
            |kinds, (line_index, range)| {
                host_line_step_events(&ctx, *line_index, &plane.lines[*line_index], range.clone(), kinds)
            },
        )
        .collect();
    let mut result = StepEvents::new();
    let mut thread = StepEvents::new();
    for (k, piece) in scanned.into_iter().enumerate() {
        for (id, details) in piece {
            match thread.get_mut(&id) {
                Some(existing) => existing.append_later_piece(details),
                None => {
                    thread.insert(id, details);
                }
            }
        }
        let line_ends = pieces.get(k + 1).is_none_or(|next| next.0 != pieces[k].0);
        if line_ends {
            union_combine_step_events_owned(std::mem::take(&mut thread), &mut result);
        }
    }
    result
}

// ---------------------------------------------------------------------------------------
// GPU planes of profiles grouped by the reader.
// ---------------------------------------------------------------------------------------

/// Group ids of one GPU plane's events as XProf's converters see them when XProf grouped
/// the profile itself, and the step markers of the `Steps` line it derives from them.
///
/// `ProcessUngroupedEvents`: events of all non-derived lines are visited in time order
/// (begin, then duration); an event without a group inherits the group of the latest
/// grouped event before it. `DeriveStepEventsFromGroups`: in the same order, consecutive
/// events of one group form one step marker spanning them; a group that comes back after
/// another group gets a new marker.
///
/// ```text
///   stream 1  [g1]   [  ]  [g2]        [g1]
///   stream 2      [g1]          [  ]
///   groups     g1  g1  g1  g2    g2     g1      (empty boxes inherit)
///   Steps     |--- 1 -----|--- 2 ----| |1|
/// ```
///
/// Ties in the sort are broken by line then event index (XProf's sort is unstable there).
#[derive(Debug, Clone, Default)]
pub struct GpuPlaneGroups {
    /// `[line][event]` → group id (`NO_GROUP` when none).
    ids: Vec<Vec<u32>>,
    /// Derived step markers `(group id, span)` in line order.
    steps: Vec<(i64, Timespan)>,
}

impl GpuPlaneGroups {
    /// Propagates group ids and derives step markers for one GPU plane.
    pub fn derive(plane_index: usize, plane: &XPlane, groups: &EventGroups) -> GpuPlaneGroups {
        let mut ids: Vec<Vec<u32>> = plane.lines.iter().map(|l| vec![NO_GROUP; l.event_count()]).collect();
        let mut any_group = false;
        // (begin, duration, line, event) of every event on a non-derived line.
        let mut order: Vec<(u64, u64, u32, u32)> = Vec::new();
        for (li, line) in plane.lines.iter().enumerate() {
            if is_derived_thread_id(line.id) {
                continue;
            }
            order.reserve(line.event_count());
            for event in line.events(plane) {
                let id = groups.group_id(plane_index, li, event.index()).and_then(|g| u32::try_from(g).ok());
                if let (Some(id), Some(slot)) = (id, ids.get_mut(li).and_then(|l| l.get_mut(event.index()))) {
                    *slot = id;
                    any_group = true;
                }
                let span = Timespan::of_event(&event);
                order.push((span.begin_ps, span.duration_ps, li as u32, event.index() as u32));
            }
        }
        if !any_group {
            return GpuPlaneGroups { ids, steps: Vec::new() };
        }
        order.sort_unstable();
        let mut latest = NO_GROUP;
        let mut steps: Vec<(i64, Timespan)> = Vec::new();
        for &(begin, duration, li, ei) in &order {
            let Some(slot) = ids.get_mut(li as usize).and_then(|l| l.get_mut(ei as usize)) else { continue };
            if *slot == NO_GROUP {
                *slot = latest;
            } else {
                latest = *slot;
            }
            if *slot == NO_GROUP {
                continue;
            }
            let group = i64::from(*slot);
            let span = Timespan::new(begin, duration);
            match steps.last_mut() {
                Some((g, step)) if *g == group => step.expand_to_include(&span),
                _ => steps.push((group, span)),
            }
        }
        GpuPlaneGroups { ids, steps }
    }

    /// The group of an event after propagation.
    pub fn group_id(&self, line: usize, event: usize) -> Option<i64> {
        let id = *self.ids.get(line)?.get(event)?;
        (id != NO_GROUP).then_some(i64::from(id))
    }

    /// The derived step markers `(group id, span)`.
    pub fn derived_steps(&self) -> &[(i64, Timespan)] {
        &self.steps
    }
}

// ---------------------------------------------------------------------------------------
// Device planes.
// ---------------------------------------------------------------------------------------

/// Hook for the per-core HLO op metrics of each TPU step: XProf's
/// `XEventsOpMetricsDbBuilder` fed with `FromXEvent`/`GetOpKeyFromXEvent`. The step code
/// runs the device-op stack (nesting by device timespan) and reports every op occurrence
/// with its inclusive and self time; the implementation turns them into an `OpMetricsDb`
/// (without total time and idle op: the step database adds those).
pub trait TpuOpMetricsBuilder {
    /// Accumulator for one (core, step).
    type Acc: Default;
    /// Adds one op occurrence.
    fn add_op(&self, acc: &mut Self::Acc, event: &Event<'_>, time_ps: u64, self_time_ps: u64);
    /// `XEventsOpMetricsDbBuilder::Finalize()`.
    fn finalize(&self, acc: Self::Acc) -> OpMetricsDb;
}

/// A [`TpuOpMetricsBuilder`] that records nothing (each TPU step gets empty per-core
/// databases): for callers that need only step times.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTpuOpMetrics;

impl TpuOpMetricsBuilder for NoTpuOpMetrics {
    type Acc = ();

    fn add_op(&self, _acc: &mut (), _event: &Event<'_>, _time_ps: u64, _self_time_ps: u64) {}

    fn finalize(&self, _acc: ()) -> OpMetricsDb {
        OpMetricsDb::default()
    }
}

/// `GetDeviceEventTimespan`: the device offset/duration stats when both are present,
/// else the event's own timespan.
pub fn device_event_timespan(event: &Event<'_>) -> Timespan {
    let stats = event.stats();
    match (stats.get(StatType::DeviceOffsetPs), stats.get(StatType::DeviceDurationPs)) {
        (Some(offset), Some(duration)) => Timespan::new(offset.as_u64().unwrap_or(0), duration.as_u64().unwrap_or(0)),
        _ => Timespan::of_event(event),
    }
}

/// Step markers of a step line (`ConvertDeviceStepInfoToStepMarkers`).
fn step_line_markers(
    plane_index: usize,
    line_index: usize,
    plane: &XPlane,
    line: &XLine,
    core_id: u32,
    groups: &EventGroups,
) -> StepEvents {
    let mut result = StepEvents::new();
    for event in line.events(plane) {
        if let Some(group_id) = groups.group_id(plane_index, line_index, event.index()) {
            let marker = StepMarker {
                marker_type: StepMarkerType::Device,
                core_id: Some(core_id),
                span: device_event_timespan(&event),
            };
            result.entry(group_id).or_default().add_marker(marker);
        }
    }
    result
}

/// Converts one GPU stream (`ConvertDeviceTraceXLineToStepEvents`): every event with a
/// correlation id and a group becomes a typed span of its step; collectives and copies are
/// also recorded per device.
fn gpu_line_step_events(
    device_id: u64,
    plane: &XPlane,
    line: &XLine,
    group_of: impl Fn(usize) -> Option<i64>,
    kinds: &mut PerMetadata<GpuNameKind>,
) -> StepEvents {
    let mut result = StepEvents::new();
    for event in line.events(plane) {
        let mut correlation_id = -1i64;
        let (mut tensor_shapes, mut memcpy_details) = ("", "");
        for stat in event.stats() {
            match stat.stat_type() {
                Some(StatType::CorrelationId) => correlation_id = int_value(&stat),
                Some(StatType::Shape) => tensor_shapes = stat.as_str().unwrap_or(""),
                Some(StatType::MemcpyDetails) => memcpy_details = stat.as_str().unwrap_or(""),
                _ => {}
            }
        }
        let group_id = group_of(event.index()).unwrap_or(-1);
        if correlation_id < 0 || group_id < 0 {
            continue;
        }
        let event_type = classify_gpu_event(kinds.get(&event, gpu_name_kind), tensor_shapes);
        let span = Timespan::of_event(&event);
        let step = result.entry(group_id).or_default();
        step.add_event(EventTypeSpan { event_type, span });
        match event_type {
            EventType::DeviceCollectives => {
                // XProf stores the end *offset* here, not the end timestamp.
                let info = AllReduceInfo {
                    start_time_ps: event.timestamp_ps() as u64,
                    end_time_ps: event.offset_ps().wrapping_add(event.duration_ps()) as u64,
                    ..Default::default()
                };
                step.add_collective_op_event(device_id, info);
            }
            EventType::HostToDevice | EventType::DeviceToDevice | EventType::DeviceToHost => {
                step.add_device_memory_transfer_event(
                    event_type,
                    span,
                    parse_num_bytes_from_memcpy_detail(memcpy_details),
                );
            }
            _ => {}
        }
    }
    result
}

/// `GetAllReduceInfo`: a TPU collective's id, device-clock span, all-reduce id and size.
fn all_reduce_info(event: &Event<'_>, unique_id: u64) -> AllReduceInfo {
    let stats = event.stats();
    let mut start = event.timestamp_ps() as u64;
    if let Some(offset) = stats.get(StatType::DeviceOffsetPs) {
        start = offset.as_u64().unwrap_or(0);
    }
    let mut end = event.end_timestamp_ps() as u64;
    if let Some(duration) = stats.get(StatType::DeviceDurationPs) {
        end = start.wrapping_add(duration.as_u64().unwrap_or(0));
    }
    AllReduceInfo {
        id: unique_id,
        name: String::new(),
        all_reduce_id: stats.get(StatType::AllReduceId).and_then(|s| s.as_u64()).unwrap_or(0),
        start_time_ps: start,
        end_time_ps: end,
        byte_size: event.metadata_stats().get(StatType::BytesAccessed).and_then(|s| s.as_u64()).unwrap_or(0),
    }
}

/// An open op on the device-op stack of a TPU core.
struct OpenOp<'a> {
    event: Event<'a>,
    span: Timespan,
    children_ps: u64,
    group_id: i64,
}

/// Converts a TPU op line (`ConvertTpuDeviceTraceXLineToStepEvents`): collectives per
/// step, and per step one `OpMetricsDb` for this core built from the device-op stack.
///
/// ```text
///   fusion.1  |------------------|        time 10, self 10-4-2 = 4
///   conv.2      |----|  |--|              time 4 and 2 (children of fusion.1)
/// ```
/// An op is a child of the innermost open op whose device timespan includes it; an op
/// is reported when the first op outside it arrives (or at the end).
fn tpu_line_step_events<B: TpuOpMetricsBuilder>(
    device_id: u64,
    plane_index: usize,
    line_index: usize,
    plane: &XPlane,
    line: &XLine,
    groups: &EventGroups,
    op_metrics: &B,
) -> StepEvents {
    let mut result = StepEvents::new();
    let mut builders: BTreeMap<i64, B::Acc> = BTreeMap::new();
    let mut stack: Vec<OpenOp<'_>> = Vec::new();
    let report = |op: OpenOp<'_>, builders: &mut BTreeMap<i64, B::Acc>| {
        let time_ps = op.span.duration_ps;
        op_metrics.add_op(
            builders.entry(op.group_id).or_default(),
            &op.event,
            time_ps,
            time_ps.wrapping_sub(op.children_ps),
        );
    };
    for event in line.events(plane) {
        let Some(group_id) = groups.group_id(plane_index, line_index, event.index()) else { continue };
        let span = device_event_timespan(&event);
        while stack.last().is_some_and(|top| !top.span.includes(&span)) {
            if let Some(top) = stack.pop() {
                report(top, &mut builders);
            }
        }
        if let Some(parent) = stack.last_mut() {
            parent.children_ps = parent.children_ps.wrapping_add(span.duration_ps);
        }
        stack.push(OpenOp { event, span, children_ps: 0, group_id });
        if let Some(unique_id) = event.stats().get(StatType::AllReduceUniqueId).and_then(|s| s.as_u64()) {
            result.entry(group_id).or_default().add_collective_op_event(device_id, all_reduce_info(&event, unique_id));
        }
    }
    while let Some(top) = stack.pop() {
        report(top, &mut builders);
    }
    for (group_id, acc) in builders {
        result.entry(group_id).or_default().set_per_core_op_metrics_db(op_metrics.finalize(acc), device_id as u32);
    }
    result
}

/// Converts one device plane (`ConvertDeviceTraceXPlaneToStepEvents`).
///
/// The step line (id `kThreadIdStepInfo`, or `Steps`/`Sparse Core Steps` on TPU core
/// planes) gives the step markers; derived lines are skipped; on TPU TensorCores the op
/// line, on SparseCores the SparseCore op line, elsewhere every stream gives step events.
/// Only steps that also have markers are kept. `pregrouped` says whether the file was
/// already grouped ([`oxprof_model::schema::is_xspace_grouped`]); if not, GPU planes get XProf's derived group
/// propagation and `Steps` line ([`GpuPlaneGroups`]).
pub fn device_plane_step_events<B: TpuOpMetricsBuilder>(
    space: &XSpace,
    plane_index: usize,
    groups: &EventGroups,
    pregrouped: bool,
    op_metrics: &B,
) -> StepEvents {
    let Some(plane) = space.planes.get(plane_index) else { return StepEvents::new() };
    let tpu_core = tensor_core_id(&plane.name).is_some();
    let sparse_core = sparse_core_id(&plane.name).is_some();
    let derived = (!pregrouped && plane.name.starts_with(oxprof_model::schema::GPU_PLANE_PREFIX))
        .then(|| GpuPlaneGroups::derive(plane_index, plane, groups));
    let plane_id = plane.id;
    let mut step_markers = StepEvents::new();
    let mut step_events = StepEvents::new();
    let mut gpu_kinds = PerMetadata::new(plane);
    for (li, line) in plane.lines.iter().enumerate() {
        if line.id == THREAD_ID_STEP_INFO
            || (tpu_core && line.name == STEP_LINE_NAME)
            || (sparse_core && line.name == SPARSE_CORE_STEP_LINE_NAME)
        {
            let mut core_id = plane_id as u32;
            if sparse_core {
                core_id = SPARSE_CORE_INDEX_START.wrapping_add(core_id);
            }
            step_markers = step_line_markers(plane_index, li, plane, line, core_id, groups);
        } else if is_derived_thread_id(line.id) {
            continue;
        } else if tpu_core {
            if is_op_line_name(&line.name) {
                step_events = tpu_line_step_events(plane_id as u64, plane_index, li, plane, line, groups, op_metrics);
            }
        } else if sparse_core {
            if line.name == SPARSE_CORE_OP_LINE_NAME {
                let device_id = i64::from(SPARSE_CORE_INDEX_START).wrapping_add(plane_id) as u64;
                step_events = tpu_line_step_events(device_id, plane_index, li, plane, line, groups, op_metrics);
            }
        } else {
            let stream = match &derived {
                Some(d) => gpu_line_step_events(plane_id as u64, plane, line, |ei| d.group_id(li, ei), &mut gpu_kinds),
                None => gpu_line_step_events(
                    plane_id as u64,
                    plane,
                    line,
                    |ei| groups.group_id(plane_index, li, ei),
                    &mut gpu_kinds,
                ),
            };
            union_combine_step_events_owned(stream, &mut step_events);
        }
    }
    if let Some(derived) = &derived {
        // XProf adds the derived markers to the plane's `kThreadIdStepInfo` line (a new
        // last line, or the file's own if it has one): after any markers read above.
        for &(group_id, span) in derived.derived_steps() {
            let marker = StepMarker { marker_type: StepMarkerType::Device, core_id: Some(plane_id as u32), span };
            step_markers.entry(group_id).or_default().add_marker(marker);
        }
    }
    if !step_events.is_empty() {
        intersect_combine_step_events_owned(step_markers, &mut step_events);
    }
    step_events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::event_span::{StepDetails, to_non_overlapped_step_events};
    use oxprof_model::schema::is_xspace_grouped;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_xspace::decode_xspace;

    /// Threads scanned in pieces (down to one event) give the step events of one scan, on
    /// every committed refkit profile and the external ones when present.
    #[test]
    fn pieces_join_to_the_whole_scan() {
        let mut files = Vec::new();
        collect_profiles(&oxprof_testkit::files::repo_root().join("testdata/profiles"), &mut files);
        collect_profiles(&oxprof_testkit::files::external_path(), &mut files);
        assert!(files.len() >= 5, "refkit profiles missing: {files:?}");
        for file in files {
            let space = oxprof_testkit::files::load_xspace(&file).unwrap();
            let groups = oxprof_grouping::group_events(&space);
            let Some(host) = space.planes.iter().position(|p| p.name == "/host:CPU") else { continue };
            let whole = host_plane_step_events_in_pieces(&space, host, &groups, None, usize::MAX);
            for piece in [1, 2, 7, 1000] {
                let pieces = host_plane_step_events_in_pieces(&space, host, &groups, None, piece);
                assert_eq!(pieces, whole, "{} in pieces of {piece}", file.display());
            }
        }
    }

    fn collect_profiles(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                collect_profiles(&path, out);
            } else if path.to_string_lossy().contains(".xplane.pb")
                && std::fs::metadata(&path).is_ok_and(|m| m.len() < 50 << 20)
            {
                out.push(path);
            }
        }
    }

    fn space(builder: XSpaceBuilder) -> XSpace {
        decode_xspace(&builder.to_bytes()).unwrap()
    }

    #[test]
    fn names_and_ids() {
        assert_eq!(THREAD_ID_STEP_INFO, -559038737);
        assert!(is_derived_thread_id(-559038737));
        assert!(is_derived_thread_id(-559038734));
        assert!(!is_derived_thread_id(123));
        assert!(is_derived_thread_id(0xdead_beef));
        assert_eq!(tensor_core_id("/device:TPU:3"), Some(3));
        assert_eq!(tensor_core_id("/device:TPU:3 SparseCore 0"), None);
        assert_eq!(sparse_core_id("/device:TPU:3 SparseCore 1"), Some(1));
        assert_eq!(sparse_core_id("/device:TPU:3 SparseCore Sc 12"), Some(12));
        assert_eq!(sparse_core_id("/device:TPU:3"), None);
        assert_eq!(parse_num_bytes_from_memcpy_detail("kind:HtoD\nnum_bytes:128"), 128);
        assert_eq!(parse_num_bytes_from_memcpy_detail("kind:HtoD num_bytes:128"), 0);
        assert_eq!(parse_num_bytes_from_memcpy_detail("num_bytes:128\nkind:HtoD"), 128);
        assert_eq!(parse_num_bytes_from_memcpy_detail("size:4 dest:6 async:1"), 0);
        assert_eq!(parse_num_bytes_from_memcpy_detail("num_bytes"), 0);
    }

    // python    |------ train 5 ------|         |-- train 6 --|
    //              |-op-| |-Iterator-|             |-op-|
    // (op: group 5; IteratorGetNextOp: group 5; second op: group 6; markers: 5, 6)
    #[test]
    fn host_thread_markers_and_spans() {
        let s = space(XSpaceBuilder::new().plane("/host:CPU", |p| {
            p.line(1, "python", 0, |l| {
                l.event("train 5", 0, 100).stat("group_id", 5i64);
                l.event("MatMul:MatMul", 10, 20).stat("group_id", 5i64);
                l.event("IteratorGetNextOp::DoCompute", 40, 30).stat("group_id", 5i64);
                l.event("EagerExecute: x", 75, 5).stat("group_id", 5i64);
                l.event("train 6", 200, 50).stat("group_id", 6i64);
                l.event("Add:AddV2", 210, 10).stat("group_id", 6i64);
                l.event("ungrouped", 220, 10);
            });
        }));
        let groups = EventGroups::from_file_stats(&s);
        let steps = host_plane_step_events(&s, 0, &groups, None);
        assert_eq!(steps.keys().copied().collect::<Vec<_>>(), [5, 6]);
        let five = &steps[&5];
        assert_eq!(five.markers().len(), 1);
        assert_eq!(five.step_time(), Timespan::new(0, 100));
        let types: Vec<EventType> = five.events().iter().map(|e| e.event_type).collect();
        assert_eq!(types, [EventType::HostCompute, EventType::HostWaitInput]);
        // Device filter: only groups the device also ran.
        let device: StepEvents = [(6, StepDetails::default())].into();
        let filtered = host_plane_step_events(&s, 0, &groups, Some(&device));
        assert_eq!(filtered.keys().copied().collect::<Vec<_>>(), [6]);
    }

    // Implicit markers: a grouped root with a step_name is a marker and names the step.
    #[test]
    fn implicit_markers_name_the_step() {
        let s = space(XSpaceBuilder::new().plane("/host:CPU", |p| {
            p.line(1, "t", 0, |l| {
                l.event("__inference_train_function_123", 0, 100).stat("group_id", 2i64).stat("step_name", "2");
                l.event("MatMul:MatMul", 10, 20).stat("group_id", 2i64);
            });
        }));
        let groups = EventGroups::from_file_stats(&s);
        let steps = host_plane_step_events(&s, 0, &groups, None);
        assert_eq!(steps[&2].step_name(), "2");
        assert_eq!(steps[&2].markers()[0].marker_type, StepMarkerType::ImplicitHost);
        assert_eq!(steps[&2].events().len(), 1);
    }

    // Input pipeline: a root stage waits for input; a nested stage does not count again,
    // and neither does a stage whose async producer is itself a stage.
    // t1  |--stage A (root)--|     |--stage C (async child of B)--|
    //        |-stage A2-|
    // t2                  |--B (stage, producer 7/9)--|
    #[test]
    fn input_pipeline_root_stages_wait_for_input() {
        let s = space(XSpaceBuilder::new().plane("/host:CPU", |p| {
            p.line(1, "t1", 0, |l| {
                l.event("Map", 0, 100).stat("group_id", 1i64).stat("_ipl_stage_name", "A");
                l.event("MapInner", 10, 20).stat("group_id", 1i64).stat("_ipl_stage_name", "A2");
                l.event("Batch", 200, 50)
                    .stat("group_id", 1i64)
                    .stat("_ipl_stage_name", "C")
                    .stat("_ct", 7i64)
                    .stat("_c", 9u64);
            });
            p.line(2, "t2", 0, |l| {
                l.event("Prefetch", 100, 60).stat("_ipl_stage_name", "B").stat("_pt", 7u64).stat("_p", 9i64);
                l.event("train 1", 0, 300).stat("group_id", 1i64);
            });
        }));
        let groups = EventGroups::from_file_stats(&s);
        let steps = host_plane_step_events(&s, 0, &groups, None);
        let types: Vec<EventType> = steps[&1].events().iter().map(|e| e.event_type).collect();
        assert_eq!(types, [EventType::HostWaitInput, EventType::HostCompute, EventType::HostCompute]);
    }

    // GPU stream, pre-grouped file with its own Steps line.
    // Steps        |------ 0 ------|
    // stream 1     |k(half)| |copy|   |k2 (group 1, no marker)|
    #[test]
    fn gpu_pregrouped_steps_line_and_streams() {
        let s = space(XSpaceBuilder::new().plane("/device:GPU:0", |p| {
            p.id(3);
            p.line(1, "Stream #1", 0, |l| {
                l.event("volta_h884gemm", 0, 40).stat("group_id", 0i64).stat("correlation_id", 1u64);
                l.event("MemcpyHToD", 50, 30)
                    .stat("group_id", 0i64)
                    .stat("correlation_id", 2u64)
                    .stat("memcpy_details", "num_bytes:64");
                l.event("fp16_kernel", 200, 10).stat("group_id", 1i64).stat("correlation_id", 3u64);
                l.event("no_correlation", 60, 5).stat("group_id", 0i64);
            });
            p.line(THREAD_ID_STEP_INFO, "Steps", 0, |l| {
                l.event("0", 0, 100).stat("group_id", 0i64);
            });
        }));
        let groups = EventGroups::from_file_stats(&s);
        assert!(is_xspace_grouped(&s));
        let steps = device_plane_step_events(&s, 0, &groups, true, &NoTpuOpMetrics);
        assert_eq!(steps.keys().copied().collect::<Vec<_>>(), [0]);
        let zero = &steps[&0];
        assert_eq!(zero.markers()[0].core_id, Some(3));
        let types: Vec<EventType> = zero.events().iter().map(|e| e.event_type).collect();
        assert_eq!(types, [EventType::DeviceCompute32, EventType::HostToDevice]);
        assert_eq!(zero.device_memory_transfers()[0].bytes_transferred, 64);
        let non_overlapped = to_non_overlapped_step_events(&steps);
        assert_eq!(non_overlapped[&0].events().len(), 3);
    }

    // GPU, grouped by the reader: ungrouped events inherit the latest group in time order,
    // and the derived Steps line has one marker per run of a group.
    // stream 1   [g1 0-10]          [-- 30-40]         [g1 70-80]
    // stream 2           [-- 12-20]           [g2 50-60]
    // → ids      g1        g1        g1        g2       g1
    // Steps      |1: 0-40           |2: 50-60|         |1: 70-80|
    #[test]
    fn gpu_derived_groups_and_steps() {
        let s = space(XSpaceBuilder::new().plane("/device:GPU:0", |p| {
            p.line(1, "s1", 0, |l| {
                l.event("k", 0, 10).stat("correlation_id", 1i64).stat("is_eager", 0i64);
                l.event("k", 30, 10).stat("correlation_id", 2i64);
                l.event("k", 70, 10).stat("correlation_id", 3i64);
            });
            p.line(2, "s2", 0, |l| {
                l.event("k", 12, 8).stat("correlation_id", 4i64);
                l.event("k", 50, 10).stat("correlation_id", 5i64);
            });
        }));
        // Simulate the reader's grouping with file stats on a copy that has them.
        let grouped = space(XSpaceBuilder::new().plane("/device:GPU:0", |p| {
            p.line(1, "s1", 0, |l| {
                l.event("k", 0, 10).stat("group_id", 1i64);
                l.event("k", 30, 10);
                l.event("k", 70, 10).stat("group_id", 1i64);
            });
            p.line(2, "s2", 0, |l| {
                l.event("k", 12, 8);
                l.event("k", 50, 10).stat("group_id", 2i64);
            });
        }));
        let groups = EventGroups::from_file_stats(&grouped);
        let derived = GpuPlaneGroups::derive(0, &s.planes[0], &groups);
        assert_eq!(derived.group_id(0, 1), Some(1));
        assert_eq!(derived.group_id(1, 0), Some(1));
        assert_eq!(
            derived.derived_steps(),
            [(1, Timespan::new(0, 40)), (2, Timespan::new(50, 10)), (1, Timespan::new(70, 10))]
        );
        let steps = device_plane_step_events(&s, 0, &groups, false, &NoTpuOpMetrics);
        assert_eq!(steps[&1].markers().len(), 2);
        assert_eq!(steps[&1].step_time(), Timespan::new(0, 40));
        assert_eq!(steps[&1].events().len(), 4);
        assert_eq!(steps[&2].events().len(), 1);
    }

    /// Records `(event name, group, time, self time)` per op.
    struct Recorder;
    impl TpuOpMetricsBuilder for Recorder {
        type Acc = Vec<(String, u64, u64)>;
        fn add_op(&self, acc: &mut Self::Acc, event: &Event<'_>, time_ps: u64, self_time_ps: u64) {
            acc.push((event.name().to_string(), time_ps, self_time_ps));
        }
        fn finalize(&self, acc: Self::Acc) -> OpMetricsDb {
            let metrics_db = acc
                .into_iter()
                .map(|(name, time_ps, self_time_ps)| crate::op_stats::OpMetrics {
                    name,
                    time_ps,
                    self_time_ps,
                    ..Default::default()
                })
                .collect();
            OpMetricsDb { metrics_db, ..Default::default() }
        }
    }

    // TPU core: Steps line gives markers; XLA Ops gives per-step op metrics by nesting.
    // Steps     |---- 1 ----|  |-- 2 --|
    // XLA Ops   |fusion-----|  |conv|         (fusion contains add and mul)
    //             |add||mul|
    #[test]
    fn tpu_core_steps_with_op_stack() {
        let s = space(XSpaceBuilder::new().plane("/device:TPU:0", |p| {
            p.id(7);
            p.line(1, "Steps", 0, |l| {
                l.event("1", 0, 100).stat("group_id", 1i64);
                l.event("2", 200, 50).stat("group_id", 2i64);
            });
            p.line(2, "XLA Ops", 0, |l| {
                l.event("fusion", 0, 100).stat("group_id", 1i64);
                l.event("add", 10, 20).stat("group_id", 1i64);
                l.event("mul", 40, 30).stat("group_id", 1i64).stat("all_reduce_unique_id", 9u64);
                l.event("conv", 200, 40).stat("group_id", 2i64);
                l.event("conv", 300, 40).stat("group_id", 3i64);
            });
        }));
        let groups = EventGroups::from_file_stats(&s);
        let steps = device_plane_step_events(&s, 0, &groups, true, &Recorder);
        assert_eq!(steps.keys().copied().collect::<Vec<_>>(), [1, 2]);
        let ops: Vec<(&str, u64, u64)> = steps[&1].per_core_op_metrics_db()[&7]
            .metrics_db
            .iter()
            .map(|m| (m.name.as_str(), m.time_ps, m.self_time_ps))
            .collect();
        assert_eq!(ops, [("add", 20, 20), ("mul", 30, 30), ("fusion", 100, 50)]);
        assert_eq!(steps[&1].collectives()[&7].all_reduce_info[0].id, 9);
        assert_eq!(steps[&2].markers()[0].core_id, Some(7));
    }
}
