//! Building, combining and post-processing `OpMetricsDb`s: the op database builders
//! (XProf's `OpMetricsDbBuilder`, `HostOpMetricsDbBuilder`, `DeviceOpMetricsDbBuilder`,
//! `XEventsOpMetricsDbBuilder`), the multi-core/multi-host combiner
//! (`OpMetricsDbCombiner`), and the IDLE-op / total-time helpers of
//! `xprof/utils/op_metrics_db_utils.cc`, `xprof/utils/op_utils.cc` and
//! `xprof/convert/op_metrics_db_combiner.cc`.
//!
//! All arithmetic is XProf's: unsigned 64-bit sums wrap, `occurrences` is a `u32`, ops are
//! keyed by `(hlo_module_id, name)` and appended to `metrics_db` in first-seen order.

use super::event_span::Timespan;
use super::types::{
    MemoryAccessed, MemoryOperationType, OpMetrics, OpMetricsDb, PrecisionStats, SourceInfo, TpuCoreType,
};
use oxprof_grouping::tf_op::parse_tf_op_fullname;
use std::collections::{HashMap, HashSet};

/// Name and category of the op that stands for time without any op (`kIdle`).
pub const IDLE: &str = "IDLE";
/// Offset added to SparseCore indexes among core ids (`kSparseCoreIndexStart`).
pub const SPARSE_CORE_INDEX_START: u32 = 1_000_000;
/// HLO category of custom calls (`HloOpcodeString(kCustomCall)`): their FLOPs and bytes
/// are per-event totals, not per-occurrence values.
const CUSTOM_CALL_CATEGORY: &str = "custom-call";
/// Symbol id of an XLA module's root (`kRootSymbolId`): not an op.
const ROOT_SYMBOL_ID: u64 = 0;

/// XProf's `SafeDivide`: 0 when the divisor is within 1e-10 of zero.
fn safe_divide(dividend: f64, divisor: f64) -> f64 {
    if -1e-10 < divisor && divisor < 1e-10 { 0.0 } else { dividend / divisor }
}

// ---------------------------------------------------------------------------------------
// Base builder: (hlo_module_id, name) → op, in first-seen order.
// ---------------------------------------------------------------------------------------

/// `OpMetricsDbBuilder`: owns a database and finds or appends ops by
/// `(hlo_module_id, name)`. Lookups by `&str` do not allocate; a new op allocates its name
/// once.
#[derive(Debug, Clone, Default)]
pub struct OpMetricsDbBuilder {
    db: OpMetricsDb,
    /// `hlo_module_id` → name → position in `db.metrics_db`.
    index: HashMap<u64, HashMap<String, usize>>,
}

impl OpMetricsDbBuilder {
    /// A builder over an empty database.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder over an existing database. As in XProf (whose builders expect an empty
    /// database but are sometimes given a filled one), the existing ops are not indexed:
    /// adding an op with the same key appends a second entry.
    pub fn over(db: OpMetricsDb) -> Self {
        OpMetricsDbBuilder { db, index: HashMap::new() }
    }

    /// `LookupOrInsertNewOpMetrics`: the op with this key, appended (with only
    /// `hlo_module_id` and `name` set) if it is new.
    pub fn lookup_or_insert(&mut self, hlo_module_id: u64, name: &str) -> &mut OpMetrics {
        let position = self.position(hlo_module_id, name);
        // In range by construction (checked or just pushed).
        &mut self.db.metrics_db[position]
    }

    /// The position in `metrics_db` of the op with this key, appended if new. Positions
    /// stay valid for the builder's life (ops are only appended), so callers that see the
    /// same op many times can remember it and use [`Self::op_at`].
    pub fn position(&mut self, hlo_module_id: u64, name: &str) -> usize {
        let len = self.db.metrics_db.len();
        let known = self.index.get(&hlo_module_id).and_then(|by_name| by_name.get(name)).copied().filter(|&p| p < len);
        match known {
            Some(p) => p,
            None => {
                self.db.metrics_db.push(OpMetrics { hlo_module_id, name: name.to_string(), ..Default::default() });
                self.index.entry(hlo_module_id).or_default().insert(name.to_string(), len);
                len
            }
        }
    }

    /// The op at a position returned by [`Self::position`].
    pub fn op_at(&mut self, position: usize) -> Option<&mut OpMetrics> {
        self.db.metrics_db.get_mut(position)
    }

    /// The database so far.
    pub fn db(&self) -> &OpMetricsDb {
        &self.db
    }

    /// The database, for its DB-level fields (totals). Do not add or remove ops here.
    pub fn db_mut(&mut self) -> &mut OpMetricsDb {
        &mut self.db
    }

    /// The finished database.
    pub fn into_db(self) -> OpMetricsDb {
        self.db
    }
}

// ---------------------------------------------------------------------------------------
// Host (framework) ops.
// ---------------------------------------------------------------------------------------

/// `HostOpMetricsDbBuilder`: framework ops observed on host threads.
#[derive(Debug, Clone, Default)]
pub struct HostOpMetricsDbBuilder {
    base: OpMetricsDbBuilder,
    /// The last InfeedEnqueue span seen on this thread (empty = none yet).
    last_host_infeed_enqueue: Timespan,
}

impl HostOpMetricsDbBuilder {
    /// An empty database.
    pub fn new() -> Self {
        Self::default()
    }

    /// `EnterOp`: one completed op. `time_ps` includes its children, `children_time_ps` is
    /// theirs; `id` keys the op next to its name (0 for framework ops, the stage id for
    /// input-pipeline stages) and becomes its `hlo_module_id`.
    pub fn enter_op(
        &mut self,
        name: &str,
        category: &str,
        is_eager: bool,
        time_ps: u64,
        children_time_ps: u64,
        id: i64,
    ) {
        let position = self.op_position(id, name);
        self.enter_op_at(position, category, is_eager, time_ps, children_time_ps);
    }

    /// The position of the op keyed `(id, name)`, created if new, for [`Self::enter_op_at`].
    pub fn op_position(&mut self, id: i64, name: &str) -> usize {
        self.base.position(id as u64, name)
    }

    /// [`Self::enter_op`] on the op at a position from [`Self::op_position`] (saves the
    /// name lookup when the caller already knows the op).
    pub fn enter_op_at(
        &mut self,
        position: usize,
        category: &str,
        is_eager: bool,
        time_ps: u64,
        children_time_ps: u64,
    ) {
        let self_time_ps = time_ps.wrapping_sub(children_time_ps);
        let Some(op) = self.base.op_at(position) else { return };
        if op.category.is_empty() {
            op.category = category.to_string();
        }
        op.num_cores = 1;
        op.is_eager = op.is_eager || is_eager;
        op.occurrences = op.occurrences.wrapping_add(1);
        op.time_ps = op.time_ps.wrapping_add(time_ps);
        op.self_time_ps = op.self_time_ps.wrapping_add(self_time_ps);
        let db = self.base.db_mut();
        db.total_op_time_ps = db.total_op_time_ps.wrapping_add(self_time_ps);
    }

    /// `EnterHostInfeedEnqueue`: from the second InfeedEnqueue on, adds the previous one's
    /// duration and the start-to-start distance to the database totals.
    pub fn enter_host_infeed_enqueue(&mut self, span: Timespan) {
        if !self.last_host_infeed_enqueue.is_empty() {
            let last = self.last_host_infeed_enqueue;
            let db = self.base.db_mut();
            db.total_host_infeed_enq_duration_ps = db.total_host_infeed_enq_duration_ps.wrapping_add(last.duration_ps);
            db.total_host_infeed_enq_start_timestamp_ps_diff = db
                .total_host_infeed_enq_start_timestamp_ps_diff
                .wrapping_add(span.begin_ps.wrapping_sub(last.begin_ps));
        }
        self.last_host_infeed_enqueue = span;
    }

    /// The database so far.
    pub fn db(&self) -> &OpMetricsDb {
        self.base.db()
    }

    /// The database, for its DB-level fields. Do not add or remove ops here.
    pub fn db_mut(&mut self) -> &mut OpMetricsDb {
        self.base.db_mut()
    }

    /// The finished database.
    pub fn into_db(self) -> OpMetricsDb {
        self.base.into_db()
    }
}

// ---------------------------------------------------------------------------------------
// Device (HLO) ops.
// ---------------------------------------------------------------------------------------

/// Source location of an op (`tsl::profiler::OpSourceInfo`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpSourceInfo<'a> {
    /// File.
    pub file: &'a str,
    /// Line (-1 when unknown).
    pub line: i32,
    /// Stack, one frame per line.
    pub stack_frame: &'a str,
}

/// `DeviceOpMetricsDbBuilder::OpIdentifier`: what identifies and describes an op.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpIdentifier<'a> {
    /// Program (HLO module) id; with `name`, the op's key.
    pub program_id: u64,
    /// Op name.
    pub name: &'a str,
    /// Category; empty (`kUnknownOp`) becomes `unknown`.
    pub category: &'a str,
    /// Framework op that produced it.
    pub provenance: &'a str,
    /// Deduplicated HLO name (ignored when empty).
    pub deduplicated_name: &'a str,
    /// HLO expression (ignored when empty).
    pub long_name: &'a str,
    /// Source location.
    pub source_info: OpSourceInfo<'a>,
}

/// One entry of a cost model's memory breakdown
/// (`PerformanceInfo.MemoryAccessed`, bytes per single occurrence).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfMemoryAccessed {
    /// Read (else write).
    pub is_read: bool,
    /// Memory space.
    pub memory_space: u64,
    /// Bytes per occurrence (non-positive counts as 0).
    pub bytes_accessed: i64,
}

/// The cost model's numbers for one op (`PerformanceInfoWrapper`: `DeviceFlops()`,
/// `ModelFlops()`, `bytes_accessed()`, `memory_accessed_breakdown()`), per occurrence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerformanceInfo {
    /// FLOPs on the device.
    pub device_flops: i64,
    /// Model FLOPs.
    pub model_flops: i64,
    /// Bytes accessed.
    pub bytes_accessed: i64,
    /// Bytes per memory space and direction.
    pub memory_accessed_breakdown: Vec<PerfMemoryAccessed>,
}

/// `DeviceOpMetricsDbBuilder::OpData`: one observation of an op.
#[derive(Debug, Clone)]
pub struct OpData<'a> {
    /// Executed eagerly.
    pub is_eager: bool,
    /// Occurrences this observation stands for.
    pub occurrences: u64,
    /// Time including children.
    pub time_ps: u64,
    /// Children's time.
    pub children_time_ps: u64,
    /// DMA stall time per occurrence.
    pub dma_stall_ps: u64,
    /// Cost model numbers; when given, its positive FLOPs/bytes win over the fields below
    /// and its memory breakdown (scaled by occurrences) replaces `memory_accessed_breakdown`.
    pub perf_info: Option<&'a PerformanceInfo>,
    /// FLOPs per occurrence.
    pub flops: i64,
    /// Bytes accessed per occurrence.
    pub bytes_accessed: i64,
    /// Memory breakdown, already totalled (added as is).
    pub memory_accessed_breakdown: Vec<MemoryAccessed>,
    /// Model FLOPs per occurrence (0: use FLOPs).
    pub model_flops: i64,
    /// Energy (J); 0 leaves the op's energy unset.
    pub vdd_energy_j: f64,
}

impl Default for OpData<'_> {
    fn default() -> Self {
        OpData {
            is_eager: false,
            occurrences: 1,
            time_ps: 0,
            children_time_ps: 0,
            dma_stall_ps: 0,
            perf_info: None,
            flops: 0,
            bytes_accessed: 0,
            memory_accessed_breakdown: Vec::new(),
            model_flops: 0,
            vdd_energy_j: 0.0,
        }
    }
}

/// `ConvertPerformanceInfo`: a cost-model breakdown as op metrics, bytes × occurrences.
pub fn convert_performance_info(breakdown: &[PerfMemoryAccessed], occurrences: u64) -> Vec<MemoryAccessed> {
    breakdown
        .iter()
        .map(|m| MemoryAccessed {
            operation_type: if m.is_read { MemoryOperationType::Read } else { MemoryOperationType::Write },
            memory_space: m.memory_space,
            bytes_accessed: if m.bytes_accessed > 0 { (m.bytes_accessed as u64).wrapping_mul(occurrences) } else { 0 },
        })
        .collect()
}

/// `DeviceOpMetricsDbBuilder`: device (HLO or framework-on-device) ops keyed by
/// `(program_id, name)`.
#[derive(Debug, Clone, Default)]
pub struct DeviceOpMetricsDbBuilder {
    base: OpMetricsDbBuilder,
}

impl DeviceOpMetricsDbBuilder {
    /// An empty database.
    pub fn new() -> Self {
        Self::default()
    }

    /// `EnterOpMetadata`: describes a new op (once: skipped when it already has
    /// occurrences, a category or a provenance).
    pub fn enter_op_metadata(&mut self, id: &OpIdentifier<'_>, is_eager: bool) {
        let op = self.base.lookup_or_insert(id.program_id, id.name);
        if op.occurrences > 0 || !op.category.is_empty() || !op.provenance.is_empty() {
            return;
        }
        op.category = if id.category.is_empty() { "unknown".to_string() } else { id.category.to_string() };
        op.provenance = id.provenance.to_string();
        if !id.deduplicated_name.is_empty() {
            op.deduplicated_name = id.deduplicated_name.to_string();
        }
        if !id.long_name.is_empty() {
            op.long_name = id.long_name.to_string();
        }
        op.is_eager = op.is_eager || is_eager;
        let source = op.source_info.get_or_insert_with(SourceInfo::default);
        source.file_name = id.source_info.file.to_string();
        source.line_number = id.source_info.line;
        source.stack_frame = id.source_info.stack_frame.to_string();
    }

    /// `EnterOp`: one observation of an op (describing it first if new). FLOPs, model
    /// FLOPs, bytes and DMA stalls are per occurrence and multiplied by `occurrences`.
    pub fn enter_op(&mut self, id: &OpIdentifier<'_>, data: &OpData<'_>) {
        self.enter_op_metadata(id, data.is_eager);
        let self_time_ps = data.time_ps.wrapping_sub(data.children_time_ps);
        let occurrences = data.occurrences;
        let perf = data.perf_info;
        let flops = perf.filter(|p| p.device_flops > 0).map_or(data.flops, |p| p.device_flops);
        let bytes_accessed = perf.filter(|p| p.bytes_accessed > 0).map_or(data.bytes_accessed, |p| p.bytes_accessed);
        let model_flops = perf.filter(|p| p.model_flops > 0).map_or(data.model_flops, |p| p.model_flops);
        let converted;
        let breakdown: &[MemoryAccessed] = match perf {
            Some(p) => {
                converted = convert_performance_info(&p.memory_accessed_breakdown, occurrences);
                &converted
            }
            None => &data.memory_accessed_breakdown,
        };

        let op = self.base.lookup_or_insert(id.program_id, id.name);
        if data.vdd_energy_j != 0.0 {
            op.vdd_energy_j = Some(op.vdd_energy_j.unwrap_or(0.0) + data.vdd_energy_j);
        }
        op.num_cores = 1;
        // `occurrences` is a uint32 field: the sum is truncated.
        op.occurrences = u64::from(op.occurrences).wrapping_add(occurrences) as u32;
        op.time_ps = op.time_ps.wrapping_add(data.time_ps);
        op.self_time_ps = op.self_time_ps.wrapping_add(self_time_ps);
        op.flops = op.flops.wrapping_add((flops as u64).wrapping_mul(occurrences));
        op.flops_v2 += flops as f64 * occurrences as f64;
        if model_flops == 0 {
            op.model_flops = op.flops;
            op.model_flops_v2 = op.flops_v2;
        } else {
            op.model_flops = op.model_flops.wrapping_add((model_flops as u64).wrapping_mul(occurrences));
            op.model_flops_v2 += model_flops as f64 * occurrences as f64;
        }
        op.bytes_accessed = op.bytes_accessed.wrapping_add((bytes_accessed as u64).wrapping_mul(occurrences));
        combine_memory_accessed_breakdown(breakdown, &mut op.memory_accessed_breakdown);
        if data.dma_stall_ps > 0 {
            op.dma_stall_ps = op.dma_stall_ps.wrapping_add(data.dma_stall_ps.wrapping_mul(occurrences));
        }
        let db = self.base.db_mut();
        db.total_op_time_ps = db.total_op_time_ps.wrapping_add(self_time_ps);
    }

    /// The op with this key, appended if new (e.g. to attach fusion children from the HLO
    /// module map, as `EnterOpMetadataFromHloModuleMap` does).
    pub fn lookup_or_insert(&mut self, program_id: u64, name: &str) -> &mut OpMetrics {
        self.base.lookup_or_insert(program_id, name)
    }

    /// The database so far.
    pub fn db(&self) -> &OpMetricsDb {
        self.base.db()
    }

    /// The database, for its DB-level fields. Do not add or remove ops here.
    pub fn db_mut(&mut self) -> &mut OpMetricsDb {
        self.base.db_mut()
    }

    /// The finished database (call [`set_total_time_ps`] and [`add_idle_op`] as needed).
    pub fn into_db(self) -> OpMetricsDb {
        self.base.into_db()
    }
}

// ---------------------------------------------------------------------------------------
// TPU ops merged by (program id, symbol id).
// ---------------------------------------------------------------------------------------

/// `XEventsOpMetricsDbBuilder::OpKey`: what identifies an op on a TPU op line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct XEventOpKey {
    /// `program_id` metadata stat.
    pub program_id: Option<u64>,
    /// `symbol_id` metadata stat.
    pub symbol_id: Option<u64>,
}

/// `XEventsOpMetricsDbBuilder`: merges per-event `OpMetrics` (built from TPU op events)
/// by `(program_id, symbol_id)`.
///
/// Order: XProf finalizes by iterating hash maps, so its op order is arbitrary; here ops
/// come out in first-seen order of program, then of symbol within the program.
#[derive(Debug, Clone, Default)]
pub struct XEventsOpMetricsDbBuilder {
    programs: Vec<(u64, Vec<(u64, OpMetrics)>)>,
    program_index: HashMap<u64, usize>,
    symbol_index: HashMap<(u64, u64), usize>,
}

impl XEventsOpMetricsDbBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// `AddOpMetric`: merges one event's metrics. Events without a program or symbol id,
    /// or with the root symbol id 0, are ignored.
    pub fn add_op_metric(&mut self, op_metrics: &OpMetrics, key: XEventOpKey) {
        let (Some(program_id), Some(symbol_id)) = (key.program_id, key.symbol_id) else { return };
        if symbol_id == ROOT_SYMBOL_ID {
            return;
        }
        let program_slot = *self.program_index.entry(program_id).or_insert_with(|| {
            self.programs.push((program_id, Vec::new()));
            self.programs.len() - 1
        });
        let Some((_, symbols)) = self.programs.get_mut(program_slot) else { return };
        let symbol_slot = *self.symbol_index.entry((program_id, symbol_id)).or_insert_with(|| {
            symbols.push((symbol_id, OpMetrics::default()));
            symbols.len() - 1
        });
        if let Some((_, dst)) = symbols.get_mut(symbol_slot) {
            merge_op_metrics(op_metrics, dst);
        }
    }

    /// `Finalize()`: the merged ops with FLOPs and bytes scaled by occurrences (except
    /// custom calls), `total_op_time_ps` = Σ self time and the normalized total; total time
    /// and IDLE are left to the caller.
    pub fn finalize(self) -> OpMetricsDb {
        let mut db = OpMetricsDb::default();
        let mut total_op_time_ps = 0u64;
        let mut normalized_total_op_time_ps = 0u64;
        for (_, symbols) in self.programs {
            for (_, mut op) in symbols {
                adjust_flops_and_bytes_accessed(&mut op);
                total_op_time_ps = total_op_time_ps.wrapping_add(op.self_time_ps);
                let scaled = op.self_time_ps as f64 * safe_divide(op.normalized_time_ps as f64, op.time_ps as f64);
                // uint64 += double: the sum is computed in double and truncated.
                normalized_total_op_time_ps = (normalized_total_op_time_ps as f64 + scaled) as u64;
                db.metrics_db.push(op);
            }
        }
        db.total_op_time_ps = total_op_time_ps;
        db.normalized_total_op_time_ps = normalized_total_op_time_ps;
        db
    }

    /// `Finalize(total_time)`: [`Self::finalize`], then the total time and the IDLE op.
    pub fn finalize_with_total_time(self, total_time_ps: u64) -> OpMetricsDb {
        let mut db = self.finalize();
        set_total_time_ps(&mut db, total_time_ps);
        add_idle_op(&mut db);
        db
    }
}

/// `MergeOpMetrics`: the first observation is copied, later ones add up (FLOPs and bytes
/// only for custom calls, whose event values are totals).
pub fn merge_op_metrics(src: &OpMetrics, dst: &mut OpMetrics) {
    if dst.occurrences == 0 {
        *dst = src.clone();
        return;
    }
    dst.occurrences = dst.occurrences.wrapping_add(src.occurrences);
    dst.time_ps = dst.time_ps.wrapping_add(src.time_ps);
    dst.min_time_ps = src.min_time_ps.min(dst.min_time_ps);
    dst.self_time_ps = dst.self_time_ps.wrapping_add(src.self_time_ps);
    dst.dma_stall_ps = dst.dma_stall_ps.wrapping_add(src.dma_stall_ps);
    dst.normalized_time_ps = dst.normalized_time_ps.wrapping_add(src.normalized_time_ps);
    dst.core_type = src.core_type;
    if src.vdd_energy_j.is_some() || dst.vdd_energy_j.is_some() {
        dst.vdd_energy_j = Some(src.vdd_energy_j.unwrap_or(0.0) + dst.vdd_energy_j.unwrap_or(0.0));
    }
    if dst.category == CUSTOM_CALL_CATEGORY {
        dst.flops = dst.flops.wrapping_add(src.flops);
        dst.model_flops = dst.model_flops.wrapping_add(src.model_flops);
        dst.flops_v2 += src.flops_v2;
        dst.model_flops_v2 += src.model_flops_v2;
        dst.bytes_accessed = dst.bytes_accessed.wrapping_add(src.bytes_accessed);
    }
}

/// `AdjustFlopsAndBytesAccessed`: per-occurrence FLOPs and bytes of non-custom-call ops
/// become totals (model FLOPs default to FLOPs); the memory breakdown is always scaled.
pub fn adjust_flops_and_bytes_accessed(op: &mut OpMetrics) {
    let occurrences = u64::from(op.occurrences);
    if op.category != CUSTOM_CALL_CATEGORY {
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
    }
    for access in &mut op.memory_accessed_breakdown {
        access.bytes_accessed = access.bytes_accessed.wrapping_mul(occurrences);
    }
}

// ---------------------------------------------------------------------------------------
// Totals and the IDLE op.
// ---------------------------------------------------------------------------------------

/// `SetTotalTimePs`: the given span, or the summed op time if larger (idle never negative).
pub fn set_total_time_ps(db: &mut OpMetricsDb, total_time_ps: u64) {
    db.total_time_ps = db.total_op_time_ps.max(total_time_ps);
}

/// `TotalTimePs`: total time, or only the op time when `exclude_idle`.
pub fn total_time_ps(db: &OpMetricsDb, exclude_idle: bool) -> u64 {
    if exclude_idle { db.total_op_time_ps } else { db.total_time_ps }
}

/// `IdleTimeRatio`: 1 − op time / total time (1 when the total is 0).
pub fn idle_time_ratio(db: &OpMetricsDb) -> f64 {
    1.0 - safe_divide(db.total_op_time_ps as f64, db.total_time_ps as f64)
}

/// `IdleTimePs`: total time − op time (wrapping, as XProf's unsigned subtraction).
pub fn idle_time_ps(db: &OpMetricsDb) -> u64 {
    db.total_time_ps.wrapping_sub(db.total_op_time_ps)
}

/// `SetIdleOp`: makes `op` the IDLE op holding `idle_time_ps`.
pub fn set_idle_op(idle_time_ps: u64, op: &mut OpMetrics) {
    op.name = IDLE.to_string();
    op.category = IDLE.to_string();
    op.occurrences = 0;
    op.time_ps = idle_time_ps;
    op.self_time_ps = idle_time_ps;
}

/// `AddIdleOp`: appends the IDLE op (`total_time − total_op_time`). Call after all ops and
/// the total time are set.
pub fn add_idle_op(db: &mut OpMetricsDb) {
    let mut idle = OpMetrics::default();
    set_idle_op(idle_time_ps(db), &mut idle);
    db.metrics_db.push(idle);
}

/// `IsIdleOp`: the op stands for idle time.
pub fn is_idle_op(op: &OpMetrics) -> bool {
    op.category == IDLE
}

/// `ChildrenTimePs`: time spent in nested ops.
pub fn children_time_ps(op: &OpMetrics) -> u64 {
    op.time_ps.wrapping_sub(op.self_time_ps)
}

/// `HostInfeedEnqueueRatio`: infeed-enqueue time over the enqueue start-to-start span,
/// when there were at least two enqueues.
pub fn host_infeed_enqueue_ratio(db: &OpMetricsDb) -> Option<f64> {
    (db.total_host_infeed_enq_start_timestamp_ps_diff > 0).then(|| {
        safe_divide(
            db.total_host_infeed_enq_duration_ps as f64,
            db.total_host_infeed_enq_start_timestamp_ps_diff as f64,
        )
    })
}

/// `ParseProvenance`: the `/`-separated parts of a provenance (empty parts skipped), the
/// last one cut at its first `:`.
pub fn parse_provenance(provenance: &str) -> Vec<String> {
    let parts: Vec<&str> = provenance.split('/').filter(|p| !p.is_empty()).collect();
    let Some((last, scopes)) = parts.split_last() else { return Vec::new() };
    let mut out: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
    out.push(last.split(':').next().unwrap_or(last).to_string());
    out
}

/// `CreateTfMetricsDbFromDeviceOpMetricsDb`: device ops regrouped by the framework op in
/// their provenance (ops without one keep their own name, category `Unknown`). Times,
/// FLOPs and bytes add up; occurrences are the maximum over the device ops; `is_eager`
/// and `core_type` are the last device op's. With `with_idle`, the IDLE op is kept and the
/// total time is the device total, else the op time.
pub fn create_tf_metrics_db_from_device_op_metrics_db(device_db: &OpMetricsDb, with_idle: bool) -> OpMetricsDb {
    let mut builder = OpMetricsDbBuilder::new();
    let mut update = |tf_name: &str, tf_type: &str, device_op: &OpMetrics| {
        let tf_op = builder.lookup_or_insert(0, tf_name);
        if tf_op.category.is_empty() {
            tf_op.category = if tf_type.is_empty() { "Unknown".to_string() } else { tf_type.to_string() };
        }
        tf_op.is_eager = device_op.is_eager;
        tf_op.occurrences = tf_op.occurrences.max(device_op.occurrences);
        tf_op.time_ps = tf_op.time_ps.wrapping_add(device_op.time_ps);
        tf_op.self_time_ps = tf_op.self_time_ps.wrapping_add(device_op.self_time_ps);
        tf_op.flops = tf_op.flops.wrapping_add(device_op.flops);
        tf_op.flops_v2 += device_op.flops_v2;
        tf_op.model_flops = tf_op.model_flops.wrapping_add(device_op.model_flops);
        tf_op.model_flops_v2 += device_op.model_flops_v2;
        tf_op.bytes_accessed = tf_op.bytes_accessed.wrapping_add(device_op.bytes_accessed);
        tf_op.core_type = device_op.core_type;
    };
    for device_op in &device_db.metrics_db {
        if is_idle_op(device_op) {
            if with_idle {
                update(IDLE, IDLE, device_op);
            }
        } else if device_op.provenance.is_empty() {
            update(&device_op.name, "", device_op);
        } else {
            let tf_op = parse_tf_op_fullname(&device_op.provenance);
            update(tf_op.name, tf_op.op_type, device_op);
        }
    }
    let mut db = builder.into_db();
    db.total_op_time_ps = device_db.total_op_time_ps;
    db.total_time_ps = if with_idle { device_db.total_time_ps } else { device_db.total_op_time_ps };
    db
}

/// `GetRootOpMetricsFromDb`: the ops that are nobody's (transitive) child, children being
/// identified by `(hlo_module_id, name)`; in database order.
pub fn root_op_metrics(db: &OpMetricsDb) -> Vec<&OpMetrics> {
    let mut pending: Vec<&OpMetrics> =
        db.metrics_db.iter().flat_map(|op| op.children.iter().flat_map(|c| c.metrics_db.iter())).collect();
    let mut descendants: HashSet<(u64, &str)> = HashSet::new();
    while let Some(node) = pending.pop() {
        if !descendants.insert((node.hlo_module_id, node.name.as_str())) {
            continue;
        }
        if let Some(children) = &node.children {
            pending.extend(children.metrics_db.iter());
        }
    }
    db.metrics_db.iter().filter(|op| !descendants.contains(&(op.hlo_module_id, op.name.as_str()))).collect()
}

// ---------------------------------------------------------------------------------------
// Combining databases (across lines, cores and hosts).
// ---------------------------------------------------------------------------------------

/// `CopyOpMetricsMetadata`: fills the destination's empty descriptive fields from `src`.
pub fn copy_op_metrics_metadata(src: &OpMetrics, dst: &mut OpMetrics) {
    if dst.long_name.is_empty() {
        dst.long_name.clone_from(&src.long_name);
    }
    if dst.fingerprint == 0 {
        dst.fingerprint = src.fingerprint;
    }
    if dst.category.is_empty() {
        dst.category.clone_from(&src.category);
    }
    if dst.provenance.is_empty() {
        dst.provenance.clone_from(&src.provenance);
    }
    if dst.deduplicated_name.is_empty() {
        dst.deduplicated_name.clone_from(&src.deduplicated_name);
    }
    if dst.children.is_none() && src.children.is_some() {
        dst.children.clone_from(&src.children);
    }
    if dst.source_info.is_none() && src.source_info.is_some() {
        dst.source_info.clone_from(&src.source_info);
    }
    if dst.core_type == TpuCoreType::Unknown {
        dst.core_type = src.core_type;
    }
}

/// `CombineOpMetrics`: adds the numbers of `src` into `dst` (`num_cores` only when
/// `update_num_cores`; `min_time_ps` is the minimum, or `src`'s when `dst` is new).
pub fn combine_op_metrics(src: &OpMetrics, dst: &mut OpMetrics, update_num_cores: bool) {
    dst.min_time_ps = if dst.occurrences == 0 { src.min_time_ps } else { src.min_time_ps.min(dst.min_time_ps) };
    dst.is_eager = dst.is_eager || src.is_eager;
    dst.occurrences = dst.occurrences.wrapping_add(src.occurrences);
    dst.time_ps = dst.time_ps.wrapping_add(src.time_ps);
    dst.self_time_ps = dst.self_time_ps.wrapping_add(src.self_time_ps);
    dst.normalized_time_ps = dst.normalized_time_ps.wrapping_add(src.normalized_time_ps);
    dst.flops = dst.flops.wrapping_add(src.flops);
    dst.model_flops = dst.model_flops.wrapping_add(src.model_flops);
    dst.flops_v2 += src.flops_v2;
    dst.model_flops_v2 += src.model_flops_v2;
    dst.bytes_accessed = dst.bytes_accessed.wrapping_add(src.bytes_accessed);
    dst.autotuned = dst.autotuned || src.autotuned;
    if update_num_cores {
        dst.num_cores = dst.num_cores.wrapping_add(src.num_cores);
    }
    combine_memory_accessed_breakdown(&src.memory_accessed_breakdown, &mut dst.memory_accessed_breakdown);
    dst.dma_stall_ps = dst.dma_stall_ps.wrapping_add(src.dma_stall_ps);
    if src.vdd_energy_j.is_some() || dst.vdd_energy_j.is_some() {
        dst.vdd_energy_j = Some(src.vdd_energy_j.unwrap_or(0.0) + dst.vdd_energy_j.unwrap_or(0.0));
    }
}

/// `CombineMemoryAccessedBreakdown`: adds bytes per (memory space, direction); pairs new
/// to `dst` are appended in `src` order.
pub fn combine_memory_accessed_breakdown(src: &[MemoryAccessed], dst: &mut Vec<MemoryAccessed>) {
    for s in src {
        // XProf indexes `dst` in a map, so with duplicate pairs the last one receives.
        match dst.iter_mut().rev().find(|d| d.memory_space == s.memory_space && d.operation_type == s.operation_type) {
            Some(d) => d.bytes_accessed = d.bytes_accessed.wrapping_add(s.bytes_accessed),
            None => dst.push(MemoryAccessed {
                operation_type: s.operation_type,
                memory_space: s.memory_space,
                bytes_accessed: s.bytes_accessed,
            }),
        }
    }
}

/// `OpMetricsDbCombiner`: accumulates databases into one. Ops are matched by
/// `(hlo_module_id, name)` and appended in first-seen order; DB totals add up;
/// `precision_stats` is always present in the result (summed).
#[derive(Debug, Clone, Default)]
pub struct OpMetricsDbCombiner {
    base: OpMetricsDbBuilder,
}

impl OpMetricsDbCombiner {
    /// An empty result.
    pub fn new() -> Self {
        Self::default()
    }

    /// Combining into an existing database whose ops are not indexed (XProf's combiner
    /// over a filled database, e.g. a TPU op's `children`): matching ops are appended.
    pub fn over(db: OpMetricsDb) -> Self {
        OpMetricsDbCombiner { base: OpMetricsDbBuilder::over(db) }
    }

    /// `Combine`: adds `src`. `update_num_cores` counts the cores an op ran on (device
    /// DBs); host DBs leave `num_cores` alone.
    pub fn combine(&mut self, src: &OpMetricsDb, update_num_cores: bool) {
        let dst = self.base.db_mut();
        dst.total_host_infeed_enq_duration_ps =
            dst.total_host_infeed_enq_duration_ps.wrapping_add(src.total_host_infeed_enq_duration_ps);
        dst.total_host_infeed_enq_start_timestamp_ps_diff = dst
            .total_host_infeed_enq_start_timestamp_ps_diff
            .wrapping_add(src.total_host_infeed_enq_start_timestamp_ps_diff);
        dst.total_time_ps = dst.total_time_ps.wrapping_add(src.total_time_ps);
        dst.total_op_time_ps = dst.total_op_time_ps.wrapping_add(src.total_op_time_ps);
        dst.idle_time_ps = dst.idle_time_ps.wrapping_add(src.idle_time_ps);
        dst.busy_time_ps = dst.busy_time_ps.wrapping_add(src.busy_time_ps);
        dst.idle_time_high_confidence_ps =
            dst.idle_time_high_confidence_ps.wrapping_add(src.idle_time_high_confidence_ps);
        dst.busy_time_high_confidence_ps =
            dst.busy_time_high_confidence_ps.wrapping_add(src.busy_time_high_confidence_ps);
        dst.normalized_total_op_time_ps = dst.normalized_total_op_time_ps.wrapping_add(src.normalized_total_op_time_ps);
        let src_precision = src.precision_stats.clone().unwrap_or_default();
        let precision = dst.precision_stats.get_or_insert_with(PrecisionStats::default);
        precision.compute_16bit_ps = precision.compute_16bit_ps.wrapping_add(src_precision.compute_16bit_ps);
        precision.compute_32bit_ps = precision.compute_32bit_ps.wrapping_add(src_precision.compute_32bit_ps);
        for src_op in &src.metrics_db {
            let dst_op = self.base.lookup_or_insert(src_op.hlo_module_id, &src_op.name);
            copy_op_metrics_metadata(src_op, dst_op);
            combine_op_metrics(src_op, dst_op, update_num_cores);
        }
    }

    /// The combined database so far.
    pub fn db(&self) -> &OpMetricsDb {
        self.base.db()
    }

    /// The combined database.
    pub fn into_db(self) -> OpMetricsDb {
        self.base.into_db()
    }
}

/// Combines databases in order (a fresh [`OpMetricsDbCombiner`]).
pub fn combine_op_metrics_dbs<'a>(
    dbs: impl IntoIterator<Item = &'a OpMetricsDb>,
    update_num_cores: bool,
) -> OpMetricsDb {
    let mut combiner = OpMetricsDbCombiner::new();
    for db in dbs {
        combiner.combine(db, update_num_cores);
    }
    combiner.into_db()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(module: u64, name: &str) -> OpMetrics {
        OpMetrics { hlo_module_id: module, name: name.to_string(), ..Default::default() }
    }

    #[test]
    fn host_builder_aggregates_by_id_and_name() {
        let mut b = HostOpMetricsDbBuilder::new();
        b.enter_op("a", "MatMul", false, 100, 30, 0);
        b.enter_op("b", "Add", true, 30, 0, 0);
        b.enter_op("a", "Other", false, 50, 0, 0);
        b.enter_op("a", "Stage", false, 10, 0, 7);
        let db = b.into_db();
        let names: Vec<_> = db.metrics_db.iter().map(|m| (m.hlo_module_id, m.name.as_str())).collect();
        assert_eq!(names, [(0, "a"), (0, "b"), (7, "a")]);
        let a = &db.metrics_db[0];
        assert_eq!(
            (a.category.as_str(), a.occurrences, a.time_ps, a.self_time_ps, a.num_cores),
            ("MatMul", 2, 150, 120, 1)
        );
        assert!(db.metrics_db[1].is_eager);
        assert_eq!(db.total_op_time_ps, 120 + 30 + 10);
    }

    #[test]
    fn host_infeed_enqueue_counts_from_the_second() {
        let mut b = HostOpMetricsDbBuilder::new();
        b.enter_host_infeed_enqueue(Timespan::new(100, 10));
        assert_eq!(b.db().total_host_infeed_enq_duration_ps, 0);
        b.enter_host_infeed_enqueue(Timespan::new(150, 20));
        b.enter_host_infeed_enqueue(Timespan::new(300, 5));
        let db = b.into_db();
        assert_eq!(db.total_host_infeed_enq_duration_ps, 10 + 20);
        assert_eq!(db.total_host_infeed_enq_start_timestamp_ps_diff, 50 + 150);
        assert_eq!(host_infeed_enqueue_ratio(&db), Some(30.0 / 200.0));
    }

    #[test]
    fn idle_op_and_totals() {
        let mut db = OpMetricsDb { total_op_time_ps: 70, ..Default::default() };
        set_total_time_ps(&mut db, 50);
        assert_eq!(db.total_time_ps, 70, "never below op time");
        set_total_time_ps(&mut db, 100);
        add_idle_op(&mut db);
        let idle = db.metrics_db.last().unwrap();
        assert!(is_idle_op(idle));
        assert_eq!((idle.name.as_str(), idle.occurrences, idle.time_ps, idle.self_time_ps), (IDLE, 0, 30, 30));
        assert!((idle_time_ratio(&db) - 0.3).abs() < 1e-12);
        assert_eq!(total_time_ps(&db, true), 70);
        assert_eq!(idle_time_ratio(&OpMetricsDb::default()), 1.0);
    }

    #[test]
    fn combiner_matches_by_key_and_keeps_first_seen_order() {
        let mut a = OpMetricsDb { total_time_ps: 10, total_op_time_ps: 5, ..Default::default() };
        a.metrics_db.push(OpMetrics { occurrences: 1, time_ps: 5, min_time_ps: 5, num_cores: 1, ..op(0, "x") });
        let mut b = OpMetricsDb { total_time_ps: 20, ..Default::default() };
        b.metrics_db.push(OpMetrics {
            occurrences: 2,
            time_ps: 7,
            min_time_ps: 3,
            num_cores: 1,
            category: "c".into(),
            ..op(0, "y")
        });
        b.metrics_db.push(OpMetrics {
            occurrences: 1,
            time_ps: 1,
            min_time_ps: 1,
            num_cores: 1,
            category: "k".into(),
            ..op(0, "x")
        });
        let host = combine_op_metrics_dbs([&a, &b], false);
        assert_eq!(host.metrics_db.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["x", "y"]);
        let x = &host.metrics_db[0];
        assert_eq!((x.occurrences, x.time_ps, x.min_time_ps, x.num_cores, x.category.as_str()), (2, 6, 1, 0, "k"));
        assert_eq!(host.total_time_ps, 30);
        assert_eq!(host.precision_stats, Some(PrecisionStats::default()));
        let device = combine_op_metrics_dbs([&a, &b], true);
        assert_eq!(device.metrics_db[0].num_cores, 2);
    }

    #[test]
    fn combiner_over_filled_db_appends() {
        let filled = OpMetricsDb { metrics_db: vec![op(1, "child")], ..Default::default() };
        let src = OpMetricsDb { metrics_db: vec![op(1, "child")], ..Default::default() };
        let mut c = OpMetricsDbCombiner::over(filled);
        c.combine(&src, false);
        assert_eq!(c.into_db().metrics_db.len(), 2);
    }

    #[test]
    fn memory_breakdown_adds_per_space_and_direction() {
        let read = |space, bytes| MemoryAccessed {
            operation_type: MemoryOperationType::Read,
            memory_space: space,
            bytes_accessed: bytes,
        };
        let mut dst = vec![read(1, 10)];
        combine_memory_accessed_breakdown(&[read(1, 5), read(2, 7)], &mut dst);
        assert_eq!(dst, [read(1, 15), read(2, 7)]);
    }

    #[test]
    fn device_builder_scales_by_occurrences() {
        let mut b = DeviceOpMetricsDbBuilder::new();
        let id = OpIdentifier {
            program_id: 3,
            name: "fusion.1",
            category: "",
            provenance: "a/b:MatMul",
            ..Default::default()
        };
        b.enter_op(&id, &OpData { occurrences: 2, time_ps: 100, flops: 10, bytes_accessed: 4, ..Default::default() });
        let perf = PerformanceInfo {
            device_flops: 20,
            model_flops: 0,
            bytes_accessed: 0,
            memory_accessed_breakdown: vec![PerfMemoryAccessed { is_read: true, memory_space: 1, bytes_accessed: 3 }],
        };
        let other = OpIdentifier { category: "convolution", ..id };
        b.enter_op(
            &other,
            &OpData {
                occurrences: 1,
                time_ps: 50,
                flops: 99,
                bytes_accessed: 4,
                perf_info: Some(&perf),
                ..Default::default()
            },
        );
        let db = b.into_db();
        let m = &db.metrics_db[0];
        assert_eq!(m.category, "unknown", "metadata is entered once");
        assert_eq!((m.occurrences, m.time_ps, m.self_time_ps, m.num_cores), (3, 150, 150, 1));
        assert_eq!((m.flops, m.model_flops, m.bytes_accessed), (40, 40, 12));
        assert_eq!(m.memory_accessed_breakdown.len(), 1);
        assert_eq!(m.source_info, Some(SourceInfo::default()));
        assert_eq!(db.total_op_time_ps, 150);
    }

    #[test]
    fn xevents_builder_merges_by_program_and_symbol() {
        let mut b = XEventsOpMetricsDbBuilder::new();
        let key = |p, s| XEventOpKey { program_id: Some(p), symbol_id: Some(s) };
        let ev = |t| OpMetrics {
            occurrences: 1,
            time_ps: t,
            self_time_ps: t,
            min_time_ps: t,
            normalized_time_ps: 2 * t,
            flops: 5,
            ..op(1, "x")
        };
        b.add_op_metric(&ev(10), key(1, 4));
        b.add_op_metric(&ev(20), key(1, 4));
        b.add_op_metric(&ev(30), key(1, 0));
        b.add_op_metric(&ev(30), XEventOpKey { program_id: Some(1), symbol_id: None });
        let db = b.finalize_with_total_time(100);
        assert_eq!(db.metrics_db.len(), 2);
        let x = &db.metrics_db[0];
        assert_eq!((x.occurrences, x.time_ps, x.min_time_ps, x.flops, x.model_flops), (2, 30, 10, 10, 10));
        assert_eq!((db.total_op_time_ps, db.normalized_total_op_time_ps, db.total_time_ps), (30, 60, 100));
        assert_eq!(db.metrics_db[1].time_ps, 70);
    }

    #[test]
    fn tf_metrics_from_device_ops() {
        let mut device = OpMetricsDb { total_time_ps: 100, total_op_time_ps: 60, ..Default::default() };
        device.metrics_db = vec![
            OpMetrics {
                occurrences: 2,
                time_ps: 20,
                self_time_ps: 20,
                provenance: "m/dense/MatMul:MatMul".into(),
                ..op(1, "dot")
            },
            OpMetrics {
                occurrences: 3,
                time_ps: 30,
                self_time_ps: 30,
                provenance: "m/dense/MatMul:MatMul".into(),
                ..op(1, "add")
            },
            OpMetrics { occurrences: 1, time_ps: 10, self_time_ps: 10, ..op(1, "copy") },
            OpMetrics { time_ps: 40, self_time_ps: 40, category: IDLE.into(), ..op(0, IDLE) },
        ];
        let tf = create_tf_metrics_db_from_device_op_metrics_db(&device, true);
        let summary: Vec<_> =
            tf.metrics_db.iter().map(|m| (m.name.as_str(), m.category.as_str(), m.occurrences, m.time_ps)).collect();
        assert_eq!(summary, [("m/dense/MatMul", "MatMul", 3, 50), ("copy", "Unknown", 1, 10), (IDLE, IDLE, 0, 40)]);
        assert_eq!(tf.total_time_ps, 100);
        let no_idle = create_tf_metrics_db_from_device_op_metrics_db(&device, false);
        assert_eq!((no_idle.metrics_db.len(), no_idle.total_time_ps), (2, 60));
    }

    #[test]
    fn provenance_and_roots() {
        assert_eq!(parse_provenance("a//b/c:Type"), ["a", "b", "c"]);
        assert!(parse_provenance("").is_empty());
        let mut parent = op(1, "fusion");
        parent.children = Some(Box::new(OpMetricsDb { metrics_db: vec![op(1, "mul")], ..Default::default() }));
        let db = OpMetricsDb { metrics_db: vec![parent, op(1, "mul"), op(2, "mul")], ..Default::default() };
        let roots: Vec<_> = root_op_metrics(&db).iter().map(|m| (m.hlo_module_id, m.name.as_str())).collect();
        assert_eq!(roots, [(1, "fusion"), (2, "mul")]);
    }
}
