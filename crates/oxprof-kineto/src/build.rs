//! The second pass: the first pass's per-thread and per-stream buffers into the model, the
//! way XProf's GPU profiles look, so XProf-style tools read PyTorch traces unchanged:
//!
//! * `/host:CPU` (id 0): one line per host thread (id = tid, name from `thread_name`);
//!   plane stats: the trace's top-level metadata (`schemaVersion`, `baseTimeNanoseconds`,
//!   `distributedInfo`, `deviceProperties`, … as typed values or JSON text), `pid`,
//!   `process_name`;
//! * `/device:GPU:N` (id N): one line per stream, `Stream #S(Compute,MemcpyH2D,…)` as XProf
//!   names them (display name `stream S`, as PyTorch does); plane stats: the device's
//!   `deviceProperties` entry, plus XProf's `core_count`, `memory_size`,
//!   `compute_cap_major/minor`, `device_vendor`.
//!
//! Each event's `args` become its stats (typed; `correlation` and `context` under XProf's
//! names `correlation_id` and `context_id`); its category (and phase for instants and
//! counters) are stats of its event metadata. Added, as XProf's tools expect:
//! `kernel_details` and `memcpy_details` on GPU activity, `step_num` and `_r=1` (a step
//! root) on `ProfilerStep#N`,
//! `group_id` = N on every host event inside step N and on every GPU event launched
//! from one (by correlation id), and a `flow` stat on both ends of every flow (`ac2g`
//! launch → kernel with XProf's GPU-launch category).
//!
//! Planes are prepared one after the other (threads laid out side by side; the host
//! plane's launches give the device planes their steps), then the largest host thread is
//! drafted, then the other host threads beside the device streams (two lanes on rayon's
//! pool), and the planes finished in order: the model does not depend on the thread count.
//!
//! Events are sorted by start (longest first on ties, file order after that). Events that
//! overlap without nesting go to extra lines of their thread, so every line nests:
//!
//! ```text
//! thread 7            |---- a ----|
//!                           |---- b ----|      b starts inside a and ends after it
//! thread 7            |---- a ----|
//! thread 7 (overlap 1)      |---- b ----|
//! ```

use crate::KinetoError;
use crate::collect::{Arg, ArgVal, Class, Collected, Ident, Kind, LineKey, OPEN, RawEvent, RawLine, TopValue, keys};
use oxprof_model::limits::{Limit, LimitExceeded, LoadLimits};
use oxprof_model::{
    DiagnosticKind, Diagnostics, LineBuilder, LineDraft, MetadataIds, NewEventMetadata, PlaneBuilder, SharedBudget,
    StatInput, StrId, XPlane, XSpace,
};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::fmt::Write as _;

/// Most extra lines one thread gets for overlapping events; past this, events share the
/// last one (pathological input only: real traces need one or two).
const MAX_ROWS: usize = 64;
/// How many earlier events a flow looks back through for the event enclosing it.
const FLOW_LOOKBACK: usize = 64;

/// A step: `ProfilerStep#N` from `start` to `end` (ps from the origin).
#[derive(Debug, Clone, Copy)]
struct Step {
    start: i64,
    end: i64,
    num: i64,
}

/// Builds the space.
pub(crate) fn build(mut c: Collected, limits: &LoadLimits, file_bytes: u64) -> Result<XSpace, KinetoError> {
    let mut diag = std::mem::take(&mut c.diag);
    close_open_events(&mut c, &mut diag);
    let step_kinds = step_kinds(&c);
    let steps = steps(&c, &step_kinds);
    let base_ns = top_i64(&c, "baseTimeNanoseconds").unwrap_or(0);
    let absolute_origin_ns = i128::from(base_ns) + c.origin_ps.div_euclid(1000);
    let time_shift_ns = time_shift_ns(absolute_origin_ns);
    let origin_ns = absolute_origin_ns - time_shift_ns;
    let main_pid = main_pid(&c);
    let ctx = Context {
        steps,
        step_kinds,
        origin_ns,
        metadata_allowed: limits.metadata_entries.for_size(file_bytes),
        lines_allowed: limits.lines.for_size(file_bytes),
    };
    let mut state = State { metadata_used: 0, lines_used: 0, corr_group: FxHashMap::default() };

    let mut space = XSpace::default();
    // Host plane: threads ordered by process (main first), sort index, tid.
    let mut host: Vec<usize> = (0..c.lines.len()).filter(|&i| matches!(c.lines[i].key, LineKey::Host { .. })).collect();
    host.sort_by_key(|&i| host_order(&c, i, main_pid));
    let mut plane_stats = Vec::new();
    if time_shift_ns != 0 {
        plane_stats.push((keys::TIME_SHIFT_NS, PlaneValue::Arg(ArgVal::I64(saturate(time_shift_ns)))));
    }
    if let Some(pid) = main_pid {
        plane_stats.push((keys::PID, PlaneValue::Arg(ArgVal::I64(pid))));
        if let Some(&name) = c.process_names.get(&Ident::Num(pid)) {
            plane_stats.push((keys::PROCESS_NAME, PlaneValue::Arg(ArgVal::Str(name))));
        }
    }
    for (key, value) in &c.top {
        let name = c.strings.key_str(*key);
        // `deviceProperties` stays too (as JSON text): PyTorch analyses read the list as the
        // trace wrote it, whatever devices ran.
        if matches!(name, "ERROR" | "WARNING" | "computeProperties") {
            continue;
        }
        plane_stats.push(match value {
            TopValue::Scalar(v) => (*key, PlaneValue::Arg(*v)),
            TopValue::Compound { text, .. } => (*key, PlaneValue::Arg(ArgVal::Json(*text))),
        });
    }
    let host_lines = host.iter().map(|&i| host_line_name(&c, i, main_pid, &mut diag)).collect::<Vec<_>>();
    let mut seen = std::collections::HashSet::new();
    let shared = host_lines.iter().filter(|l| !seen.insert(l.name.as_str())).count();
    diag.add(DiagnosticKind::DuplicateThreadName, shared as u64);
    let mut prepared =
        vec![prepare_plane(&mut c, &ctx, &mut state, "/host:CPU", 0, &host, host_lines, &plane_stats, &mut diag)?];
    // A device plane refused by a budget ends the build once the planes before it are
    // drafted (their errors come first, as when planes were built one after the other).
    let mut refused = None;

    // Device planes, by ordinal; streams by id.
    let mut devices = c.devices.clone();
    devices.sort_unstable();
    for device in devices {
        let mut streams: Vec<(i64, usize)> = (0..c.lines.len())
            .filter_map(|i| match c.lines[i].key {
                LineKey::Device { device: d, stream } if d == device => Some((stream, i)),
                _ => None,
            })
            .collect();
        streams.sort_unstable();
        let lines: Vec<usize> = streams.iter().map(|&(_, i)| i).collect();
        let names = streams.iter().map(|&(stream, i)| stream_line(&c, &c.lines[i], stream)).collect();
        let stats = device_stats(&c, device);
        let name = format!("/device:GPU:{device}");
        match prepare_plane(&mut c, &ctx, &mut state, &name, device, &lines, names, &stats, &mut diag) {
            Ok(plane) => prepared.push(plane),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    space.planes = draft_planes(&c, &ctx, &state.corr_group, prepared, &mut diag)?;
    if let Some(e) = refused {
        return Err(e);
    }

    for (key, value) in &c.top {
        let target = match c.strings.key_str(*key) {
            "ERROR" => &mut space.errors,
            "WARNING" => &mut space.warnings,
            "host_name" => &mut space.hostnames,
            _ => continue,
        };
        match value {
            TopValue::Scalar(ArgVal::Str(s)) => target.push(c.strings.get(*s).to_string()),
            TopValue::Compound { text, .. } => target.extend(json_strings(c.strings.get(*text))),
            _ => {}
        }
    }
    space.diagnostics = diag;
    Ok(space)
}

/// What every plane's build reads.
struct Context {
    steps: Vec<Step>,
    /// Per event kind, N when it is `ProfilerStep#N`.
    step_kinds: StepKinds,
    /// The origin of event times, ns since the Unix epoch.
    origin_ns: i128,
    metadata_allowed: u64,
    lines_allowed: u64,
}

/// What planes' builds accumulate.
struct State {
    metadata_used: u64,
    lines_used: u64,
    /// Correlation id → step of its launch (host events), for the GPU events it launched.
    corr_group: FxHashMap<i64, i64>,
}

/// A line's id, name and display name.
struct LineName {
    id: i64,
    name: String,
    display_name: String,
}

/// Begin events whose end never came last until the end of the trace.
fn close_open_events(c: &mut Collected, diag: &mut Diagnostics) {
    let end = c.max_end;
    for line in &mut c.lines {
        for i in std::mem::take(&mut line.open) {
            let e = &mut line.events[i as usize];
            e.dur = (end - e.start).max(0);
            diag.add(DiagnosticKind::UnmatchedBegin, 1);
        }
    }
}

/// Per event kind, N when it is named `ProfilerStep#N`.
fn step_kinds(c: &Collected) -> StepKinds {
    let mut out = StepKinds { marked: vec![0; c.kinds.len().div_ceil(64)], nums: FxHashMap::default() };
    for (i, k) in c.kinds.iter().enumerate() {
        if k.class.is_device() || k.row != Kind::Complete {
            continue;
        }
        if let Some(n) = c.strings.get(k.name).strip_prefix("ProfilerStep#").and_then(|n| n.parse::<i64>().ok()) {
            out.marked[i / 64] |= 1 << (i % 64);
            out.nums.insert(i as u32, n);
        }
    }
    out
}

/// Per event kind, N when it is `ProfilerStep#N`: read for every event, held for every
/// kind (a trace may have millions), so a bit per kind and the few steps' numbers aside.
struct StepKinds {
    marked: Vec<u64>,
    nums: FxHashMap<u32, i64>,
}

impl StepKinds {
    #[inline]
    fn get(&self, kind: u32) -> Option<i64> {
        let bits = self.marked.get(kind as usize / 64)?;
        if bits & (1 << (kind % 64)) == 0 {
            return None;
        }
        self.nums.get(&kind).copied()
    }

    fn is_empty(&self) -> bool {
        self.nums.is_empty()
    }
}

/// The host's `ProfilerStep#N` events, by start.
fn steps(c: &Collected, step_kinds: &StepKinds) -> Vec<Step> {
    let mut out = Vec::new();
    if step_kinds.is_empty() {
        return out;
    }
    for line in &c.lines {
        if !matches!(line.key, LineKey::Host { .. }) {
            continue;
        }
        for e in &line.events {
            if let Some(num) = step_kinds.get(e.kind) {
                out.push(Step { start: e.start, end: e.start.saturating_add(e.dur), num });
            }
        }
    }
    out.sort_by_key(|s| (s.start, s.num));
    out
}

/// The step a host time falls in.
fn step_at(steps: &[Step], t: i64) -> Option<i64> {
    let i = steps.partition_point(|s| s.start <= t);
    let s = steps.get(i.checked_sub(1)?)?;
    (t < s.end || (t == s.start)).then_some(s.num)
}

fn top_i64(c: &Collected, key: &str) -> Option<i64> {
    c.top.iter().find(|(k, _)| c.strings.key_str(*k) == key).and_then(|(_, v)| match v {
        TopValue::Scalar(v) => Arg::new(0, *v).as_i64(),
        TopValue::Compound { .. } => None,
    })
}

/// The process with the most host events (ties: the smaller pid).
fn main_pid(c: &Collected) -> Option<i64> {
    let mut counts: FxHashMap<i64, usize> = FxHashMap::default();
    for line in &c.lines {
        if let LineKey::Host { pid: Ident::Num(pid), .. } = line.key {
            *counts.entry(pid).or_default() += line.events.len();
        }
    }
    counts.into_iter().max_by_key(|&(pid, n)| (n, std::cmp::Reverse(pid))).map(|(pid, _)| pid)
}

fn host_order(c: &Collected, i: usize, main_pid: Option<i64>) -> (bool, Ident, i64, Ident) {
    let LineKey::Host { pid, tid } = c.lines[i].key else { return (true, Ident::Num(0), 0, Ident::Num(0)) };
    let sort = c.thread_sort.get(&(pid, tid)).copied().unwrap_or(match tid {
        Ident::Num(n) => n,
        Ident::Str(_) => i64::MAX,
    });
    (Some(pid) != main_pid.map(Ident::Num), pid, sort, tid)
}

fn host_line_name(c: &Collected, i: usize, main_pid: Option<i64>, diag: &mut Diagnostics) -> LineName {
    let LineKey::Host { pid, tid } = c.lines[i].key else {
        return LineName { id: i as i64, name: String::new(), display_name: String::new() };
    };
    let name = match (c.thread_names.get(&(pid, tid)), tid) {
        (Some(&n), _) => c.strings.get(n).trim().to_string(),
        (None, Ident::Str(s)) => match (c.strings.get(s), pid) {
            // Kineto's end-of-window marker has an empty pid and tid.
            ("", Ident::Str(p)) if c.strings.get(p).is_empty() => "Record Window".to_string(),
            ("", _) => "(unnamed)".to_string(),
            (name, _) => name.to_string(),
        },
        (None, Ident::Num(t)) => {
            diag.add(DiagnosticKind::MissingThreadName, 1);
            format!("thread {t}")
        }
    };
    let id = match (pid, tid) {
        (Ident::Num(p), Ident::Num(t)) if Some(p) == main_pid => t,
        (Ident::Num(p), Ident::Num(t)) => ((p & 0xffff_ffff) << 32) | (t & 0xffff_ffff),
        // Pseudo threads (`"Spans"`, `"Traces"`, counters): ids above any tid.
        _ => (1 << 48) + i as i64,
    };
    let name = match pid {
        Ident::Num(p) if Some(p) != main_pid => format!("{name} (pid {p})"),
        _ => name,
    };
    LineName { id, name, display_name: String::new() }
}

/// XProf's stream line name: `Stream #7(Compute,MemcpyH2D)`.
fn stream_line(c: &Collected, line: &RawLine, stream: i64) -> LineName {
    let mut kinds: Vec<&str> = Vec::new();
    if line.kernels {
        kinds.push("Compute");
    }
    for &copy in &line.copies {
        let name = c.strings.get(copy);
        let kind = if name.contains("HtoD") {
            "MemcpyH2D"
        } else if name.contains("DtoH") {
            "MemcpyD2H"
        } else if name.contains("DtoD") {
            "MemcpyD2D"
        } else if name.contains("PtoP") {
            "MemcpyP2P"
        } else {
            "Memcpy"
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    if line.memsets {
        kinds.push("Memset");
    }
    let name =
        if kinds.is_empty() { format!("Stream #{stream}") } else { format!("Stream #{stream}({})", kinds.join(",")) };
    // XProf's tools read the name; the trace viewer shows the display name, PyTorch's own.
    LineName { id: stream, name, display_name: format!("stream {stream}") }
}

/// A device plane's stats: its `deviceProperties` entry and XProf's capability stats.
fn device_stats(c: &Collected, device: i64) -> Vec<(u32, PlaneValue)> {
    let mut out = Vec::new();
    let amd = c.top.iter().any(|(k, _)| matches!(c.strings.key_str(*k), "hip_runtime_version" | "roctracer_version"));
    for (key, value) in &c.top {
        if !matches!(c.strings.key_str(*key), "deviceProperties" | "computeProperties") {
            continue;
        }
        let TopValue::Compound { objects: Some(objects), .. } = value else { continue };
        let Some(props) = objects
            .iter()
            .find(|o| o.iter().any(|(k, v)| c.strings.key_str(*k) == "id" && Arg::new(0, *v).as_i64() == Some(device)))
        else {
            continue;
        };
        out.extend(props.iter().map(|&(k, v)| (k, PlaneValue::Arg(v))));
        let prop = |names: &[&str]| {
            props
                .iter()
                .find(|(k, _)| names.contains(&c.strings.key_str(*k)))
                .and_then(|(_, v)| Arg::new(0, *v).as_i64())
        };
        for (stat, names) in [
            (keys::CORE_COUNT, &["numSms", "multiProcessorCount"][..]),
            (keys::MEMORY_SIZE, &["totalGlobalMem"]),
            (keys::COMPUTE_CAP_MAJOR, &["computeMajor", "major"]),
            (keys::COMPUTE_CAP_MINOR, &["computeMinor", "minor"]),
        ] {
            if let Some(v) = prop(names) {
                out.push((stat, PlaneValue::Arg(ArgVal::I64(v))));
            }
        }
        let name = props.iter().find(|(k, _)| c.strings.key_str(*k) == "name").and_then(|(_, v)| match v {
            ArgVal::Str(s) => Some(c.strings.get(*s)),
            _ => None,
        });
        let vendor = match name {
            _ if amd => "AMD",
            Some(n) if n.contains("AMD") || n.contains("Radeon") || n.contains("Instinct") => "AMD",
            _ => "Nvidia",
        };
        out.push((keys::DEVICE_VENDOR, PlaneValue::Text(vendor)));
    }
    out
}

/// A plane stat's value: from the trace, or a name the importer gives.
#[derive(Debug, Clone, Copy)]
enum PlaneValue {
    Arg(ArgVal),
    Text(&'static str),
}

/// The strings of a JSON array of strings (Kineto's `ERROR`/`WARNING` lists).
fn json_strings(text: &str) -> Vec<String> {
    let mut sc = crate::json::Scanner::new(text.as_bytes());
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let mut trailing = 0;
    if sc.expect(b'[', "[").is_err() || !sc.first_member(b']').unwrap_or(false) {
        return out;
    }
    loop {
        match sc.value(&mut scratch) {
            Ok(crate::json::ValueRef::Str(s)) => out.push(String::from_utf8_lossy(s.bytes()).into_owned()),
            Ok(_) => {}
            Err(_) => return out,
        }
        if !sc.next_member(b']', &mut trailing).unwrap_or(false) {
            return out;
        }
    }
}

/// The stat an arg is stored as (XProf's names where the meaning is the same).
#[inline]
fn stat_key(key: u32) -> u32 {
    match key {
        keys::CORRELATION => keys::CORRELATION_ID,
        keys::CONTEXT => keys::CONTEXT_ID,
        k => k,
    }
}

/// One line of the plane being built: the events of one row of one thread.
struct Row<'a> {
    name: &'a LineName,
    row: usize,
    /// Indexes into the thread's sorted events.
    events: &'a [u32],
}

/// A plane ready for its events: its builder (metadata and plane stats added), the ids
/// its lines are drafted against, and its threads laid out in rows.
struct Prepared {
    builder: PlaneBuilder,
    ids: MetadataIds,
    is_host: bool,
    /// Per event kind, the key of its event metadata (0: unused on this plane).
    kind_key: Vec<u32>,
    threads: Vec<Thread>,
    row_count: usize,
}

/// One thread (or stream) of a plane: its rows, taken out of `Collected`, laid out.
struct Thread {
    line: RawLine,
    /// Indexes into the sorted events, one list per row (rows nest).
    rows: Vec<Vec<u32>>,
    /// `(event index, encoded flow)` sorted by event.
    flows: Vec<(u32, u64)>,
    name: LineName,
}

/// Lays out a plane's threads (side by side), settles its metadata and budgets; host
/// planes enter their launches' (correlation, step) into `state.corr_group`, which device
/// planes read.
#[allow(clippy::too_many_arguments)]
fn prepare_plane(
    c: &mut Collected,
    ctx: &Context,
    state: &mut State,
    name: &str,
    id: i64,
    lines: &[usize],
    names: Vec<LineName>,
    plane_stats: &[(u32, PlaneValue)],
    diag: &mut Diagnostics,
) -> Result<Prepared, KinetoError> {
    let is_host = name == "/host:CPU";
    // The plane's threads, taken out of `c`: each is drafted (and freed) on its own.
    let own: Vec<(RawLine, LineName)> = lines.iter().map(|&li| c.lines[li].take()).zip(names).collect();
    // The host plane keeps the first pass's string table (it names almost everything):
    // one copy of each string, not two.
    let shared = is_host.then(|| c.strings.share());
    let c: &Collected = c;
    // Sort each thread's events, lay them out in rows, bind its flows; a host thread's
    // launches in steps, in the order its events are drafted.
    let laid: Vec<_> = own
        .into_par_iter()
        .map(|(mut line, name)| {
            let mut d = Diagnostics::default();
            sort_events(&mut line.events);
            let rows = layout_rows(&line.events, &mut d);
            let flows = bind_flows(&mut line, &mut d);
            // Bound: the raw endpoints are not needed again (less memory at the build's peak).
            line.flows = Vec::new();
            let launched = if is_host { launches(ctx, &line, &rows) } else { Vec::new() };
            (Thread { line, rows, flows, name }, launched, d)
        })
        .collect();
    let mut threads = Vec::with_capacity(laid.len());
    for (thread, launched, d) in laid {
        diag.merge(&d);
        state.corr_group.extend(launched);
        threads.push(thread);
    }

    // Metadata, in order of first use.
    let mut kind_key: Vec<u32> = vec![0; c.kinds.len()];
    let mut kinds_in_order: Vec<u32> = Vec::new();
    let mut stat_used = vec![false; c.strings.key_count() + 1];
    let mut stats_in_order: Vec<u32> = Vec::new();
    let use_stat = |k: u32, stat_used: &mut Vec<bool>, order: &mut Vec<u32>| {
        let k = k as usize;
        if k < stat_used.len() && !stat_used[k] {
            stat_used[k] = true;
            order.push(k as u32);
        }
    };
    for &(k, _) in plane_stats {
        use_stat(k, &mut stat_used, &mut stats_in_order);
    }
    for Thread { line, rows, flows, .. } in &threads {
        if !flows.is_empty() {
            use_stat(keys::FLOW, &mut stat_used, &mut stats_in_order);
        }
        for row in rows {
            for &ei in row {
                let e = &line.events[ei as usize];
                if kind_key[e.kind as usize] == 0 {
                    kind_key[e.kind as usize] = kinds_in_order.len() as u32 + 1;
                    kinds_in_order.push(e.kind);
                }
                for a in line.args_of(e) {
                    use_stat(stat_key(a.key), &mut stat_used, &mut stats_in_order);
                }
                match c.kinds[e.kind as usize].class {
                    Class::Kernel => use_stat(keys::KERNEL_DETAILS, &mut stat_used, &mut stats_in_order),
                    Class::Memcpy => use_stat(keys::MEMCPY_DETAILS, &mut stat_used, &mut stats_in_order),
                    _ => {}
                }
                if !ctx.steps.is_empty() {
                    use_stat(keys::GROUP_ID, &mut stat_used, &mut stats_in_order);
                }
                if ctx.step_kinds.get(e.kind).is_some() {
                    use_stat(keys::STEP_NUM, &mut stat_used, &mut stats_in_order);
                    use_stat(keys::IS_ROOT, &mut stat_used, &mut stats_in_order);
                }
            }
        }
    }
    use_stat(keys::CATEGORY, &mut stat_used, &mut stats_in_order);
    use_stat(keys::PHASE, &mut stat_used, &mut stats_in_order);

    let metadata = (kinds_in_order.len() + stats_in_order.len()) as u64;
    state.metadata_used += metadata;
    if state.metadata_used > ctx.metadata_allowed {
        return Err(limit(Limit::MetadataEntries, ctx.metadata_allowed, state.metadata_used));
    }
    let row_count: usize = threads.iter().map(|t| t.rows.len()).sum();
    state.lines_used += row_count as u64;
    if state.lines_used > ctx.lines_allowed {
        return Err(limit(Limit::Lines, ctx.lines_allowed, state.lines_used));
    }

    let unlimited = SharedBudget::unlimited(Limit::MetadataEntries);
    let mut p = match shared {
        Some(strings) => PlaneBuilder::with_strings(id, name, strings),
        None => PlaneBuilder::new(id, name),
    };
    p.reserve(kinds_in_order.len(), stats_in_order.len(), row_count);
    for &k in &stats_in_order {
        let n = p.intern(c.strings.key_str(k));
        p.add_stat_metadata(i64::from(k), i64::from(k), n, StrId::EMPTY).map_err(KinetoError::Build)?;
    }
    for (i, &kind) in kinds_in_order.iter().enumerate() {
        let k = c.kinds[kind as usize];
        let cat = c.strings.get(k.cat);
        if !cat.is_empty() {
            p.add_metadata_stat(i64::from(keys::CATEGORY), StatInput::Str(cat), &unlimited)
                .map_err(KinetoError::Build)?;
        }
        let phase = match k.row {
            Kind::Complete => None,
            Kind::Instant => Some("i"),
            Kind::Counter => Some("C"),
        };
        if let Some(ph) = phase {
            p.add_metadata_stat(i64::from(keys::PHASE), StatInput::Str(ph), &unlimited).map_err(KinetoError::Build)?;
        }
        let name = p.intern(c.strings.get(k.name));
        let key = i as i64 + 1;
        p.add_event_metadata(key, NewEventMetadata { id: key, name, ..Default::default() })
            .map_err(KinetoError::Build)?;
    }
    for &(k, v) in plane_stats {
        let input = match v {
            PlaneValue::Text(t) => StatInput::Str(t),
            PlaneValue::Arg(v) => stat_input(c, v),
        };
        p.add_plane_stat(i64::from(k), input, &unlimited).map_err(KinetoError::Build)?;
    }

    let ids = p.metadata_ids();
    Ok(Prepared { builder: p, ids, is_host, kind_key, threads, row_count })
}

/// Drafts the largest host thread, then the others beside the device streams (each
/// thread's rows freed as soon as its lines are drafted), then finishes the planes in order; the first error in plane and
/// thread order wins, as when they were built one after the other.
fn draft_planes(
    c: &Collected,
    ctx: &Context,
    corr_group: &FxHashMap<i64, i64>,
    mut prepared: Vec<Prepared>,
    diag: &mut Diagnostics,
) -> Result<Vec<XPlane>, KinetoError> {
    let unlimited = SharedBudget::unlimited(Limit::MetadataEntries);
    let threads: Vec<(usize, Thread)> = prepared
        .iter_mut()
        .enumerate()
        .flat_map(|(i, p)| std::mem::take(&mut p.threads).into_iter().map(move |t| (i, t)))
        .collect();
    // The largest host thread alone, then the other host threads one after the other
    // beside the device streams one after the other. A thread's rows are freed once it is
    // drafted, so memory peaks where one lane's would (all rows and the largest thread's
    // lines), not higher: the second lane only starts once the largest rows are gone.
    let draft = |(i, thread): (usize, Thread)| {
        let plane = &prepared[i];
        let mut text = String::new();
        let drafts = thread
            .rows
            .iter()
            .enumerate()
            .map(|(r, events)| {
                let row = Row { name: &thread.name, row: r, events };
                draft_row(c, ctx, plane, &unlimited, &thread.line, &row, &thread.flows, corr_group, &mut text)
            })
            .collect::<Result<Vec<LineDraft>, KinetoError>>();
        drop(thread);
        (i, drafts)
    };
    // Each thread keeps its place (`k`): the drafts are put back in plane and thread order.
    let (mut host, device): (Vec<_>, Vec<_>) =
        threads.into_iter().enumerate().partition(|(_, (i, _))| prepared[*i].is_host);
    let largest = host.iter().enumerate().max_by_key(|(_, (_, (_, t)))| t.line.events.len()).map(|(h, _)| h);
    let draft_at = |(k, thread): (usize, (usize, Thread))| (k, draft(thread));
    let mut drafted: Vec<_> = largest.map(|h| draft_at(host.remove(h))).into_iter().collect();
    let (rest, device) = rayon::join(
        || host.into_iter().map(draft_at).collect::<Vec<_>>(),
        || device.into_iter().map(draft_at).collect::<Vec<_>>(),
    );
    drafted.extend(rest);
    drafted.extend(device);
    drafted.sort_unstable_by_key(|&(k, _)| k);
    let mut drafted = drafted.into_iter().map(|(_, d)| d).peekable();
    let mut planes = Vec::with_capacity(prepared.len());
    for (i, plane) in prepared.into_iter().enumerate() {
        let Prepared { builder: mut p, ids, row_count, .. } = plane;
        drop(ids);
        let mut drafts = Vec::with_capacity(row_count);
        while let Some((_, result)) = drafted.next_if(|(j, _)| *j == i) {
            drafts.extend(result?);
        }
        p.add_lines(drafts).map_err(KinetoError::Build)?;
        planes.push(p.finish(diag));
    }
    Ok(planes)
}

/// A host thread's (correlation, step) pairs: its events launched with a correlation id
/// inside a step, row by row, in the order they are drafted.
fn launches(ctx: &Context, line: &RawLine, rows: &[Vec<u32>]) -> Vec<(i64, i64)> {
    if ctx.steps.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for row in rows {
        for &ei in row {
            let e = &line.events[ei as usize];
            let args = line.args_of(e);
            // The last `correlation` arg, as drafting reads it.
            let correlation = args.iter().rev().find(|a| stat_key(a.key) == keys::CORRELATION_ID).and_then(Arg::as_i64);
            if let (Some(corr), Some(g)) = (correlation, step_at(&ctx.steps, e.start)) {
                out.push((corr, g));
            }
        }
    }
    out
}

/// One row of a thread of `plane` as a line draft; device events take their step from the
/// host launch they came from (`corr_group`).
#[allow(clippy::too_many_arguments)]
fn draft_row(
    c: &Collected,
    ctx: &Context,
    plane: &Prepared,
    unlimited: &SharedBudget,
    line: &RawLine,
    row: &Row<'_>,
    flows: &[(u32, u64)],
    corr_group: &FxHashMap<i64, i64>,
    text: &mut String,
) -> Result<LineDraft, KinetoError> {
    let (ids, kind_key) = (&plane.ids, &plane.kind_key);
    let first = row.events.iter().map(|&i| line.events[i as usize].start).min().unwrap_or(0);
    let last = row
        .events
        .iter()
        .map(|&i| line.events[i as usize].start.saturating_add(line.events[i as usize].dur))
        .max()
        .unwrap_or(0);
    let line_ns = first.div_euclid(1000);
    let base_ps = line_ns * 1000;
    let mut b = LineBuilder::new(ids, unlimited, row.events.len());
    b.reserve_stats(stats_at_most(c, ctx, line, row, flows));
    b.set_timestamp_ns(saturate(ctx.origin_ns + i128::from(line_ns)));
    let (id, name, display_name) = if row.row == 0 {
        (row.name.id, row.name.name.clone(), row.name.display_name.clone())
    } else {
        let overlap = |name: &str| format!("{name} (overlap {})", row.row);
        let display_name =
            if row.name.display_name.is_empty() { String::new() } else { overlap(&row.name.display_name) };
        (row.name.id ^ ((row.row as i64) << 52), overlap(&row.name.name), display_name)
    };
    b.set_id(id);
    b.set_display_id(id);
    b.set_name(name);
    if !display_name.is_empty() {
        b.set_display_name(display_name);
    }
    b.set_duration_ps(last.saturating_sub(base_ps));
    let mut fi = flows.partition_point(|&(e, _)| e < row.events.first().copied().unwrap_or(0));
    for &ei in row.events {
        let e = &line.events[ei as usize];
        let kind = c.kinds[e.kind as usize];
        let args = line.args_of(e);
        let mut correlation = None;
        for a in args {
            let key = stat_key(a.key);
            if key == keys::CORRELATION_ID {
                correlation = a.as_i64();
            }
            b.push_stat(ids, i64::from(key), stat_input(c, a.value())).map_err(KinetoError::Build)?;
        }
        let group = if ctx.steps.is_empty() {
            None
        } else if plane.is_host {
            step_at(&ctx.steps, e.start)
        } else {
            correlation.and_then(|corr| corr_group.get(&corr).copied())
        };
        if let Some(g) = group {
            b.push_stat(ids, i64::from(keys::GROUP_ID), StatInput::Int64(g)).map_err(KinetoError::Build)?;
        }
        if let Some(n) = ctx.step_kinds.get(e.kind) {
            // XProf's step markers: a root event (`_r=1`) with its step number.
            b.push_stat(ids, i64::from(keys::STEP_NUM), StatInput::Int64(n)).map_err(KinetoError::Build)?;
            b.push_stat(ids, i64::from(keys::IS_ROOT), StatInput::Int64(1)).map_err(KinetoError::Build)?;
        }
        match kind.class {
            Class::Kernel => {
                kernel_details(c, args, text);
                b.push_stat(ids, i64::from(keys::KERNEL_DETAILS), StatInput::Str(text)).map_err(KinetoError::Build)?;
            }
            Class::Memcpy => {
                memcpy_details(c, c.strings.get(kind.name), args, text);
                b.push_stat(ids, i64::from(keys::MEMCPY_DETAILS), StatInput::Str(text)).map_err(KinetoError::Build)?;
            }
            _ => {}
        }
        // Flows bound to this event (the flow list is sorted by event).
        while fi < flows.len() && flows[fi].0 < ei {
            fi += 1;
        }
        while fi < flows.len() && flows[fi].0 == ei {
            b.push_stat(ids, i64::from(keys::FLOW), StatInput::Uint64(flows[fi].1)).map_err(KinetoError::Build)?;
            fi += 1;
        }
        let key = i64::from(kind_key[e.kind as usize]);
        b.push_event(ids, key, e.start - base_ps, e.dur).map_err(KinetoError::Build)?;
    }
    Ok(b.finish())
}

/// At most how many stats [`draft_row`] gives a row: every arg, and a group, a step
/// number and root, kernel or memcpy details and its flows where they may apply.
fn stats_at_most(c: &Collected, ctx: &Context, line: &RawLine, row: &Row<'_>, flows: &[(u32, u64)]) -> usize {
    let per_event = |ei: &u32| {
        let e = &line.events[*ei as usize];
        let step = ctx.step_kinds.get(e.kind).is_some();
        let details = matches!(c.kinds[e.kind as usize].class, Class::Kernel | Class::Memcpy);
        e.nargs as usize + usize::from(!ctx.steps.is_empty()) + 2 * usize::from(step) + usize::from(details)
    };
    // Flows of other rows of the thread are counted too: an upper bound.
    row.events.iter().map(per_event).sum::<usize>() + flows.len()
}

fn limit(limit: Limit, allowed: u64, at_least: u64) -> KinetoError {
    KinetoError::LimitExceeded(LimitExceeded { limit, allowed, at_least })
}

/// Timestamps are nanoseconds in the model but picoseconds in a `u64` in the trace viewer
/// (as in XProf), which holds only ~106 days: epoch-based traces (Kineto writes microseconds
/// since 1970) would wrap there and show nothing. Such traces are shifted to start within
/// 30 days of zero, as XProf's own profilers normalise XSpace timestamps; the shift is
/// kept as the host plane's `oxprof_time_shift_ns` stat so absolute times can be rebuilt
/// (the Chrome JSON export and the PyTorch views add it back).
fn time_shift_ns(absolute_origin_ns: i128) -> i128 {
    /// Origins that leave room for the longest trace the importer accepts (2^62 ps) below
    /// 2^63 ps stay as written (timestamps since boot, synthetic traces).
    const KEEP_BELOW_NS: i128 = ((1i128 << 63) - (1i128 << 62)) / 1000;
    /// Whole multiples of 30 days: ranks of one run (files imported one by one) get the
    /// same shift, and stay aligned, unless their capture straddles such a boundary.
    const SHIFT_UNIT_NS: i128 = 30 * 86_400 * 1_000_000_000;
    if absolute_origin_ns.abs() < KEEP_BELOW_NS {
        0
    } else {
        absolute_origin_ns.div_euclid(SHIFT_UNIT_NS) * SHIFT_UNIT_NS
    }
}

fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[inline]
fn stat_input(c: &Collected, v: ArgVal) -> StatInput<'_> {
    match v {
        ArgVal::Null => StatInput::Unset,
        ArgVal::Bool(b) => StatInput::Int64(i64::from(b)),
        ArgVal::I64(x) => StatInput::Int64(x),
        ArgVal::U64(x) => StatInput::Uint64(x),
        ArgVal::F64(x) => StatInput::Double(x),
        ArgVal::Str(s) | ArgVal::Json(s) => StatInput::Str(c.strings.get(s)),
    }
}

/// Sorts a thread's events by start, longest first on ties, file order after that.
fn sort_events(events: &mut [RawEvent]) {
    let order = |a: &RawEvent, b: &RawEvent| a.start.cmp(&b.start).then(b.dur.cmp(&a.dur));
    if !events.is_sorted_by(|a, b| order(a, b).is_le()) {
        events.sort_by(order);
    }
}

/// Rows of sorted events such that events of one row nest: an event goes to the first row
/// whose open events all enclose it (or have ended).
fn layout_rows(events: &[RawEvent], diag: &mut Diagnostics) -> Vec<Vec<u32>> {
    let mut rows: Vec<Vec<u32>> = vec![Vec::with_capacity(events.len())];
    let mut stacks: Vec<Vec<i64>> = vec![Vec::new()];
    let mut moved = 0u64;
    for (i, e) in events.iter().enumerate() {
        debug_assert!(e.dur != OPEN);
        let end = e.start.saturating_add(e.dur);
        let mut placed = false;
        for r in 0..stacks.len() {
            let stack = &mut stacks[r];
            while stack.last().is_some_and(|&top| top <= e.start) {
                stack.pop();
            }
            if stack.last().is_none_or(|&top| end <= top) || r + 1 == MAX_ROWS {
                stack.push(end);
                rows[r].push(i as u32);
                moved += u64::from(r > 0);
                placed = true;
                break;
            }
        }
        if !placed {
            stacks.push(vec![end]);
            rows.push(vec![i as u32]);
            moved += 1;
        }
    }
    diag.add(DiagnosticKind::OverlappingEvents, moved);
    rows
}

/// Binds each flow endpoint of a thread to the innermost event enclosing its time: `(event
/// index, encoded flow)` sorted by event.
fn bind_flows(line: &mut RawLine, diag: &mut Diagnostics) -> Vec<(u32, u64)> {
    let events = &line.events;
    let mut out = Vec::with_capacity(line.flows.len());
    for f in &line.flows {
        let i = events.partition_point(|e| e.start <= f.ts);
        let found =
            (i.saturating_sub(FLOW_LOOKBACK)..i).rev().find(|&k| events[k].start.saturating_add(events[k].dur) >= f.ts);
        match found {
            Some(k) => out.push((k as u32, f.encoded)),
            None => diag.add(DiagnosticKind::UnboundFlow, 1),
        }
    }
    out.sort_by_key(|&(e, _)| e);
    out
}

/// XProf's `kernel_details` text from Kineto's kernel args.
fn kernel_details(c: &Collected, args: &[Arg], out: &mut String) {
    out.clear();
    let get = |key: u32| args.iter().find(|a| a.key == key);
    let int = |key: u32| get(key).and_then(Arg::as_i64).unwrap_or(0);
    let occupancy = match get(keys::OCCUPANCY).map(Arg::value) {
        Some(ArgVal::F64(x)) => x,
        Some(ArgVal::I64(x)) => x as f64,
        _ => 0.0,
    };
    let _ =
        write!(out, "regs:{} static_shared:{} dynamic_shared:0 grid:", int(keys::REGISTERS), int(keys::SHARED_MEMORY));
    dims(c, get(keys::GRID), out);
    out.push_str(" block:");
    dims(c, get(keys::BLOCK), out);
    let _ = write!(out, " occ_pct:{occupancy}");
}

/// `x,y,z` from a JSON array such as `[50, 1, 1]` (`1,1,1` when absent).
fn dims(c: &Collected, arg: Option<&Arg>, out: &mut String) {
    let text = match arg.map(Arg::value) {
        Some(ArgVal::Json(s)) => c.strings.get(s),
        _ => "",
    };
    let start = out.len();
    for part in text.split(|ch: char| !ch.is_ascii_digit()).filter(|p| !p.is_empty()) {
        if out.len() > start {
            out.push(',');
        }
        out.push_str(part);
    }
    if out.len() == start {
        out.push_str("1,1,1");
    }
}

/// XProf's `memcpy_details` text: the copy kind from the event name, `num_bytes` from args.
fn memcpy_details(_c: &Collected, name: &str, args: &[Arg], out: &mut String) {
    out.clear();
    let kind = name.split_whitespace().nth(1).unwrap_or("");
    let bytes = args.iter().find(|a| a.key == keys::BYTES).and_then(Arg::as_i64).unwrap_or(0);
    let _ = write!(out, "kind:{kind}\nnum_bytes:{bytes}");
}
