//! Names with meaning in XSpace files: stat types and host event types, resolved by name as
//! XProf does (`xla/tsl/profiler/utils/xplane_schema.cc`). Metadata ids are arbitrary per
//! plane; only names identify a stat or event kind.

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
}
