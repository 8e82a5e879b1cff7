//! Names with meaning in XSpace files, defined once for every analysis: stat types and host
//! event types, resolved by name as XProf does (`xla/tsl/profiler/utils/xplane_schema.cc`);
//! plane and line names; the ids of the lines XProf derives; whether a space is grouped.
//! Metadata ids are arbitrary per plane; only names identify a stat or event kind.

use crate::model::XSpace;

macro_rules! named_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($variant:ident => $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        $vis enum $name { $(#[doc = concat!("`", $text, "`")] $variant,)* }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The name this variant has in XSpace files.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// The variant with exactly this name, if any.
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($text => Some($name::$variant),)* _ => None }
            }
        }
    };
}

named_enum! {
    /// A stat kind XProf gives meaning to (`XStatMetadata.name`).
    pub enum StatType {
        // TraceMe grouping semantics.
        IsRoot => "_r",
        IsAsync => "_a",
        ProducerType => "_pt",
        ProducerId => "_p",
        ConsumerType => "_ct",
        ConsumerId => "_c",
        ConsumerProcessId => "_pid",
        ProcessId => "process_id",
        StepId => "id",
        IterNum => "iter_num",
        StepNum => "step_num",
        GraphType => "graph_type",
        GroupId => "group_id",
        StepName => "step_name",
        IsEager => "is_eager",
        IsFunc => "is_func",
        Flow => "flow",
        ElementId => "element_id",
        ParentId => "parent_id",
        InputPipelineStageId => "_ipl_stage_id",
        InputPipelineStageName => "_ipl_stage_name",
        InputPipelineStageCategory => "_ipl_stage_cat",
        TfFunctionCall => "tf_function_call",
        TfFunctionTracingCount => "tracing_count",
        // Device events.
        CorrelationId => "correlation_id",
        KernelDetails => "kernel_details",
        MemcpyDetails => "memcpy_details",
        MemallocDetails => "memalloc_details",
        MemFreeDetails => "MemFree_details",
        MemsetDetails => "Memset_details",
        Stream => "stream",
        ContextId => "context_id",
        DeviceId => "device_id",
        DeviceOrdinal => "device_ordinal",
        TfOp => "tf_op",
        HloOp => "hlo_op",
        HloModule => "hlo_module",
        ProgramId => "program_id",
        Shape => "shape",
        Equation => "equation",
        ScopeRangeId => "scope_range_id",
        CudaGraphId => "cuda_graph_id",
        CudaGraphExecId => "cuda_graph_exec_id",
        DeviceOffsetPs => "device_offset_ps",
        DeviceDurationPs => "device_duration_ps",
        StepIdleTimePs => "step_idle_time_ps",
        // HLO metadata.
        HloCategory => "hlo_category",
        SymbolId => "symbol_id",
        Flops => "flops",
        ModelFlops => "model_flops",
        BytesAccessed => "bytes_accessed",
        RawBytesAccessed => "raw_bytes_accessed",
        MemoryAccessBreakdown => "memory_access_breakdown",
        ShapeWithLayout => "shape_with_layout",
        SourceInfo => "source",
        SourceStack => "source_stack",
        DeduplicatedName => "deduplicated_name",
        SelfDurationPs => "self_duration_ps",
        MinDurationPs => "min_duration_ps",
        DmaStallDurationPs => "dma_stall_duration_ps",
        TimeScaleMultiplier => "Time Scale Multiplier",
        OffloadCoreId => "offload_core_id",
        TcOffloadStartId => "tc_offload_start_id",
        AllReduceUniqueId => "all_reduce_unique_id",
        AllReduceId => "all_reduce_id",
        HloProto => "Hlo Proto",
        // Device capabilities (plane stats).
        DevCapClockRateKhz => "clock_rate",
        DevCapCoreCount => "core_count",
        DevCapMemoryBandwidth => "memory_bandwidth",
        DevCapMemorySize => "memory_size",
        DevCapComputeCapMajor => "compute_cap_major",
        DevCapComputeCapMinor => "compute_cap_minor",
        DevVendor => "device_vendor",
        DeviceTypeString => "device_type_string",
        PeakTeraflopsPerSecond => "peak_teraflops_per_second",
        PeakHbmBwGigabytesPerSecond => "peak_hbm_bw_gigabytes_per_second",
        HasMegacore => "has_megacore",
        HasMergedVmem => "has_merged_vmem",
        CoreDetails => "core_details",
        MatrixUnitUtilizationPercent => "matrix_unit_utilization_percent",
        HbmUtilizationPercent => "hbm_utilization_percent",
        // Memory TraceMes.
        AllocatorName => "allocator_name",
        IndexOnHost => "index_on_host",
        BytesReserved => "bytes_reserved",
        BytesAllocated => "bytes_allocated",
        BytesAvailable => "bytes_available",
        Fragmentation => "fragmentation",
        PeakBytesInUse => "peak_bytes_in_use",
        RequestedBytes => "requested_bytes",
        AllocationBytes => "allocation_bytes",
        Address => "addr",
        RegionType => "region_type",
        DataType => "data_type",
        // TPU launch correlation.
        RunId => "run_id",
        QueueId => "queue_id",
        CoreType => "core_type",
        ReplicaId => "replica_id",
        // Task environment.
        ProfileStartTime => "profile_start_time",
        ProfileStopTime => "profile_stop_time",
        // Counters.
        CounterValue => "counter_value",
        PerformanceCounterId => "performance_counter_id",
        PerformanceCounterDescription => "performance_counter_description",
        PerformanceCounterSets => "performance_counter_sets",
        GlobalChipId => "global_chip_id",
    }
}

named_enum! {
    /// An event kind XProf gives meaning to (`XEventMetadata.name`, exact match).
    pub enum HostEventType {
        TraceContext => "TraceContext",
        SessionRun => "SessionRun",
        FunctionRun => "FunctionRun",
        RunGraph => "RunGraph",
        ExecutorStateProcess => "ExecutorState::Process",
        EagerExecute => "EagerExecute",
        EagerLocalExecute => "EagerLocalExecute",
        EagerKernelExecute => "EagerKernelExecute",
        MemoryAllocation => "MemoryAllocation",
        MemoryDeallocation => "MemoryDeallocation",
        IteratorGetNextOp => "IteratorGetNextOp::DoCompute",
        IteratorGetNextAsOptionalOp => "IteratorGetNextAsOptionalOp::DoCompute",
        PrefetchProduce => "PrefetchProduce",
        PrefetchConsume => "PrefetchConsume",
        ParallelInterleaveProduce => "ParallelInterleaveProduce",
        ParallelInterleaveConsume => "ParallelInterleaveConsume",
        ParallelMapProduce => "ParallelMapProduce",
        ParallelMapConsume => "ParallelMapConsume",
        MapAndBatchProduce => "MapAndBatchProduce",
        MapAndBatchConsume => "MapAndBatchConsume",
        ParseExampleProduce => "ParseExampleProduce",
        ParseExampleConsume => "ParseExampleConsume",
        DevicePrefetchGenerator => "Iterator::Prefetch::Generator",
        WhileOpEvalCond => "WhileOp-EvalCond",
        WhileOpStartBody => "WhileOp-StartBody",
        ForOp => "ForOp",
        ParallelForOp => "ParallelForOp",
        ForeverOp => "ForeverOp",
        BatchingSessionRun => "BatchingSessionRun",
        ProcessBatch => "ProcessBatch",
        ServingModelRun => "ServingModelRun",
        EnqueueRequestLocked => "EnqueueRequestLocked",
        RunProgramRequest => "RunProgramRequest",
        DoEnqueueProgram => "DoEnqueueProgram",
        CompleteCallbacks => "CompleteCallbacks",
        TpuExecuteOp => "TpuExecuteOp",
    }
}
/// A host-plane stat of imported traces: how many nanoseconds the importer took off
/// epoch-based timestamps to keep them within the trace viewer's picosecond range (absent
/// when none). Absolute time = line timestamp + this.
pub const TIME_SHIFT_STAT: &str = "oxprof_time_shift_ns";

/// The plane holding host threads' TraceMe events.
pub const HOST_THREADS_PLANE_NAME: &str = "/host:CPU";
/// Prefix of GPU device planes.
pub const GPU_PLANE_PREFIX: &str = "/device:GPU:";
/// Prefix of TPU device planes.
pub const TPU_PLANE_PREFIX: &str = "/device:TPU:";
/// The plane holding per-program HLO protos.
pub const METADATA_PLANE_NAME: &str = "/host:metadata";
/// The plane holding profile-wide facts (start/stop time, options).
pub const TASK_ENV_PLANE_NAME: &str = "Task Environment";
/// Prefix of custom device planes (`kCustomPlanePrefix`).
pub const CUSTOM_PLANE_PREFIX: &str = "/device:CUSTOM:";

/// XProf's `IsHostPlane`: the name starts with one of the host plane names.
pub fn is_host_plane(name: &str) -> bool {
    const PREFIXES: [&str; 8] = [
        HOST_THREADS_PLANE_NAME,
        "Host CPUs",
        "/host:tfstreamz",
        METADATA_PLANE_NAME,
        "Syscalls",
        "/host:python-tracer",
        "/host:CUPTI",
        "/host:__ScopeRangeCallStack__",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// XProf's `IsDevicePlane`.
pub fn is_device_plane(name: &str) -> bool {
    !is_host_plane(name)
        && (name.starts_with("/device")
            || name.starts_with("#Chip")
            || name.starts_with(CUSTOM_PLANE_PREFIX)
            || name.starts_with("/custom:"))
}

/// The step line of a TPU TensorCore plane (`kStepLineName`).
pub const STEP_LINE_NAME: &str = "Steps";
/// The step line of a SparseCore plane.
pub const SPARSE_CORE_STEP_LINE_NAME: &str = "Sparse Core Steps";
/// The module line of a TPU plane (`kXlaModuleLineName`).
pub const XLA_MODULE_LINE_NAME: &str = "XLA Modules";
/// The module line of a SparseCore plane.
pub const SPARSE_CORE_MODULE_LINE_NAME: &str = "Sparse Core Modules";
/// The op line of a SparseCore plane.
pub const SPARSE_CORE_OP_LINE_NAME: &str = "Sparse Core Ops";

/// First id of the lines XProf derives (`kThreadIdDerivedMin`, 0xdeadbeef).
pub const THREAD_ID_DERIVED_MIN: i64 = 0xdead_beef;
/// Last id of the lines XProf derives (`kThreadIdHostXlaRegionEnd`).
pub const THREAD_ID_DERIVED_MAX: i64 = THREAD_ID_DERIVED_MIN + 49 + 240;
/// Id of the derived `Steps` line (`kThreadIdStepInfo`) as `XLine.id` holds it: XProf's
/// constant is a C `int`, so 0xdeadbeef is negative there.
pub const THREAD_ID_STEP_INFO: i64 = THREAD_ID_DERIVED_MIN as i32 as i64;

/// XProf's `IsDerivedThreadId`: the line id, truncated to a C `int`, is in the derived
/// range.
pub fn is_derived_thread_id(line_id: i64) -> bool {
    (THREAD_ID_DERIVED_MIN as i32..=THREAD_ID_DERIVED_MAX as i32).contains(&(line_id as i32))
}

/// XProf's `IsXSpaceGrouped`: some plane defines a `group_id` stat, so the file was grouped
/// when written and XProf's preprocessing (grouping and derived lines) is skipped.
pub fn is_xspace_grouped(space: &XSpace) -> bool {
    space.planes.iter().any(|p| p.stat_metadata_of_type(StatType::GroupId).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for &t in StatType::ALL {
            assert!(seen.insert(t.as_str()), "duplicate stat name {}", t.as_str());
            assert_eq!(StatType::from_name(t.as_str()), Some(t));
        }
        for &t in HostEventType::ALL {
            assert_eq!(HostEventType::from_name(t.as_str()), Some(t));
        }
        assert_eq!(StatType::from_name("no such stat"), None);
    }

    #[test]
    fn planes_and_derived_lines_are_recognised_as_xprof_does() {
        assert!(is_host_plane("/host:metadata") && is_host_plane("/host:CPU"));
        assert!(is_device_plane("/device:GPU:0") && is_device_plane("/custom:x") && is_device_plane("#Chip 1"));
        assert!(!is_device_plane("Task Environment") && !is_device_plane("/host:CPU"));
        assert_eq!(THREAD_ID_STEP_INFO, -559_038_737);
        for id in [THREAD_ID_STEP_INFO, THREAD_ID_DERIVED_MIN, THREAD_ID_DERIVED_MAX, -559_038_734] {
            assert!(is_derived_thread_id(id), "{id}");
        }
        assert!(!is_derived_thread_id(1) && !is_derived_thread_id(THREAD_ID_DERIVED_MAX + 1));
    }
}
