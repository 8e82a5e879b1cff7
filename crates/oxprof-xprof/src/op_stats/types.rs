//! OpStats: the per-host (and combined) database most tools are computed from. The types
//! mirror XProf's protos (`op_stats.proto`, `op_metrics.proto`, `steps_db.proto`, …) field
//! for field, and (de)serialize as XProf's proto JSON (`MessageToJson` with proto field
//! names: 64-bit integers as strings, enums by name), so XProf's own OpStats can be loaded
//! in tests and compared with ours.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Proto JSON for 64-bit integers: written as strings, read from strings or numbers.
pub(crate) mod pbjson_u64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Num(u64),
            Str(String),
        }
        match Repr::deserialize(d)? {
            Repr::Num(n) => Ok(n),
            Repr::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Proto JSON for signed 64-bit integers.
pub(crate) mod pbjson_i64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Num(i64),
            Str(String),
        }
        match Repr::deserialize(d)? {
            Repr::Num(n) => Ok(n),
            Repr::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Proto JSON for maps whose values are 64-bit integers (keys are JSON strings; parsed
/// here because serde's integer-key support is lost inside tagged `Any` messages).
pub(crate) mod pbjson_map_u64 {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;
    use std::fmt::Display;
    use std::str::FromStr;

    #[derive(Serialize, Deserialize)]
    struct V(#[serde(with = "super::pbjson_u64")] u64);

    pub fn serialize<K: Display + Ord, S: Serializer>(m: &BTreeMap<K, u64>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, v)| (k.to_string(), V(*v))))
    }

    pub fn deserialize<'de, K: FromStr + Ord, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<K, u64>, D::Error>
    where
        K::Err: Display,
    {
        let m: BTreeMap<String, V> = BTreeMap::deserialize(d)?;
        m.into_iter().map(|(k, v)| Ok((k.parse().map_err(serde::de::Error::custom)?, v.0))).collect()
    }
}

/// `HardwareType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub enum HardwareType {
    /// Unknown.
    #[default]
    #[serde(rename = "UNKNOWN_HARDWARE")]
    Unknown,
    /// Host only.
    #[serde(rename = "CPU_ONLY")]
    CpuOnly,
    /// GPU.
    #[serde(rename = "GPU")]
    Gpu,
    /// TPU.
    #[serde(rename = "TPU")]
    Tpu,
}

/// `OpMetrics.MemoryAccessed`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryAccessed {
    /// `UNKNOWN`, `READ` or `WRITE`.
    pub operation_type: MemoryOperationType,
    /// Memory space (1 = HBM).
    #[serde(with = "pbjson_u64")]
    pub memory_space: u64,
    /// Bytes.
    #[serde(with = "pbjson_u64")]
    pub bytes_accessed: u64,
}

/// `OpMetrics.MemoryAccessed.OperationType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum MemoryOperationType {
    /// Unknown.
    #[default]
    #[serde(rename = "UNKNOWN")]
    Unknown,
    /// Read.
    #[serde(rename = "READ")]
    Read,
    /// Write.
    #[serde(rename = "WRITE")]
    Write,
}

/// `OpMetrics.TpuCoreType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum TpuCoreType {
    /// Unknown / not TPU.
    #[default]
    #[serde(rename = "UNKNOWN")]
    Unknown,
    /// TensorCore.
    #[serde(rename = "TENSOR_CORE")]
    TensorCore,
    /// SparseCore.
    #[serde(rename = "SPARSE_CORE")]
    SparseCore,
}

/// `SourceInfo`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SourceInfo {
    /// File.
    pub file_name: String,
    /// Line (may be -1).
    pub line_number: i32,
    /// One frame per line.
    pub stack_frame: String,
}

/// `OpMetrics`: aggregated metrics of one op (HLO op, framework op, or IDLE).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OpMetrics {
    /// Program id of the HLO module (0 for framework ops).
    #[serde(with = "pbjson_u64")]
    pub hlo_module_id: u64,
    /// Short name.
    pub name: String,
    /// Long name (HLO expression).
    pub long_name: String,
    /// Category (HLO category or framework op type).
    pub category: String,
    /// Framework op that produced it (`name:Type`).
    pub provenance: String,
    /// Executed eagerly.
    pub is_eager: bool,
    /// Times it ran.
    pub occurrences: u32,
    /// Total time.
    #[serde(with = "pbjson_u64")]
    pub time_ps: u64,
    /// Time normalised by the DVFS time-scale multiplier.
    #[serde(with = "pbjson_u64")]
    pub normalized_time_ps: u64,
    /// Minimum time of one occurrence.
    #[serde(with = "pbjson_u64")]
    pub min_time_ps: u64,
    /// Time minus nested children's.
    #[serde(with = "pbjson_u64")]
    pub self_time_ps: u64,
    /// Deprecated integer flops.
    #[serde(with = "pbjson_u64")]
    pub flops: u64,
    /// Deprecated integer model flops.
    #[serde(with = "pbjson_u64")]
    pub model_flops: u64,
    /// FLOPs.
    pub flops_v2: f64,
    /// Model FLOPs.
    pub model_flops_v2: f64,
    /// Energy (J), when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vdd_energy_j: Option<f64>,
    /// Fingerprint.
    #[serde(with = "pbjson_u64")]
    pub fingerprint: u64,
    /// Bytes accessed.
    #[serde(with = "pbjson_u64")]
    pub bytes_accessed: u64,
    /// Per memory space and direction.
    pub memory_accessed_breakdown: Vec<MemoryAccessed>,
    /// DMA stall time.
    #[serde(with = "pbjson_u64")]
    pub dma_stall_ps: u64,
    /// Deduplicated name.
    pub deduplicated_name: String,
    /// Fused children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<Box<OpMetricsDb>>,
    /// Cores it ran on (after combining).
    pub num_cores: u32,
    /// Primitive size in bits.
    pub computation_primitive_size: u32,
    /// Autotuned.
    pub autotuned: bool,
    /// Source location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_info: Option<SourceInfo>,
    /// TPU core type.
    pub core_type: TpuCoreType,
}

/// `PrecisionStats`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PrecisionStats {
    /// 16-bit compute time.
    #[serde(with = "pbjson_u64")]
    pub compute_16bit_ps: u64,
    /// 32-bit compute time.
    #[serde(with = "pbjson_u64")]
    pub compute_32bit_ps: u64,
}

/// `OpMetricsDb`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OpMetricsDb {
    /// The ops.
    pub metrics_db: Vec<OpMetrics>,
    /// Host infeed-enqueue duration.
    #[serde(with = "pbjson_u64")]
    pub total_host_infeed_enq_duration_ps: u64,
    /// Host infeed-enqueue start-to-start span.
    #[serde(with = "pbjson_u64")]
    pub total_host_infeed_enq_start_timestamp_ps_diff: u64,
    /// Total time (span, or Σ self time if larger).
    #[serde(with = "pbjson_u64")]
    pub total_time_ps: u64,
    /// Σ self time of all non-idle ops.
    #[serde(with = "pbjson_u64")]
    pub total_op_time_ps: u64,
    /// Normalised Σ op time.
    #[serde(with = "pbjson_u64")]
    pub normalized_total_op_time_ps: u64,
    /// Compute precision split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision_stats: Option<PrecisionStats>,
    /// Idle time (TPU duty cycle).
    #[serde(with = "pbjson_u64")]
    pub idle_time_ps: u64,
    /// Busy time (TPU duty cycle).
    #[serde(with = "pbjson_u64")]
    pub busy_time_ps: u64,
    /// Busy time measured with high confidence (TPU duty cycle).
    #[serde(with = "pbjson_u64")]
    pub busy_time_high_confidence_ps: u64,
    /// Idle time measured with high confidence (TPU duty cycle).
    #[serde(with = "pbjson_u64")]
    pub idle_time_high_confidence_ps: u64,
}

/// `PerfEnv`: hardware peaks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PerfEnv {
    /// Peak TFLOP/s.
    pub peak_tera_flops_per_second: f64,
    /// Deprecated.
    pub peak_bw_giga_bytes_per_second: f64,
    /// Peak HBM GB/s.
    pub peak_hbm_bw_giga_bytes_per_second: f64,
    /// Peaks by `MemBwType` (HBM_RW, SRAM_RD, SRAM_WR, CMEM_RD, CMEM_WR, VMEM_RD, VMEM_WR).
    pub peak_bws_giga_bytes_per_second: Vec<f64>,
    /// Peak FLOPs / peak HBM bandwidth.
    pub ridge_point: f64,
    /// Has CMEM.
    pub has_cmem: bool,
    /// Has merged VMEM.
    pub has_merged_vmem: bool,
    /// Has megacore.
    pub has_megacore: bool,
}

/// `HostDependentJobInfoResult`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HostDependentJobInfo {
    /// Host id.
    pub host_id: String,
    /// Command line.
    pub command_line: String,
    /// Start time.
    #[serde(with = "pbjson_i64")]
    pub start_time: i64,
    /// BNS address.
    pub bns_address: String,
    /// Profile time.
    #[serde(with = "pbjson_u64")]
    pub profile_time_ns: u64,
}

/// `RunEnvironment`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunEnvironment {
    /// Hosts.
    pub host_count: i32,
    /// Tasks.
    pub task_count: i32,
    /// Host names.
    pub hostnames: BTreeMap<String, bool>,
    /// Device type, e.g. `CPU`, `TPU v6 Lite`, `Nvidia GPU (Volta)`.
    pub device_type: String,
    /// Device cores.
    pub device_core_count: i32,
    /// Per-host job info.
    pub host_dependent_job_info: Vec<HostDependentJobInfo>,
    /// Replicas.
    pub replica_count: i32,
    /// Cores per replica.
    pub num_cores_per_replica: i32,
    /// Host trace level.
    pub host_trace_level: u32,
    /// Training (gradients seen).
    pub is_training: bool,
    /// Hardware type.
    pub hardware_type: HardwareType,
}

/// `CoreDetails`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CoreDetails {
    /// Host name.
    pub hostname: String,
    /// Device ordinal.
    pub device_ordinal: u32,
    /// Core number within its chip.
    pub core_num: u32,
    /// Chip id within the host.
    pub local_chip_id: u32,
    /// Chip id within the mesh.
    pub global_chip_id: u32,
    /// Core id within the mesh.
    pub global_core_id: u32,
    /// SparseCore.
    pub is_sparse_core: bool,
}

/// `GenericStepBreakdown`: time per event type and per op category in one step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GenericStepBreakdown {
    /// Picoseconds per `EventType` (as i32).
    #[serde(with = "pbjson_map_u64")]
    pub type_ps: BTreeMap<i32, u64>,
    /// Picoseconds per op category.
    #[serde(with = "pbjson_map_u64")]
    pub category_ps: BTreeMap<String, u64>,
}

/// `StepInfoResult.step_breakdown` (a `google.protobuf.Any`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "@type")]
pub enum StepBreakdown {
    /// Generic (CPU, GPU, and TPU per-core categories).
    #[serde(rename = "type.googleapis.com/tensorflow.profiler.GenericStepBreakdown")]
    Generic(GenericStepBreakdown),
}

/// `DeviceMemoryTransfer`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceMemoryTransfer {
    /// Count.
    #[serde(with = "pbjson_u64")]
    pub occurrence: u64,
    /// Time.
    pub time_us: f64,
    /// Bytes.
    #[serde(with = "pbjson_u64")]
    pub bytes_transferred: u64,
}

/// `StepInfoResult`: one step on one core.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StepInfoResult {
    /// Step number.
    pub step_num: u32,
    /// Step name.
    pub step_name: String,
    /// Duration.
    #[serde(with = "pbjson_u64")]
    pub duration_ps: u64,
    /// Begin.
    #[serde(with = "pbjson_u64")]
    pub begin_ps: u64,
    /// Breakdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_breakdown: Option<StepBreakdown>,
    /// Collectives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<DeviceMemoryTransfer>,
}

/// `AllReduceInfo`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AllReduceInfo {
    /// Unique id.
    #[serde(with = "pbjson_u64")]
    pub id: u64,
    /// Name.
    pub name: String,
    /// All-reduce id.
    #[serde(with = "pbjson_u64")]
    pub all_reduce_id: u64,
    /// Start.
    #[serde(with = "pbjson_u64")]
    pub start_time_ps: u64,
    /// End.
    #[serde(with = "pbjson_u64")]
    pub end_time_ps: u64,
    /// Bytes.
    #[serde(with = "pbjson_u64")]
    pub byte_size: u64,
}

/// `AllReduceDbResult`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AllReduceDbResult {
    /// All-reduces.
    pub all_reduce_info: Vec<AllReduceInfo>,
}

/// oxprof's summary of a step's all-reduces on some cores: exactly what the input pipeline's
/// all-reduce breakdown reads of XProf's per-core lists, in a tenth of their size. The
/// breakdown needs each id's shortest duration over every core of the step, and per core its
/// ids and its total duration (a core's synchronization time is its total minus the sum of
/// its ids' shortest durations: the same wrapping sum XProf adds one all-reduce at a time).
/// Cores of one host run the same ids (SPMD), so each distinct id list is kept once.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AllReduceSummary {
    /// Each all-reduce id's shortest duration (end − start, wrapping) on the summarised cores.
    pub min_duration_ps: BTreeMap<u64, u64>,
    /// The summarised cores' id lists (a core's all-reduce ids in order), each distinct one once.
    pub id_lists: Vec<Vec<u64>>,
    /// Each summarised core: its list in `id_lists` and its all-reduces' total duration.
    pub cores: BTreeMap<u32, CoreAllReduces>,
}

/// One core of an [`AllReduceSummary`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CoreAllReduces {
    /// Its id list's index in [`AllReduceSummary::id_lists`] (unused once settled).
    pub id_list: u32,
    /// The wrapping sum of its all-reduces' durations.
    pub total_duration_ps: u64,
    /// Once the summary is settled: the wrapping sum of its ids' shortest durations (its
    /// compute time; the rest of its total is synchronization).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_duration_ps: Option<u64>,
}

impl AllReduceSummary {
    /// Adds `lists` (core id, its all-reduces); a core already summarised keeps its own, as
    /// XProf's combine keeps the first value of a core id.
    pub fn add_lists(&mut self, lists: impl IntoIterator<Item = (u32, AllReduceDbResult)>) {
        let mut list_index: std::collections::HashMap<Vec<u64>, u32> = std::collections::HashMap::new();
        for (core, db) in lists {
            if self.cores.contains_key(&core) {
                continue;
            }
            let mut total_duration_ps = 0u64;
            let mut ids = Vec::with_capacity(db.all_reduce_info.len());
            for all_reduce in &db.all_reduce_info {
                let duration = all_reduce.end_time_ps.wrapping_sub(all_reduce.start_time_ps);
                total_duration_ps = total_duration_ps.wrapping_add(duration);
                let min = self.min_duration_ps.entry(all_reduce.id).or_insert(duration);
                *min = (*min).min(duration);
                ids.push(all_reduce.id);
            }
            let next = self.id_lists.len() as u32;
            let id_list = *list_index.entry(ids).or_insert_with_key(|ids| {
                self.id_lists.push(ids.clone());
                next
            });
            self.cores.insert(core, CoreAllReduces { id_list, total_duration_ps, compute_duration_ps: None });
        }
    }

    /// Whether every core names a list the summary has (a damaged or hand-made file may not).
    pub fn is_consistent(&self) -> bool {
        self.cores.values().all(|c| c.compute_duration_ps.is_some() || (c.id_list as usize) < self.id_lists.len())
    }

    /// Whether some core's compute time is settled (a summary nothing more merges into).
    pub fn is_settled(&self) -> bool {
        self.cores.values().any(|c| c.compute_duration_ps.is_some())
    }

    /// Settles the summary once nothing more will merge into it (a pod's combine of every
    /// host): each core's compute time (its ids' shortest durations, summed) is computed
    /// now and the ids are dropped. On a 256-host pod they were 99 % of the combine file
    /// (12 MB of JSON per step); what the input pipeline reads of a core is its two sums.
    pub fn settle(&mut self) {
        let mut list_compute: Vec<Option<u64>> = vec![None; self.id_lists.len()];
        for core in self.cores.values_mut().filter(|c| c.compute_duration_ps.is_none()) {
            let Some(slot) = list_compute.get_mut(core.id_list as usize) else { continue };
            let ids = &self.id_lists[core.id_list as usize];
            let min_duration_ps = &self.min_duration_ps;
            core.compute_duration_ps = Some(*slot.get_or_insert_with(|| {
                ids.iter().fold(0u64, |sum, id| sum.wrapping_add(min_duration_ps.get(id).copied().unwrap_or(0)))
            }));
            core.id_list = 0;
        }
        self.id_lists.clear();
        self.min_duration_ps.clear();
    }

    /// Adds `other`, its cores renamed by `core_id`. A core already summarised keeps its own
    /// (its shortest durations stay counted: they differ from XProf's only where two hosts'
    /// cores share a global id, which takes SparseCores on more than 1 000 hosts).
    pub fn merge(&mut self, other: AllReduceSummary, core_id: impl Fn(u32) -> u32) {
        let offset = self.id_lists.len() as u32;
        for (core, c) in other.cores {
            self.cores
                .entry(core_id(core))
                .or_insert(CoreAllReduces { id_list: c.id_list.saturating_add(offset), ..c });
        }
        self.id_lists.extend(other.id_lists);
        for (id, duration) in other.min_duration_ps {
            let min = self.min_duration_ps.entry(id).or_insert(duration);
            *min = (*min).min(duration);
        }
    }
}

/// `PerCoreStepInfo`: one step across cores.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PerCoreStepInfo {
    /// Step number.
    pub step_num: u32,
    /// Per core id.
    pub step_info_per_core: BTreeMap<u32, StepInfoResult>,
    /// HLO metrics of the step (TPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hlo_metrics_db: Option<OpMetricsDb>,
    /// Core to replica.
    pub core_id_to_replica_id_map: BTreeMap<u32, u32>,
    /// All-reduces per core.
    pub all_reduce_db_per_core: BTreeMap<u32, AllReduceDbResult>,
    /// oxprof's exact summary of the all-reduces of cores that have no list in
    /// `all_reduce_db_per_core` (a pod's partials and what combines them; XProf has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_reduce_summary: Option<AllReduceSummary>,
    /// Memory transfers (H2D, D2H, D2D).
    pub device_memory_transfers: Vec<DeviceMemoryTransfer>,
}

impl PerCoreStepInfo {
    /// Replaces the step's per-core all-reduce lists by their [`AllReduceSummary`] (what a
    /// pod's partial keeps: the input pipeline answers the same from either).
    pub fn summarise_all_reduces(&mut self) {
        if self.all_reduce_db_per_core.is_empty() {
            return;
        }
        let lists = std::mem::take(&mut self.all_reduce_db_per_core);
        self.all_reduce_summary.get_or_insert_with(AllReduceSummary::default).add_lists(lists);
    }
}

/// `StepDatabaseResult`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StepDatabaseResult {
    /// Steps, ascending.
    pub step_sequence: Vec<PerCoreStepInfo>,
    /// Incomplete steps kept.
    pub use_incomplete_step: bool,
    /// Steps dropped by the intersection.
    pub num_steps_dropped: u32,
    /// The intersection across hosts was empty.
    pub empty_intersect: bool,
}

/// `KernelReport`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelReport {
    /// Kernel name.
    pub name: String,
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Static shared memory.
    pub static_shmem_bytes: u32,
    /// Dynamic shared memory.
    pub dynamic_shmem_bytes: u32,
    /// Block dims.
    pub block_dim: Vec<u32>,
    /// Grid dims.
    pub grid_dim: Vec<u32>,
    /// Total duration.
    #[serde(with = "pbjson_u64")]
    pub total_duration_ns: u64,
    /// Min duration.
    #[serde(with = "pbjson_u64")]
    pub min_duration_ns: u64,
    /// Max duration.
    #[serde(with = "pbjson_u64")]
    pub max_duration_ns: u64,
    /// Kernel uses TensorCores.
    pub is_kernel_using_tensor_core: bool,
    /// Op is TensorCore-eligible.
    pub is_op_tensor_core_eligible: bool,
    /// Op name.
    pub op_name: String,
    /// Occurrences.
    pub occurrences: u32,
    /// Occupancy.
    pub occupancy_pct: f32,
}

/// `KernelStatsDb`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelStatsDb {
    /// Reports.
    pub reports: Vec<KernelReport>,
}

/// `TfFunctionMetrics`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TfFunctionMetrics {
    /// Calls.
    #[serde(with = "pbjson_u64")]
    pub count: u64,
    /// Self time.
    #[serde(with = "pbjson_u64")]
    pub self_time_ps: u64,
}

/// `TfFunctionExecutionMode`, by proto number.
pub mod tf_function_mode {
    /// Invalid.
    pub const INVALID: i32 = 0;
    /// Eager.
    pub const EAGER: i32 = 1;
    /// Traced.
    pub const TRACED: i32 = 2;
    /// Not traced.
    pub const NOT_TRACED: i32 = 3;
    /// Concrete.
    pub const CONCRETE: i32 = 4;
}

/// `TfFunction`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TfFunction {
    /// Metrics per execution mode (`tf_function_mode`).
    pub metrics: BTreeMap<i32, TfFunctionMetrics>,
    /// Tracing count.
    #[serde(with = "pbjson_i64")]
    pub total_tracing_count: i64,
    /// Compiler (`INVALID_COMPILER`, `OTHER_COMPILER`, `MIXED_COMPILER`, `XLA_COMPILER`, `MLIR_COMPILER`).
    pub compiler: String,
    /// % of self time in traced or eager calls.
    pub expensive_call_percent: f64,
}

/// `TfFunctionDb`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TfFunctionDb {
    /// By function name.
    pub tf_functions: BTreeMap<String, TfFunction>,
}

/// `Diagnostics`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OpStatsDiagnostics {
    /// Info messages.
    pub info: Vec<String>,
    /// Warnings.
    pub warnings: Vec<String>,
    /// Errors.
    pub errors: Vec<String>,
}

/// `PerformanceCounterResult`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PerformanceCounterResult {
    /// MXU utilisation %.
    pub matrix_unit_utilization_percent: f64,
    /// HBM utilisation %.
    pub hbm_utilization_percent: f64,
}

/// `OpStats`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OpStats {
    /// Host (framework) ops.
    pub host_op_metrics_db: OpMetricsDb,
    /// Device (HLO) ops.
    pub device_op_metrics_db: OpMetricsDb,
    /// HLO ops over complete steps only (TPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hlo_metrics_db_complete_steps_only: Option<OpMetricsDb>,
    /// Hardware peaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perf_env: Option<PerfEnv>,
    /// Steps.
    pub step_db: StepDatabaseResult,
    /// Run environment.
    pub run_environment: RunEnvironment,
    /// GPU kernels.
    pub kernel_stats_db: KernelStatsDb,
    /// tf.functions.
    pub tf_function_db: TfFunctionDb,
    /// Core details by core id.
    pub core_id_to_details: BTreeMap<u32, CoreDetails>,
    /// Diagnostics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<OpStatsDiagnostics>,
    /// Program id to module name.
    pub program_id_to_name_map: BTreeMap<u64, String>,
    /// Host performance counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub performance_counter_result: Option<PerformanceCounterResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_xprof_op_stats_json() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles");
        let mut n = 0;
        for dir in std::fs::read_dir(root).unwrap().flatten() {
            let path = dir.path().join("xprof_out/op_stats.json");
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let op_stats: OpStats = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            // Round trip through our serialization.
            let again: OpStats = serde_json::from_str(&serde_json::to_string(&op_stats).unwrap()).unwrap();
            assert_eq!(op_stats, again);
            n += 1;
        }
        assert!(n >= 5);
    }
}
