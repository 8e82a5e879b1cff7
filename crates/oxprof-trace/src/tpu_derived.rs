//! XProf's derived timelines of TPU TensorCore planes (`DeriveLinesFromStats` in
//! `xprof/utils/derived_timeline.cc`, with `HostOffloadEventProcessor` of
//! `xprof/utils/host_offload_utils.cc`): the "Framework Name Scope", "Framework Ops" and
//! "Source code" lines built from the `tf_op` / `source` stats of the plane's events, and
//! the "Host Offload Ops row N" lines pairing host-offload `*-start` / `*-done` ops.
//!
//! Unlike the GPU lines (`derived.rs`), these carry the events' `group_id`s, so they need
//! the step grouping ([`EventGroups`]) of the XSpace.

use super::derived::{
    Builders, DerivedEvent, DerivedLine, DerivedNames, DerivedPlane, NAME_SCOPE, OffloadArgs, SOURCE, TF_OP, TfOpCache,
};
use oxprof_grouping::EventGroups;
use oxprof_grouping::cxx_sort::introsort;
use oxprof_model::XPlane;
use oxprof_model::schema::{StatType, THREAD_ID_DERIVED_MIN, TPU_PLANE_PREFIX};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// `kThreadIdTfNameScope`, `kThreadIdTfOp`, `kThreadIdSource` (XLA's trace_utils.h).
const NAME_SCOPE_LINE_ID: i64 = THREAD_ID_DERIVED_MIN + 2;
const TF_OP_LINE_ID: i64 = THREAD_ID_DERIVED_MIN + 3;
const SOURCE_LINE_ID: i64 = THREAD_ID_DERIVED_MIN + 7;
/// `kThreadIdHostOffloadOpStart` … `kThreadIdHostOffloadOpEnd`.
const HOST_OFFLOAD_FIRST_LINE_ID: i64 = THREAD_ID_DERIVED_MIN + 8;
const HOST_OFFLOAD_LAST_LINE_ID: i64 = THREAD_ID_DERIVED_MIN + 48;
const MAX_HOST_OFFLOAD_ROWS: usize = (HOST_OFFLOAD_LAST_LINE_ID - HOST_OFFLOAD_FIRST_LINE_ID + 1) as usize;
/// `kHostMemorySpace` label of host-resident shapes in HLO text (`S(5)`).
const HOST_MEMORY_LABEL: &str = "S(5)";
/// Op names `IsHostOffloadOpName` looks for in the display name.
const HOST_OFFLOAD_KEYWORDS: [&str; 6] = [
    "copy-start",
    "copy-done",
    "dynamic-slice-start",
    "dynamic-slice-done",
    "dynamic-update-slice-start",
    "dynamic-update-slice-done",
];

/// XProf's `FindMutableTensorCorePlanes` test: the name fully matches
/// `/device:TPU:([0-9]*)$`.
pub(crate) fn is_tensor_core_plane(name: &str) -> bool {
    name.strip_prefix(TPU_PLANE_PREFIX).is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
}

/// What the derivation reads of an event's metadata (its stats, and whether its names make
/// it a host offload op); the event's own stats override the stat values.
#[derive(Debug, Clone, Copy, Default)]
struct MetadataFacts<'a> {
    tf_op: &'a str,
    source: &'a str,
    is_async: bool,
    host_offload: bool,
    /// Metadata stats only: what a host-offload event takes from its ops.
    raw_bytes_accessed: Option<i64>,
    shape_with_layout: Option<&'a str>,
}

/// Reads `tf_op`, `source` and `_a` from stats, later ones winning.
fn scan_stats<'a>(facts: &mut MetadataFacts<'a>, stats: impl Iterator<Item = oxprof_model::Stat<'a>>) {
    for s in stats {
        match s.stat_type() {
            Some(StatType::TfOp) => facts.tf_op = s.as_str().unwrap_or(""),
            Some(StatType::SourceInfo) => facts.source = s.as_str().unwrap_or(""),
            Some(StatType::IsAsync) => {
                facts.is_async = s.as_u64().or_else(|| s.as_i64().map(|v| v as u64)).unwrap_or(0) != 0
            }
            _ => {}
        }
    }
}

/// Derives the lines of one TPU TensorCore plane (`DeriveLinesFromStats`).
///
/// Every event of every line, in time order (start ascending, shorter first), that is not
/// asynchronous (`_a`) feeds the lines: its `tf_op` the name scopes and framework ops, its
/// `source` the source line, with the event's group id; consecutive events with the same
/// name and group merge (without a group only over gaps up to twice the last event's
/// duration). Host-offload ops pair up by name into "Host Offload Ops" rows:
///
/// ```text
/// XLA Ops       |copy-start.1|  |fusion a/b/add|   |copy-done.1|
/// Name Scope                    |a=============|
///                               |b============|    (same span as a: 1 ns shorter)
/// Framework Ops                 |add===========|
/// Offload row 0 |offload-copy.1================================|
/// ```
pub(crate) fn derive_tpu_plane(plane: &XPlane, plane_index: usize, groups: &EventGroups) -> DerivedPlane {
    let mut names = DerivedNames::seeded_from(plane);
    let metadata: Vec<MetadataFacts<'_>> = plane
        .event_metadata_ids()
        .zip(plane.event_metadata())
        .map(|(id, m)| {
            let mut facts = MetadataFacts::default();
            scan_stats(&mut facts, plane.metadata_stats(id));
            for s in plane.metadata_stats(id) {
                match s.stat_type() {
                    Some(StatType::RawBytesAccessed) => {
                        facts.raw_bytes_accessed = s.as_i64().or_else(|| s.as_u64().map(|v| v as i64));
                    }
                    Some(StatType::ShapeWithLayout) => facts.shape_with_layout = s.as_str(),
                    _ => {}
                }
            }
            let name = plane.str(m.name);
            let display = plane.str(m.display_name);
            let display = if display.is_empty() { name } else { display };
            facts.host_offload =
                name.contains(HOST_MEMORY_LABEL) && HOST_OFFLOAD_KEYWORDS.iter().any(|k| display.contains(k));
            facts
        })
        .collect();
    // (start, duration, line, event) of every event, in XProf's `GetSortedEvents` order.
    let mut order: Vec<(i64, i64, u32, u32)> = Vec::new();
    for (li, line) in plane.lines.iter().enumerate() {
        for e in line.events(plane) {
            if groups.is_removed(plane_index, li, e.index()) {
                continue;
            }
            let dur = groups.merged_step(plane_index, li, e.index()).map_or(e.duration_ps(), |m| m.duration_ps);
            order.push((e.timestamp_ps(), dur, li as u32, e.index() as u32));
        }
    }
    // XProf's `std::sort` is not stable: equal spans (zero-length done ops at one instant
    // are common) end up in libstdc++'s introsort order, which decides offload rows.
    introsort(&mut order, |a, b| (a.0 as u64, a.1 as u64) < (b.0 as u64, b.1 as u64));
    let mut builders = Builders::gap_limited();
    let mut tf_ops = TfOpCache::default();
    let mut offload = HostOffload::default();
    // The line of the first event feeding each derived line (the track's source line).
    let mut first_line: [Option<u32>; 5] = [None; 5];
    for &(ts, dur, li, index) in &order {
        let Some(line) = plane.lines.get(li as usize) else { continue };
        if index as usize >= line.event_count() {
            continue;
        }
        let e = line.event(plane, index as usize);
        let mut facts = metadata.get(e.metadata_id().index()).copied().unwrap_or_default();
        scan_stats(&mut facts, e.stats());
        if facts.is_async {
            continue;
        }
        let span = (ts, dur);
        let group = groups.group_id(plane_index, li as usize, index as usize);
        if !facts.tf_op.is_empty()
            && let Some(ids) = tf_ops.get(&mut names, facts.tf_op)
        {
            builders.add_tf_op(ids, span, group);
        }
        if !facts.source.is_empty() {
            let id = names.intern(facts.source, None);
            builders.add(SOURCE, id, span, group, None, 0);
        }
        for (slot, b) in first_line.iter_mut().zip(&builders.lines) {
            if slot.is_none() && !b.events.is_empty() {
                *slot = Some(li);
            }
        }
        if facts.host_offload {
            offload.process(e.display_name(), span, li, &facts, &mut names);
        }
    }
    builders.reset(NAME_SCOPE, 0);
    names.finish();
    let mut out = DerivedPlane::default();
    let named = [
        (NAME_SCOPE, NAME_SCOPE_LINE_ID, "Framework Name Scope"),
        (TF_OP, TF_OP_LINE_ID, "Framework Ops"),
        (SOURCE, SOURCE_LINE_ID, "Source code"),
    ];
    for (which, id, name) in named {
        let events = builders.lines.get_mut(which).map(|b| std::mem::take(&mut b.events)).unwrap_or_default();
        if events.is_empty() {
            continue;
        }
        let source_line = first_line.get(which).copied().flatten().unwrap_or(0);
        out.lines.push(DerivedLine { display_id: id as u32, name: name.to_string(), source_line, events });
    }
    for (k, row) in offload.rows.into_iter().enumerate() {
        out.lines.push(DerivedLine {
            display_id: (HOST_OFFLOAD_FIRST_LINE_ID + k as i64) as u32,
            name: format!("Host Offload Ops row {k}"),
            source_line: row.source_line,
            events: row.events,
        });
    }
    out.names = names;
    out
}

/// One "Host Offload Ops" row: its events and the latest end among them (ps).
#[derive(Debug, Default)]
struct OffloadRow {
    events: Vec<DerivedEvent>,
    frontier_ps: u64,
    source_line: u32,
}

/// `HostOffloadEventProcessor`: start events wait in a queue per offload name until their
/// done event; the pair becomes one event from the start's begin to the done's end, on the
/// row whose last end is the earliest at or before that begin (a new row when none fits,
/// at most 41 rows, then the last row).
///
/// ```text
/// XLA Ops  |copy-start.1|  |copy-start.2|   |copy-done.1|  |copy-done.2|
/// row 0    |offload-copy.1=========================|
/// row 1                    |offload-copy.2=============================|
/// ```
#[derive(Debug, Default)]
struct HostOffload<'a> {
    /// Begin (ps) and `shape_with_layout` of the unmatched start events, per offload name.
    starts: FxHashMap<String, VecDeque<(i64, Option<&'a str>)>>,
    rows: Vec<OffloadRow>,
}

impl<'a> HostOffload<'a> {
    /// `ProcessHostOffloadOpEvent` for an event already known to be a host offload op.
    fn process(
        &mut self,
        display_name: &str,
        span: (i64, i64),
        line: u32,
        facts: &MetadataFacts<'a>,
        names: &mut DerivedNames,
    ) {
        let offload_name = offload_instruction_name(display_name);
        if display_name.contains("-start") {
            self.starts.entry(offload_name).or_default().push_back((span.0, facts.shape_with_layout));
            return;
        }
        if !display_name.contains("-done") {
            return;
        }
        let Some((begin, shape)) = self.starts.get_mut(&offload_name).and_then(VecDeque::pop_front) else {
            return;
        };
        // `Timespan::FromEndPoints(start begin, done end)`.
        let begin_ps = begin as u64;
        let end_ps = (span.0 as u64).wrapping_add(span.1 as u64);
        let duration_ps = end_ps.saturating_sub(begin_ps);
        let end_ps = begin_ps.wrapping_add(duration_ps);
        let mut chosen = None;
        let mut earliest = begin_ps;
        for (i, row) in self.rows.iter().enumerate() {
            if row.frontier_ps <= earliest {
                chosen = Some(i);
                earliest = row.frontier_ps;
            }
        }
        let index = match chosen {
            Some(i) => i,
            None => {
                if self.rows.len() < MAX_HOST_OFFLOAD_ROWS {
                    self.rows.push(OffloadRow { events: Vec::new(), frontier_ps: end_ps, source_line: line });
                }
                self.rows.len() - 1
            }
        };
        let args =
            OffloadArgs { raw_bytes_accessed: facts.raw_bytes_accessed, shape_with_layout: shape.map(str::to_string) };
        let name = names.intern_offload(&offload_name, args);
        if let Some(row) = self.rows.get_mut(index) {
            row.frontier_ps = row.frontier_ps.max(end_ps);
            row.events.push(DerivedEvent { ts: begin, dur: duration_ps as i64, name, group: None });
        }
    }
}

/// `GetOffloadInstructionName`: `offload-<op>.<id>`, where `<op>` is the name up to
/// `-start` / `-done` and `<id>` the part after the last `.` (`0` without a dot), e.g.
/// `copy-start.2` → `offload-copy.2`, `copy-done` → `offload-copy.0`.
fn offload_instruction_name(op_name: &str) -> String {
    let id = match op_name.rsplit_once('.') {
        Some((_, id)) => id,
        None => "0",
    };
    let op = match (op_name.find("-start"), op_name.find("-done")) {
        (Some(p), _) | (None, Some(p)) => &op_name[..p],
        (None, None) => op_name,
    };
    format!("offload-{op}.{id}")
}

#[cfg(test)]
mod tests {
    use super::offload_instruction_name;
    use crate::TraceIndex;
    use crate::xprof::{HostTrace, TraceViewRequest, trace_viewer_json};
    use oxprof_grouping::group_events;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_xspace::decode_xspace;

    #[test]
    fn offload_names() {
        assert_eq!(offload_instruction_name("copy-start"), "offload-copy.0");
        assert_eq!(offload_instruction_name("copy-done.2"), "offload-copy.2");
        assert_eq!(offload_instruction_name("dynamic-update-slice-start.7"), "offload-dynamic-update-slice.7");
        assert_eq!(offload_instruction_name("weird"), "offload-weird.0");
    }

    /// (tid, name, ts ns, dur ns, group_id) of a device plane's complete events.
    fn device_events(bytes: Vec<u8>) -> Vec<(u64, String, f64, f64, Option<i64>)> {
        let space = decode_xspace(&bytes).unwrap();
        let groups = group_events(&space);
        let index = TraceIndex::build(&space, "h");
        let req = TraceViewRequest { resolution: 8000.0, ..TraceViewRequest::default() };
        let body = trace_viewer_json(&[HostTrace { space: &space, groups: &groups, index: &index }], &req).unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let mut out: Vec<_> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"].as_u64().is_some_and(|p| p < 1701))
            .map(|e| {
                let ns = |k: &str| (e[k].as_f64().unwrap() * 1000.0).round();
                (
                    e["tid"].as_u64().unwrap(),
                    e["name"].as_str().unwrap().to_string(),
                    ns("ts"),
                    ns("dur"),
                    e["args"]["group_id"].as_i64(),
                )
            })
            .collect();
        out.sort_by(|a, b| a.partial_cmp(b).unwrap());
        out
    }

    // Module events are their own groups without a host (g0, g1); the ops under them lend
    // their groups to the derived events; a host-offload pair gives its event the start's
    // shape and the done's byte count. All survive the index cache:
    //
    //   XLA Modules  |m g0 0..10|   |m g1 20..30|
    //   XLA Ops        |a/x 2..4|     |a/x 22..24|  |cs 40|  |cd 50..52|
    //   Framework Ops  |x g0|         |x g1|       (same name, other group: two events)
    //   Offload row 0                               |offload-copy.0 40..52|
    #[test]
    fn derived_groups_and_offload_args_round_trip_through_the_cache() {
        let (cs, cd) = ("%copy-start = f32[2]{0:S(5)} copy-start(p)", "%copy-done = f32[2]{0:S(5)} copy-done(cs)");
        let bytes = XSpaceBuilder::new()
            .plane("/device:TPU:0", |p| {
                p.event_display_name(cs, "copy-start").event_display_name(cd, "copy-done");
                p.event_metadata_stat(cs, "shape_with_layout", "f32[2]{0:S(5)}");
                p.event_metadata_stat(cd, "raw_bytes_accessed", 8i64);
                p.line(2, "XLA Modules", 0, |l| {
                    l.event("jit_f", 0, 10_000);
                    l.event("jit_f", 20_000, 10_000);
                });
                p.line(3, "XLA Ops", 0, |l| {
                    l.event("%x = f32[] add(a, b)", 2_000, 2_000).stat("tf_op", "a/x:x");
                    l.event("%x = f32[] add(a, b)", 22_000, 2_000).stat("tf_op", "a/x:x");
                    l.event(cs, 40_000, 1_000);
                    l.event(cd, 50_000, 2_000);
                });
            })
            .to_bytes();
        let space = decode_xspace(&bytes).unwrap();
        let index = TraceIndex::build(&space, "h");
        let ops = index.tracks.iter().find(|t| t.resource_id() == Some(TF_OP as u32)).unwrap();
        assert_eq!(ops.derived_groups, [0, 1]);
        let offload = index.tracks.iter().find(|t| t.resource_id() == Some(OFFLOAD_0 as u32)).unwrap();
        let args = crate::xprof::event_args(&space, offload, 0);
        let s = |x: &str| x.to_string();
        use crate::xprof::ArgValue;
        assert_eq!(
            args,
            vec![
                (s("long_name"), ArgValue::Str(String::new())),
                (s("raw_bytes_accessed"), ArgValue::Int(8)),
                (s("shape_with_layout"), ArgValue::Str(s("f32[2]{0:S(5)}"))),
            ]
        );
        let cached = crate::read_index(&crate::write_index(&index, (1, 2)), (1, 2)).unwrap();
        for (a, b) in index.tracks.iter().zip(&cached.tracks) {
            assert_eq!(a.derived_groups, b.derived_groups);
            for pos in 0..a.len() as u32 {
                assert_eq!(crate::xprof::event_args(&space, a, pos), crate::xprof::event_args(&space, b, pos));
            }
        }
    }

    /// Cost of the TPU derived lines on a plane of 1 M XLA ops with `tf_op` / `source`
    /// metadata stats and 1 host-offload pair per 100 ops (run with `--release --ignored
    /// --nocapture`).
    #[test]
    #[ignore]
    fn tpu_derived_lines_cost_on_a_million_ops() {
        let ops = ["%a = f32[8] add(x, y)", "%m = f32[8] multiply(x, y)", "%r = f32[8] reduce(x)"];
        let (start, done) =
            ("%copy-start.1 = f32[8]{0:S(5)} copy-start(x)", "%copy-done.1 = f32[8]{0:S(5)} copy-done(x)");
        let bytes = XSpaceBuilder::new()
            .plane("/device:TPU:0", |p| {
                for (i, op) in ops.iter().enumerate() {
                    p.event_metadata_stat(op, "tf_op", format!("jit(f)/layer{i}/op:op").as_str());
                    p.event_metadata_stat(op, "source", format!("model.py:{i}").as_str());
                }
                p.event_display_name(start, "copy-start.1").event_display_name(done, "copy-done.1");
                p.line(3, "XLA Ops", 0, |l| {
                    for i in 0..1_000_000i64 {
                        let name = match i % 100 {
                            0 => start,
                            50 => done,
                            _ => ops[(i / 7 % 3) as usize],
                        };
                        l.event(name, i * 2_000, 1_500);
                    }
                });
            })
            .to_bytes();
        let space = decode_xspace(&bytes).unwrap();
        let groups = group_events(&space);
        let start_time = std::time::Instant::now();
        let derived = super::derive_tpu_plane(&space.planes[0], 0, &groups);
        let n: usize = derived.lines.iter().map(|l| l.events.len()).sum();
        eprintln!(
            "derive_tpu_plane: {n} derived events on {} lines in {:?}",
            derived.lines.len(),
            start_time.elapsed()
        );
        let start_time = std::time::Instant::now();
        let index = TraceIndex::build_with_groups(&space, "h", crate::BuildOptions { preprocess: true }, Some(&groups));
        eprintln!("index: {} events in {:?}", index.num_events, start_time.elapsed());
    }

    const NAME_SCOPE: u64 = 0xdead_bef1;
    const TF_OP: u64 = 0xdead_bef2;
    const SOURCE: u64 = 0xdead_bef6;
    const OFFLOAD_0: u64 = 0xdead_bef7;
    const OFFLOAD_1: u64 = 0xdead_bef8;

    // A TPU plane without step grouping (no host plane: no group ids), ns:
    //
    //  XLA Ops  |cs.1 S(5)|  |add a/b|  |add a/b|          |add a/b|  |cs.2|  |cd.1|  |cd.2|   |async|
    //           0        2   4       6  7       9          20     22  30  31  40  42  50  52   60 (skipped)
    //  Name Scope            |a=========9|  (gap 1 <= 2*2)  |a 20..22|  (gap 11 > 2*5: new event)
    //                        |b=======8|                    |b..21|     (same span as a: 1 ns shorter)
    //  Framework Ops         |add======9|                   |add 20..22|
    //  Source code           |f.py:1===9|                   |f.py:1|
    //  Offload row 0  |offload-copy.1 0..42===========================================|
    //  Offload row 1                                                  |offload-copy.2 30..52|
    #[test]
    fn tpu_plane_gets_xprof_derived_lines() {
        let bytes = XSpaceBuilder::new()
            .plane("/device:TPU:0", |p| {
                let (cs1, cs2) =
                    ("%copy-start.1 = f32[4]{0:S(5)} copy-start(x)", "%copy-start.2 = f32[4]{0:S(5)} copy-start(y)");
                let (cd1, cd2) =
                    ("%copy-done.1 = f32[4]{0:S(5)} copy-done(x)", "%copy-done.2 = f32[4]{0:S(5)} copy-done(y)");
                let add = "%add = f32[4] add(x, y)";
                for (name, display) in [
                    (cs1, "copy-start.1"),
                    (cs2, "copy-start.2"),
                    (cd1, "copy-done.1"),
                    (cd2, "copy-done.2"),
                    (add, "add"),
                ] {
                    p.event_display_name(name, display);
                }
                p.event_metadata_stat(add, "tf_op", "a/b/add:add").event_metadata_stat(add, "source", "f.py:1");
                p.line(3, "XLA Ops", 0, |l| {
                    l.event(cs1, 0, 2_000);
                    for at in [4, 7, 20] {
                        l.event(add, at * 1000, 2_000);
                    }
                    l.event(cs2, 30_000, 1_000);
                    l.event(cd1, 40_000, 2_000);
                    l.event(cd2, 50_000, 2_000);
                    l.event("%async = f32[4] fusion(x)", 60_000, 2_000).stat("tf_op", "c/mul:mul").stat("_a", 1i64);
                });
            })
            .to_bytes();
        let s = |x: &str| x.to_string();
        let derived: Vec<_> = device_events(bytes).into_iter().filter(|e| e.0 > 3).collect();
        assert_eq!(
            derived,
            vec![
                (NAME_SCOPE, s("a"), 4.0, 5.0, None),
                (NAME_SCOPE, s("a"), 20.0, 2.0, None),
                (NAME_SCOPE, s("b"), 4.0, 4.0, None),
                (NAME_SCOPE, s("b"), 20.0, 1.0, None),
                (TF_OP, s("add"), 4.0, 5.0, None),
                (TF_OP, s("add"), 20.0, 2.0, None),
                (SOURCE, s("f.py:1"), 4.0, 5.0, None),
                (SOURCE, s("f.py:1"), 20.0, 2.0, None),
                (OFFLOAD_0, s("offload-copy.1"), 0.0, 42.0, None),
                (OFFLOAD_1, s("offload-copy.2"), 30.0, 22.0, None),
            ]
        );
    }
}
