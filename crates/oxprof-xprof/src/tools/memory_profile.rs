//! The `memory_profile` tool: per allocator, the allocation/deallocation activity the host
//! recorded (`MemoryAllocation` / `MemoryDeallocation` TraceMes on `/host:CPU`), its peak,
//! a sampled timeline and the breakdown of live allocations at the peak ([`MemoryProfile`])
//! → the proto JSON of XProf's `MemoryProfile` (port of `xprof/convert/xplane_to_memory_profile.cc`).
//!
//! Pipeline (each step a port of the XProf function named):
//! 1. `GenerateMemoryProfile`: one snapshot per memory event, keyed by memory id (last of
//!    `index_on_host` / `device_ordinal` / `allocator_name` in stat order); the summary's
//!    peak is updated in file order (lines, then events), before any sorting.
//! 2. `ProcessMemoryProfileProto` per allocator: sort snapshots by time offset,
//!    `UpdateStepId`, `UpdateDeallocation`, `SampleMemoryProfileTimeline` (≤ 1000 points,
//!    max-box filter), `GetPeakMemoryStep`, `ProcessActiveAllocations`,
//!    `SaveActiveAllocationSnapshots` (only the snapshots the breakdown table references are
//!    kept).
//! 3. `GenerateHloModules`: the `XLA Modules` events of TPU planes.
//!
//! Snapshots are compact `Copy` records; their strings (op name, region, dtype, shape) are
//! interned once per profile, so a snapshot costs ~100 bytes and no heap allocation.
//!
//! Where XProf is not deterministic, oxprof picks one fixed answer:
//! * `memoryProfilePerAllocator` (a proto map) is printed in memory-id order;
//! * snapshots with equal time offsets keep file order (XProf's `std::sort` is unstable);
//! * among identical live allocations (equal in every field the breakdown sorts by) the
//!   earliest snapshot represents the merged row (XProf's choice depends on a hash map's
//!   iteration order).

use oxprof_grouping::{EventGroups, every_plane_grouped, group_events};
use oxprof_model::schema::{HOST_THREADS_PLANE_NAME, HostEventType, StatType, TPU_PLANE_PREFIX};
use oxprof_model::{StatValue, XPlane, XSpace};
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use oxprof_wire::protobuf_json::{self, MessageWriter};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// XProf's default number of timeline points (`max_num_snapshots`).
pub const MAX_NUM_SNAPSHOTS: usize = 1000;

/// XProf's `kInvalidStepId`.
const INVALID_STEP_ID: i64 = -1;

/// Index of an interned string in [`MemoryProfile::strings`] (0 is the empty string).
pub type StrIdx = u32;

/// `MemoryAggregationStats`: the allocator's state after one event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AggregationStats {
    /// `bytes_reserved`.
    pub stack_reserved_bytes: i64,
    /// `bytes_allocated`.
    pub heap_allocated_bytes: i64,
    /// `bytes_available`.
    pub free_memory_bytes: i64,
    /// `fragmentation` as the allocator reported it.
    #[serde(with = "oxprof_report::non_finite_f64")]
    pub fragmentation: f64,
    /// `peak_bytes_in_use`.
    pub peak_bytes_in_use: i64,
}

impl AggregationStats {
    /// Stack plus heap: the memory in use.
    pub fn in_use(&self) -> i64 {
        self.stack_reserved_bytes.wrapping_add(self.heap_allocated_bytes)
    }
}

/// `MemoryActivity` (only the two values events produce).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryActivity {
    /// `ALLOCATION`.
    Allocation,
    /// `DEALLOCATION`.
    Deallocation,
}

impl MemoryActivity {
    fn as_str(self) -> &'static str {
        match self {
            MemoryActivity::Allocation => "ALLOCATION",
            MemoryActivity::Deallocation => "DEALLOCATION",
        }
    }
}

/// `MemoryActivityMetadata`, with strings interned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivityMetadata {
    /// Allocation or deallocation.
    pub activity: MemoryActivity,
    /// `requested_bytes`.
    pub requested_bytes: i64,
    /// `allocation_bytes`.
    pub allocation_bytes: i64,
    /// `addr`.
    pub address: u64,
    /// Step (group id, repaired by `UpdateStepId`).
    pub step_id: i64,
    /// `tf_op`.
    pub tf_op_name: StrIdx,
    /// `region_type`.
    pub region_type: StrIdx,
    /// `data_type` as XProf's `DataTypeString` names it.
    pub data_type: StrIdx,
    /// `shape`.
    pub tensor_shape: StrIdx,
}

/// `MemoryProfileSnapshot`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    /// The event's offset within its line (XProf's `OffsetPs`, not an absolute time).
    pub time_offset_ps: i64,
    /// Allocator state.
    pub stats: AggregationStats,
    /// The activity.
    pub metadata: ActivityMetadata,
}

/// `MemoryProfileSummary`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileSummary {
    /// The allocator's lifetime peak (last `peak_bytes_in_use` seen).
    pub peak_bytes_usage_lifetime: i64,
    /// State at the peak within the profile (`peak_bytes_in_use` = stack + heap).
    pub peak_stats: AggregationStats,
    /// Time offset of that peak.
    pub peak_stats_time_ps: i64,
    /// Stack + heap + free at the peak.
    pub memory_capacity: i64,
}

/// `ActiveAllocation`: one row of the breakdown table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveAllocation {
    /// Index into [`PerAllocatorProfile::snapshots`], or negative for special rows.
    pub snapshot_index: i64,
    /// Index into [`PerAllocatorProfile::special_allocations`], or -1.
    pub special_index: i64,
    /// How many identical allocations this row stands for.
    pub num_occurrences: i64,
}

/// `PerAllocatorMemoryProfile`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerAllocatorProfile {
    /// Only the snapshots the breakdown table references (as XProf keeps them).
    pub snapshots: Vec<Snapshot>,
    /// Summary.
    pub summary: ProfileSummary,
    /// The breakdown table at the peak.
    pub active_allocations: Vec<ActiveAllocation>,
    /// Rows not backed by a snapshot ("unused preallocated device memory", "stack").
    pub special_allocations: Vec<ActivityMetadata>,
    /// The timeline (≤ [`MAX_NUM_SNAPSHOTS`] points).
    pub sampled_timeline: Vec<Snapshot>,
}

/// `HloModule`: an `XLA Modules` event of a TPU plane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HloModule {
    /// Module name.
    pub name: String,
    /// Start offset in ps.
    pub start_time_ps: i64,
    /// End offset in ps.
    pub end_time_ps: i64,
    /// Running id.
    pub id: i64,
    /// Plane name without `/device:`.
    pub plane_name: String,
}

/// The `memory_profile` report of one host (XProf's `MemoryProfile`). Its serde form
/// writes the interned strings inline ([`MemoryProfileSerde`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "MemoryProfileSerde", from = "MemoryProfileSerde")]
pub struct MemoryProfile {
    /// Per memory id, in id order.
    pub allocators: BTreeMap<String, PerAllocatorProfile>,
    /// Memory ids (sorted).
    pub memory_ids: Vec<String>,
    /// Always 1.
    pub num_hosts: i32,
    /// Always 1 (XProf's sampling version).
    pub version: i32,
    /// TPU module executions.
    pub hlo_modules: Vec<HloModule>,
    /// Interned strings of the activity metadata.
    pub strings: Vec<Box<str>>,
}

impl MemoryProfile {
    /// The text of an interned string.
    pub fn str(&self, idx: StrIdx) -> &str {
        self.strings.get(idx as usize).map_or("", |s| s)
    }

    /// Number of timeline points over all allocators.
    pub fn timeline_points(&self) -> usize {
        self.allocators.values().map(|a| a.sampled_timeline.len()).sum()
    }
}

/// The serde form of [`MemoryProfile`]: the same fields, with each activity's strings
/// written out instead of interned.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryProfileSerde {
    /// Per memory id.
    pub allocators: BTreeMap<String, AllocatorSerde>,
    /// Memory ids (sorted).
    pub memory_ids: Vec<String>,
    /// Always 1.
    pub num_hosts: i32,
    /// Always 1.
    pub version: i32,
    /// TPU module executions.
    pub hlo_modules: Vec<HloModule>,
}

/// The serde form of [`PerAllocatorProfile`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AllocatorSerde {
    /// Summary.
    pub summary: ProfileSummary,
    /// The breakdown table at the peak (indexes into `snapshots` / `special_allocations`).
    pub active_allocations: Vec<ActiveAllocation>,
    /// The snapshots the breakdown table references.
    pub snapshots: Vec<SnapshotSerde>,
    /// Rows not backed by a snapshot.
    pub special_allocations: Vec<ActivitySerde>,
    /// The timeline.
    pub sampled_timeline: Vec<SnapshotSerde>,
}

/// The serde form of [`Snapshot`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SnapshotSerde {
    /// Offset within its line.
    pub time_offset_ps: i64,
    /// Allocator state.
    pub stats: AggregationStats,
    /// The activity.
    pub activity: ActivitySerde,
}

/// The serde form of [`ActivityMetadata`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActivitySerde {
    /// Allocation or deallocation.
    pub activity: MemoryActivity,
    /// Bytes asked for.
    pub requested_bytes: i64,
    /// Bytes given.
    pub allocation_bytes: i64,
    /// Address.
    pub address: u64,
    /// Step.
    pub step_id: i64,
    /// Framework op.
    pub tf_op_name: String,
    /// Region type.
    pub region_type: String,
    /// Data type.
    pub data_type: String,
    /// Shape.
    pub tensor_shape: String,
}

impl From<MemoryProfile> for MemoryProfileSerde {
    fn from(profile: MemoryProfile) -> MemoryProfileSerde {
        let activity = |m: &ActivityMetadata| ActivitySerde {
            activity: m.activity,
            requested_bytes: m.requested_bytes,
            allocation_bytes: m.allocation_bytes,
            address: m.address,
            step_id: m.step_id,
            tf_op_name: profile.str(m.tf_op_name).to_string(),
            region_type: profile.str(m.region_type).to_string(),
            data_type: profile.str(m.data_type).to_string(),
            tensor_shape: profile.str(m.tensor_shape).to_string(),
        };
        let snapshot = |s: &Snapshot| SnapshotSerde {
            time_offset_ps: s.time_offset_ps,
            stats: s.stats,
            activity: activity(&s.metadata),
        };
        let allocators = profile
            .allocators
            .iter()
            .map(|(id, a)| {
                let allocator = AllocatorSerde {
                    summary: a.summary,
                    active_allocations: a.active_allocations.clone(),
                    snapshots: a.snapshots.iter().map(snapshot).collect(),
                    special_allocations: a.special_allocations.iter().map(activity).collect(),
                    sampled_timeline: a.sampled_timeline.iter().map(snapshot).collect(),
                };
                (id.clone(), allocator)
            })
            .collect();
        MemoryProfileSerde {
            allocators,
            memory_ids: profile.memory_ids.clone(),
            num_hosts: profile.num_hosts,
            version: profile.version,
            hlo_modules: profile.hlo_modules.clone(),
        }
    }
}

impl From<MemoryProfileSerde> for MemoryProfile {
    fn from(serde: MemoryProfileSerde) -> MemoryProfile {
        let mut interner = Interner::default();
        interner.intern("");
        let mut activity = |m: &ActivitySerde| ActivityMetadata {
            activity: m.activity,
            requested_bytes: m.requested_bytes,
            allocation_bytes: m.allocation_bytes,
            address: m.address,
            step_id: m.step_id,
            tf_op_name: interner.intern(&m.tf_op_name),
            region_type: interner.intern(&m.region_type),
            data_type: interner.intern(&m.data_type),
            tensor_shape: interner.intern(&m.tensor_shape),
        };
        let mut allocators = BTreeMap::new();
        for (id, a) in serde.allocators {
            let mut snapshot = |s: &SnapshotSerde| Snapshot {
                time_offset_ps: s.time_offset_ps,
                stats: s.stats,
                metadata: activity(&s.activity),
            };
            let snapshots = a.snapshots.iter().map(&mut snapshot).collect();
            let sampled_timeline = a.sampled_timeline.iter().map(&mut snapshot).collect();
            let special_allocations = a.special_allocations.iter().map(&mut activity).collect();
            let allocator = PerAllocatorProfile {
                snapshots,
                summary: a.summary,
                active_allocations: a.active_allocations,
                special_allocations,
                sampled_timeline,
            };
            allocators.insert(id, allocator);
        }
        MemoryProfile {
            allocators,
            memory_ids: serde.memory_ids,
            num_hosts: serde.num_hosts,
            version: serde.version,
            hlo_modules: serde.hlo_modules,
            strings: interner.strings,
        }
    }
}

/// XProf's `ConvertXSpaceToMemoryProfileJson` minus the JSON: `None` when the space has no
/// `/host:CPU` plane (XProf then answers an empty body). Groups events into steps only
/// when the host plane has memory events and the file is not already grouped.
pub fn memory_profile(space: &XSpace) -> Option<MemoryProfile> {
    let plane_index = space.planes.iter().position(|p| p.name == HOST_THREADS_PLANE_NAME)?;
    let plane = &space.planes[plane_index];
    let kinds = memory_event_kinds(plane);
    let has_events = kinds.iter().any(Option::is_some)
        && plane
            .lines
            .iter()
            .any(|l| l.events(plane).any(|e| kinds.get(e.metadata_id().index()).is_some_and(Option::is_some)));
    let groups = (has_events && !every_plane_grouped(space)).then(|| group_events(space));
    Some(memory_profile_with_groups(space, groups.as_ref(), MAX_NUM_SNAPSHOTS))
}

/// Like [`memory_profile`] with the step grouping given (`None`: use the file's own
/// `group_id` stats only) and the timeline size chosen. An XSpace without a host plane
/// gives an empty profile.
pub fn memory_profile_with_groups(
    space: &XSpace,
    groups: Option<&EventGroups>,
    max_num_snapshots: usize,
) -> MemoryProfile {
    let mut profile = MemoryProfile { num_hosts: 1, version: 1, ..MemoryProfile::default() };
    let mut interner = Interner::default();
    if let Some(plane_index) = space.planes.iter().position(|p| p.name == HOST_THREADS_PLANE_NAME) {
        let built = generate(&space.planes[plane_index], plane_index, groups, &mut interner);
        for (id, (summary, snapshots)) in built {
            profile.memory_ids.push(id.clone());
            let per_allocator = process_allocator(summary, snapshots, max_num_snapshots, &mut interner);
            profile.allocators.insert(id, per_allocator);
        }
        profile.memory_ids.sort();
    }
    profile.hlo_modules = hlo_modules(space);
    profile.strings = interner.strings;
    profile
}

/// What a memory event's metadata says it is, per event metadata id.
fn memory_event_kinds(plane: &XPlane) -> Vec<Option<MemoryActivity>> {
    plane
        .event_metadata()
        .iter()
        .map(|m| match m.host_event_type {
            Some(HostEventType::MemoryAllocation) => Some(MemoryActivity::Allocation),
            Some(HostEventType::MemoryDeallocation) => Some(MemoryActivity::Deallocation),
            _ => None,
        })
        .collect()
}

/// Interns the strings of snapshots (index 0 is "").
#[derive(Default)]
struct Interner {
    strings: Vec<Box<str>>,
    index: HashMap<Box<str>, StrIdx>,
}

impl Interner {
    fn intern(&mut self, s: &str) -> StrIdx {
        if self.strings.is_empty() {
            self.strings.push("".into());
            self.index.insert("".into(), 0);
        }
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as StrIdx;
        self.strings.push(s.into());
        self.index.insert(s.into(), i);
        i
    }

    fn get(&self, idx: StrIdx) -> &str {
        self.strings.get(idx as usize).map_or("", |s| s)
    }
}

/// XProf's `XStatVisitor::IntValue`: the int64 value only (other kinds read as 0).
fn int_value(value: StatValue<'_>) -> i64 {
    match value {
        StatValue::Int64(x) => x,
        _ => 0,
    }
}

/// XProf's `StrOrRefValue` (other kinds read as "").
fn str_value(value: StatValue<'_>) -> &str {
    match value {
        StatValue::Str(s) | StatValue::Ref(s) => s,
        _ => "",
    }
}

type AllocatorBuild = (ProfileSummary, Vec<Snapshot>);

/// `GenerateMemoryProfile`: one snapshot per memory event, in file order, and the summary
/// updated as events are met.
fn generate(
    plane: &XPlane,
    plane_index: usize,
    groups: Option<&EventGroups>,
    interner: &mut Interner,
) -> BTreeMap<String, AllocatorBuild> {
    let kinds = memory_event_kinds(plane);
    let mut allocators: BTreeMap<String, AllocatorBuild> = BTreeMap::new();
    let use_groups = groups.filter(|g| g.computed());
    let mut memory_id = String::new();
    let mut dtype_names: HashMap<i64, StrIdx> = HashMap::new();
    for (line_index, line) in plane.lines.iter().enumerate() {
        for event in line.events(plane) {
            let Some(activity) = kinds.get(event.metadata_id().index()).copied().flatten() else {
                continue;
            };
            let mut stats = AggregationStats::default();
            let mut metadata = ActivityMetadata {
                activity,
                requested_bytes: 0,
                allocation_bytes: 0,
                address: 0,
                step_id: INVALID_STEP_ID,
                tf_op_name: 0,
                region_type: 0,
                data_type: 0,
                tensor_shape: 0,
            };
            memory_id.clear();
            for stat in event.stats() {
                let Some(ty) = stat.stat_type() else { continue };
                let value = stat.value;
                match ty {
                    StatType::IndexOnHost | StatType::DeviceOrdinal => {
                        memory_id.clear();
                        let _ = write!(memory_id, "{}", int_value(value));
                    }
                    StatType::AllocatorName => {
                        memory_id.clear();
                        memory_id.push_str(str_value(value));
                    }
                    StatType::BytesReserved => stats.stack_reserved_bytes = int_value(value),
                    StatType::BytesAllocated => stats.heap_allocated_bytes = int_value(value),
                    StatType::BytesAvailable => stats.free_memory_bytes = int_value(value),
                    StatType::Fragmentation => {
                        stats.fragmentation = if let StatValue::Double(d) = value { d } else { 0.0 }
                    }
                    StatType::PeakBytesInUse => stats.peak_bytes_in_use = int_value(value),
                    StatType::RequestedBytes => metadata.requested_bytes = int_value(value),
                    StatType::AllocationBytes => metadata.allocation_bytes = int_value(value),
                    StatType::Address => metadata.address = int_value(value) as u64,
                    StatType::TfOp => metadata.tf_op_name = interner.intern(str_value(value)),
                    StatType::GroupId => metadata.step_id = int_value(value),
                    StatType::RegionType => metadata.region_type = interner.intern(str_value(value)),
                    StatType::DataType => {
                        let code = int_value(value);
                        metadata.data_type = match dtype_names.get(&code) {
                            Some(&idx) => idx,
                            None => {
                                let idx = interner.intern(&data_type_string(code as i32));
                                dtype_names.insert(code, idx);
                                idx
                            }
                        };
                    }
                    StatType::Shape => metadata.tensor_shape = interner.intern(str_value(value)),
                    _ => {}
                }
            }
            // XProf's grouping appends (or updates) a `group_id` stat on grouped events.
            if let Some(group) = use_groups.and_then(|g| g.group_id(plane_index, line_index, event.index())) {
                metadata.step_id = group;
            }
            let offset = event.offset_ps();
            let entry = match allocators.get_mut(memory_id.as_str()) {
                Some(entry) => entry,
                None => allocators.entry(memory_id.clone()).or_default(),
            };
            update_summary(&stats, offset, &mut entry.0);
            entry.1.push(Snapshot { time_offset_ps: offset, stats, metadata });
        }
    }
    allocators
}

/// `UpdateProfileSummary`: the lifetime peak is the last one reported; the in-profile peak
/// is the latest snapshot reaching (or staying at) the highest stack + heap so far.
fn update_summary(stats: &AggregationStats, time_offset_ps: i64, summary: &mut ProfileSummary) {
    summary.peak_bytes_usage_lifetime = stats.peak_bytes_in_use;
    if stats.in_use() >= summary.peak_stats.peak_bytes_in_use {
        summary.peak_stats = *stats;
        summary.peak_stats.peak_bytes_in_use = stats.in_use();
        summary.peak_stats_time_ps = time_offset_ps;
        summary.memory_capacity = stats.in_use().wrapping_add(stats.free_memory_bytes);
    }
}

/// `ProcessMemoryProfileProto` for one allocator.
fn process_allocator(
    summary: ProfileSummary,
    mut snapshots: Vec<Snapshot>,
    max_num_snapshots: usize,
    interner: &mut Interner,
) -> PerAllocatorProfile {
    snapshots.sort_by_key(|s| s.time_offset_ps);
    update_step_ids(&mut snapshots);
    update_deallocations(&mut snapshots);
    let sampled_timeline = sample_timeline(&snapshots, max_num_snapshots);
    let peak_step = peak_memory_step(summary.peak_stats.peak_bytes_in_use, &snapshots);
    let mut profile = PerAllocatorProfile { summary, sampled_timeline, ..PerAllocatorProfile::default() };
    let rows = active_allocations(peak_step, &snapshots, &mut profile, interner);
    // `SaveActiveAllocationSnapshots`: keep only the referenced snapshots, renumbered.
    let mut next = 0i64;
    for row in &mut profile.active_allocations {
        if row.snapshot_index >= 0 {
            row.snapshot_index = next;
            next += 1;
        }
    }
    profile.snapshots = rows.into_iter().filter_map(|i| snapshots.get(i).copied()).collect();
    profile
}

/// `UpdateStepId`: events outside any step take the previous valid step id + 1 (0 at the
/// start).
fn update_step_ids(snapshots: &mut [Snapshot]) {
    let mut last_valid = -1i64;
    for s in snapshots {
        if s.metadata.step_id == INVALID_STEP_ID {
            s.metadata.step_id = last_valid.wrapping_add(1);
        } else {
            last_valid = s.metadata.step_id;
        }
    }
}

/// `UpdateDeallocation`: a deallocation takes op, region, dtype and shape from the live
/// allocation at its address (which it then retires).
fn update_deallocations(snapshots: &mut [Snapshot]) {
    let mut live: HashMap<u64, usize> = HashMap::new();
    for i in 0..snapshots.len() {
        let meta = snapshots[i].metadata;
        match meta.activity {
            MemoryActivity::Deallocation => {
                if let Some(alloc) = live.remove(&meta.address) {
                    let from = snapshots[alloc].metadata;
                    let to = &mut snapshots[i].metadata;
                    to.tf_op_name = from.tf_op_name;
                    to.region_type = from.region_type;
                    to.data_type = from.data_type;
                    to.tensor_shape = from.tensor_shape;
                }
            }
            MemoryActivity::Allocation => {
                live.entry(meta.address).or_insert(i);
            }
        }
    }
}

/// `SampleMemoryProfileTimeline`: at most `max` points. With `n > max` snapshots, a max
/// filter over boxes of `w = n / max` snapshots (the first `max·(w+1) − n` boxes) and then
/// `w + 1` snapshots (the rest) keeps the snapshot with the most memory in use per box
/// (the first on ties):
///
/// ```text
/// n = 7, max = 3, w = 2:  [s0 s1] [s2 s3] [s4 s5 s6]   → count1 = 2 boxes of 2, count2 = 1 of 3
/// ```
fn sample_timeline(snapshots: &[Snapshot], max: usize) -> Vec<Snapshot> {
    let n = snapshots.len();
    if n <= max || max == 0 {
        return snapshots.to_vec();
    }
    let width = n / max;
    let count1 = max * (width + 1) - n;
    let count2 = max - count1;
    let mut out = Vec::with_capacity(max);
    let mut max_box = |width: usize, count: usize, start: usize| {
        for i in 0..count {
            let first = start + width * i;
            let boxed = snapshots.get(first..first + width).unwrap_or(&[]);
            let mut best: Option<&Snapshot> = None;
            for s in boxed {
                if best.is_none_or(|b| s.stats.in_use() > b.stats.in_use()) {
                    best = Some(s);
                }
            }
            if let Some(b) = best {
                out.push(*b);
            }
        }
    };
    max_box(width, count1, 0);
    max_box(width + 1, count2, width * count1);
    out
}

/// `GetPeakMemoryStep`: the step of the last snapshot whose stack + heap equals the peak.
fn peak_memory_step(peak_bytes: i64, snapshots: &[Snapshot]) -> i64 {
    snapshots.iter().rev().find(|s| s.stats.in_use() == peak_bytes).map_or(0, |s| s.metadata.step_id)
}

/// The sort key of a breakdown row (`MetadataComparator`): allocation and requested bytes
/// descending, then op, region, dtype and shape ascending.
fn row_key<'a>(m: &ActivityMetadata, strings: &'a Interner) -> (i64, i64, &'a str, &'a str, &'a str, &'a str) {
    (
        m.allocation_bytes.wrapping_neg(),
        m.requested_bytes.wrapping_neg(),
        strings.get(m.tf_op_name),
        strings.get(m.region_type),
        strings.get(m.data_type),
        strings.get(m.tensor_shape),
    )
}

/// `ProcessActiveAllocations` with `InsertSpecialAllocations`: replays the peak step's
/// activity up to the peak time; allocations still live form the table, the heap not
/// explained by them (minus deallocations of earlier steps' memory) becomes "unused
/// preallocated device memory", and the stack a "stack" row. Identical neighbours after
/// sorting merge into one row. Returns the snapshot indexes of the non-special rows, in
/// row order.
fn active_allocations(
    peak_step: i64,
    snapshots: &[Snapshot],
    profile: &mut PerAllocatorProfile,
    interner: &mut Interner,
) -> Vec<usize> {
    let peak_time = profile.summary.peak_stats_time_ps;
    let mut unmapped_allocation = profile.summary.peak_stats.heap_allocated_bytes;
    let mut unmapped_deallocation = 0i64;
    let mut live: HashMap<i64, usize> = HashMap::new();
    for (i, s) in snapshots.iter().enumerate() {
        if s.time_offset_ps > peak_time {
            break;
        }
        let m = &s.metadata;
        if m.step_id != peak_step {
            continue;
        }
        match m.activity {
            MemoryActivity::Allocation => {
                live.insert(m.address as i64, i);
                unmapped_allocation = unmapped_allocation.wrapping_sub(m.allocation_bytes);
            }
            MemoryActivity::Deallocation => {
                if live.remove(&(m.address as i64)).is_none() {
                    unmapped_deallocation = unmapped_deallocation.wrapping_add(m.allocation_bytes);
                }
                unmapped_allocation = unmapped_allocation.wrapping_add(m.allocation_bytes);
            }
        }
    }
    unmapped_allocation = unmapped_allocation.wrapping_sub(unmapped_deallocation);

    // Rows: (index, metadata); special rows have negative indexes -1, -2.
    let mut rows: Vec<(i64, ActivityMetadata)> =
        live.into_values().filter_map(|i| snapshots.get(i).map(|s| (i as i64, s.metadata))).collect();
    let special = |bytes: i64, op: StrIdx, region: StrIdx, dtype: StrIdx, shape: StrIdx| ActivityMetadata {
        activity: MemoryActivity::Allocation,
        requested_bytes: bytes,
        allocation_bytes: bytes,
        address: 0,
        step_id: peak_step,
        tf_op_name: op,
        region_type: region,
        data_type: dtype,
        tensor_shape: shape,
    };
    let invalid = interner.intern(&data_type_string(0));
    let unknown = interner.intern("unknown");
    let mut special_index = 0i64;
    if unmapped_allocation > 0 {
        let op = interner.intern("unused preallocated device memory");
        let region = interner.intern("persist/dynamic");
        let row = special(unmapped_allocation, op, region, invalid, unknown);
        profile.special_allocations.push(row);
        special_index -= 1;
        rows.push((special_index, row));
    }
    let stack_bytes = profile.summary.peak_stats.stack_reserved_bytes;
    if stack_bytes > 0 {
        let op = interner.intern("stack");
        let row = special(stack_bytes, op, op, invalid, unknown);
        profile.special_allocations.push(row);
        special_index -= 1;
        rows.push((special_index, row));
    }
    // Ties (identical rows) are ordered by snapshot index so the earliest represents them.
    rows.sort_by(|a, b| row_key(&a.1, interner).cmp(&row_key(&b.1, interner)).then(a.0.cmp(&b.0)));

    let mut referenced = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        let (index, meta) = rows[i];
        let mut occurrences = 1;
        while i + 1 < rows.len() && row_key(&rows[i + 1].1, interner) == row_key(&meta, interner) {
            occurrences += 1;
            i += 1;
        }
        profile.active_allocations.push(ActiveAllocation {
            snapshot_index: index,
            special_index: if index < 0 { -index - 1 } else { -1 },
            num_occurrences: occurrences,
        });
        if index >= 0 {
            referenced.push(index as usize);
        }
        i += 1;
    }
    referenced
}

/// `GenerateHloModules`: every `XLA Modules` event of the TPU planes, numbered.
fn hlo_modules(space: &XSpace) -> Vec<HloModule> {
    let mut out = Vec::new();
    for plane in space.planes_with_prefix(TPU_PLANE_PREFIX) {
        let plane_name = plane.name.strip_prefix("/device:").unwrap_or(&plane.name);
        for line in plane.lines.iter().filter(|l| l.name == "XLA Modules") {
            for event in line.events(plane) {
                out.push(HloModule {
                    name: event.name().to_string(),
                    start_time_ps: event.offset_ps(),
                    end_time_ps: event.offset_ps().wrapping_add(event.duration_ps()),
                    id: out.len() as i64,
                    plane_name: plane_name.to_string(),
                });
            }
        }
    }
    out
}

/// XProf's `DataTypeString` over `TensorflowDataType` (ref types get `_ref`).
pub fn data_type_string(code: i32) -> String {
    if code > 100 {
        return format!("{}_ref", data_type_name(code - 100));
    }
    data_type_name(code)
}

fn data_type_name(code: i32) -> String {
    let name = match code {
        0 => "INVALID",
        1 => "float",
        2 => "double",
        3 => "int32",
        4 => "uint8",
        5 => "int16",
        6 => "int8",
        7 => "string",
        8 => "complex64",
        9 => "int64",
        10 => "bool",
        11 => "qint8",
        12 => "quint8",
        13 => "qint32",
        14 => "bfloat16",
        15 => "qint16",
        16 => "quint16",
        17 => "uint16",
        18 => "complex128",
        19 => "half",
        20 => "resource",
        21 => "variant",
        22 => "uint32",
        23 => "uint64",
        24 => "float8_e5m2",
        25 => "float8_e4m3fn",
        26 => "float8_e4m3fnuz",
        27 => "float8_e4m3b11fnuz",
        28 => "float8_e5m2fnuz",
        29 => "int4",
        30 => "uint4",
        _ => return format!("unknown dtype enum ({code})"),
    };
    name.to_string()
}

/// Live allocations listed per allocator for people (the report has them all).
const LIVE_ALLOCATIONS_SHOWN: usize = 50;

impl Report for MemoryProfile {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(self.to_json_string())
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    /// Per allocator: its peak (when, how much, fragmentation) and the allocations live at
    /// the peak, largest first (one empty table when there is no allocator).
    fn tables(&self) -> Vec<Table> {
        use oxprof_report::{ColumnKind::*, NumberFormat::*};
        const MIB: f64 = 1024.0 * 1024.0;
        if self.allocators.is_empty() {
            return vec![Table::new("allocators")];
        }
        let mib = |bytes: i64| format!("{:.2}", bytes as f64 / MIB);
        self.allocators
            .iter()
            .map(|(id, allocator)| {
                let summary = &allocator.summary;
                let peak = &summary.peak_stats;
                let mut table = Table::new(&format!("allocator_{id}"))
                    .title(id.as_str())
                    .fact("peak_heap_usage_mib", mib(summary.peak_bytes_usage_lifetime))
                    .fact("peak_time_ms", format!("{:.3}", summary.peak_stats_time_ps as f64 / 1e9))
                    .fact("peak_bytes_in_use_mib", mib(peak.peak_bytes_in_use))
                    .fact("stack_reserved_mib", mib(peak.stack_reserved_bytes))
                    .fact("heap_allocated_mib", mib(peak.heap_allocated_bytes))
                    .fact("free_memory_mib", mib(peak.free_memory_bytes))
                    .fact("fragmentation", format!("{:.1}%", 100.0 * peak.fragmentation))
                    .fact("capacity_mib", mib(summary.memory_capacity))
                    .rows_described("allocations live at the peak, largest first", Some(LIVE_ALLOCATIONS_SHOWN))
                    .column("op", "Op", Text, Shortest)
                    .column("allocation_mib", "Allocation (MiB)", Number, Fixed(2))
                    .column("requested_mib", "Requested (MiB)", Number, Fixed(2))
                    .column("occurrences", "Occurrences", Integer, Shortest)
                    .column("region", "Region", Text, Shortest)
                    .column("data_type", "Data type", Text, Shortest)
                    .column("shape", "Shape", Text, Shortest);
                let mut live: Vec<(&ActivityMetadata, i64)> = allocator
                    .active_allocations
                    .iter()
                    .filter_map(|a| {
                        let metadata = match (usize::try_from(a.snapshot_index), usize::try_from(a.special_index)) {
                            (Ok(i), _) => &allocator.snapshots.get(i)?.metadata,
                            (Err(_), Ok(i)) => allocator.special_allocations.get(i)?,
                            _ => return None,
                        };
                        Some((metadata, a.num_occurrences))
                    })
                    .collect();
                let footprint = |(m, n): &(&ActivityMetadata, i64)| m.allocation_bytes as f64 * *n as f64;
                live.sort_by(|a, b| footprint(b).total_cmp(&footprint(a)));
                for (m, occurrences) in live {
                    table.push_row(vec![
                        CellValue::Text(self.str(m.tf_op_name).to_string()),
                        CellValue::Number(m.allocation_bytes as f64 / MIB),
                        CellValue::Number(m.requested_bytes as f64 / MIB),
                        CellValue::Int(occurrences),
                        CellValue::Text(self.str(m.region_type).to_string()),
                        CellValue::Text(self.str(m.data_type).to_string()),
                        CellValue::Text(self.str(m.tensor_shape).to_string()),
                    ]);
                }
                table
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// Proto JSON, byte for byte as `MessageToJsonString(always_print_fields_with_no_presence)`,
// written field by field by `oxprof_wire::protobuf_json`.

impl MemoryProfile {
    /// The proto JSON XProf's server returns (fields in proto order, int64 as strings,
    /// doubles as protobuf prints them).
    pub fn to_json_string(&self) -> String {
        let mut out = String::with_capacity(4096);
        protobuf_json::write_message(&mut out, |m| {
            m.message_map(
                "memoryProfilePerAllocator",
                self.allocators.iter().map(|(id, a)| (id.as_str(), a)),
                |m, a| self.write_allocator(m, a),
            )
            .int32("numHosts", self.num_hosts)
            .strings("memoryIds", self.memory_ids.iter().map(String::as_str))
            .int32("version", self.version)
            .messages("hloModules", &self.hlo_modules, |m, module| {
                m.string("name", &module.name)
                    .int64("startTimePs", module.start_time_ps)
                    .int64("endTimePs", module.end_time_ps)
                    .int64("id", module.id)
                    .string("planeName", &module.plane_name);
            });
        });
        out
    }

    fn write_allocator(&self, m: &mut MessageWriter<'_>, a: &PerAllocatorProfile) {
        let s = &a.summary;
        m.messages("memoryProfileSnapshots", &a.snapshots, |m, snapshot| self.write_snapshot(m, snapshot))
            .message("profileSummary", |m| {
                m.int64("peakBytesUsageLifetime", s.peak_bytes_usage_lifetime)
                    .message("peakStats", |m| write_stats(m, &s.peak_stats))
                    .int64("peakStatsTimePs", s.peak_stats_time_ps)
                    .int64("memoryCapacity", s.memory_capacity);
            })
            .messages("activeAllocations", &a.active_allocations, |m, row| {
                m.int64("snapshotIndex", row.snapshot_index)
                    .int64("specialIndex", row.special_index)
                    .int64("numOccurrences", row.num_occurrences);
            })
            .messages("specialAllocations", &a.special_allocations, |m, metadata| self.write_metadata(m, metadata))
            .messages("sampledTimelineSnapshots", &a.sampled_timeline, |m, snapshot| self.write_snapshot(m, snapshot));
    }

    fn write_snapshot(&self, m: &mut MessageWriter<'_>, s: &Snapshot) {
        m.int64("timeOffsetPs", s.time_offset_ps)
            .message("aggregationStats", |m| write_stats(m, &s.stats))
            .message("activityMetadata", |m| self.write_metadata(m, &s.metadata));
    }

    fn write_metadata(&self, m: &mut MessageWriter<'_>, metadata: &ActivityMetadata) {
        m.string("memoryActivity", metadata.activity.as_str())
            .int64("requestedBytes", metadata.requested_bytes)
            .int64("allocationBytes", metadata.allocation_bytes)
            .uint64("address", metadata.address)
            .string("tfOpName", self.str(metadata.tf_op_name))
            .int64("stepId", metadata.step_id)
            .string("regionType", self.str(metadata.region_type))
            .string("dataType", self.str(metadata.data_type))
            .string("tensorShape", self.str(metadata.tensor_shape));
    }
}

fn write_stats(m: &mut MessageWriter<'_>, s: &AggregationStats) {
    m.int64("stackReservedBytes", s.stack_reserved_bytes)
        .int64("heapAllocatedBytes", s.heap_allocated_bytes)
        .int64("freeMemoryBytes", s.free_memory_bytes)
        .double("fragmentation", s.fragmentation)
        .int64("peakBytesInUse", s.peak_bytes_in_use);
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_xspace::decode_xspace;

    #[test]
    fn data_type_names() {
        assert_eq!(data_type_string(1), "float");
        assert_eq!(data_type_string(0), "INVALID");
        assert_eq!(data_type_string(101), "float_ref");
        assert_eq!(data_type_string(77), "unknown dtype enum (77)");
    }

    /// Allocator "a" on one thread (offsets in ps; `in use` = heap after the event):
    ///
    /// ```text
    /// step (group_id)   |------- 0 -------|   |-------- 1 --------|
    /// events            A1(x)  A2(y)  D(x)    A3(z)  A4(w)  D(z)   A5(v)
    /// offset            10     20     30      40     50     60     70
    /// heap after        100    300    200     250    650    600    610
    /// ```
    /// The peak (650) is at A4 in step 1; live at the peak in step 1: z (50) and w (400);
    /// heap 650 − 450 = 200 is "unused preallocated device memory" (y, from step 0).
    /// A5 has no group: it gets step 1 + 1 = 2.
    fn allocator_space() -> XSpace {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "thread", 0, |l| {
                    let mut ev =
                        |name: &str, off: i64, addr: i64, bytes: i64, heap: i64, group: Option<i64>, op: &str| {
                            let mut e = l
                                .event(name, off, 0)
                                .stat("allocator_name", "a")
                                .stat("bytes_reserved", 0i64)
                                .stat("bytes_allocated", heap)
                                .stat("bytes_available", 1000 - heap)
                                .stat("fragmentation", 0.5)
                                .stat("peak_bytes_in_use", 650i64)
                                .stat("requested_bytes", bytes)
                                .stat("allocation_bytes", bytes)
                                .stat("addr", addr);
                            if name == "MemoryAllocation" {
                                e = e
                                    .stat("tf_op", op)
                                    .stat("region_type", "output")
                                    .stat("data_type", 1i64)
                                    .stat("shape", "[2]");
                            }
                            if let Some(g) = group {
                                let _ = e.stat("group_id", g);
                            }
                        };
                    ev("MemoryAllocation", 10, 1, 100, 100, Some(0), "x_op");
                    ev("MemoryAllocation", 20, 2, 200, 300, Some(0), "y_op");
                    ev("MemoryDeallocation", 30, 1, 100, 200, Some(0), "");
                    ev("MemoryAllocation", 40, 3, 50, 250, Some(1), "z_op");
                    ev("MemoryAllocation", 50, 4, 400, 650, Some(1), "w_op");
                    ev("MemoryDeallocation", 60, 3, 50, 600, Some(1), "");
                    ev("MemoryAllocation", 70, 5, 10, 610, None, "v_op");
                });
            })
            .to_bytes();
        decode_xspace(&bytes).unwrap()
    }

    #[test]
    fn summary_peak_breakdown_and_step_repair() {
        let space = allocator_space();
        let profile = memory_profile_with_groups(&space, None, MAX_NUM_SNAPSHOTS);
        assert_eq!(profile.memory_ids, vec!["a".to_string()]);
        let a = &profile.allocators["a"];
        assert_eq!(a.summary.peak_stats.peak_bytes_in_use, 650);
        assert_eq!(a.summary.peak_stats_time_ps, 50);
        assert_eq!(a.summary.memory_capacity, 1000);
        assert_eq!(a.summary.peak_bytes_usage_lifetime, 650);
        // Deallocation of x copies x's op.
        assert_eq!(profile.str(a.sampled_timeline[2].metadata.tf_op_name), "x_op");
        assert_eq!(a.sampled_timeline[6].metadata.step_id, 2);
        // Rows: w (400), unused preallocated (200), z (50).
        let names: Vec<&str> = a
            .active_allocations
            .iter()
            .map(|r| {
                if r.snapshot_index < 0 {
                    profile.str(a.special_allocations[r.special_index as usize].tf_op_name)
                } else {
                    profile.str(a.snapshots[r.snapshot_index as usize].metadata.tf_op_name)
                }
            })
            .collect();
        assert_eq!(names, vec!["w_op", "unused preallocated device memory", "z_op"]);
        assert_eq!(a.special_allocations[0].allocation_bytes, 200);
        assert_eq!(a.snapshots.len(), 2);
        let json: serde_json::Value = serde_json::from_str(&profile.to_json_string()).unwrap();
        assert_eq!(json["memoryProfilePerAllocator"]["a"]["activeAllocations"][1]["specialIndex"], "0");
    }

    #[test]
    fn sampling_keeps_box_maxima() {
        let space = allocator_space();
        let profile = memory_profile_with_groups(&space, None, 3);
        let heaps: Vec<i64> =
            profile.allocators["a"].sampled_timeline.iter().map(|s| s.stats.heap_allocated_bytes).collect();
        // n = 7, max = 3: boxes [0,1] [2,3] [4,5,6] → 300, 250, 650.
        assert_eq!(heaps, vec![300, 250, 650]);
    }

    /// A deallocation in the peak step of memory allocated in an earlier step, and a stack:
    ///
    /// ```text
    /// step (group_id)   |-- 0 --|  |------ 1 ------|
    /// events            A(p)       D(p)     A(q)
    /// offset            10         20       30
    /// heap / stack      100 / 30   0 / 30   200 / 30     peak 230 at 30 (step 1)
    /// ```
    /// Replaying step 1: D(p) has no allocation in the step (unmatched: +100 to the
    /// unmapped heap, then −100 as memory freed from an earlier step), A(q) is live, so the
    /// unmapped heap is 200 + 100 − 200 − 100 = 0: no "unused" row, only q and "stack".
    #[test]
    fn unmatched_deallocation_and_stack_row() {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "thread", 0, |l| {
                    for (name, off, addr, size, heap, group) in [
                        ("MemoryAllocation", 10, 1i64, 100i64, 100i64, 0i64),
                        ("MemoryDeallocation", 20, 1, 100, 0, 1),
                        ("MemoryAllocation", 30, 2, 200, 200, 1),
                    ] {
                        let _ = l
                            .event(name, off, 0)
                            .stat("index_on_host", 7i64)
                            .stat("bytes_reserved", 30i64)
                            .stat("bytes_allocated", heap)
                            .stat("bytes_available", 0i64)
                            .stat("requested_bytes", size)
                            .stat("allocation_bytes", size)
                            .stat("addr", addr)
                            .stat("group_id", group);
                    }
                });
            })
            .to_bytes();
        let profile = memory_profile_with_groups(&decode_xspace(&bytes).unwrap(), None, MAX_NUM_SNAPSHOTS);
        let a = &profile.allocators["7"];
        assert_eq!(a.summary.peak_stats.peak_bytes_in_use, 230);
        assert_eq!(a.summary.peak_stats_time_ps, 30);
        assert_eq!(a.special_allocations.len(), 1);
        assert_eq!(profile.str(a.special_allocations[0].tf_op_name), "stack");
        assert_eq!(profile.str(a.special_allocations[0].data_type), "INVALID");
        let rows: Vec<(i64, i64)> = a.active_allocations.iter().map(|r| (r.snapshot_index, r.special_index)).collect();
        assert_eq!(rows, vec![(0, -1), (-1, 0)]);
        assert_eq!(a.snapshots[0].metadata.allocation_bytes, 200);
    }

    #[test]
    fn no_host_plane_is_none() {
        let bytes = XSpaceBuilder::new().plane("/device:GPU:0", |_| {}).to_bytes();
        assert!(memory_profile(&decode_xspace(&bytes).unwrap()).is_none());
    }
}
