//! oxprof's level-of-detail trace API for the UI: any window at any zoom returns a bounded
//! number of drawable items per track, with what was left out counted, and exact events
//! once few enough are in the window. No event cap: every event stays reachable by
//! zooming, by search (whole trace) and by id.
//!
//! The summary reuses the index's zoom levels (XProf's 13 resolutions, each event stored at
//! the coarsest level at which it is visible). For a window of span `S` drawn `W` bins
//! wide the resolution is `r = S / W`; only levels with resolution ≥ `r` are read (binary
//! searches per level), then XProf's visibility rule at `r` keeps per row and nesting depth
//! events that are ≥ `r` long or ≥ `r` apart. That bounds the items to about `2 W` per
//! depth, whatever the event count:
//!
//! ```text
//! window      |<----------------------- S ----------------------->|
//! bins        |  r  |  r  |  r  |  r  | ...                    W  |
//! level ≤ L   [=====]  [=]      [====]  [=]    (events ≥ r or ≥ r apart)
//! hidden      ·· · ·· ·   ·· ·  ·   ·· ·      (counted per track, not sent)
//! ```
//!
//! When a track has at most `exact_limit` events in the window, all of them are returned
//! (`exact: true`).

use super::index::is_internal_stat_name;
use super::index::{
    DROPPED_LEVEL, EventRef, FlowEntry, LAYER_RESOLUTIONS_PS, NUM_LEVELS, TraceIndex, TrackInfo, TrackKind,
    partition_positions, view_in,
};
use super::tpu_groups::shown_groups;
use super::visibility::Visibility;
use super::xprof::{ArgValue, event_args};
use oxprof_grouping::EventGroups;
use oxprof_model::XSpace;
use serde::Serialize;
use std::collections::HashMap;

/// Default number of bins across the window.
pub const DEFAULT_WIDTH: u32 = 2000;
/// Default: tracks with at most this many events in the window are sent exactly.
pub const DEFAULT_EXACT_LIMIT: usize = 5000;
/// Default number of search matches returned.
pub const DEFAULT_SEARCH_LIMIT: usize = 1000;

/// One host's data.
#[derive(Clone, Copy)]
pub struct LodHost<'a> {
    /// The decoded XSpace.
    pub space: &'a XSpace,
    /// Its grouping.
    pub groups: &'a EventGroups,
    /// Its index.
    pub index: &'a TraceIndex,
}

/// The track list: one section per process, one track per thread or counter.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TrackList {
    /// Host name.
    pub host: String,
    /// Earliest event start (ps).
    pub start_ps: u64,
    /// Latest event end (ps).
    pub end_ps: u64,
    /// Number of events of the host.
    pub num_events: usize,
    /// The hosts shown, in order (one for a single-host trace).
    pub hosts: Vec<HostSummary>,
    /// Processes.
    pub sections: Vec<Section>,
}

/// One host of a (possibly multi-host) track list.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HostSummary {
    /// Host name.
    pub name: String,
    /// Its earliest event start (ps, on its own clock as recorded).
    pub start_ps: u64,
    /// Its latest event end (ps).
    pub end_ps: u64,
    /// Its number of events.
    pub num_events: usize,
}

/// A process.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Section {
    /// XProf's pid: the device id for one host; with several hosts offset by
    /// [`super::MAX_DEVICES_PER_HOST`] × (host index + 1), as XProf merges hosts.
    pub pid: u32,
    /// The host (profile file) the process belongs to.
    pub host: String,
    /// `"<host> <plane>"`.
    pub name: String,
    /// What the profiler's own users call the process, where it differs from the plane
    /// name: PyTorch traces' `GPU 0 · NVIDIA A100` and `CPU · python3 (pid 7)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its tracks, in display order.
    pub tracks: Vec<TrackSummary>,
}

/// A track.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TrackSummary {
    /// Track id (use in requests).
    pub id: u32,
    /// `thread` or `counter`.
    pub kind: &'static str,
    /// Thread id (threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
    /// Thread name or counter name.
    pub name: String,
    /// Number of events.
    pub num_events: usize,
}

/// A window request.
#[derive(Debug, Clone, PartialEq)]
pub struct LodRequest {
    /// Window start (ps); `None`: trace start.
    pub start_ps: Option<u64>,
    /// Window end (ps); `None`: trace end.
    pub end_ps: Option<u64>,
    /// Bins across the window (pixels).
    pub width: u32,
    /// Tracks to return (`None`: all).
    pub tracks: Option<Vec<u32>>,
    /// Tracks with at most this many events in the window are returned exactly.
    pub exact_limit: usize,
}

impl Default for LodRequest {
    fn default() -> Self {
        LodRequest {
            start_ps: None,
            end_ps: None,
            width: DEFAULT_WIDTH,
            tracks: None,
            exact_limit: DEFAULT_EXACT_LIMIT,
        }
    }
}

/// A window response.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LodResponse {
    /// Window start (ps).
    pub start_ps: u64,
    /// Window end (ps).
    pub end_ps: u64,
    /// Resolution used (ps per bin).
    pub resolution_ps: u64,
    /// Event names, referenced by index from the events.
    pub names: Vec<String>,
    /// Per requested track.
    pub tracks: Vec<LodTrack>,
    /// Events in the window over all returned tracks.
    pub total_in_window: usize,
    /// Events returned.
    pub total_returned: usize,
    /// Events in the window not returned (merged into the drawn ones at this zoom).
    pub total_hidden: usize,
}

/// One track of a window response.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LodTrack {
    /// Track id.
    pub id: u32,
    /// True when every event of the window is returned.
    pub exact: bool,
    /// Events overlapping the window.
    pub in_window: usize,
    /// Events not returned.
    pub hidden: usize,
    /// Drawable events (threads), time-sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<LodEvent>,
    /// Counter samples `[ts_ps, value]` (counters).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<(u64, f64)>,
}

/// A drawable event.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LodEvent {
    /// Event id (for details).
    pub id: u64,
    /// Index into [`LodResponse::names`].
    pub name: u32,
    /// Start (ps).
    pub ts_ps: u64,
    /// Duration (ps).
    pub dur_ps: u64,
    /// Flow binding: `[flow id, "start"|"mid"|"end"]` (the id as a decimal string).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "flow_ids::binding")]
    pub flow: Option<(u64, &'static str)>,
}

/// Event details.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EventDetails {
    /// Event id.
    pub id: u64,
    /// Track id.
    pub track: u32,
    /// pid.
    pub pid: u32,
    /// tid (threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
    /// Name.
    pub name: String,
    /// Start (ps).
    pub ts_ps: u64,
    /// Duration (ps).
    pub dur_ps: u64,
    /// Step (group) id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<i64>,
    /// XProf's serial among equal timestamps.
    pub serial: u32,
    /// Flow binding (the id as a decimal string).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "flow_ids::binding")]
    pub flow: Option<(u64, &'static str)>,
    /// Arguments (stats), as XProf shows them.
    pub args: serde_json::Map<String, serde_json::Value>,
}

/// Search results.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchResponse {
    /// The prefix searched (prefix searches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The text searched (substring searches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    /// Whether argument values were searched too.
    pub args: bool,
    /// Matches in the whole trace.
    pub total: usize,
    /// True when `matches` holds fewer than `total`.
    pub truncated: bool,
    /// The first matches by time.
    pub matches: Vec<SearchMatch>,
}

/// One search match.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchMatch {
    /// Event id.
    pub id: u64,
    /// Track id.
    pub track: u32,
    /// Name.
    pub name: String,
    /// Start (ps).
    pub ts_ps: u64,
    /// Duration (ps).
    pub dur_ps: u64,
    /// The argument whose value matched, when the name did not (argument searches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arg: Option<String>,
}

/// What a search looks for.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchQuery {
    /// Names starting with this text, case-sensitive (the route's `prefix`, as XProf's
    /// `search_prefix`).
    Prefix(String),
    /// Names containing this text, ignoring case; with `args`, string argument values too
    /// (`long_name`, `hlo_op`, shapes, …).
    Text {
        /// The text.
        text: String,
        /// Search argument values too.
        args: bool,
    },
}

/// The events of one flow.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlowResponse {
    /// Flow id (serialized as a decimal string).
    #[serde(serialize_with = "flow_ids::id")]
    pub flow: u64,
    /// Its events, by time.
    pub events: Vec<SearchMatch>,
}

/// Flow ids are 56-bit and JavaScript numbers are exact only up to 2^53, so the LOD API
/// writes them as decimal strings. (XProf's `/data` bodies are not affected.)
mod flow_ids {
    use serde::{Serialize, Serializer};

    pub(super) fn id<S: Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(id)
    }

    pub(super) fn binding<S: Serializer>(binding: &Option<(u64, &'static str)>, s: S) -> Result<S::Ok, S::Error> {
        match binding {
            Some((id, entry)) => (id.to_string(), entry).serialize(s),
            None => s.serialize_none(),
        }
    }
}

fn entry_name(e: FlowEntry) -> &'static str {
    match e {
        FlowEntry::Start => "start",
        FlowEntry::Mid => "mid",
        FlowEntry::End => "end",
    }
}

/// PyTorch's name of a process of a PyTorch trace (the importer keeps Kineto's top-level
/// `schemaVersion` as a stat of `/host:CPU`): `GPU 0 · <device name>` for
/// `/device:GPU:0`, `CPU · <process name> (pid N)` for `/host:CPU`. `None` for other
/// profiles, whose users know XProf's plane names.
fn pytorch_label(space: &XSpace, plane_name: &str) -> Option<String> {
    use oxprof_model::schema::{GPU_PLANE_PREFIX, HOST_THREADS_PLANE_NAME};
    let stat = |plane: &str, name: &str| {
        let plane = space.planes.iter().find(|p| p.name == plane)?;
        plane.stats().find(|s| s.name() == name).map(|s| s.value.to_string()).filter(|v| !v.is_empty())
    };
    stat(HOST_THREADS_PLANE_NAME, "schemaVersion")?;
    if let Some(ordinal) = plane_name.strip_prefix(GPU_PLANE_PREFIX) {
        return Some(match stat(plane_name, "name") {
            Some(device) => format!("GPU {ordinal} · {device}"),
            None => format!("GPU {ordinal}"),
        });
    }
    if plane_name != HOST_THREADS_PLANE_NAME {
        return None;
    }
    Some(match (stat(plane_name, "process_name"), stat(plane_name, "pid")) {
        (Some(process), Some(pid)) => format!("CPU · {process} (pid {pid})"),
        (Some(process), None) => format!("CPU · {process}"),
        (None, Some(pid)) => format!("CPU · pid {pid}"),
        (None, None) => "CPU".to_string(),
    })
}

/// The track list.
pub fn track_list(host: &LodHost<'_>) -> TrackList {
    let index = host.index;
    let sections = index
        .devices
        .iter()
        .map(|d| Section {
            pid: d.device_id,
            host: index.hostname.clone(),
            name: d.name.clone(),
            label: d
                .name
                .strip_prefix(&format!("{} ", index.hostname))
                .and_then(|plane| pytorch_label(host.space, plane)),
            tracks: index
                .tracks
                .iter()
                .enumerate()
                .filter(|(_, t)| t.device_id == d.device_id)
                .map(|(i, t)| match &t.kind {
                    Some(TrackKind::Counter { name }) => TrackSummary {
                        id: i as u32,
                        kind: "counter",
                        tid: None,
                        name: name.clone(),
                        num_events: t.len(),
                    },
                    _ => {
                        let tid = t.resource_id();
                        let name = d
                            .resources
                            .iter()
                            .find(|r| Some(r.resource_id) == tid)
                            .map(|r| r.name.clone())
                            .unwrap_or_default();
                        TrackSummary { id: i as u32, kind: "thread", tid, name, num_events: t.len() }
                    }
                })
                .collect(),
        })
        .collect();
    TrackList {
        host: index.hostname.clone(),
        start_ps: index.min_ps,
        end_ps: index.max_ps,
        num_events: index.num_events,
        hosts: vec![HostSummary {
            name: index.hostname.clone(),
            start_ps: index.min_ps,
            end_ps: index.max_ps,
            num_events: index.num_events,
        }],
        sections,
    }
}

/// Positions of a track's events of levels `0..=last` overlapping `[begin, end]`, sorted.
fn window_positions(space: &XSpace, t: &TrackInfo, begin: u64, end: u64, last: usize) -> Vec<u32> {
    // Events of level > 0 are shorter than the previous level's resolution (else they
    // would be visible there), so they start at most that much before the window.
    let reach = |level: usize| if level == 0 { t.max_duration_ps } else { LAYER_RESOLUTIONS_PS[level - 1] };
    let mut out = t.positions_in_levels(space, last, |level| begin.saturating_sub(reach(level)), end);
    // Events starting at or after `begin` overlap the window; earlier ones if they reach in.
    let ts_at = |pos: u32| view_in(space, t, pos).map_or(0, |v| v.ts);
    let starts_inside = partition_positions(t.count, |p| ts_at(p) < begin);
    out.retain(|&pos| {
        pos >= starts_inside || view_in(space, t, pos).is_some_and(|v| v.ts.wrapping_add(v.dur) >= begin)
    });
    out
}

/// Number of events of a track overlapping `[begin, end]` (all levels).
fn count_in_window(space: &XSpace, t: &TrackInfo, begin: u64, end: u64) -> usize {
    let ts_at = |pos: u32| view_in(space, t, pos).map_or(0, |v| v.ts);
    let mid = partition_positions(t.count, |p| ts_at(p) < begin);
    let hi = partition_positions(t.count, |p| ts_at(p) <= end);
    // Events starting inside the window count from their level bytes alone (no event
    // reads); earlier ones only if they reach into it.
    let inside = t
        .level
        .get(mid as usize..hi as usize)
        .map_or(0, |levels| levels.iter().filter(|&&l| l != DROPPED_LEVEL).count());
    let reaching =
        window_positions(space, t, begin, begin, NUM_LEVELS - 1).into_iter().filter(|&pos| pos < mid).count();
    inside + reaching
}

/// A window at a zoom.
pub fn window(host: &LodHost<'_>, req: &LodRequest) -> LodResponse {
    let index = host.index;
    let begin = req.start_ps.unwrap_or(index.min_ps).max(index.min_ps);
    let end = req.end_ps.unwrap_or(index.max_ps).min(index.max_ps).max(begin);
    let resolution_ps = resolution_of(begin, end, req.width);
    let selected: Vec<usize> = match &req.tracks {
        Some(ids) => ids.iter().map(|&i| i as usize).filter(|&i| i < index.tracks.len()).collect(),
        None => (0..index.tracks.len()).collect(),
    };
    let part = window_part(host, begin, end, resolution_ps, &selected, req.exact_limit);
    LodResponse {
        start_ps: begin,
        end_ps: end,
        resolution_ps,
        total_in_window: part.total_in_window,
        total_returned: part.total_returned,
        total_hidden: part.total_in_window.saturating_sub(part.total_returned),
        names: part.names,
        tracks: part.tracks,
    }
}

/// `(end − begin) / width`, at least 1 ps.
pub(crate) fn resolution_of(begin: u64, end: u64, width: u32) -> u64 {
    ((end - begin) / u64::from(width.max(1))).max(1)
}

/// The tracks of one host's window (track ids and event ids of that host; names indexing
/// `names`).
pub(crate) struct WindowPart {
    pub(crate) names: Vec<String>,
    pub(crate) tracks: Vec<LodTrack>,
    pub(crate) total_in_window: usize,
    pub(crate) total_returned: usize,
}

/// The `selected` tracks of one host over `[begin, end]` at `resolution_ps` (the window
/// need not lie within the host's own time range: several hosts share one window).
pub(crate) fn window_part(
    host: &LodHost<'_>,
    begin: u64,
    end: u64,
    resolution_ps: u64,
    selected: &[usize],
    exact_limit: usize,
) -> WindowPart {
    // Read levels whose resolution is at least `resolution_ps` (plus the first finer one,
    // whose events may still be ≥ r apart).
    let last = (0..NUM_LEVELS).find(|&l| LAYER_RESOLUTIONS_PS[l] <= resolution_ps).unwrap_or(NUM_LEVELS - 1);
    // Per track, in parallel: the window's positions, then their drawable events with
    // names numbered per track; the names are merged into one list afterwards.
    let per_track: Vec<(usize, LodTrackRaw, TrackEvents<'_>)> = {
        use rayon::prelude::*;
        selected
            .par_iter()
            .map(|&ti| {
                let raw = track_window(host, ti, begin, end, resolution_ps, last, exact_limit);
                let events = track_events(host, ti, &raw.positions);
                (ti, raw, events)
            })
            .collect()
    };
    let mut names: Vec<String> = Vec::new();
    let mut name_ids: HashMap<&str, u32> = HashMap::new();
    let mut tracks = Vec::with_capacity(per_track.len());
    let (mut total_in, mut total_ret) = (0, 0);
    for (ti, raw, mut drawn) in per_track {
        let global: Vec<u32> = drawn
            .names
            .iter()
            .map(|&name| {
                let next = names.len() as u32;
                *name_ids.entry(name).or_insert_with(|| {
                    names.push(name.to_string());
                    next
                })
            })
            .collect();
        for e in &mut drawn.events {
            e.name = global[e.name as usize];
        }
        let returned = raw.positions.len();
        total_in += raw.in_window;
        total_ret += returned;
        tracks.push(LodTrack {
            id: ti as u32,
            exact: raw.exact,
            in_window: raw.in_window,
            hidden: raw.in_window.saturating_sub(returned),
            events: drawn.events,
            samples: drawn.samples,
        });
    }
    WindowPart { names, tracks, total_in_window: total_in, total_returned: total_ret }
}

/// A track's drawable events (`name` indexes `names`, this track's own list) or counter
/// samples.
struct TrackEvents<'a> {
    events: Vec<LodEvent>,
    samples: Vec<(u64, f64)>,
    names: Vec<&'a str>,
}

/// The events (or counter samples) at `positions` of track `ti`.
fn track_events<'a>(host: &LodHost<'a>, ti: usize, positions: &[u32]) -> TrackEvents<'a> {
    let t = &host.index.tracks[ti];
    let mut out = TrackEvents { events: Vec::new(), samples: Vec::new(), names: Vec::new() };
    let mut name_ids: HashMap<&'a str, u32> = HashMap::new();
    let is_counter = matches!(t.kind, Some(TrackKind::Counter { .. }));
    for &pos in positions {
        let Some(v) = view_in(host.space, t, pos) else { continue };
        if is_counter {
            let value = event_args(host.space, t, pos).first().map_or(0.0, |(_, a)| match a {
                ArgValue::Int(x) => *x as f64,
                ArgValue::Uint(x) => *x as f64,
                ArgValue::Double(x) => *x,
                ArgValue::Str(_) => 0.0,
            });
            out.samples.push((v.ts, value));
            continue;
        }
        let name = v.name(host.groups);
        let next = out.names.len() as u32;
        let id = *name_ids.entry(name).or_insert_with(|| {
            out.names.push(name);
            next
        });
        out.events.push(LodEvent {
            id: EventRef { track: ti as u32, pos }.to_id(),
            name: id,
            ts_ps: v.ts,
            dur_ps: v.dur,
            flow: t.flow_at(pos).map(|f| (f.id, entry_name(f.entry))),
        });
    }
    out
}

struct LodTrackRaw {
    positions: Vec<u32>,
    in_window: usize,
    exact: bool,
}

fn track_window(
    host: &LodHost<'_>,
    ti: usize,
    begin: u64,
    end: u64,
    resolution_ps: u64,
    last: usize,
    exact_limit: usize,
) -> LodTrackRaw {
    let t = &host.index.tracks[ti];
    let in_window = count_in_window(host.space, t, begin, end);
    if in_window <= exact_limit {
        let positions = window_positions(host.space, t, begin, end, NUM_LEVELS - 1);
        return LodTrackRaw { in_window: positions.len(), positions, exact: true };
    }
    let candidates = window_positions(host.space, t, begin, end, last);
    let mut vis = Visibility::new((begin, end - begin), resolution_ps);
    let is_thread = t.resource_id().is_some();
    let positions: Vec<u32> = candidates
        .into_iter()
        .filter(|&pos| {
            let Some(v) = view_in(host.space, t, pos) else { return false };
            vis.visible(0, v.ts, v.dur, None, is_thread)
        })
        .collect();
    LodTrackRaw { positions, in_window, exact: false }
}

/// Details of one event by id.
pub fn event_details(host: &LodHost<'_>, id: u64) -> Option<EventDetails> {
    let r = EventRef::from_id(id);
    let t = host.index.tracks.get(r.track as usize)?;
    let v = view_in(host.space, t, r.pos)?;
    let mut args = serde_json::Map::new();
    for (name, value) in super::xprof::event_args_with(host.space, Some(host.groups), t, r.pos) {
        let json = match value {
            ArgValue::Int(x) => serde_json::Value::from(x),
            ArgValue::Uint(x) => serde_json::Value::from(x),
            ArgValue::Double(x) => serde_json::Value::from(x),
            ArgValue::Str(s) => serde_json::Value::from(s),
        };
        args.insert(name, json);
    }
    Some(EventDetails {
        id,
        track: r.track,
        pid: t.device_id,
        tid: t.resource_id(),
        name: match &t.kind {
            Some(TrackKind::Counter { name }) => name.clone(),
            _ => v.name(host.groups).to_string(),
        },
        ts_ps: v.ts,
        dur_ps: v.dur,
        // The group XProf's trace shows (a TPU module touching the previous one shows that
        // one's group), as the `trace_viewer@` output does.
        group_id: v
            .event
            .and_then(|e| shown_groups(host.space, host.groups).get(v.plane_index, v.line_index, e.index()))
            .or_else(|| v.group_id(host.groups)),
        serial: u32::from(t.serial_at(r.pos)),
        flow: t.flow_at(r.pos).map(|f| (f.id, entry_name(f.entry))),
        args,
    })
}

/// Events whose name starts with `prefix`, anywhere in the trace, earliest first.
pub fn search(host: &LodHost<'_>, prefix: &str, limit: usize) -> SearchResponse {
    search_query(host, &SearchQuery::Prefix(prefix.to_string()), limit)
}

/// A case-insensitive substring test, remembering the answer per distinct string: names
/// and string arguments are interned in the model, so a trace of millions of events holds
/// a few thousand distinct ones (keyed by address and length).
struct Matcher<'q> {
    query: &'q SearchQuery,
    lower: String,
    seen: HashMap<(usize, usize), bool>,
}

impl<'q> Matcher<'q> {
    fn new(query: &'q SearchQuery) -> Self {
        let lower = match query {
            SearchQuery::Prefix(_) => String::new(),
            SearchQuery::Text { text, .. } => text.to_lowercase(),
        };
        Matcher { query, lower, seen: HashMap::new() }
    }

    fn test(&mut self, text: &str) -> bool {
        let key = (text.as_ptr() as usize, text.len());
        if let Some(&hit) = self.seen.get(&key) {
            return hit;
        }
        let hit = match self.query {
            SearchQuery::Prefix(p) => text.starts_with(p.as_str()),
            SearchQuery::Text { .. } => contains_ignoring_case(text, &self.lower),
        };
        self.seen.insert(key, hit);
        hit
    }
}

/// Whether `text` contains `lower` (already lowercase), ignoring case.
fn contains_ignoring_case(text: &str, lower: &str) -> bool {
    if lower.is_empty() {
        return true;
    }
    if text.is_ascii() && lower.is_ascii() {
        let (h, n) = (text.as_bytes(), lower.as_bytes());
        return h.len() >= n.len() && h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    }
    text.to_lowercase().contains(lower)
}

/// The first argument of an event whose string value matches (`long_name` included):
/// the metadata's arguments are tested once per metadata (`meta_args`), the event's own each
/// time.
fn matching_arg(
    t: &TrackInfo,
    pos: u32,
    v: &super::index::EventView<'_>,
    m: &mut Matcher<'_>,
    meta_args: &mut HashMap<usize, Option<String>>,
) -> Option<String> {
    let Some(e) = v.event else {
        return t.derived_long_name(pos).filter(|long| m.test(long)).map(|_| "long_name".to_string());
    };
    let string_arg = |s: oxprof_model::Stat<'_>, m: &mut Matcher<'_>| match s.value {
        oxprof_model::StatValue::Str(x) | oxprof_model::StatValue::Ref(x) => {
            let name = s.name();
            (!is_internal_stat_name(name) && m.test(x)).then(|| name.to_string())
        }
        _ => None,
    };
    let meta = e.metadata_id().index();
    let found = meta_args.entry(meta).or_insert_with(|| {
        if e.metadata().display_name != oxprof_model::StrId::EMPTY && m.test(e.name()) {
            Some("long_name".to_string())
        } else {
            e.metadata_stats().find_map(|s| string_arg(s, m))
        }
    });
    if let Some(arg) = found {
        return Some(arg.clone());
    }
    e.stats().find_map(|s| string_arg(s, m))
}

/// Events per piece of a search: long tracks are searched in pieces side by side.
const SEARCH_PIECE: u32 = 1 << 17;

/// The hits of positions `range` of one track, by position.
fn search_track(host: &LodHost<'_>, ti: usize, range: std::ops::Range<u32>, query: &SearchQuery) -> Vec<Hit> {
    let t = &host.index.tracks[ti];
    let mut hits = Vec::new();
    let mut m = Matcher::new(query);
    if let Some(TrackKind::Counter { name }) = &t.kind {
        if m.test(name) {
            hits.extend(range.filter_map(|p| view_in(host.space, t, p).map(|v| (v.ts, ti as u32, p, None))));
        }
        return hits;
    }
    let with_args = matches!(query, SearchQuery::Text { args: true, .. });
    // An event's name is its step name when it has one (sparse, from the grouping, or a
    // `step_name` stat in files grouped already), else its metadata's display name: tested
    // once per metadata.
    let plane = host.space.planes.get(t.plane as usize);
    let step_stats = plane.is_some_and(|p| p.stat_metadata_of_type(oxprof_model::schema::StatType::StepName).is_some());
    let step_names: HashMap<(usize, usize), &str> = t
        .lines
        .iter()
        .flat_map(|&li| {
            host.groups.line_step_names(t.plane as usize, li as usize).map(move |(e, n)| ((li as usize, e), n))
        })
        .collect();
    // Per metadata of the plane: 0 not tested yet, 1 no match, 2 a match (a dense table:
    // the loop below runs once per event).
    let mut by_meta = vec![0u8; plane.map_or(0, |p| p.event_metadata().len())];
    let mut meta_args: HashMap<usize, Option<String>> = HashMap::new();
    for pos in range {
        let Some(v) = view_in(host.space, t, pos) else { continue };
        let named = match v.event {
            Some(e) if !step_stats => {
                let step = if step_names.is_empty() { None } else { step_names.get(&(v.line_index, e.index())) };
                match step {
                    Some(step) => m.test(step),
                    None => {
                        let meta = e.metadata_id().index();
                        match by_meta.get(meta).copied() {
                            Some(known @ 1..) => known == 2,
                            Some(_) => {
                                let hit = m.test(e.display_name());
                                by_meta[meta] = if hit { 2 } else { 1 };
                                hit
                            }
                            None => m.test(e.display_name()),
                        }
                    }
                }
            }
            _ => m.test(v.name(host.groups)),
        };
        if named {
            hits.push((v.ts, ti as u32, pos, None));
        } else if with_args && let Some(arg) = matching_arg(t, pos, &v, &mut m, &mut meta_args) {
            hits.push((v.ts, ti as u32, pos, Some(arg)));
        }
    }
    hits
}

/// Events matching `query` anywhere in the trace, earliest first: `total` counts them
/// all, `matches` holds the first `limit`.
pub fn search_query(host: &LodHost<'_>, query: &SearchQuery, limit: usize) -> SearchResponse {
    let (hits, total) = search_hits(host, query, limit);
    let matches = hits
        .into_iter()
        .filter_map(|(_, ti, pos, arg)| to_match(host, EventRef { track: ti, pos }).map(|m| SearchMatch { arg, ..m }))
        .collect::<Vec<_>>();
    let (prefix, q, args) = match query {
        SearchQuery::Prefix(p) => (Some(p.clone()), None, false),
        SearchQuery::Text { text, args } => (None, Some(text.clone()), *args),
    };
    SearchResponse { prefix, q, args, total, truncated: matches.len() < total, matches }
}

/// A search hit: start, track, position and the matching argument (if not the name).
pub(crate) type Hit = (u64, u32, u32, Option<String>);

/// The first `limit` hits by time and the number of all hits.
pub(crate) fn search_hits(host: &LodHost<'_>, query: &SearchQuery, limit: usize) -> (Vec<Hit>, usize) {
    use rayon::prelude::*;
    let index = host.index;
    let pieces: Vec<(usize, std::ops::Range<u32>)> = index
        .tracks
        .iter()
        .enumerate()
        .flat_map(|(ti, t)| {
            let n = t.len() as u32;
            (0..n.div_ceil(SEARCH_PIECE)).map(move |k| (ti, k * SEARCH_PIECE..((k + 1) * SEARCH_PIECE).min(n)))
        })
        .collect();
    let per_track: Vec<Vec<Hit>> =
        pieces.into_par_iter().map(|(ti, range)| search_track(host, ti, range, query)).collect();
    let total: usize = per_track.iter().map(Vec::len).sum();
    let mut all: Vec<Hit> = per_track.into_iter().flatten().collect();
    let limit = limit.min(all.len());
    if limit < all.len() {
        all.select_nth_unstable_by_key(limit, |a| (a.0, a.1, a.2));
        all.truncate(limit);
    }
    all.sort_unstable_by_key(|a| (a.0, a.1, a.2));
    (all, total)
}

fn to_match(host: &LodHost<'_>, r: EventRef) -> Option<SearchMatch> {
    let t = host.index.tracks.get(r.track as usize)?;
    let v = view_in(host.space, t, r.pos)?;
    let name = match &t.kind {
        Some(TrackKind::Counter { name }) => name.clone(),
        _ => v.name(host.groups).to_string(),
    };
    Some(SearchMatch { id: r.to_id(), track: r.track, name, ts_ps: v.ts, dur_ps: v.dur, arg: None })
}

/// All events bound to a flow, by time.
pub fn flow_events(host: &LodHost<'_>, flow_id: u64) -> FlowResponse {
    let mut refs: Vec<(u64, EventRef)> = Vec::new();
    for (ti, t) in host.index.tracks.iter().enumerate() {
        for (pos, f) in t.flows() {
            if f.id == flow_id
                && let Some(v) = view_in(host.space, t, pos)
            {
                refs.push((v.ts, EventRef { track: ti as u32, pos }));
            }
        }
    }
    refs.sort_unstable();
    FlowResponse { flow: flow_id, events: refs.into_iter().filter_map(|(_, r)| to_match(host, r)).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_grouping::group_events;
    use oxprof_model::ModelBuilder;

    /// Section labels: PyTorch's names when the host plane carries Kineto's
    /// `schemaVersion`, none otherwise.
    ///
    /// ```text
    /// /host:CPU      thread 7 (main)   |-- op --|
    /// /device:GPU:0  stream 7              |k|
    /// ```
    #[test]
    fn pytorch_traces_get_pytorch_section_labels() {
        let labels = |pytorch: bool| {
            let space = ModelBuilder::new()
                .plane("/host:CPU", |p| {
                    if pytorch {
                        p.stat("pid", 7i64).stat("process_name", "python3").stat("schemaVersion", 1i64);
                    }
                    p.line(7, "thread 7 (main)", 1000, |l| {
                        l.event("op", 0, 5_000);
                    });
                })
                .plane("/device:GPU:0", |p| {
                    p.id(0).stat("name", "NVIDIA A100");
                    p.line(7, "Stream #7(Compute)", 1000, |l| {
                        l.display_name("stream 7").event("k", 1_000, 2_000);
                    });
                })
                .build()
                .unwrap();
            let groups = group_events(&space);
            let index = TraceIndex::build(&space, "h");
            let list = track_list(&LodHost { space: &space, groups: &groups, index: &index });
            let sections: Vec<_> = list.sections.iter().map(|s| (s.name.clone(), s.label.clone())).collect();
            let tracks: Vec<_> = list.sections.iter().flat_map(|s| s.tracks.iter().map(|t| t.name.clone())).collect();
            (sections, tracks)
        };
        let some = |s: &str| Some(s.to_string());
        let (sections, tracks) = labels(true);
        assert_eq!(
            sections,
            [
                ("h /device:GPU:0".to_string(), some("GPU 0 · NVIDIA A100")),
                ("h /host:CPU".to_string(), some("CPU · python3 (pid 7)"))
            ]
        );
        assert_eq!(tracks, ["stream 7", "thread 7 (main)"]);
        let (sections, _) = labels(false);
        assert!(sections.iter().all(|(_, label)| label.is_none()), "{sections:?}");
    }
}
