//! TPU duty cycle: how long each chip was busy running ops versus idle within its traced
//! span, which overrides `device_op_metrics_db.{busy,idle}_time_ps` for TPU hosts. A port of
//! XProf's `duty_cycle_tracker.cc`, `duty_cycle_combiner.h` and `ConstructDutyCycleTracker`
//! (plus the "high confidence" variant XProf 2.24.2 also computes, which additionally counts
//! custom calls without FLOPs as idle).

use super::environment::plane_core_details;
use super::hardware::int_or_uint;
use oxprof_model::schema::StatType;
use oxprof_model::{Event, XPlane};
use std::collections::BTreeMap;

/// `Timespan`: `[begin, begin + duration]` in ps, unsigned, as XProf computes it from an
/// event's (wrapping) timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timespan {
    /// Begin.
    pub begin_ps: u64,
    /// Duration.
    pub duration_ps: u64,
}

impl Timespan {
    /// `Timespan::FromEndPoints`: an empty span at `begin` when `end < begin`.
    pub fn from_end_points(begin_ps: u64, end_ps: u64) -> Timespan {
        Timespan { begin_ps, duration_ps: end_ps.saturating_sub(begin_ps) }
    }

    /// End (wrapping like XProf's unsigned arithmetic).
    pub fn end_ps(&self) -> u64 {
        self.begin_ps.wrapping_add(self.duration_ps)
    }

    /// `Empty()`: begin and duration both 0 (the "unset" span).
    pub fn is_empty(&self) -> bool {
        self.begin_ps == 0 && self.duration_ps == 0
    }

    /// `Includes`: end points inclusive.
    pub fn includes(&self, other: &Timespan) -> bool {
        self.begin_ps <= other.begin_ps && other.end_ps() <= self.end_ps()
    }

    /// `ExpandToInclude`: the smallest span covering both (an empty span is replaced).
    pub fn expand_to_include(&mut self, other: &Timespan) {
        *self = if self.is_empty() {
            *other
        } else {
            Timespan::from_end_points(self.begin_ps.min(other.begin_ps), self.end_ps().max(other.end_ps()))
        };
    }

    /// `XEventVisitor::GetTimespan` of an event.
    pub fn of_event(event: &Event<'_>) -> Timespan {
        Timespan { begin_ps: event.timestamp_ps() as u64, duration_ps: event.duration_ps() as u64 }
    }
}

/// `DutyCycleTracker`: the union of the active intervals and the overall span of all
/// intervals (active or not) added.
///
/// Active intervals are kept merged: disjoint and not touching, keyed by begin. Adding an
/// interval merges it with every kept interval it overlaps or touches (end points are
/// inclusive, as in XProf's `MergeOrInsert`):
///
/// ```text
/// kept:    [10, 20]    [30, 40]       [50, 60]
/// add:            [20, 30]
/// result:  [10,            40]        [50, 60]
/// ```
#[derive(Debug, Clone, Default)]
pub struct DutyCycleTracker {
    active: BTreeMap<u64, u64>,
    total: Timespan,
}

impl DutyCycleTracker {
    /// `AddInterval`: widens the total span; when active, adds to the busy union.
    pub fn add_interval(&mut self, span: Timespan, is_active: bool) {
        self.total.expand_to_include(&span);
        if is_active {
            self.merge(span.begin_ps, span.end_ps());
        }
    }

    fn merge(&mut self, begin: u64, end: u64) {
        // Common case (events in time order): the interval overlaps the last kept interval
        // beginning at or before it, and that one just grows to the right. Intervals after
        // it begin after `end`, so they stay disjoint.
        if let Some((&b, e)) = self.active.range_mut(..=end).next_back()
            && b <= begin
            && *e >= begin
        {
            *e = (*e).max(end);
            return;
        }
        let (mut new_begin, mut new_end) = (begin, end);
        // Kept intervals are disjoint, so the ones overlapping [begin, end] are the last few
        // that begin at or before `end`; absorb them one by one from the right.
        while let Some((&b, &e)) = self.active.range(..=new_end).next_back() {
            if e < new_begin {
                break;
            }
            if b <= new_begin && new_end <= e {
                // Already covered.
                return;
            }
            self.active.remove(&b);
            new_begin = new_begin.min(b);
            new_end = new_end.max(e);
        }
        self.active.insert(new_begin, new_end);
    }

    /// `Union`: merges another tracker's busy intervals and total span into this one.
    pub fn union(&mut self, other: &DutyCycleTracker) {
        self.total.expand_to_include(&other.total);
        for (&b, &e) in &other.active {
            self.merge(b, e);
        }
    }

    /// Busy time: the length of the union of active intervals.
    pub fn active_time_ps(&self) -> u64 {
        self.active.iter().fold(0u64, |acc, (&b, &e)| acc.wrapping_add(e.wrapping_sub(b)))
    }

    /// Idle time: the total span minus the busy time.
    pub fn idle_time_ps(&self) -> u64 {
        self.total.duration_ps.wrapping_sub(self.active_time_ps())
    }
}

/// `IsOffDutyOp`: HLO categories during which the chip counts as idle.
pub fn is_off_duty_op(category: &str) -> bool {
    matches!(
        category,
        "infeed"
            | "outfeed"
            | "host send"
            | "host send-done"
            | "host recv"
            | "host recv-done"
            | "async-done"
            | "megacore fusion"
    )
}

/// A stat of the event, else of its metadata (`GetEventOrMetadataStat`), as an integer.
fn event_or_metadata_int(event: &Event<'_>, name: &str) -> i64 {
    event
        .stats()
        .find(|s| s.name() == name)
        .or_else(|| event.metadata_stats().find(|s| s.name() == name))
        .map_or(0, |s| int_or_uint(&s.value) as i64)
}

/// `IsCustomCallEventOffDuty`: a custom call (by the event's category stat, else its
/// metadata's) without FLOPs, model FLOPs or ICI use.
fn is_custom_call_off_duty(event: &Event<'_>) -> bool {
    let category = event
        .stats()
        .get(StatType::HloCategory)
        .or_else(|| event.metadata_stats().get(StatType::HloCategory))
        .and_then(|s| s.as_str());
    category == Some("custom-call")
        && event_or_metadata_int(event, "flops") <= 0
        && event_or_metadata_int(event, "model_flops") <= 0
        && event_or_metadata_int(event, "uses_ici") <= 0
}

/// Which of a plane's lines the duty cycle reads, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DutyLine {
    /// `XLA Ops`: active unless off duty (by HLO category).
    XlaOps,
    /// `Sparse Core Ops`: always active.
    SparseCoreOps,
    /// `XLA Modules`, `Sparse Core Modules`: only widen the span.
    Modules,
}

impl DutyLine {
    fn of(name: &str) -> Option<DutyLine> {
        match name {
            "XLA Ops" => Some(DutyLine::XlaOps),
            "Sparse Core Ops" => Some(DutyLine::SparseCoreOps),
            "XLA Modules" | "Sparse Core Modules" => Some(DutyLine::Modules),
            _ => None,
        }
    }
}

/// Whether an event counts as busy for the standard and the high-confidence tracker,
/// with each event metadata's HLO category looked up once.
struct Activity<'a> {
    categories: Vec<Option<Option<&'a str>>>,
}

impl<'a> Activity<'a> {
    fn new(plane: &'a XPlane) -> Activity<'a> {
        Activity { categories: vec![None; plane.event_metadata().len()] }
    }

    /// `(standard, high confidence)` activity of an event of a line of kind `kind`.
    fn of(&mut self, kind: DutyLine, event: &Event<'a>) -> (bool, bool) {
        match kind {
            DutyLine::Modules => (false, false),
            DutyLine::SparseCoreOps => (true, true),
            DutyLine::XlaOps => {
                let index = event.metadata_id().index();
                let metadata_category = match self.categories.get(index).copied().flatten() {
                    Some(c) => c,
                    None => {
                        let c = event.metadata_stats().get(StatType::HloCategory).map(|s| s.as_str().unwrap_or(""));
                        if let Some(slot) = self.categories.get_mut(index) {
                            *slot = Some(c);
                        }
                        c
                    }
                };
                let category = metadata_category
                    .or_else(|| event.stats().get(StatType::HloCategory).map(|s| s.as_str().unwrap_or("")));
                let off_duty = category.is_some_and(is_off_duty_op);
                let hc_off_duty = category.is_some_and(|c| {
                    is_off_duty_op(c)
                        || ((c == "custom-call" || event.stats().get(StatType::HloCategory).is_some())
                            && is_custom_call_off_duty(event))
                });
                (!off_duty, !hc_off_duty)
            }
        }
    }
}

/// The duty cycle trackers of one device plane: the standard one and the high-confidence
/// one (XProf 2.24.2's `ConstructDutyCycleTrackers`).
///
/// * `XLA Ops`: active unless the op's HLO category (metadata stat, else event stat) is
///   off duty; for the high-confidence tracker custom calls without FLOPs are idle too.
/// * `Sparse Core Ops`: active.
/// * `XLA Modules`, `Sparse Core Modules`: only widen the span.
pub fn plane_duty_cycle_trackers(plane: &XPlane) -> (DutyCycleTracker, DutyCycleTracker) {
    let mut standard = DutyCycleTracker::default();
    let mut high_confidence = DutyCycleTracker::default();
    let mut activity = Activity::new(plane);
    for line in &plane.lines {
        let Some(kind) = DutyLine::of(&line.name) else { continue };
        for event in line.events(plane) {
            let span = Timespan::of_event(&event);
            let (active, hc_active) = activity.of(kind, &event);
            standard.add_interval(span, active);
            high_confidence.add_interval(span, hc_active);
        }
    }
    (standard, high_confidence)
}

/// One chip's busy and total time: `(standard busy, high-confidence busy, total span)`.
///
/// The trackers keep every disjoint busy interval, one per op on a TPU whose ops leave gaps
/// (the BTreeMaps were twice a generated host's file at their peak). Their busy time is the
/// length of the union of the intervals, which a sweep in begin order gets with no storage
/// when every op line is in time order and no interval wraps, as XSpace writers emit them;
/// otherwise the chip's trackers are built as XProf builds them.
fn chip_duty(planes: &[&XPlane]) -> (u64, u64, Timespan) {
    let mut total = Timespan::default();
    for plane in planes {
        let mut plane_total = Timespan::default();
        for line in plane.lines.iter().filter(|l| DutyLine::of(&l.name).is_some()) {
            for event in line.events(plane) {
                plane_total.expand_to_include(&Timespan::of_event(&event));
            }
        }
        total.expand_to_include(&plane_total);
    }
    if let Some((busy, hc_busy)) = swept_busy_time(planes) {
        return (busy, hc_busy, total);
    }
    let mut standard = DutyCycleTracker::default();
    let mut high_confidence = DutyCycleTracker::default();
    for plane in planes {
        let (tracker, hc_tracker) = plane_duty_cycle_trackers(plane);
        standard.union(&tracker);
        high_confidence.union(&hc_tracker);
    }
    (standard.active_time_ps(), high_confidence.active_time_ps(), total)
}

/// The union length of busy intervals, swept in begin order (touching intervals join, as
/// end points are inclusive).
#[derive(Default)]
struct Sweep {
    current: Option<(u64, u64)>,
    busy_ps: u64,
}

impl Sweep {
    fn add(&mut self, begin: u64, end: u64) {
        match &mut self.current {
            Some((_, current_end)) if begin <= *current_end => *current_end = (*current_end).max(end),
            current => {
                if let Some((b, e)) = current.replace((begin, end)) {
                    self.busy_ps = self.busy_ps.wrapping_add(e - b);
                }
            }
        }
    }

    fn finish(self) -> u64 {
        self.current.map_or(self.busy_ps, |(b, e)| self.busy_ps.wrapping_add(e - b))
    }
}

/// The busy times of a chip's op lines merged in begin order (`None`: a line out of time
/// order, or an interval that wraps; the trackers handle those).
fn swept_busy_time(planes: &[&XPlane]) -> Option<(u64, u64)> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    struct Stream<'a> {
        kind: DutyLine,
        plane: usize,
        events: Box<dyn Iterator<Item = Event<'a>> + 'a>,
        last_begin: u64,
    }
    let mut activities: Vec<Activity<'_>> = planes.iter().map(|p| Activity::new(p)).collect();
    let mut streams: Vec<Stream<'_>> = Vec::new();
    for (index, plane) in planes.iter().enumerate() {
        for line in &plane.lines {
            match DutyLine::of(&line.name) {
                Some(DutyLine::Modules) | None => {}
                Some(kind) => {
                    streams.push(Stream { kind, plane: index, events: Box::new(line.events(plane)), last_begin: 0 })
                }
            }
        }
    }
    // Each stream's next event, keyed by its begin (ties: the stream's order).
    let mut heads: Vec<Option<Event<'_>>> = Vec::with_capacity(streams.len());
    let mut queue = BinaryHeap::new();
    for (index, stream) in streams.iter_mut().enumerate() {
        let head = stream.events.next();
        if let Some(event) = &head {
            queue.push(Reverse((Timespan::of_event(event).begin_ps, index)));
        }
        heads.push(head);
    }
    let (mut standard, mut high_confidence) = (Sweep::default(), Sweep::default());
    while let Some(Reverse((begin, index))) = queue.pop() {
        let stream = &mut streams[index];
        let event = heads[index].take()?;
        let end = begin.checked_add(event.duration_ps() as u64)?;
        if begin < stream.last_begin {
            return None;
        }
        stream.last_begin = begin;
        let activity = &mut activities[stream.plane];
        let (active, hc_active) = activity.of(stream.kind, &event);
        if active {
            standard.add(begin, end);
        }
        if hc_active {
            high_confidence.add(begin, end);
        }
        if let Some(next) = stream.events.next() {
            queue.push(Reverse((Timespan::of_event(&next).begin_ps, index)));
            heads[index] = Some(next);
        }
    }
    Some((standard.finish(), high_confidence.finish()))
}

/// The TPU duty cycle of a host, to store in `device_op_metrics_db`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DutyCycle {
    /// `busy_time_ps`.
    pub busy_time_ps: u64,
    /// `idle_time_ps`.
    pub idle_time_ps: u64,
    /// `busy_time_high_confidence_ps` (XProf 2.24.2).
    pub busy_time_high_confidence_ps: u64,
    /// `idle_time_high_confidence_ps`.
    pub idle_time_high_confidence_ps: u64,
}

/// The duty cycle over a TPU host's device planes: each plane's tracker is combined into
/// its chip's (by `local_chip_id` of its core details), or counted as a chip of its own
/// when the plane has no core details.
pub fn tpu_duty_cycle<'a>(device_planes: impl IntoIterator<Item = &'a XPlane>) -> DutyCycle {
    let mut chips: BTreeMap<u32, Vec<&XPlane>> = BTreeMap::new();
    let mut alone: Vec<&XPlane> = Vec::new();
    for plane in device_planes {
        match plane_core_details(plane, "") {
            Some(details) => chips.entry(details.local_chip_id).or_default().push(plane),
            None => alone.push(plane),
        }
    }
    let mut duty = DutyCycle::default();
    for planes in chips.values().map(Vec::as_slice).chain(alone.chunks(1)) {
        let (busy, hc_busy, total) = chip_duty(planes);
        duty.busy_time_ps = duty.busy_time_ps.wrapping_add(busy);
        duty.idle_time_ps = duty.idle_time_ps.wrapping_add(total.duration_ps.wrapping_sub(busy));
        duty.busy_time_high_confidence_ps = duty.busy_time_high_confidence_ps.wrapping_add(hc_busy);
        duty.idle_time_high_confidence_ps =
            duty.idle_time_high_confidence_ps.wrapping_add(total.duration_ps.wrapping_sub(hc_busy));
    }
    duty
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_testkit::{Value, XSpaceBuilder};

    fn span(begin: u64, end: u64) -> Timespan {
        Timespan::from_end_points(begin, end)
    }

    #[test]
    fn tracker_merges_touching_and_nested_intervals() {
        // [10,20] [30,40] [50,60], then [20,30] joins the first two; [52,55] is inside.
        let mut t = DutyCycleTracker::default();
        for s in [span(10, 20), span(50, 60), span(30, 40), span(20, 30), span(52, 55)] {
            t.add_interval(s, true);
        }
        t.add_interval(span(0, 100), false);
        assert_eq!(t.active.iter().map(|(&b, &e)| (b, e)).collect::<Vec<_>>(), [(10, 40), (50, 60)]);
        assert_eq!(t.active_time_ps(), 40);
        assert_eq!(t.idle_time_ps(), 60);
    }

    //  XLA Modules |------------- module (0..100) --------------|
    //  XLA Ops        |-conv 10..30-|  |-infeed 40..60-|  |-cc 70..80-|
    #[test]
    fn plane_trackers_count_off_duty_ops_as_idle() {
        let bytes = XSpaceBuilder::new()
            .plane("/device:TPU:0", |p| {
                p.event_metadata_stat("conv", "hlo_category", "convolution");
                p.event_metadata_stat("infeed", "hlo_category", "infeed");
                p.event_metadata_stat("cc", "hlo_category", "custom-call");
                p.stat("core_details", Value::Bytes(vec![0x20, 0]));
                p.line(1, "XLA Modules", 0, |l| {
                    l.event("module", 0, 100_000);
                });
                p.line(2, "XLA Ops", 0, |l| {
                    l.event("conv", 10_000, 20_000);
                    l.event("infeed", 40_000, 20_000);
                    l.event("cc", 70_000, 10_000);
                });
            })
            .to_bytes();
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        let d = tpu_duty_cycle(space.planes.iter());
        assert_eq!((d.busy_time_ps, d.idle_time_ps), (30_000, 70_000));
        assert_eq!((d.busy_time_high_confidence_ps, d.idle_time_high_confidence_ps), (20_000, 80_000));
    }

    /// XProf's way: each plane's trackers, unioned per chip (`DutyCycleCombiner`), planes
    /// without core details counted alone.
    fn duty_by_trackers(planes: &[&XPlane]) -> DutyCycle {
        let mut chips: BTreeMap<Option<u32>, Vec<(DutyCycleTracker, DutyCycleTracker)>> = BTreeMap::new();
        let mut alone = Vec::new();
        for plane in planes {
            let trackers = plane_duty_cycle_trackers(plane);
            match plane_core_details(plane, "") {
                Some(d) => chips.entry(Some(d.local_chip_id)).or_default().push(trackers),
                None => alone.push(trackers),
            }
        }
        let mut chip_trackers: Vec<(DutyCycleTracker, DutyCycleTracker)> = chips
            .into_values()
            .map(|cores| {
                let (mut s, mut h) = (DutyCycleTracker::default(), DutyCycleTracker::default());
                for (cs, ch) in &cores {
                    s.union(cs);
                    h.union(ch);
                }
                (s, h)
            })
            .collect();
        chip_trackers.extend(alone);
        let mut d = DutyCycle::default();
        for (s, h) in &chip_trackers {
            d.busy_time_ps = d.busy_time_ps.wrapping_add(s.active_time_ps());
            d.idle_time_ps = d.idle_time_ps.wrapping_add(s.idle_time_ps());
            d.busy_time_high_confidence_ps = d.busy_time_high_confidence_ps.wrapping_add(h.active_time_ps());
            d.idle_time_high_confidence_ps = d.idle_time_high_confidence_ps.wrapping_add(h.idle_time_ps());
        }
        d
    }

    /// A pod-like host: planes 0 and 1 on chip 0, plane 2 on chip 1, plane 3 without core
    /// details; op lines with gaps, touching and overlapping ops, zero-length ops, off-duty
    /// and custom-call ops, a sparse-core line; `shuffle` puts one line out of time order.
    fn random_host(seed: u64, shuffle: bool) -> oxprof_model::XSpace {
        let mut state = seed;
        let mut next = move |bound: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % bound
        };
        let mut builder = XSpaceBuilder::new();
        for plane in 0..4u8 {
            let mut ops: Vec<(&str, i64, i64)> = Vec::new();
            let mut t = next(1_000) as i64;
            for _ in 0..300 {
                let name = ["conv", "infeed", "cc", "fusion"][next(4) as usize];
                let duration = [0, 1, 5, 40][next(4) as usize];
                ops.push((name, t, duration));
                // Gaps, touching (gap 0) and overlaps (a step back).
                t += [0, 2, 17, duration][next(4) as usize] - if next(5) == 0 { 3 } else { 0 };
                t = t.max(0);
            }
            ops.sort_by_key(|o| o.1);
            if shuffle && plane == 1 {
                ops.swap(10, 200);
            }
            let sparse: Vec<(i64, i64)> = (0..20).map(|i| (i * 97 + next(50) as i64, next(30) as i64)).collect();
            builder = builder.plane(&format!("/device:TPU:{plane}"), |p| {
                p.event_metadata_stat("conv", "hlo_category", "convolution");
                p.event_metadata_stat("infeed", "hlo_category", "infeed");
                p.event_metadata_stat("cc", "hlo_category", "custom-call");
                match plane {
                    0 | 1 => {
                        p.stat("core_details", Value::Bytes(vec![0x20, 0]));
                    }
                    2 => {
                        p.stat("core_details", Value::Bytes(vec![0x20, 1]));
                    }
                    _ => {}
                }
                p.line(1, "XLA Modules", 0, |l| {
                    l.event("module", 0, 8_000);
                });
                p.line(2, "XLA Ops", 0, |l| {
                    for (name, begin, duration) in &ops {
                        l.event(name, *begin, *duration);
                    }
                });
                p.line(3, "Sparse Core Ops", 0, |l| {
                    for (begin, duration) in &sparse {
                        l.event("sparse", *begin, *duration);
                    }
                });
            });
        }
        oxprof_xspace::decode_xspace(&builder.to_bytes()).unwrap()
    }

    #[test]
    fn the_sweep_gives_xprofs_trackers_busy_and_idle_times() {
        for seed in 0..40 {
            for shuffle in [false, true] {
                let space = random_host(seed, shuffle);
                let planes: Vec<&XPlane> = space.planes.iter().collect();
                let expected = duty_by_trackers(&planes);
                assert!(expected.busy_time_ps > 0 && expected.idle_time_ps > 0, "seed {seed}: {expected:?}");
                assert_eq!(tpu_duty_cycle(planes.iter().copied()), expected, "seed {seed}, shuffle {shuffle}");
                // The chip of two cores is swept only when its lines are in time order.
                let chip0 = [planes[0], planes[1]];
                assert_eq!(swept_busy_time(&chip0).is_some(), !shuffle, "seed {seed}");
            }
        }
    }

    #[test]
    fn a_wrapping_interval_is_left_to_the_trackers() {
        let bytes = XSpaceBuilder::new()
            .plane("/device:TPU:0", |p| {
                p.line(2, "XLA Ops", 0, |l| {
                    l.event("a", 10, 20);
                    l.event("b", -10, 20);
                });
            })
            .to_bytes();
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        let planes: Vec<&XPlane> = space.planes.iter().collect();
        assert_eq!(swept_busy_time(&planes), None);
        assert_eq!(tpu_duty_cycle(planes.iter().copied()), duty_by_trackers(&planes));
    }

    /// Busy and idle times (standard and high confidence) against XProf 2.24.2's OpStats.
    #[test]
    fn duty_cycle_matches_xprof() {
        use crate::op_stats::device_op_metrics::testutil::*;
        use crate::op_stats::environment::device_planes;
        let Some(root) = external_root() else { return };
        for case in external_cases(&root) {
            let space = load(&case);
            let (planes, is_tpu) = device_planes(&space);
            let db = &raw_reference(&case.op_stats)["device_op_metrics_db"];
            let number = |k: &str| db[k].as_str().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
            let expected = DutyCycle {
                busy_time_ps: number("busy_time_ps"),
                idle_time_ps: number("idle_time_ps"),
                busy_time_high_confidence_ps: number("busy_time_high_confidence_ps"),
                idle_time_high_confidence_ps: number("idle_time_high_confidence_ps"),
            };
            // XProf sets these for TPU hosts only.
            let actual = if is_tpu { tpu_duty_cycle(planes) } else { DutyCycle::default() };
            assert_eq!(actual, expected, "{}", case.name);
        }
    }
}
