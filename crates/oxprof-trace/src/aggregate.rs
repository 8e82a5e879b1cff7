//! Read-only statistics over the trace index for the UI's selections: per-name aggregates
//! of every event of some tracks in a time range (drag-select), and one event's self time.
//!
//! Both read the index and the model only (no side tables, no allocation per event): a
//! track's events are sorted by start (longer first on ties), so the events overlapping a
//! range are found with one binary search and a scan.

use super::index::{TrackInfo, TrackKind, view_in};
use super::lod::LodHost;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;

/// Statistics of the events of one name.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NameAggregate {
    /// Event name (as the window and details show it).
    pub name: String,
    /// Number of events.
    pub count: u64,
    /// Sum of their durations (ps).
    pub total_ps: u64,
    /// `total_ps / count`.
    pub avg_ps: f64,
    /// Shortest duration (ps).
    pub min_ps: u64,
    /// Longest duration (ps).
    pub max_ps: u64,
    /// Sum of their self times (ps): each event's duration minus its direct children's
    /// (as [`self_time`]; children outside the range count too).
    pub self_ps: u64,
}

/// An aggregate over a selection.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Aggregate {
    /// Range start (ps).
    pub start_ps: u64,
    /// Range end (ps).
    pub end_ps: u64,
    /// The thread tracks aggregated (counters are skipped).
    pub tracks: Vec<u32>,
    /// Number of events aggregated.
    pub num_events: u64,
    /// One row per name, by total duration descending, then name.
    pub rows: Vec<NameAggregate>,
}

/// Running statistics of one name within one track.
struct Running<'a> {
    name: &'a str,
    count: u64,
    total: u64,
    min: u64,
    max: u64,
    self_total: u64,
}

/// Positions `lo..hi` of the events of `t` that may overlap `[begin, end]`: starting in
/// `[begin - longest duration, end]`. Events are sorted by start, so two binary searches.
fn candidate_range(host: &LodHost<'_>, t: &TrackInfo, begin: u64, end: u64) -> (u32, u32) {
    let ts_at = |pos: u32| view_in(host.space, t, pos).map_or(0, |v| v.ts);
    let n = t.len() as u32;
    let first = begin.saturating_sub(t.max_duration_ps);
    let partition = |pred: &dyn Fn(u64) -> bool| {
        // First position whose start does not satisfy `pred` (starts ascending).
        let (mut lo, mut hi) = (0u32, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(ts_at(mid)) { lo = mid + 1 } else { hi = mid }
        }
        lo
    };
    (partition(&|ts| ts < first), partition(&|ts| ts <= end))
}

/// Per-name statistics of every event of `tracks` (all thread tracks when `None`) that
/// overlaps `[begin, end]` (starts at or before `end` and ends at or after `begin`: the rule
/// of the window's `in_window` count). Exact: every event counts, whatever the zoom.
///
/// ```text
/// range            [begin ............ end]
/// counted      [==a==]   [=b=]  [====c====]      (overlap)
/// not counted [d]                            [e]
/// ```
pub fn aggregate(host: &LodHost<'_>, tracks: Option<&[u32]>, begin: u64, end: u64) -> Aggregate {
    let index = host.index;
    let end = end.max(begin);
    let mut chosen: Vec<u32> = match tracks {
        Some(ids) => ids.iter().copied().filter(|&i| (i as usize) < index.tracks.len()).collect(),
        None => (0..index.tracks.len() as u32).collect(),
    };
    chosen.sort_unstable();
    chosen.dedup();
    chosen
        .retain(|&i| index.tracks.get(i as usize).is_some_and(|t| !matches!(t.kind, Some(TrackKind::Counter { .. }))));
    // Per track: names in first-seen order; merged in track order so the result does not
    // depend on the thread count.
    let per_track: Vec<Vec<Running<'_>>> = chosen
        .par_iter()
        .map(|&ti| {
            let mut rows: Vec<Running<'_>> = Vec::new();
            let mut by_name: HashMap<&str, usize> = HashMap::new();
            let Some(t) = index.tracks.get(ti as usize) else { return rows };
            let (lo, hi) = candidate_range(host, t, begin, end);
            // The events open at the scan position: (end, row of a counted event, duration,
            // time covered by its direct children). The top one is the parent of the next
            // event that starts before its end (as `self_time` finds direct children).
            let mut open: Vec<(u64, Option<usize>, u64, u64)> = Vec::new();
            let close = |rows: &mut Vec<Running<'_>>, (_, slot, dur, covered): (u64, Option<usize>, u64, u64)| {
                if let Some(row) = slot.and_then(|s| rows.get_mut(s)) {
                    row.self_total = row.self_total.saturating_add(dur.saturating_sub(covered));
                }
            };
            // Children of counted events may start after `end`: the scan goes on until the
            // last counted event has ended.
            let mut last_end = 0u64;
            let mut pos = lo;
            while let Some(v) = view_in(host.space, t, pos) {
                if pos >= hi && v.ts >= last_end {
                    break;
                }
                let counted = pos < hi && v.ts.wrapping_add(v.dur) >= begin && v.ts <= end;
                pos += 1;
                let v_end = v.ts.saturating_add(v.dur);
                while open.last().is_some_and(|top| top.0 <= v.ts) {
                    if let Some(entry) = open.pop() {
                        close(&mut rows, entry);
                    }
                }
                if let Some(parent) = open.last_mut() {
                    parent.3 = parent.3.saturating_add(v_end.min(parent.0).saturating_sub(v.ts));
                }
                let slot = if counted {
                    let name = v.name(host.groups);
                    let slot = *by_name.entry(name).or_insert_with(|| {
                        rows.push(Running { name, count: 0, total: 0, min: u64::MAX, max: 0, self_total: 0 });
                        rows.len() - 1
                    });
                    if let Some(row) = rows.get_mut(slot) {
                        row.count += 1;
                        row.total = row.total.saturating_add(v.dur);
                        row.min = row.min.min(v.dur);
                        row.max = row.max.max(v.dur);
                    }
                    last_end = last_end.max(v_end);
                    Some(slot)
                } else {
                    None
                };
                // A zero-length event contains nothing (its self time is 0).
                if v.dur > 0 {
                    open.push((v_end, slot, v.dur, 0));
                }
            }
            while let Some(entry) = open.pop() {
                close(&mut rows, entry);
            }
            rows
        })
        .collect();
    let mut merged: Vec<NameAggregate> = Vec::new();
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    let mut num_events = 0;
    for Running { name, count, total, min, max, self_total } in per_track.into_iter().flatten() {
        num_events += count;
        let slot = *by_name.entry(name).or_insert_with(|| {
            merged.push(NameAggregate {
                name: name.to_string(),
                count: 0,
                total_ps: 0,
                avg_ps: 0.0,
                min_ps: u64::MAX,
                max_ps: 0,
                self_ps: 0,
            });
            merged.len() - 1
        });
        if let Some(row) = merged.get_mut(slot) {
            row.count += count;
            row.total_ps = row.total_ps.saturating_add(total);
            row.min_ps = row.min_ps.min(min);
            row.max_ps = row.max_ps.max(max);
            row.self_ps = row.self_ps.saturating_add(self_total);
        }
    }
    for row in &mut merged {
        row.avg_ps = if row.count == 0 { 0.0 } else { row.total_ps as f64 / row.count as f64 };
    }
    merged.sort_by(|a, b| b.total_ps.cmp(&a.total_ps).then_with(|| a.name.cmp(&b.name)));
    Aggregate { start_ps: begin, end_ps: end, tracks: chosen, num_events, rows: merged }
}

/// The self time of the event `pos` of track `track`: its duration minus the time covered
/// by its direct children on the same track (events starting inside it; events nested in
/// a child are covered by that child). Children are clipped to the parent's end.
///
/// ```text
/// parent  [==============================]   dur 30
/// child      [====]     [=========]          5 + 10 covered
/// grandchild              [==]               (inside a child: not counted again)
/// self = 30 - 15 = 15
/// ```
///
/// `None` for an unknown event or a counter sample.
pub fn self_time(host: &LodHost<'_>, track: u32, pos: u32) -> Option<u64> {
    let t = host.index.tracks.get(track as usize)?;
    if matches!(t.kind, Some(TrackKind::Counter { .. })) {
        return None;
    }
    let parent = view_in(host.space, t, pos)?;
    let end = parent.ts.saturating_add(parent.dur);
    let mut covered = 0u64;
    // End of the last direct child: later events starting before it are its descendants.
    let mut child_end: Option<u64> = None;
    let mut next = pos.saturating_add(1);
    while let Some(v) = view_in(host.space, t, next) {
        if v.ts >= end {
            break;
        }
        let nested_in_child = child_end.is_some_and(|ce| v.ts < ce);
        if !nested_in_child {
            let e = v.ts.saturating_add(v.dur).min(end);
            covered += e.saturating_sub(v.ts);
            // A zero-length event contains nothing.
            if v.dur > 0 {
                child_end = Some(e);
            }
        }
        next += 1;
    }
    Some(parent.dur.saturating_sub(covered))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventRef, TraceIndex};
    use oxprof_grouping::group_events;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_xspace::decode_xspace;

    // One thread (line 7) and a second one (line 9); ns after the line start (1 µs):
    //
    //   t7  |--------------- outer 0..100 ---------------|   |- outer 150..160 -|
    //          |- a 10..20 -|  |- b 30..40 -|
    //                             |c 32..35|
    //   t9  |- a 0..5 -|
    fn space() -> oxprof_model::XSpace {
        decode_xspace(
            &XSpaceBuilder::new()
                .plane("/host:CPU", |p| {
                    p.line(7, "worker", 1000, |l| {
                        l.event("outer", 0, 100_000);
                        l.event("a", 10_000, 10_000);
                        l.event("b", 30_000, 10_000);
                        l.event("c", 32_000, 3_000);
                        l.event("outer", 150_000, 10_000);
                    });
                    p.line(9, "other", 1000, |l| {
                        l.event("a", 0, 5_000);
                    });
                })
                .to_bytes(),
        )
        .unwrap()
    }

    fn with_host<R>(f: impl FnOnce(&LodHost<'_>) -> R) -> R {
        let space = space();
        let groups = group_events(&space);
        let index = TraceIndex::build(&space, "h");
        f(&LodHost { space: &space, groups: &groups, index: &index })
    }

    fn row(a: &Aggregate, name: &str) -> (u64, u64, u64, u64) {
        let r = a.rows.iter().find(|r| r.name == name).unwrap();
        (r.count, r.total_ps, r.min_ps, r.max_ps)
    }

    #[test]
    fn whole_trace_aggregates_every_event_by_name() {
        with_host(|host| {
            let a = aggregate(host, None, 0, u64::MAX);
            assert_eq!(a.num_events, 6);
            assert_eq!(row(&a, "outer"), (2, 110_000, 10_000, 100_000));
            assert_eq!(row(&a, "a"), (2, 15_000, 5_000, 10_000));
            assert_eq!(a.rows[0].name, "outer", "by total descending");
            assert_eq!(a.rows.iter().find(|r| r.name == "a").unwrap().avg_ps, 7_500.0);
        });
    }

    #[test]
    fn a_range_counts_overlapping_events_of_the_chosen_tracks() {
        with_host(|host| {
            let base = host.index.min_ps;
            // 33..45 ns: outer (0..100), b (30..40), c (32..35) overlap; a (10..20) does not.
            let a = aggregate(host, None, base + 33_000, base + 45_000);
            let names: Vec<&str> = a.rows.iter().map(|r| r.name.as_str()).collect();
            assert_eq!(names, ["outer", "b", "c"]);
            // Only the second thread: a (0..5) overlaps 4..6 ns.
            let t9 = host.index.tracks.iter().position(|t| t.resource_id() == Some(9)).unwrap() as u32;
            let a = aggregate(host, Some(&[t9]), base + 4_000, base + 6_000);
            assert_eq!(a.tracks, [t9]);
            assert_eq!(a.num_events, 1);
            assert_eq!(row(&a, "a"), (1, 5_000, 5_000, 5_000));
            // Unknown tracks are ignored.
            assert_eq!(aggregate(host, Some(&[999]), 0, u64::MAX).num_events, 0);
        });
    }

    /// Self time per name: the sum of `self_time` over the counted events, children outside
    /// the range included (outer's children a and b below).
    #[test]
    fn aggregate_sums_self_times() {
        with_host(|host| {
            let self_of = |a: &Aggregate, name: &str| a.rows.iter().find(|r| r.name == name).unwrap().self_ps;
            let a = aggregate(host, None, 0, u64::MAX);
            assert_eq!(self_of(&a, "outer"), 80_000 + 10_000);
            assert_eq!(self_of(&a, "a"), 10_000 + 5_000);
            assert_eq!(self_of(&a, "b"), 7_000);
            assert_eq!(self_of(&a, "c"), 3_000);
            let base = host.index.min_ps;
            let a = aggregate(host, None, base + 33_000, base + 45_000);
            assert_eq!(self_of(&a, "outer"), 80_000);
            assert_eq!(self_of(&a, "b"), 7_000);
            assert_eq!(self_of(&a, "c"), 3_000);
            // A range that ends inside outer: its children after the range still count.
            let a = aggregate(host, None, base, base + 5_000);
            assert_eq!(self_of(&a, "outer"), 80_000);
        });
    }

    #[test]
    fn self_time_subtracts_direct_children_only() {
        with_host(|host| {
            let t7 = host.index.tracks.iter().position(|t| t.resource_id() == Some(7)).unwrap() as u32;
            // Positions in start order: outer, a, b, c, outer2.
            assert_eq!(self_time(host, t7, 0), Some(100_000 - 10_000 - 10_000));
            assert_eq!(self_time(host, t7, 2), Some(10_000 - 3_000));
            assert_eq!(self_time(host, t7, 4), Some(10_000));
            assert_eq!(self_time(host, t7, 99), None);
            let r = EventRef::from_id(EventRef { track: t7, pos: 3 }.to_id());
            assert_eq!(self_time(host, r.track, r.pos), Some(3_000));
        });
    }
}
