//! XProf 2.24.2's `trace_viewer@` JSON (`streaming_trace_viewer_processor.cc`,
//! `trace_view_options.cc:LoadTraceEventsContainer`, `trace_events_to_json.h`) from
//! [`TraceIndex`]es: a time window at a resolution, one event's details, or a name-prefix
//! search; several hosts are merged with pids offset by 1000 per host.
//!
//! Window loading follows XProf's storage: levels are read coarse to fine until a level's
//! resolution is at or below the requested one (`resolution_ps = round(span / resolution)`;
//! all levels when not downsampling), level `i > 0` only from `begin − resolution(i−1)`, and
//! the loaded events are filtered, in XProf's global event order, by the visibility rule.
//! Traces with fewer than 500,000 events are not downsampled.

use super::MAX_DEVICES_PER_HOST;
use super::index::{
    DROPPED_LEVEL, EventRef, Flow, FlowEntry, LAYER_RESOLUTIONS_PS, NUM_LEVELS, REGION_BIT, TraceIndex, TrackInfo,
    TrackKind, context_type_name, has_async_flows, is_internal_stat_name, order_class, partition_positions,
    truncate_long_name, view_in,
};
use super::numfmt::stdlib_hash_bytes;
use super::tpu_groups::{ShownGroups, shown_groups};
use super::visibility::{DISABLE_STREAMING_THRESHOLD, Visibility};
use oxprof_grouping::EventGroups;
use oxprof_model::schema::TPU_PLANE_PREFIX;
use oxprof_model::{StatValue, XSpace};
use oxprof_wire::trace_events::{self, Arg, Event, Header, LegacyEvent, LegacyTraceWriter, TraceViewerWriter};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// One host's data for a request.
#[derive(Clone, Copy)]
pub struct HostTrace<'a> {
    /// The decoded XSpace.
    pub space: &'a XSpace,
    /// Its step grouping.
    pub groups: &'a EventGroups,
    /// Its trace index.
    pub index: &'a TraceIndex,
}

/// The `trace_viewer@` request options (`GetTraceViewOption`, `TraceOptions`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceViewRequest {
    /// Window start (ms); 0 = trace start.
    pub start_time_ms: f64,
    /// Window end (ms); 0 = trace end.
    pub end_time_ms: f64,
    /// Number of bins across the window; 0 = no downsampling.
    pub resolution: f64,
    /// Event details mode: the event's name.
    pub event_name: Option<String>,
    /// Event details mode: the event's duration (ms).
    pub duration_ms: f64,
    /// Event details mode: the event's serial (`z`, `uid`).
    pub unique_id: u64,
    /// Search mode: name prefix.
    pub search_prefix: Option<String>,
    /// TPU: keep intermediate DMA flow events.
    pub full_dma: bool,
    /// `mpmd_pipeline_view` detail flag (reported; the MPMD sort is not implemented).
    pub mpmd_pipeline_view: bool,
}

/// Events selected from one host: per track, positions in track order.
struct Selection {
    tracks: Vec<(u32, Vec<u32>)>,
    /// Event details mode: print full arguments instead of `uid`.
    full_args: bool,
}

/// Errors of the XProf views.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewError {
    /// Event details: no event matched.
    EventNotFound,
}

impl std::fmt::Display for ViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViewError::EventNotFound => f.write_str("Event not found"),
        }
    }
}

impl std::error::Error for ViewError {}

/// Milliseconds to picoseconds as XProf's `MilliSpan` does (`uint64(ms * 1e9)`).
fn ms_to_ps(ms: f64) -> u64 {
    if ms.is_finite() && ms > 0.0 { (ms * 1e9) as u64 } else { 0 }
}

/// The window and resolution XProf's `TraceVisibilityFilter::SetUp` settles on.
fn visible_span(index: &TraceIndex, req: &TraceViewRequest) -> ((u64, u64), u64) {
    let mut begin = ms_to_ps(req.start_time_ms);
    let requested_end = ms_to_ps(req.end_time_ms);
    let mut end = if requested_end < begin { begin } else { requested_end };
    if begin < index.min_ps {
        begin = index.min_ps;
    }
    if end == 0 || end > index.max_ps {
        end = index.max_ps;
    }
    let duration = end.saturating_sub(begin);
    let downsample = index.num_events >= DISABLE_STREAMING_THRESHOLD;
    let resolution_ps =
        if req.resolution == 0.0 || !downsample { 0 } else { (duration as f64 / req.resolution).round() as u64 };
    ((begin, duration), resolution_ps)
}

fn is_tpu_core_device(name: &str) -> bool {
    name.contains(TPU_PLANE_PREFIX)
}

/// Loads the events of a window (`DoLoadFromLevelDbTable` + the visibility filter).
fn load_window(host: &HostTrace<'_>, req: &TraceViewRequest) -> Selection {
    let index = host.index;
    let ((begin, duration), resolution_ps) = visible_span(index, req);
    let end = begin.wrapping_add(duration);
    // Levels XProf reads: 0..=last, stopping after the first level whose resolution is at or
    // below the container resolution.
    let last_level = (0..NUM_LEVELS).find(|&l| resolution_ps >= LAYER_RESOLUTIONS_PS[l]).unwrap_or(NUM_LEVELS - 1);
    let tpu_devices: Vec<u32> =
        index.devices.iter().filter(|d| is_tpu_core_device(&d.name)).map(|d| d.device_id).collect();
    // Candidates per track: positions of levels 0..=last_level within the seek bounds.
    let mut candidates: Vec<Vec<u32>> = index
        .tracks
        .iter()
        .map(|t| {
            let min_ts = |level: usize| {
                if level > 0 && begin > LAYER_RESOLUTIONS_PS[level - 1] {
                    begin - LAYER_RESOLUTIONS_PS[level - 1]
                } else {
                    0
                }
            };
            t.positions_in_levels(host.space, last_level, min_ts, end)
        })
        .collect();
    let mut visibility = Visibility::new((begin, duration), resolution_ps);
    // The visible events of a track are a subsequence of its candidates, met in their order:
    // they are written over the candidates already passed (`kept[ti]` of them), so the
    // selection needs no second array (on the 85 MB profile's whole view, ~10 MB less at
    // trace_viewer@'s peak).
    let mut kept = vec![0usize; index.tracks.len()];
    // XProf's global order: k-way merge of the tracks by the event comparator.
    let mut heap = BinaryHeap::new();
    let has_async: Vec<bool> = index.tracks.iter().map(has_async_flows).collect();
    let key = |candidates: &[Vec<u32>], ti: usize, k: usize| {
        let t = &index.tracks[ti];
        let pos = candidates[ti][k];
        let (ts, dur) = view_in(host.space, t, pos).map_or((0, 0), |v| (v.ts, v.dur));
        let (class, rid) = order_class(t, pos, has_async[ti]);
        Reverse((ts, Reverse(dur), t.device_id, class, rid, ti, k))
    };
    for (ti, c) in candidates.iter().enumerate() {
        if !c.is_empty() {
            heap.push(key(&candidates, ti, 0));
        }
    }
    while let Some(Reverse((ts, Reverse(dur), device, _, _, ti, k))) = heap.pop() {
        let t = &index.tracks[ti];
        let pos = candidates[ti][k];
        let flow = t.flow_at(pos);
        let is_thread = matches!(t.kind, Some(TrackKind::Thread { .. }));
        let filtered = if flow.is_some_and(|f| f.entry == FlowEntry::Mid) && tpu_devices.contains(&device) {
            !req.full_dma
        } else {
            !visibility.visible(ti, ts, dur, flow.map(|f| (f.id, f.entry)), is_thread)
        };
        if !filtered {
            // kept[ti] <= k: only candidates already merged are overwritten.
            candidates[ti][kept[ti]] = pos;
            kept[ti] += 1;
        }
        if k + 1 < candidates[ti].len() {
            heap.push(key(&candidates, ti, k + 1));
        }
    }
    for (track, &n) in candidates.iter_mut().zip(&kept) {
        track.truncate(n);
        track.shrink_to_fit();
    }
    Selection {
        tracks: candidates
            .into_iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(ti, v)| (ti as u32, v))
            .collect(),
        full_args: false,
    }
}

/// Event details: the event with this timestamp, serial, name and duration
/// (`DoReadFullEventFromLevelDbTable`).
fn find_event(host: &HostTrace<'_>, req: &TraceViewRequest, name: &str) -> Option<EventRef> {
    let ts = (req.start_time_ms * 1e9).round() as u64;
    let dur = (req.duration_ms * 1e9).round() as u64;
    for (ti, t) in host.index.tracks.iter().enumerate() {
        let ts_at = |pos: u32| view_in(host.space, t, pos).map_or(0, |v| v.ts);
        let all = t.len() as u32;
        let lo = partition_positions(all, |p| ts_at(p) < ts);
        let hi = partition_positions(all, |p| ts_at(p) <= ts);
        for pos in lo..hi {
            if t.is_dropped(pos) || u64::from(t.serial_at(pos)) != req.unique_id {
                continue;
            }
            let Some(v) = view_in(host.space, t, pos) else { continue };
            if v.dur == dur && v.name(host.groups) == name {
                return Some(EventRef { track: ti as u32, pos });
            }
        }
    }
    None
}

/// Search: every stored event whose name starts with the prefix, whole trace.
fn search(host: &HostTrace<'_>, prefix: &str, req: &TraceViewRequest) -> Selection {
    let index = host.index;
    let tpu_devices: Vec<u32> =
        index.devices.iter().filter(|d| is_tpu_core_device(&d.name)).map(|d| d.device_id).collect();
    let mut tracks = Vec::new();
    for (ti, t) in index.tracks.iter().enumerate() {
        // XProf returns matches in key order (level, timestamp, serial).
        let mut hits: Vec<(u8, u32)> = Vec::new();
        for (pos, &level) in (0u32..).zip(&t.level) {
            if level != DROPPED_LEVEL {
                let Some(v) = view_in(host.space, t, pos) else { continue };
                let name = match &t.kind {
                    Some(TrackKind::Counter { name }) => name.as_str(),
                    _ => v.name(host.groups),
                };
                if name.is_empty() || !name.starts_with(prefix) {
                    continue;
                }
                if !req.full_dma
                    && tpu_devices.contains(&t.device_id)
                    && t.flow_at(pos).is_some_and(|f| f.entry == FlowEntry::Mid)
                {
                    continue;
                }
                hits.push((level, pos));
            }
        }
        if !hits.is_empty() {
            hits.sort_unstable();
            tracks.push((ti as u32, hits.into_iter().map(|(_, pos)| pos).collect()));
        }
    }
    Selection { tracks, full_args: false }
}

/// One argument of an event (`TraceEventArguments.Argument`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgValue {
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(String),
}

impl ArgValue {
    /// The argument as the wire writer takes it.
    fn as_arg(&self) -> Arg<'_> {
        match self {
            ArgValue::Int(x) => Arg::Int(*x),
            ArgValue::Uint(x) => Arg::Uint(*x),
            ArgValue::Double(x) => Arg::Double(*x),
            ArgValue::Str(s) => Arg::Str(s),
        }
    }
}

/// A flow of the index as the wire writer takes it.
fn wire_flow(f: Flow) -> trace_events::Flow<'static> {
    trace_events::Flow {
        id: f.id,
        category: context_type_name(f.category),
        entry: match f.entry {
            FlowEntry::Start => trace_events::FlowEntry::Start,
            FlowEntry::Mid => trace_events::FlowEntry::Mid,
            FlowEntry::End => trace_events::FlowEntry::End,
        },
        is_async: f.is_async,
    }
}

/// The arguments XProf builds for an event (`ConvertXStatsToTraceEventArguments`):
/// `long_name` for events with a display name, then the non-internal metadata stats, then
/// the event stats (`flow`, `group_id`, `_a` and bytes values excluded).
pub(crate) fn event_args(space: &XSpace, t: &TrackInfo, pos: u32) -> Vec<(String, ArgValue)> {
    event_args_with(space, None, t, pos)
}

/// [`event_args`] plus the `step_name` stat XProf's grouping adds to step roots (appended
/// after the event's own stats, as `AddStatValue` does).
pub(crate) fn event_args_with(
    space: &XSpace,
    groups: Option<&EventGroups>,
    t: &TrackInfo,
    pos: u32,
) -> Vec<(String, ArgValue)> {
    let mut args = Vec::new();
    let Some(v) = view_in(space, t, pos) else { return args };
    let Some(e) = v.event else {
        if let Some(long) = t.derived_long_name(pos) {
            args.push(("long_name".to_string(), ArgValue::Str(truncate_long_name(long).into_owned())));
        }
        // A "Host Offload Ops" event: the stats XProf copies from its ops' metadata.
        let offload = t
            .src_at(pos)
            .and_then(|src| src.checked_sub(REGION_BIT))
            .and_then(|region| t.derived_name_ids.get(region as usize))
            .and_then(|&id| t.derived_names.as_ref()?.offload_args(id));
        if let Some(o) = offload {
            if let Some(bytes) = o.raw_bytes_accessed {
                args.push(("raw_bytes_accessed".to_string(), ArgValue::Int(bytes)));
            }
            if let Some(shape) = &o.shape_with_layout {
                args.push(("shape_with_layout".to_string(), ArgValue::Str(shape.clone())));
            }
        }
        return args;
    };
    if e.metadata().display_name != oxprof_model::StrId::EMPTY {
        args.push(("long_name".to_string(), ArgValue::Str(truncate_long_name(e.name()).into_owned())));
    }
    for s in e.metadata_stats().chain(e.stats()) {
        let name = s.name();
        if is_internal_stat_name(name) {
            continue;
        }
        let value = match s.value {
            StatValue::Int64(x) => {
                if matches!(name, "flow" | "group_id" | "_a") {
                    continue;
                }
                ArgValue::Int(x)
            }
            StatValue::Uint64(x) => {
                if matches!(name, "flow" | "group_id" | "_a") {
                    continue;
                }
                ArgValue::Uint(x)
            }
            StatValue::Double(x) => ArgValue::Double(x),
            StatValue::Str(x) | StatValue::Ref(x) => ArgValue::Str(x.to_string()),
            _ => continue,
        };
        args.push((name.to_string(), value));
    }
    if let Some(groups) = groups
        && let Some(step) = groups.step_name(v.plane_index, v.line_index, e.index())
        && !args.iter().any(|(k, _)| k == "step_name")
    {
        args.push(("step_name".to_string(), ArgValue::Str(step.to_string())));
    }
    args
}

/// Whether an argument is interned as a `"@@"` stack frame (`MaybeInternTraceArgument`).
fn is_stack_frame_arg(name: &str, value: &ArgValue) -> bool {
    matches!(value, ArgValue::Str(s) if s.len() > 16) && (name == "long_name" || name == "hlo_text")
}

/// Hands the selected events of several hosts to the wire writer.
struct EventSource<'a> {
    hosts: &'a [HostTrace<'a>],
    /// Stack frame ids by fingerprint.
    frame_ids: BTreeMap<u64, u64>,
    /// Per host: group ids the trace shows instead of the grouping's (TPU module lines).
    shown_groups: Vec<ShownGroups>,
}

impl EventSource<'_> {
    fn write_event(&self, w: &mut TraceViewerWriter<'_>, host: usize, pid: u32, ti: u32, pos: u32, full_args: bool) {
        let h = self.hosts[host];
        let Some(t) = h.index.tracks.get(ti as usize) else { return };
        let Some(v) = view_in(h.space, t, pos) else { return };
        let shown = match v.event {
            Some(e) => self.shown_groups.get(host).and_then(|s| s.get(v.plane_index, v.line_index, e.index())),
            None => None,
        };
        // Event details: every argument, the first interned stack frame found by its id.
        let mut stack_frame = None;
        let mut args: Vec<(String, ArgValue)> = Vec::new();
        if full_args {
            for (name, value) in event_args_with(h.space, Some(h.groups), t, pos) {
                match value {
                    ArgValue::Str(s) if is_stack_frame_arg(&name, &value) => {
                        let frame = format!("@@{s}");
                        if stack_frame.is_none() {
                            stack_frame = self.frame_ids.get(&stdlib_hash_bytes(frame.as_bytes())).copied();
                            continue;
                        }
                        args.push((name, ArgValue::Str(frame)));
                    }
                    value => args.push((name, value)),
                }
            }
        }
        let args: Vec<(&str, Arg<'_>)> = args.iter().map(|(name, value)| (name.as_str(), value.as_arg())).collect();
        w.event(&Event {
            pid,
            tid: t.resource_id().unwrap_or(0),
            name: v.name(h.groups),
            ts_ps: v.ts,
            dur_ps: v.dur,
            flow: t.flow_at(pos).map(wire_flow),
            group_id: shown.or_else(|| v.group_id(h.groups)),
            args: full_args.then_some(&args[..]),
            stack_frame,
            serial: u64::from(t.serial_at(pos)),
        });
    }

    /// A counter series (`AddCounterEvent`): the samples of one counter track.
    fn write_counter(&self, w: &mut TraceViewerWriter<'_>, host: usize, pid: u32, ti: u32, positions: &[u32]) {
        let h = self.hosts[host];
        let Some(t) = h.index.tracks.get(ti as usize) else { return };
        let first_args = positions.first().map(|&p| event_args(h.space, t, p)).unwrap_or_default();
        w.begin_counter(pid, t.counter_name().unwrap_or(""), first_args.first().map(|(arg, _)| arg.as_str()));
        for &pos in positions {
            let args = event_args(h.space, t, pos);
            if args.is_empty() {
                continue;
            }
            let Some(v) = view_in(h.space, t, pos) else { continue };
            let values: Vec<(&str, Arg<'_>)> =
                args.iter().map(|(name, value)| (name.as_str(), value.as_arg())).collect();
            w.counter_sample(v.ts, &values);
        }
        w.end_counter(positions.len());
    }
}

/// The events a `trace_viewer@` request selects, ready to be written ([`trace_view`]).
pub struct TraceView {
    selections: Vec<Selection>,
}

impl TraceView {
    /// Number of events the body will carry.
    pub fn num_events(&self) -> usize {
        self.selections.iter().map(|s| s.tracks.iter().map(|(_, p)| p.len()).sum::<usize>()).sum()
    }

    /// Writes the JSON body to `sink` in pieces of about a megabyte (the same bytes as
    /// [`trace_viewer_json`]). `hosts` and `req` must be those the view was made from.
    pub fn write(
        &self,
        hosts: &[HostTrace<'_>],
        req: &TraceViewRequest,
        sink: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        render(hosts, &self.selections, req, sink)
    }
}

/// Selects the events of XProf's `trace_viewer@` for the hosts (host `i` has pids offset
/// by `1000 (i + 1)`), in one of XProf's three modes: event details (`event_name`),
/// search (`search_prefix`), or a window.
pub fn trace_view(hosts: &[HostTrace<'_>], req: &TraceViewRequest) -> Result<TraceView, ViewError> {
    let selections: Vec<Selection> = if let Some(name) = req.event_name.as_deref().filter(|n| !n.is_empty()) {
        let found: Vec<Selection> = hosts
            .iter()
            .map(|h| match find_event(h, req, name) {
                Some(r) => Selection { tracks: vec![(r.track, vec![r.pos])], full_args: true },
                None => Selection { tracks: Vec::new(), full_args: true },
            })
            .collect();
        if found.iter().all(|s| s.tracks.is_empty()) {
            return Err(ViewError::EventNotFound);
        }
        found
    } else if let Some(prefix) = req.search_prefix.as_deref().filter(|p| !p.is_empty()) {
        hosts.iter().map(|h| search(h, prefix, req)).collect()
    } else {
        hosts.iter().map(|h| load_window(h, req)).collect()
    };
    Ok(TraceView { selections })
}

/// Renders XProf's `trace_viewer@` JSON for the hosts ([`trace_view`], then
/// [`TraceView::write`] into memory).
pub fn trace_viewer_json(hosts: &[HostTrace<'_>], req: &TraceViewRequest) -> Result<String, ViewError> {
    let view = trace_view(hosts, req)?;
    let mut body = Vec::new();
    // Writing into memory cannot fail, and every piece written is UTF-8 text.
    let _ = view.write(hosts, req, &mut body);
    Ok(String::from_utf8(body).unwrap_or_default())
}

fn render(
    hosts: &[HostTrace<'_>],
    selections: &[Selection],
    req: &TraceViewRequest,
    sink: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let details_mode = selections.iter().any(|s| s.full_args);
    // Stack frames: the whole name table, or (event details) only the event's own.
    let mut frames: BTreeMap<u64, String> = BTreeMap::new();
    if details_mode {
        for (hi, sel) in selections.iter().enumerate() {
            for (ti, positions) in &sel.tracks {
                let Some(t) = hosts[hi].index.tracks.get(*ti as usize) else { continue };
                for &pos in positions {
                    for (name, value) in event_args(hosts[hi].space, t, pos) {
                        if is_stack_frame_arg(&name, &value)
                            && let ArgValue::Str(s) = value
                        {
                            let s = format!("@@{s}");
                            frames.insert(stdlib_hash_bytes(s.as_bytes()), s);
                        }
                    }
                }
            }
        }
    } else {
        for h in hosts {
            frames.extend(h.index.stack_frames.iter().cloned());
        }
    }
    let frame_ids: BTreeMap<u64, u64> = frames.keys().enumerate().map(|(i, &fp)| (fp, i as u64 + 1)).collect();
    let stack_frames: Vec<(u64, &str)> = frames
        .iter()
        .map(|(fp, name)| (frame_ids.get(fp).copied().unwrap_or(0), name.strip_prefix("@@").unwrap_or(name)))
        .collect();
    let is_tpu = hosts.iter().any(|h| h.index.devices.iter().any(|d| is_tpu_core_device(&d.name)));
    let returned: usize = selections.iter().map(|s| s.tracks.iter().map(|(_, p)| p.len()).sum::<usize>()).sum();
    let min_ps = hosts.iter().map(|h| h.index.min_ps).min().unwrap_or(0);
    let max_ps = hosts.iter().map(|h| h.index.max_ps).max().unwrap_or(0);
    let header = Header {
        mpmd_pipeline_view: req.mpmd_pipeline_view,
        full_dma: is_tpu.then_some(req.full_dma),
        returned_events: returned,
        full_span_ps: (min_ps, max_ps),
        stack_frames: &stack_frames,
    };
    let mut w = TraceViewerWriter::new(sink, &header, 256 + returned * 160);
    let source =
        EventSource { hosts, frame_ids, shown_groups: hosts.iter().map(|h| shown_groups(h.space, h.groups)).collect() };
    // Metadata events: every device of every host, by merged pid.
    let mut devices: Vec<(u32, usize, usize)> = Vec::new();
    for (hi, h) in hosts.iter().enumerate() {
        let offset = MAX_DEVICES_PER_HOST * (hi as u32 + 1);
        for (di, d) in h.index.devices.iter().enumerate() {
            devices.push((d.device_id + offset, hi, di));
        }
    }
    devices.sort_unstable();
    for &(pid, hi, di) in &devices {
        let d = &hosts[hi].index.devices[di];
        w.process(pid, &d.name, d.resources.len());
        for r in &d.resources {
            w.thread(pid, r.resource_id, &r.name);
        }
    }
    // Events, by merged pid, counters first, then threads.
    let mut order: Vec<(u32, u8, u32, usize, usize)> = Vec::new();
    for (hi, sel) in selections.iter().enumerate() {
        let offset = MAX_DEVICES_PER_HOST * (hi as u32 + 1);
        for (k, (ti, _)) in sel.tracks.iter().enumerate() {
            let Some(t) = hosts[hi].index.tracks.get(*ti as usize) else { continue };
            let class = u8::from(t.resource_id().is_some());
            order.push((t.device_id + offset, class, t.resource_id().unwrap_or(0), hi, k));
        }
    }
    order.sort_unstable();
    for (pid, class, _, hi, k) in order {
        let (ti, positions) = &selections[hi].tracks[k];
        if class == 0 {
            source.write_counter(&mut w, hi, pid, *ti, positions);
            continue;
        }
        for &pos in positions {
            source.write_event(&mut w, hi, pid, *ti, pos, selections[hi].full_args);
        }
    }
    w.finish()
}

/// Parses XProf's request parameters (`start_time_ms`, `end_time_ms`, `resolution`,
/// `event_name`, `duration_ms`, `unique_id`, `search_prefix`, `full_dma`,
/// `mpmd_pipeline_view`).
pub fn parse_request(get: impl Fn(&str) -> Option<String>) -> Result<TraceViewRequest, String> {
    let num = |key: &str, default: f64| -> Result<f64, String> {
        match get(key) {
            None => Ok(default),
            Some(s) if s.trim().is_empty() => Ok(default),
            Some(s) => s.trim().parse::<f64>().map_err(|_| format!("wrong arguments: {key}={s}")),
        }
    };
    let flag = |key: &str| get(key).is_some_and(|v| matches!(v.trim(), "true" | "1" | "True"));
    Ok(TraceViewRequest {
        start_time_ms: num("start_time_ms", 0.0)?,
        end_time_ms: num("end_time_ms", 0.0)?,
        resolution: num("resolution", 0.0)?.trunc(),
        event_name: get("event_name"),
        duration_ms: num("duration_ms", 0.0)?,
        unique_id: num("unique_id", 0.0)? as u64,
        search_prefix: get("search_prefix"),
        full_dma: flag("full_dma"),
        mpmd_pipeline_view: flag("mpmd_pipeline_view"),
    })
}

/// XProf's legacy `trace_viewer` body (`xplane_to_trace_events.cc` + the Python
/// `TraceEventsJsonStream`): one host, every event (capped at 5,000,000, the earliest kept),
/// all arguments as strings, Python's `json.dumps(sort_keys=True)` layout, pids without
/// the multi-host offset.
pub fn legacy_trace_json(host: &HostTrace<'_>) -> String {
    let mut body = Vec::new();
    // Writing into memory cannot fail, and every piece written is UTF-8 text.
    let _ = write_legacy_trace_json(host, &mut body);
    String::from_utf8(body).unwrap_or_default()
}

/// [`legacy_trace_json`] written to `sink` in pieces of about a megabyte.
pub fn write_legacy_trace_json(host: &HostTrace<'_>, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
    const MAX_EVENTS: usize = 5_000_000;
    let index = host.index;
    let mut w = LegacyTraceWriter::new(sink);
    for d in &index.devices {
        // The legacy trace names processes by plane only.
        let plane_name = d.name.strip_prefix(index.hostname.as_str()).map_or(d.name.as_str(), str::trim_start);
        w.process(d.device_id, plane_name);
        for r in &d.resources {
            w.thread(d.device_id, r.resource_id, &r.name);
        }
    }
    // The cap keeps the earliest events by timestamp.
    let mut all: Vec<(u64, u32, u32)> = Vec::new();
    for (ti, t) in index.tracks.iter().enumerate() {
        if t.resource_id().is_none() {
            continue;
        }
        for pos in 0..t.len() as u32 {
            if let Some(v) = view_in(host.space, t, pos) {
                all.push((v.ts, ti as u32, pos));
            }
        }
    }
    if all.len() > MAX_EVENTS {
        all.sort_unstable();
        all.truncate(MAX_EVENTS);
        all.sort_unstable_by_key(|&(_, ti, pos)| (ti, pos));
    }
    for (_, ti, pos) in all {
        let t = &index.tracks[ti as usize];
        let Some(v) = view_in(host.space, t, pos) else { continue };
        let mut args = event_args_with(host.space, Some(host.groups), t, pos);
        if let Some(g) = v.group_id(host.groups) {
            args.push(("group_id".to_string(), ArgValue::Int(g)));
        }
        // The flow stat as `XFlow::ToStatValue` (direction, id, category).
        if let Some(f) = t.flow_at(pos) {
            let direction: u64 = match f.entry {
                FlowEntry::End => 1,
                FlowEntry::Start => 2,
                FlowEntry::Mid => 3,
            };
            let encoded = direction | (f.id << 2) | (u64::from(f.category) << 58);
            args.push(("flow".to_string(), ArgValue::Uint(encoded)));
        }
        // XProf's args are a map: a later stat of the same name (event stats come after
        // metadata stats) replaces an earlier one.
        let args: BTreeMap<String, ArgValue> = args.into_iter().collect();
        let args: Vec<(&str, Arg<'_>)> = args.iter().map(|(k, value)| (k.as_str(), value.as_arg())).collect();
        w.event(&LegacyEvent {
            pid: t.device_id,
            tid: t.resource_id().unwrap_or(0),
            name: v.name(host.groups),
            ts_ps: v.ts,
            dur_ps: v.dur,
            args: &args,
        });
    }
    w.finish()
}
