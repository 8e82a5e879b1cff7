//! The trace viewer: XProf's `trace_viewer` / `trace_viewer@` bodies and oxprof's level-of-detail trace API.
//!
//! Each host's XSpace is loaded, grouped and indexed once ([`HostTraceData`]) and kept in
//! the session's cache, so that later requests (zooms, details, search) only render. The
//! index is also kept in the persistent analysis cache (`oxprof-diskcache`, never beside
//! the profile), validated against the file's identity; writing it is best effort. So are
//! one host's rendered `trace_viewer@` bodies (per set of parameters): a later process
//! answers them without decoding the profile.
//!
//! LOD routes (for the server, under `/oxprof/api/trace`): see [`route`].

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::persist::{Persisted, TRACE_INDEX_ENTRY, TRACE_JSON_ENTRY, TRACE_VIEW_ENTRY};
use crate::persist::{decode_trace_json, write_trace_json};
use crate::request::Answer;
use crate::request::{ALL_HOSTS, DataRequest, select_hosts};
use crate::session::{FileCounts, HostArtifact, Session};
use crate::tool::{
    Computation, DEFAULT_TRACE_RESOLUTION, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId,
};
use oxprof_diskcache::DiskCache;
use oxprof_format::{HostFile, LocalStore, load_xspace};
use oxprof_grouping::{EventGroups, group_events};
use oxprof_model::XSpace;
use oxprof_report::{Body, BodyWriter};
use oxprof_trace::aggregate as agg;
use oxprof_trace::lod::{self, LodHost, LodRequest, SearchQuery};
use oxprof_trace::multi;
use oxprof_trace::xprof::{self as tv, HostTrace};
use oxprof_trace::{TraceIndex, read_index_from, write_index_to};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One host's decoded profile, grouping and trace index.
pub struct HostTraceData {
    /// Host name.
    pub host: String,
    /// The decoded XSpace.
    pub space: XSpace,
    /// Its grouping.
    pub groups: EventGroups,
    /// Its trace index.
    pub index: TraceIndex,
    /// Whether the index came from the on-disk cache.
    pub index_from_cache: bool,
}

impl HostTraceData {
    fn xprof(&self) -> HostTrace<'_> {
        HostTrace { space: &self.space, groups: &self.groups, index: &self.index }
    }

    fn lod(&self) -> LodHost<'_> {
        LodHost { space: &self.space, groups: &self.groups, index: &self.index }
    }
}

impl HostTraceData {
    /// Approximate heap bytes held (model, grouping, index), for cache bounds.
    pub fn heap_bytes(&self) -> usize {
        self.space.heap_bytes() + self.groups.heap_bytes() + self.index.heap_bytes() + self.host.len()
    }
}

/// Loads, groups and indexes one host (the index from `disk_cache` when it holds a valid
/// one, and stored there otherwise).
pub fn load_host(file: &HostFile, disk_cache: Option<&DiskCache>) -> Result<HostTraceData, ApiError> {
    let space = load_xspace(&file.path)?;
    let store = LocalStore::new(&file.path);
    Ok(index_host(file, space, Persisted::new(disk_cache, &store, &file.path, TRACE_INDEX_ENTRY, &file.host)))
}

/// The trace family's per-host artifact: [`load_host`] through a session (its store,
/// input budgets and persistent cache), kept by the session's cache.
impl HostArtifact for HostTraceData {
    fn compute(session: &Session, file: &HostFile) -> Result<HostTraceData, ApiError> {
        let space = session.load(file, &|_| true)?;
        Ok(index_host(file, space, session.persisted(file, TRACE_INDEX_ENTRY, &file.host)))
    }

    fn weight(&self) -> usize {
        self.heap_bytes()
    }

    fn count(counts: &mut FileCounts, computed: bool) {
        if computed {
            counts.traces_computed += 1;
        } else {
            counts.traces_found += 1;
        }
    }
}

/// Each host's decoded model, grouping and trace index (built once per file and kept).
pub fn host_traces(session: &Session, files: &[&HostFile], refresh: bool) -> Result<Vec<Arc<HostTraceData>>, ApiError> {
    session.host_artifacts(files, refresh)
}

/// Whether `file`'s trace data (model + index) is in memory now (never computes or waits).
fn has_trace(session: &Session, file: &HostFile) -> bool {
    session.host_artifact_in_memory::<HostTraceData>(file).is_some()
}

fn index_host(file: &HostFile, space: XSpace, persisted: Persisted<'_>) -> HostTraceData {
    // The index format checks the file state it was built from on its own, too.
    let state = persisted.identity.as_ref().map(|id| (id.size, id.modified_ns));
    // Grouping first, then the index, from the cache or built (each is parallel inside):
    // grouping's working tables are gone before the index is in memory. (Side by side they
    // took no less time on 2 cores, and on the 85 MB profile a cold request peaked at
    // ~142 MB that way, ~124 MB one after the other; a reopen that read the index first
    // peaked 17 MB above a cold request.)
    let groups = group_events(&space);
    // The entry is parsed as it is read (its ~6 bytes per event are never in memory beside
    // the model and the index they become).
    let cached = state.and_then(|state| persisted.read_with(|input, len| read_index_from(input, len, state).ok()));
    if let Some(index) = cached {
        return HostTraceData { host: file.host.clone(), space, groups, index, index_from_cache: true };
    }
    let index = TraceIndex::build_grouped(&space, &file.host, &groups);
    if let Some(state) = state {
        // Streamed to the file: the ~6 bytes per event are never all in memory beside the
        // model and the index (on the 85 MB profile, an 18 MB buffer at the request's peak).
        persisted.write_streamed(|out| write_index_to(&index, state, out));
    }
    HostTraceData { host: file.host.clone(), space, groups, index, index_from_cache: false }
}

/// Largest `width` of a window (bins across it): an 8K screen at twice its pixel density.
pub const MAX_WIDTH: u32 = 16_384;
/// Largest `exact_limit` of a window (events per track sent one by one).
pub const MAX_EXACT_LIMIT: usize = 50_000;
/// Largest `limit` of a search.
pub const MAX_SEARCH_LIMIT: usize = 10_000;

fn bad(name: &str, reason: impl Into<String>) -> ApiError {
    ApiError::BadParameter { name: name.to_string(), reason: reason.into() }
}

/// The hosts a trace request means: `hosts=a,b` (XProf's streaming parameter), else the
/// `host` selection.
fn trace_hosts<'a>(run: &'a ServedRun, request: &DataRequest) -> Result<Vec<&'a HostFile>, ApiError> {
    if let Some(list) = request.params.get("hosts").filter(|h| !h.trim().is_empty()) {
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            out.extend(select_hosts(run, Some(name))?);
        }
        return Ok(out);
    }
    select_hosts(run, request.host.as_deref())
}

/// Bodies of more events than this are written while they are sent
/// (a [`Body::Stream`]) rather than built in memory and kept (~160 bytes per event).
pub const STREAM_EVENTS: usize = 100_000;

/// The row computation of `trace_viewer@`, XProf's streaming trace JSON (see
/// [`answer`]).
pub(crate) fn answer_streaming(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Answer, ApiError> {
    answer(session, run, request, refresh, false)
}

/// The row computation of `trace_viewer`, XProf's legacy trace JSON of one host (see
/// [`answer`]).
pub(crate) fn answer_legacy(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Answer, ApiError> {
    answer(session, run, request, refresh, true)
}

/// XProf's trace JSON as it is (the typed access to a trace is oxprof's level-of-detail
/// API, [`route`]): bodies of more than [`STREAM_EVENTS`] events are a [`Body::Stream`]
/// that renders them in pieces while they are sent; smaller ones are whole.
fn answer(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
    legacy: bool,
) -> Result<Answer, ApiError> {
    let files = trace_hosts(run, request)?;
    let params = &request.params;
    let req = tv::parse_request(|k| params.get(k).cloned()).map_err(|e| bad("trace_viewer_options", e))?;
    // One host's `trace_viewer@` body (as XProf's UI asks it) is kept in the persistent
    // cache: a later process answers it without decoding the profile (this one renders it
    // from memory when it holds the trace).
    let slot = match files.as_slice() {
        [file] if !legacy && session.has_disk_cache() => {
            let key: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            Some((session.persisted(file, TRACE_JSON_ENTRY, &key.join("&")), has_trace(session, file)))
        }
        _ => None,
    };
    if !refresh
        && let Some((slot, false)) = &slot
        && let Some((notes, body)) = slot.read().and_then(decode_trace_json)
    {
        session.count_trace_view_from_disk();
        return Ok(whole(body, notes));
    }
    let hosts = host_traces(session, &files, refresh)?;
    let mut notes = Vec::new();
    let total: usize = hosts.iter().map(|h| h.index.num_events).sum();
    if !legacy && total >= oxprof_trace::DISABLE_STREAMING_THRESHOLD {
        notes.push(format!(
            "{total} events: downsampled as XProf does; oxprof's /oxprof/api/trace routes browse every event"
        ));
    }
    if legacy {
        let Some(first) = hosts.first().cloned() else { return Err(bad("host", "no host selected")) };
        if hosts.len() > 1 {
            notes.insert(0, "trace_viewer shows one host; showing the first (use trace_viewer@ for several)".into());
        }
        if first.index.num_events <= STREAM_EVENTS {
            return Ok(whole(tv::legacy_trace_json(&first.xprof()), notes));
        }
        let writer = BodyWriter::new(move |sink| tv::write_legacy_trace_json(&first.xprof(), sink));
        return Ok(streamed(writer, notes));
    }
    let views: Vec<HostTrace<'_>> = hosts.iter().map(|h| h.xprof()).collect();
    let view = tv::trace_view(&views, &req).map_err(|e| bad("event_name", e.to_string()))?;
    if view.num_events() <= STREAM_EVENTS {
        let mut body = Vec::new();
        // Writing into memory cannot fail; the body is UTF-8 text.
        let _ = view.write(&views, &req, &mut body);
        let body = String::from_utf8(body).unwrap_or_default();
        if let Some((slot, _)) = slot.filter(|(slot, _)| refresh || !slot.exists()) {
            slot.write_streamed(|out| write_trace_json(&notes, &body, out));
        }
        return Ok(whole(body, notes));
    }
    drop(views);
    let writer = BodyWriter::new(move |sink| {
        let views: Vec<HostTrace<'_>> = hosts.iter().map(|h| h.xprof()).collect();
        view.write(&views, &req, sink)
    });
    Ok(streamed(writer, notes))
}

/// A whole trace JSON body.
fn whole(text: String, notes: Vec<String>) -> Answer {
    Answer::Body { body: Body::Text { content_type: "application/json", text }, notes }
}

/// A trace JSON body written while it is sent.
fn streamed(write: BodyWriter, notes: Vec<String>) -> Answer {
    Answer::Body { body: Body::Stream { content_type: "application/json", write }, notes }
}

// ---- oxprof's level-of-detail API ------------------------------------------------------

/// Most hosts one LOD view merges (`hosts=`): each is decoded and indexed in memory.
pub const MAX_VIEW_HOSTS: usize = 16;

/// The hosts of a LOD request: `hosts=a,b` (several hosts merged as XProf merges them;
/// `ALL_HOSTS` = every host of the run), else `host` (one host; default the run's first).
pub fn view_hosts(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    hosts: Option<&str>,
) -> Result<Vec<Arc<HostTraceData>>, ApiError> {
    let list: Vec<&str> = hosts.unwrap_or("").split(',').map(str::trim).filter(|h| !h.is_empty()).collect();
    if list.is_empty() {
        return Ok(vec![one_host(session, run, host)?]);
    }
    let mut files: Vec<&HostFile> = Vec::new();
    for name in list {
        for file in select_hosts(run, Some(name))? {
            if !files.iter().any(|f| f.path == file.path) {
                files.push(file);
            }
        }
    }
    if files.len() > MAX_VIEW_HOSTS {
        return Err(bad("hosts", format!("{} hosts: a trace view merges at most {MAX_VIEW_HOSTS}", files.len())));
    }
    if files.is_empty() {
        return Err(bad("hosts", "the run has no hosts"));
    }
    host_traces(session, &files, false)
}

fn with_hosts<R>(data: &[Arc<HostTraceData>], f: impl FnOnce(&multi::Hosts<'_>) -> R) -> R {
    f(&multi::Hosts::new(data.iter().map(|d| d.lod()).collect()))
}

fn one_host(session: &Session, run: &ServedRun, host: Option<&str>) -> Result<Arc<HostTraceData>, ApiError> {
    let host = host.filter(|h| !h.is_empty() && *h != ALL_HOSTS);
    let files = select_hosts(run, host)?;
    let file = files.first().ok_or_else(|| bad("host", "the run has no hosts"))?;
    host_traces(session, &[file], false)?.pop().ok_or_else(|| bad("host", "the run has no hosts"))
}

fn num<T: std::str::FromStr>(params: &BTreeMap<String, String>, key: &str) -> Result<Option<T>, ApiError> {
    match params.get(key).map(|s| s.trim()).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => s.parse::<T>().map(Some).map_err(|_| bad(key, format!("not a number: {s:?}"))),
    }
}

/// The `tracks=1,2` parameter (`None` when absent or empty: all tracks).
fn track_ids(params: &BTreeMap<String, String>) -> Result<Option<Vec<u32>>, ApiError> {
    match params.get("tracks").map(|s| s.trim()).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(list) => list
            .split(',')
            .map(|t| t.trim().parse::<u32>().map_err(|_| bad("tracks", format!("not a track id: {t:?}"))))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
    }
}

/// `GET /oxprof/api/trace/tracks`: sections (processes) and their tracks.
pub fn tracks(session: &Session, run: &ServedRun, host: Option<&str>) -> Result<lod::TrackList, ApiError> {
    tracks_of(&[one_host(session, run, host)?])
}

/// [`tracks`] of several hosts ([`view_hosts`]).
pub fn tracks_of(data: &[Arc<HostTraceData>]) -> Result<lod::TrackList, ApiError> {
    Ok(with_hosts(data, multi::track_list))
}

/// `GET /oxprof/api/trace/window?start_ps=&end_ps=&width=&tracks=1,2&exact_limit=`: drawable
/// items of a window; hidden events are counted per track.
pub fn window(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    params: &BTreeMap<String, String>,
) -> Result<lod::LodResponse, ApiError> {
    window_of(&[one_host(session, run, host)?], params)
}

/// [`window`] of several hosts.
pub fn window_of(data: &[Arc<HostTraceData>], params: &BTreeMap<String, String>) -> Result<lod::LodResponse, ApiError> {
    let tracks = track_ids(params)?;
    let req = LodRequest {
        start_ps: num(params, "start_ps")?,
        end_ps: num(params, "end_ps")?,
        width: num(params, "width")?.unwrap_or(lod::DEFAULT_WIDTH).clamp(1, MAX_WIDTH),
        tracks,
        exact_limit: num(params, "exact_limit")?.unwrap_or(lod::DEFAULT_EXACT_LIMIT).min(MAX_EXACT_LIMIT),
    };
    Ok(with_hosts(data, |h| multi::window(h, &req)))
}

/// One event's details plus its self time (duration minus its direct children's).
#[derive(Debug, Clone, Serialize)]
pub struct EventWithSelf {
    /// The details.
    #[serde(flatten)]
    pub details: lod::EventDetails,
    /// Self time (ps); absent for counter samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_ps: Option<u64>,
}

impl std::ops::Deref for EventWithSelf {
    type Target = lod::EventDetails;

    fn deref(&self) -> &lod::EventDetails {
        &self.details
    }
}

/// `GET /oxprof/api/trace/event?id=`: one event's details.
pub fn event(session: &Session, run: &ServedRun, host: Option<&str>, id: u64) -> Result<EventWithSelf, ApiError> {
    event_of(&[one_host(session, run, host)?], id)
}

/// [`event`] of several hosts (merged event ids).
pub fn event_of(data: &[Arc<HostTraceData>], id: u64) -> Result<EventWithSelf, ApiError> {
    let (details, self_ps) =
        with_hosts(data, |h| multi::event_details(h, id)).ok_or_else(|| bad("id", format!("no event with id {id}")))?;
    Ok(EventWithSelf { details, self_ps })
}

/// `GET /oxprof/api/trace/search?prefix=&limit=`: name-prefix search over the whole trace.
pub fn search(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    prefix: &str,
    limit: Option<usize>,
) -> Result<lod::SearchResponse, ApiError> {
    if prefix.is_empty() {
        return Err(bad("prefix", "empty"));
    }
    search_of(&[one_host(session, run, host)?], &SearchQuery::Prefix(prefix.to_string()), limit)
}

/// Longest search text (`q`, `prefix`).
pub const MAX_SEARCH_CHARS: usize = 1000;

/// A search over several hosts: `q` (substring, any case; `args` too) or `prefix`.
pub fn search_of(
    data: &[Arc<HostTraceData>],
    query: &SearchQuery,
    limit: Option<usize>,
) -> Result<lod::SearchResponse, ApiError> {
    let text = match query {
        SearchQuery::Prefix(p) => p,
        SearchQuery::Text { text, .. } => text,
    };
    if text.chars().count() > MAX_SEARCH_CHARS {
        return Err(bad("q", format!("longer than {MAX_SEARCH_CHARS} characters")));
    }
    let limit = limit.unwrap_or(lod::DEFAULT_SEARCH_LIMIT).min(MAX_SEARCH_LIMIT);
    Ok(with_hosts(data, |h| multi::search(h, query, limit)))
}

/// `GET /oxprof/api/trace/aggregate?start_ps=&end_ps=&tracks=1,2`: per-name statistics of
/// every event of the tracks (all thread tracks by default) overlapping the range (default:
/// the whole trace). Exact: computed from the index, not from what a window draws.
pub fn aggregate(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    params: &BTreeMap<String, String>,
) -> Result<agg::Aggregate, ApiError> {
    aggregate_of(&[one_host(session, run, host)?], params)
}

/// [`aggregate`] over several hosts.
pub fn aggregate_of(
    data: &[Arc<HostTraceData>],
    params: &BTreeMap<String, String>,
) -> Result<agg::Aggregate, ApiError> {
    let tracks = track_ids(params)?;
    let (min, max) = with_hosts(data, |h| (h.min_ps(), h.max_ps()));
    let begin = num(params, "start_ps")?.unwrap_or(min);
    let end = num(params, "end_ps")?.unwrap_or(max);
    if end < begin {
        return Err(bad("end_ps", "before start_ps"));
    }
    Ok(with_hosts(data, |h| multi::aggregate(h, tracks.as_deref(), begin, end)))
}

/// `GET /oxprof/api/trace/flow?id=`: the events of one flow.
pub fn flow(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    flow_id: u64,
) -> Result<lod::FlowResponse, ApiError> {
    flow_of(&[one_host(session, run, host)?], flow_id)
}

/// [`flow`] over several hosts.
pub fn flow_of(data: &[Arc<HostTraceData>], flow_id: u64) -> Result<lod::FlowResponse, ApiError> {
    Ok(with_hosts(data, |h| multi::flow_events(h, flow_id)))
}

/// `GET /oxprof/api/trace/step?step=N` (or `name=train 5`): where step `N` (the group id:
/// the pod viewer's step numbers; the step-time graphs name steps) is in the trace.
pub fn step_of(data: &[Arc<HostTraceData>], step: i64) -> Result<multi::StepSpan, ApiError> {
    with_hosts(data, |h| multi::step_span(h, step)).ok_or_else(|| bad("step", format!("no event of step {step}")))
}

/// The one file of a single-host view, when the session has a persistent cache: its
/// opening views are kept there, and answered from there while the file is not decoded.
fn opening_view<'r>(
    session: &Session,
    run: &'r ServedRun,
    host: Option<&str>,
    hosts: Option<&str>,
) -> Result<Option<&'r HostFile>, ApiError> {
    if !session.has_disk_cache() || hosts.is_some_and(|h| !h.trim().is_empty()) {
        return Ok(None);
    }
    let host = host.filter(|h| !h.is_empty() && *h != ALL_HOSTS);
    Ok(select_hosts(run, host)?.into_iter().next())
}

/// Routes `/oxprof/api/trace/<sub>` for the server: `sub` is `tracks`, `window`, `event`,
/// `search`, `flow`, `aggregate` or `step`; `get` reads query parameters (`run`, `host`,
/// `hosts` and the route's own). Answers the JSON body; flow ids in it are decimal strings
/// (JavaScript numbers would round 56-bit ids).
pub fn route(
    session: &Session,
    run: &ServedRun,
    sub: &str,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ApiError> {
    let host = get("host").filter(|h| !h.is_empty());
    let hosts = get("hosts");
    let keys = ["start_ps", "end_ps", "width", "tracks", "exact_limit"];
    let params: BTreeMap<String, String> = keys.iter().filter_map(|k| get(k).map(|v| (k.to_string(), v))).collect();
    let id = |key: &str| -> Result<u64, ApiError> {
        let v = get(key).ok_or_else(|| bad(key, "missing"))?;
        v.trim().parse::<u64>().map_err(|_| bad(key, format!("not a number: {v:?}")))
    };
    // Written straight from the response types: no `serde_json::Value` tree in between
    // (a full view of a large trace is megabytes of events).
    fn to_json<T: Serialize>(v: T) -> Result<String, ApiError> {
        serde_json::to_string(&v).map_err(|e| ApiError::BadParameter { name: "response".into(), reason: e.to_string() })
    }
    let sub = sub.trim_matches('/');
    if !matches!(sub, "tracks" | "window" | "event" | "search" | "flow" | "aggregate" | "step") {
        return Err(ApiError::UnknownTool(format!("trace/{sub}")));
    }
    // A trace viewer opens with the track list and a window over the whole trace: a new
    // process answers those from the persistent cache without decoding the profile.
    let opening = match sub {
        "tracks" | "window" => opening_view(session, run, host.as_deref(), hosts.as_deref())?,
        _ => None,
    };
    let view_key = |params: &BTreeMap<String, String>| {
        let params: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", v.trim())).collect();
        format!("{sub}?{}", params.join("&"))
    };
    // (A file's identity costs two range reads: only looked up when it may be used.)
    if let Some(file) = opening.filter(|file| !has_trace(session, file))
        && let Some(body) = session
            .persisted(file, TRACE_VIEW_ENTRY, &view_key(&params))
            .read()
            .and_then(|bytes| String::from_utf8(bytes).ok())
    {
        session.count_trace_view_from_disk();
        return Ok(body);
    }
    let data = view_hosts(session, run, host.as_deref(), hosts.as_deref())?;
    let keep = |body: &String, whole: bool| {
        if let Some(file) = opening.filter(|_| whole) {
            let slot = session.persisted(file, TRACE_VIEW_ENTRY, &view_key(&params));
            if !slot.exists() {
                slot.write(|| body.clone().into_bytes());
            }
        }
    };
    match sub {
        "tracks" => {
            let body = to_json(tracks_of(&data)?)?;
            keep(&body, true);
            Ok(body)
        }
        "window" => {
            let body = to_json(window_of(&data, &params)?)?;
            let (min, max) = with_hosts(&data, |h| (h.min_ps(), h.max_ps()));
            let whole = num::<u64>(&params, "start_ps")?.is_none_or(|s| s <= min)
                && num::<u64>(&params, "end_ps")?.is_none_or(|e| e >= max);
            keep(&body, whole);
            Ok(body)
        }
        "event" => to_json(event_of(&data, id("id")?)?),
        "search" => {
            let limit = get("limit").and_then(|l| l.trim().parse::<usize>().ok());
            let q = get("q").unwrap_or_default();
            let query = if !q.trim().is_empty() {
                let args = get("args").is_some_and(|a| matches!(a.trim(), "1" | "true" | "yes"));
                SearchQuery::Text { text: q.trim().to_string(), args }
            } else {
                let prefix = get("prefix").unwrap_or_default();
                if prefix.is_empty() {
                    return Err(bad("q", "missing: give q (text) or prefix"));
                }
                SearchQuery::Prefix(prefix)
            };
            to_json(search_of(&data, &query, limit)?)
        }
        "flow" => to_json(flow_of(&data, id("id")?)?),
        "aggregate" => to_json(aggregate_of(&data, &params)?),
        _ => {
            let step = match (get("step"), get("name")) {
                (Some(v), _) => v.trim().parse::<i64>().map_err(|_| bad("step", format!("not a number: {v:?}")))?,
                (None, Some(name)) => with_hosts(&data, |h| multi::step_named(h, &name))
                    .ok_or_else(|| bad("name", format!("no step named {name:?}")))?,
                (None, None) => return Err(bad("step", "missing: give step (number) or name")),
            };
            to_json(step_of(&data, step)?)
        }
    }
}

/// This family's rows of the registry (`trace_viewer_streaming`, `trace_viewer`).
pub(crate) const ROWS: &[Tool] = &[
    Tool {
        id: ToolId::TRACE_VIEWER_STREAMING,
        aliases: &[],
        title: "Trace viewer",
        summary: "every event of the run on a timeline (XProf's streaming trace JSON; oxprof's LOD API browses all events)",
        family: Family::Trace,
        hosts: Hosts::Each,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "trace_viewer",
        content_type: JSON,
        compute: Some(Computation::Answer(answer_streaming)),
        reference: Reference::Xprof,
        menu: Some(2),
        device: None,
        defaults: &[("resolution", DEFAULT_TRACE_RESOLUTION)],
        superseded_by: None,
    },
    Tool {
        id: ToolId::TRACE_VIEWER,
        aliases: &[],
        title: "Trace viewer (legacy JSON)",
        summary: "XProf's older whole-trace JSON of one host (up to 5 million events)",
        family: Family::Trace,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::No,
        page: "trace_viewer",
        content_type: JSON,
        compute: Some(Computation::Answer(answer_legacy)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_trace.rs"),
        menu: Some(1),
        device: None,
        defaults: &[],
        superseded_by: Some(ToolId::TRACE_VIEWER_STREAMING),
    },
];
