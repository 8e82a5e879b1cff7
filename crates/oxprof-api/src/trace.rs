//! The trace viewer: XProf's `trace_viewer` / `trace_viewer@` bodies and oxprof's level-of-detail trace API.
//!
//! Each host's XSpace is loaded, grouped and indexed once ([`HostTraceData`]) and kept in
//! the session's cache, so that later requests (zooms, details, search) only render. The
//! index is also kept in the persistent analysis cache (`oxprof-diskcache`, never beside
//! the profile), validated against the file's identity; writing it is best effort.
//!
//! LOD routes (for the server, under `/oxprof/api/trace`): see [`route`].

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::data::{ALL_HOSTS, BodyWriter, DataRequest, DataResponse, select_hosts};
use crate::persist::{Persisted, TRACE_INDEX_ENTRY};
use crate::session::Session;
use oxprof_analysis::grouping::{EventGroups, group_events};
use oxprof_analysis::report::Report;
use oxprof_analysis::trace::aggregate as agg;
use oxprof_analysis::trace::lod::{self, LodHost, LodRequest};
use oxprof_analysis::trace::xprof::{self as tv, HostTrace};
use oxprof_analysis::trace::{EventRef, TraceIndex, read_index, write_index};
use oxprof_diskcache::DiskCache;
use oxprof_format::{HostFile, LocalStore, load_xspace};
use oxprof_model::XSpace;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Tools answered here (XProf's names).
pub const TOOLS: &[&str] = &["trace_viewer", "trace_viewer@"];

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

/// [`load_host`] through a session (its store, input budgets and persistent cache); the
/// session's cache keeps the result ([`Session::host_traces`]).
pub(crate) fn load_host_with(session: &Session, file: &HostFile) -> Result<HostTraceData, ApiError> {
    let space = session.load(file, &|_| true)?;
    Ok(index_host(file, space, session.persisted(file, TRACE_INDEX_ENTRY, &file.host)))
}

fn index_host(file: &HostFile, space: XSpace, persisted: Persisted<'_>) -> HostTraceData {
    // The index format checks the file state it was built from on its own, too.
    let state = persisted.identity.as_ref().map(|id| (id.size, id.modified_ns));
    if let Some(state) = state
        && let Some(bytes) = persisted.read()
        && let Ok(index) = read_index(&bytes, state)
    {
        let groups = group_events(&space);
        return HostTraceData { host: file.host.clone(), space, groups, index, index_from_cache: true };
    }
    // Grouping, then the index (each is parallel inside). Side by side they took no less
    // time on 2 cores, and their working tables would be in memory at the same time: on
    // the 85 MB profile the peak was ~142 MB side by side, ~124 MB one after the other.
    let groups = group_events(&space);
    let index = TraceIndex::build_grouped(&space, &file.host, &groups);
    if let Some(state) = state {
        persisted.write(|| write_index(&index, state));
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
/// ([`TraceBody::Streamed`]) rather than built in memory and kept (~160 bytes per event).
pub const STREAM_EVENTS: usize = 100_000;

/// A trace body: rendered (small enough to keep), or written while it is sent.
pub enum TraceBody {
    /// The whole response.
    Rendered(DataResponse),
    /// A JSON body too large to hold, and oxprof's notes.
    Streamed {
        /// Writes the body.
        writer: BodyWriter,
        /// oxprof's notes for users.
        notes: Vec<String>,
    },
}

/// [`crate::registry::Compute`] of the trace tools: XProf's trace JSON as it is (the
/// typed access to a trace is oxprof's level-of-detail API, [`route`]).
pub(crate) fn compute(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    Ok(data(session, run, &request.tool, request, refresh)?.into_report())
}

/// Answers a data request for one of [`TOOLS`] with the whole body in memory.
pub fn data(
    session: &Session,
    run: &ServedRun,
    tool: &str,
    request: &DataRequest,
    refresh: bool,
) -> Result<DataResponse, ApiError> {
    match body(session, run, tool, request, refresh)? {
        TraceBody::Rendered(response) => Ok(response),
        TraceBody::Streamed { writer, notes } => Ok(DataResponse {
            content_type: "application/json",
            body: String::from_utf8(writer.into_bytes()).unwrap_or_default(),
            json: None,
            notes,
        }),
    }
}

/// Answers a data request for one of [`TOOLS`]: bodies of more than [`STREAM_EVENTS`]
/// events are left to a [`BodyWriter`] that renders them in pieces while they are sent.
pub fn body(
    session: &Session,
    run: &ServedRun,
    tool: &str,
    request: &DataRequest,
    refresh: bool,
) -> Result<TraceBody, ApiError> {
    let files = trace_hosts(run, request)?;
    let params = &request.params;
    let req = tv::parse_request(|k| params.get(k).cloned()).map_err(|e| bad("trace_viewer_options", e))?;
    let hosts = session.host_traces(&files, refresh)?;
    let mut notes = Vec::new();
    let total: usize = hosts.iter().map(|h| h.index.num_events).sum();
    if tool == "trace_viewer@" && total >= oxprof_analysis::trace::DISABLE_STREAMING_THRESHOLD {
        notes.push(format!(
            "{total} events: downsampled as XProf does; oxprof's /oxprof/api/trace routes browse every event"
        ));
    }
    let rendered = |body: String, notes: Vec<String>| {
        Ok(TraceBody::Rendered(DataResponse { content_type: "application/json", body, json: None, notes }))
    };
    if tool == "trace_viewer" {
        let Some(first) = hosts.first().cloned() else { return Err(bad("host", "no host selected")) };
        if hosts.len() > 1 {
            notes.insert(0, "trace_viewer shows one host; showing the first (use trace_viewer@ for several)".into());
        }
        if first.index.num_events <= STREAM_EVENTS {
            return rendered(tv::legacy_trace_json(&first.xprof()), notes);
        }
        let writer = BodyWriter::new(move |sink| tv::write_legacy_trace_json(&first.xprof(), sink));
        return Ok(TraceBody::Streamed { writer, notes });
    }
    let views: Vec<HostTrace<'_>> = hosts.iter().map(|h| h.xprof()).collect();
    let view = tv::trace_view(&views, &req).map_err(|e| bad("event_name", e.to_string()))?;
    if view.num_events() <= STREAM_EVENTS {
        let mut body = Vec::new();
        // Writing into memory cannot fail; the body is UTF-8 text.
        let _ = view.write(&views, &req, &mut body);
        return rendered(String::from_utf8(body).unwrap_or_default(), notes);
    }
    drop(views);
    let writer = BodyWriter::new(move |sink| {
        let views: Vec<HostTrace<'_>> = hosts.iter().map(|h| h.xprof()).collect();
        view.write(&views, &req, sink)
    });
    Ok(TraceBody::Streamed { writer, notes })
}

// ---- oxprof's level-of-detail API ------------------------------------------------------

fn one_host(session: &Session, run: &ServedRun, host: Option<&str>) -> Result<Arc<HostTraceData>, ApiError> {
    let host = host.filter(|h| !h.is_empty() && *h != ALL_HOSTS);
    let files = select_hosts(run, host)?;
    let file = files.first().ok_or_else(|| bad("host", "the run has no hosts"))?;
    session.host_traces(&[file], false)?.pop().ok_or_else(|| bad("host", "the run has no hosts"))
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
    let data = one_host(session, run, host)?;
    Ok(lod::track_list(&data.lod()))
}

/// `GET /oxprof/api/trace/window?start_ps=&end_ps=&width=&tracks=1,2&exact_limit=`: drawable
/// items of a window; hidden events are counted per track.
pub fn window(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    params: &BTreeMap<String, String>,
) -> Result<lod::LodResponse, ApiError> {
    let data = one_host(session, run, host)?;
    let tracks = track_ids(params)?;
    let req = LodRequest {
        start_ps: num(params, "start_ps")?,
        end_ps: num(params, "end_ps")?,
        width: num(params, "width")?.unwrap_or(lod::DEFAULT_WIDTH).clamp(1, MAX_WIDTH),
        tracks,
        exact_limit: num(params, "exact_limit")?.unwrap_or(lod::DEFAULT_EXACT_LIMIT).min(MAX_EXACT_LIMIT),
    };
    Ok(lod::window(&data.lod(), &req))
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
    let data = one_host(session, run, host)?;
    let details = lod::event_details(&data.lod(), id).ok_or_else(|| bad("id", format!("no event with id {id}")))?;
    let r = EventRef::from_id(id);
    Ok(EventWithSelf { details, self_ps: agg::self_time(&data.lod(), r.track, r.pos) })
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
    let data = one_host(session, run, host)?;
    Ok(lod::search(&data.lod(), prefix, limit.unwrap_or(lod::DEFAULT_SEARCH_LIMIT).min(MAX_SEARCH_LIMIT)))
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
    let data = one_host(session, run, host)?;
    let tracks = track_ids(params)?;
    let begin = num(params, "start_ps")?.unwrap_or(data.index.min_ps);
    let end = num(params, "end_ps")?.unwrap_or(data.index.max_ps);
    if end < begin {
        return Err(bad("end_ps", "before start_ps"));
    }
    Ok(agg::aggregate(&data.lod(), tracks.as_deref(), begin, end))
}

/// `GET /oxprof/api/trace/flow?id=`: the events of one flow.
pub fn flow(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    flow_id: u64,
) -> Result<lod::FlowResponse, ApiError> {
    let data = one_host(session, run, host)?;
    Ok(lod::flow_events(&data.lod(), flow_id))
}

/// Routes `/oxprof/api/trace/<sub>` for the server: `sub` is `tracks`, `window`, `event`,
/// `search`, `flow` or `aggregate`; `get` reads query parameters (`run`, `host` and the
/// route's own). Answers the JSON body; flow ids in it are decimal strings (JavaScript
/// numbers would round 56-bit ids).
pub fn route(
    session: &Session,
    run: &ServedRun,
    sub: &str,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ApiError> {
    let host = get("host").filter(|h| !h.is_empty());
    let host = host.as_deref();
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
    match sub {
        "tracks" => to_json(tracks(session, run, host)?),
        "window" => to_json(window(session, run, host, &params)?),
        "event" => to_json(event(session, run, host, id("id")?)?),
        "search" => {
            let prefix = get("prefix").unwrap_or_default();
            let limit = get("limit").and_then(|l| l.trim().parse::<usize>().ok());
            to_json(search(session, run, host, &prefix, limit)?)
        }
        "flow" => to_json(flow(session, run, host, id("id")?)?),
        "aggregate" => to_json(aggregate(session, run, host, &params)?),
        other => Err(ApiError::UnknownTool(format!("trace/{other}"))),
    }
}
