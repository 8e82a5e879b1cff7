//! The host (framework) op database: time spent in framework ops on host threads, as
//! XProf's `ConvertHostThreadsXPlaneToOpMetricsDb` (`xprof/convert/xplane_to_op_metrics_db.cc`)
//! computes it for `OpStats.host_op_metrics_db`.

use super::event_span::Timespan;
use super::op_metrics_db::{HostOpMetricsDbBuilder, OpMetricsDbCombiner, add_idle_op, set_total_time_ps};
use super::types::OpMetricsDb;
use oxprof_grouping::EventGroups;
use oxprof_grouping::tf_op::{TfOpCategory, parse_tf_op_fullname};
use oxprof_model::schema::{HOST_THREADS_PLANE_NAME, StatType, is_derived_thread_id};
use oxprof_model::{Event, Stat, StatValue, XPlane, XSpace};
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// Marks "no op" in the per-metadata table.
const NO_OP: u32 = u32::MAX;

/// The position of the host threads plane (the first plane named `/host:CPU`, as XProf's
/// `FindPlaneWithName`), to pass to [`host_op_metrics_db`].
pub fn find_host_plane(space: &XSpace) -> Option<usize> {
    space.planes.iter().position(|p| p.name == HOST_THREADS_PLANE_NAME)
}

/// The event's own stat of a type (`XEventVisitor::GetStat` does not look at metadata).
fn own_stat<'a>(event: &Event<'a>, ty: StatType) -> Option<Stat<'a>> {
    event.stats().get(ty)
}

/// `XStatVisitor::IntValue`: the `int64_value` (0 for other kinds).
fn int_value(stat: &Stat<'_>) -> i64 {
    if let StatValue::Int64(v) = stat.value { v } else { 0 }
}

/// `XStatVisitor::StrOrRefValue`: the string (empty for other kinds).
fn str_or_ref<'a>(stat: &Stat<'a>) -> &'a str {
    stat.as_str().unwrap_or("")
}

/// A framework op as the host database keys it (`tsl::profiler::TfOp`).
#[derive(Debug, Clone, Copy)]
struct HostOp<'a> {
    name: &'a str,
    op_type: &'a str,
    /// Becomes `hlo_module_id`: the stage id of input-pipeline stages, else 0.
    id: i64,
}

impl<'a> HostOp<'a> {
    /// `ParseTfOpFullname(fullname)` (id 0).
    fn parse(fullname: &'a str) -> (TfOpCategory, HostOp<'a>) {
        let op = parse_tf_op_fullname(fullname);
        (op.category, HostOp { name: op.name, op_type: op.op_type, id: 0 })
    }

    /// `ParseTfOpFullname(name, kInputPipeline, stage_category, stage_id)`: the stage as is
    /// when it has a category, else the name parsed normally but keeping the stage id
    /// (except for memcpy names, which XProf rebuilds with id 0).
    fn input_pipeline_stage(name: &'a str, stage_category: &'a str, stage_id: i64) -> HostOp<'a> {
        if !stage_category.is_empty() {
            return HostOp { name, op_type: stage_category, id: stage_id };
        }
        let parsed = parse_tf_op_fullname(name);
        match parsed.category {
            TfOpCategory::Unknown => HostOp { name, op_type: "", id: stage_id },
            TfOpCategory::MemcpyHToD
            | TfOpCategory::MemcpyDToH
            | TfOpCategory::MemcpyDToD
            | TfOpCategory::MemcpyHToH => HostOp { name: parsed.name, op_type: parsed.op_type, id: 0 },
            _ => HostOp { name: parsed.name, op_type: parsed.op_type, id: stage_id },
        }
    }
}

/// The framework ops of a host plane (`CollectTfOpsFromHostThreadsXPlane`), plus those
/// named by `tf_op` stats, in one table referenced by index.
struct HostOpTable<'a> {
    ops: Vec<HostOp<'a>>,
    /// XProf's `tf_ops` map: event metadata id (file id) or input-pipeline stage id → op.
    /// Both id spaces share the map; the first insertion wins.
    by_key: HashMap<i64, u32>,
    /// `by_key` resolved per dense event metadata id (events without a stage id).
    by_metadata: Vec<u32>,
    /// Ops named by `tf_op` stats, by full name.
    by_tf_op_stat: HashMap<&'a str, u32>,
}

impl<'a> HostOpTable<'a> {
    /// Scans every line and event of the plane (derived lines included, like XProf).
    ///
    /// An event with an `_ipl_stage_id` stat is an input-pipeline stage if it also has an
    /// `_ipl_stage_cat` stat (keyed by stage id) and never a legacy op; any other event
    /// whose name parses as a framework op is keyed by its metadata id.
    fn collect(plane: &'a XPlane) -> Self {
        let metadata = plane.event_metadata();
        let mut table = HostOpTable {
            ops: Vec::new(),
            by_key: HashMap::new(),
            by_metadata: vec![NO_OP; metadata.len()],
            by_tf_op_stat: HashMap::new(),
        };
        let has_stages = plane.stat_metadata_of_type(StatType::InputPipelineStageId).is_some();
        // Legacy ops depend only on the metadata: parse each once.
        let mut legacy_done = vec![false; metadata.len()];
        for line in &plane.lines {
            for event in line.events(plane) {
                let name = event.name();
                if name.is_empty() {
                    continue;
                }
                if has_stages && let Some(stage_id) = own_stat(&event, StatType::InputPipelineStageId) {
                    if let Some(category) = own_stat(&event, StatType::InputPipelineStageCategory) {
                        let stage_id = int_value(&stage_id);
                        let op = HostOp::input_pipeline_stage(name, str_or_ref(&category), stage_id);
                        table.insert_keyed(stage_id, op);
                    }
                    continue;
                }
                let dense = event.metadata_id().index();
                if legacy_done.get(dense).copied().unwrap_or(true) {
                    continue;
                }
                if let Some(done) = legacy_done.get_mut(dense) {
                    *done = true;
                }
                let (category, op) = HostOp::parse(name);
                if category != TfOpCategory::Unknown {
                    table.insert_keyed(event.metadata().id, op);
                }
            }
        }
        for (dense, m) in metadata.iter().enumerate() {
            if let (Some(&op), Some(slot)) = (table.by_key.get(&m.id), table.by_metadata.get_mut(dense)) {
                *slot = op;
            }
        }
        table
    }

    /// `tf_ops.try_emplace(key, op)`.
    fn insert_keyed(&mut self, key: i64, op: HostOp<'a>) {
        if let Entry::Vacant(slot) = self.by_key.entry(key) {
            slot.insert(self.ops.len() as u32);
            self.ops.push(op);
        }
    }

    /// The op of an event looked up by its stage id or metadata.
    fn keyed_op(&self, event: &Event<'_>, stage_id: Option<i64>) -> Option<u32> {
        let op = match stage_id {
            Some(id) => self.by_key.get(&id).copied(),
            None => self.by_metadata.get(event.metadata_id().index()).copied(),
        };
        op.filter(|&o| o != NO_OP)
    }

    /// The op named by a `tf_op` stat (parsed whatever its category).
    fn tf_op_stat_op(&mut self, fullname: &'a str) -> u32 {
        *self.by_tf_op_stat.entry(fullname).or_insert_with(|| {
            self.ops.push(HostOp::parse(fullname).1);
            (self.ops.len() - 1) as u32
        })
    }
}

/// One op execution found on a line (XProf's pair of begin/end `TfActivity`s).
#[derive(Debug, Clone, Copy)]
struct Candidate {
    begin_ps: u64,
    op: u32,
    is_eager: bool,
}

/// An op whose begin was seen and whose end was not yet.
#[derive(Debug, Clone, Copy)]
struct OpenOp {
    candidate: u32,
    start_ps: u64,
    children_ps: u64,
}

/// Buffers reused across lines: 16 bytes per candidate plus 16 per end (plus 4 when the
/// line's events are not in begin order).
#[derive(Default)]
struct LineScratch {
    candidates: Vec<Candidate>,
    /// `(end timestamp, candidate)`.
    ends: Vec<(u64, u32)>,
    /// Candidates in begin order, only built when event order is not begin order.
    begin_order: Vec<u32>,
    stack: Vec<OpenOp>,
    /// Op table index → position in the line's database (`NO_OP` = not seen yet).
    op_positions: Vec<u32>,
}

/// `ConvertHostThreadsXPlaneToOpMetricsDb`: the framework-op database of the host plane at
/// `plane_index` of `space`. `groups` supplies `is_eager` (XProf's `is_eager` stat, which
/// grouping's `MarkEagerlyExecuted` may have set) for events addressed as
/// `(plane_index, line, event)`. An out-of-range index gives an empty database.
///
/// Per line (derived lines contribute nothing but an empty IDLE op), candidates are
/// events that are framework ops (see [`HostOpTable::collect`]) and events with a
/// non-empty `tf_op` stat (an event can be both: two candidates). Their begins and ends
/// are sorted by time and replayed through a stack:
///
/// ```text
///  python  |-------- A (100) --------|        begin A, begin B, end B, begin C, end C, end A
///              |- B (20) -| |- C (30) -|      self(A) = 100 − (20 + 30) = 50
/// ```
///
/// An end pops the stack down to its own begin (discarding unmatched opens, as XProf does
/// for overlapping TraceMes); the op's time goes to its parent's children. Ops aggregate
/// by `(id, name)` with `category` = op type; each line's total is last − first activity,
/// each line gets its IDLE op, and the lines are combined without touching `num_cores`.
pub fn host_op_metrics_db(space: &XSpace, plane_index: usize, groups: &EventGroups) -> OpMetricsDb {
    let Some(plane) = space.planes.get(plane_index) else { return OpMetricsDb::default() };
    let mut table = HostOpTable::collect(plane);
    let mut combiner = OpMetricsDbCombiner::new();
    let mut scratch = LineScratch::default();
    for (line_index, line) in plane.lines.iter().enumerate() {
        let mut line_db = if is_derived_thread_id(line.id) {
            OpMetricsDb::default()
        } else {
            collect_line_activities(plane, plane_index, line_index, &mut table, groups, &mut scratch);
            replay_line_activities(&table, &mut scratch)
        };
        add_idle_op(&mut line_db);
        combiner.combine(&line_db, false);
    }
    combiner.into_db()
}

/// `CollectTfActivities`: the candidates of one line, in event order.
fn collect_line_activities<'a>(
    plane: &'a XPlane,
    plane_index: usize,
    line_index: usize,
    table: &mut HostOpTable<'a>,
    groups: &EventGroups,
    scratch: &mut LineScratch,
) {
    scratch.candidates.clear();
    scratch.ends.clear();
    let Some(line) = plane.lines.get(line_index) else { return };
    let has_stages = plane.stat_metadata_of_type(StatType::InputPipelineStageId).is_some();
    let has_tf_op_stats = plane.stat_metadata_of_type(StatType::TfOp).is_some();
    for (event_index, event) in line.events(plane).enumerate() {
        let begin_ps = event.timestamp_ps() as u64;
        let end_ps = begin_ps.wrapping_add(event.duration_ps() as u64);
        let stage_id =
            if has_stages { own_stat(&event, StatType::InputPipelineStageId).map(|s| int_value(&s)) } else { None };
        if let Some(op) = table.keyed_op(&event, stage_id) {
            let is_eager = groups.is_eager(plane_index, line_index, event_index);
            push_candidate(scratch, Candidate { begin_ps, op, is_eager }, end_ps);
        }
        if has_tf_op_stats && let Some(stat) = own_stat(&event, StatType::TfOp) {
            let fullname = str_or_ref(&stat);
            if !fullname.is_empty() {
                let op = table.tf_op_stat_op(fullname);
                push_candidate(scratch, Candidate { begin_ps, op, is_eager: false }, end_ps);
            }
        }
    }
}

fn push_candidate(scratch: &mut LineScratch, candidate: Candidate, end_ps: u64) {
    // Candidate numbers are u32 (a line has fewer than 2^31 events in practice); beyond
    // that, further candidates are ignored rather than aliased.
    let Ok(index) = u32::try_from(scratch.candidates.len()) else { return };
    scratch.candidates.push(candidate);
    scratch.ends.push((end_ps, index));
}

/// `ProcessTfActivities`: replays one line's candidates into its own database (see
/// [`host_op_metrics_db`]); the IDLE op is not added yet.
///
/// XProf pushes activities begin₀, end₀, begin₁, end₁, … and stable-sorts them by
/// timestamp, i.e. orders them by `(timestamp, 2 × candidate + is_end)`. Here the begins
/// (already in that order when events are in begin order, else sorted) and the ends
/// (sorted by `(timestamp, candidate)`) are merged under the same key, which needs no
/// per-activity buffer.
fn replay_line_activities(table: &HostOpTable<'_>, scratch: &mut LineScratch) -> OpMetricsDb {
    let mut builder = HostOpMetricsDbBuilder::new();
    let LineScratch { candidates, ends, begin_order, stack, op_positions } = scratch;
    if candidates.is_empty() {
        return builder.into_db();
    }
    op_positions.clear();
    op_positions.resize(table.ops.len(), NO_OP);
    ends.sort_unstable();
    let begins_sorted = candidates.windows(2).all(|w| w[0].begin_ps <= w[1].begin_ps);
    begin_order.clear();
    if !begins_sorted {
        begin_order.extend(0..candidates.len() as u32);
        begin_order.sort_by_key(|&c| candidates.get(c as usize).map_or(0, |c| c.begin_ps));
    }
    let begin_at = |position: usize| -> Option<u32> {
        if begins_sorted {
            (position < candidates.len()).then_some(position as u32)
        } else {
            begin_order.get(position).copied()
        }
    };
    let begin_ps_of = |candidate: u32| candidates.get(candidate as usize).map_or(0, |c| c.begin_ps);

    // First and last activity timestamps give the line's total time.
    let first_ps = begin_at(0).map(begin_ps_of).into_iter().chain(ends.first().map(|e| e.0)).min_by_key(|&t| t);
    let mut last_ps = 0u64;

    stack.clear();
    let (mut next_begin, mut next_end) = (0usize, 0usize);
    loop {
        let begin = begin_at(next_begin);
        let end = ends.get(next_end).copied();
        let take_begin = match (begin, end) {
            (Some(b), Some((end_ps, e))) => (begin_ps_of(b), 2 * u64::from(b)) < (end_ps, 2 * u64::from(e) + 1),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_begin {
            let Some(candidate) = begin else { break };
            next_begin += 1;
            let start_ps = begin_ps_of(candidate);
            last_ps = start_ps;
            stack.push(OpenOp { candidate, start_ps, children_ps: 0 });
            continue;
        }
        let Some((end_ps, candidate_index)) = end else { break };
        next_end += 1;
        last_ps = end_ps;
        // Pop until this op's begin; unmatched opens in between are dropped.
        let mut open = None;
        while let Some(top) = stack.pop() {
            if top.candidate == candidate_index {
                open = Some(top);
                break;
            }
        }
        let Some(open) = open else { continue };
        let Some(candidate) = candidates.get(candidate_index as usize) else { continue };
        let Some(op) = table.ops.get(candidate.op as usize) else { continue };
        let span = Timespan::from_end_points(open.start_ps, end_ps);
        // Remember where each table op lives in the line's database: one name lookup per
        // op and line instead of one per execution.
        let position = match op_positions.get(candidate.op as usize) {
            Some(&p) if p != NO_OP => p as usize,
            _ => {
                let p = builder.op_position(op.id, op.name);
                if let (Some(slot), Ok(p32)) = (op_positions.get_mut(candidate.op as usize), u32::try_from(p)) {
                    *slot = p32;
                }
                p
            }
        };
        builder.enter_op_at(position, op.op_type, candidate.is_eager, span.duration_ps, open.children_ps);
        if let Some(parent) = stack.last_mut() {
            parent.children_ps = parent.children_ps.wrapping_add(span.duration_ps);
        }
        if op.op_type.starts_with("InfeedEnqueue") {
            builder.enter_host_infeed_enqueue(span);
        }
    }
    if let Some(first_ps) = first_ps {
        set_total_time_ps(builder.db_mut(), last_ps.wrapping_sub(first_ps));
    }
    builder.into_db()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::op_metrics_db::IDLE;
    use crate::op_stats::types::OpMetrics;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_xspace::decode_xspace;

    fn db_of(bytes: &[u8]) -> OpMetricsDb {
        let space = decode_xspace(bytes).unwrap();
        let groups = EventGroups::from_file_stats(&space);
        host_op_metrics_db(&space, find_host_plane(&space).unwrap(), &groups)
    }

    fn find<'a>(db: &'a OpMetricsDb, name: &str) -> &'a OpMetrics {
        db.metrics_db.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no op {name}"))
    }

    // t(ps)   0        10   30  40     70       100
    // main    |------------ a/Outer:Outer ---------|
    //                  |- b:MatMul -|
    //                               |- c:Add -|
    //         (unknown "python" 0..100 is ignored)
    // other        |- b:MatMul (eager) -|           5..25
    #[test]
    fn self_time_nesting_and_idle() {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "main", 0, |l| {
                    l.event("python", 0, 100);
                    l.event("a/Outer:Outer", 0, 100);
                    l.event("b:MatMul", 10, 30);
                    l.event("c:Add", 40, 30);
                });
                p.line(2, "other", 0, |l| {
                    l.event("b:MatMul", 5, 20).stat("is_eager", 1i64);
                });
            })
            .to_bytes();
        let db = db_of(&bytes);
        let names: Vec<_> = db.metrics_db.iter().map(|m| m.name.as_str()).collect();
        // Line 1's ops in end order, its IDLE, then line 2's op (merged).
        assert_eq!(names, ["b", "c", "a/Outer", IDLE]);
        let outer = find(&db, "a/Outer");
        assert_eq!(
            (outer.category.as_str(), outer.time_ps, outer.self_time_ps, outer.occurrences),
            ("Outer", 100, 40, 1)
        );
        let b = find(&db, "b");
        assert_eq!((b.occurrences, b.time_ps, b.self_time_ps, b.is_eager, b.num_cores), (2, 50, 50, true, 0));
        assert_eq!(db.total_op_time_ps, 40 + 30 + 30 + 20);
        // Line totals: 100 and 20; idle = 120 − 120.
        assert_eq!(db.total_time_ps, 120);
        assert_eq!(find(&db, IDLE).time_ps, 0);
        assert!(db.precision_stats.is_some());
    }

    // t(ps)   0    10        50   60
    // main    |-- x:Foo --|                 x ends before its child "y" does:
    //              |---- y:Bar ----|        end x pops y (dropped) and x.
    #[test]
    fn overlapping_events_drop_the_unmatched_open() {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "main", 0, |l| {
                    l.event("x:Foo", 0, 50);
                    l.event("y:Bar", 10, 50);
                });
            })
            .to_bytes();
        let db = db_of(&bytes);
        assert_eq!(db.metrics_db.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["x", IDLE]);
        assert_eq!(find(&db, "x").self_time_ps, 50);
        assert_eq!(db.total_time_ps, 60);
    }

    // Events not in time order in the file are replayed in time order.
    // t(ps)  0    10    20    30
    // main   |---- p:Outer -----|      file order: c, then p
    //             |c:In-|
    #[test]
    fn events_out_of_order_are_sorted() {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "main", 0, |l| {
                    l.event("c:In", 10, 10);
                    l.event("p:Outer", 0, 30);
                });
            })
            .to_bytes();
        let db = db_of(&bytes);
        assert_eq!(db.metrics_db.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["c", "p", IDLE]);
        assert_eq!((find(&db, "p").self_time_ps, find(&db, "c").self_time_ps), (20, 10));
        assert_eq!(db.total_time_ps, 30);
    }

    // Ties keep XProf's event order: the parent's end (pushed first) comes before its
    // child's end at the same time, so the child is popped unmatched and lost.
    // t(ps)  0     10     20
    // main   |-- p:Outer --|
    //               |c:In--|
    #[test]
    fn equal_end_times_lose_the_later_event() {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "main", 0, |l| {
                    l.event("p:Outer", 0, 20);
                    l.event("c:In", 10, 10);
                });
            })
            .to_bytes();
        let db = db_of(&bytes);
        assert_eq!(db.metrics_db.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["p", IDLE]);
        assert_eq!(find(&db, "p").self_time_ps, 20);
    }

    // Stage events (keyed by stage id, hlo_module_id = stage id), tf_op stats (any name,
    // never eager), infeed enqueue totals, and a derived line that only adds IDLE.
    // t(ps)  0   10  20  30   100  110   200 210
    // main   |-read-|                               stage 30 "read" category "enqueue"
    //          |-k-|                                kernel (5..15) with tf_op "m/Conv:Conv2D"
    //                     |InfeedEnqueueTuple| ×2 at 100 and 200 (10 each)
    #[test]
    fn stages_tf_op_stats_and_infeed() {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "main", 0, |l| {
                    l.event("read", 0, 20).stat("_ipl_stage_id", 30i64).stat("_ipl_stage_cat", "enqueue");
                    l.event("kernel", 5, 10).stat("tf_op", "m/Conv:Conv2D");
                    l.event("q/InfeedEnqueueTuple:InfeedEnqueueTuple", 100, 10);
                    l.event("q/InfeedEnqueueTuple:InfeedEnqueueTuple", 200, 10);
                });
                p.line(0xdead_beef, "derived", 0, |l| {
                    l.event("z:Mul", 0, 1000);
                });
            })
            .to_bytes();
        let db = db_of(&bytes);
        let read = find(&db, "read");
        assert_eq!((read.hlo_module_id, read.category.as_str(), read.self_time_ps), (30, "enqueue", 10));
        let conv = find(&db, "m/Conv");
        assert_eq!((conv.category.as_str(), conv.time_ps, conv.is_eager), ("Conv2D", 10, false));
        assert_eq!(db.total_host_infeed_enq_duration_ps, 10);
        assert_eq!(db.total_host_infeed_enq_start_timestamp_ps_diff, 100);
        assert!(db.metrics_db.iter().all(|m| m.name != "z"), "derived lines are skipped");
        assert_eq!(db.total_time_ps, 210);
    }

    // XProf keys stages by stage id and other ops by metadata id in one map: a stage id
    // equal to a later op's metadata id captures that op's events (first insertion wins).
    // Metadata ids here: "stage" = 1, "a:Foo" = 2.
    // t(ps)  0   10  20      40
    // main   |stage|  |a:Foo|          stage id 2 → a:Foo's events count as "stage"
    #[test]
    fn stage_ids_and_metadata_ids_share_one_key_space() {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "main", 0, |l| {
                    l.event("stage", 0, 10).stat("_ipl_stage_id", 2i64).stat("_ipl_stage_cat", "read");
                    l.event("a:Foo", 20, 20);
                });
            })
            .to_bytes();
        let db = db_of(&bytes);
        let stage = find(&db, "stage");
        assert_eq!((stage.hlo_module_id, stage.occurrences, stage.time_ps), (2, 2, 30));
        assert!(db.metrics_db.iter().all(|m| m.name != "a"));
    }

    #[test]
    fn missing_plane_gives_empty_db() {
        let bytes = XSpaceBuilder::new().plane("/device:GPU:0", |p| {
            p.line(1, "stream", 0, |l| {
                l.event("k", 0, 1);
            });
        });
        let space = decode_xspace(&bytes.to_bytes()).unwrap();
        assert_eq!(find_host_plane(&space), None);
        assert_eq!(host_op_metrics_db(&space, 5, &EventGroups::default()), OpMetricsDb::default());
    }
}

#[cfg(test)]
pub(crate) mod reference_tests {
    //! `host_op_metrics_db` against XProf's own OpStats.
    use super::*;
    use crate::op_stats::op_metrics_db::combine_op_metrics_dbs;
    use crate::op_stats::types::OpStats;
    pub(crate) use oxprof_testkit::files::{external_path as external_root, repo_root};
    use oxprof_testkit::jsoncmp::{CmpOptions, compare};
    use std::path::{Path, PathBuf};

    /// The refkit profiles: name, xplane path, XProf's OpStats.
    pub(crate) fn refkit_profiles() -> Vec<(String, PathBuf, OpStats)> {
        let root = repo_root().join("testdata/profiles");
        let mut out = Vec::new();
        let mut dirs: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().map(|d| d.path()).collect();
        dirs.sort();
        for dir in dirs {
            let Ok(text) = std::fs::read_to_string(dir.join("xprof_out/op_stats.json")) else { continue };
            let op_stats: OpStats = serde_json::from_str(&text).unwrap();
            let xplane = find_xplane(&dir).unwrap_or_else(|| panic!("no xplane under {}", dir.display()));
            out.push((dir.file_name().unwrap().to_string_lossy().into_owned(), xplane, op_stats));
        }
        out
    }

    fn find_xplane(dir: &Path) -> Option<PathBuf> {
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if let Some(found) = find_xplane(&path) {
                    return Some(found);
                }
            } else if path.to_string_lossy().ends_with(".xplane.pb.gz")
                || path.to_string_lossy().ends_with(".xplane.pb")
            {
                return Some(path);
            }
        }
        None
    }

    /// XProf's OpStats of an external profile (`testdata/external-opstats/<name>.op_stats.json.gz`).
    pub(crate) fn external_op_stats(name: &str) -> OpStats {
        let path = repo_root().join(format!("testdata/external-opstats/{name}.op_stats.json.gz"));
        crate::op_stats::load_op_stats(&path)
    }

    /// Differences between XProf's database and ours, with `is_eager`-only differences
    /// reported apart (XProf may derive them from grouping, which oxprof does not run yet).
    pub(crate) fn compare_db(label: &str, expected: &OpMetricsDb, actual: &OpMetricsDb) -> (Vec<String>, Vec<String>) {
        let mut eager_diffs = Vec::new();
        let mut expected_no_eager = expected.clone();
        let mut actual_no_eager = actual.clone();
        for (e, a) in expected_no_eager.metrics_db.iter_mut().zip(actual_no_eager.metrics_db.iter_mut()) {
            if e.name == a.name && e.is_eager != a.is_eager {
                eager_diffs.push(format!("{label}: {} is_eager expected {} got {}", e.name, e.is_eager, a.is_eager));
            }
            e.is_eager = false;
            a.is_eager = false;
        }
        let report = compare(
            &serde_json::to_value(&expected_no_eager).unwrap(),
            &serde_json::to_value(&actual_no_eager).unwrap(),
            CmpOptions { rel: 0.0, abs: 0.0, unordered: false },
        );
        eprintln!("{label}: {} ops, {}/{} leaves equal", expected.metrics_db.len(), report.ok, report.total);
        let diffs = if report.is_match() { Vec::new() } else { vec![format!("{label}:\n{}", report.summary(20))] };
        (diffs, eager_diffs)
    }

    fn ours(path: &Path) -> OpMetricsDb {
        let space = oxprof_testkit::files::load_xspace(path).unwrap();
        let groups = oxprof_grouping::group_events(&space);
        match find_host_plane(&space) {
            Some(index) => host_op_metrics_db(&space, index, &groups),
            None => OpMetricsDb::default(),
        }
    }

    #[test]
    fn refkit_host_op_metrics_db_matches_xprof() {
        let mut failures = Vec::new();
        let mut eager = Vec::new();
        let profiles = refkit_profiles();
        assert!(profiles.len() >= 5);
        for (name, xplane, expected) in &profiles {
            let (d, e) = compare_db(name, &expected.host_op_metrics_db, &ours(xplane));
            failures.extend(d);
            eager.extend(e);
        }
        if !eager.is_empty() {
            eprintln!("is_eager differences (grouping not ported yet):\n{}", eager.join("\n"));
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Single-host external profiles: (op_stats name, xplane path under the external root).
    pub(crate) const EXTERNAL_SINGLE_HOST: &[(&str, &str)] = &[
        (
            "GPU-multi-worker__34.83.195.179_6003",
            "openxla-xprof/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb",
        ),
        ("test_xplanes__tpu_inference_2", "openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb"),
        ("jax08_attention__tw003", "AMD-AGI-TraceLens/tests/traces/mi300/jax08_attention/tw003.xplane.pb"),
        ("jax08_conv__tw003", "AMD-AGI-TraceLens/tests/traces/mi300/jax08_conv/tw003.xplane.pb"),
        ("jax08_elementwise__tw003", "AMD-AGI-TraceLens/tests/traces/mi300/jax08_elementwise/tw003.xplane.pb"),
        ("jax08_gemm__tw003", "AMD-AGI-TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb"),
        (
            "jax_conv_minimal",
            "AMD-AGI-TraceLens/tests/traces/mi300/jax_conv_minimal/chi-mi300x-013.ord.vultr.cpe.ice.amd.com.xplane.pb",
        ),
        (
            "test_data_jax_te_fused_attn_categorization__934987a2fc2f",
            "AMD-AGI-TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb",
        ),
    ];

    #[test]
    fn external_host_op_metrics_db_matches_xprof() {
        let root = external_root();
        if !root.exists() {
            eprintln!("SKIP: external test data not found at {}", root.display());
            return;
        }
        let mut failures = Vec::new();
        let mut eager = Vec::new();
        for (name, rel) in EXTERNAL_SINGLE_HOST {
            let path = root.join(rel);
            if !path.exists() {
                eprintln!("SKIP: {} not found", path.display());
                continue;
            }
            let expected = external_op_stats(name);
            let (d, e) = compare_db(name, &expected.host_op_metrics_db, &ours(&path));
            failures.extend(d);
            eager.extend(e);
        }
        // Two hosts: XProf combines the hosts' databases (host DBs keep num_cores).
        let dir = root.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker");
        let hosts = ["34.83.195.179_6003.xplane.pb", "34.83.195.180_6003.xplane.pb"];
        if hosts.iter().all(|h| dir.join(h).exists()) {
            let dbs: Vec<OpMetricsDb> = hosts.iter().map(|h| ours(&dir.join(h))).collect();
            let combined = combine_op_metrics_dbs(&dbs, false);
            let expected = external_op_stats("GPU-multi-worker_two_hosts");
            let (d, e) = compare_db("GPU-multi-worker_two_hosts", &expected.host_op_metrics_db, &combined);
            failures.extend(d);
            eager.extend(e);
        }
        if !eager.is_empty() {
            eprintln!("is_eager differences (grouping not ported yet):\n{}", eager.join("\n"));
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Time and memory on the 3 M-event JAX profile:
    /// `cargo test --release -p oxprof-xprof jax_large_host_op_metrics -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn jax_large_host_op_metrics() {
        let Some(path) = std::fs::read_dir("/work/refdata/jax_large/plugins/profile")
            .ok()
            .and_then(|mut runs| runs.next())
            .and_then(|run| run.ok())
            .map(|run| run.path().join("vm.xplane.pb"))
        else {
            eprintln!("SKIP: /work/refdata/jax_large not found");
            return;
        };
        let space = oxprof_testkit::files::load_xspace(&path).unwrap();
        let groups = oxprof_grouping::group_events(&space);
        let rss_before = rss_kib();
        let index = find_host_plane(&space).unwrap();
        let events = space.planes[index].event_count();
        let start = std::time::Instant::now();
        let db = host_op_metrics_db(&space, index, &groups);
        let host_elapsed = start.elapsed();
        let start = std::time::Instant::now();
        let functions = crate::op_stats::tf_functions::tf_function_db(&space, index);
        let tf_elapsed = start.elapsed();
        eprintln!(
            "host plane: {events} events; host_op_metrics_db {:?} ({} ops); tf_function_db {:?} ({} functions); \
             RSS {} → {} KiB, peak {} KiB",
            host_elapsed,
            db.metrics_db.len(),
            tf_elapsed,
            functions.tf_functions.len(),
            rss_before.0,
            rss_kib().0,
            rss_kib().1,
        );
    }

    /// Worst case for the activity replay: 3 M framework-op events on one line (1.5 M
    /// parents with one child each), all candidates:
    /// `cargo test --release -p oxprof-xprof synthetic_3m_host_ops -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn synthetic_3m_host_ops() {
        use oxprof_testkit::XSpaceBuilder;
        const PAIRS: i64 = 1_500_000;
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "main", 0, |l| {
                    for i in 0..PAIRS {
                        let name = if i % 2 == 0 { "model/dense/MatMul:MatMul" } else { "model/Relu:Relu" };
                        l.event(name, i * 100, 90);
                        l.event("model/ReadVariableOp:ReadVariableOp", i * 100 + 10, 20);
                    }
                });
            })
            .to_bytes();
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        drop(bytes);
        let groups = EventGroups::default();
        let rss_before = rss_kib();
        let start = std::time::Instant::now();
        let db = host_op_metrics_db(&space, 0, &groups);
        let elapsed = start.elapsed();
        let rss_after = rss_kib();
        assert_eq!(db.metrics_db.len(), 4);
        assert_eq!(db.total_op_time_ps, (PAIRS * 90) as u64);
        eprintln!(
            "synthetic: {} events; host_op_metrics_db {elapsed:?}; RSS {} → {} KiB, peak {} → {} KiB",
            2 * PAIRS,
            rss_before.0,
            rss_after.0,
            rss_before.1,
            rss_after.1
        );
    }

    /// (VmRSS, VmHWM) of this process in KiB (0 where unavailable).
    fn rss_kib() -> (u64, u64) {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}
