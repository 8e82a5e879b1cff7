//! XProf's downsampling rule (`trace_viewer/trace_viewer_visibility.cc`,
//! `TraceViewerVisibility`) and the per-track zoom-level assignment built on it
//! (`ProcessTrackEventsParallel` in `trace_events.cc`).
//!
//! At a resolution `r` (ps), an event of a thread row is visible when
//! * it lasts at least `r`, or
//! * it is the first event at its nesting depth, or starts at least `r` after the end of
//!   the last visible event at that depth;
//! * a flow event is visible when the first event of its flow was (that first event may
//!   also be visible because its arrow point, the event end, is `r` past the row's last
//!   visible arrow).
//!
//! Counter samples are visible when at least `r` after the last visible sample of the
//! same counter.
//!
//! ```text
//! r = 10        0    10   20   30   40
//! depth 0      [=====A=====]   [B]  [C]      A: long; B: 3 after A → hidden; C: visible
//! depth 1        [a][b]                      a: first at depth 1; b: hidden (gap 0)
//! ```

use super::index::{FlowEntry, LAYER_RESOLUTIONS_PS, NUM_LEVELS};
use rustc_hash::FxHashMap as HashMap;
use std::collections::hash_map::Entry;

/// Below this many events XProf's streaming viewer does not downsample
/// (`kDisableStreamingThreshold`).
pub const DISABLE_STREAMING_THRESHOLD: usize = 500_000;

/// Per-row state: the end of the last visible event per nesting depth, and the arrow
/// point of the last visible flow event.
#[derive(Debug, Clone, Default)]
struct RowVisibility {
    last_end: Vec<u64>,
    last_flow: Option<u64>,
}

impl RowVisibility {
    /// Nesting depth of an event starting at `begin`: the first depth whose last visible
    /// event ended at or before `begin`.
    fn depth(&self, begin: u64) -> usize {
        self.last_end.iter().position(|&end| end <= begin).unwrap_or(self.last_end.len())
    }

    fn set_last_end(&mut self, depth: usize, end: u64) {
        self.last_end.truncate(depth);
        self.last_end.push(end);
    }
}

/// `TraceViewerVisibility`: visibility of events evaluated in timestamp order.
#[derive(Debug, Clone)]
pub(crate) struct Visibility {
    /// Visible span (begin, duration).
    span: (u64, u64),
    resolution_ps: u64,
    /// Per row (a dense row index: the track): nesting state.
    rows: Vec<RowVisibility>,
    flows: HashMap<u64, bool>,
    /// Per row: the last visible counter sample.
    counters: Vec<Option<u64>>,
}

impl Visibility {
    /// Visibility for `span` = (begin ps, duration ps) at `resolution_ps` (0: no
    /// downsampling).
    pub(crate) fn new(span: (u64, u64), resolution_ps: u64) -> Visibility {
        Visibility { span, resolution_ps, rows: Vec::new(), flows: HashMap::default(), counters: Vec::new() }
    }

    fn counter_slot(&mut self, row: usize) -> &mut Option<u64> {
        if self.counters.len() <= row {
            self.counters.resize(row + 1, None);
        }
        &mut self.counters[row]
    }

    /// `Visible`: overlaps the span and is distinguishable at the resolution.
    pub(crate) fn visible(
        &mut self,
        row: usize,
        ts: u64,
        dur: u64,
        flow: Option<(u64, FlowEntry)>,
        is_thread: bool,
    ) -> bool {
        if self.span.1 == 0 {
            return true;
        }
        let (begin, end) = (self.span.0, self.span.0.wrapping_add(self.span.1));
        if !(begin <= ts.wrapping_add(dur) && ts <= end) {
            return false;
        }
        if self.resolution_ps == 0 {
            return true;
        }
        self.visible_at_resolution(row, ts, dur, flow, is_thread)
    }

    /// `VisibleAtResolution` (updates the state when visible).
    pub(crate) fn visible_at_resolution(
        &mut self,
        row: usize,
        ts: u64,
        dur: u64,
        flow: Option<(u64, FlowEntry)>,
        is_thread: bool,
    ) -> bool {
        let r = self.resolution_ps;
        if !is_thread {
            let last = self.counter_slot(row);
            let visible = last.is_none_or(|l| ts.wrapping_sub(l) >= r);
            if visible {
                *last = Some(ts);
            }
            return visible;
        }
        let mut visible = dur >= r;
        if self.rows.len() <= row {
            self.rows.resize(row + 1, RowVisibility::default());
        }
        let state = &mut self.rows[row];
        let depth = state.depth(ts);
        if !visible {
            visible = state.last_end.get(depth).is_none_or(|&last| ts.wrapping_sub(last) >= r);
        }
        if let Some((flow_id, entry)) = flow {
            let end = ts.wrapping_add(dur);
            let inserted = !self.flows.contains_key(&flow_id);
            let value = self.flows.entry(flow_id).or_insert(visible);
            if !visible {
                if inserted {
                    *value = state.last_flow.is_none_or(|last| end.wrapping_sub(last) >= r);
                }
                visible = *value;
            }
            if entry == FlowEntry::End {
                self.flows.remove(&flow_id);
            }
            if visible {
                state.last_flow = Some(end);
            }
        }
        if visible {
            state.set_last_end(depth, ts.wrapping_add(dur));
        }
        visible
    }
}

/// The flow pass of the level assignment: for each flow event in XProf's global order,
/// the first zoom level at which it is visible, with one [`Visibility`] per level as XProf
/// keeps it, except that the levels' flow maps are one map of per-level bits (one hash
/// lookup per flow event instead of up to two per level; the answers are the same).
pub(crate) struct FlowLevels {
    /// `[level][row]` nesting state.
    rows: Vec<Vec<RowVisibility>>,
    /// Flow id → its state, for flows some level's map holds. A flow leaves at its end
    /// event (as it leaves XProf's maps), so the map holds the flows in progress only and
    /// stays small and in cache; an id seen again after its end starts a new flow.
    flows: HashMap<u64, FlowState>,
}

#[derive(Clone, Copy)]
struct FlowState {
    /// Levels whose flow map holds the flow.
    present: u16,
    /// Levels where it is marked visible.
    marked: u16,
    /// The first visible level of the flow's first event.
    first_level: u8,
}

impl Default for FlowLevels {
    fn default() -> Self {
        FlowLevels { rows: vec![Vec::new(); NUM_LEVELS - 1], flows: HashMap::default() }
    }
}

impl FlowLevels {
    /// `VisibleAtResolution` level after level until the event is visible, then
    /// `SetVisibleAtResolution` at every finer level; returns the first visible level
    /// (`NUM_LEVELS - 1` when it is visible at none).
    #[cfg(test)]
    pub(crate) fn first_visible_level(&mut self, row: usize, ts: u64, dur: u64, flow: (u64, FlowEntry)) -> usize {
        self.visit(row, ts, dur, flow).0
    }

    /// [`FlowLevels::first_visible_level`] of the event, and of its flow's first event.
    pub(crate) fn visit(&mut self, row: usize, ts: u64, dur: u64, flow: (u64, FlowEntry)) -> (usize, u8) {
        let (flow_id, entry) = flow;
        let last = NUM_LEVELS - 1;
        let end = ts.wrapping_add(dur);
        // One lookup: `slot` and `self.rows` are disjoint fields.
        let slot = self.flows.entry(flow_id);
        let known = match &slot {
            Entry::Occupied(o) => *o.get(),
            Entry::Vacant(_) => FlowState { present: 0, marked: 0, first_level: u8::MAX },
        };
        let (mut present, mut marked) = (known.present, known.marked);
        let mut level = 0;
        while level < last {
            let r = LAYER_RESOLUTIONS_PS[level];
            let bit = 1u16 << level;
            let rows = &mut self.rows[level];
            if rows.len() <= row {
                rows.resize(row + 1, RowVisibility::default());
            }
            let state = &mut rows[row];
            let depth = state.depth(ts);
            let mut visible = dur >= r || state.last_end.get(depth).is_none_or(|&last| ts.wrapping_sub(last) >= r);
            let inserted = present & bit == 0;
            if inserted {
                present |= bit;
                marked = if visible { marked | bit } else { marked & !bit };
            }
            if !visible {
                if inserted && state.last_flow.is_none_or(|last| end.wrapping_sub(last) >= r) {
                    marked |= bit;
                }
                visible = marked & bit != 0;
            }
            if entry == FlowEntry::End {
                present &= !bit;
                marked &= !bit;
            }
            if visible {
                state.last_flow = Some(end);
                state.set_last_end(depth, end);
                break;
            }
            level += 1;
        }
        for finer in level + 1..last {
            let bit = 1u16 << finer;
            if entry == FlowEntry::End {
                present &= !bit;
                marked &= !bit;
            } else if present & bit == 0 {
                present |= bit;
                marked |= bit;
            }
            let rows = &mut self.rows[finer];
            if rows.len() <= row {
                rows.resize(row + 1, RowVisibility::default());
            }
            let state = &mut rows[row];
            state.last_flow = Some(end);
            let depth = state.depth(ts);
            state.set_last_end(depth, end);
        }
        let first_level = if known.first_level == u8::MAX { level as u8 } else { known.first_level };
        let state = FlowState { present, marked, first_level };
        match slot {
            Entry::Occupied(o) if present == 0 => {
                o.remove();
            }
            Entry::Occupied(mut o) => *o.get_mut() = state,
            Entry::Vacant(v) if present != 0 => {
                v.insert(state);
            }
            Entry::Vacant(_) => {}
        }
        (level, first_level)
    }
}

/// Assigns each event of one track the first zoom level at which it is visible
/// (`ProcessTrackEventsParallel`), given the flows' first visible levels.
///
/// One track is one row, so each level keeps a single row state (no maps). Flow events
/// take their flow's level (or the first level they are long enough for) and are only
/// recorded; XProf's per-track flow map is never read for them, so it is not kept.
pub(crate) struct LevelAssigner {
    rows: Vec<RowVisibility>,
    counters: Vec<Option<u64>>,
    is_thread: bool,
}

impl LevelAssigner {
    pub(crate) fn new(is_thread: bool) -> LevelAssigner {
        LevelAssigner {
            rows: vec![RowVisibility::default(); NUM_LEVELS - 1],
            counters: vec![None; NUM_LEVELS - 1],
            is_thread,
        }
    }

    /// `VisibleAtResolution` for a non-flow event at one level (updates when visible).
    fn visible(&mut self, level: usize, ts: u64, dur: u64) -> bool {
        let r = LAYER_RESOLUTIONS_PS[level];
        if !self.is_thread {
            let last = &mut self.counters[level];
            let visible = last.is_none_or(|l| ts.wrapping_sub(l) >= r);
            if visible {
                *last = Some(ts);
            }
            return visible;
        }
        let row = &mut self.rows[level];
        let depth = row.depth(ts);
        let visible = dur >= r || row.last_end.get(depth).is_none_or(|&last| ts.wrapping_sub(last) >= r);
        if visible {
            row.set_last_end(depth, ts.wrapping_add(dur));
        }
        visible
    }

    /// `SetVisibleAtResolution` at one level.
    fn record(&mut self, level: usize, ts: u64, dur: u64) {
        if !self.is_thread {
            self.counters[level] = Some(ts);
            return;
        }
        let row = &mut self.rows[level];
        let depth = row.depth(ts);
        row.set_last_end(depth, ts.wrapping_add(dur));
    }

    /// The level of the next event of the track (events in track order).
    pub(crate) fn assign(&mut self, ts: u64, dur: u64, flow_first_level: Option<Option<usize>>) -> usize {
        let last = NUM_LEVELS - 1;
        let mut level = 0;
        if let Some(first_visible) = flow_first_level {
            while level < last {
                if first_visible.is_some_and(|v| level >= v) || dur >= LAYER_RESOLUTIONS_PS[level] {
                    break;
                }
                level += 1;
            }
            if level < last {
                self.record(level, ts, dur);
            }
        } else {
            while level < last {
                if self.visible(level, ts, dur) {
                    break;
                }
                level += 1;
            }
        }
        for l in level + 1..last {
            self.record(l, ts, dur);
        }
        level
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SetVisibleAtResolution` on XProf's per-level state (the reference for [`FlowLevels`]).
    fn set_visible(vis: &mut Visibility, row: usize, ts: u64, dur: u64, flow: (u64, FlowEntry)) {
        if vis.rows.len() <= row {
            vis.rows.resize(row + 1, RowVisibility::default());
        }
        let state = &mut vis.rows[row];
        if flow.1 == FlowEntry::End {
            vis.flows.remove(&flow.0);
        } else {
            vis.flows.entry(flow.0).or_insert(true);
        }
        state.last_flow = Some(ts.wrapping_add(dur));
        let depth = state.depth(ts);
        state.set_last_end(depth, ts.wrapping_add(dur));
    }

    /// One `Visibility` (with its own flow map) per level, as XProf keeps them.
    fn reference_level(levels: &mut [Visibility], row: usize, ts: u64, dur: u64, flow: (u64, FlowEntry)) -> usize {
        let mut level = 0;
        while level < levels.len() {
            if levels[level].visible_at_resolution(row, ts, dur, Some(flow), true) {
                break;
            }
            level += 1;
        }
        for vis in levels.iter_mut().skip(level + 1) {
            set_visible(vis, row, ts, dur, flow);
        }
        level
    }

    /// Random flow events on a few rows, at every scale of the zoom levels: the shared bit
    /// map gives the first visible level XProf's per-level maps give.
    #[test]
    fn flow_levels_match_per_level_visibility() {
        for seed in 0..200u64 {
            let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut next = move |n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % n
            };
            let mut reference: Vec<Visibility> =
                (0..NUM_LEVELS - 1).map(|l| Visibility::new((0, u64::MAX / 2), LAYER_RESOLUTIONS_PS[l])).collect();
            let mut ours = FlowLevels::default();
            let mut ts = 0u64;
            let mut open: Vec<u64> = Vec::new();
            for i in 0..400u64 {
                ts += 10u64.pow(next(13) as u32) * next(3);
                let dur = 10u64.pow(next(13) as u32) * next(4);
                let row = next(3) as usize;
                let flow = if !open.is_empty() && next(2) == 0 {
                    let id = open.swap_remove(next(open.len() as u64) as usize);
                    if next(4) == 0 {
                        open.push(id);
                        (id, FlowEntry::Mid)
                    } else {
                        (id, FlowEntry::End)
                    }
                } else {
                    open.push(i);
                    (i, FlowEntry::Start)
                };
                let expected = reference_level(&mut reference, row, ts, dur, flow);
                assert_eq!(ours.first_visible_level(row, ts, dur, flow), expected, "seed {seed} event {i}");
            }
        }
    }

    /// A flow leaves the map at its end: the map holds flows in progress only, and an id
    /// seen again after its end is a new flow with its own first level.
    #[test]
    fn finished_flows_leave_the_map() {
        let mut flows = FlowLevels::default();
        // A 2 s flow start is visible at level 0; its end, 5 ps later, takes the flow's level.
        assert_eq!(flows.visit(0, 0, 2_000_000_000_000, (7, FlowEntry::Start)), (0, 0));
        assert_eq!(flows.flows.len(), 1);
        assert_eq!(flows.visit(0, 5, 1, (7, FlowEntry::End)).1, 0);
        assert!(flows.flows.is_empty());
        // The same id again, on a short event right after: a new flow, first level its own.
        let (level, first) = flows.visit(0, 10, 1, (7, FlowEntry::Start));
        assert_eq!(first as usize, level);
        assert!(level > 0);
        assert_eq!(flows.flows.len(), 1);
    }
}
