//! Which step an event is in: a host event's `ProfilerStep#N` by its start time, a GPU
//! event's by the host launch it came from (its correlation id). Both are sorted tables
//! read through cursors that start where the previous lookup ended: a row's events come by
//! start and a stream's correlation ids mostly grow, so a lookup is a step or two from the
//! last, not a binary search (or a hash probe) into memory the caches no longer hold.

use super::search::partition_point_near;

/// A step: `ProfilerStep#N` from `start` to `end` (ps from the origin).
#[derive(Debug, Clone, Copy)]
pub(super) struct Step {
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) num: i64,
}

/// The step a host time falls in, looked up along times that mostly grow.
pub(super) struct StepCursor<'a> {
    /// By start.
    steps: &'a [Step],
    /// The steps before this one start at or before the last time asked.
    next: usize,
}

impl<'a> StepCursor<'a> {
    /// A cursor over `steps`, sorted by start.
    pub(super) fn new(steps: &'a [Step]) -> Self {
        StepCursor { steps, next: 0 }
    }

    /// The step `t` falls in: the last step starting at or before `t`, if `t` is before its
    /// end (or is its start, for a step of no length).
    #[inline]
    pub(super) fn at(&mut self, t: i64) -> Option<i64> {
        let steps = self.steps;
        self.next = partition_point_near(steps, self.next, |s| s.start <= t);
        let s = steps.get(self.next.checked_sub(1)?)?;
        (t < s.end || t == s.start).then_some(s.num)
    }
}

/// The step of each host launch, by correlation id.
#[derive(Debug, Default)]
pub(super) struct LaunchSteps {
    /// `(correlation, step)` by correlation, one entry per correlation.
    by_correlation: Vec<(i64, i64)>,
}

impl LaunchSteps {
    /// The table of `(correlation, step)` pairs in the order they were found: a correlation
    /// found twice keeps its last step (as inserting them into a map would).
    pub(super) fn new(mut pairs: Vec<(i64, i64)>) -> Self {
        // Stable: the pairs of one correlation stay in the order they were found.
        pairs.sort_by_key(|&(corr, _)| corr);
        let mut kept = 0;
        for i in 0..pairs.len() {
            if pairs.get(i + 1).is_some_and(|next| next.0 == pairs[i].0) {
                continue;
            }
            pairs[kept] = pairs[i];
            kept += 1;
        }
        pairs.truncate(kept);
        pairs.shrink_to_fit();
        LaunchSteps { by_correlation: pairs }
    }

    /// A cursor for one stream's lookups.
    pub(super) fn cursor(&self) -> LaunchCursor<'_> {
        LaunchCursor { table: &self.by_correlation, at: 0 }
    }
}

/// Looks correlation ids up in a [`LaunchSteps`], starting from the last one found.
pub(super) struct LaunchCursor<'a> {
    table: &'a [(i64, i64)],
    /// Where the last lookup ended.
    at: usize,
}

impl LaunchCursor<'_> {
    /// The step of the launch with this correlation id.
    #[inline]
    pub(super) fn get(&mut self, corr: i64) -> Option<i64> {
        let (t, at) = (self.table, self.at);
        if t.get(at).is_some_and(|&(c, _)| c == corr) {
            return Some(t[at].1);
        }
        let pos = partition_point_near(t, at, |&(c, _)| c < corr);
        self.at = pos;
        t.get(pos).filter(|&&(c, _)| c == corr).map(|&(_, step)| step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    /// A small deterministic generator (xorshift) for the comparisons below.
    fn numbers(seed: u64) -> impl FnMut(u64) -> i64 {
        let mut x = seed | 1;
        move |below| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % below) as i64
        }
    }

    /// Lookups in any order answer what a map filled with the same pairs answers.
    #[test]
    fn launch_steps_answer_as_a_map() {
        for seed in 1..40 {
            let mut next = numbers(seed);
            let n = next(300) as usize;
            // Mostly growing ids with repeats and jumps back, as threads' launches are.
            let mut corr = 0;
            let pairs: Vec<(i64, i64)> = (0..n)
                .map(|_| {
                    corr = if next(10) == 0 { next(2 * n as u64 + 1) } else { corr + next(3) };
                    (corr, next(5))
                })
                .collect();
            let map: FxHashMap<i64, i64> = pairs.iter().copied().collect();
            let table = LaunchSteps::new(pairs);
            let mut cursor = table.cursor();
            for _ in 0..2 * n + 5 {
                let q = if next(4) == 0 { next(2 * n as u64 + 3) - 1 } else { corr.saturating_sub(next(4)) };
                corr = q;
                assert_eq!(cursor.get(q), map.get(&q).copied(), "seed {seed}, correlation {q}");
            }
        }
    }

    /// The cursor answers as a binary search over the steps, in any order of times.
    #[test]
    fn step_cursor_answers_as_a_search() {
        let steps = [
            Step { start: 10, end: 20, num: 1 },
            Step { start: 20, end: 20, num: 2 },
            Step { start: 20, end: 35, num: 3 },
            Step { start: 40, end: 50, num: 4 },
        ];
        let search = |t: i64| {
            let i = steps.partition_point(|s| s.start <= t);
            let s = steps.get(i.checked_sub(1)?)?;
            (t < s.end || t == s.start).then_some(s.num)
        };
        let mut next = numbers(7);
        let mut cursor = StepCursor::new(&steps);
        let mut t = 0;
        for _ in 0..500 {
            t = if next(8) == 0 { next(60) } else { t + next(3) };
            assert_eq!(cursor.at(t), search(t), "t = {t}");
        }
        assert_eq!(StepCursor::new(&[]).at(5), None);
    }
}
