//! Step events: per step, the markers that delimit it and the typed time spans that happened
//! in it, and the operations XProf applies to them (combining hosts/cores/threads, turning
//! overlapping spans into a priority-resolved partition, step time, precision split).
//! Port of `xprof/utils/event_span.{h,cc}`.
//!
//! All timestamps are XProf's `tsl::profiler::Timespan`: unsigned 64-bit picoseconds with
//! wrapping arithmetic (absolute epoch picoseconds overflow 64 bits; differences stay exact).

use super::types::{AllReduceDbResult, AllReduceInfo, DeviceMemoryTransfer, OpMetricsDb, PrecisionStats};
use std::collections::BTreeMap;

/// What a span of time was spent on. A bigger value has a higher priority when spans
/// overlap (`EventType` in XProf; the values are the proto numbers used as `type_ps` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i32)]
pub enum EventType {
    /// No event: idle or untraced.
    UnknownTime = 0,
    /// Host is computing.
    HostCompute = 10,
    /// Host preprocesses data before device execution.
    HostPreprocess = 20,
    /// Host postprocesses data after device execution.
    HostPostprocess = 30,
    /// Host forms batches (inference).
    HostBatchFormation = 40,
    /// Host runtime (allocation, …).
    HostRuntime = 50,
    /// Host is compiling.
    HostCompile = 60,
    /// Host-to-host communication.
    HostToHost = 70,
    /// Host-to-device communication.
    HostToDevice = 80,
    /// Host prepares a device launch.
    HostPrepare = 90,
    /// Collectives such as all-reduce (below `HostWaitInput` on purpose).
    DeviceCollectives = 100,
    /// Host waits for input.
    HostWaitInput = 110,
    /// Device-to-device communication.
    DeviceToDevice = 120,
    /// Device-to-host communication.
    DeviceToHost = 130,
    /// Device computes in 32-bit precision.
    DeviceCompute32 = 140,
    /// Device computes in 16-bit precision.
    DeviceCompute16 = 150,
    /// Device waits for another device.
    DeviceWaitDevice = 160,
    /// Device waits for the host.
    DeviceWaitHost = 170,
}

impl EventType {
    /// The highest value (`LAST_EVENT_TYPE`).
    pub const LAST: EventType = EventType::DeviceWaitHost;

    /// The proto number (also the `type_ps` key of `GenericStepBreakdown`).
    pub fn value(self) -> i32 {
        self as i32
    }

    /// The event type with this proto number, if any.
    pub fn from_value(value: i32) -> Option<EventType> {
        use EventType::*;
        Some(match value {
            0 => UnknownTime,
            10 => HostCompute,
            20 => HostPreprocess,
            30 => HostPostprocess,
            40 => HostBatchFormation,
            50 => HostRuntime,
            60 => HostCompile,
            70 => HostToHost,
            80 => HostToDevice,
            90 => HostPrepare,
            100 => DeviceCollectives,
            110 => HostWaitInput,
            120 => DeviceToDevice,
            130 => DeviceToHost,
            140 => DeviceCompute32,
            150 => DeviceCompute16,
            160 => DeviceWaitDevice,
            170 => DeviceWaitHost,
            _ => return None,
        })
    }
}

/// `tsl::profiler::Timespan`: a begin and a duration in picoseconds, unsigned and wrapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Timespan {
    /// Begin (ps).
    pub begin_ps: u64,
    /// Duration (ps).
    pub duration_ps: u64,
}

impl Timespan {
    /// A span starting at `begin_ps` lasting `duration_ps`.
    pub fn new(begin_ps: u64, duration_ps: u64) -> Timespan {
        Timespan { begin_ps, duration_ps }
    }

    /// The span `[begin_ps, end_ps]`; an empty span at `begin_ps` when `end_ps < begin_ps`.
    pub fn from_end_points(begin_ps: u64, end_ps: u64) -> Timespan {
        if begin_ps > end_ps { Timespan::new(begin_ps, 0) } else { Timespan::new(begin_ps, end_ps - begin_ps) }
    }

    /// The timespan of a model event (`XEventVisitor::GetTimespan`).
    pub fn of_event(event: &oxprof_model::Event<'_>) -> Timespan {
        Timespan::new(event.timestamp_ps() as u64, event.duration_ps() as u64)
    }

    /// End (ps), wrapping like XProf's unsigned arithmetic.
    pub fn end_ps(&self) -> u64 {
        self.begin_ps.wrapping_add(self.duration_ps)
    }

    /// XProf's `Empty()`: begin and duration both zero (the default span).
    pub fn is_empty(&self) -> bool {
        self.begin_ps == 0 && self.duration_ps == 0
    }

    /// Both ends inclusive: touching spans overlap.
    pub fn overlaps(&self, other: &Timespan) -> bool {
        self.begin_ps <= other.end_ps() && other.begin_ps <= self.end_ps()
    }

    /// Whether `other` lies within this span (ends inclusive).
    pub fn includes(&self, other: &Timespan) -> bool {
        self.begin_ps <= other.begin_ps && other.end_ps() <= self.end_ps()
    }

    /// Picoseconds the two spans share.
    pub fn overlapped_duration_ps(&self, other: &Timespan) -> u64 {
        if !self.overlaps(other) {
            return 0;
        }
        self.end_ps().min(other.end_ps()).wrapping_sub(self.begin_ps.max(other.begin_ps))
    }

    /// Grows this span to cover `other` too.
    pub fn expand_to_include(&mut self, other: &Timespan) {
        *self = Timespan::from_end_points(self.begin_ps.min(other.begin_ps), self.end_ps().max(other.end_ps()));
    }
}

/// A span of time and what it was spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTypeSpan {
    /// What.
    pub event_type: EventType,
    /// When.
    pub span: Timespan,
}

/// Where a step marker comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepMarkerType {
    /// A `train…`/`test…`/`TraceContext` TraceMe on a host thread.
    ExplicitHost,
    /// A step root that grouping found (`FunctionRun`, `SessionRun`, … with `step_name`).
    ImplicitHost,
    /// From a device's step line: first to last device event of the group.
    Device,
}

/// One event used as a marker of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepMarker {
    /// Origin.
    pub marker_type: StepMarkerType,
    /// Core the marker was seen on (device markers only).
    pub core_id: Option<u32>,
    /// The marker's span.
    pub span: Timespan,
}

/// Everything known about one step (possibly combined over threads, cores and hosts).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepDetails {
    markers: Vec<StepMarker>,
    events: Vec<EventTypeSpan>,
    collectives: BTreeMap<u32, AllReduceDbResult>,
    device_memory_transfers: [DeviceMemoryTransfer; 3],
    step_name: String,
    per_core_op_metrics_db: BTreeMap<u32, OpMetricsDb>,
}

impl StepDetails {
    /// The step's markers, in the order they were found.
    pub fn markers(&self) -> &[StepMarker] {
        &self.markers
    }

    /// The step's typed spans (overlapping, or a partition after [`StepDetails::to_non_overlapped`]).
    pub fn events(&self) -> &[EventTypeSpan] {
        &self.events
    }

    /// Collective ops per core.
    pub fn collectives(&self) -> &BTreeMap<u32, AllReduceDbResult> {
        &self.collectives
    }

    /// Collective ops per core, moved out (a TPU host's are 1 024 per core and step).
    pub fn take_collectives(&mut self) -> BTreeMap<u32, AllReduceDbResult> {
        std::mem::take(&mut self.collectives)
    }

    /// Memory transfers: `[host-to-device, device-to-host, device-to-device]`.
    pub fn device_memory_transfers(&self) -> &[DeviceMemoryTransfer; 3] {
        &self.device_memory_transfers
    }

    /// Per-core HLO op metrics of the step (TPU).
    pub fn per_core_op_metrics_db(&self) -> &BTreeMap<u32, OpMetricsDb> {
        &self.per_core_op_metrics_db
    }

    /// Mutable per-core HLO op metrics.
    pub fn per_core_op_metrics_db_mut(&mut self) -> &mut BTreeMap<u32, OpMetricsDb> {
        &mut self.per_core_op_metrics_db
    }

    /// Sets the op metrics of one core.
    pub fn set_per_core_op_metrics_db(&mut self, db: OpMetricsDb, core_id: u32) {
        self.per_core_op_metrics_db.insert(core_id, db);
    }

    /// The step name (empty when unknown).
    pub fn step_name(&self) -> &str {
        &self.step_name
    }

    /// Sets the step name.
    pub fn set_step_name(&mut self, name: &str) {
        name.clone_into(&mut self.step_name);
    }

    /// Appends the details one later piece of the same thread collected (a thread scanned
    /// in pieces, in order), as if the pieces had been one scan: markers are appended, the
    /// typed spans replayed through [`Self::add_event`] (its merge with the previous span
    /// decides on the first event of each merged span alone, so replaying merged spans
    /// gives the merges of the whole scan), and a later step name wins.
    pub fn append_later_piece(&mut self, later: StepDetails) {
        self.markers.extend_from_slice(&later.markers);
        for event in later.events {
            self.add_event(event);
        }
        if !later.step_name.is_empty() {
            self.step_name = later.step_name;
        }
        for (core, db) in later.collectives {
            self.collectives.entry(core).or_insert(db);
        }
        self.add_transfers(&later.device_memory_transfers);
        self.per_core_op_metrics_db.extend(later.per_core_op_metrics_db);
    }

    /// Sums another step's memory transfers into this one's.
    fn add_transfers(&mut self, transfers: &[DeviceMemoryTransfer; 3]) {
        for (dst, src) in self.device_memory_transfers.iter_mut().zip(transfers) {
            dst.occurrence = dst.occurrence.wrapping_add(src.occurrence);
            dst.bytes_transferred = dst.bytes_transferred.wrapping_add(src.bytes_transferred);
            dst.time_us += src.time_us;
        }
    }

    /// Adds a marker.
    pub fn add_marker(&mut self, marker: StepMarker) {
        self.markers.push(marker);
    }

    /// Adds a typed span.
    ///
    /// A span of the same type as the previous one that starts inside it (or where it ends)
    /// extends it instead of being stored: the union covers the same time, so every
    /// per-type duration derived from the spans is unchanged, and nested events (a Python
    /// call inside a Python call) cost nothing. This keeps a 3 M-event host trace at a few
    /// spans per step instead of one per event.
    ///
    /// ```text
    /// before:  |---- compute ----|            after: |-------- compute --------|
    ///               |- compute -|    |- compute -|      (one span, same coverage)
    /// ```
    pub fn add_event(&mut self, event: EventTypeSpan) {
        if let Some(last) = self.events.last_mut()
            && last.event_type == event.event_type
            && last.span.begin_ps <= event.span.begin_ps
            && event.span.begin_ps <= last.span.end_ps()
        {
            if event.span.end_ps() > last.span.end_ps() {
                last.span = Timespan::from_end_points(last.span.begin_ps, event.span.end_ps());
            }
            return;
        }
        self.events.push(event);
    }

    /// Adds a collective op seen on a core (core ids are truncated to 32 bits as in XProf).
    pub fn add_collective_op_event(&mut self, core_id: u64, info: AllReduceInfo) {
        self.collectives.entry(core_id as u32).or_default().all_reduce_info.push(info);
    }

    /// Counts a memory transfer; only host-to-device, device-to-host and device-to-device
    /// transfers are recorded.
    pub fn add_device_memory_transfer_event(&mut self, event_type: EventType, span: Timespan, bytes: u64) {
        let index = match event_type {
            EventType::HostToDevice => 0,
            EventType::DeviceToHost => 1,
            EventType::DeviceToDevice => 2,
            _ => return,
        };
        let t = &mut self.device_memory_transfers[index];
        t.occurrence = t.occurrence.wrapping_add(1);
        t.time_us += span.duration_ps as f64 / 1_000_000.0;
        t.bytes_transferred = t.bytes_transferred.wrapping_add(bytes);
    }

    /// The step's time span: the longest host marker, unless there is a device marker, in
    /// which case the longest device marker — or the longest host marker if that one
    /// contains it (the device is synchronised at the end of each step). Among markers of
    /// equal length the first wins.
    pub fn step_time(&self) -> Timespan {
        let mut max_host = Timespan::default();
        let mut max_device = Timespan::default();
        for marker in &self.markers {
            let current = if marker.marker_type == StepMarkerType::Device { &mut max_device } else { &mut max_host };
            if marker.span.duration_ps > current.duration_ps {
                *current = marker.span;
            }
        }
        if max_device.is_empty() || max_host.includes(&max_device) { max_host } else { max_device }
    }

    /// The longest marker seen on `core_id`.
    pub fn step_time_on_core(&self, core_id: u32) -> Timespan {
        let mut max = Timespan::default();
        for marker in &self.markers {
            if marker.core_id == Some(core_id) && marker.span.duration_ps > max.duration_ps {
                max = marker.span;
            }
        }
        max
    }

    /// A copy whose spans are replaced by their non-overlapping partition.
    pub fn to_non_overlapped(&self) -> StepDetails {
        StepDetails {
            markers: self.markers.clone(),
            events: to_non_overlapped_events(&self.events),
            collectives: self.collectives.clone(),
            device_memory_transfers: self.device_memory_transfers.clone(),
            step_name: self.step_name.clone(),
            per_core_op_metrics_db: self.per_core_op_metrics_db.clone(),
        }
    }

    /// [`StepDetails::to_non_overlapped`] in place (no copy of the other parts).
    pub fn make_non_overlapped(&mut self) {
        self.events = to_non_overlapped_events(&self.events);
    }

    /// Merges `other` into this step: markers and spans appended; collectives of cores not
    /// yet present added (existing cores keep theirs); transfers summed; per-core op
    /// metrics taken from `other` (overwriting); the name kept unless empty.
    pub fn combine(&mut self, other: &StepDetails) {
        self.markers.extend_from_slice(&other.markers);
        self.events.extend_from_slice(&other.events);
        for (core, db) in &other.collectives {
            self.collectives.entry(*core).or_insert_with(|| db.clone());
        }
        self.add_transfers(&other.device_memory_transfers);
        for (core, db) in &other.per_core_op_metrics_db {
            self.per_core_op_metrics_db.insert(*core, db.clone());
        }
        if self.step_name.is_empty() {
            self.step_name.clone_from(&other.step_name);
        }
    }

    /// [`StepDetails::combine`] consuming `other`: its collectives and op metrics are moved,
    /// not copied (a TPU core's all-reduce lists are 1 024 entries a step).
    pub fn combine_owned(&mut self, other: StepDetails) {
        self.markers.extend(other.markers);
        self.events.extend(other.events);
        for (core, db) in other.collectives {
            self.collectives.entry(core).or_insert(db);
        }
        self.add_transfers(&other.device_memory_transfers);
        self.per_core_op_metrics_db.extend(other.per_core_op_metrics_db);
        if self.step_name.is_empty() {
            self.step_name = other.step_name;
        }
    }
}

/// Steps by step id (group id). XProf uses a hash map; every consumer either sorts the ids
/// or is order-insensitive, so an ordered map gives the same results deterministically.
pub type StepEvents = BTreeMap<i64, StepDetails>;

/// Merges every step of `src` into `dst`, adding steps `dst` lacks.
pub fn union_combine_step_events(src: &StepEvents, dst: &mut StepEvents) {
    for (id, details) in src {
        dst.entry(*id).or_default().combine(details);
    }
}

/// [`union_combine_step_events`] consuming `src`: its steps are moved, not copied.
pub fn union_combine_step_events_owned(src: StepEvents, dst: &mut StepEvents) {
    for (id, details) in src {
        match dst.get_mut(&id) {
            Some(existing) => existing.combine_owned(details),
            None => {
                dst.insert(id, details);
            }
        }
    }
}

/// Keeps only the steps of `dst` that `src` also has and merges `src`'s details into them.
/// An empty `dst` becomes a copy of `src`.
pub fn intersect_combine_step_events(src: &StepEvents, dst: &mut StepEvents) {
    if dst.is_empty() {
        dst.clone_from(src);
        return;
    }
    dst.retain(|id, details| match src.get(id) {
        Some(other) => {
            details.combine(other);
            true
        }
        None => false,
    });
}

/// [`intersect_combine_step_events`] consuming `src`: its steps are moved, not copied.
pub fn intersect_combine_step_events_owned(mut src: StepEvents, dst: &mut StepEvents) {
    if dst.is_empty() {
        *dst = src;
        return;
    }
    dst.retain(|id, details| match src.remove(id) {
        Some(other) => {
            details.combine_owned(other);
            true
        }
        None => false,
    });
}

/// One end of a span, for the sweep in [`to_non_overlapped_events`].
#[derive(Debug, Clone, Copy)]
struct Boundary {
    time_ps: u64,
    event_type: EventType,
    is_start: bool,
}

/// Tracks the highest-priority event type among the spans open at a sweep position.
struct PriorityTracker {
    current_max: EventType,
    /// Open spans per event type value (may go negative on inverted spans, as in XProf).
    open: [i64; EventType::LAST as usize + 1],
}

impl PriorityTracker {
    fn new() -> Self {
        PriorityTracker { current_max: EventType::UnknownTime, open: [0; EventType::LAST as usize + 1] }
    }

    /// Applies a boundary and returns the type that owns the time right after it.
    fn update(&mut self, boundary: &Boundary) -> EventType {
        let ty = boundary.event_type;
        let slot = ty as usize;
        if boundary.is_start {
            self.open[slot] += 1;
            if ty > self.current_max {
                self.current_max = ty;
            }
        } else {
            self.open[slot] -= 1;
            if ty == self.current_max && self.open[slot] == 0 {
                // Fall back to the highest type that still has an open span.
                self.current_max = (0..slot)
                    .rev()
                    .find(|&i| self.open[i] > 0)
                    .and_then(|i| EventType::from_value(i as i32))
                    .unwrap_or(EventType::UnknownTime);
            }
        }
        self.current_max
    }
}

/// Turns overlapping typed spans into a partition of consecutive spans, each owned by the
/// highest-priority type open at that time (`UnknownTime` in gaps).
///
/// ```text
///   HostCompute  |--------------|
///   WaitInput          |----|
///   result       |-HC--|-WI-|HC-|
/// ```
///
/// Boundaries are sorted by time; at equal times ends come before starts and higher
/// priorities before lower ones. One output span is produced between each pair of
/// consecutive boundaries (zero-length ones included, as in XProf).
pub fn to_non_overlapped_events(overlapped: &[EventTypeSpan]) -> Vec<EventTypeSpan> {
    let mut boundaries = Vec::with_capacity(overlapped.len() * 2);
    for event in overlapped {
        boundaries.push(Boundary { time_ps: event.span.begin_ps, event_type: event.event_type, is_start: true });
        boundaries.push(Boundary { time_ps: event.span.end_ps(), event_type: event.event_type, is_start: false });
    }
    boundaries.sort_unstable_by_key(|b| (b.time_ps, b.is_start, std::cmp::Reverse(b.event_type)));
    let mut result = Vec::with_capacity(boundaries.len().saturating_sub(1));
    let mut tracker = PriorityTracker::new();
    for pair in boundaries.windows(2) {
        let owner = tracker.update(&pair[0]);
        result.push(EventTypeSpan {
            event_type: owner,
            span: Timespan::from_end_points(pair[0].time_ps, pair[1].time_ps),
        });
    }
    result
}

/// [`StepDetails::to_non_overlapped`] for every step.
pub fn to_non_overlapped_step_events(overlapped: &StepEvents) -> StepEvents {
    overlapped.iter().map(|(id, details)| (*id, details.to_non_overlapped())).collect()
}

/// [`to_non_overlapped_step_events`] consuming its input.
pub fn into_non_overlapped_step_events(mut step_events: StepEvents) -> StepEvents {
    step_events.values_mut().for_each(StepDetails::make_non_overlapped);
    step_events
}

/// Device compute time by precision over all steps (meant for non-overlapped step events).
pub fn compute_precision_stats(step_events: &StepEvents) -> PrecisionStats {
    let (mut ps32, mut ps16) = (0i64, 0i64);
    for details in step_events.values() {
        for event in &details.events {
            match event.event_type {
                EventType::DeviceCompute32 => ps32 = ps32.wrapping_add(event.span.duration_ps as i64),
                EventType::DeviceCompute16 => ps16 = ps16.wrapping_add(event.span.duration_ps as i64),
                _ => {}
            }
        }
    }
    PrecisionStats { compute_16bit_ps: ps16 as u64, compute_32bit_ps: ps32 as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EventType::*;

    fn span(ty: EventType, begin: u64, end: u64) -> EventTypeSpan {
        EventTypeSpan { event_type: ty, span: Timespan::from_end_points(begin, end) }
    }

    // HostCompute   |0-----------10|
    // HostWaitInput      |3--6|
    // DevCompute32          |5------12|
    #[test]
    fn non_overlapped_partition_follows_priorities() {
        let out = to_non_overlapped_events(&[
            span(HostCompute, 0, 10),
            span(HostWaitInput, 3, 6),
            span(DeviceCompute32, 5, 12),
        ]);
        assert_eq!(
            out,
            vec![
                span(HostCompute, 0, 3),
                span(HostWaitInput, 3, 5),
                span(DeviceCompute32, 5, 6),
                span(DeviceCompute32, 6, 10),
                span(DeviceCompute32, 10, 12),
            ]
        );
    }

    // A |0--2|      B |4--6|   → the gap is unknown time.
    #[test]
    fn gaps_are_unknown_time_and_touching_spans_give_empty_pieces() {
        let out = to_non_overlapped_events(&[span(HostCompute, 0, 2), span(HostCompute, 4, 6)]);
        assert_eq!(out, vec![span(HostCompute, 0, 2), span(UnknownTime, 2, 4), span(HostCompute, 4, 6)]);
        // Touching: end (2) sorts before start (2): a zero-length unknown piece between.
        let out = to_non_overlapped_events(&[span(HostCompute, 0, 2), span(HostToHost, 2, 3)]);
        assert_eq!(out, vec![span(HostCompute, 0, 2), span(UnknownTime, 2, 2), span(HostToHost, 2, 3)]);
        assert!(to_non_overlapped_events(&[]).is_empty());
    }

    #[test]
    fn step_time_prefers_device_unless_host_contains_it() {
        let marker = |marker_type, begin, end| StepMarker {
            marker_type,
            core_id: None,
            span: Timespan::from_end_points(begin, end),
        };
        let mut step = StepDetails::default();
        step.add_marker(marker(StepMarkerType::ExplicitHost, 10, 20));
        assert_eq!(step.step_time(), Timespan::from_end_points(10, 20));
        step.add_marker(marker(StepMarkerType::Device, 15, 30));
        assert_eq!(step.step_time(), Timespan::from_end_points(15, 30));
        step.add_marker(marker(StepMarkerType::ImplicitHost, 5, 40));
        assert_eq!(step.step_time(), Timespan::from_end_points(5, 40));
        // Equal lengths: the first marker wins.
        let mut tie = StepDetails::default();
        tie.add_marker(marker(StepMarkerType::Device, 0, 5));
        tie.add_marker(marker(StepMarkerType::Device, 10, 15));
        assert_eq!(tie.step_time(), Timespan::from_end_points(0, 5));
    }

    #[test]
    fn combining_keeps_first_collectives_and_intersects() {
        let mut a = StepDetails::default();
        a.add_collective_op_event(3, AllReduceInfo { id: 1, ..Default::default() });
        a.add_device_memory_transfer_event(HostToDevice, Timespan::new(0, 2_000_000), 8);
        let mut b = StepDetails::default();
        b.add_collective_op_event(3, AllReduceInfo { id: 2, ..Default::default() });
        b.add_collective_op_event(4, AllReduceInfo { id: 3, ..Default::default() });
        b.add_device_memory_transfer_event(HostToDevice, Timespan::new(0, 1_000_000), 4);
        b.set_step_name("s");
        a.combine(&b);
        assert_eq!(a.collectives()[&3].all_reduce_info[0].id, 1);
        assert_eq!(a.collectives()[&4].all_reduce_info[0].id, 3);
        assert_eq!(a.device_memory_transfers()[0].occurrence, 2);
        assert_eq!(a.device_memory_transfers()[0].bytes_transferred, 12);
        assert!((a.device_memory_transfers()[0].time_us - 3.0).abs() < 1e-12);
        assert_eq!(a.step_name(), "s");

        let src: StepEvents = [(1, StepDetails::default()), (2, StepDetails::default())].into();
        let mut dst: StepEvents = [(2, StepDetails::default()), (3, StepDetails::default())].into();
        intersect_combine_step_events(&src, &mut dst);
        assert_eq!(dst.keys().copied().collect::<Vec<_>>(), [2]);
        let mut empty = StepEvents::new();
        intersect_combine_step_events(&src, &mut empty);
        assert_eq!(empty.len(), 2);
        union_combine_step_events(&src, &mut dst);
        assert_eq!(dst.keys().copied().collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn precision_stats_sum_device_compute() {
        let mut step = StepDetails::default();
        step.add_event(span(DeviceCompute16, 0, 5));
        step.add_event(span(DeviceCompute32, 5, 12));
        step.add_event(span(HostCompute, 12, 20));
        let stats = compute_precision_stats(&[(0, step)].into());
        assert_eq!((stats.compute_16bit_ps, stats.compute_32bit_ps), (5, 7));
    }
}
