//! XProf 2.24.2's Perfetto trace of one host's DCN collectives (`megascale_stats` with
//! `perfetto=true`: `xprof/convert/megascale_perfetto/`): the host's TensorCore lines
//! (`Steps`, `XLA Modules`, `XLA Ops`, `XLA TraceMe`) and its `/device:CUSTOM:Megascale
//! Trace` plane regrouped per TPU, events tagged with their program run, tiny ops folded,
//! flows drawn from each send/recv to its DMA and done ops, and network/in-flight counters,
//! written as Perfetto `TracePacket`s on one interned sequence and gzipped (level 1).
//!
//! ```text
//! 2. TPUs
//!   /device:TPU:0
//!     1. Steps        |10......|11......|
//!     2. XLA Modules  |jit_step|jit_step|          run_id 1, 2 (each op takes the run
//!     3. XLA Ops        |send.1|..|send-done.2|     of the last module started before it)
//!     Megascale         one track per collective graph key, D2H/H2D and network actions
//! ```
//!
//! Only the messages and fields XProf writes are defined here (field numbers of Perfetto's
//! `protos/perfetto/trace/`). Where XProf iterates hash maps (the TPUs while numbering
//! flows, an event's arguments while writing them), oxprof goes by ascending TPU id and
//! first-seen argument: flow ids, argument order and interned ids may differ from XProf's
//! (its own differ from run to run); tracks, packets and every value are XProf's. Events are
//! sorted with libstdc++'s `std::sort`, so ties keep XProf's order.

use oxprof_model::schema::{StatType, TPU_PLANE_PREFIX};
use oxprof_model::{StatValue, XPlane, XSpace};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// The plane XProf reads Megascale action graphs from.
pub const MEGASCALE_PLANE_NAME: &str = "/device:CUSTOM:Megascale Trace";

/// The TensorCore lines XProf keeps.
const TPU_LINES: [&str; 4] = ["Steps", "XLA Modules", "XLA Ops", "XLA TraceMe"];

/// XProf writes every packet on this one sequence, so interning spans the whole file.
const SEQUENCE_ID: u32 = 1;
/// `TracePacket.SequenceFlags`.
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

use oxprof_wire::perfetto::{
    CounterDescriptor, DebugAnnotation, InternedData, InternedName, InternedString, Trace, TracePacket,
    TrackDescriptor, TrackEvent, TrackEventType,
};

// ---------------------------------------------------------------------------------------
// The intermediate trace (XProf's `XprofTrace`)
// ---------------------------------------------------------------------------------------

/// Index of an interned string.
type StringId = usize;

#[derive(Debug, Default)]
struct Strings {
    store: Vec<Vec<u8>>,
    index: FxHashMap<Vec<u8>, StringId>,
}

impl Strings {
    fn intern(&mut self, s: &[u8]) -> StringId {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = self.store.len();
        self.store.push(s.to_vec());
        self.index.insert(s.to_vec(), id);
        id
    }

    fn get(&self, id: StringId) -> &[u8] {
        &self.store[id]
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ArgValue {
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(StringId),
}

#[derive(Debug, Clone, Copy)]
struct Arg {
    key: StringId,
    value: ArgValue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FlowDirection {
    Source,
    Sink,
}

#[derive(Debug, Clone, Default)]
struct Event {
    name: String,
    timestamp_ps: i64,
    duration_ps: i64,
    args: Vec<Arg>,
    run_id: i64,
    flows: Vec<(i64, FlowDirection)>,
}

#[derive(Debug, Clone, Default)]
struct Track {
    name: String,
    events: Vec<Event>,
}

#[derive(Debug, Clone, Default)]
struct CounterTrack<T> {
    name: String,
    timestamps_ps: Vec<i64>,
    values: Vec<T>,
}

#[derive(Debug, Default)]
struct IrTrace {
    strings: Strings,
    /// TPU id → its TensorCore tracks (ascending ids where XProf iterates a hash map).
    tpu: BTreeMap<i64, Vec<Track>>,
    /// TPU id → its Megascale tracks.
    megascale: BTreeMap<i64, Vec<Track>>,
    rx: CounterTrack<i64>,
    tx: CounterTrack<i64>,
    rx_bw: CounterTrack<f64>,
    tx_bw: CounterTrack<f64>,
    inflight_count: CounterTrack<i64>,
    inflight_bytes: CounterTrack<i64>,
}

impl IrTrace {
    fn find_arg(&self, event: &Event, key: &str) -> impl Iterator<Item = ArgValue> {
        event
            .args
            .iter()
            .filter(move |a| self.strings.get(a.key) == key.as_bytes())
            .map(|a| a.value)
            .collect::<Vec<_>>()
            .into_iter()
    }

    /// `FindArgString`: the first argument of that key holding a string.
    fn arg_str(&self, event: &Event, key: &str) -> Option<&str> {
        self.find_arg(event, key).find_map(|v| match v {
            ArgValue::Str(id) => std::str::from_utf8(self.strings.get(id)).ok(),
            _ => None,
        })
    }

    /// `FindArgInt`.
    fn arg_int(&self, event: &Event, key: &str) -> Option<i64> {
        self.find_arg(event, key).find_map(|v| if let ArgValue::Int(x) = v { Some(x) } else { None })
    }

    /// `FindArgUint`.
    fn arg_uint(&self, event: &Event, key: &str) -> Option<u64> {
        self.find_arg(event, key).find_map(|v| if let ArgValue::Uint(x) = v { Some(x) } else { None })
    }
}

// ---------------------------------------------------------------------------------------
// The patterns XProf matches with RE2, by hand
// ---------------------------------------------------------------------------------------

fn leading_digits(s: &str) -> &str {
    &s[..s.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(s.len())]
}

/// `/device:TPU:(\d+)` matched whole.
fn tpu_id_of_plane(name: &str) -> Option<i64> {
    let digits = name.strip_prefix(TPU_PLANE_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `device_(\d+)_gid_` found anywhere: the raw device id.
fn device_id_of_graph_key(key: &str) -> Option<i64> {
    key.match_indices("device_").find_map(|(i, _)| {
        let rest = &key[i + "device_".len()..];
        let digits = leading_digits(rest);
        (!digits.is_empty() && rest[digits.len()..].starts_with("_gid_")).then(|| digits.parse().ok()).flatten()
    })
}

/// The graph key without its launch id and iteration (up to the first `$`).
fn short_graph_key(key: &str) -> &str {
    key.split('$').next().unwrap_or(key)
}

/// `device_(\d+)_gid_([^$]+)\$.*\^i(\d+).*` matched whole: (name, device, iteration), each
/// left at its default when the key does not match.
fn graph_key_order(key: &str) -> (String, i64, i64) {
    let parsed = (|| {
        let rest = key.strip_prefix("device_")?;
        let device = leading_digits(rest);
        let rest = rest[device.len()..].strip_prefix("_gid_")?;
        let dollar = rest.find('$')?;
        let (name, tail) = (&rest[..dollar], &rest[dollar + 1..]);
        if device.is_empty() || name.is_empty() || key.contains('\n') {
            return None;
        }
        // `.*` is greedy: the last `^i<digits>`.
        let iteration = tail.rmatch_indices("^i").find_map(|(i, _)| {
            let digits = leading_digits(&tail[i + 2..]);
            (!digits.is_empty()).then_some(digits)
        })?;
        Some((name.to_string(), device.parse().ok()?, iteration.parse().ok()?))
    })();
    parsed.unwrap_or_default()
}

/// `(send|recv|send-done|recv-done)\.?(\d+)?` matched whole, for one of those stems.
fn is_op(name: &str, stem: &str) -> bool {
    name.strip_prefix(stem).is_some_and(|rest| {
        let rest = rest.strip_prefix('.').unwrap_or(rest);
        rest.bytes().all(|b| b.is_ascii_digit())
    })
}

/// `[a-zA-Z-]+\.(\d+)` matched whole: the HLO id of an op name, else 0.
fn hlo_id(name: &str) -> i64 {
    let Some((stem, digits)) = name.split_once('.') else { return 0 };
    let ok = !stem.is_empty()
        && stem.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit());
    if ok { digits.parse().unwrap_or(0) } else { 0 }
}

fn is_graph_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-'
}

/// `device_(\d+)_gid_([a-zA-Z0-9_.-]+_\d+)` at `start`: (device digits, name, match end).
fn graph_name_at(s: &str, start: usize) -> Option<(&str, &str, usize)> {
    let rest = s[start..].strip_prefix("device_")?;
    let device = leading_digits(rest);
    if device.is_empty() {
        return None;
    }
    let name_start = start + "device_".len() + device.len() + "_gid_".len();
    if !rest[device.len()..].starts_with("_gid_") {
        return None;
    }
    let run = &s[name_start..];
    let run = &run[..run.bytes().position(|b| !is_graph_name_char(b)).unwrap_or(run.len())];
    // The class is greedy, then backs off to the last `_<digit>` with something before it.
    let bytes = run.as_bytes();
    let underscore =
        (1..bytes.len().saturating_sub(1)).rev().find(|&j| bytes[j] == b'_' && bytes[j + 1].is_ascii_digit())?;
    let end = underscore + 1 + leading_digits(&run[underscore + 1..]).len();
    Some((device, &run[..end], name_start + end))
}

/// The pattern above matched whole: (device, name).
fn graph_name_full(s: &str) -> Option<(&str, &str)> {
    graph_name_at(s, 0).and_then(|(device, name, end)| (end == s.len()).then_some((device, name)))
}

/// The pattern above found anywhere: its name (the collective's rendezvous).
fn graph_name_partial(s: &str) -> Option<&str> {
    s.match_indices("device_").find_map(|(i, _)| graph_name_at(s, i)).map(|(_, name, _)| name)
}

/// `_xla_host_transfer_rendezvous="([^"]*)"` found anywhere.
fn rendezvous_in_long_name(long_name: &str) -> Option<&str> {
    const KEY: &str = "_xla_host_transfer_rendezvous=\"";
    long_name.match_indices(KEY).find_map(|(i, _)| {
        let rest = &long_name[i + KEY.len()..];
        rest.find('"').map(|end| &rest[..end])
    })
}

/// Every `s(\d+)->(\d+)d|$c\d+=(\d+)` of a `buffer_sizes` string: (src, dst, bytes).
fn buffer_sizes(s: &str) -> Vec<(i64, i64, i64)> {
    let mut out = Vec::new();
    let mut from = 0;
    while from < s.len() {
        let found = s[from..].match_indices('s').find_map(|(i, _)| {
            let at = from + i;
            let rest = &s[at + 1..];
            let src = leading_digits(rest);
            let rest = rest[src.len()..].strip_prefix("->")?;
            let dst = leading_digits(rest);
            let rest = rest[dst.len()..].strip_prefix("d|$c")?;
            let c = leading_digits(rest);
            let rest = rest[c.len()..].strip_prefix('=')?;
            let bytes = leading_digits(rest);
            if src.is_empty() || dst.is_empty() || c.is_empty() || bytes.is_empty() {
                return None;
            }
            let end = s.len() - rest.len() + bytes.len();
            Some(((src.parse().ok()?, dst.parse().ok()?, bytes.parse().ok()?), end))
        });
        match found {
            Some((triple, end)) => {
                out.push(triple);
                from = end;
            }
            None => break,
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Loading (`XSpaceLoader`)
// ---------------------------------------------------------------------------------------

/// Stats XProf leaves out of the arguments.
fn skipped_stat(name: &str) -> bool {
    const SKIPPED: [StatType; 13] = [
        StatType::ConsumerId,
        StatType::ConsumerType,
        StatType::Flops,
        StatType::Flow,
        StatType::IsAsync,
        StatType::IsRoot,
        StatType::KernelDetails,
        StatType::ProducerId,
        StatType::ProducerType,
        StatType::ProgramId,
        StatType::SymbolId,
        StatType::SourceInfo,
        StatType::SourceStack,
    ];
    SKIPPED.iter().any(|t| t.as_str() == name)
}

/// One XSpace event as XProf's loader reads it: display name (the name kept as
/// `long_name`), then the metadata's stats and the event's own.
fn load_event(e: &oxprof_model::Event<'_>, strings: &mut Strings) -> Event {
    let mut event =
        Event { timestamp_ps: e.timestamp_ps(), duration_ps: e.duration_ps(), run_id: -1, ..Event::default() };
    let metadata = e.metadata();
    if metadata.display_name != oxprof_model::StrId::EMPTY {
        event.name = e.display_name().to_string();
        let key = strings.intern(b"long_name");
        let value = strings.intern(e.name().as_bytes());
        event.args.push(Arg { key, value: ArgValue::Str(value) });
    } else {
        event.name = e.name().to_string();
    }
    for stat in e.metadata_stats().chain(e.stats()) {
        let name = stat.name();
        if skipped_stat(name) {
            continue;
        }
        let value = match stat.value {
            StatValue::Int64(x) => ArgValue::Int(x),
            StatValue::Uint64(x) => ArgValue::Uint(x),
            StatValue::Double(x) => ArgValue::Double(x),
            StatValue::Str(s) | StatValue::Ref(s) => ArgValue::Str(strings.intern(s.as_bytes())),
            // XProf's `StrOrRefValue` of a bytes stat is empty.
            StatValue::Bytes(_) => ArgValue::Str(strings.intern(b"")),
            StatValue::Unset => continue,
        };
        let key = strings.intern(name.as_bytes());
        event.args.push(Arg { key, value });
    }
    event
}

/// What the loader dropped, for notes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DcnPerfettoCounts {
    /// TensorCore planes read.
    pub tpu_planes: usize,
    /// Megascale devices (graph-key device ids) seen.
    pub megascale_devices: usize,
    /// Megascale devices left without a TPU plane (XProf drops their events).
    pub megascale_devices_dropped: usize,
    /// Megascale events without a `graph_key` device (XProf skips them).
    pub megascale_events_without_device: usize,
}

fn load(space: &XSpace, counts: &mut DcnPerfettoCounts) -> IrTrace {
    let mut trace = IrTrace::default();
    let mut tpu_ids = Vec::new();
    for plane in &space.planes {
        let Some(tpu_id) = tpu_id_of_plane(&plane.name) else { continue };
        tpu_ids.push(tpu_id);
        counts.tpu_planes += 1;
        let tracks = trace.tpu.entry(tpu_id).or_default();
        for line in plane.lines.iter().filter(|l| TPU_LINES.contains(&l.name.as_str())) {
            let events = line.events(plane).map(|e| load_event(&e, &mut trace.strings)).collect();
            tracks.push(Track { name: line.name.clone(), events });
        }
    }
    tpu_ids.sort_unstable();

    // Raw device id → its tracks, one per graph key, in first-seen order.
    let mut raw: BTreeMap<i64, Vec<Track>> = BTreeMap::new();
    for plane in space.planes.iter().filter(|p| p.name == MEGASCALE_PLANE_NAME) {
        load_megascale_plane(plane, &mut trace.strings, &mut raw, counts);
    }
    if raw.is_empty() {
        return trace;
    }
    counts.megascale_devices = raw.len();
    // The i-th smallest device id goes to the i-th smallest TPU id.
    let device_to_tpu: FxHashMap<i64, i64> = raw.keys().copied().zip(tpu_ids.iter().copied()).collect();
    for (raw_id, mut tracks) in raw {
        // Stable, as `std::list::sort`.
        let strings = &trace.strings;
        tracks.sort_by_cached_key(|t| {
            let key = t.events[0]
                .args
                .iter()
                .find(|a| strings.get(a.key) == b"graph_key")
                .and_then(|a| {
                    if let ArgValue::Str(id) = a.value { std::str::from_utf8(strings.get(id)).ok() } else { None }
                })
                .unwrap_or("");
            graph_key_order(key)
        });
        match device_to_tpu.get(&raw_id) {
            Some(&tpu_id) => {
                trace.megascale.insert(tpu_id, tracks);
            }
            None => counts.megascale_devices_dropped += 1,
        }
    }
    trace
}

fn load_megascale_plane(
    plane: &XPlane,
    strings: &mut Strings,
    raw: &mut BTreeMap<i64, Vec<Track>>,
    counts: &mut DcnPerfettoCounts,
) {
    // Graph key → (raw device id, index of its track).
    let mut track_of: FxHashMap<String, (i64, usize)> = FxHashMap::default();
    for line in &plane.lines {
        for e in line.events(plane) {
            let graph_key = e.stats().filter(|s| s.name() == "graph_key").last().and_then(|s| match s.value {
                StatValue::Str(v) | StatValue::Ref(v) => Some(v),
                _ => None,
            });
            let Some(graph_key) = graph_key.filter(|k| !k.is_empty()) else {
                counts.megascale_events_without_device += 1;
                continue;
            };
            let Some(device) = device_id_of_graph_key(graph_key) else {
                counts.megascale_events_without_device += 1;
                continue;
            };
            let (device, index) = *track_of.entry(graph_key.to_string()).or_insert_with(|| {
                let tracks = raw.entry(device).or_default();
                tracks.push(Track { name: short_graph_key(graph_key).to_string(), events: Vec::new() });
                (device, tracks.len() - 1)
            });
            let event = load_event(&e, strings);
            // The track was made with its entry just above.
            if let Some(track) = raw.get_mut(&device).and_then(|tracks| tracks.get_mut(index)) {
                track.events.push(event);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Processing (`TraceProcessor`)
// ---------------------------------------------------------------------------------------

/// `std::upper_bound` over (timestamp, run) by timestamp, bisecting as libstdc++ does (the
/// runs of several module lines are not sorted as a whole).
fn upper_bound(runs: &[(i64, i64)], ts: i64) -> usize {
    let (mut first, mut len) = (0usize, runs.len());
    while len > 0 {
        let half = len / 2;
        let mid = first + half;
        if ts < runs[mid].0 {
            len = half;
        } else {
            first = mid + 1;
            len -= half + 1;
        }
    }
    first
}

fn all_tracks(map: &mut BTreeMap<i64, Vec<Track>>) -> impl Iterator<Item = &mut Track> {
    map.values_mut().flatten()
}

fn sort_events(trace: &mut IrTrace) {
    let before = |a: &Event, b: &Event| {
        a.timestamp_ps < b.timestamp_ps || (a.timestamp_ps == b.timestamp_ps && a.duration_ps > b.duration_ps)
    };
    for track in all_tracks(&mut trace.tpu).chain(all_tracks(&mut trace.megascale)) {
        std_sort(&mut track.events, &before);
    }
}

/// libstdc++'s `std::sort` ([`oxprof_grouping::cxx_sort::introsort`]): XProf sorts events with it, and
/// events of equal start and duration keep the order it leaves them in (which later decides,
/// e.g., the names listed in a folded slice). The events' positions are sorted (the same
/// comparisons, so the same order), then the events moved once.
fn std_sort<T>(v: &mut Vec<T>, less: &dyn Fn(&T, &T) -> bool) {
    let mut order: Vec<u32> = (0..v.len() as u32).collect();
    oxprof_grouping::cxx_sort::introsort(&mut order, |&a, &b| less(&v[a as usize], &v[b as usize]));
    let mut slots: Vec<Option<T>> = std::mem::take(v).into_iter().map(Some).collect();
    v.extend(order.into_iter().filter_map(|i| slots[i as usize].take()));
}

fn assign_run_ids(trace: &mut IrTrace) {
    let run_id_key = trace.strings.intern(b"run_id");
    let mut runs_of: FxHashMap<i64, Vec<(i64, i64)>> = FxHashMap::default();
    for (&tpu_id, tracks) in &mut trace.tpu {
        for track in tracks.iter_mut().filter(|t| t.name.contains("XLA Modules")) {
            let runs = runs_of.entry(tpu_id).or_default();
            let mut counter = 1;
            for event in &mut track.events {
                let existing = event.args.iter().find_map(|a| match a.value {
                    ArgValue::Uint(x) if trace.strings.get(a.key) == b"run_id" => Some(x as i64),
                    _ => None,
                });
                let run_id = existing.unwrap_or_else(|| {
                    let id = counter;
                    counter += 1;
                    event.args.push(Arg { key: run_id_key, value: ArgValue::Int(id) });
                    id
                });
                event.run_id = run_id;
                runs.push((event.timestamp_ps, run_id));
            }
        }
    }
    for fragments in [&mut trace.tpu, &mut trace.megascale] {
        for (tpu_id, tracks) in fragments.iter_mut() {
            let Some(runs) = runs_of.get(tpu_id).filter(|r| !r.is_empty()) else { continue };
            for track in tracks.iter_mut().filter(|t| !t.name.contains("XLA Modules")) {
                for event in &mut track.events {
                    let i = upper_bound(runs, event.timestamp_ps);
                    if i > 0 {
                        event.run_id = runs[i - 1].1;
                        event.args.push(Arg { key: run_id_key, value: ArgValue::Int(event.run_id) });
                    }
                }
            }
        }
    }
}

fn exempt_from_grouping(name: &str) -> bool {
    ["send", "recv", "send-done", "recv-done"].iter().any(|stem| is_op(name, stem))
}

/// Folds runs of tiny ops (< 1 ns) starting in the same nanosecond of one program run into
/// one "N events are hidden" slice (send/recv ops are never folded).
fn group_tiny_events(trace: &mut IrTrace) {
    let description_key = trace.strings.intern(b"description");
    let description =
        trace.strings.intern(b"If you would like to see them, please add &group_tiny_events=false to the URL.");
    let hidden_key = trace.strings.intern(b"hidden_events");
    for track in all_tracks(&mut trace.tpu) {
        if !track.name.contains("XLA Ops") && !track.name.contains("XLA TraceMe") {
            continue;
        }
        let events = std::mem::take(&mut track.events);
        let mut out = Vec::with_capacity(events.len());
        let mut i = 0;
        while i < events.len() {
            let start = &events[i];
            if start.duration_ps >= 1000 || exempt_from_grouping(&start.name) {
                out.push(start.clone());
                i += 1;
                continue;
            }
            let ns = start.timestamp_ps / 1000;
            let mut j = i + 1;
            let mut max_end = start.timestamp_ps + start.duration_ps;
            while j < events.len() {
                let e = &events[j];
                if e.duration_ps >= 1000
                    || exempt_from_grouping(&e.name)
                    || e.timestamp_ps / 1000 != ns
                    || e.run_id != start.run_id
                {
                    break;
                }
                max_end = max_end.max(e.timestamp_ps + e.duration_ps);
                j += 1;
            }
            if j - i >= 2 {
                let hidden = events[i..j].iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", ");
                let hidden = trace.strings.intern(hidden.as_bytes());
                out.push(Event {
                    name: format!("{} events are hidden", j - i),
                    timestamp_ps: start.timestamp_ps,
                    duration_ps: max_end - start.timestamp_ps,
                    run_id: start.run_id,
                    args: vec![
                        Arg { key: description_key, value: ArgValue::Str(description) },
                        Arg { key: hidden_key, value: ArgValue::Str(hidden) },
                    ],
                    flows: Vec::new(),
                });
                i = j;
            } else {
                out.push(start.clone());
                i += 1;
            }
        }
        track.events = out;
    }
}

/// Marks the last `HostToDevice END` and `DeviceToHost END` inside each collective execution.
fn mark_last_dma_events(trace: &mut IrTrace) {
    let key = trace.strings.intern(b"is_last_instance");
    for track in all_tracks(&mut trace.megascale) {
        let executions: Vec<usize> =
            (0..track.events.len()).filter(|&i| graph_name_full(&track.events[i].name).is_some()).collect();
        for i in executions {
            let end = track.events[i].timestamp_ps + track.events[i].duration_ps;
            let (mut last_h2d, mut last_d2h) = (None, None);
            for j in i + 1..track.events.len() {
                if track.events[j].timestamp_ps >= end {
                    break;
                }
                match track.events[j].name.as_str() {
                    "HostToDevice END" => last_h2d = Some(j),
                    "DeviceToHost END" => last_d2h = Some(j),
                    _ => {}
                }
            }
            for j in [last_h2d, last_d2h].into_iter().flatten() {
                track.events[j].args.push(Arg { key, value: ArgValue::Int(1) });
            }
        }
    }
}

/// FIFO queues of flow ids per key.
#[derive(Default)]
struct FlowQueues(FxHashMap<String, std::collections::VecDeque<i64>>);

impl FlowQueues {
    fn push(&mut self, key: &str, id: i64) {
        self.0.entry(key.to_string()).or_default().push_back(id);
    }

    fn pop(&mut self, key: &str) -> Option<i64> {
        self.0.get_mut(key)?.pop_front()
    }
}

struct FlowState {
    next_id: i64,
    flow_out: StringId,
    flow_in: StringId,
}

impl FlowState {
    fn push(&mut self, queue: &mut FlowQueues, key: &str, producer: &mut Event) {
        let id = self.next_id;
        self.next_id += 1;
        producer.flows.push((id, FlowDirection::Source));
        producer.args.push(Arg { key: self.flow_out, value: ArgValue::Int(id) });
        queue.push(key, id);
    }

    fn pop(&mut self, queue: &mut FlowQueues, key: &str, consumer: &mut Event) {
        if let Some(id) = queue.pop(key) {
            consumer.args.push(Arg { key: self.flow_in, value: ArgValue::Int(id) });
            consumer.flows.push((id, FlowDirection::Sink));
        }
    }
}

/// Flows from each send/recv to its device-to-host/host-to-device DMA and its done ops.
fn resolve_flows(trace: &mut IrTrace) {
    let mut state = FlowState {
        next_id: 1,
        flow_out: trace.strings.intern(b"flow_out"),
        flow_in: trace.strings.intern(b"flow_in"),
    };
    let run_id_key = trace.strings.intern(b"run_id");
    let mut send_rendezvous: FxHashMap<String, String> = FxHashMap::default();
    // XProf never fills its recv map, so recv-done ops never get flows.
    let recv_rendezvous: FxHashMap<String, String> = FxHashMap::default();
    let mut q_send_to_d2h = FlowQueues::default();
    let mut q_d2h_to_send_done = FlowQueues::default();
    let mut q_h2d_to_recv_done = FlowQueues::default();
    let mut q_recv_to_recv_done = FlowQueues::default();
    let mut q_recv_to_h2d = FlowQueues::default();
    let mut q_send_to_send_done = FlowQueues::default();
    let mut q_send_to_recv_done = FlowQueues::default();

    // Pass 1: producers on the TPU ops.
    let mut tpu = std::mem::take(&mut trace.tpu);
    for (&tpu_id, tracks) in &mut tpu {
        for track in tracks.iter_mut().filter(|t| t.name.contains("XLA Ops")) {
            for event in track.events.iter_mut().filter(|e| e.run_id != -1) {
                let is_send = if is_op(&event.name, "send") {
                    true
                } else if is_op(&event.name, "recv") {
                    false
                } else {
                    continue;
                };
                let Some(rendezvous) = trace
                    .arg_str(event, "long_name")
                    .and_then(rendezvous_in_long_name)
                    .filter(|r| !r.is_empty())
                    .map(str::to_string)
                else {
                    continue;
                };
                let key = format!("{tpu_id}_{}_{rendezvous}", event.run_id);
                if is_send {
                    send_rendezvous.insert(format!("{tpu_id}_{}_{}", event.run_id, hlo_id(&event.name)), rendezvous);
                    state.push(&mut q_send_to_send_done, &key, event);
                    state.push(&mut q_send_to_recv_done, &key, event);
                    state.push(&mut q_send_to_d2h, &key, event);
                } else {
                    state.push(&mut q_recv_to_recv_done, &key, event);
                    state.push(&mut q_recv_to_h2d, &key, event);
                }
            }
        }
    }

    // The Megascale DMA events: consumers of the first START, producers at the last END.
    let mut megascale = std::mem::take(&mut trace.megascale);
    for (&tpu_id, tracks) in &mut megascale {
        for event in tracks.iter_mut().flat_map(|t| t.events.iter_mut()).filter(|e| e.run_id != -1) {
            let (is_d2h, is_start) = match event.name.as_str() {
                "DeviceToHost START" => (true, true),
                "DeviceToHost END" => (true, false),
                "HostToDevice START" => (false, true),
                "HostToDevice END" => (false, false),
                _ => continue,
            };
            let Some(rendezvous) = trace
                .arg_str(event, "graph_key")
                .and_then(graph_name_partial)
                .filter(|r| !r.is_empty())
                .map(str::to_string)
            else {
                continue;
            };
            let key = format!("{tpu_id}_{}_{rendezvous}", event.run_id);
            if is_start {
                if trace.arg_int(event, "action_index") != Some(0) {
                    continue;
                }
                let queue = if is_d2h { &mut q_send_to_d2h } else { &mut q_recv_to_h2d };
                state.pop(queue, &key, event);
            } else {
                if trace.arg_int(event, "is_last_instance") != Some(1) {
                    continue;
                }
                if is_d2h {
                    state.push(&mut q_d2h_to_send_done, &key, event);
                } else {
                    // Ends 1 ns early so Perfetto draws the flow inside the execution.
                    event.duration_ps = (event.duration_ps - 1000).max(0);
                    state.push(&mut q_h2d_to_recv_done, &key, event);
                }
            }
        }
    }

    // Pass 2: consumers (send-done, recv-done).
    for (&tpu_id, tracks) in &mut tpu {
        for track in tracks.iter_mut().filter(|t| t.name.contains("XLA Ops")) {
            let mut pending = Vec::new();
            for event in track.events.iter_mut().filter(|e| e.run_id != -1) {
                let is_send_done = if is_op(&event.name, "send-done") {
                    true
                } else if is_op(&event.name, "recv-done") {
                    false
                } else {
                    continue;
                };
                let hlo_key = format!("{tpu_id}_{}_{}", event.run_id, hlo_id(&event.name));
                let map = if is_send_done { &send_rendezvous } else { &recv_rendezvous };
                let Some(rendezvous) = map.get(&hlo_key).filter(|r| !r.is_empty()) else { continue };
                let key = format!("{tpu_id}_{}_{rendezvous}", event.run_id);
                if is_send_done {
                    state.pop(&mut q_send_to_send_done, &key, event);
                    state.pop(&mut q_d2h_to_send_done, &key, event);
                } else {
                    state.pop(&mut q_send_to_recv_done, &key, event);
                    state.pop(&mut q_recv_to_recv_done, &key, event);
                    // The H2D flow lands on an instant just after the recv-done.
                    let mut instant = Event {
                        name: format!("{} END", event.name),
                        timestamp_ps: event.timestamp_ps + event.duration_ps + 1000,
                        run_id: event.run_id,
                        args: vec![Arg { key: run_id_key, value: ArgValue::Int(event.run_id) }],
                        ..Event::default()
                    };
                    let internal = state.next_id;
                    state.next_id += 1;
                    event.args.push(Arg { key: state.flow_out, value: ArgValue::Int(internal) });
                    event.flows.push((internal, FlowDirection::Source));
                    instant.args.push(Arg { key: state.flow_in, value: ArgValue::Int(internal) });
                    instant.flows.push((internal, FlowDirection::Sink));
                    state.pop(&mut q_h2d_to_recv_done, &key, &mut instant);
                    pending.push(instant);
                }
            }
            track.events.extend(pending);
        }
    }
    trace.tpu = tpu;
    trace.megascale = megascale;
}

/// Sorted deltas folded into one point per timestamp.
fn fold_deltas<T: Copy + Default + std::ops::AddAssign + PartialOrd>(
    mut deltas: Vec<(i64, T)>,
    name: &str,
) -> CounterTrack<T> {
    let mut track = CounterTrack::default();
    if deltas.is_empty() {
        return track;
    }
    deltas.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal)));
    track.name = name.to_string();
    let mut current = T::default();
    for (i, &(ts, delta)) in deltas.iter().enumerate() {
        current += delta;
        if deltas.get(i + 1).is_some_and(|next| next.0 == ts) {
            continue;
        }
        track.timestamps_ps.push(ts);
        track.values.push(current);
    }
    track
}

/// Network bytes and bandwidth in flight, and collectives in flight, from the Megascale
/// events.
fn add_global_counters(trace: &mut IrTrace) {
    // Larger jumps come from bad durations.
    const MAX_RATE_DELTA_GBPS: f64 = 200.0;
    let (mut rx, mut tx, mut rx_bw, mut tx_bw, mut count, mut bytes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for event in trace.megascale.values().flatten().flat_map(|t| &t.events) {
        let end = event.timestamp_ps + event.duration_ps;
        if graph_name_full(&event.name).is_some() {
            count.push((event.timestamp_ps, 1i64));
            count.push((end, -1));
            if let Some(size) = trace.arg_int(event, "input_size") {
                bytes.push((event.timestamp_ps, size));
                bytes.push((end, -size));
            }
        } else if event.name == "NetworkReceive END" {
            let Some(latency_us) = trace.arg_uint(event, "network_transport_latency_us").map(|x| x as i64) else {
                continue;
            };
            let Some(sizes) = trace.arg_str(event, "buffer_sizes") else { continue };
            for (src, dst, n) in buffer_sizes(sizes) {
                if src == dst {
                    continue;
                }
                let start = end - latency_us * 1_000_000;
                rx.push((start, n));
                rx.push((end, -n));
                if latency_us > 0 {
                    let rate = n as f64 * 8.0 / (latency_us as f64 * 1000.0);
                    if rate <= MAX_RATE_DELTA_GBPS {
                        rx_bw.push((start, rate));
                        rx_bw.push((end, -rate));
                    }
                }
            }
        } else if event.name == "NetworkSend END" {
            let Some(duration_ns) = trace.arg_int(event, "action_duration_ns") else { continue };
            let Some(sizes) = trace.arg_str(event, "buffer_sizes") else { continue };
            for (src, dst, n) in buffer_sizes(sizes) {
                if src == dst {
                    continue;
                }
                let start = end - duration_ns * 1000;
                tx.push((start, n));
                tx.push((end, -n));
                if duration_ns > 0 {
                    let rate = n as f64 * 8.0 / duration_ns as f64;
                    if rate <= MAX_RATE_DELTA_GBPS {
                        tx_bw.push((start, rate));
                        tx_bw.push((end, -rate));
                    }
                }
            }
        }
    }
    trace.rx = fold_deltas(rx, "Outstanding Bytes RX");
    trace.tx = fold_deltas(tx, "Outstanding Bytes TX");
    trace.rx_bw = fold_deltas(rx_bw, "Bandwidth RX (Gbps)");
    trace.tx_bw = fold_deltas(tx_bw, "Bandwidth TX (Gbps)");
    trace.inflight_count = fold_deltas(count, "Inflight Collectives");
    trace.inflight_bytes = fold_deltas(bytes, "Inflight Collective Payload");
}

/// Numbered names so Perfetto's UI sorts the tracks as XProf wants.
fn rename_tracks(trace: &mut IrTrace) {
    for track in all_tracks(&mut trace.tpu).chain(all_tracks(&mut trace.megascale)) {
        let renamed = match graph_name_full(&track.name) {
            Some((device, name)) => Some(format!("{name} ({})", device.parse::<u64>().unwrap_or(0))),
            None => match track.name.as_str() {
                "Steps" => Some("1. Steps".to_string()),
                "XLA Modules" => Some("2. XLA Modules".to_string()),
                "XLA Ops" => Some("3. XLA Ops".to_string()),
                "XLA TraceMe" => Some("4. XLA TraceMe".to_string()),
                _ => None,
            },
        };
        if let Some(name) = renamed {
            track.name = name;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Writing (`PerfettoWriter`)
// ---------------------------------------------------------------------------------------

struct Writer<'a> {
    ir: &'a IrTrace,
    packets: Vec<TracePacket>,
    next_uuid: u64,
    next_iid: u64,
    event_names: FxHashMap<String, u64>,
    annotation_names: FxHashMap<StringId, u64>,
    annotation_values: FxHashMap<StringId, u64>,
}

impl Writer<'_> {
    fn new_packet(&mut self) -> &mut TracePacket {
        let flags = if self.packets.is_empty() {
            SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE
        } else {
            SEQ_NEEDS_INCREMENTAL_STATE
        };
        let index = self.packets.len();
        self.packets.push(TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            sequence_flags: Some(flags),
            ..TracePacket::default()
        });
        &mut self.packets[index]
    }

    fn track_descriptor(&mut self, name: &str, parent: u64, counter: Option<(&str, &str)>) -> u64 {
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        let packet = self.new_packet();
        packet.track_descriptor = Some(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(name.to_string()),
            parent_uuid: (parent != 0).then_some(parent),
            counter: counter.map(|(unit, share)| CounterDescriptor {
                unit_name: Some(unit.to_string()),
                y_axis_share_key: (!share.is_empty()).then(|| share.to_string()),
            }),
        });
        uuid
    }

    fn write(&mut self) {
        self.write_counters();
        let devices: std::collections::BTreeSet<i64> =
            self.ir.tpu.keys().chain(self.ir.megascale.keys()).copied().collect();
        if devices.is_empty() {
            return;
        }
        let tpus = self.track_descriptor("2. TPUs", 0, None);
        for device in devices {
            let uuid = self.track_descriptor(&format!("{TPU_PLANE_PREFIX}{device}"), tpus, None);
            for track in self.ir.tpu.get(&device).into_iter().flatten() {
                self.write_track(track, uuid);
            }
            if let Some(tracks) = self.ir.megascale.get(&device) {
                let megascale = self.track_descriptor("Megascale", uuid, None);
                for track in tracks {
                    self.write_track(track, megascale);
                }
            }
        }
    }

    fn write_counters(&mut self) {
        let ir = self.ir;
        let network_empty = ir.rx.values.is_empty()
            && ir.tx.values.is_empty()
            && ir.rx_bw.values.is_empty()
            && ir.tx_bw.values.is_empty();
        let megascale_empty = ir.inflight_count.values.is_empty() && ir.inflight_bytes.values.is_empty();
        if network_empty && megascale_empty {
            return;
        }
        let global = self.track_descriptor("1. Global Counters", 0, None);
        if !network_empty {
            let network = self.track_descriptor("Network", global, None);
            self.write_counter(&ir.rx, network, "bytes", "outstanding_bytes");
            self.write_counter(&ir.tx, network, "bytes", "outstanding_bytes");
            self.write_counter(&ir.rx_bw, network, "Gbps", "bandwidth");
            self.write_counter(&ir.tx_bw, network, "Gbps", "bandwidth");
        }
        if !megascale_empty {
            let megascale = self.track_descriptor("Megascale", global, None);
            self.write_counter(&ir.inflight_count, megascale, "count", "inflight_collectives");
            self.write_counter(&ir.inflight_bytes, megascale, "bytes", "inflight_collective_payload");
        }
    }

    fn write_counter<T: CounterValue>(&mut self, track: &CounterTrack<T>, parent: u64, unit: &str, share: &str) {
        if track.values.is_empty() {
            return;
        }
        let uuid = self.track_descriptor(&track.name, parent, Some((unit, share)));
        for (&ts, &value) in track.timestamps_ps.iter().zip(&track.values) {
            let packet = self.new_packet();
            packet.timestamp = Some((ts / 1000) as u64);
            let mut event = TrackEvent {
                track_uuid: Some(uuid),
                r#type: Some(TrackEventType::Counter as i32),
                ..TrackEvent::default()
            };
            value.set(&mut event);
            packet.track_event = Some(event);
        }
    }

    fn write_track(&mut self, track: &Track, parent: u64) {
        let uuid = self.track_descriptor(&track.name, parent, None);
        for event in &track.events {
            self.write_event(event, uuid);
        }
    }

    fn intern_event_name(&mut self, name: &str, interned: &mut InternedData) -> u64 {
        if let Some(&iid) = self.event_names.get(name) {
            return iid;
        }
        let iid = self.next_iid;
        self.next_iid += 1;
        self.event_names.insert(name.to_string(), iid);
        interned.event_names.push(InternedName { iid: Some(iid), name: Some(name.to_string()) });
        iid
    }

    fn intern_annotation_name(&mut self, key: StringId, interned: &mut InternedData) -> u64 {
        if let Some(&iid) = self.annotation_names.get(&key) {
            return iid;
        }
        let iid = self.next_iid;
        self.next_iid += 1;
        self.annotation_names.insert(key, iid);
        let name = String::from_utf8_lossy(self.ir.strings.get(key)).into_owned();
        interned.debug_annotation_names.push(InternedName { iid: Some(iid), name: Some(name) });
        iid
    }

    fn intern_annotation_value(&mut self, value: StringId, interned: &mut InternedData) -> u64 {
        if let Some(&iid) = self.annotation_values.get(&value) {
            return iid;
        }
        let iid = self.next_iid;
        self.next_iid += 1;
        self.annotation_values.insert(value, iid);
        interned
            .debug_annotation_string_values
            .push(InternedString { iid: Some(iid), str: Some(self.ir.strings.get(value).to_vec()) });
        iid
    }

    fn annotation_value(&mut self, value: ArgValue, into: &mut DebugAnnotation, interned: &mut InternedData) {
        match value {
            ArgValue::Int(x) => into.int_value = Some(x),
            ArgValue::Uint(x) => into.uint_value = Some(x),
            ArgValue::Double(x) => into.double_value = Some(x),
            ArgValue::Str(id) => into.string_value_iid = Some(self.intern_annotation_value(id, interned)),
        }
    }

    fn write_event(&mut self, event: &Event, track: u64) {
        let instant = event.duration_ps == 0;
        let mut interned = InternedData::default();
        let mut te = TrackEvent {
            track_uuid: Some(track),
            r#type: Some(if instant { TrackEventType::Instant } else { TrackEventType::SliceBegin } as i32),
            ..TrackEvent::default()
        };
        te.name_iid = Some(self.intern_event_name(&event.name, &mut interned));
        // Arguments grouped by key; a repeated key becomes an array.
        let mut grouped: Vec<(StringId, Vec<ArgValue>)> = Vec::new();
        for arg in &event.args {
            match grouped.iter_mut().find(|(k, _)| *k == arg.key) {
                Some((_, values)) => values.push(arg.value),
                None => grouped.push((arg.key, vec![arg.value])),
            }
        }
        for (key, values) in grouped {
            let mut annotation = DebugAnnotation {
                name_iid: Some(self.intern_annotation_name(key, &mut interned)),
                ..Default::default()
            };
            if let [value] = values[..] {
                self.annotation_value(value, &mut annotation, &mut interned);
            } else {
                for value in values {
                    let mut entry = DebugAnnotation::default();
                    self.annotation_value(value, &mut entry, &mut interned);
                    annotation.array_values.push(entry);
                }
            }
            te.debug_annotations.push(annotation);
        }
        for &(id, direction) in &event.flows {
            if direction == FlowDirection::Sink || instant {
                te.flow_ids.push(id as u64);
            }
        }
        let empty = interned == InternedData::default();
        let packet = self.new_packet();
        packet.timestamp = Some((event.timestamp_ps / 1000) as u64);
        packet.track_event = Some(te);
        if !empty {
            packet.interned_data = Some(interned);
        }
        if instant {
            return;
        }
        let packet = self.new_packet();
        packet.timestamp = Some(((event.timestamp_ps + event.duration_ps) / 1000) as u64);
        packet.track_event = Some(TrackEvent {
            track_uuid: Some(track),
            r#type: Some(TrackEventType::SliceEnd as i32),
            flow_ids: event.flows.iter().filter(|f| f.1 == FlowDirection::Source).map(|f| f.0 as u64).collect(),
            ..TrackEvent::default()
        });
    }
}

/// The two kinds of counter values.
trait CounterValue: Copy {
    fn set(self, event: &mut TrackEvent);
}

impl CounterValue for i64 {
    fn set(self, event: &mut TrackEvent) {
        event.counter_value = Some(self);
    }
}

impl CounterValue for f64 {
    fn set(self, event: &mut TrackEvent) {
        event.double_counter_value = Some(self);
    }
}

/// One host's Perfetto trace and what its loading skipped.
#[derive(Debug, Clone, Default)]
pub struct DcnPerfetto {
    /// The trace, uncompressed.
    pub trace: Trace,
    /// What was read and dropped.
    pub counts: DcnPerfettoCounts,
}

/// XProf's trace of one host (`XSpaceLoader::Load`, `TraceProcessor::Process`,
/// `PerfettoWriter`). `group_tiny_events`: fold runs of sub-nanosecond ops (XProf's default).
pub fn dcn_perfetto_trace(space: &XSpace, group_tiny: bool) -> DcnPerfetto {
    let mut counts = DcnPerfettoCounts::default();
    let mut ir = load(space, &mut counts);
    sort_events(&mut ir);
    assign_run_ids(&mut ir);
    if group_tiny {
        group_tiny_events(&mut ir);
    }
    mark_last_dma_events(&mut ir);
    resolve_flows(&mut ir);
    add_global_counters(&mut ir);
    rename_tracks(&mut ir);
    let mut writer = Writer {
        ir: &ir,
        packets: Vec::new(),
        next_uuid: 1,
        next_iid: 1,
        event_names: FxHashMap::default(),
        annotation_names: FxHashMap::default(),
        annotation_values: FxHashMap::default(),
    };
    writer.write();
    DcnPerfetto { trace: Trace { packet: writer.packets }, counts }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_xprof_s_regexes() {
        assert_eq!(tpu_id_of_plane("/device:TPU:12"), Some(12));
        assert_eq!(tpu_id_of_plane("/device:TPU:0 SparseCore"), None);
        assert_eq!(device_id_of_graph_key("x device_200005_gid_ag_1$l^i3"), Some(200005));
        assert_eq!(device_id_of_graph_key("device__gid_"), None);
        assert_eq!(short_graph_key("device_1_gid_a_1$l^i3"), "device_1_gid_a_1");
        assert_eq!(graph_key_order("device_7_gid_all-gather_1$l^i2^i13x"), ("all-gather_1".into(), 7, 13));
        assert_eq!(graph_key_order("nonsense"), (String::new(), 0, 0));
        assert!(is_op("send", "send") && is_op("send.12", "send") && is_op("send12", "send"));
        assert!(!is_op("send-done.1", "send") && is_op("send-done.1", "send-done"));
        assert_eq!(hlo_id("recv-done.42"), 42);
        assert_eq!(hlo_id("fusion.3.1"), 0);
        assert_eq!(graph_name_full("device_5_gid_rendezvous_a_12"), Some(("5", "rendezvous_a_12")));
        assert_eq!(graph_name_full("device_5_gid_x_12$"), None);
        assert_eq!(graph_name_partial("k device_5_gid_ar_3_7$launch"), Some("ar_3_7"));
        assert_eq!(
            rendezvous_in_long_name("send.1 = send(), frontend_attributes={_xla_host_transfer_rendezvous=\"r1\"}"),
            Some("r1")
        );
        assert_eq!(buffer_sizes("s0->1d|$c0=100 s2->2d|$c1=7,s3->4d|$c9=5"), vec![(0, 1, 100), (2, 2, 7), (3, 4, 5)]);
    }

    #[test]
    fn std_sort_sorts() {
        let mut v: Vec<u32> = (0..500).map(|i| (i * 7919 + 13) % 97).collect();
        std_sort(&mut v, &|a, b| a < b);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn upper_bound_is_libstdcxx_s() {
        let runs = [(10, 1), (20, 2), (30, 3)];
        assert_eq!(upper_bound(&runs, 5), 0);
        assert_eq!(upper_bound(&runs, 20), 2);
        assert_eq!(upper_bound(&runs, 99), 3);
    }

    #[test]
    fn a_space_without_tpus_is_an_empty_trace() {
        let out = dcn_perfetto_trace(&XSpace::default(), true);
        assert!(out.trace.packet.is_empty());
        let gz = oxprof_wire::perfetto::gzipped(&out.trace);
        assert_eq!(&gz[..4], &[0x1f, 0x8b, 8, 0]);
    }
}
