//! The trace index of one host: XProf's trace-events container
//! (`xprof/convert/xplane_to_trace_container.cc`) and its zoom-level storage
//! (`trace_viewer/trace_events.cc`: `GetEventsByLevel`, `MaybeAddEventUniqueId`), kept as
//! compact per-track tables over the read-only model.
//!
//! Processes and threads get XProf's ids: host planes (`/host:CPU…`, sorted by name) from
//! pid 701 up, GPU planes (else TPU planes) `1 + plane.id` (501+ clamps to 1), custom planes
//! `501 + plane.id`; a thread is a line, tid = the line's display id (else its id) cut to 32
//! bits. Lines named `_counters_` become one counter track per event name. GPU planes of
//! XSpaces XProf preprocesses (not already grouped) also get XProf's derived lines
//! (`derived.rs`), and their stream lines the display ids XProf gives them then; TPU
//! TensorCore planes get theirs from `tpu_derived.rs` (which needs the step grouping).

use super::derived::{DerivedNames, DerivedPlane, derive_gpu_plane};
use super::tpu_derived::{derive_tpu_plane, is_tensor_core_plane};
use super::visibility::{FlowLevels, LevelAssigner};
use oxprof_grouping::EventGroups;
use oxprof_model::schema::{CUSTOM_PLANE_PREFIX, GPU_PLANE_PREFIX, HOST_THREADS_PLANE_NAME, TPU_PLANE_PREFIX};
use oxprof_model::{Event, IntValue, StatMetadataId, XLine, XPlane, XSpace};
use rayon::prelude::*;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};

/// XProf's `kHostThreadsDeviceId`: pid of the first host plane.
pub const HOST_THREADS_DEVICE_ID: u32 = 701;
/// `kFirstDeviceId`.
const FIRST_DEVICE_ID: u32 = 1;
/// `kLastDeviceId`.
const LAST_DEVICE_ID: u32 = 500;
/// `kFirstCustomPlaneDeviceId`.
const FIRST_CUSTOM_PLANE_DEVICE_ID: u32 = 501;
/// `kCounterEventsLineName`.
const COUNTER_LINE_NAME: &str = "_counters_";

/// XProf's 13 zoom levels (`kLayerResolutions`): 1 s down to 1 ps.
pub const LAYER_RESOLUTIONS_PS: [u64; 13] = [
    1_000_000_000_000,
    100_000_000_000,
    10_000_000_000,
    1_000_000_000,
    100_000_000,
    10_000_000,
    1_000_000,
    100_000,
    10_000,
    1_000,
    100,
    10,
    1,
];
/// [`TrackInfo::level`] of an event XProf's storage drops (never visible).
pub(crate) const DROPPED_LEVEL: u8 = u8::MAX;

/// The first of the positions `0..n` for which `before` is false (`before` must be true
/// on a prefix only, as for a time-sorted track).
pub(crate) fn partition_positions(n: u32, before: impl Fn(u32) -> bool) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Number of zoom levels.
pub(crate) const NUM_LEVELS: usize = LAYER_RESOLUTIONS_PS.len();
/// `src` marker of a synthetic `ThreadpoolListener::Region` event.
pub(crate) const REGION_BIT: u32 = 1 << 31;
/// Serial numbers at or above this get no storage key in XProf (the event is dropped).
pub(crate) const MAX_SERIAL: u32 = 256;

/// `XFlow` direction as XProf's trace event flow entry type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowEntry {
    /// `FLOW_START` (`kFlowOut`).
    Start,
    /// `FLOW_MID` (`kFlowInOut`).
    Mid,
    /// `FLOW_END` (`kFlowIn`).
    End,
}

/// A flow binding of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flow {
    pub(crate) id: u64,
    pub(crate) entry: FlowEntry,
    /// `ContextType` (0..=63).
    pub(crate) category: u8,
    /// The event has an `_a` (`is_async`) stat.
    pub(crate) is_async: bool,
}

impl Flow {
    /// `id` in bits 0–55, entry type in 56–57, category in 58–62, async in 63.
    pub(crate) fn pack(self) -> u64 {
        let entry = match self.entry {
            FlowEntry::Start => 0u64,
            FlowEntry::Mid => 1,
            FlowEntry::End => 2,
        };
        (self.id & ((1 << 56) - 1))
            | (entry << 56)
            | (u64::from(self.category & 31) << 58)
            | (u64::from(self.is_async) << 63)
    }

    pub(crate) fn unpack(v: u64) -> Flow {
        let entry = match (v >> 56) & 3 {
            0 => FlowEntry::Start,
            1 => FlowEntry::Mid,
            _ => FlowEntry::End,
        };
        Flow { id: v & ((1 << 56) - 1), entry, category: ((v >> 58) & 31) as u8, is_async: v >> 63 != 0 }
    }
}

/// A process of the trace (one plane).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// XProf's device id (the JSON `pid`, before the multi-host offset).
    pub device_id: u32,
    /// `"<host> <plane name>"`.
    pub name: String,
    /// Threads, sorted by id.
    pub resources: Vec<ResourceInfo>,
}

/// A thread of a process (one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// The JSON `tid`.
    pub resource_id: u32,
    /// The line's display name.
    pub name: String,
    /// Number of events of the line.
    pub num_events: usize,
}

/// What a track holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrackKind {
    /// Complete events of a thread.
    Thread {
        /// The thread id.
        resource_id: u32,
    },
    /// Counter samples of one name.
    Counter {
        /// Counter name.
        name: String,
    },
}

/// Identifies one event of the index: track and position in the track's sorted order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventRef {
    /// Track index.
    pub track: u32,
    /// Position in the track.
    pub pos: u32,
}

impl EventRef {
    /// A single integer id (`track << 32 | pos`), used by the LOD API.
    pub fn to_id(self) -> u64 {
        (u64::from(self.track) << 32) | u64::from(self.pos)
    }

    /// The inverse of [`EventRef::to_id`].
    pub fn from_id(id: u64) -> EventRef {
        EventRef { track: (id >> 32) as u32, pos: id as u32 }
    }
}

/// One track: a thread or a counter, with its events in XProf's order.
#[derive(Debug, Clone, Default)]
pub struct TrackInfo {
    /// Process id (before the multi-host offset).
    pub device_id: u32,
    /// Thread or counter.
    pub kind: Option<TrackKind>,
    /// Plane index in the XSpace.
    pub plane: u32,
    /// Line indexes in the plane (several lines can share one display id).
    pub(crate) lines: Vec<u32>,
    /// Per event: which of `lines` (empty when there is one line).
    pub(crate) line_of: Vec<u16>,
    /// Number of events.
    pub(crate) count: u32,
    /// Per event: the event's index in its line, or `REGION_BIT | region`; empty when the
    /// track is one line already in order (position = index).
    pub(crate) src: Vec<u32>,
    /// Synthetic Region events: (timestamp ps, duration ps).
    pub(crate) regions: Vec<(i64, i64)>,
    /// XProf's serials (unique id among events with the same timestamp) that are not 0,
    /// as `(position, serial)` ascending by position: most timestamps are unique, so most
    /// serials are 0. `u16` because serials ≥ 256 mean "dropped".
    pub(crate) serials: Vec<(u32, u16)>,
    /// Per event: the first zoom level at which it is visible, or [`DROPPED_LEVEL`] (XProf's
    /// storage drops events with serial ≥ 256). One byte per event instead of per-level
    /// position lists (4 bytes per event): a window read scans the bytes of its range.
    pub(crate) level: Vec<u8>,
    /// Positions of the level-0 events, ascending. They are few but may be long (level 0 is
    /// where events of 1 s and more go), so window reads take them from here rather than
    /// scanning back to where the longest one starts.
    pub(crate) level0: Vec<u32>,
    /// Positions of the events with a flow binding, ascending.
    pub(crate) flow_pos: Vec<u32>,
    /// Their flows, packed (see [`Flow::pack`]).
    pub(crate) flow_data: Vec<u64>,
    /// Longest event duration (ps), for window searches.
    pub(crate) max_duration_ps: u64,
    /// Derived-line tracks (see `derived.rs`): per region, the name id of the event in
    /// `derived_names`; empty for other tracks.
    pub(crate) derived_name_ids: Vec<u32>,
    /// Names of the plane's derived events (shared by its derived tracks).
    pub(crate) derived_names: Option<std::sync::Arc<DerivedNames>>,
    /// Derived-line tracks: per region, the event's group id ([`NO_DERIVED_GROUP`]: none);
    /// empty when no event of the track has one.
    pub(crate) derived_groups: Vec<i64>,
}

/// [`TrackInfo::derived_groups`] of a derived event without group id.
pub(crate) const NO_DERIVED_GROUP: i64 = i64::MIN;

impl TrackInfo {
    /// Approximate heap bytes held (derived names shared between tracks are counted once
    /// per track: an overestimate, which is the safe side for a cache bound).
    fn heap_bytes(&self) -> usize {
        fn bytes<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        bytes(&self.lines)
            + bytes(&self.line_of)
            + bytes(&self.src)
            + bytes(&self.regions)
            + bytes(&self.serials)
            + bytes(&self.level)
            + bytes(&self.level0)
            + bytes(&self.flow_pos)
            + bytes(&self.flow_data)
            + bytes(&self.derived_name_ids)
            + bytes(&self.derived_groups)
            + self.derived_names.as_ref().map_or(0, |names| names.heap_bytes())
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True without events.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The source index of the event at `pos` (see `src`).
    pub(crate) fn src_at(&self, pos: u32) -> Option<u32> {
        if pos >= self.count {
            return None;
        }
        if self.src.is_empty() { Some(pos) } else { self.src.get(pos as usize).copied() }
    }

    /// Every flow binding as (position, flow).
    pub(crate) fn flows(&self) -> impl Iterator<Item = (u32, Flow)> + '_ {
        self.flow_pos.iter().zip(&self.flow_data).map(|(&p, &f)| (p, Flow::unpack(f)))
    }

    /// The thread id, for thread tracks.
    pub fn resource_id(&self) -> Option<u32> {
        match &self.kind {
            Some(TrackKind::Thread { resource_id }) => Some(*resource_id),
            _ => None,
        }
    }

    /// The counter name, for counter tracks.
    pub fn counter_name(&self) -> Option<&str> {
        match &self.kind {
            Some(TrackKind::Counter { name }) => Some(name),
            _ => None,
        }
    }

    pub(crate) fn flow_at(&self, pos: u32) -> Option<Flow> {
        let i = self.flow_pos.binary_search(&pos).ok()?;
        self.flow_data.get(i).map(|&f| Flow::unpack(f))
    }

    /// The `long_name` of a derived-line event with a display name.
    pub(crate) fn derived_long_name(&self, pos: u32) -> Option<&str> {
        let region = self.src_at(pos)?.checked_sub(REGION_BIT)?;
        let id = *self.derived_name_ids.get(region as usize)?;
        self.derived_names.as_ref()?.long_name(id)
    }

    /// XProf's serial of the event at `pos`.
    pub(crate) fn serial_at(&self, pos: u32) -> u16 {
        self.serials.binary_search_by_key(&pos, |&(p, _)| p).map_or(0, |i| self.serials[i].1)
    }

    /// Positions of the events of levels `0..=last` that start in `[min_ts(level), end]`,
    /// ascending. `min_ts` must not decrease from level 1 on (finer levels reach back less).
    pub(crate) fn positions_in_levels(
        &self,
        space: &XSpace,
        last: usize,
        min_ts: impl Fn(usize) -> u64,
        end: u64,
    ) -> Vec<u32> {
        let ts_at = |pos: u32| view_in(space, self, pos).map_or(0, |v| v.ts);
        let first_at_or_after = |ts: u64| partition_positions(self.count, |p| ts_at(p) < ts);
        let mut out: Vec<u32> =
            self.level0.iter().copied().filter(|&p| (min_ts(0)..=end).contains(&ts_at(p))).collect();
        let from_level0 = out.len();
        let last = last.min(NUM_LEVELS - 1);
        if last >= 1 {
            let hi = partition_positions(self.count, |p| ts_at(p) <= end);
            // Per level, the first position at or after its bound (non-decreasing): the
            // scan then reads level bytes only, no events.
            let mut first = [0u32; NUM_LEVELS];
            for (level, slot) in first.iter_mut().enumerate().take(last + 1).skip(1) {
                *slot = first_at_or_after(min_ts(level));
            }
            let lo = first[1];
            for pos in lo..hi {
                let level = usize::from(self.level.get(pos as usize).copied().unwrap_or(DROPPED_LEVEL));
                if level == 0 || level > last || pos < first[level] {
                    continue;
                }
                out.push(pos);
            }
        }
        if from_level0 > 0 {
            out.sort_unstable();
        }
        out
    }

    /// Whether the event was dropped by XProf's storage (serial ≥ 256).
    pub(crate) fn is_dropped(&self, pos: u32) -> bool {
        pos >= self.count || u32::from(self.serial_at(pos)) >= MAX_SERIAL
    }
}

/// The trace index of one host (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct TraceIndex {
    /// Host name (device names start with it).
    pub hostname: String,
    /// Processes, sorted by id.
    pub devices: Vec<DeviceInfo>,
    /// Tracks, sorted by (device id, counters first, thread id).
    pub tracks: Vec<TrackInfo>,
    /// Earliest event start (ps), XProf's `min_timestamp_ps`.
    pub min_ps: u64,
    /// Latest event end (ps), XProf's `max_timestamp_ps`.
    pub max_ps: u64,
    /// Total number of events.
    pub num_events: usize,
    /// `"@@"`-interned strings of XProf's name table (long names and `hlo_text` values
    /// longer than 16 bytes), the `stackFrames` of the JSON; sorted by XProf's fingerprint.
    pub stack_frames: Vec<(u64, String)>,
}

/// Read access to one event's data in the model.
#[derive(Clone, Copy)]
pub(crate) struct EventView<'a> {
    /// The model event (None for synthetic Region events).
    pub(crate) event: Option<Event<'a>>,
    pub(crate) ts: u64,
    pub(crate) dur: u64,
    pub(crate) plane_index: usize,
    pub(crate) line_index: usize,
    /// Name of a derived-line event (`event` is None then).
    pub(crate) derived_name: Option<&'a str>,
    /// Group id of a derived-line event.
    pub(crate) derived_group: Option<i64>,
}

impl<'a> EventView<'a> {
    /// XProf's event name: the display name if set, else the name; `step_name` wins.
    pub(crate) fn name(&self, groups: &'a EventGroups) -> &'a str {
        match self.event {
            None => self.derived_name.unwrap_or(REGION_EVENT_NAME),
            Some(e) => {
                if let Some(step) = step_name(groups, self.plane_index, self.line_index, &e) {
                    return step;
                }
                e.display_name()
            }
        }
    }

    pub(crate) fn group_id(&self, groups: &EventGroups) -> Option<i64> {
        let Some(e) = self.event else { return self.derived_group };
        groups.group_id(self.plane_index, self.line_index, e.index())
    }
}

/// The name of the synthetic Region events of the threadpool line mutator.
pub(crate) const REGION_EVENT_NAME: &str = "ThreadpoolListener::Region";
const START_REGION: &str = "ThreadpoolListener::StartRegion";
const STOP_REGION: &str = "ThreadpoolListener::StopRegion";

fn step_name<'a>(groups: &'a EventGroups, plane: usize, line: usize, e: &Event<'a>) -> Option<&'a str> {
    if let Some(name) = groups.step_name(plane, line, e.index()) {
        return Some(name);
    }
    // An already grouped file carries the stat itself; EventGroups reports it too, but a
    // metadata-level `step_name` is only visible through the stats.
    e.stat(oxprof_model::schema::StatType::StepName).and_then(|s| s.as_str()).filter(|s| !s.is_empty())
}

/// XProf's `IsInternalEvent`, by metadata name.
pub(crate) fn is_internal_event_name(name: &str) -> bool {
    matches!(
        name,
        "MemoryAllocation"
            | "MemoryDeallocation"
            | "PrefetchProduce"
            | "PrefetchConsume"
            | "Prefetch::Produce"
            | "Prefetch::Consume"
            | "ParallelInterleaveProduce"
            | "ParallelInterleaveConsume"
            | "ParallelInterleaveInitializedInput"
            | "ParallelMapProduce"
            | "ParallelMapConsume"
            | "MapAndBatchProduce"
            | "MapAndBatchConsume"
            | "ParseExampleProduce"
            | "ParseExampleConsume"
    )
}

/// XProf's `IsInternalStat`, by stat name.
pub(crate) fn is_internal_stat_name(name: &str) -> bool {
    matches!(name, "kernel_details" | "_pt" | "_p" | "_ct" | "_c" | "_r" | "flops" | "program_id" | "symbol_id")
}

/// `ContextType` names (`GetContextTypeString`); generic and legacy have none.
pub(crate) fn context_type_name(category: u8) -> &'static str {
    match category {
        2 => "tf_exec",
        3 => "tfrt_exec",
        4 => "batch_sched",
        5 => "PjRt",
        6 => "as_batch_sched",
        7 => "tfrt_rt",
        8 => "tpu_embed",
        9 => "gpu_launch",
        10 => "batcher",
        11 => "tpu_stream",
        12 => "tpu_launch",
        13 => "pathways_exec",
        14 => "pjrt_library_call",
        15 => "threadpool_event",
        16 => "jax_serving_executor",
        _ => "",
    }
}

/// `GetSafeContextType`: categories past the last known one are generic.
fn safe_context_type(value: u64) -> u8 {
    if value > 16 { 0 } else { value as u8 }
}

/// `XFlow::FromStatValue`: direction in bits 0–1, id in bits 2–57, category in 58–63.
fn decode_flow(encoded: u64) -> Option<(u64, FlowEntry, u8)> {
    let entry = match encoded & 3 {
        1 => FlowEntry::End,
        2 => FlowEntry::Start,
        3 => FlowEntry::Mid,
        _ => return None, // FLOW_NONE: XProf adds no flow binding
    };
    Some(((encoded >> 2) & ((1 << 56) - 1), entry, safe_context_type(encoded >> 58)))
}

/// A stand-in for `XFlow::GetFlowId` (`absl::HashOf(...)` masked to 56 bits): XProf's
/// value is salted per process, so only equality matters.
fn flow_id(parts: &[u64]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for &p in parts {
        h ^= p.wrapping_add(0x9e37_79b9_7f4a_7c15).wrapping_add(h << 6).wrapping_add(h >> 2);
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
    }
    h & ((1 << 56) - 1)
}

/// Which stat metadata of a plane matter for flows, by dense stat metadata index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FlowStat {
    Flow,
    Async,
    Correlation,
    ProducerType,
    Producer,
    ConsumerType,
    Consumer,
}

/// Per plane: the flow-relevant kind of each stat metadata, and whether any exists.
struct FlowStats {
    kinds: Vec<Option<FlowStat>>,
    any: bool,
}

impl FlowStats {
    fn new(plane: &XPlane) -> FlowStats {
        let kinds: Vec<Option<FlowStat>> = plane
            .stat_metadata()
            .iter()
            .map(|m| match plane.str(m.name) {
                "flow" => Some(FlowStat::Flow),
                "_a" => Some(FlowStat::Async),
                "correlation_id" => Some(FlowStat::Correlation),
                "_pt" => Some(FlowStat::ProducerType),
                "_p" => Some(FlowStat::Producer),
                "_ct" => Some(FlowStat::ConsumerType),
                "_c" => Some(FlowStat::Consumer),
                _ => None,
            })
            .collect();
        let any = kinds.iter().any(Option::is_some);
        FlowStats { kinds, any }
    }

    fn kind(&self, meta: StatMetadataId) -> Option<FlowStat> {
        self.kinds.get(meta.index()).copied().flatten()
    }
}

/// The flow of an event: its own `flow` stat (metadata stats first, then event stats; the
/// last one wins), then those `AddFlowsToXplane` appends when XProf groups the space
/// (correlation id; producer; consumer — again the last wins).
fn event_flow(e: &Event<'_>, kinds: &FlowStats, synthesize: Option<(u64, bool)>) -> Option<Flow> {
    let mut flow = None;
    let mut is_async = false;
    let mut corr = None;
    let (mut pt, mut p, mut ct, mut c) = (None, None, None, None);
    // Every flow stat is read as an integer: the raw values, no string or ref resolved.
    let own_stats = e.stats().int_values().map(|s| (true, s));
    for (own, (meta, value)) in e.metadata_stats().int_values().map(|s| (false, s)).chain(own_stats) {
        // `Stat::as_u64`: an int wraps, anything else is no value.
        let as_u64 = || match value {
            IntValue::Int64(x) => Some(x as u64),
            IntValue::Uint64(x) => Some(x),
            IntValue::NotInt => None,
        };
        match kinds.kind(meta) {
            None => {}
            Some(FlowStat::Flow) => {
                if let Some((id, entry, category)) = as_u64().and_then(decode_flow) {
                    flow = Some(Flow { id, entry, category, is_async: false });
                }
            }
            Some(FlowStat::Async) => is_async = true,
            // `AddFlowsToXplane` reads the event's own stats only.
            Some(_) if !own => {}
            Some(FlowStat::Correlation) => corr = as_u64(),
            Some(FlowStat::ProducerType) => pt = as_u64(),
            Some(FlowStat::Producer) => p = as_u64(),
            Some(FlowStat::ConsumerType) => ct = as_u64(),
            Some(FlowStat::Consumer) => c = as_u64(),
        }
    }
    if let Some((host_id, is_host_plane)) = synthesize {
        if let Some(corr) = corr {
            let entry = if is_host_plane { FlowEntry::Start } else { FlowEntry::End };
            flow = Some(Flow { id: flow_id(&[host_id, corr]), entry, category: 9, is_async: false });
        }
        if let (Some(t), Some(id)) = (pt, p) {
            let t = safe_context_type(t);
            flow = Some(Flow {
                id: flow_id(&[host_id, id, u64::from(t)]),
                entry: FlowEntry::Start,
                category: t,
                is_async: false,
            });
        }
        if let (Some(t), Some(id)) = (ct, c) {
            let t = safe_context_type(t);
            flow = Some(Flow {
                id: flow_id(&[host_id, id, u64::from(t)]),
                entry: FlowEntry::End,
                category: t,
                is_async: false,
            });
        }
    }
    flow.map(|f| Flow { is_async, ..f })
}

/// A plane to convert, with its device id.
struct PlaneJob {
    plane: usize,
    device_id: u32,
}

/// XProf's plane selection and device ids (`ConvertXSpaceToTraceEventsContainer`).
fn plane_jobs(space: &XSpace) -> Vec<PlaneJob> {
    let mut jobs = Vec::new();
    let mut hosts: Vec<usize> =
        (0..space.planes.len()).filter(|&i| space.planes[i].name.starts_with(HOST_THREADS_PLANE_NAME)).collect();
    hosts.sort_by(|&a, &b| space.planes[a].name.cmp(&space.planes[b].name));
    for (k, plane) in hosts.into_iter().enumerate() {
        jobs.push(PlaneJob { plane, device_id: HOST_THREADS_DEVICE_ID + k as u32 });
    }
    let mut devices: Vec<usize> =
        (0..space.planes.len()).filter(|&i| space.planes[i].name.starts_with(GPU_PLANE_PREFIX)).collect();
    if devices.is_empty() {
        devices = (0..space.planes.len()).filter(|&i| space.planes[i].name.starts_with(TPU_PLANE_PREFIX)).collect();
    }
    for plane in devices {
        let mut pid = FIRST_DEVICE_ID.wrapping_add(space.planes[plane].id as u32);
        if pid > LAST_DEVICE_ID {
            pid = FIRST_DEVICE_ID;
        }
        jobs.push(PlaneJob { plane, device_id: pid });
    }
    for (i, p) in space.planes.iter().enumerate() {
        if p.name.starts_with(CUSTOM_PLANE_PREFIX) {
            jobs.push(PlaneJob { plane: i, device_id: FIRST_CUSTOM_PLANE_DEVICE_ID.wrapping_add(p.id as u32) });
        }
    }
    jobs
}

/// Pairs StopRegion events with the latest StartRegion carrying `_c` (XProf's threadpool
/// line mutator; see `grouping::preprocess::threadpool_regions`), as (ts, duration).
///
/// ```text
/// worker  |Start _c=7|......work......|Stop|   |Stop|
///         |<------- Region ----------->|
///         |<------------- Region ---------------->|
/// ```
fn threadpool_regions(plane: &XPlane, line: &XLine, start_md: &[bool], stop_md: &[bool]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut start: Option<i64> = None;
    for e in line.events(plane) {
        let m = e.metadata_id().index();
        if start_md.get(m).copied().unwrap_or(false) {
            if e.stats().any(|s| s.name() == "_c") {
                start = Some(e.timestamp_ps());
            }
        } else if stop_md.get(m).copied().unwrap_or(false)
            && let Some(ts) = start.filter(|&ts| ts != 0)
        {
            out.push((ts, e.timestamp_ps().wrapping_sub(ts)));
        }
    }
    out
}

/// Options of [`TraceIndex::build`].
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildOptions {
    /// Add XProf's preprocessing flows and Region events (true unless the XSpace was
    /// already grouped, as XProf's `PreprocessSingleHostXSpace` decides).
    pub preprocess: bool,
}

/// A track under construction.
struct TrackSpec {
    device_id: u32,
    kind: TrackKind,
    plane: usize,
    lines: Vec<u32>,
    /// Counter tracks: metadata ids of this counter's events.
    counter_metadata: Option<u32>,
    /// Add Region events from these lines.
    regions: bool,
    /// A derived line: its events and the plane's derived names.
    derived: Option<(Vec<super::derived::DerivedEvent>, std::sync::Arc<DerivedNames>)>,
}

impl TraceIndex {
    /// Approximate heap bytes held, for cache bounds.
    pub fn heap_bytes(&self) -> usize {
        let devices: usize = self
            .devices
            .iter()
            .map(|d| d.name.len() + d.resources.iter().map(|r| r.name.len() + 64).sum::<usize>() + 64)
            .sum();
        let frames: usize = self.stack_frames.iter().map(|(_, s)| s.len() + 32).sum();
        devices + frames + self.tracks.iter().map(|t| t.heap_bytes() + std::mem::size_of::<TrackInfo>()).sum::<usize>()
    }

    /// Builds the index of one host's XSpace (tracks in parallel).
    pub fn build(space: &XSpace, hostname: &str) -> TraceIndex {
        let preprocess = !oxprof_grouping::every_plane_grouped(space);
        Self::build_with(space, hostname, BuildOptions { preprocess })
    }

    /// [`TraceIndex::build`] given the XSpace's step grouping (see [`TraceIndex::uses_groups`]).
    pub fn build_grouped(space: &XSpace, hostname: &str, groups: &EventGroups) -> TraceIndex {
        let preprocess = !oxprof_grouping::every_plane_grouped(space);
        Self::build_with_groups(space, hostname, BuildOptions { preprocess }, Some(groups))
    }

    /// [`TraceIndex::build`] with explicit options.
    pub fn build_with(space: &XSpace, hostname: &str, options: BuildOptions) -> TraceIndex {
        Self::build_with_groups(space, hostname, options, None)
    }

    /// Whether building the index of `space` uses its step grouping (the derived lines of
    /// TPU TensorCore planes do): callers that need the grouping anyway pass it to
    /// [`TraceIndex::build_with_groups`] instead of letting the build group a second time.
    pub fn uses_groups(space: &XSpace) -> bool {
        space.planes.iter().any(|p| is_tensor_core_plane(&p.name))
    }

    /// [`TraceIndex::build_with`] given the XSpace's step grouping, which the derived lines
    /// of TPU planes need (computed here when needed and not given).
    pub fn build_with_groups(
        space: &XSpace,
        hostname: &str,
        options: BuildOptions,
        groups: Option<&EventGroups>,
    ) -> TraceIndex {
        let host_id =
            space.hostnames.first().map_or(0, |h| flow_id(&[h.len() as u64]) ^ h.bytes().map(u64::from).sum::<u64>());
        let mut devices: BTreeMap<u32, DeviceInfo> = BTreeMap::new();
        let mut specs: Vec<TrackSpec> = Vec::new();
        let jobs = plane_jobs(space);
        // XProf's `GenerateDerivedTimeLines` (run with its preprocessing) on GPU planes.
        let derive = options.preprocess
            && jobs.iter().any(|j| space.planes.get(j.plane).is_some_and(|p| p.name.starts_with(GPU_PLANE_PREFIX)));
        let hlo = if derive { oxprof_hlo::HloModuleMap::from_space(space) } else { Default::default() };
        let derive_tpu = options.preprocess
            && jobs.iter().any(|j| space.planes.get(j.plane).is_some_and(|p| is_tensor_core_plane(&p.name)));
        let own_groups = (derive_tpu && groups.is_none()).then(|| oxprof_grouping::group_events(space));
        let tpu_groups = groups.or(own_groups.as_ref());
        let derived: Vec<Option<DerivedPlane>> = jobs
            .par_iter()
            .map(|j| {
                let plane = space.planes.get(j.plane)?;
                if let Some(groups) = tpu_groups.filter(|_| is_tensor_core_plane(&plane.name)) {
                    return Some(derive_tpu_plane(plane, j.plane, groups));
                }
                (derive && plane.name.starts_with(GPU_PLANE_PREFIX)).then(|| derive_gpu_plane(plane, &hlo))
            })
            .collect();
        drop(own_groups);
        for (job, derived) in jobs.into_iter().zip(derived) {
            let Some(plane) = space.planes.get(job.plane) else { continue };
            if plane.lines.is_empty() {
                continue;
            }
            let device = devices.entry(job.device_id).or_insert_with(|| DeviceInfo {
                device_id: job.device_id,
                name: String::new(),
                resources: Vec::new(),
            });
            device.name = format!("{hostname} {}", plane.name);
            let names: Vec<&str> = plane.event_metadata().iter().map(|m| plane.str(m.name)).collect();
            let start_md: Vec<bool> = names.iter().map(|n| *n == START_REGION).collect();
            let stop_md: Vec<bool> = names.iter().map(|n| *n == STOP_REGION).collect();
            let regions = options.preprocess && start_md.contains(&true) && stop_md.contains(&true);
            let mut by_resource: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            let mut counters: BTreeMap<String, (u32, Vec<u32>)> = BTreeMap::new();
            for (li, line) in plane.lines.iter().enumerate() {
                if line.event_count() == 0 || line.name.starts_with("counters_") {
                    continue;
                }
                if line.name == COUNTER_LINE_NAME {
                    for e in line.events(plane) {
                        let name = e.name().to_string();
                        let entry = counters.entry(name).or_insert((e.metadata_id().index() as u32, Vec::new()));
                        if !entry.1.contains(&(li as u32)) {
                            entry.1.push(li as u32);
                        }
                    }
                    continue;
                }
                let rid = match derived.as_ref().and_then(|d| d.stream_display_id(li as u32)) {
                    Some(display_id) => display_id,
                    None => (if line.display_id != 0 { line.display_id } else { line.id }) as u32,
                };
                let name = if line.display_name.is_empty() { line.name.clone() } else { line.display_name.clone() };
                match device.resources.iter_mut().find(|r| r.resource_id == rid) {
                    Some(r) => {
                        r.name = name;
                        r.num_events = line.event_count();
                    }
                    None => {
                        device.resources.push(ResourceInfo { resource_id: rid, name, num_events: line.event_count() })
                    }
                }
                by_resource.entry(rid).or_default().push(li as u32);
            }
            if let Some(mut d) = derived {
                let names = std::sync::Arc::new(std::mem::take(&mut d.names));
                for line in d.lines {
                    device.resources.push(ResourceInfo {
                        resource_id: line.display_id,
                        name: line.name,
                        num_events: line.events.len(),
                    });
                    specs.push(TrackSpec {
                        device_id: job.device_id,
                        kind: TrackKind::Thread { resource_id: line.display_id },
                        plane: job.plane,
                        lines: vec![line.source_line],
                        counter_metadata: None,
                        regions: false,
                        derived: Some((line.events, std::sync::Arc::clone(&names))),
                    });
                }
            }
            device.resources.sort_by_key(|r| r.resource_id);
            for (name, (metadata, lines)) in counters {
                specs.push(TrackSpec {
                    device_id: job.device_id,
                    kind: TrackKind::Counter { name },
                    plane: job.plane,
                    lines,
                    counter_metadata: Some(metadata),
                    regions: false,
                    derived: None,
                });
            }
            for (rid, lines) in by_resource {
                specs.push(TrackSpec {
                    device_id: job.device_id,
                    kind: TrackKind::Thread { resource_id: rid },
                    plane: job.plane,
                    lines,
                    counter_metadata: None,
                    regions,
                    derived: None,
                });
            }
        }
        specs.sort_by(|a, b| {
            let key = |s: &TrackSpec| match &s.kind {
                TrackKind::Counter { .. } => (s.device_id, 0u8, 0u32),
                TrackKind::Thread { resource_id } => (s.device_id, 1, *resource_id),
            };
            key(a).cmp(&key(b))
        });
        let mut tracks: Vec<TrackInfo> =
            specs.par_iter().map(|spec| build_track(space, spec, options, host_id)).collect();
        tracks.retain(|t| !t.is_empty());
        let mut index = TraceIndex {
            hostname: hostname.to_string(),
            devices: devices.into_values().collect(),
            num_events: tracks.iter().map(TrackInfo::len).sum(),
            tracks,
            ..TraceIndex::default()
        };
        index.assign_serials_and_levels(space);
        index
    }

    /// `MaybeAddEventUniqueId` (serials over all events in XProf's global order) and
    /// `GetEventsByLevel` (each event's first visible zoom level).
    ///
    /// The global order is a k-way merge of the already sorted tracks by XProf's
    /// `TraceEventsComparator` (timestamp, longer first, device, threads before counters,
    /// thread id). Flow visibility per level is decided in that order first (only the first
    /// event of a flow counts), then tracks are assigned levels in parallel.
    ///
    /// ```text
    /// thread 1:  serials (all events, global order), stack frames, span ─┐
    /// thread 2:  flow levels (flow events, global order) ────────────────┴─ levels per track
    ///            then: events with serial ≥ 256 are marked dropped           (both threads)
    /// ```
    /// The levels do not depend on the serials (a dropped event still moves the
    /// visibility state; it is only left out of the output), so the two overlap.
    fn assign_serials_and_levels(&mut self, space: &XSpace) {
        let span_of = |t: &TrackInfo, pos: u32| view_in(space, t, pos).map_or((0, 0), |v| (v.ts, v.dur));
        let tracks = &self.tracks;
        let ((serials, stack_frames, (min_ps, max_ps)), mut levels) = rayon::join(
            || {
                let mut serials: Vec<Vec<(u32, u16)>> = vec![Vec::new(); tracks.len()];
                let mut last_ts = u64::MAX;
                let mut serial: u32 = 0;
                merge_in_order(
                    tracks,
                    |t| t.count,
                    |_, p| p,
                    span_of,
                    |ti, pos, ts, _| {
                        serial = if ts == last_ts { serial.saturating_add(1) } else { 0 };
                        last_ts = ts;
                        // Each track's positions come in ascending order.
                        if serial != 0
                            && let Some(track) = serials.get_mut(ti)
                        {
                            track.push((pos, serial.min(u32::from(u16::MAX)) as u16));
                        }
                    },
                );
                serials.iter_mut().for_each(Vec::shrink_to_fit);
                // Independent of levels; done here while the flow pass still runs.
                (serials, collect_stack_frames(space, tracks), trace_span(space, tracks))
            },
            || {
                // Per track, per flow event (as `flow_pos`): the first level of its flow.
                let mut flow_first: Vec<Vec<u8>> = tracks.iter().map(|t| vec![0; t.flow_pos.len()]).collect();
                let mut flow_vis = FlowLevels::default();
                let count = |t: &TrackInfo| t.flow_pos.len() as u32;
                let at = |t: &TrackInfo, k: u32| t.flow_pos.get(k as usize).copied().unwrap_or(0);
                merge_in_order(tracks, count, at, span_of, |ti, k, ts, dur| {
                    let Some(&packed) = tracks[ti].flow_data.get(k as usize) else { return };
                    let flow = Flow::unpack(packed);
                    let (_, first) = flow_vis.visit(ti, ts, dur, (flow.id, flow.entry));
                    if let Some(slot) = flow_first.get_mut(ti).and_then(|f| f.get_mut(k as usize)) {
                        *slot = first;
                    }
                });
                drop(flow_vis);
                tracks
                    .par_iter()
                    .zip(flow_first)
                    .map(|(t, flow_first)| track_levels(t, &flow_first, span_of))
                    .collect::<Vec<(Vec<u8>, Vec<u32>)>>()
            },
        );
        (self.stack_frames, self.min_ps, self.max_ps) = (stack_frames, min_ps, max_ps);
        for ((t, serials), (level, level0)) in self.tracks.iter_mut().zip(serials).zip(levels.iter_mut()) {
            t.serials = serials;
            t.level = std::mem::take(level);
            t.level0 = std::mem::take(level0);
            for &(pos, serial) in &t.serials {
                if u32::from(serial) >= MAX_SERIAL
                    && let Some(level) = t.level.get_mut(pos as usize)
                {
                    if *level == 0 {
                        t.level0.retain(|&p| p != pos);
                    }
                    *level = DROPPED_LEVEL;
                }
            }
        }
    }
}

/// Each event's first visible level for one track (see [`TrackInfo::level`], before
/// dropped events are marked), and the positions of its level-0 events.
fn track_levels(
    t: &TrackInfo,
    flow_first: &[u8],
    span_of: impl Fn(&TrackInfo, u32) -> (u64, u64),
) -> (Vec<u8>, Vec<u32>) {
    let mut assigner = LevelAssigner::new(t.resource_id().is_some());
    let mut levels: Vec<u8> = Vec::with_capacity(t.count as usize);
    let mut level0 = Vec::new();
    let mut flows = t.flow_pos.iter().zip(flow_first).peekable();
    for pos in 0..t.count {
        let (ts, dur) = span_of(t, pos);
        let mut flow_level = None;
        if let Some(&(&p, &first)) = flows.peek()
            && p == pos
        {
            flows.next();
            flow_level = Some(Some(usize::from(first)).filter(|&l| l < NUM_LEVELS - 1));
        }
        let level = assigner.assign(ts, dur, flow_level);
        levels.push(level as u8);
        if level == 0 {
            level0.push(pos);
        }
    }
    (levels, level0)
}

/// `ExpandTraceSpan` over all events: (earliest start, latest end), ps.
fn trace_span(space: &XSpace, tracks: &[TrackInfo]) -> (u64, u64) {
    const MAX_TS: u64 = u64::MAX / 2;
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for t in tracks {
        for pos in 0..t.len() as u32 {
            if let Some(v) = view_in(space, t, pos) {
                let end = v.ts.wrapping_add(v.dur);
                if v.ts <= MAX_TS {
                    lo = lo.min(v.ts);
                }
                if end <= MAX_TS {
                    hi = hi.max(end);
                }
            }
        }
    }
    (if lo == u64::MAX { 0 } else { lo }, hi)
}

/// Visits items of the tracks in XProf's global event order (`TraceEventsComparator`:
/// start, longer first, device, threads before counters, thread id; then track and
/// position): a k-way merge of the tracks, each already in that order. `count(t)` items per
/// track, item `k` at position `at(t, k)`; `visit(track, k, ts, dur)`.
fn merge_in_order(
    tracks: &[TrackInfo],
    count: impl Fn(&TrackInfo) -> u32,
    at: impl Fn(&TrackInfo, u32) -> u32,
    span_of: impl Fn(&TrackInfo, u32) -> (u64, u64),
    mut visit: impl FnMut(usize, u32, u64, u64),
) {
    let has_async: Vec<bool> = tracks.iter().map(has_async_flows).collect();
    let key = |ti: usize, k: u32| {
        let t = &tracks[ti];
        let pos = at(t, k);
        let (ts, dur) = span_of(t, pos);
        let (class, rid) = order_class(t, pos, has_async[ti]);
        Reverse((ts, Reverse(dur), t.device_id, class, rid, ti, k))
    };
    let mut heap = BinaryHeap::with_capacity(tracks.len());
    for (ti, t) in tracks.iter().enumerate() {
        if count(t) > 0 {
            heap.push(key(ti, 0));
        }
    }
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((ts, Reverse(dur), _, _, _, ti, k)) = *top;
        visit(ti, k, ts, dur);
        if k + 1 < count(&tracks[ti]) {
            *top = key(ti, k + 1);
        } else {
            std::collections::binary_heap::PeekMut::pop(top);
        }
    }
}

/// The part of XProf's `TraceEventsComparator` after start, duration and device: events
/// with a resource id (thread events) first, by resource id; then counters and async
/// events (an async flow event has no resource id). `has_async` is
/// [`has_async_flows`] of the track (checked once per track, not per event).
pub(crate) fn order_class(t: &TrackInfo, pos: u32, has_async: bool) -> (u8, u32) {
    match &t.kind {
        Some(TrackKind::Thread { .. }) if has_async && t.flow_at(pos).is_some_and(|f| f.is_async) => (1, 0),
        Some(TrackKind::Thread { resource_id }) => (0, *resource_id),
        _ => (1, 0),
    }
}

/// Whether some event of the track is an async flow event.
pub(crate) fn has_async_flows(t: &TrackInfo) -> bool {
    t.flow_data.iter().any(|&f| Flow::unpack(f).is_async)
}

/// Read access to the event at `pos` of a track.
pub(crate) fn view_in<'a>(space: &'a XSpace, t: &'a TrackInfo, pos: u32) -> Option<EventView<'a>> {
    let plane_index = t.plane as usize;
    let plane = space.planes.get(plane_index)?;
    let src = t.src_at(pos)?;
    let which = if t.line_of.is_empty() { 0 } else { usize::from(*t.line_of.get(pos as usize)?) };
    let line_index = *t.lines.get(which)? as usize;
    let line = plane.lines.get(line_index)?;
    if src & REGION_BIT != 0 {
        let region = (src & !REGION_BIT) as usize;
        let &(ts, dur) = t.regions.get(region)?;
        let derived_name = match (&t.derived_names, t.derived_name_ids.get(region)) {
            (Some(names), Some(&id)) => Some(names.shown(id)),
            _ => None,
        };
        let derived_group = t.derived_groups.get(region).copied().filter(|&g| g != NO_DERIVED_GROUP);
        return Some(EventView {
            event: None,
            ts: ts as u64,
            dur: dur as u64,
            plane_index,
            line_index,
            derived_name,
            derived_group,
        });
    }
    let index = src as usize;
    if index >= line.event_count() {
        return None;
    }
    let e = line.event(plane, index);
    Some(EventView {
        event: Some(e),
        ts: e.timestamp_ps() as u64,
        dur: e.duration_ps() as u64,
        plane_index,
        line_index,
        derived_name: None,
        derived_group: None,
    })
}

/// Builds one track: its events (minus internal ones) in XProf's order (timestamp
/// ascending, duration descending, file order on ties), and their flows.
fn build_track(space: &XSpace, spec: &TrackSpec, options: BuildOptions, host_id: u64) -> TrackInfo {
    let mut t = TrackInfo {
        device_id: spec.device_id,
        kind: Some(spec.kind.clone()),
        plane: spec.plane as u32,
        lines: spec.lines.clone(),
        ..TrackInfo::default()
    };
    let Some(plane) = space.planes.get(spec.plane) else { return t };
    if let Some((events, names)) = &spec.derived {
        build_derived_track(&mut t, events, names);
        return t;
    }
    let internal: Vec<bool> =
        plane.event_metadata().iter().map(|m| is_internal_event_name(plane.str(m.name))).collect();
    let is_host_plane = !plane.name.starts_with("/device");
    let synthesize = options.preprocess.then_some((host_id, is_host_plane));
    // Fast path: one line whose shown events are already in XProf's order: positions are
    // the line's indexes (or, when internal events are left out, a table of the kept
    // indexes) and no sort table is needed; with Region events, the sorted regions are
    // merged in (events first on ties, as the stable sort below would).
    if spec.lines.len() == 1
        && spec.counter_metadata.is_none()
        && let Some(line) = spec.lines.first().and_then(|&li| plane.lines.get(li as usize))
    {
        let mut in_order = true;
        let mut skipped = false;
        let mut previous: Option<(u64, u64)> = None;
        let mut max_duration = 0u64;
        for e in line.events(plane) {
            if internal.get(e.metadata_id().index()).copied().unwrap_or(false) {
                skipped = true;
                continue;
            }
            let key = (e.timestamp_ps() as u64, e.duration_ps() as u64);
            if previous.is_some_and(|p| p.0 > key.0 || (p.0 == key.0 && p.1 < key.1)) {
                in_order = false;
                break;
            }
            previous = Some(key);
            max_duration = max_duration.max(key.1);
        }
        let kept: Vec<u32> = if in_order && skipped {
            line.events(plane)
                .filter(|e| !internal.get(e.metadata_id().index()).copied().unwrap_or(false))
                .map(|e| e.index() as u32)
                .collect()
        } else {
            Vec::new()
        };
        // (A line of internal events only takes the general path: an empty `src` means
        // "every event" here.)
        if in_order && (!skipped || !kept.is_empty()) {
            t.count = if skipped { kept.len() as u32 } else { line.event_count() as u32 };
            t.src = kept;
            t.max_duration_ps = max_duration;
            if spec.regions {
                merge_regions(plane, line, &mut t);
            }
            add_flows(space, &mut t, synthesize);
            return t;
        }
    }
    // (ts, duration, line selector, src)
    let mut rows: Vec<(u64, u64, u16, u32)> = Vec::new();
    for (k, &li) in spec.lines.iter().enumerate() {
        let Some(line) = plane.lines.get(li as usize) else { continue };
        let counter_name =
            spec.counter_metadata.and_then(|cm| plane.event_metadata().get(cm as usize)).map(|m| plane.str(m.name));
        for e in line.events(plane) {
            let m = e.metadata_id().index();
            if internal.get(m).copied().unwrap_or(false) {
                continue;
            }
            if let Some(name) = counter_name
                && plane.str(e.metadata().name) != name
            {
                continue;
            }
            rows.push((e.timestamp_ps() as u64, e.duration_ps() as u64, k as u16, e.index() as u32));
        }
        if spec.regions {
            let start_md: Vec<bool> =
                plane.event_metadata().iter().map(|m| plane.str(m.name) == START_REGION).collect();
            let stop_md: Vec<bool> = plane.event_metadata().iter().map(|m| plane.str(m.name) == STOP_REGION).collect();
            for (ts, dur) in threadpool_regions(plane, line, &start_md, &stop_md) {
                rows.push((ts as u64, dur as u64, k as u16, REGION_BIT | t.regions.len() as u32));
                t.regions.push((ts, dur));
            }
        }
    }
    // XProf 2.24.2 keeps ties (same start and duration) in file order (its event name
    // tie-break does not show in its output: see the TF name-scope lines of the
    // GPU-multi-worker profile), so the sort is stable on (start, duration descending).
    let cmp = |a: &(u64, u64, u16, u32), b: &(u64, u64, u16, u32)| -> Ordering { a.0.cmp(&b.0).then(b.1.cmp(&a.1)) };
    let sorted = rows.windows(2).all(|w| cmp(&w[0], &w[1]) != Ordering::Greater);
    if !sorted {
        rows.par_sort_by(cmp);
    }
    t.max_duration_ps = rows.iter().map(|r| r.1).max().unwrap_or(0);
    if spec.lines.len() > 1 {
        t.line_of = rows.iter().map(|r| r.2).collect();
    }
    t.count = rows.len() as u32;
    t.src = rows.iter().map(|r| r.3).collect();
    drop(rows);
    if matches!(spec.kind, TrackKind::Thread { .. }) {
        add_flows(space, &mut t, synthesize);
    }
    t
}

/// Fills a derived-line track: its events as Region-like synthetic events in XProf's
/// order (start ascending, longer first, creation order on ties).
fn build_derived_track(
    t: &mut TrackInfo,
    events: &[super::derived::DerivedEvent],
    names: &std::sync::Arc<DerivedNames>,
) {
    let mut order: Vec<u32> = (0..events.len() as u32).collect();
    order.sort_by_key(|&i| events.get(i as usize).map_or((0, Reverse(0)), |e| (e.ts as u64, Reverse(e.dur as u64))));
    t.regions = order.iter().filter_map(|&i| events.get(i as usize)).map(|e| (e.ts, e.dur)).collect();
    t.derived_name_ids = order.iter().filter_map(|&i| events.get(i as usize)).map(|e| e.name).collect();
    if events.iter().any(|e| e.group.is_some()) {
        t.derived_groups =
            order.iter().filter_map(|&i| events.get(i as usize)).map(|e| e.group.unwrap_or(NO_DERIVED_GROUP)).collect();
    }
    t.src = (0..t.regions.len() as u32).map(|i| REGION_BIT | i).collect();
    t.count = t.regions.len() as u32;
    t.max_duration_ps = t.regions.iter().map(|r| r.1 as u64).max().unwrap_or(0);
    t.derived_names = Some(std::sync::Arc::clone(names));
}

/// Adds the Region events of a line whose own events are in order (`src` empty) to a
/// track, merging them into XProf's order without a per-event sort table.
fn merge_regions(plane: &XPlane, line: &XLine, t: &mut TrackInfo) {
    let start_md: Vec<bool> = plane.event_metadata().iter().map(|m| plane.str(m.name) == START_REGION).collect();
    let stop_md: Vec<bool> = plane.event_metadata().iter().map(|m| plane.str(m.name) == STOP_REGION).collect();
    let mut regions = threadpool_regions(plane, line, &start_md, &stop_md);
    if regions.is_empty() {
        return;
    }
    let key = |ts: i64, dur: i64| (ts as u64, Reverse(dur as u64));
    let mut order: Vec<u32> = (0..regions.len() as u32).collect();
    order.sort_by_key(|&r| key(regions[r as usize].0, regions[r as usize].1));
    // The line's shown events: all of them, or those `t.src` lists.
    let kept = std::mem::take(&mut t.src);
    let count = if kept.is_empty() { line.event_count() } else { kept.len() };
    let mut src = Vec::with_capacity(count + regions.len());
    let mut next = order.iter().peekable();
    let all = 0..line.event_count() as u32;
    let indexes: Box<dyn Iterator<Item = u32>> =
        if kept.is_empty() { Box::new(all) } else { Box::new(kept.iter().copied()) };
    for index in indexes {
        let e = line.event(plane, index as usize);
        let k = key(e.timestamp_ps(), e.duration_ps());
        while let Some(&&r) = next.peek() {
            let (ts, dur) = regions[r as usize];
            if key(ts, dur) < k {
                src.push(REGION_BIT | r);
                next.next();
            } else {
                break;
            }
        }
        src.push(e.index() as u32);
    }
    src.extend(next.map(|&r| REGION_BIT | r));
    t.max_duration_ps = t.max_duration_ps.max(regions.iter().map(|r| r.1 as u64).max().unwrap_or(0));
    t.count = src.len() as u32;
    t.src = src;
    t.regions = std::mem::take(&mut regions);
}

/// Finds the flow binding of every event of a thread track.
fn add_flows(space: &XSpace, t: &mut TrackInfo, synthesize: Option<(u64, bool)>) {
    let Some(plane) = space.planes.get(t.plane as usize) else { return };
    let kinds = FlowStats::new(plane);
    if !kinds.any {
        return;
    }
    // Chunks in parallel (one long line is common: a Python tracer thread).
    const CHUNK: u32 = 1 << 16;
    let track: &TrackInfo = t;
    let found: Vec<Vec<(u32, u64)>> = (0..t.count.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut out = Vec::new();
            for pos in c * CHUNK..((c + 1) * CHUNK).min(track.count) {
                if let Some(v) = view_in(space, track, pos)
                    && let Some(e) = v.event
                    && let Some(flow) = event_flow(&e, &kinds, synthesize)
                {
                    out.push((pos, flow.pack()));
                }
            }
            out
        })
        .collect();
    let n: usize = found.iter().map(Vec::len).sum();
    t.flow_pos.reserve_exact(n);
    t.flow_data.reserve_exact(n);
    for (pos, packed) in found.into_iter().flatten() {
        t.flow_pos.push(pos);
        t.flow_data.push(packed);
    }
}

/// XProf's name table entries starting with `"@@"`: `long_name` (the event name of events
/// with a display name) and `hlo_text` argument values longer than 16 bytes; numbered in
/// the JSON by fingerprint order.
fn collect_stack_frames(space: &XSpace, tracks: &[TrackInfo]) -> Vec<(u64, String)> {
    let mut names: BTreeMap<u64, String> = BTreeMap::new();
    for t in tracks {
        if !matches!(t.kind, Some(TrackKind::Thread { .. })) {
            continue;
        }
        if let Some(derived) = &t.derived_names {
            let mut used = vec![false; derived.len()];
            for &id in &t.derived_name_ids {
                if let Some(u) = used.get_mut(id as usize) {
                    *u = true;
                }
            }
            for (id, _) in used.iter().enumerate().filter(|(_, u)| **u) {
                if let Some(long) = derived.long_name(id as u32).map(truncate_long_name)
                    && long.len() > 16
                {
                    let s = format!("@@{long}");
                    names.insert(super::numfmt::stdlib_hash_bytes(s.as_bytes()), s);
                }
            }
            continue;
        }
        let Some(plane) = space.planes.get(t.plane as usize) else { continue };
        // Metadata ids used by this track's events that have display names.
        let mut used = vec![false; plane.event_metadata_count()];
        for pos in 0..t.len() as u32 {
            if let Some(v) = view_in(space, t, pos)
                && let Some(e) = v.event
            {
                let m = e.metadata_id().index();
                if let Some(u) = used.get_mut(m) {
                    *u = true;
                }
            }
        }
        for (m, md) in plane.event_metadata().iter().enumerate() {
            if !used.get(m).copied().unwrap_or(false) {
                continue;
            }
            if md.display_name != oxprof_model::StrId::EMPTY {
                let long = truncate_long_name(plane.str(md.name));
                if long.len() > 16 {
                    let s = format!("@@{long}");
                    names.insert(super::numfmt::stdlib_hash_bytes(s.as_bytes()), s);
                }
            }
            if let Some(id) = plane.event_metadata_ids().nth(m) {
                for s in plane.metadata_stats(id) {
                    if s.name() == "hlo_text"
                        && let Some(v) = s.as_str()
                        && v.len() > 16
                    {
                        let s = format!("@@{v}");
                        names.insert(super::numfmt::stdlib_hash_bytes(s.as_bytes()), s);
                    }
                }
            }
        }
    }
    names.into_iter().collect()
}

/// XProf truncates `long_name` arguments to 10,000 bytes.
pub(crate) fn truncate_long_name(name: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 10_000;
    if name.len() > MAX {
        let mut end = MAX;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        std::borrow::Cow::Owned(format!("{}...<truncated>", &name[..end]))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}
