//! The part of XProf's `GenerateDerivedTimeLines` (`xprof/utils/derived_timeline.cc`) that
//! changes existing events: `ProcessUngroupedEvents` on GPU planes, where every ungrouped
//! event inherits the group of the latest grouped event before it in time order.

use super::kinds::Span;
use super::tables::NO_GROUP;
use oxprof_model::XPlane;
use oxprof_model::schema::is_derived_thread_id;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `ProcessUngroupedEvents` over a GPU plane's per-line dense group tables.
///
/// XProf sorts all events of the plane's non-derived lines by (begin ascending, duration
/// ascending — `GetSortedEvents`) and walks them:
///
/// ```text
/// time   ─────────────────────────────────────────▶
/// events  [g3]   [--]   [--]   [g4]   [--]
/// after   [g3]   [g3]   [g3]   [g4]   [g4]
/// ```
///
/// Lines are merged with a heap instead of sorting all events at once (no per-event
/// allocation for lines already in order). `std::sort` is not stable; ties keep line order,
/// then event order.
pub(crate) fn process_ungrouped_events(plane: &XPlane, groups: &mut [Vec<u32>]) {
    // Per line: its visiting order (None = already sorted by (begin, duration)).
    let mut orders: Vec<Option<Vec<u32>>> = Vec::with_capacity(plane.lines.len());
    let key = |line: usize, event: usize| {
        let span = Span::of(&plane.lines[line].event(plane, event));
        (span.begin, span.duration)
    };
    for (li, line) in plane.lines.iter().enumerate() {
        if is_derived_thread_id(line.id) {
            orders.push(Some(Vec::new()));
            continue;
        }
        let n = line.event_count();
        let sorted = (1..n).all(|i| key(li, i - 1) <= key(li, i));
        if sorted {
            orders.push(None);
        } else {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&e| key(li, e as usize));
            orders.push(Some(order));
        }
    }
    let event_at = |li: usize, pos: usize| -> Option<usize> {
        match &orders[li] {
            None => (pos < plane.lines[li].event_count()).then_some(pos),
            Some(order) => order.get(pos).map(|&e| e as usize),
        }
    };
    let mut heap = BinaryHeap::new();
    for li in 0..plane.lines.len() {
        if let Some(e) = event_at(li, 0) {
            let (begin, duration) = key(li, e);
            heap.push(Reverse((begin, duration, li, 0usize, e)));
        }
    }
    let mut last_group: Option<u32> = None;
    while let Some(Reverse((_, _, li, pos, e))) = heap.pop() {
        if let Some(slot) = groups.get_mut(li).and_then(|g| g.get_mut(e)) {
            if *slot != NO_GROUP {
                last_group = Some(*slot);
            } else if let Some(g) = last_group {
                *slot = g;
            }
        }
        if let Some(next) = event_at(li, pos + 1) {
            let (begin, duration) = key(li, next);
            heap.push(Reverse((begin, duration, li, pos + 1, next)));
        }
    }
}
