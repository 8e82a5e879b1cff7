//! TPU duty cycle: how long each chip was busy running ops versus idle within its traced
//! span, which overrides `device_op_metrics_db.{busy,idle}_time_ps` for TPU hosts. A port of
//! XProf's `duty_cycle_tracker.cc`, `duty_cycle_combiner.h` and `ConstructDutyCycleTracker`
//! (plus the "high confidence" variant XProf 2.24.2 also computes, which additionally counts
//! custom calls without FLOPs as idle).

use super::environment::plane_core_details;
use super::hardware::int_or_uint;
use oxprof_model::schema::StatType;
use oxprof_model::{Event, XPlane};
use std::collections::{BTreeMap, HashMap};

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

/// `DutyCycleCombiner`: unions the trackers of cores on the same chip, then sums over chips
/// (trackers of planes without core details count as chips of their own).
#[derive(Debug, Clone, Default)]
pub struct DutyCycleCombiner {
    chips: HashMap<u32, DutyCycleTracker>,
    chip_active_time_ps: u64,
    chip_idle_time_ps: u64,
}

impl DutyCycleCombiner {
    /// `CombineCore`: adds a core's tracker to its chip's.
    pub fn combine_core(&mut self, core: &DutyCycleTracker, chip_id: u32) {
        self.chips.entry(chip_id).or_default().union(core);
    }

    /// `CombineChip`: adds a whole chip's tracker.
    pub fn combine_chip(&mut self, chip: &DutyCycleTracker) {
        self.chip_active_time_ps = self.chip_active_time_ps.wrapping_add(chip.active_time_ps());
        self.chip_idle_time_ps = self.chip_idle_time_ps.wrapping_add(chip.idle_time_ps());
    }

    /// Busy time over all chips.
    pub fn total_active_time_ps(&self) -> u64 {
        self.chips.values().fold(self.chip_active_time_ps, |acc, t| acc.wrapping_add(t.active_time_ps()))
    }

    /// Idle time over all chips.
    pub fn total_idle_time_ps(&self) -> u64 {
        self.chips.values().fold(self.chip_idle_time_ps, |acc, t| acc.wrapping_add(t.idle_time_ps()))
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
    for line in &plane.lines {
        match line.name.as_str() {
            "XLA Ops" => {
                // HLO category of each event metadata, looked up once.
                let mut categories: Vec<Option<Option<&str>>> = vec![None; plane.event_metadata().len()];
                for event in line.events(plane) {
                    let span = Timespan::of_event(&event);
                    let metadata_category = match categories.get(event.metadata_id().index()).copied().flatten() {
                        Some(c) => c,
                        None => {
                            let c = event.metadata_stats().get(StatType::HloCategory).map(|s| s.as_str().unwrap_or(""));
                            if let Some(slot) = categories.get_mut(event.metadata_id().index()) {
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
                                && is_custom_call_off_duty(&event))
                    });
                    standard.add_interval(span, !off_duty);
                    high_confidence.add_interval(span, !hc_off_duty);
                }
            }
            "Sparse Core Ops" => {
                for event in line.events(plane) {
                    standard.add_interval(Timespan::of_event(&event), true);
                    high_confidence.add_interval(Timespan::of_event(&event), true);
                }
            }
            "XLA Modules" | "Sparse Core Modules" => {
                for event in line.events(plane) {
                    standard.add_interval(Timespan::of_event(&event), false);
                    high_confidence.add_interval(Timespan::of_event(&event), false);
                }
            }
            _ => {}
        }
    }
    (standard, high_confidence)
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
    let mut standard = DutyCycleCombiner::default();
    let mut high_confidence = DutyCycleCombiner::default();
    for plane in device_planes {
        let (tracker, hc_tracker) = plane_duty_cycle_trackers(plane);
        match plane_core_details(plane, "") {
            Some(details) => {
                standard.combine_core(&tracker, details.local_chip_id);
                high_confidence.combine_core(&hc_tracker, details.local_chip_id);
            }
            None => {
                standard.combine_chip(&tracker);
                high_confidence.combine_chip(&hc_tracker);
            }
        }
    }
    DutyCycle {
        busy_time_ps: standard.total_active_time_ps(),
        idle_time_ps: standard.total_idle_time_ps(),
        busy_time_high_confidence_ps: high_confidence.total_active_time_ps(),
        idle_time_high_confidence_ps: high_confidence.total_idle_time_ps(),
    }
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

    #[test]
    fn combiner_unions_cores_of_a_chip_and_sums_chips() {
        let mut a = DutyCycleTracker::default();
        a.add_interval(span(0, 10), true);
        a.add_interval(span(0, 20), false);
        let mut b = DutyCycleTracker::default();
        b.add_interval(span(5, 15), true);
        let mut c = DutyCycleCombiner::default();
        c.combine_core(&a, 0);
        c.combine_core(&b, 0);
        c.combine_chip(&a);
        // Chip 0: busy [0,15] of [0,20]; plus a chip of its own: busy 10 of 20.
        assert_eq!(c.total_active_time_ps(), 15 + 10);
        assert_eq!(c.total_idle_time_ps(), 5 + 10);
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
