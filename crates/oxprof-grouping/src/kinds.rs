//! The names grouping gives meaning to: event kinds and stat kinds resolved by metadata name
//! per plane (as XProf's `CreateTfXPlaneVisitor` does), plane classification, and the stat
//! readers with XProf's exact value conversions (`IntValue`, `IntOrUintValue`).

use crate::tf_op::{TfOpCategory, parse_tf_op_fullname};
use oxprof_model::schema::TPU_PLANE_PREFIX;
use oxprof_model::{Event, StatValue, XPlane};

/// Event kinds grouping distinguishes (a subset of XProf's `HostEventType`, plus the
/// threadpool listener names, which are not host event types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum EventKind {
    /// No kind grouping cares about (it may still have an XProf type: see `has_type`).
    Other,
    TraceContext,
    FunctionRun,
    SessionRun,
    RunGraph,
    ExecutorStateProcess,
    /// `EagerExecute` (XProf's `kEagerKernelExecute`).
    EagerKernelExecute,
    TfOpRun,
    IteratorGetNextOp,
    IteratorGetNextAsOptionalOp,
    TfDataCapturedFunction,
    LoopOp,
    ProcessBatch,
    OrbaxProcessBatch,
    BatchingSessionRun,
    TpuExecuteOp,
    EnqueueRequestLocked,
    QueueRequest,
    DoEnqueueProgram,
    CompleteCallbacks,
    DoEnqueueContinuationProgram,
    /// An event literally named `KernelLaunch`.
    KernelLaunchNamed,
    /// An event literally named `KernelExecute`.
    KernelExecuteNamed,
    ThreadpoolStartRegion,
    ThreadpoolStopRegion,
}

/// Every name in XProf's host event type map (`GetHostEventTypeMap`), with the kind grouping
/// gives it. A name in this list has an XProf event type even when its kind is `Other`.
const HOST_EVENT_NAMES: &[(&str, EventKind)] = &[
    ("UnknownHostEventType", EventKind::Other),
    ("TraceContext", EventKind::TraceContext),
    ("SessionRun", EventKind::SessionRun),
    ("FunctionRun", EventKind::FunctionRun),
    ("RunGraph", EventKind::RunGraph),
    ("RunGraphDone", EventKind::Other),
    ("TfOpRun", EventKind::TfOpRun),
    ("EagerExecute", EventKind::EagerKernelExecute),
    ("ExecutorState::Process", EventKind::ExecutorStateProcess),
    ("ExecutorDoneCallback", EventKind::Other),
    ("MemoryAllocation", EventKind::Other),
    ("MemoryDeallocation", EventKind::Other),
    ("RemotePerfCounter", EventKind::Other),
    ("InstantiatedCapturedFunction::Run", EventKind::TfDataCapturedFunction),
    ("InstantiatedCapturedFunction::RunWithBorrowedArgs", EventKind::TfDataCapturedFunction),
    ("InstantiatedCapturedFunction::RunInstantiated", EventKind::TfDataCapturedFunction),
    ("InstantiatedCapturedFunction::RunAsync", EventKind::TfDataCapturedFunction),
    ("ParallelForOp", EventKind::LoopOp),
    ("ForeverOp", EventKind::LoopOp),
    ("WhileOp-EvalCond", EventKind::LoopOp),
    ("WhileOp-StartBody", EventKind::LoopOp),
    ("ForOp", EventKind::LoopOp),
    ("IteratorGetNextOp::DoCompute", EventKind::IteratorGetNextOp),
    ("IteratorGetNextAsOptionalOp::DoCompute", EventKind::IteratorGetNextAsOptionalOp),
    ("Iterator", EventKind::Other),
    ("Iterator::Prefetch::Generator", EventKind::Other),
    ("PrefetchProduce", EventKind::Other),
    ("PrefetchConsume", EventKind::Other),
    ("ParallelInterleaveProduce", EventKind::Other),
    ("ParallelInterleaveConsume", EventKind::Other),
    ("ParallelInterleaveInitializeInput", EventKind::Other),
    ("ParallelMapProduce", EventKind::Other),
    ("ParallelMapConsume", EventKind::Other),
    ("MapAndBatchProduce", EventKind::Other),
    ("MapAndBatchConsume", EventKind::Other),
    ("ParseExampleProduce", EventKind::Other),
    ("ParseExampleConsume", EventKind::Other),
    ("ParallelBatchProduce", EventKind::Other),
    ("ParallelBatchConsume", EventKind::Other),
    ("BatchingSessionRun", EventKind::BatchingSessionRun),
    ("ProcessBatch", EventKind::ProcessBatch),
    ("BrainSessionRun", EventKind::Other),
    ("ConcatInputTensors", EventKind::Other),
    ("MergeInputTensors", EventKind::Other),
    ("ScheduleWithoutSplit", EventKind::Other),
    ("ScheduleWithSplit", EventKind::Other),
    ("ScheduleWithEagerSplit", EventKind::Other),
    ("ASBSQueue::Schedule", EventKind::Other),
    ("OrbaxServing::ProcessBatch", EventKind::OrbaxProcessBatch),
    ("OrbaxServing::ConcatInputBuffers", EventKind::Other),
    ("TfrtModelRun", EventKind::Other),
    ("ServingModelRun", EventKind::Other),
    ("KernelLaunch", EventKind::KernelLaunchNamed),
    ("KernelExecute", EventKind::KernelExecuteNamed),
    ("EnqueueRequestLocked", EventKind::EnqueueRequestLocked),
    ("RunProgramRequest", EventKind::QueueRequest),
    ("HostCallbackRequest", EventKind::QueueRequest),
    ("TransferH2DRequest", EventKind::QueueRequest),
    ("TransferPreprocessedH2DRequest", EventKind::QueueRequest),
    ("TransferD2HRequest", EventKind::QueueRequest),
    ("OnDeviceSendRequest", EventKind::QueueRequest),
    ("OnDeviceRecvRequest", EventKind::QueueRequest),
    ("OnDeviceSendRecvLocalRequest", EventKind::QueueRequest),
    ("CustomWait", EventKind::QueueRequest),
    ("OnDeviceSendRequestMulti", EventKind::QueueRequest),
    ("OnDeviceRecvRequestMulti", EventKind::QueueRequest),
    ("PjrtAsyncWait", EventKind::QueueRequest),
    ("DoEnqueueProgram", EventKind::DoEnqueueProgram),
    ("DoEnqueueContinuationProgram", EventKind::DoEnqueueContinuationProgram),
    ("WriteHbm", EventKind::Other),
    ("ReadHbm", EventKind::Other),
    ("TpuExecuteOp", EventKind::TpuExecuteOp),
    ("CompleteCallbacks", EventKind::CompleteCallbacks),
    ("TPUPartitionedCallOp-InitializeVarOnTPU", EventKind::Other),
    ("TPUPartitionedCallOp-ExecuteRemote", EventKind::Other),
    ("TPUPartitionedCallOp-ExecuteLocal", EventKind::Other),
    ("Linearize", EventKind::Other),
    ("Delinearize", EventKind::Other),
    ("TransferBufferFromDevice-FastPath", EventKind::Other),
    ("tpu::System::TransferToDevice=>IssueEvent", EventKind::Other),
    ("tpu::System::TransferToDevice=>IssueEvent=>Done", EventKind::Other),
    ("tpu::System::TransferFromDevice=>IssueEvent", EventKind::Other),
    ("tpu::System::TransferFromDevice=>IssueEvent=>Done", EventKind::Other),
    ("tpu::System::Execute", EventKind::Other),
];

/// `kThreadpoolListenerStartRegion` / `StopRegion` (not host event types).
const THREADPOOL_START_REGION: &str = "ThreadpoolListener::StartRegion";
const THREADPOOL_STOP_REGION: &str = "ThreadpoolListener::StopRegion";

/// Resolves an event metadata name: `(kind, has an XProf event type)`. XProf's type getters
/// are `FindHostEventType` (exact name) then `FindTfOpEventType` (TF op → `kTfOpRun`,
/// tf.data iterator → `kIterator`).
pub(crate) fn resolve_event_name(name: &str) -> (EventKind, bool) {
    if let Some(&(_, kind)) = HOST_EVENT_NAMES.iter().find(|(n, _)| *n == name) {
        return (kind, true);
    }
    match name {
        THREADPOOL_START_REGION => return (EventKind::ThreadpoolStartRegion, false),
        THREADPOOL_STOP_REGION => return (EventKind::ThreadpoolStopRegion, false),
        _ => {}
    }
    match parse_tf_op_fullname(name).category {
        TfOpCategory::TensorFlow => (EventKind::TfOpRun, true),
        TfOpCategory::TfData => (EventKind::Other, true),
        _ => (EventKind::Other, false),
    }
}

/// Stat kinds grouping reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum StatKind {
    ProducerType,
    ProducerId,
    ConsumerType,
    ConsumerId,
    ConsumerPid,
    IsRoot,
    IsAsync,
    StepId,
    IterNum,
    StepNum,
    GraphType,
    CorrelationId,
    IsFunc,
    ProcessId,
    GroupId,
    DeviceOffsetPs,
    DeviceDurationPs,
    StepIdleTimePs,
    RunId,
    QueueId,
    CoreType,
    DeviceOrdinal,
    RequestId,
    QueueAddr,
    IsEager,
    StepName,
}

/// Number of [`StatKind`] variants.
pub(crate) const STAT_KIND_COUNT: usize = 26;

const STAT_NAMES: [(&str, StatKind); STAT_KIND_COUNT] = [
    ("_pt", StatKind::ProducerType),
    ("_p", StatKind::ProducerId),
    ("_ct", StatKind::ConsumerType),
    ("_c", StatKind::ConsumerId),
    ("_pid", StatKind::ConsumerPid),
    ("_r", StatKind::IsRoot),
    ("_a", StatKind::IsAsync),
    ("id", StatKind::StepId),
    ("iter_num", StatKind::IterNum),
    ("step_num", StatKind::StepNum),
    ("graph_type", StatKind::GraphType),
    ("correlation_id", StatKind::CorrelationId),
    ("is_func", StatKind::IsFunc),
    ("process_id", StatKind::ProcessId),
    ("group_id", StatKind::GroupId),
    ("device_offset_ps", StatKind::DeviceOffsetPs),
    ("device_duration_ps", StatKind::DeviceDurationPs),
    ("step_idle_time_ps", StatKind::StepIdleTimePs),
    ("run_id", StatKind::RunId),
    ("queue_id", StatKind::QueueId),
    ("core_type", StatKind::CoreType),
    ("device_ordinal", StatKind::DeviceOrdinal),
    ("request_id", StatKind::RequestId),
    ("queue_addr", StatKind::QueueAddr),
    ("is_eager", StatKind::IsEager),
    ("step_name", StatKind::StepName),
];

/// A stat value reduced to what grouping reads: the raw protobuf oneof for integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RawValue {
    Int(i64),
    Uint(u64),
    /// A double, string, bytes, ref or unset value.
    NotInt,
}

impl RawValue {
    fn of(value: StatValue<'_>) -> RawValue {
        match value {
            StatValue::Int64(v) => RawValue::Int(v),
            StatValue::Uint64(v) => RawValue::Uint(v),
            _ => RawValue::NotInt,
        }
    }

    fn of_int(value: oxprof_model::IntValue) -> RawValue {
        match value {
            oxprof_model::IntValue::Int64(v) => RawValue::Int(v),
            oxprof_model::IntValue::Uint64(v) => RawValue::Uint(v),
            oxprof_model::IntValue::NotInt => RawValue::NotInt,
        }
    }

    /// XProf's `XStatVisitor::IntValue`: the `int64_value` field (0 for other oneofs).
    pub(crate) fn int_value(self) -> i64 {
        match self {
            RawValue::Int(v) => v,
            _ => 0,
        }
    }

    /// XProf's `IntOrUintValue`: `uint64_value` for uint stats, else `int64_value` as u64.
    pub(crate) fn int_or_uint(self) -> u64 {
        match self {
            RawValue::Uint(v) => v,
            other => other.int_value() as u64,
        }
    }
}

/// Per-plane name resolution: the kind of every event metadata and stat metadata entry, and
/// the "canonical" stat metadata per kind that XProf's `GetStat(type)` looks for.
pub(crate) struct PlaneKinds {
    event_kind: Vec<EventKind>,
    event_has_type: Vec<bool>,
    stat_kind: Vec<Option<StatKind>>,
    /// XProf's `GetStatMetadataByType`: one metadata per type (with duplicated names XProf
    /// keeps an arbitrary one; oxprof keeps the first in file order).
    canonical: [Option<u32>; STAT_KIND_COUNT],
}

impl PlaneKinds {
    pub(crate) fn new(plane: &XPlane) -> PlaneKinds {
        let (event_kind, event_has_type) =
            plane.event_metadata().iter().map(|m| resolve_event_name(plane.str(m.name))).unzip();
        let mut canonical = [None; STAT_KIND_COUNT];
        let stat_kind = plane
            .stat_metadata()
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let name = plane.str(m.name);
                let kind = STAT_NAMES.iter().find(|(n, _)| *n == name).map(|&(_, k)| k);
                if let Some(k) = kind {
                    canonical[k as usize].get_or_insert(i as u32);
                }
                kind
            })
            .collect();
        PlaneKinds { event_kind, event_has_type, stat_kind, canonical }
    }

    pub(crate) fn event_kind(&self, event: &Event<'_>) -> EventKind {
        self.event_kind.get(event.metadata_id().index()).copied().unwrap_or(EventKind::Other)
    }

    pub(crate) fn event_has_type(&self, event: &Event<'_>) -> bool {
        self.event_has_type.get(event.metadata_id().index()).copied().unwrap_or(false)
    }

    /// The kind of a stat metadata entry.
    pub(crate) fn stat_kind(&self, metadata: oxprof_model::StatMetadataId) -> Option<StatKind> {
        self.stat_kind.get(metadata.index()).copied().flatten()
    }

    /// Whether the plane defines a stat metadata with this kind's name.
    pub(crate) fn has_stat(&self, kind: StatKind) -> bool {
        self.canonical[kind as usize].is_some()
    }

    /// Whether any event metadata of the plane has this kind.
    pub(crate) fn has_event_kind(&self, kind: EventKind) -> bool {
        self.event_kind.contains(&kind)
    }

    /// Reads an event's own stats once into `scan` (cleared first): XProf's `ForEachStat`
    /// view (last stat of each kind, any metadata with that name) and `GetStat` view (first
    /// stat with the canonical metadata).
    pub(crate) fn scan_into(&self, event: &Event<'_>, scan: &mut StatScan) {
        scan.clear();
        for (meta, value) in event.stats().int_values() {
            let meta = meta.index();
            let Some(kind) = self.stat_kind.get(meta).copied().flatten() else { continue };
            let k = kind as usize;
            let value = RawValue::of_int(value);
            scan.touched |= 1 << k;
            scan.last[k] = Some(value);
            if scan.first[k].is_none() && self.canonical[k] == Some(meta as u32) {
                scan.first[k] = Some(value);
            }
        }
    }

    /// [`Self::scan_into`] into a fresh scan.
    pub(crate) fn scan(&self, event: &Event<'_>) -> StatScan {
        let mut scan = StatScan::default();
        self.scan_into(event, &mut scan);
        scan
    }

    /// The string value of an event's canonical stat of this kind (XProf's `GetStat` +
    /// `StrOrRefValue`), if present.
    pub(crate) fn str_stat<'a>(&self, event: &Event<'a>, kind: StatKind) -> Option<&'a str> {
        let canonical = self.canonical[kind as usize]?;
        let stat = event.stats().find(|s| s.metadata_id().index() == canonical as usize)?;
        Some(stat.as_str().unwrap_or(""))
    }

    /// The plane-level canonical stat of this kind (`XPlaneVisitor::GetStat`).
    pub(crate) fn plane_stat(&self, plane: &XPlane, kind: StatKind) -> Option<RawValue> {
        let canonical = self.canonical[kind as usize]?;
        plane.stats().find(|s| s.metadata_id().index() == canonical as usize).map(|s| RawValue::of(s.value))
    }
}

/// One event's stats as grouping reads them (see [`PlaneKinds::scan_into`]). Reusable:
/// clearing only resets the kinds the last event had.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StatScan {
    touched: u32,
    last: [Option<RawValue>; STAT_KIND_COUNT],
    first: [Option<RawValue>; STAT_KIND_COUNT],
}

impl StatScan {
    /// Whether the event had no stat of any kind grouping reads.
    pub(crate) fn is_empty(&self) -> bool {
        self.touched == 0
    }

    fn clear(&mut self) {
        let mut touched = std::mem::take(&mut self.touched);
        while touched != 0 {
            let k = touched.trailing_zeros() as usize;
            self.last[k] = None;
            self.first[k] = None;
            touched &= touched - 1;
        }
    }

    /// `ForEachStat` semantics: the last stat of this kind.
    pub(crate) fn last(&self, kind: StatKind) -> Option<RawValue> {
        self.last[kind as usize]
    }

    /// `GetStat(type)` semantics: the first stat with the canonical metadata.
    pub(crate) fn get(&self, kind: StatKind) -> Option<RawValue> {
        self.first[kind as usize]
    }
}

/// Parses a decimal that fits `T` (RE2's integer capture: optional sign, digits).
fn parse_capture<T: std::str::FromStr>(digits: &str) -> Option<T> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// XProf's `GetTensorCoreId`: `/device:TPU:([0-9]*)$` fully matched, as an `int`.
pub(crate) fn tensor_core_id(plane_name: &str) -> Option<i32> {
    parse_capture(plane_name.strip_prefix(TPU_PLANE_PREFIX)?)
}

/// XProf's `GetSparseCoreId`: `/device:TPU:[0-9]+ SparseCore(?: [a-zA-Z]+)? ([0-9]+)$`.
pub(crate) fn sparse_core_id(plane_name: &str) -> Option<i32> {
    let rest = plane_name.strip_prefix(TPU_PLANE_PREFIX)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = rest[digits..].strip_prefix(" SparseCore ")?;
    let rest = match rest.split_once(' ') {
        Some((word, id)) if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphabetic()) => id,
        Some(_) => return None,
        None => rest,
    };
    parse_capture(rest)
}

/// XProf's `ParseDeviceOrdinal`: the number after the last `:` up to the first space
/// (`absl::SimpleAtoi` into `uint32_t`).
pub(crate) fn parse_device_ordinal(device_name: &str) -> Option<u32> {
    let tail = device_name.rfind(':').map_or(device_name, |p| &device_name[p + 1..]);
    let tail = tail.find(' ').map_or(tail, |p| &tail[..p]);
    let t = tail.trim_matches(|c: char| c.is_ascii_whitespace());
    let digits = t.strip_prefix('+').unwrap_or(t);
    parse_capture(digits)
}

/// `Timespan(begin, duration)` with XProf's unsigned arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) begin: u64,
    pub(crate) duration: u64,
}

impl Span {
    pub(crate) fn of(event: &Event<'_>) -> Span {
        Span { begin: event.timestamp_ps() as u64, duration: event.duration_ps() as u64 }
    }

    pub(crate) fn end(self) -> u64 {
        self.begin.wrapping_add(self.duration)
    }

    pub(crate) fn includes(self, other: Span) -> bool {
        self.begin <= other.begin && other.end() <= self.end()
    }

    pub(crate) fn overlaps(self, other: Span) -> bool {
        self.begin <= other.end() && other.begin <= self.end()
    }

    /// `Timespan::FromEndPoints`.
    pub(crate) fn from_end_points(begin: u64, end: u64) -> Span {
        if begin > end { Span { begin, duration: 0 } } else { Span { begin, duration: end - begin } }
    }

    /// `Timespan::ExpandToInclude`.
    pub(crate) fn expand_to_include(self, other: Span) -> Span {
        Span::from_end_points(self.begin.min(other.begin), self.end().max(other.end()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_model::schema::{is_derived_thread_id, is_device_plane, is_host_plane};

    #[test]
    fn plane_name_parsers_follow_xprof() {
        assert_eq!(tensor_core_id("/device:TPU:3"), Some(3));
        assert_eq!(tensor_core_id("/device:TPU:"), None);
        assert_eq!(tensor_core_id("/device:TPU:0 SparseCore 1"), None);
        assert_eq!(sparse_core_id("/device:TPU:0 SparseCore 1"), Some(1));
        assert_eq!(sparse_core_id("/device:TPU:0 SparseCore Foo 2"), Some(2));
        assert_eq!(sparse_core_id("/device:TPU:0"), None);
        assert_eq!(parse_device_ordinal("/device:TPU:7"), Some(7));
        assert_eq!(parse_device_ordinal("/device:TPU:7 SparseCore 1"), Some(7));
        assert!(is_derived_thread_id(0xdead_beef));
        assert!(is_derived_thread_id(0xdead_beef + 289));
        assert!(!is_derived_thread_id(1));
        assert!(is_host_plane("/host:metadata"));
        assert!(is_device_plane("/device:GPU:0"));
        assert!(!is_device_plane("Task Environment"));
        assert_eq!(resolve_event_name("EagerExecute"), (EventKind::EagerKernelExecute, true));
        assert_eq!(resolve_event_name("add:Add"), (EventKind::TfOpRun, true));
        assert_eq!(resolve_event_name("matmul"), (EventKind::Other, false));
    }
}

/// FxHash (rustc's hasher) with a final mix: fast hashing of integer keys for side maps.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }

    fn finish(&self) -> u64 {
        // Murmur3's fmix64: spreads every input bit over the low bits hashbrown indexes by.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// A `HashMap` with [`FxHasher`].
pub(crate) type FxHashMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;
/// A `HashSet` with [`FxHasher`].
pub(crate) type FxHashSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<FxHasher>>;
