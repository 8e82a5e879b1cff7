//! The effect of XProf's `PreprocessXPlane` mutators (`xla/tsl/profiler/utils/
//! preprocess_xplane.{h,cc}`) on grouping, computed instead of applied (the model is
//! read-only): the TraceMe-2 context stats (`_r`, `_pt`/`_p`, `_ct`/`_c`) each event has
//! after the mutators ran, and the `ThreadpoolListener::Region` events the threadpool line
//! mutator adds.
//!
//! Context ids the mutators compute with `absl::HashOf(stats…)` are represented by the hashed
//! tuple itself ([`ContextId::Tuple`]): grouping only compares ids for equality, and two
//! tuples hash equal exactly when they are equal (hash collisions aside).

use super::kinds::{EventKind, PlaneKinds, RawValue, StatKind, StatScan};
use super::kinds::{parse_device_ordinal, tensor_core_id};
use oxprof_model::schema::{TPU_PLANE_PREFIX, XLA_MODULE_LINE_NAME};
use oxprof_model::{Event, XLine, XPlane};

/// `ContextType::kLegacy`.
const CONTEXT_LEGACY: i32 = 1;
/// `ContextType::kTpuStream`.
const CONTEXT_TPU_STREAM: i32 = 11;
/// `ContextType::kTpuLaunch`.
const CONTEXT_TPU_LAUNCH: i32 = 12;
/// `ContextType::kThreadpoolEvent`.
pub(crate) const CONTEXT_THREADPOOL: i32 = 15;
/// Whether `ThreadpoolLineMutatorFactory` runs. The XLA it pins apparently predates it:
/// with the Region events, oxprof's step database of the `tf_custom_loop` refkit profile
/// differs from XProf 2.24.2's (threadpool markers and work inside regions join steps),
/// without them it matches exactly. The port is kept (and tested) for newer XProf versions.
pub(crate) const THREADPOOL_LINE_MUTATOR: bool = false;

#[cfg(test)]
thread_local! {
    /// Tests turn the threadpool line mutator on to check its port.
    pub(crate) static FORCE_THREADPOOL_LINE_MUTATOR: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn threadpool_line_mutator() -> bool {
    #[cfg(test)]
    if FORCE_THREADPOOL_LINE_MUTATOR.with(std::cell::Cell::get) {
        return true;
    }
    THREADPOOL_LINE_MUTATOR
}
/// `kRunIdMask`: host run ids are cut to their 27 low bits.
const RUN_ID_MASK: u64 = (1 << 27) - 1;

/// A context id: a raw `_p`/`_c` value, or a tuple the mutators hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ContextId {
    Raw(u64),
    /// `HashOf(producer_event, consumer_event, {step_id, iter_num})` (legacy executor →
    /// `TpuExecuteOp`).
    Legacy([u64; 2]),
    /// `HashOf({request_id, queue_addr})` (TPU stream queues).
    Pair([u64; 2]),
    /// `HashOf({device_ordinal, queue_id, run_id, core_type})` (TPU launches).
    Quad([u64; 4]),
}

/// XProf's `GroupingEventStats` after the mutators: what `ConnectIntraThread` reads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Facts {
    pub(crate) producer: Option<(i32, ContextId)>,
    pub(crate) consumer: Option<(i32, ContextId)>,
    pub(crate) pid: Option<i32>,
    pub(crate) root_level: Option<i32>,
    pub(crate) is_async: bool,
}

/// Which mutators apply to one plane (decided from its metadata, as `CreateMutators` does).
pub(crate) struct PlaneMutators {
    /// The plane's `process_id` stat (default pid of context groups).
    plane_pid: Option<i32>,
    /// `{step_id, iter_num}` stat metadata exist: ExecutorState::Process → TpuExecuteOp.
    legacy: bool,
    /// `{request_id, queue_addr}` exist: EnqueueRequestLocked → *Request queues.
    queue: bool,
    /// `run_id` exists: host run ids are masked.
    run_id_fix: bool,
    /// `{device_ordinal, queue_id, run_id}` exist: DoEnqueueProgram → CompleteCallbacks.
    tpu_launch: bool,
    /// TensorCore plane with `{queue_id, run_id}`: the XLA Modules line consumes launches.
    module_line_ordinal: Option<u64>,
    /// StartRegion and StopRegion metadata exist: the threadpool line mutator runs.
    pub(crate) threadpool: bool,
}

impl PlaneMutators {
    pub(crate) fn new(plane: &XPlane, kinds: &PlaneKinds) -> PlaneMutators {
        let has = |k| kinds.has_stat(k);
        let module_line_ordinal = if plane.name.starts_with(TPU_PLANE_PREFIX)
            && tensor_core_id(&plane.name).is_some()
            && has(StatKind::QueueId)
            && has(StatKind::RunId)
        {
            parse_device_ordinal(&plane.name).map(u64::from)
        } else {
            None
        };
        PlaneMutators {
            plane_pid: kinds.plane_stat(plane, StatKind::ProcessId).map(|v| v.int_value() as i32),
            legacy: has(StatKind::StepId) && has(StatKind::IterNum),
            queue: has(StatKind::RequestId) && has(StatKind::QueueAddr),
            run_id_fix: has(StatKind::RunId),
            tpu_launch: has(StatKind::DeviceOrdinal) && has(StatKind::QueueId) && has(StatKind::RunId),
            module_line_ordinal,
            threadpool: threadpool_line_mutator()
                && kinds.has_event_kind(EventKind::ThreadpoolStartRegion)
                && kinds.has_event_kind(EventKind::ThreadpoolStopRegion),
        }
    }

    /// The facts of a virtual `ThreadpoolListener::Region` event.
    pub(crate) fn region_facts(&self, region_id: u64) -> Facts {
        Facts {
            consumer: Some((CONTEXT_THREADPOOL, ContextId::Raw(region_id))),
            pid: self.plane_pid,
            ..Facts::default()
        }
    }

    /// `GroupingEventStats` of an event after every mutator ran on it.
    pub(crate) fn facts(&self, kind: EventKind, line: &XLine, scan: &StatScan) -> Facts {
        let mut facts = Facts { pid: self.plane_pid, ..Facts::default() };
        // GroupingEventStats: ForEachStat, the last stat of each type wins.
        let producer_type = scan.last(StatKind::ProducerType).map(|v| v.int_value() as i32);
        let producer_id = scan.last(StatKind::ProducerId).map(RawValue::int_or_uint);
        let consumer_type = scan.last(StatKind::ConsumerType).map(|v| v.int_value() as i32);
        let consumer_id = scan.last(StatKind::ConsumerId).map(RawValue::int_or_uint);
        if let (Some(t), Some(id)) = (producer_type, producer_id) {
            facts.producer = Some((t, ContextId::Raw(id)));
        }
        if let (Some(t), Some(id)) = (consumer_type, consumer_id) {
            facts.consumer = Some((t, ContextId::Raw(id)));
        }
        if let Some(pid) = scan.last(StatKind::ConsumerPid) {
            facts.pid = Some(pid.int_value() as i32);
        }
        facts.root_level = scan.last(StatKind::IsRoot).map(|v| v.int_value() as i32);
        facts.is_async = scan.last(StatKind::IsAsync).is_some_and(|v| v.int_value() != 0);
        if facts.root_level.is_none() && kind == EventKind::TraceContext {
            facts.root_level = Some(1);
        }
        self.apply_event_mutators(kind, scan, &mut facts);
        if let Some(ordinal) = self.module_line_ordinal
            && line.name == XLA_MODULE_LINE_NAME
            && let (Some(run_id), Some(queue_id)) = (scan.get(StatKind::RunId), scan.get(StatKind::QueueId))
        {
            let core_type = scan.get(StatKind::CoreType).map_or(0, RawValue::int_or_uint);
            let id = ContextId::Quad([ordinal, queue_id.int_or_uint(), run_id.int_or_uint(), core_type]);
            facts.consumer = Some((CONTEXT_TPU_LAUNCH, id));
        }
        facts
    }

    /// The per-event mutators, in `CreateMutatorFactories` order.
    fn apply_event_mutators(&self, kind: EventKind, scan: &StatScan, facts: &mut Facts) {
        match kind {
            EventKind::ProcessBatch | EventKind::OrbaxProcessBatch => facts.root_level = Some(2),
            EventKind::BatchingSessionRun => facts.root_level = Some(1),
            EventKind::ExecutorStateProcess | EventKind::TpuExecuteOp if self.legacy => {
                if let (Some(step), Some(iter)) = (scan.get(StatKind::StepId), scan.get(StatKind::IterNum)) {
                    let context = (CONTEXT_LEGACY, ContextId::Legacy([step.int_or_uint(), iter.int_or_uint()]));
                    if kind == EventKind::ExecutorStateProcess {
                        facts.producer = Some(context);
                    } else {
                        facts.consumer = Some(context);
                    }
                }
            }
            EventKind::EnqueueRequestLocked | EventKind::QueueRequest if self.queue => {
                if let (Some(request), Some(queue)) = (scan.get(StatKind::RequestId), scan.get(StatKind::QueueAddr)) {
                    let context = (CONTEXT_TPU_STREAM, ContextId::Pair([request.int_or_uint(), queue.int_or_uint()]));
                    if kind == EventKind::EnqueueRequestLocked {
                        facts.producer = Some(context);
                    } else {
                        facts.consumer = Some(context);
                    }
                }
            }
            EventKind::DoEnqueueProgram | EventKind::CompleteCallbacks if self.tpu_launch => {
                // HostRunIdMutator runs first and masks run_id to its 27 low bits.
                let run_id = scan.get(StatKind::RunId).map(|v| {
                    if self.run_id_fix { (v.int_or_uint() as i64 as u64) & RUN_ID_MASK } else { v.int_or_uint() }
                });
                if let (Some(ordinal), Some(queue), Some(run)) =
                    (scan.get(StatKind::DeviceOrdinal), scan.get(StatKind::QueueId), run_id)
                {
                    let core_type = scan.get(StatKind::CoreType).map_or(0, RawValue::int_or_uint);
                    let id = ContextId::Quad([ordinal.int_or_uint(), queue.int_or_uint(), run, core_type]);
                    if kind == EventKind::DoEnqueueProgram {
                        facts.producer = Some((CONTEXT_TPU_LAUNCH, id));
                    } else {
                        facts.consumer = Some((CONTEXT_TPU_LAUNCH, id));
                    }
                }
            }
            _ => {}
        }
    }
}

/// A `ThreadpoolListener::Region` event the threadpool line mutator adds to a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    /// Offset from the line start (that of its StartRegion).
    pub(crate) offset_ps: i64,
    /// StopRegion timestamp minus StartRegion timestamp.
    pub(crate) duration_ps: i64,
    /// The StartRegion's `_c` value (the region's consumer id).
    pub(crate) region_id: u64,
}

/// `ThreadpoolLineMutator::MutateEventsInLine`: pairs each StopRegion with the latest
/// StartRegion that carried a `_c` stat (a StartRegion is never "closed": several
/// StopRegions after one StartRegion each make a region from it).
///
/// ```text
/// worker  |Start _c=7|......work......|Stop|   |Stop|
///         |<------- Region _c=7 ------>|
///         |<------------- Region _c=7 ------------>|
/// ```
pub(crate) fn threadpool_regions(plane: &XPlane, line: &XLine, kinds: &PlaneKinds) -> Vec<Region> {
    let mut regions = Vec::new();
    let mut start: Option<(i64, u64)> = None;
    for event in line.events(plane) {
        match kinds.event_kind(&event) {
            EventKind::ThreadpoolStartRegion => {
                let Some(id) = kinds.scan(&event).get(StatKind::ConsumerId) else { continue };
                start = Some((event.timestamp_ps(), id.int_or_uint()));
            }
            // XProf tests `start_region_timestamp_ps != 0`.
            EventKind::ThreadpoolStopRegion => {
                if let Some((start_ts, region_id)) = start.filter(|&(ts, _)| ts != 0) {
                    let line_ps = line.timestamp_ns.wrapping_mul(1000);
                    regions.push(Region {
                        offset_ps: start_ts.wrapping_sub(line_ps),
                        duration_ps: event.timestamp_ps().wrapping_sub(start_ts),
                        region_id,
                    });
                }
            }
            _ => {}
        }
    }
    regions
}

/// The order XProf's `ConnectIntraThread` visits a line's events in: file order, or — when
/// regions were added — the order of `SortXLine` (offset ascending, duration descending,
/// compared as unsigned). Indices `>= line.event_count()` are regions. `std::sort` is not
/// stable; ties keep file order here (regions after the line's own events).
pub(crate) fn sorted_line_order(plane: &XPlane, line: &XLine, regions: &[Region]) -> Vec<u32> {
    let count = line.event_count();
    let key = |e: &Event<'_>| (e.offset_ps() as u64, std::cmp::Reverse(e.duration_ps() as u64));
    let region_key = |r: &Region| (r.offset_ps as u64, std::cmp::Reverse(r.duration_ps as u64));
    let mut region_order: Vec<u32> = (0..regions.len() as u32).collect();
    region_order.sort_by_key(|&r| region_key(&regions[r as usize]));
    let mut events_sorted = true;
    let mut previous = None;
    for event in line.events(plane) {
        let k = key(&event);
        if previous.is_some_and(|p| p > k) {
            events_sorted = false;
            break;
        }
        previous = Some(k);
    }
    if !events_sorted {
        let mut keys: Vec<((u64, std::cmp::Reverse<u64>), u32)> = line
            .events(plane)
            .map(|e| (key(&e), e.index() as u32))
            .chain(regions.iter().enumerate().map(|(i, r)| (region_key(r), (count + i) as u32)))
            .collect();
        keys.sort();
        return keys.into_iter().map(|k| k.1).collect();
    }
    // Merge the (already ordered) events with the sorted regions; events first on ties.
    let mut order = Vec::with_capacity(count + regions.len());
    let mut next_region = region_order.iter().peekable();
    for event in line.events(plane) {
        let k = key(&event);
        while let Some(&&r) = next_region.peek() {
            if region_key(&regions[r as usize]) < k {
                order.push(count as u32 + r);
                next_region.next();
            } else {
                break;
            }
        }
        order.push(event.index() as u32);
    }
    order.extend(next_region.map(|&r| count as u32 + r));
    order
}

/// Timespan of an event or region in a line's effective order.
pub(crate) fn span_at(plane: &XPlane, line: &XLine, regions: &[Region], index: u32) -> super::kinds::Span {
    let count = line.event_count();
    match (index as usize).checked_sub(count) {
        None => super::kinds::Span::of(&line.event(plane, index as usize)),
        Some(r) => {
            let region = regions.get(r).copied().unwrap_or(Region { offset_ps: 0, duration_ps: 0, region_id: 0 });
            let ts = line.timestamp_ns.wrapping_mul(1000).wrapping_add(region.offset_ps);
            super::kinds::Span { begin: ts as u64, duration: region.duration_ps as u64 }
        }
    }
}

/// Whether an event stands for a TPU parent line (XProf's `IsTPUParentLineEvent`).
pub(crate) fn is_tpu_parent_line(line: &XLine) -> bool {
    use oxprof_model::schema::{SPARSE_CORE_MODULE_LINE_NAME, SPARSE_CORE_STEP_LINE_NAME, STEP_LINE_NAME};
    [STEP_LINE_NAME, SPARSE_CORE_STEP_LINE_NAME, XLA_MODULE_LINE_NAME, SPARSE_CORE_MODULE_LINE_NAME]
        .contains(&line.name.as_str())
}

/// Convenience: the event at `index` of a line.
pub(crate) fn event_at<'a>(plane: &'a XPlane, line: &'a XLine, index: usize) -> Option<Event<'a>> {
    (index < line.event_count()).then(|| line.event(plane, index))
}
