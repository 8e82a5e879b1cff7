//! Requests and batches of one host (XProf's `GenerateInferenceStats`,
//! `xprof/convert/inference_stats.cc`): which grouped host events are requests (serving
//! TraceMes, or user-defined roots) and batches (`ProcessBatch`), their time spans, delays,
//! sizes and padding, and the breakdown of each request into host, device and transfer
//! time.
//!
//! XProf passes `DeviceType::kTpu` whatever the hardware, so device time comes only from
//! TensorCore `XLA Modules` events and transfers only from host transfer events; on CPU
//! and GPU a request is its latency, batching figures and idle time.

use super::{BatchDetail, BatchingParameters, HostInferenceStats, ModelIdDatabase, RequestDetail};
use crate::op_stats::event_span::{EventType, EventTypeSpan, Timespan, to_non_overlapped_events};
use crate::op_stats::step_events::tensor_core_id;
use oxprof_grouping::{EventGroups, GroupMetadata};
use oxprof_model::schema::{HOST_THREADS_PLANE_NAME, StatType, XLA_MODULE_LINE_NAME};
use oxprof_model::{Event, XPlane, XSpace};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The host event types the inference analysis reads (XProf's `HostEventType` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    BatchingSessionRun,
    SessionRun,
    RunGraph,
    TfrtModelRun,
    ServingModelRun,
    Schedule,
    ProcessBatch,
    Padding,
    ToDevice,
    FromDevice,
    ToDeviceIssue,
    ToDeviceDone,
    FromDeviceIssue,
    FromDeviceDone,
    TpuExecute,
    ProgramLaunch,
    CompleteCallbacks,
    Other,
}

fn kind_of(name: &str) -> Kind {
    match name {
        "BatchingSessionRun" => Kind::BatchingSessionRun,
        "SessionRun" => Kind::SessionRun,
        "RunGraph" => Kind::RunGraph,
        "TfrtModelRun" => Kind::TfrtModelRun,
        "ServingModelRun" => Kind::ServingModelRun,
        "ScheduleWithSplit" | "ScheduleWithoutSplit" | "ScheduleWithEagerSplit" | "ASBSQueue::Schedule" => {
            Kind::Schedule
        }
        "ProcessBatch" | "OrbaxServing::ProcessBatch" => Kind::ProcessBatch,
        "ConcatInputTensors" | "OrbaxServing::ConcatInputBuffers" | "MergeInputTensors" | "BrainSessionRun" => {
            Kind::Padding
        }
        "WriteHbm" | "TransferH2DRequest" | "TransferPreprocessedH2DRequest" => Kind::ToDevice,
        "ReadHbm" | "TransferD2HRequest" => Kind::FromDevice,
        "tpu::System::TransferToDevice=>IssueEvent" => Kind::ToDeviceIssue,
        "tpu::System::TransferToDevice=>IssueEvent=>Done" => Kind::ToDeviceDone,
        "tpu::System::TransferFromDevice=>IssueEvent" => Kind::FromDeviceIssue,
        "tpu::System::TransferFromDevice=>IssueEvent=>Done" => Kind::FromDeviceDone,
        "TPUPartitionedCallOp-ExecuteLocal"
        | "TPUPartitionedCallOp-ExecuteRemote"
        | "TPUPartitionedCallOp-InitializeVarOnTPU"
        | "tpu::System::Execute" => Kind::TpuExecute,
        "DoEnqueueProgram" | "DoEnqueueContinuationProgram" => Kind::ProgramLaunch,
        "CompleteCallbacks" => Kind::CompleteCallbacks,
        _ => Kind::Other,
    }
}

/// One grouped host event the analysis reads.
struct HostEvent<'a> {
    kind: Kind,
    group: i64,
    event: Event<'a>,
}

impl HostEvent<'_> {
    fn span(&self) -> Timespan {
        Timespan::of_event(&self.event)
    }

    fn begin(&self) -> u64 {
        self.event.timestamp_ps() as u64
    }

    /// A stat by name (event first, then its metadata), as `XEventVisitor::GetStat`.
    fn stat_i64(&self, name: &str) -> Option<i64> {
        named_stat(&self.event, name).and_then(|s| s.as_i64())
    }
}

fn named_stat<'a>(event: &Event<'a>, name: &str) -> Option<oxprof_model::Stat<'a>> {
    event.stats().find(|s| s.name() == name).or_else(|| event.metadata_stats().find(|s| s.name() == name))
}

/// The timestamps of one group inside a request (`RequestEvents::EventTimestamps`).
#[derive(Debug, Default, Clone, Copy)]
struct Stamps {
    batch_schedule: Option<u64>,
    batch_concat_input: Option<u64>,
    tpu_execute: Option<u64>,
    tpu_program_launch: Option<u64>,
    tpu_complete_callback: Option<u64>,
}

/// `RequestEvents`.
#[derive(Debug, Default)]
struct Request {
    model_id_index: i32,
    span: Timespan,
    batching_request_delay_ps: i64,
    batching_request_size: i32,
    stamps: BTreeMap<i64, Stamps>,
    related_batch_ids: Vec<i64>,
    events: Vec<EventTypeSpan>,
}

/// `BatchEvents`.
#[derive(Debug, Default)]
struct Batch {
    detail: BatchDetail,
    events: Vec<EventTypeSpan>,
}

/// `AssignIndexToModelId`: -1 for no id, else the id's index (added when new).
fn assign_model_index(model_id: &str, db: &mut ModelIdDatabase) -> i32 {
    if model_id.is_empty() {
        return -1;
    }
    if let Some(&index) = db.id_to_index.get(model_id) {
        return index;
    }
    let index = db.ids.len() as i32;
    db.ids.push(model_id.to_string());
    db.id_to_index.insert(model_id.to_string(), index);
    index
}

/// The requests and batches of one host (`GenerateInferenceStats` for host `host_id`).
pub fn host_inference_stats(space: &XSpace, groups: &EventGroups, host_id: i32) -> HostInferenceStats {
    let mut out = HostInferenceStats { host_id, ..Default::default() };
    let Some(host_index) = space.planes.iter().position(|p| p.name == HOST_THREADS_PLANE_NAME) else {
        return out;
    };
    let host = &space.planes[host_index];
    let events = grouped_host_events(host_index, host, groups);
    let group_meta = groups.groups();
    let device = device_compute_events(space, groups);

    let mut requests = build_requests(&events, group_meta, &mut out.model_id_db);
    // Set the begin and end of each request: every grouped host event of its group (a
    // pass over every host event, skipped when there is no request: training runs).
    if !requests.is_empty() {
        for (li, line) in host.lines.iter().enumerate() {
            for (event, group) in line.events(host).zip(groups.line_group_ids(host_index, li)) {
                let Some(request) = group.and_then(|g| requests.get_mut(&g)) else { continue };
                let span = Timespan::of_event(&event);
                let begin =
                    if request.span.begin_ps == 0 { span.begin_ps } else { request.span.begin_ps.min(span.begin_ps) };
                let end = request.span.end_ps().max(span.end_ps());
                request.span = Timespan::from_end_points(begin, end);
            }
        }
    }
    for e in events.iter().filter(|e| e.kind == Kind::Schedule) {
        update_stamps(group_meta, e.group, &mut requests, |s| s.batch_schedule = Some(e.begin()));
        if let Some(request) = requests.get_mut(&e.group)
            && let Some(size) = e.stat_i64("batching_input_task_size")
        {
            request.batching_request_size = size as i32;
        }
    }
    add_device_events(&events, &device, &mut |group, spans| {
        add_request_events(group_meta, group, spans, &mut requests)
    });
    add_tpu_stamps(&events, group_meta, &mut requests);

    let mut batches = build_batches(&events, group_meta, &mut requests);
    // Batches get their own group's events only (`UpdateBatchEvents`).
    add_device_events(&events, &device, &mut |group, spans| {
        if let Some(batch) = batches.get_mut(&group) {
            batch.events.extend_from_slice(spans);
        }
    });
    request_and_batch_delays(&mut requests, &mut batches);
    detailed_breakdown(&mut requests);

    for (&group, request) in &requests {
        if request.span.duration_ps == 0 {
            continue;
        }
        out.request_details.push(request_detail(group, request, host_id));
    }
    out.request_details.sort_by_key(|r| (r.end_time_ps.wrapping_sub(r.start_time_ps), r.start_time_ps));
    for batch in batches.into_values() {
        let mut detail = batch.detail;
        detail.host_id = host_id;
        detail.device_time_ps = to_non_overlapped_events(&batch.events)
            .iter()
            .filter(|e| matches!(e.event_type, EventType::DeviceCompute16 | EventType::DeviceCompute32))
            .map(|e| e.span.duration_ps)
            .fold(0u64, u64::wrapping_add);
        out.batch_details.push(detail);
    }
    out.batch_details.sort_by_key(|b| (b.end_time_ps.wrapping_sub(b.start_time_ps), b.start_time_ps));
    batching_parameters(space, &mut out.model_id_db);
    out
}

/// The host events of the kinds read, with their groups, in line order.
fn grouped_host_events<'a>(host_index: usize, host: &'a XPlane, groups: &EventGroups) -> Vec<HostEvent<'a>> {
    let kinds: Vec<Kind> = host.event_metadata().iter().map(|m| kind_of(host.str(m.name))).collect();
    let mut out = Vec::new();
    for (li, line) in host.lines.iter().enumerate() {
        for (event, group) in line.events(host).zip(groups.line_group_ids(host_index, li)) {
            // Ungrouped events are never read: no stat lookup for them.
            let Some(group) = group else { continue };
            let kind = kinds.get(event.metadata_id().index()).copied().unwrap_or(Kind::Other);
            if kind == Kind::Other && !is_user_root(&event) {
                continue;
            }
            out.push(HostEvent { kind, group, event });
        }
    }
    out
}

/// A user-defined request root: `_r` = -1, or `_r` = 1 on a `ModelServerRequest_…` event.
fn is_user_root(event: &Event<'_>) -> bool {
    let root = event.stat(StatType::IsRoot).and_then(|s| s.as_i64());
    root == Some(-1) || (root == Some(1) && event.name().starts_with("ModelServerRequest_"))
}

/// TensorCore `XLA Modules` events with a group: device compute (`DEVICE_COMPUTE_32`).
fn device_compute_events(space: &XSpace, groups: &EventGroups) -> Vec<(i64, Timespan)> {
    let mut out = Vec::new();
    for (pi, plane) in space.planes.iter().enumerate() {
        if tensor_core_id(&plane.name).is_none() {
            continue;
        }
        for (li, line) in plane.lines.iter().enumerate() {
            if line.name != XLA_MODULE_LINE_NAME {
                continue;
            }
            for (event, group) in line.events(plane).zip(groups.line_group_ids(pi, li)) {
                if let Some(group) = group {
                    out.push((group, Timespan::of_event(&event)));
                }
            }
        }
    }
    out
}

/// `UpdateRequestEvents`: the events go to the group's request and to every parent group's.
fn add_request_events(
    meta: &BTreeMap<i64, GroupMetadata>,
    group: i64,
    spans: &[EventTypeSpan],
    requests: &mut BTreeMap<i64, Request>,
) {
    if let Some(r) = requests.get_mut(&group) {
        r.events.extend_from_slice(spans);
    }
    if let Some(m) = meta.get(&group) {
        for parent in &m.parents {
            if let Some(r) = requests.get_mut(parent) {
                r.events.extend_from_slice(spans);
            }
        }
    }
}

/// `UpdateEventTimestamps`: sets a timestamp of `group` in its request and its parents'.
fn update_stamps(
    meta: &BTreeMap<i64, GroupMetadata>,
    group: i64,
    requests: &mut BTreeMap<i64, Request>,
    set: impl Fn(&mut Stamps),
) {
    if let Some(r) = requests.get_mut(&group) {
        set(r.stamps.entry(group).or_default());
    }
    let Some(m) = meta.get(&group) else { return };
    for parent in &m.parents {
        if let Some(r) = requests.get_mut(parent) {
            set(r.stamps.entry(group).or_default());
        }
    }
}

/// The device-side events of `BuildTPUDeviceEvents`: host transfers, tpu::System
/// transfer pairs and TensorCore modules, handed to `add` per group.
fn add_device_events(events: &[HostEvent<'_>], device: &[(i64, Timespan)], add: &mut dyn FnMut(i64, &[EventTypeSpan])) {
    for kind in [Kind::FromDevice, Kind::ToDevice] {
        let event_type = if kind == Kind::FromDevice { EventType::DeviceToHost } else { EventType::HostToDevice };
        for e in events.iter().filter(|e| e.kind == kind) {
            add(e.group, &[EventTypeSpan { event_type, span: e.span() }]);
        }
    }
    for (start, end, event_type) in [
        (Kind::ToDeviceIssue, Kind::ToDeviceDone, EventType::HostToDevice),
        (Kind::FromDeviceIssue, Kind::FromDeviceDone, EventType::DeviceToHost),
    ] {
        // Transfers are matched by their consumer id; a later start replaces an earlier one.
        let mut pairs: HashMap<i64, (usize, Option<usize>)> = HashMap::new();
        let mut order = Vec::new();
        for (i, e) in events.iter().enumerate().filter(|(_, e)| e.kind == start) {
            let Some(id) = e.event.stat(StatType::ConsumerId).and_then(|s| s.as_i64()) else { continue };
            if pairs.insert(id, (i, None)).is_none() {
                order.push(id);
            }
        }
        for (i, e) in events.iter().enumerate().filter(|(_, e)| e.kind == end) {
            let Some(id) = e.event.stat(StatType::ConsumerId).and_then(|s| s.as_i64()) else { continue };
            if let Some(pair) = pairs.get_mut(&id)
                && events[pair.0].begin() < e.begin()
            {
                pair.1 = Some(i);
            }
        }
        for id in order {
            let (s, Some(e)) = pairs[&id] else { continue };
            let (s, e) = (&events[s], &events[e]);
            let end_ps = e.event.end_timestamp_ps() as u64;
            let span = Timespan::new(s.begin(), end_ps.wrapping_sub(s.begin()));
            add(s.group, &[EventTypeSpan { event_type, span }]);
        }
    }
    for &(group, span) in device {
        add(group, &[EventTypeSpan { event_type: EventType::DeviceCompute32, span }]);
    }
}

/// The TPU runtime timestamps of `BuildTPUDeviceEvents` (requests only).
fn add_tpu_stamps(
    events: &[HostEvent<'_>],
    meta: &BTreeMap<i64, GroupMetadata>,
    requests: &mut BTreeMap<i64, Request>,
) {
    for e in events.iter().filter(|e| e.kind == Kind::TpuExecute) {
        update_stamps(meta, e.group, requests, |s| s.tpu_execute = Some(e.begin()));
    }
    for e in events.iter().filter(|e| e.kind == Kind::ProgramLaunch) {
        update_stamps(meta, e.group, requests, |s| {
            s.tpu_program_launch = Some(s.tpu_program_launch.map_or(e.begin(), |t| t.min(e.begin())))
        });
    }
    for e in events.iter().filter(|e| e.kind == Kind::CompleteCallbacks) {
        update_stamps(meta, e.group, requests, |s| s.tpu_complete_callback = Some(e.begin()));
    }
}

/// `BuildRequestEventsMap` up to the request spans: which groups are requests, their
/// related batches and models.
fn build_requests(
    events: &[HostEvent<'_>],
    meta: &BTreeMap<i64, GroupMetadata>,
    db: &mut ModelIdDatabase,
) -> BTreeMap<i64, Request> {
    let process_batch_groups: BTreeSet<i64> =
        events.iter().filter(|e| e.kind == Kind::ProcessBatch).map(|e| e.group).collect();
    let is_user_root = |e: &HostEvent<'_>| is_user_root(&e.event);
    // `InitializeModelIdMap`: the model id of a group, from serving events and user roots.
    let mut model_ids: HashMap<i64, String> = HashMap::new();
    for e in events
        .iter()
        .filter(|e| matches!(e.kind, Kind::SessionRun | Kind::TfrtModelRun | Kind::ServingModelRun) || is_user_root(e))
    {
        if let Some(stat) = named_stat(&e.event, "model_id") {
            model_ids.insert(e.group, stat.value.to_string());
        }
    }
    let has = |k: Kind| events.iter().any(|e| e.kind == k);
    let (batching, request_kinds): (bool, &[Kind]) = if has(Kind::BatchingSessionRun) {
        (true, &[Kind::BatchingSessionRun])
    } else if has(Kind::TfrtModelRun) {
        (false, &[Kind::TfrtModelRun])
    } else if has(Kind::ServingModelRun) {
        (false, &[Kind::ServingModelRun])
    } else {
        (false, &[Kind::SessionRun, Kind::RunGraph])
    };
    let mut requests = BTreeMap::new();
    let mut initialized = BTreeSet::new();
    let mut init = |group: i64, batching: bool, user: bool, requests: &mut BTreeMap<i64, Request>| {
        if process_batch_groups.contains(&group) || !initialized.insert(group) {
            return;
        }
        let request: &mut Request = requests.entry(group).or_default();
        let Some(m) = meta.get(&group) else { return };
        request.related_batch_ids = m.children.clone();
        request.related_batch_ids.sort_unstable();
        let model_of = |g: i64| model_ids.get(&g).map_or("", String::as_str);
        if batching {
            let Some(&child) = m.children.first() else { return };
            request.model_id_index = assign_model_index(model_of(child), db);
        } else if user {
            if let Some(id) = model_ids.get(&group) {
                request.model_id_index = assign_model_index(id, db);
            } else {
                // One model for all children, else none (XProf's loop, where a child
                // without a model resets nothing but a later one can still differ).
                if m.children.is_empty() {
                    return;
                }
                let (mut all, mut same) = (-1, true);
                for &child in &m.children {
                    let index = assign_model_index(model_of(child), db);
                    if all == -1 {
                        all = index;
                    } else if index != all {
                        same = false;
                    }
                }
                request.model_id_index = if same { all } else { -1 };
            }
        } else {
            request.model_id_index = assign_model_index(model_of(group), db);
        }
    };
    for &kind in request_kinds {
        for e in events.iter().filter(|e| e.kind == kind) {
            init(e.group, batching, false, &mut requests);
        }
    }
    for e in events.iter().filter(|e| is_user_root(e)) {
        init(e.group, false, true, &mut requests);
    }
    requests
}

/// `BuildBatchEventsMap` (without device events): batches from `ProcessBatch`, padding
/// from the padding events, models from the first related request.
fn build_batches(
    events: &[HostEvent<'_>],
    meta: &BTreeMap<i64, GroupMetadata>,
    requests: &mut BTreeMap<i64, Request>,
) -> BTreeMap<i64, Batch> {
    let mut batches: BTreeMap<i64, Batch> = BTreeMap::new();
    for e in events.iter().filter(|e| e.kind == Kind::ProcessBatch) {
        let Some(m) = meta.get(&e.group) else { continue };
        let detail = &mut batches.entry(e.group).or_default().detail;
        detail.batch_id = e.group;
        detail.start_time_ps = e.begin();
        detail.end_time_ps = e.event.end_timestamp_ps() as u64;
        detail.related_request_ids.extend_from_slice(&m.parents);
        detail.related_request_ids.sort_unstable();
    }
    for e in events.iter().filter(|e| e.kind == Kind::Padding) {
        update_stamps(meta, e.group, requests, |s| s.batch_concat_input = Some(e.begin()));
        let Some(batch) = batches.get_mut(&e.group) else { continue };
        let (Some(padding), Some(size)) = (e.stat_i64("padding_amount"), e.stat_i64("batch_size_after_padding")) else {
            continue;
        };
        batch.detail.batch_size_after_padding = size as i32;
        batch.detail.padding_amount = padding as i32;
    }
    for batch in batches.values_mut() {
        if let Some(first) = batch.detail.related_request_ids.first()
            && let Some(request) = requests.get(first)
        {
            batch.detail.model_id_index = request.model_id_index;
        }
    }
    batches
}

/// `GenerateRequestAndBatchDelay`. XProf picks the "first" and "last" batch by comparing
/// `has_start_time_ps()` flags, which are always equal: both are the first related batch.
fn request_and_batch_delays(requests: &mut BTreeMap<i64, Request>, batches: &mut BTreeMap<i64, Batch>) {
    for request in requests.values_mut() {
        let Some(batch) = request.related_batch_ids.iter().find_map(|id| batches.get(id)) else { continue };
        request.batching_request_delay_ps =
            (batch.detail.start_time_ps as i64).wrapping_sub(request.span.begin_ps as i64);
        if request.span.end_ps() < batch.detail.end_time_ps {
            request.span = Timespan::from_end_points(request.span.begin_ps, batch.detail.end_time_ps);
        }
    }
    for batch in batches.values_mut() {
        let first =
            batch.detail.related_request_ids.iter().filter_map(|id| requests.get(id)).fold(None::<&Request>, |a, r| {
                match a {
                    Some(a) if a.span.begin_ps <= r.span.begin_ps => Some(a),
                    _ => Some(r),
                }
            });
        if let Some(first) = first {
            batch.detail.batch_delay_ps = batch.detail.start_time_ps.wrapping_sub(first.span.begin_ps);
        }
    }
}

/// `GenerateRequestDetailedBreakdown`: host runtime, preprocessing, postprocessing and
/// batch formation from the timestamps.
fn detailed_breakdown(requests: &mut BTreeMap<i64, Request>) {
    for request in requests.values_mut() {
        let mut first_execute: Option<u64> = None;
        let mut first_concat: Option<u64> = None;
        let mut last_callback: Option<u64> = None;
        let mut schedule: Option<u64> = None;
        let mut added = Vec::new();
        for stamps in request.stamps.values() {
            if let Some(execute) = stamps.tpu_execute {
                first_execute = Some(first_execute.map_or(execute, |t| t.min(execute)));
                if let Some(launch) = stamps.tpu_program_launch {
                    added.push(span(EventType::HostRuntime, execute, launch));
                }
            }
            if let Some(concat) = stamps.batch_concat_input {
                first_concat = Some(first_concat.map_or(concat, |t| t.min(concat)));
            }
            if let Some(callback) = stamps.tpu_complete_callback {
                last_callback = Some(last_callback.map_or(callback, |t| t.max(callback)));
            }
            if schedule.is_none() {
                schedule = stamps.batch_schedule;
            }
        }
        request.events.extend(added);
        if let Some(execute) = first_execute {
            request.events.push(span(EventType::HostPreprocess, request.span.begin_ps, execute));
        }
        if let Some(callback) = last_callback {
            request.events.push(span(EventType::HostPostprocess, callback, request.span.end_ps()));
        } else {
            let device_end = request
                .events
                .iter()
                .filter(|e| e.event_type == EventType::DeviceCompute32)
                .map(|e| e.span.end_ps())
                .max()
                .unwrap_or(0);
            if device_end != 0 {
                request.events.push(span(EventType::HostPostprocess, device_end, request.span.end_ps()));
            }
        }
        if let (Some(schedule), Some(concat)) = (schedule, first_concat) {
            request.events.push(span(EventType::HostBatchFormation, schedule, concat));
        }
    }
}

fn span(event_type: EventType, begin: u64, end: u64) -> EventTypeSpan {
    EventTypeSpan { event_type, span: Timespan::from_end_points(begin, end) }
}

/// `RequestEventsToDetails` (TPU path): the breakdown of the request's non-overlapped
/// events.
fn request_detail(group: i64, request: &Request, host_id: i32) -> RequestDetail {
    let mut d = RequestDetail {
        request_id: group,
        model_id_index: request.model_id_index,
        start_time_ps: request.span.begin_ps,
        end_time_ps: request.span.end_ps(),
        batching_request_delay_ps: request.batching_request_delay_ps as u64,
        batching_request_size: request.batching_request_size,
        related_batch_ids: request.related_batch_ids.clone(),
        host_id,
        ..Default::default()
    };
    for e in to_non_overlapped_events(&request.events) {
        let ps = e.span.duration_ps;
        let slot = match e.event_type {
            EventType::DeviceCompute16 | EventType::DeviceCompute32 => &mut d.device_time_ps,
            EventType::HostToDevice => &mut d.write_to_device_time_ps,
            EventType::DeviceToHost => &mut d.read_from_device_time_ps,
            EventType::HostPreprocess => &mut d.host_preprocessing_ps,
            EventType::HostPostprocess => &mut d.host_postprocessing_ps,
            EventType::HostRuntime => &mut d.host_runtime_ps,
            EventType::HostBatchFormation => &mut d.host_batch_formation_ps,
            EventType::UnknownTime => {
                d.idle_time_ps += ps as i64 as f64;
                continue;
            }
            _ => continue,
        };
        *slot = slot.wrapping_add(ps);
    }
    d
}

/// `ParseTfstreamzForBatchingParameter`: the batching parameters of each model from the
/// last of the two TFStreamz snapshots.
fn batching_parameters(space: &XSpace, db: &mut ModelIdDatabase) {
    let Some(plane) = space.plane("/host:tfstreamz") else { return };
    let Some(line) = plane.lines.first() else { return };
    if line.event_count() != 2 {
        return;
    }
    let event = line.event(plane, 1);
    const PREFIX: &str = "/tensorflow/serving/batching/";
    let mut params: BTreeMap<String, BatchingParameters> = BTreeMap::new();
    for stat in event.stats() {
        let Some(detail) = stat.name().strip_prefix(PREFIX) else { continue };
        let Some(model) = parse_model_name(detail) else { continue };
        let p = params.entry(model.to_string()).or_default();
        let int = stat.as_i64().unwrap_or(0);
        if detail.starts_with("num_batch_threads") {
            p.num_batch_threads = int;
        } else if detail.starts_with("batch_timeout_micros") {
            p.batch_timeout_micros = int;
        } else if detail.starts_with("max_batch_size") {
            p.max_batch_size = int;
        } else if detail.starts_with("max_enqueued_batches") {
            p.max_enqueued_batches = int;
        } else if detail.starts_with("allowed_batch_sizes") {
            p.allowed_batch_sizes = stat.as_str().unwrap_or("").to_string();
        }
    }
    // Session ids may carry a `:<version>` the TFStreamz names lack.
    let mut by_bare: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for id in &db.ids {
        match id.rsplit_once(':') {
            None => by_bare.entry(id.clone()).or_default().push(id.clone()),
            Some((bare, version)) if version.parse::<i64>().is_ok() => {
                by_bare.entry(bare.to_string()).or_default().push(id.clone())
            }
            Some(_) => {}
        }
    }
    for (model, p) in params {
        for id in by_bare.get(&model).into_iter().flatten() {
            db.id_to_batching_params.insert(id.clone(), p.clone());
        }
    }
}

/// `ParseModelName`: the `model_name` label of `param{model_name=…[, op_name=…]}`.
pub fn parse_model_name(param: &str) -> Option<&str> {
    let begin = param.find('{')?;
    let end = param.rfind('}')?;
    if end <= begin {
        return None;
    }
    param[begin + 1..end].split(", ").find_map(|label| {
        let mut kv = label.split('=');
        match (kv.next(), kv.next(), kv.next()) {
            (Some("model_name"), Some(v), None) => Some(v),
            _ => None,
        }
    })
}
