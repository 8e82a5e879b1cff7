//! A space's events in the order torch-tb-profiler processes them: by start time only,
//! stably on the model's order (planes, then lines, then events), without materialising
//! a row per event.
//!
//! The PyTorch importer writes every line sorted by start, so the order is a k-way merge
//! of the lines (a heap of one cursor per line, ties to the earlier line): no memory per
//! event. A line out of order (a space from another importer) falls back to sorting the
//! events' positions (16 bytes per event), which gives the same order.

use oxprof_model::{Event, XPlane, XSpace};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;

/// One line as the walk reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineAt {
    /// Index into the space's planes.
    pub plane: u32,
    /// Index into that plane's lines.
    pub line: u32,
    /// The line's timestamp, in ps on the run's clock (what event offsets add to).
    pub line_ps: i128,
}

/// A start time ordered by `total_cmp`, then its line's position, then the event's.
#[derive(Debug, Clone, Copy)]
struct Key(f64, u32, u32);

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1)).then(self.2.cmp(&other.2))
    }
}

/// How the walk finds the next event.
enum Walk {
    /// Every line in start order: one cursor per line.
    Merge(BinaryHeap<Reverse<Key>>),
    /// Some line out of order: every event's position, sorted.
    Sorted(std::vec::IntoIter<Key>),
}

/// The events of `lines` (in model order) by start, stably on that order; `S` makes an
/// event's start in µs (what the order compares) from its ps on the run's clock.
pub(crate) struct StartOrder<'a, S> {
    space: &'a XSpace,
    lines: &'a [LineAt],
    start_us: S,
    walk: Walk,
}

impl<'a, S: Fn(i128) -> f64> StartOrder<'a, S> {
    /// The walk over `lines`, starts computed by `start_us` (a non-decreasing function)
    /// from an event's ps.
    pub(crate) fn new(space: &'a XSpace, lines: &'a [LineAt], start_us: S) -> StartOrder<'a, S> {
        let mut order = StartOrder { space, lines, start_us, walk: Walk::Merge(BinaryHeap::new()) };
        let in_order = (0..lines.len()).all(|l| order.line_in_order(l));
        order.walk = if in_order {
            let heap = (0..lines.len() as u32).filter_map(|l| order.key(l, 0)).map(Reverse).collect();
            Walk::Merge(heap)
        } else {
            let mut keys: Vec<Key> = Vec::with_capacity(lines.iter().map(|l| order.line_len(l)).sum());
            for l in 0..lines.len() as u32 {
                keys.extend((0..order.line_len(&lines[l as usize]) as u32).filter_map(|e| order.key(l, e)));
            }
            keys.sort_unstable();
            Walk::Sorted(keys.into_iter())
        };
        order
    }

    /// Whether the walk merges sorted lines (no memory per event).
    #[cfg(test)]
    pub(crate) fn merges(&self) -> bool {
        matches!(self.walk, Walk::Merge(_))
    }

    fn plane(&self, at: &LineAt) -> &'a XPlane {
        &self.space.planes[at.plane as usize]
    }

    fn line_len(&self, at: &LineAt) -> usize {
        self.plane(at).lines[at.line as usize].event_count()
    }

    fn event(&self, line: u32, event: u32) -> Event<'a> {
        let at = &self.lines[line as usize];
        let plane = self.plane(at);
        plane.lines[at.line as usize].event(plane, event as usize)
    }

    /// The key of the `event`-th event of line `line`, if it has one.
    fn key(&self, line: u32, event: u32) -> Option<Key> {
        if event as usize >= self.line_len(&self.lines[line as usize]) {
            return None;
        }
        let ps = self.lines[line as usize].line_ps + i128::from(self.event(line, event).offset_ps());
        Some(Key((self.start_us)(ps), line, event))
    }

    /// Whether a line's events are in start order (read on their offsets: `start_us` does
    /// not decrease, so sorted offsets give sorted starts).
    fn line_in_order(&self, line: usize) -> bool {
        let at = &self.lines[line];
        let plane = self.plane(at);
        let mut last = i64::MIN;
        for e in plane.lines[at.line as usize].events(plane) {
            let offset = e.offset_ps();
            if offset < last {
                return false;
            }
            last = offset;
        }
        true
    }
}

impl<'a, S: Fn(i128) -> f64> Iterator for StartOrder<'a, S> {
    /// The line's index into `lines`, the event, and its start in µs.
    type Item = (usize, Event<'a>, f64);

    fn next(&mut self) -> Option<(usize, Event<'a>, f64)> {
        let key = match &mut self.walk {
            Walk::Sorted(keys) => keys.next()?,
            Walk::Merge(heap) => heap.peek()?.0,
        };
        if matches!(self.walk, Walk::Merge(_)) {
            // The line's next event takes its place: one sift, not a pop and a push.
            let next = self.key(key.1, key.2 + 1);
            if let Walk::Merge(heap) = &mut self.walk
                && let Some(mut top) = heap.peek_mut()
            {
                match next {
                    Some(next) => *top = Reverse(next),
                    None => {
                        PeekMut::pop(top);
                    }
                }
            }
        }
        let Key(start, line, event) = key;
        Some((line as usize, self.event(line, event), start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_model::{ModelBuilder, Value};

    fn start_us(ps: i128) -> f64 {
        ps as f64 / 1e6
    }

    /// Lines of (start ps, tag) events: the walk's tags.
    fn walk(lines: &[Vec<(i64, i64)>]) -> (Vec<i64>, bool) {
        let space = ModelBuilder::new()
            .plane("/host:CPU", |p| {
                for (i, events) in lines.iter().enumerate() {
                    p.line(i as i64, &format!("t{i}"), 0, |l| {
                        for &(start, tag) in events {
                            l.event("e", start, 1).stat("tag", Value::I64(tag));
                        }
                    });
                }
            })
            .build()
            .expect("a valid space");
        let ats: Vec<LineAt> = (0..lines.len() as u32).map(|l| LineAt { plane: 0, line: l, line_ps: 0 }).collect();
        let order = StartOrder::new(&space, &ats, start_us);
        let merges = order.merges();
        let tags = order
            .map(|(_, e, start)| {
                assert_eq!(start, start_us(i128::from(e.offset_ps())));
                e.stats().find(|s| s.name() == "tag").and_then(|s| s.as_i64()).unwrap_or(-1)
            })
            .collect();
        (tags, merges)
    }

    /// The order every caller relies on: a stable sort by start of the model's order.
    fn stable_sort(lines: &[Vec<(i64, i64)>]) -> Vec<i64> {
        let mut all: Vec<(i64, i64)> = lines.iter().flatten().copied().collect();
        all.sort_by_key(|&(start, _)| start);
        all.into_iter().map(|(_, tag)| tag).collect()
    }

    #[test]
    fn sorted_lines_are_merged_ties_to_the_earlier_line() {
        let lines = vec![vec![(0, 0), (5, 1), (5, 2), (9, 3)], vec![], vec![(5, 4), (5, 5), (7, 6)], vec![(1, 7)]];
        let (tags, merges) = walk(&lines);
        assert!(merges);
        assert_eq!(tags, stable_sort(&lines));
        assert_eq!(tags, [0, 7, 1, 2, 4, 5, 6, 3]);
    }

    #[test]
    fn a_line_out_of_order_is_sorted_the_same_way() {
        let lines = vec![vec![(5, 0), (2, 1), (5, 2)], vec![(2, 3), (5, 4)]];
        let (tags, merges) = walk(&lines);
        assert!(!merges);
        assert_eq!(tags, stable_sort(&lines));
        assert_eq!(tags, [1, 3, 0, 2, 4]);
    }

    #[test]
    fn random_lines_walk_as_a_stable_sort() {
        // A small deterministic generator: no dependency for one test.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..60 {
            let mut tag = 0;
            let lines: Vec<Vec<(i64, i64)>> = (0..1 + next(5))
                .map(|_| {
                    let mut starts: Vec<i64> = (0..next(12)).map(|_| next(20) as i64 * 1_000).collect();
                    if round % 3 != 0 {
                        starts.sort_unstable();
                    }
                    starts
                        .into_iter()
                        .map(|s| {
                            tag += 1;
                            (s, tag)
                        })
                        .collect()
                })
                .collect();
            assert_eq!(walk(&lines).0, stable_sort(&lines), "round {round}: {lines:?}");
        }
    }
}
