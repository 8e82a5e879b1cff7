//! The `group_id` XProf's trace shows for the events of a TPU plane's "XLA Modules" line
//! when that line is the plane's grouping line.
//!
//! XProf's `GroupTpuXPlaneEvents` groups every line but the Steps line by the overlapping
//! grouping-line event (`GroupLine`), the grouping line itself included, and appends a
//! `group_id` stat each time. A module event already grouped through the host (the event
//! forest) then carries two `group_id` stats: readers of the first one (`GetStat`, e.g.
//! the grouping of the other lines) see the forest's group, which is what
//! [`EventGroups`] keeps, but the trace conversion keeps the last one. Where a module
//! starts exactly where the previous one ends, the spans touch, `GroupLine` finds the
//! previous module first, and the trace shows the previous module's group:
//!
//! ```text
//! XLA Modules  |jit_f g81|jit_f g82|        forest groups (EventGroups)
//! trace shows  |   81    |   81    |        second stat from the touching previous module
//! ```

use oxprof_grouping::EventGroups;
use oxprof_model::XSpace;
use oxprof_model::schema::{TPU_PLANE_PREFIX, is_device_plane};

/// Group ids the trace shows instead of [`EventGroups::group_id`], as sorted
/// `(plane, line, event, group)`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ShownGroups(Vec<(u32, u32, u32, i64)>);

impl ShownGroups {
    /// The group XProf's trace shows for an event, if it differs from the grouping's.
    pub(crate) fn get(&self, plane: usize, line: usize, event: usize) -> Option<i64> {
        let key = (plane as u32, line as u32, event as u32);
        let i = self.0.binary_search_by(|e| (e.0, e.1, e.2).cmp(&key)).ok()?;
        self.0.get(i).map(|e| e.3)
    }
}

/// Finds the module-line events of a grouped TPU XSpace whose shown group differs (see
/// the module docs): `GroupQueue` over the module line against itself, with XProf's
/// forward-only `XEventContextTracker`.
pub(crate) fn shown_groups(space: &XSpace, groups: &EventGroups) -> ShownGroups {
    let mut out = Vec::new();
    if !groups.computed() || !space.planes.iter().any(|p| p.name.starts_with(TPU_PLANE_PREFIX)) {
        return ShownGroups(out);
    }
    for (pi, plane) in space.planes.iter().enumerate() {
        if !is_device_plane(&plane.name) {
            continue;
        }
        // `GetGroupingLineForTPU`: a non-empty Steps line wins; then no forest group is on
        // the module line.
        let non_empty = |names: [&str; 2]| {
            plane
                .lines
                .iter()
                .rposition(|l| names.contains(&l.name.as_str()))
                .filter(|&i| plane.lines[i].event_count() > 0)
        };
        if non_empty(["Steps", "Sparse Core Steps"]).is_some() {
            continue;
        }
        let Some(li) = non_empty(["XLA Modules", "Sparse Core Modules"]) else { continue };
        let line = &plane.lines[li];
        let spans: Vec<(u64, u64)> = line
            .events(plane)
            .map(|e| {
                let begin = e.timestamp_ps() as u64;
                (begin, begin.wrapping_add(e.duration_ps() as u64))
            })
            .collect();
        let overlaps = |a: (u64, u64), b: (u64, u64)| a.0 <= b.1 && b.0 <= a.1;
        let first_stat = |i: usize| groups.group_id(pi, li, i);
        let mut tracker: Option<usize> = None;
        let mut cached: Option<usize> = None;
        let mut cached_group: Option<i64> = None;
        for (i, &span) in spans.iter().enumerate() {
            if cached.is_none_or(|c| !overlaps(spans[c], span)) {
                // `XEventContextTracker::GetOverlappingEvent`.
                cached = None;
                if let Some(t) = tracker
                    && overlaps(spans[t], span)
                {
                    cached = Some(t);
                } else {
                    let mut k = tracker.map_or(0, |t| t + 1);
                    while let Some(&s) = spans.get(k) {
                        if s.0 > span.1 {
                            break;
                        }
                        if s.1 < span.0 {
                            k += 1;
                            continue;
                        }
                        tracker = Some(k);
                        if overlaps(s, span) {
                            cached = Some(k);
                        }
                        break;
                    }
                }
                cached_group = cached.and_then(first_stat);
            }
            if let Some(g) = cached_group
                && first_stat(i) != Some(g)
            {
                out.push((pi as u32, li as u32, i as u32, g));
            }
        }
    }
    ShownGroups(out)
}

#[cfg(test)]
mod tests {
    use crate::TraceIndex;
    use crate::xprof::{HostTrace, TraceViewRequest, trace_viewer_json};
    use oxprof_grouping::group_events;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_xspace::decode_xspace;

    // A TPU plane without host: each module event is its own group (0, 1, 2), ns:
    //
    //   XLA Modules   |m0 g0 0..10|m1 g1 10..20|      |m2 g2 30..40|
    //   XLA Ops                    |op 12..18|
    //   trace shows   |    0      |     0      |      |     2      |   (m1 touches m0)
    //   op and its Framework Ops event: group 1 (the first group_id stat of m1)
    #[test]
    fn touching_module_shows_previous_group() {
        let bytes = XSpaceBuilder::new()
            .plane("/device:TPU:0", |p| {
                p.line(2, "XLA Modules", 0, |l| {
                    for at in [0, 10, 30] {
                        l.event("jit_f", at * 1000, 10_000);
                    }
                });
                p.line(3, "XLA Ops", 0, |l| {
                    l.event("%op = f32[] add(x, y)", 12_000, 6_000).stat("tf_op", "a/add:add");
                });
            })
            .to_bytes();
        let space = decode_xspace(&bytes).unwrap();
        let groups = group_events(&space);
        assert_eq!((0..3).map(|e| groups.group_id(0, 0, e)).collect::<Vec<_>>(), [Some(0), Some(1), Some(2)]);
        let index = TraceIndex::build(&space, "h");
        let req = TraceViewRequest { resolution: 8000.0, ..TraceViewRequest::default() };
        let body = trace_viewer_json(&[HostTrace { space: &space, groups: &groups, index: &index }], &req).unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let mut shown: Vec<(u64, String, i64, Option<i64>)> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                let ns = (e["ts"].as_f64().unwrap() * 1000.0).round() as i64;
                (
                    e["tid"].as_u64().unwrap(),
                    e["name"].as_str().unwrap().to_string(),
                    ns,
                    e["args"]["group_id"].as_i64(),
                )
            })
            .collect();
        shown.sort();
        let s = |x: &str| x.to_string();
        assert_eq!(
            shown,
            vec![
                (2, s("jit_f"), 0, Some(0)),
                (2, s("jit_f"), 10, Some(0)),
                (2, s("jit_f"), 30, Some(2)),
                (3, s("%op = f32[] add(x, y)"), 12, Some(1)),
                (0xdead_bef1, s("a"), 12, Some(1)),
                (0xdead_bef2, s("add"), 12, Some(1)),
            ]
        );
    }
}
