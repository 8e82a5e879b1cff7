//! The device side of OpStats: per-op metrics (`OpMetricsDb`) of every TPU or GPU device
//! plane, combined into `device_op_metrics_db`. A port of the device parts of XProf's
//! `xplane_to_op_metrics_db.cc` (`ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb`,
//! `ConvertSparseCoreDeviceTraceXPlaneToOpMetricsDb`, `ConvertDeviceTraceXPlaneToOpMetricsDb`)
//! with the pieces of `op_metrics_db_utils.cc` and `op_utils.cc` they use.
//!
//! HLO modules are not decoded here. Where XProf consults its HLO module map (GPU XLA ops,
//! TPU fusion children, GPU kernel op names) the caller passes an [`HloModuleLookup`];
//! without one those parts are skipped, exactly as XProf skips ops it cannot find.

use super::duty_cycle::{Timespan, tpu_duty_cycle};
use super::environment::{device_planes, sparse_core_id, wire};
use super::hardware::{double_value, int_or_uint, int_value, str_value, uint_value};
use super::op_metrics_db::{OpMetricsDbCombiner, combine_memory_accessed_breakdown, combine_op_metrics_dbs};
use super::step_events::TpuOpMetricsBuilder;
use super::types::{
    MemoryAccessed, MemoryOperationType, OpMetrics, OpMetricsDb, PrecisionStats, SourceInfo, TpuCoreType,
};
use oxprof_grouping::EventGroups;
use oxprof_grouping::tf_op::parse_tf_op_fullname;
use oxprof_model::schema::{GPU_PLANE_PREFIX, StatType, is_derived_thread_id};
use oxprof_model::{Event, EventMetadataId, StatValue, XPlane, XSpace};
use std::collections::{BTreeMap, HashMap};

/// Name and category of the op standing for idle time.
pub const IDLE_OP: &str = "IDLE";

pub use oxprof_hlo::{HloMemoryAccess, HloPerformance, HloSourceInfo};

/// What XProf reads from an HLO instruction (`HloInstructionWrapper`).
pub trait HloInstruction {
    /// Instruction name, e.g. `fusion.3`.
    fn name(&self) -> &str;
    /// XProf's HLO category, e.g. `loop fusion`, `convolution`.
    fn category(&self) -> &str;
    /// Whether the opcode is `parameter` or `tuple` (skipped as fusion children).
    fn is_parameter_or_tuple(&self) -> bool;
    /// `TfOpName()`: the framework op name from the instruction's metadata.
    fn tf_op_name(&self) -> &str;
    /// `op_full_name()`: `op_name:op_type` of the instruction's metadata.
    fn op_full_name(&self) -> &str;
    /// `DeduplicatedName()`.
    fn deduplicated_name(&self) -> &str;
    /// `Expression()`: the HLO text of the instruction.
    fn expression(&self) -> &str;
    /// `SourceInfo()`.
    fn source_info(&self) -> HloSourceInfo;
    /// `flops()` (cost analysis).
    fn flops(&self) -> u64;
    /// `bytes_accessed()` (cost analysis).
    fn bytes_accessed(&self) -> u64;
    /// `GetPerformanceInfoWrapper()`, when a cost analysis ran (GPU).
    fn performance(&self) -> Option<HloPerformance>;
    /// `FusedChildren()`: the instructions of a fusion's computation, in order.
    fn fused_children(&self) -> Vec<&dyn HloInstruction>;
}

/// XProf's `HloModuleMap` lookup: the instruction `name` of program `program_id`
/// (`GetHloInstruction`).
pub trait HloModuleLookup {
    /// The instruction, if the program and instruction are known.
    fn instruction(&self, program_id: u64, name: &str) -> Option<&dyn HloInstruction>;
}

// ---------------------------------------------------------------------------------------
// OpMetricsDb helpers (private equivalents of op_metrics_db_utils / the combiner; to be
// unified with `op_stats::op_metrics_db` once it exists).
// ---------------------------------------------------------------------------------------

/// `SafeDivide`: 0 when the divisor is within 1e-10 of zero.
fn safe_divide(dividend: f64, divisor: f64) -> f64 {
    if divisor.abs() < 1e-10 { 0.0 } else { dividend / divisor }
}

/// `SetTotalTimePs`: the span, or the summed op time if larger.
fn set_total_time_ps(db: &mut OpMetricsDb, total_time_ps: u64) {
    db.total_time_ps = db.total_op_time_ps.max(total_time_ps);
}

/// `AddIdleOp`: appends the IDLE op holding `total_time - total_op_time`.
fn add_idle_op(db: &mut OpMetricsDb) {
    let idle = db.total_time_ps.wrapping_sub(db.total_op_time_ps);
    db.metrics_db.push(OpMetrics {
        name: IDLE_OP.to_string(),
        category: IDLE_OP.to_string(),
        time_ps: idle,
        self_time_ps: idle,
        ..Default::default()
    });
}

/// Combines per-plane databases into one (`OpMetricsDbCombiner`, counting cores).
pub fn combine_dbs<'a>(dbs: impl IntoIterator<Item = &'a OpMetricsDb>) -> OpMetricsDb {
    combine_op_metrics_dbs(dbs, true)
}

// ---------------------------------------------------------------------------------------
// TPU: ops from event metadata, keyed by (program id, symbol id).
// ---------------------------------------------------------------------------------------

/// `GetDeviceEventTimespan`: the `device_offset_ps`/`device_duration_ps` stats when both
/// are on the event, else the event's own timespan.
fn device_event_timespan(event: &Event<'_>) -> Timespan {
    let (mut offset, mut duration) = (None, None);
    for stat in event.stats() {
        match stat.stat_type() {
            Some(StatType::DeviceOffsetPs) if offset.is_none() => offset = Some(int_or_uint(&stat.value)),
            Some(StatType::DeviceDurationPs) if duration.is_none() => duration = Some(int_or_uint(&stat.value)),
            _ => {}
        }
    }
    match (offset, duration) {
        (Some(begin_ps), Some(duration_ps)) => Timespan { begin_ps, duration_ps },
        _ => Timespan::of_event(event),
    }
}

/// `MemoryAccessBreakdown` (`repeated MemoryAccessed memory_accessed = 1`); `None` when the
/// bytes do not parse.
fn parse_memory_access_breakdown(bytes: &[u8]) -> Option<Vec<MemoryAccessed>> {
    let mut out = Vec::new();
    for (number, field) in wire::fields(bytes)? {
        match (number, field) {
            (1, wire::Field::Bytes(entry)) => {
                let mut m = MemoryAccessed::default();
                for (n, f) in wire::fields(entry)? {
                    match (n, f) {
                        (1, wire::Field::Varint(v)) => {
                            m.operation_type = match v {
                                1 => MemoryOperationType::Read,
                                2 => MemoryOperationType::Write,
                                _ => MemoryOperationType::Unknown,
                            }
                        }
                        (2, wire::Field::Varint(v)) => m.memory_space = v,
                        (3, wire::Field::Varint(v)) => m.bytes_accessed = v,
                        (1..=3, _) => return None,
                        _ => {}
                    }
                }
                out.push(m);
            }
            (1, _) => return None,
            _ => {}
        }
    }
    Some(out)
}

/// `PopulateSourceInfo`: `file:line` split at the first colon; nothing when it does not
/// parse (the caller has already created the source info).
fn populate_source_info(top_line: &str, info: &mut SourceInfo) {
    if let Some((file, line)) = top_line.split_once(':')
        && let Some(line) = simple_atoi_i32(line)
    {
        info.file_name = file.to_string();
        info.line_number = line;
    }
}

/// `absl::SimpleAtoi` for int32: surrounding whitespace and a sign allowed.
fn simple_atoi_i32(s: &str) -> Option<i32> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let t = t.strip_prefix('+').unwrap_or(t);
    t.parse().ok()
}

/// Maximum depth of event metadata children followed (bad files may hold cycles).
const MAX_CHILD_DEPTH: usize = 64;

/// `SetOpMetadataFromHloEventMetadata`: name (display name, with the full name as long
/// name), module id, category, provenance, FLOPs, bytes, memory breakdown, deduplicated
/// name, source, and the metadata's children (each with one occurrence).
fn metadata_op_metrics(plane: &XPlane, id: EventMetadataId, op: &mut OpMetrics, depth: usize) {
    let metadata = plane.event_metadata_at(id);
    let name = plane.str(metadata.name);
    let display_name = plane.str(metadata.display_name);
    if display_name.is_empty() {
        op.name = name.to_string();
    } else {
        op.name = display_name.to_string();
        op.long_name = name.to_string();
    }
    for stat in plane.metadata_stats(id) {
        let v = &stat.value;
        match stat.stat_type() {
            Some(StatType::ProgramId) => op.hlo_module_id = int_or_uint(v),
            Some(StatType::HloCategory) => op.category = str_value(v).to_string(),
            Some(StatType::TfOp) => op.provenance = str_value(v).to_string(),
            Some(StatType::Flops) => {
                op.flops = int_or_uint(v);
                op.flops_v2 = int_or_uint(v) as f64;
            }
            Some(StatType::ModelFlops) => {
                op.model_flops = int_or_uint(v);
                op.model_flops_v2 = int_or_uint(v) as f64;
            }
            Some(StatType::BytesAccessed) => op.bytes_accessed = int_or_uint(v),
            Some(StatType::MemoryAccessBreakdown) => {
                let bytes = if let StatValue::Bytes(b) = *v { b } else { &[] };
                if let Some(breakdown) = parse_memory_access_breakdown(bytes) {
                    op.memory_accessed_breakdown = breakdown;
                }
            }
            Some(StatType::DeduplicatedName) => op.deduplicated_name = str_value(v).to_string(),
            Some(StatType::SourceInfo) => {
                populate_source_info(str_value(v), op.source_info.get_or_insert_with(SourceInfo::default));
            }
            Some(StatType::SourceStack) => {
                op.source_info.get_or_insert_with(SourceInfo::default).stack_frame = str_value(v).to_string();
            }
            _ => {}
        }
    }
    if depth >= MAX_CHILD_DEPTH {
        return;
    }
    for child_id in metadata.child_ids.iter() {
        if let Some(child) = plane.event_metadata_by_file_id(*child_id) {
            let mut child_op = OpMetrics { occurrences: 1, ..Default::default() };
            metadata_op_metrics(plane, child, &mut child_op, depth + 1);
            op.children.get_or_insert_with(Default::default).metrics_db.push(child_op);
        }
    }
}

/// What one event metadata contributes to every op built from its events.
struct MetadataTemplate {
    /// `(program_id, symbol_id)`, when both stats are present.
    key: Option<(u64, u64)>,
    /// The metadata part of the op (`SetOpMetadataFromHloEventMetadata`).
    op: OpMetrics,
}

/// `GetOpKeyFromXEvent`: program and symbol ids from the event's metadata stats.
fn metadata_key(plane: &XPlane, id: EventMetadataId) -> Option<(u64, u64)> {
    let (mut program, mut symbol) = (None, None);
    for stat in plane.metadata_stats(id) {
        match stat.stat_type() {
            Some(StatType::ProgramId) => program = Some(int_or_uint(&stat.value)),
            Some(StatType::SymbolId) => symbol = Some(int_or_uint(&stat.value)),
            _ => {}
        }
    }
    Some((program?, symbol?))
}

/// The per-event numbers of `FromXEvent` (everything but the metadata part).
#[derive(Debug, Clone, Copy, Default)]
struct EventNumbers {
    occurrences: u32,
    duration_ps: u64,
    min_duration_ps: u64,
    self_duration_ps: u64,
    dma_stall_ps: u64,
    vdd_energy_j: Option<f64>,
    time_scale_multiplier: Option<f64>,
    offload_core_id: Option<u64>,
    offload_start_id: Option<u64>,
}

/// Reads the event's own stats the way `SetOpMetricsFromHloEvent` and the TensorCore
/// converter do: `ForEachStat` (last one wins, or sums) for durations and energy;
/// `GetStat` (first one) for the time scale and offload ids.
fn event_numbers(event: &Event<'_>) -> EventNumbers {
    let duration = event.duration_ps() as u64;
    let mut n = EventNumbers {
        occurrences: event.num_occurrences().unwrap_or(0).max(1) as u32,
        duration_ps: duration,
        min_duration_ps: duration,
        self_duration_ps: duration,
        ..Default::default()
    };
    for stat in event.stats() {
        let v = &stat.value;
        if stat.name() == "vdd_energy_j" {
            n.vdd_energy_j = Some(n.vdd_energy_j.unwrap_or(0.0) + double_value(v));
            continue;
        }
        match stat.stat_type() {
            Some(StatType::MinDurationPs) => n.min_duration_ps = int_value(v) as u64,
            Some(StatType::SelfDurationPs) => n.self_duration_ps = int_value(v) as u64,
            Some(StatType::DmaStallDurationPs) => n.dma_stall_ps = int_value(v) as u64,
            Some(StatType::TimeScaleMultiplier) if n.time_scale_multiplier.is_none() => {
                n.time_scale_multiplier = Some(double_value(v));
            }
            Some(StatType::OffloadCoreId) if n.offload_core_id.is_none() => n.offload_core_id = Some(uint_value(v)),
            Some(StatType::TcOffloadStartId) if n.offload_start_id.is_none() => {
                n.offload_start_id = Some(int_value(v) as u64);
            }
            _ => {}
        }
    }
    n
}

/// SparseCore op databases by `(offload_core_id, tc_offload_start_id)` of their module.
pub type SparseCoreDbs = HashMap<(u64, u64), OpMetricsDb>;

/// `XEventsOpMetricsDbBuilder`'s store: ops merged by `(program_id, symbol_id)` in
/// first-seen order. The first event of a key defines the op (`FromXEvent`); later ones add
/// their numbers (`MergeOpMetrics`).
#[derive(Debug, Default)]
pub struct KeyedOps {
    /// Slot of each key, in first-seen order.
    slots: HashMap<(u64, u64), usize>,
    ops: Vec<OpMetrics>,
}

impl KeyedOps {
    /// Adds one event with op key `key` (`GetOpKeyFromXEvent`) and timing; `metadata_op`
    /// gives the metadata part of its op when the key is new.
    fn add<'t>(
        &mut self,
        key: Option<(u64, u64)>,
        metadata_op: impl FnOnce() -> std::borrow::Cow<'t, OpMetrics>,
        event: &Event<'_>,
        timing: OpTiming,
        children: Option<&OpMetricsDb>,
    ) {
        let Some(key) = key.filter(|&(_, symbol)| symbol != 0) else { return };
        let n = event_numbers(event);
        let time_ps = timing.time_ps;
        let self_time_ps = time_ps.wrapping_sub(timing.children_ps);
        let normalized_time_ps = if timing.tensor_core {
            (time_ps as f64 * n.time_scale_multiplier.unwrap_or(1.0)) as u64
        } else {
            n.time_scale_multiplier.map_or(0, |m| (n.duration_ps as f64 * m) as u64)
        };
        let slot_count = self.ops.len();
        let slot = *self.slots.entry(key).or_insert(slot_count);
        if slot == slot_count {
            self.ops.push(OpMetrics::default());
        }
        let first = self.ops.get(slot).is_none_or(|op| op.occurrences == 0);
        if first {
            let mut op = metadata_op().into_owned();
            op.occurrences = n.occurrences;
            op.time_ps = time_ps;
            op.min_time_ps = n.min_duration_ps;
            op.self_time_ps = self_time_ps;
            op.normalized_time_ps = normalized_time_ps;
            op.dma_stall_ps = n.dma_stall_ps;
            op.num_cores = 1;
            op.vdd_energy_j = n.vdd_energy_j;
            op.core_type = timing.core_type;
            if let Some(sc) = children {
                let db = op.children.get_or_insert_with(Default::default);
                // A fresh combiner over the (possibly non-empty) children, as in XProf.
                let mut combiner = OpMetricsDbCombiner::over(std::mem::take(&mut **db));
                combiner.combine(sc, false);
                **db = combiner.into_db();
            }
            if let Some(dst) = self.ops.get_mut(slot) {
                *dst = op;
            }
            return;
        }
        let Some(dst) = self.ops.get_mut(slot) else { return };
        dst.occurrences = dst.occurrences.wrapping_add(n.occurrences);
        dst.time_ps = dst.time_ps.wrapping_add(time_ps);
        dst.min_time_ps = dst.min_time_ps.min(n.min_duration_ps);
        dst.self_time_ps = dst.self_time_ps.wrapping_add(self_time_ps);
        dst.dma_stall_ps = dst.dma_stall_ps.wrapping_add(n.dma_stall_ps);
        dst.normalized_time_ps = dst.normalized_time_ps.wrapping_add(normalized_time_ps);
        dst.core_type = timing.core_type;
        if n.vdd_energy_j.is_some() || dst.vdd_energy_j.is_some() {
            dst.vdd_energy_j = Some(n.vdd_energy_j.unwrap_or(0.0) + dst.vdd_energy_j.unwrap_or(0.0));
        }
    }

    /// `XEventsOpMetricsDbBuilder::Finalize()`: scales per-occurrence FLOPs and bytes by the
    /// occurrences (custom calls are already totals) and sums self times.
    fn finalize(self) -> OpMetricsDb {
        let mut db = OpMetricsDb::default();
        let (mut total, mut normalized_total) = (0u64, 0u64);
        for mut op in self.ops {
            adjust_flops_and_bytes(&mut op);
            total = total.wrapping_add(op.self_time_ps);
            let ratio = safe_divide(op.normalized_time_ps as f64, op.time_ps as f64);
            normalized_total = (normalized_total as f64 + op.self_time_ps as f64 * ratio) as u64;
            db.metrics_db.push(op);
        }
        db.total_op_time_ps = total;
        db.normalized_total_op_time_ps = normalized_total;
        db
    }
}

/// `XEventsOpMetricsDbBuilder` over one plane, with the metadata part built once per event
/// metadata and only numbers added per event.
struct KeyedOpBuilder<'p> {
    plane: &'p XPlane,
    /// Per event metadata: its template, built on first use.
    templates: Vec<Option<MetadataTemplate>>,
    ops: KeyedOps,
}

/// The template of an event metadata, built on first use.
fn ensure_template<'t>(
    templates: &'t mut Vec<Option<MetadataTemplate>>,
    plane: &XPlane,
    id: EventMetadataId,
) -> Option<&'t MetadataTemplate> {
    let index = id.index();
    if templates.len() <= index {
        templates.resize_with(index + 1, || None);
    }
    let slot = templates.get_mut(index)?;
    if slot.is_none() {
        *slot = Some(metadata_template(plane, id));
    }
    slot.as_ref()
}

/// `FromXEvent`'s metadata part and `GetOpKeyFromXEvent` of one event metadata.
fn metadata_template(plane: &XPlane, id: EventMetadataId) -> MetadataTemplate {
    let mut op = OpMetrics::default();
    metadata_op_metrics(plane, id, &mut op, 0);
    MetadataTemplate { key: metadata_key(plane, id), op }
}

/// The device timespans an op's numbers are computed from, and its core type.
struct OpTiming {
    time_ps: u64,
    children_ps: u64,
    core_type: TpuCoreType,
    /// TensorCore ops: normalized time = time × the event's time scale (default 1).
    /// SparseCore ops and per-step ops keep `FromXEvent`'s normalized duration.
    tensor_core: bool,
}

impl<'p> KeyedOpBuilder<'p> {
    fn new(plane: &'p XPlane) -> Self {
        KeyedOpBuilder { plane, templates: Vec::new(), ops: KeyedOps::default() }
    }

    /// `FromXEvent` + timing overrides + `AddOpMetric` (`MergeOpMetrics`).
    fn add_event(&mut self, event: &Event<'_>, timing: OpTiming, children: Option<&OpMetricsDb>) {
        let Some(template) = ensure_template(&mut self.templates, self.plane, event.metadata_id()) else { return };
        self.ops.add(template.key, || std::borrow::Cow::Borrowed(&template.op), event, timing, children);
    }

    fn finalize(self) -> OpMetricsDb {
        self.ops.finalize()
    }

    /// `Finalize(total_time_ps)`: with the total time and the IDLE op.
    fn finalize_with_total(self, total_time_ps: u64) -> OpMetricsDb {
        let mut db = self.finalize();
        set_total_time_ps(&mut db, total_time_ps);
        add_idle_op(&mut db);
        db
    }
}

/// The per-step, per-core op databases of TPU steps (`ConvertTpuDeviceTraceXLineToStepEvents`
/// feeding `FromXEvent` into an `XEventsOpMetricsDbBuilder` per step): what the TPU step
/// breakdown (time per HLO category, idle) is computed from.
#[derive(Debug, Clone, Copy, Default)]
pub struct TpuStepOpMetrics;

impl TpuOpMetricsBuilder for TpuStepOpMetrics {
    type Acc = KeyedOps;

    fn add_op(&self, acc: &mut KeyedOps, event: &Event<'_>, time_ps: u64, self_time_ps: u64) {
        let (plane, id) = (event.plane(), event.metadata_id());
        // `FromXEvent` leaves the core type unset (only the plane converter sets it).
        let timing = OpTiming {
            time_ps,
            children_ps: time_ps.wrapping_sub(self_time_ps),
            core_type: TpuCoreType::Unknown,
            tensor_core: false,
        };
        let metadata_op = || {
            let mut op = OpMetrics::default();
            metadata_op_metrics(plane, id, &mut op, 0);
            std::borrow::Cow::Owned(op)
        };
        acc.add(metadata_key(plane, id), metadata_op, event, timing, None);
    }

    fn finalize(&self, acc: KeyedOps) -> OpMetricsDb {
        acc.finalize()
    }
}

/// `AdjustFlopsAndBytesAccessed`: FLOPs and bytes are per occurrence until here. XProf 2.24.2
/// treats custom calls like every other op (no per-event costs; found by running its
/// converter: the `custom-call` special cases of the sources oxprof follows are gone).
fn adjust_flops_and_bytes(op: &mut OpMetrics) {
    let occurrences = u64::from(op.occurrences);
    op.flops = op.flops.wrapping_mul(occurrences);
    op.flops_v2 *= occurrences as f64;
    if op.model_flops > 0 {
        op.model_flops = op.model_flops.wrapping_mul(occurrences);
        op.model_flops_v2 *= occurrences as f64;
    } else {
        op.model_flops = op.flops;
        op.model_flops_v2 = op.flops_v2;
    }
    op.bytes_accessed = op.bytes_accessed.wrapping_mul(occurrences);
    for m in &mut op.memory_accessed_breakdown {
        m.bytes_accessed = m.bytes_accessed.wrapping_mul(occurrences);
    }
}

/// One open op on the ancestor stack.
struct OpenOp<'a> {
    event: Event<'a>,
    span: Timespan,
    children_ps: u64,
}

/// XProf's `AncestorStack` over device timespans: an op is a child of the open op whose
/// timespan includes its own; when a new op does not fit, finished ops are popped.
///
/// ```text
/// fusion.1 |----------------------|          pops: conv (when add starts),
/// conv        |-------|                            add, fusion.1 (at flush)
/// add                   |----|
/// ```
/// `children_ps` of each op sums the durations of its direct children.
struct AncestorStack<'a> {
    open: Vec<OpenOp<'a>>,
}

impl<'a> AncestorStack<'a> {
    fn push(&mut self, op: OpenOp<'a>, mut pop: impl FnMut(&OpenOp<'a>)) {
        while let Some(top) = self.open.last() {
            if top.span.includes(&op.span) {
                break;
            }
            pop(top);
            self.open.pop();
        }
        if let Some(parent) = self.open.last_mut() {
            parent.children_ps = parent.children_ps.wrapping_add(op.span.duration_ps);
        }
        self.open.push(op);
    }

    fn flush(&mut self, mut pop: impl FnMut(&OpenOp<'a>)) {
        while let Some(top) = self.open.pop() {
            pop(&top);
        }
    }
}

/// `IsOpLineName`.
fn is_op_line(name: &str) -> bool {
    matches!(name, "XLA Ops" | "Framework Ops" | "Sparse Core Ops")
}

/// `ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb` for one TPU TensorCore plane, then (with
/// an HLO lookup) `UpdateOpMetricsDbFromHloModuleMap`.
///
/// Events of the op lines are nested by their device timespans (`device_offset_ps` and
/// `device_duration_ps`); each op's time is its device duration and its self time that
/// minus its direct children's. Ops merge by `(program_id, symbol_id)` of their metadata
/// (symbol 0, the root, is skipped). Ops offloaded to a SparseCore get that module's
/// SparseCore database as children. The total time spans the first to the last op or
/// step (device timespans) and the rest becomes the IDLE op.
pub fn tensor_core_op_metrics_db(
    plane: &XPlane,
    sparse_core_dbs: &SparseCoreDbs,
    hlo: Option<&dyn HloModuleLookup>,
) -> OpMetricsDb {
    let mut builder = KeyedOpBuilder::new(plane);
    let (mut first_ps, mut last_ps) = (u64::MAX, 0u64);
    let mut track = |span: &Timespan| {
        first_ps = first_ps.min(span.begin_ps);
        last_ps = last_ps.max(span.end_ps());
    };
    let mut stack = AncestorStack { open: Vec::new() };
    let mut pop = |open: &OpenOp<'_>| {
        let n_offload = open.event.stats().fold((None, None), |(core, start), s| match s.stat_type() {
            Some(StatType::OffloadCoreId) if core.is_none() => (Some(uint_value(&s.value)), start),
            Some(StatType::TcOffloadStartId) if start.is_none() => (core, Some(int_value(&s.value) as u64)),
            _ => (core, start),
        });
        let children = match n_offload {
            (Some(core), Some(start)) => sparse_core_dbs.get(&(core, start)),
            _ => None,
        };
        let timing = OpTiming {
            time_ps: open.span.duration_ps,
            children_ps: open.children_ps,
            core_type: TpuCoreType::TensorCore,
            tensor_core: true,
        };
        builder.add_event(&open.event, timing, children);
    };
    for line in &plane.lines {
        if line.name == "Sparse Core Steps" || line.name == "Steps" {
            for event in line.events(plane) {
                track(&device_event_timespan(&event));
            }
        }
        if !is_op_line(&line.name) {
            continue;
        }
        for event in line.events(plane) {
            let span = device_event_timespan(&event);
            track(&span);
            stack.push(OpenOp { event, span, children_ps: 0 }, &mut pop);
        }
        stack.flush(&mut pop);
    }
    let mut db = builder.finalize_with_total(last_ps.wrapping_sub(first_ps));
    if let Some(hlo) = hlo {
        add_fusion_children_from_hlo(&mut db, hlo);
    }
    db
}

/// `ConvertSparseCoreDeviceTraceXPlaneToOpMetricsDb` (then, with an HLO lookup,
/// `UpdateOpMetricsDbFromHloModuleMap`): the ops of a SparseCore plane, one database per
/// SparseCore module `(offload_core_id, tc_offload_start_id)`, stored into `dbs`.
///
/// Modules (`Sparse Core Modules` line, ordered by device timespan, identical spans kept
/// once) are walked alongside the `Sparse Core Ops` line: an op belongs to the first module
/// not ending before it starts, if that module includes it. Each module's total time is
/// the sum of its spans.
pub fn sparse_core_op_metrics_dbs(plane: &XPlane, dbs: &mut SparseCoreDbs, hlo: Option<&dyn HloModuleLookup>) {
    // (begin, Reverse(duration)) orders spans like XProf's Timespan::operator<.
    let mut modules: BTreeMap<(u64, std::cmp::Reverse<u64>), (u64, u64)> = BTreeMap::new();
    for line in plane.lines.iter().filter(|l| l.name == "Sparse Core Modules") {
        for event in line.events(plane) {
            let (mut core, mut start) = (None, None);
            for stat in event.stats() {
                match stat.stat_type() {
                    Some(StatType::OffloadCoreId) if core.is_none() => core = Some(uint_value(&stat.value)),
                    Some(StatType::TcOffloadStartId) if start.is_none() => start = Some(uint_value(&stat.value)),
                    _ => {}
                }
            }
            if let (Some(core), Some(start)) = (core, start) {
                let span = device_event_timespan(&event);
                modules.entry((span.begin_ps, std::cmp::Reverse(span.duration_ps))).or_insert((core, start));
            }
        }
    }
    let module_list: Vec<(Timespan, (u64, u64))> =
        modules.iter().map(|(&(b, std::cmp::Reverse(d)), &k)| (Timespan { begin_ps: b, duration_ps: d }, k)).collect();

    struct InProgress<'a, 'p> {
        builder: KeyedOpBuilder<'p>,
        stack: AncestorStack<'a>,
        total_ps: u64,
    }
    let mut progress: HashMap<(u64, u64), InProgress<'_, '_>> = HashMap::new();
    let mut order: Vec<(u64, u64)> = Vec::new();
    let sc_timing = |open: &OpenOp<'_>| OpTiming {
        time_ps: open.span.duration_ps,
        children_ps: open.children_ps,
        core_type: TpuCoreType::SparseCore,
        tensor_core: false,
    };
    for line in plane.lines.iter().filter(|l| l.name == "Sparse Core Ops") {
        let mut module_index = 0;
        for event in line.events(plane) {
            let span = device_event_timespan(&event);
            while module_list.get(module_index).is_some_and(|(m, _)| m.end_ps() < span.begin_ps) {
                module_index += 1;
            }
            let Some((module_span, key)) = module_list.get(module_index) else { break };
            if !module_span.includes(&span) {
                continue;
            }
            let entry = progress.entry(*key).or_insert_with(|| {
                order.push(*key);
                InProgress {
                    builder: KeyedOpBuilder::new(plane),
                    stack: AncestorStack { open: Vec::new() },
                    total_ps: 0,
                }
            });
            let InProgress { builder, stack, .. } = entry;
            stack.push(OpenOp { event, span, children_ps: 0 }, |open| {
                builder.add_event(&open.event, sc_timing(open), None)
            });
        }
    }
    for (module_span, key) in &module_list {
        if let Some(InProgress { builder, stack, total_ps }) = progress.get_mut(key) {
            stack.flush(|open| builder.add_event(&open.event, sc_timing(open), None));
            *total_ps = total_ps.wrapping_add(module_span.duration_ps);
        }
    }
    for key in order {
        if let Some(p) = progress.remove(&key) {
            let mut db = p.builder.finalize_with_total(p.total_ps);
            if let Some(hlo) = hlo {
                add_fusion_children_from_hlo(&mut db, hlo);
            }
            dbs.insert(key, db);
        }
    }
}

/// `UpdateOpMetricsDbFromHloModuleMap`: every op that is an HLO fusion gets its fused
/// instructions (recursively, parameters and tuples skipped) appended as children.
fn add_fusion_children_from_hlo(db: &mut OpMetricsDb, hlo: &dyn HloModuleLookup) {
    for op in &mut db.metrics_db {
        if let Some(instruction) = hlo.instruction(op.hlo_module_id, &op.name) {
            add_fusion_children(op, instruction, 0);
        }
    }
}

/// `AddFusionChildrenToOpMetricsFromHloInstruction` with `EnterOpMetadata` per child.
fn add_fusion_children(op: &mut OpMetrics, instruction: &dyn HloInstruction, depth: usize) {
    let children = instruction.fused_children();
    if children.is_empty() || depth >= MAX_CHILD_DEPTH {
        return;
    }
    for child in children {
        if child.is_parameter_or_tuple() {
            continue;
        }
        let mut child_op = OpMetrics {
            name: child.name().to_string(),
            category: child.category().to_string(),
            deduplicated_name: child.deduplicated_name().to_string(),
            provenance: child.op_full_name().to_string(),
            num_cores: 1,
            occurrences: 1,
            flops: child.flops(),
            flops_v2: child.flops() as f64,
            bytes_accessed: child.bytes_accessed(),
            long_name: child.expression().to_string(),
            ..Default::default()
        };
        add_fusion_children(&mut child_op, child, depth + 1);
        op.children.get_or_insert_with(Default::default).metrics_db.push(child_op);
    }
}

// ---------------------------------------------------------------------------------------
// GPU: ops from stream events (XLA ops through the HLO lookup, else framework ops).
// ---------------------------------------------------------------------------------------

/// The GPU event stats the op database uses (`GpuEventStats`, own stats only).
#[derive(Default)]
struct GpuOpStats<'a> {
    tf_op_fullname: &'a str,
    /// The last `::` part of `hlo_op`, when the stat is present.
    hlo_op: Option<&'a str>,
    program_id: Option<u64>,
    group_id: Option<i64>,
    is_eager: bool,
}

fn gpu_op_stats<'a>(event: &Event<'a>) -> GpuOpStats<'a> {
    let mut s = GpuOpStats::default();
    for stat in event.stats() {
        let v = &stat.value;
        match stat.stat_type() {
            Some(StatType::TfOp) => s.tf_op_fullname = str_value(v),
            Some(StatType::HloOp) => s.hlo_op = Some(str_value(v).rsplit("::").next().unwrap_or("")),
            Some(StatType::ProgramId) => s.program_id = Some(int_or_uint(v)),
            Some(StatType::GroupId) => s.group_id = Some(int_value(v)),
            Some(StatType::IsEager) => s.is_eager = int_value(v) != 0,
            _ => {}
        }
    }
    s
}

/// `OpIdentifier` of `DeviceOpMetricsDbBuilder`.
struct OpIdentity<'a> {
    category: &'a str,
    provenance: &'a str,
    deduplicated_name: &'a str,
    long_name: &'a str,
    source: HloSourceInfo,
}

/// `OpData` of `DeviceOpMetricsDbBuilder`.
struct OpData {
    is_eager: bool,
    occurrences: u32,
    time_ps: u64,
    flops: i64,
    bytes_accessed: i64,
    model_flops: i64,
    vdd_energy_j: f64,
    performance: Option<HloPerformance>,
}

/// `DeviceOpMetricsDbBuilder`: ops keyed by `(program_id, name)` in first-seen order.
#[derive(Default)]
struct DeviceOpBuilder {
    db: OpMetricsDb,
    index: HashMap<(u64, String), usize>,
}

impl DeviceOpBuilder {
    fn slot(&mut self, program_id: u64, name: &str) -> usize {
        if let Some(&i) = self.index.get(&(program_id, name.to_string())) {
            return i;
        }
        self.db.metrics_db.push(OpMetrics { hlo_module_id: program_id, name: name.to_string(), ..Default::default() });
        let i = self.db.metrics_db.len() - 1;
        self.index.insert((program_id, name.to_string()), i);
        i
    }

    /// `EnterOp` (with `EnterOpMetadata`) on the op at `slot`.
    fn enter_op(&mut self, slot: usize, id: &OpIdentity<'_>, data: &OpData) {
        let Some(op) = self.db.metrics_db.get_mut(slot) else { return };
        if op.occurrences == 0 && op.category.is_empty() && op.provenance.is_empty() {
            op.category = if id.category.is_empty() { "unknown".to_string() } else { id.category.to_string() };
            op.provenance = id.provenance.to_string();
            if !id.deduplicated_name.is_empty() {
                op.deduplicated_name = id.deduplicated_name.to_string();
            }
            if !id.long_name.is_empty() {
                op.long_name = id.long_name.to_string();
            }
            op.is_eager = op.is_eager || data.is_eager;
            op.source_info = Some(SourceInfo {
                file_name: id.source.file.clone(),
                line_number: id.source.line,
                stack_frame: id.source.stack_frame.clone(),
            });
        }
        if data.vdd_energy_j != 0.0 {
            op.vdd_energy_j = Some(op.vdd_energy_j.unwrap_or(0.0) + data.vdd_energy_j);
        }
        let occurrences = u64::from(data.occurrences);
        op.num_cores = 1;
        op.occurrences = op.occurrences.wrapping_add(data.occurrences);
        op.time_ps = op.time_ps.wrapping_add(data.time_ps);
        op.self_time_ps = op.self_time_ps.wrapping_add(data.time_ps);
        let perf = data.performance.as_ref();
        let flops = perf.filter(|p| p.device_flops > 0).map_or(data.flops, |p| p.device_flops);
        let bytes = perf.filter(|p| p.bytes_accessed > 0).map_or(data.bytes_accessed, |p| p.bytes_accessed);
        let model_flops = perf.filter(|p| p.model_flops > 0).map_or(data.model_flops, |p| p.model_flops);
        op.flops = op.flops.wrapping_add((flops as u64).wrapping_mul(occurrences));
        op.flops_v2 += flops as f64 * occurrences as f64;
        if model_flops == 0 {
            op.model_flops = op.flops;
            op.model_flops_v2 = op.flops_v2;
        } else {
            op.model_flops = op.model_flops.wrapping_add((model_flops as u64).wrapping_mul(occurrences));
            op.model_flops_v2 += model_flops as f64 * occurrences as f64;
        }
        op.bytes_accessed = op.bytes_accessed.wrapping_add((bytes as u64).wrapping_mul(occurrences));
        if let Some(p) = perf {
            let breakdown: Vec<MemoryAccessed> = p
                .memory_accessed_breakdown
                .iter()
                .map(|m| MemoryAccessed {
                    operation_type: if m.is_read { MemoryOperationType::Read } else { MemoryOperationType::Write },
                    memory_space: m.memory_space,
                    bytes_accessed: if m.bytes_accessed > 0 {
                        (m.bytes_accessed as u64).wrapping_mul(occurrences)
                    } else {
                        0
                    },
                })
                .collect();
            combine_memory_accessed_breakdown(&breakdown, &mut op.memory_accessed_breakdown);
        }
        self.db.total_op_time_ps = self.db.total_op_time_ps.wrapping_add(data.time_ps);
    }
}

/// `HLOTracker`: consecutive kernels of one HLO op (same name and group) counted as one
/// occurrence group.
#[derive(Default)]
struct HloRun<'h> {
    instruction: Option<&'h dyn HloInstruction>,
    name: String,
    program_id: u64,
    group_id: u64,
    is_eager: bool,
    occurrences: u32,
    duration_ps: u64,
    flops: u64,
    bytes_accessed: u64,
    vdd_energy_j: f64,
}

impl HloRun<'_> {
    /// `AggregateHloFunc`: enters the run as one op and starts a new run.
    fn flush(&mut self, builder: &mut DeviceOpBuilder) {
        let Some(instruction) = self.instruction else { return };
        let id = OpIdentity {
            category: instruction.category(),
            provenance: instruction.tf_op_name(),
            deduplicated_name: instruction.deduplicated_name(),
            long_name: instruction.expression(),
            source: instruction.source_info(),
        };
        let data = OpData {
            is_eager: self.is_eager,
            occurrences: self.occurrences,
            time_ps: self.duration_ps,
            flops: self.flops as i64,
            bytes_accessed: self.bytes_accessed as i64,
            model_flops: self.flops as i64,
            vdd_energy_j: self.vdd_energy_j,
            performance: instruction.performance(),
        };
        let slot = builder.slot(self.program_id, &self.name);
        builder.enter_op(slot, &id, &data);
        let is_eager = self.is_eager;
        *self = HloRun { is_eager, ..Default::default() };
    }
}

/// `ConvertDeviceTraceXPlaneToOpMetricsDb` for one GPU plane (`plane_index` is its position
/// in the XSpace, for the grouping side tables).
///
/// Per non-derived line, in order:
/// * kernels with an `hlo_op` found through `hlo` are XLA ops: consecutive kernels of the
///   same HLO op and group form one run, entered as `occurrences` = kernels of the run;
/// * else kernels with a `tf_op` are framework ops named `<tf op name>/<kernel name>`,
///   category = the op type (or `unknown`), one occurrence each.
///
/// Without `hlo`, XLA kernels are skipped (as XProf skips kernels whose HLO op it does not
/// find). The total time spans the smallest to the largest event offset (line-relative,
/// as XProf computes it) and the rest becomes the IDLE op.
pub fn gpu_op_metrics_db(
    plane: &XPlane,
    plane_index: usize,
    groups: Option<&EventGroups>,
    hlo: Option<&dyn HloModuleLookup>,
) -> OpMetricsDb {
    let mut builder = DeviceOpBuilder::default();
    let (mut first_offset, mut last_offset) = (i64::MAX, 0i64);
    // (tf_op full name, kernel metadata) → op slot: no allocation per kernel.
    let mut tf_slots: HashMap<(&str, EventMetadataId), usize> = HashMap::new();
    let mut run = HloRun::default();
    for (line_index, line) in plane.lines.iter().enumerate() {
        if is_derived_thread_id(line.id) {
            continue;
        }
        for event in line.events(plane) {
            first_offset = first_offset.min(event.offset_ps());
            last_offset = last_offset.max(event.offset_ps().wrapping_add(event.duration_ps()));
            let stats = gpu_op_stats(&event);
            let group_id = groups.and_then(|g| g.group_id(plane_index, line_index, event.index())).or(stats.group_id);
            let is_eager = stats.is_eager || groups.is_some_and(|g| g.is_eager(plane_index, line_index, event.index()));
            if let Some(hlo_op) = stats.hlo_op {
                let instruction = match (hlo, stats.program_id) {
                    (Some(h), Some(program_id)) => h.instruction(program_id, hlo_op),
                    _ => None,
                };
                let Some(instruction) = instruction else { continue };
                if hlo_op != run.name || group_id.is_none_or(|g| g as u64 != run.group_id) {
                    run.flush(&mut builder);
                }
                if run.occurrences == 0 {
                    run.instruction = Some(instruction);
                    run.name = hlo_op.to_string();
                    run.program_id = stats.program_id.unwrap_or(0);
                    if let Some(g) = group_id {
                        run.group_id = g as u64;
                    }
                    run.is_eager = is_eager;
                }
                run.occurrences = run.occurrences.wrapping_add(1);
                run.duration_ps = run.duration_ps.wrapping_add(event.duration_ps() as u64);
                for stat in event.stats() {
                    match stat.name() {
                        "vdd_energy_j" => run.vdd_energy_j += double_value(&stat.value),
                        "flops" => run.flops = int_or_uint(&stat.value),
                        "bytes_accessed" => run.bytes_accessed = int_or_uint(&stat.value),
                        _ => {}
                    }
                }
            } else if !stats.tf_op_fullname.is_empty() {
                run.flush(&mut builder);
                let tf_op = parse_tf_op_fullname(stats.tf_op_fullname);
                let slot = *tf_slots
                    .entry((stats.tf_op_fullname, event.metadata_id()))
                    .or_insert_with(|| builder.slot(0, &format!("{}/{}", tf_op.name, event.name())));
                let id = OpIdentity {
                    category: tf_op.op_type,
                    provenance: stats.tf_op_fullname,
                    deduplicated_name: "",
                    long_name: "",
                    source: HloSourceInfo { line: -1, ..Default::default() },
                };
                let data = OpData {
                    is_eager,
                    occurrences: 1,
                    time_ps: event.duration_ps() as u64,
                    flops: 0,
                    bytes_accessed: 0,
                    model_flops: 0,
                    vdd_energy_j: 0.0,
                    performance: None,
                };
                builder.enter_op(slot, &id, &data);
            }
        }
        run.flush(&mut builder);
    }
    let mut db = builder.db;
    let span = if last_offset != 0 { last_offset.wrapping_sub(first_offset) as u64 } else { 0 };
    set_total_time_ps(&mut db, span);
    add_idle_op(&mut db);
    db
}

/// `device_op_metrics_db` of one host, as `ConvertXSpaceToOpStats` builds it: the per-plane
/// databases (TPU: SparseCore planes first, then TensorCores with their SparseCore
/// children; GPU: every GPU plane) combined, and for TPU the duty cycle's busy and idle
/// times (standard and high confidence). `precision_stats` is left for the caller (XProf overwrites it from step events);
/// it is present (zero) when at least one plane was combined, as XProf's combiner leaves it.
pub fn device_op_metrics_db(
    space: &XSpace,
    groups: Option<&EventGroups>,
    hlo: Option<&dyn HloModuleLookup>,
) -> OpMetricsDb {
    let (planes, is_tpu) = device_planes(space);
    let mut per_plane = Vec::new();
    if is_tpu {
        let mut sparse_core_dbs = SparseCoreDbs::new();
        for plane in planes.iter().filter(|p| sparse_core_id(&p.name).is_some()) {
            sparse_core_op_metrics_dbs(plane, &mut sparse_core_dbs, hlo);
        }
        for plane in planes.iter().filter(|p| sparse_core_id(&p.name).is_none()) {
            per_plane.push(tensor_core_op_metrics_db(plane, &sparse_core_dbs, hlo));
        }
    } else {
        // The GPU planes of `device_planes`, with their positions in the space (found in
        // one pass: a search per plane made many-plane files quadratic).
        for (index, plane) in space.planes.iter().enumerate().filter(|(_, p)| p.name.starts_with(GPU_PLANE_PREFIX)) {
            per_plane.push(gpu_op_metrics_db(plane, index, groups, hlo));
        }
    }
    let mut db = combine_dbs(&per_plane);
    if is_tpu {
        let duty = tpu_duty_cycle(planes.iter().copied());
        db.idle_time_ps = duty.idle_time_ps;
        db.busy_time_ps = duty.busy_time_ps;
        db.busy_time_high_confidence_ps = duty.busy_time_high_confidence_ps;
        db.idle_time_high_confidence_ps = duty.idle_time_high_confidence_ps;
    }
    db
}

/// `ComputePrecisionStats`: time of 32-bit and 16-bit device compute over step events,
/// given as `(EventType number, duration_ps)` (`DEVICE_COMPUTE_32` = 140,
/// `DEVICE_COMPUTE_16` = 150).
pub fn precision_stats(step_event_spans: impl IntoIterator<Item = (i32, u64)>) -> PrecisionStats {
    const DEVICE_COMPUTE_32: i32 = 140;
    const DEVICE_COMPUTE_16: i32 = 150;
    let (mut ps32, mut ps16) = (0i64, 0i64);
    for (event_type, duration) in step_event_spans {
        match event_type {
            DEVICE_COMPUTE_32 => ps32 = ps32.wrapping_add(duration as i64),
            DEVICE_COMPUTE_16 => ps16 = ps16.wrapping_add(duration as i64),
            _ => {}
        }
    }
    PrecisionStats { compute_16bit_ps: ps16 as u64, compute_32bit_ps: ps32 as u64 }
}

/// Helpers shared by the reference tests of the device-side OpStats modules.
#[cfg(test)]
pub(crate) mod testutil {
    use oxprof_model::XSpace;
    pub(crate) use oxprof_testkit::files::{external_root, repo_root};
    use serde_json::Value;
    use std::path::{Path, PathBuf};

    /// A reference profile: its name, its XSpace files, and XProf's OpStats.
    pub(crate) struct RefCase {
        pub(crate) name: String,
        pub(crate) xspace: PathBuf,
        pub(crate) op_stats: PathBuf,
    }

    /// The single-host external profiles with committed XProf OpStats.
    pub(crate) fn external_cases(root: &Path) -> Vec<RefCase> {
        let opstats = repo_root().join("testdata/external-opstats");
        let mi300 = "AMD-AGI-TraceLens/tests/traces/mi300";
        [
            (
                "GPU-multi-worker__34.83.195.179_6003",
                "openxla-xprof/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb".to_string(),
            ),
            (
                "test_xplanes__tpu_inference_2",
                "openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb".into(),
            ),
            ("jax08_attention__tw003", format!("{mi300}/jax08_attention/tw003.xplane.pb")),
            ("jax08_conv__tw003", format!("{mi300}/jax08_conv/tw003.xplane.pb")),
            ("jax08_elementwise__tw003", format!("{mi300}/jax08_elementwise/tw003.xplane.pb")),
            ("jax08_gemm__tw003", format!("{mi300}/jax08_gemm/tw003.xplane.pb")),
            (
                "jax_conv_minimal",
                format!("{mi300}/jax_conv_minimal/chi-mi300x-013.ord.vultr.cpe.ice.amd.com.xplane.pb"),
            ),
            (
                "test_data_jax_te_fused_attn_categorization__934987a2fc2f",
                "AMD-AGI-TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb".into(),
            ),
        ]
        .into_iter()
        .map(|(name, file)| RefCase {
            name: name.to_string(),
            xspace: root.join(file),
            op_stats: opstats.join(format!("{name}.op_stats.json.gz")),
        })
        .collect()
    }

    /// The committed refkit profiles (CPU only).
    pub(crate) fn refkit_cases() -> Vec<RefCase> {
        ["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"]
            .into_iter()
            .filter_map(|name| {
                let dir = repo_root().join("testdata/profiles").join(name);
                let xspace = find_xplane(&dir)?;
                Some(RefCase { name: name.to_string(), xspace, op_stats: dir.join("xprof_out/op_stats.json") })
            })
            .collect()
    }

    fn find_xplane(dir: &Path) -> Option<PathBuf> {
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if let Some(found) = find_xplane(&path) {
                    return Some(found);
                }
            } else if path.to_string_lossy().ends_with(".xplane.pb.gz")
                || path.to_string_lossy().ends_with(".xplane.pb")
            {
                return Some(path);
            }
        }
        None
    }

    /// XProf's OpStats JSON as a value, read through oxprof's types (so fields oxprof's
    /// OpStats lacks are dropped).
    pub(crate) fn reference(path: &Path) -> Value {
        serde_json::to_value(crate::op_stats::load_op_stats(path)).unwrap()
    }

    /// The raw reference JSON (all of XProf's fields).
    pub(crate) fn raw_reference(path: &Path) -> Value {
        oxprof_testkit::files::read_json(path)
    }

    pub(crate) fn load(case: &RefCase) -> XSpace {
        oxprof_testkit::files::load_xspace(&case.xspace).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use oxprof_testkit::jsoncmp::{CmpOptions, compare};
    use oxprof_testkit::{Value as V, XSpaceBuilder};
    use serde_json::{Value, json};

    fn decode(builder: XSpaceBuilder) -> XSpace {
        oxprof_xspace::decode_xspace(&builder.to_bytes()).unwrap()
    }

    fn op<'a>(db: &'a OpMetricsDb, name: &str) -> &'a OpMetrics {
        db.metrics_db.iter().find(|m| m.name == name).unwrap()
    }

    //  device time (ps)  0    100  200  300  400  500  600
    //  XLA Ops           |---- fusion (0..400) ----|
    //                      |conv|  |conv|               |conv 500..600|
    //                     100-200  250-350
    // fusion's self time = 400 - 100 - 100 = 200; conv runs 3 times; total 0..600,
    // idle = 600 - (200 + 300) = 100.
    #[test]
    fn tensor_core_nesting_merging_and_idle() {
        let space = decode(XSpaceBuilder::new().plane("/device:TPU:0", |p| {
            for (name, symbol, category) in [("fusion", 1u64, "loop fusion"), ("conv", 2, "convolution")] {
                p.event_metadata_stat(name, "program_id", 7u64);
                p.event_metadata_stat(name, "symbol_id", symbol);
                p.event_metadata_stat(name, "hlo_category", category);
                p.event_metadata_stat(name, "flops", 10i64);
                p.event_metadata_stat(name, "tf_op", "jit(f)/conv:");
                p.event_metadata_stat(name, "source", "f.py:12");
            }
            p.event_display_name("conv", "conv.1");
            p.event_metadata_stat("root", "program_id", 7u64);
            p.event_metadata_stat("root", "symbol_id", 0u64);
            p.line(1, "XLA Ops", 0, |l| {
                let dev = |l: &mut oxprof_testkit::LineBuilder<'_>, n: &str, b: u64, d: u64, own: i64| {
                    l.event(n, b as i64, own).stat("device_offset_ps", b).stat("device_duration_ps", d);
                };
                dev(l, "fusion", 0, 400, 401);
                dev(l, "conv", 100, 100, 90);
                dev(l, "conv", 250, 100, 80);
                dev(l, "conv", 500, 100, 100);
                l.event("root", 0, 600).stat("Time Scale Multiplier", 2.0);
            });
        }));
        let db = tensor_core_op_metrics_db(&space.planes[0], &SparseCoreDbs::new(), None);
        let fusion = op(&db, "fusion");
        assert_eq!((fusion.time_ps, fusion.self_time_ps, fusion.min_time_ps), (400, 200, 401));
        assert_eq!((fusion.hlo_module_id, fusion.occurrences, fusion.num_cores), (7, 1, 1));
        assert_eq!(fusion.core_type, TpuCoreType::TensorCore);
        assert_eq!(fusion.normalized_time_ps, 400);
        let conv = op(&db, "conv.1");
        assert_eq!(conv.long_name, "conv");
        assert_eq!((conv.occurrences, conv.time_ps, conv.self_time_ps, conv.min_time_ps), (3, 300, 300, 80));
        assert_eq!((conv.flops, conv.model_flops, conv.flops_v2), (30, 30, 30.0));
        assert_eq!(conv.provenance, "jit(f)/conv:");
        let source = conv.source_info.as_ref().unwrap();
        assert_eq!((source.file_name.as_str(), source.line_number), ("f.py", 12));
        // The root (symbol 0) is not an op, but it bounds the total time.
        assert!(db.metrics_db.iter().all(|m| m.name != "root"));
        assert_eq!((db.total_op_time_ps, db.total_time_ps), (500, 600));
        assert_eq!(op(&db, IDLE_OP).self_time_ps, 100);
        assert_eq!(db.normalized_total_op_time_ps, 500);
    }

    //  XLA Ops  |cc 0..100|   |cc 200..300 (event flops 3)|   |conv 400..500|
    // Numbers XProf 2.24.2 computed for this plane (run on the same XSpace): custom calls
    // ignore per-event costs and fall back to FLOPs for model FLOPs; a uint64
    // `min_duration_ps` reads as 0 (XProf's `IntValue`); energy is summed.
    #[test]
    fn custom_calls_and_stat_kinds_as_xprof_2_24_2() {
        let space = decode(XSpaceBuilder::new().plane("/device:TPU:0", |p| {
            for (name, symbol, category) in [("cc", 3u64, "custom-call"), ("conv", 2, "convolution")] {
                p.event_metadata_stat(name, "program_id", 3u64);
                p.event_metadata_stat(name, "symbol_id", symbol);
                p.event_metadata_stat(name, "hlo_category", category);
                p.event_metadata_stat(name, "flops", 10i64);
                p.event_metadata_stat(name, "bytes_accessed", 20i64);
            }
            p.line(1, "XLA Ops", 0, |l| {
                l.event("cc", 0, 100);
                l.event("cc", 200, 100).stat("flops", 3u64).stat("model_flops", 1i64).stat("bytes_accessed", 2i64);
                l.event("conv", 400, 100)
                    .stat("min_duration_ps", 11u64)
                    .stat("self_duration_ps", 7i64)
                    .stat("vdd_energy_j", 0.5)
                    .stat("Time Scale Multiplier", 2.0);
            });
        }));
        let db = tensor_core_op_metrics_db(&space.planes[0], &SparseCoreDbs::new(), None);
        let cc = op(&db, "cc");
        assert_eq!((cc.flops, cc.model_flops, cc.bytes_accessed), (20, 20, 40));
        let conv = op(&db, "conv");
        assert_eq!((conv.min_time_ps, conv.self_time_ps, conv.normalized_time_ps), (0, 100, 200));
        assert_eq!(conv.vdd_energy_j, Some(0.5));
    }

    //  Sparse Core Modules |----- module (core 0, start 5): 0..1000 -----|
    //  Sparse Core Ops        |- gather 100..300 -|   |- gather 400..500 -|
    //  TensorCore XLA Ops  |- offload op (offload_core_id 0, tc_offload_start_id 5) -|
    #[test]
    fn sparse_core_ops_become_children_of_the_offloading_op() {
        let space = decode(
            XSpaceBuilder::new()
                .plane("/device:TPU:0 SparseCore 0", |p| {
                    p.event_metadata_stat("gather", "program_id", 3u64);
                    p.event_metadata_stat("gather", "symbol_id", 4u64);
                    p.line(1, "Sparse Core Modules", 0, |l| {
                        l.event("module", 0, 1000).stat("offload_core_id", 0u64).stat("tc_offload_start_id", 5u64);
                    });
                    p.line(2, "Sparse Core Ops", 0, |l| {
                        l.event("gather", 100, 200);
                        l.event("gather", 400, 100);
                    });
                })
                .plane("/device:TPU:0", |p| {
                    p.event_metadata_stat("offload", "program_id", 3u64);
                    p.event_metadata_stat("offload", "symbol_id", 9u64);
                    p.line(1, "XLA Ops", 0, |l| {
                        l.event("offload", 0, 1000).stat("offload_core_id", 0u64).stat("tc_offload_start_id", 5i64);
                    });
                }),
        );
        let mut sc = SparseCoreDbs::new();
        sparse_core_op_metrics_dbs(&space.planes[0], &mut sc, None);
        let sc_db = &sc[&(0, 5)];
        let gather = op(sc_db, "gather");
        assert_eq!((gather.occurrences, gather.time_ps), (2, 300));
        assert_eq!(gather.core_type, TpuCoreType::SparseCore);
        assert_eq!((sc_db.total_time_ps, op(sc_db, IDLE_OP).time_ps), (1000, 700));
        let db = tensor_core_op_metrics_db(&space.planes[1], &sc, None);
        let children = op(&db, "offload").children.as_ref().unwrap();
        assert_eq!(op(children, "gather").time_ps, 300);
        // Combined without counting cores.
        assert_eq!(op(children, "gather").num_cores, 0);
        assert_eq!(children.total_time_ps, 1000);
        // Whole host: SparseCore planes first, TensorCores combined, duty cycle set.
        let host = device_op_metrics_db(&space, None, None);
        assert_eq!(op(&host, "offload").occurrences, 1);
        assert!(host.precision_stats.is_some());
    }

    //  Stream #1 (line 1)   |k1 0..100|  |k2 150..250|      |k1 400..450|
    //                        tf_op a/b:MatMul  tf_op "c d"   tf_op a/b:MatMul
    //  derived line          (ignored)
    #[test]
    fn gpu_framework_op_kernels() {
        let space = decode(XSpaceBuilder::new().plane("/device:GPU:0", |p| {
            p.line(1, "Stream #1(Compute)", 1000, |l| {
                l.event("k1", 0, 100).stat("tf_op", "a/b:MatMul").stat("is_eager", 1i64);
                l.event("k2", 150, 100).stat("tf_op", "c d");
                l.event("k1", 400, 50).stat("tf_op", "a/b:MatMul");
                l.event("memcpy", 500, 10);
            });
            p.line(0xdead_beef_u32 as i64, "Steps", 0, |l| {
                l.event("0", 0, 100_000);
            });
        }));
        let db = gpu_op_metrics_db(&space.planes[0], 0, None, None);
        let matmul = op(&db, "a/b/k1");
        assert_eq!((matmul.occurrences, matmul.time_ps, matmul.self_time_ps), (2, 150, 150));
        assert_eq!((matmul.category.as_str(), matmul.provenance.as_str()), ("MatMul", "a/b:MatMul"));
        assert!(matmul.is_eager);
        assert_eq!(matmul.source_info.as_ref().unwrap().line_number, -1);
        assert_eq!(op(&db, "c d/k2").category, "unknown");
        assert_eq!((db.total_op_time_ps, db.total_time_ps), (250, 510));
        assert_eq!(op(&db, IDLE_OP).time_ps, 260);
    }

    /// A one-instruction HLO module map for tests.
    struct OneInstruction;
    struct Instr;
    impl HloInstruction for Instr {
        fn name(&self) -> &str {
            "dot.1"
        }
        fn category(&self) -> &str {
            "convolution"
        }
        fn is_parameter_or_tuple(&self) -> bool {
            false
        }
        fn tf_op_name(&self) -> &str {
            "jit(f)/dot_general"
        }
        fn op_full_name(&self) -> &str {
            "jit(f)/dot_general:dot_general"
        }
        fn deduplicated_name(&self) -> &str {
            ""
        }
        fn expression(&self) -> &str {
            "%dot.1 = f32[2,2] dot(...)"
        }
        fn source_info(&self) -> HloSourceInfo {
            HloSourceInfo { file: "f.py".into(), line: 3, stack_frame: String::new() }
        }
        fn flops(&self) -> u64 {
            16
        }
        fn bytes_accessed(&self) -> u64 {
            48
        }
        fn performance(&self) -> Option<HloPerformance> {
            Some(HloPerformance {
                device_flops: 16,
                model_flops: 0,
                bytes_accessed: 48,
                memory_accessed_breakdown: vec![HloMemoryAccess { is_read: true, memory_space: 1, bytes_accessed: 32 }],
            })
        }
        fn fused_children(&self) -> Vec<&dyn HloInstruction> {
            Vec::new()
        }
    }
    impl HloModuleLookup for OneInstruction {
        fn instruction(&self, program_id: u64, name: &str) -> Option<&dyn HloInstruction> {
            (program_id == 5 && name == "dot.1").then_some(&Instr as &dyn HloInstruction)
        }
    }

    //  Stream #1   |k 0..10|k 10..20|   |k 30..40|     |other 50..60|
    //   hlo_op      dot.1    dot.1       dot.1           unknown.2
    //   group_id    1        1           2
    #[test]
    fn gpu_xla_kernels_through_an_hlo_lookup() {
        let space = decode(XSpaceBuilder::new().plane("/device:GPU:0", |p| {
            p.line(1, "Stream #1", 0, |l| {
                for (offset, group) in [(0, 1i64), (10, 1), (30, 2)] {
                    l.event("k", offset, 10).stat("hlo_op", "dot.1").stat("program_id", 5u64).stat("group_id", group);
                }
                l.event("other", 50, 10).stat("hlo_op", "unknown.2").stat("program_id", 5u64);
            });
        }));
        let db = gpu_op_metrics_db(&space.planes[0], 0, None, Some(&OneInstruction));
        let dot = op(&db, "dot.1");
        assert_eq!((dot.hlo_module_id, dot.occurrences, dot.time_ps), (5, 3, 30));
        assert_eq!((dot.flops, dot.model_flops, dot.bytes_accessed), (48, 48, 144));
        assert_eq!(dot.memory_accessed_breakdown[0].bytes_accessed, 32 * 3);
        assert_eq!((dot.category.as_str(), dot.provenance.as_str()), ("convolution", "jit(f)/dot_general"));
        assert_eq!(db.total_op_time_ps, 30);
        // Without the lookup, XLA kernels are skipped.
        let db = gpu_op_metrics_db(&space.planes[0], 0, None, None);
        assert_eq!(db.metrics_db.len(), 1);
        let _ = V::I64(0);
    }

    #[test]
    fn precision_stats_sum_compute_spans() {
        let p = precision_stats([(140, 10), (150, 5), (140, 1), (100, 7)]);
        assert_eq!((p.compute_32bit_ps, p.compute_16bit_ps), (11, 5));
    }

    /// Sorts `metrics_db` arrays (and their children's) by (module id, name) so that XProf's
    /// hash-map order does not matter.
    fn sorted(mut v: Value) -> Value {
        fn key(m: &Value) -> (String, String) {
            (m["hlo_module_id"].to_string(), m["name"].as_str().unwrap_or("").to_string())
        }
        fn walk(v: &mut Value) {
            match v {
                Value::Object(map) => {
                    if let Some(Value::Array(list)) = map.get_mut("metrics_db") {
                        list.sort_by_key(key);
                    }
                    map.values_mut().for_each(walk);
                }
                Value::Array(list) => list.iter_mut().for_each(walk),
                _ => {}
            }
        }
        walk(&mut v);
        v
    }

    fn strip_children(v: &mut Value) {
        if let Some(list) = v["metrics_db"].as_array_mut() {
            for m in list {
                if let Some(o) = m.as_object_mut() {
                    o.remove("children");
                }
            }
        }
    }

    /// `device_op_metrics_db` against XProf's for every reference profile. Without an HLO
    /// decoder, GPU XLA ops and TPU fusion children cannot be computed: the TPU comparison
    /// leaves children out, and profiles whose kernels are all XLA ops only report.
    #[test]
    fn device_op_metrics_db_matches_xprof() {
        let mut cases = refkit_cases();
        if let Some(root) = external_root() {
            cases.extend(external_cases(&root));
        }
        let mut mismatched = Vec::new();
        for case in &cases {
            let space = load(case);
            let groups = oxprof_grouping::EventGroups::from_file_stats(&space);
            let mut ours = device_op_metrics_db(&space, Some(&groups), None);
            let reference = reference(&case.op_stats);
            let mut expected = reference["device_op_metrics_db"].clone();
            // Precision stats come from step events (not computed here).
            ours.precision_stats = serde_json::from_value(expected["precision_stats"].clone()).ok();
            let needs_hlo = space.planes.iter().any(|p| p.name == "/host:metadata");
            if needs_hlo {
                strip_children(&mut expected);
            }
            let actual = serde_json::to_value(&ours).unwrap();
            let report = compare(&sorted(expected), &sorted(actual), CmpOptions::default());
            eprintln!("{}: device_op_metrics_db {}", case.name, report.summary(6).replace('\n', "\n  "));
            let hlo_gpu = needs_hlo && !case.name.contains("tpu");
            if !report.is_match() && !hlo_gpu {
                mismatched.push(case.name.clone());
            }
        }
        assert!(mismatched.is_empty(), "device_op_metrics_db differs: {mismatched:?}");
        let _ = json!(null);
    }

    fn peak_rss_kb() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Timing and memory of the device-side OpStats parts on the large JAX profile and the
    /// external device profiles (`cargo test --release -p oxprof-xprof perf_device_op_stats
    /// -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn perf_device_op_stats() {
        use crate::op_stats::environment::*;
        use crate::op_stats::kernel_stats::kernel_stats_db;
        let mut files: Vec<std::path::PathBuf> = Vec::new();
        if let Ok(dirs) = std::fs::read_dir(repo_root().join("../refdata/jax_large/plugins/profile")) {
            for d in dirs.flatten() {
                files.push(d.path().join("vm.xplane.pb"));
            }
        }
        if let Some(root) = external_root() {
            files.extend(external_cases(&root).into_iter().map(|c| c.xspace));
        }
        for file in files {
            let space = oxprof_testkit::files::load_xspace(&file).unwrap();
            let before = peak_rss_kb();
            let start = std::time::Instant::now();
            let groups = EventGroups::from_file_stats(&space);
            let grouping = start.elapsed();
            let start = std::time::Instant::now();
            let db = device_op_metrics_db(&space, Some(&groups), None);
            let (planes, _) = device_planes(&space);
            let kernels = kernel_stats_db(planes, None);
            let env = (run_environment(&space), core_id_to_details(&space), program_id_to_name_map(&space));
            let training = is_training(&space);
            let elapsed = start.elapsed();
            eprintln!(
                "{}: {} events: device ops {} kernels {} env {} training {training}: {:?} (file-stat grouping {:?}), peak RSS +{} KiB",
                file.display(),
                space.event_count(),
                db.metrics_db.len(),
                kernels.reports.len(),
                env.0.device_type,
                elapsed,
                grouping,
                peak_rss_kb().saturating_sub(before)
            );
        }
    }

    /// Timing of the TPU and GPU paths on synthetic planes of 1 M op events each (500 op
    /// kinds, nested two deep on TPU; 500 framework ops × 2 kernels on GPU).
    #[test]
    #[ignore]
    fn perf_synthetic_device_planes() {
        const N: i64 = 1_000_000;
        let bytes = XSpaceBuilder::new()
            .plane("/device:TPU:0", |p| {
                for k in 0..500u64 {
                    let name = format!("op{k}");
                    p.event_metadata_stat(&name, "program_id", 1u64);
                    p.event_metadata_stat(&name, "symbol_id", k + 1);
                    p.event_metadata_stat(&name, "hlo_category", "loop fusion");
                    p.event_metadata_stat(&name, "flops", 100i64);
                }
                p.line(1, "XLA Ops", 0, |l| {
                    for i in 0..N {
                        // Every even op encloses the next one.
                        let (offset, duration) = if i % 2 == 0 { (i * 100, 150) } else { (i * 100 - 90, 50) };
                        l.event(&format!("op{}", i % 500), offset, duration);
                    }
                });
            })
            .plane("/device:GPU:0", |p| {
                p.line(1, "Stream #1", 0, |l| {
                    for i in 0..N {
                        l.event(&format!("kernel{}", i % 2), i * 100, 50)
                            .stat("tf_op", format!("model/layer{}/MatMul:MatMul", i % 500).as_str())
                            .stat("kernel_details", "regs:32 grid:1,1,1 block:128,1,1");
                    }
                });
            })
            .to_bytes();
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        let before = peak_rss_kb();
        let start = std::time::Instant::now();
        let tpu = tensor_core_op_metrics_db(&space.planes[0], &SparseCoreDbs::new(), None);
        let tpu_time = start.elapsed();
        let start = std::time::Instant::now();
        let gpu = gpu_op_metrics_db(&space.planes[1], 1, None, None);
        let gpu_time = start.elapsed();
        let start = std::time::Instant::now();
        let kernels = crate::op_stats::kernel_stats::kernel_stats_db([&space.planes[1]], None);
        let kernel_time = start.elapsed();
        let start = std::time::Instant::now();
        let duty = crate::op_stats::duty_cycle::tpu_duty_cycle([&space.planes[0]]);
        let duty_time = start.elapsed();
        eprintln!(
            "TPU 1M ops: {tpu_time:?} ({} ops); GPU 1M kernels: op db {gpu_time:?} ({} ops), kernel stats {kernel_time:?} ({} reports); duty cycle {duty_time:?} (busy {}); peak RSS +{} KiB",
            tpu.metrics_db.len(),
            gpu.metrics_db.len(),
            kernels.reports.len(),
            duty.busy_time_ps,
            peak_rss_kb().saturating_sub(before)
        );
    }

    /// A hang guard, not a timing test: 100,000 empty GPU planes (a hostile file, let
    /// through with limits off) convert and render. Each plane's position used to be
    /// searched for among all planes, which took minutes at this size.
    #[test]
    fn many_empty_gpu_planes_convert_in_linear_time() {
        let bytes = oxprof_testkit::bombs::empty_planes(100_000);
        let space = oxprof_xspace::decode_xspace_within(
            &bytes,
            &oxprof_model::KeepPages,
            &|_| true,
            &oxprof_model::LoadLimits::none(),
        )
        .unwrap();
        assert_eq!(space.planes.len(), 100_000);
        let host = crate::op_stats::convert::xspace_to_op_stats(&space);
        let page = crate::tools::overview_page::overview_page(&host.op_stats);
        assert!(page.is_object() || page.is_array());
    }
}
