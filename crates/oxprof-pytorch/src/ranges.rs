//! Time-range arithmetic on sorted, merged `(start, end)` lists in microseconds, step for
//! step as torch-tb-profiler 0.4.3's `range_utils` does it (same merge rules, same float
//! operations), so sums of ranges agree with its numbers to the last bit in most cases.

/// A half-open range `[start, end)` in µs.
pub(crate) type Range = (f64, f64);

/// Sorts by start (stable) and merges touching or overlapping ranges.
pub(crate) fn merge(mut ranges: Vec<Range>) -> Vec<Range> {
    ranges.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Union::with_capacity(ranges.len());
    for r in ranges {
        out.push_in_order(r);
    }
    out.finish()
}

/// [`merge`] of ranges that arrive sorted by start, kept merged as they come: no list of
/// every range (tens of millions on big traces).
#[derive(Debug, Default)]
pub(crate) struct Union(Vec<Range>);

impl Union {
    fn with_capacity(n: usize) -> Union {
        Union(Vec::with_capacity(n))
    }

    /// Adds a range starting at or after every range added before (by `total_cmp`).
    pub(crate) fn push_in_order(&mut self, r: Range) {
        let Some(last) = self.0.last_mut() else {
            self.0.push(r);
            return;
        };
        if r.1 > last.1 {
            if r.0 <= last.1 {
                last.1 = r.1;
            } else {
                self.0.push(r);
            }
        }
    }

    /// The ranges merged so far, leaving none.
    pub(crate) fn take(&mut self) -> Vec<Range> {
        std::mem::take(&mut self.0)
    }

    /// The merged ranges.
    pub(crate) fn finish(mut self) -> Vec<Range> {
        self.0.shrink_to_fit();
        self.0
    }
}

/// The parts of `a` inside `b` (both merged and sorted).
pub(crate) fn intersect(a: &[Range], b: &[Range]) -> Vec<Range> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let start = a[i].0.max(b[j].0);
        let end = a[i].1.min(b[j].1);
        if start < end {
            out.push((start, end));
        }
        if a[i].1 < b[j].1 { i += 1 } else { j += 1 }
    }
    out
}

/// The ranges of `b` (merged and sorted) from the first that ends after `t`: all that an
/// intersection with ranges from `t` on can touch, found by bisection (a step's share of a
/// role without walking every earlier range: linear instead of quadratic in steps).
pub(crate) fn ending_after(b: &[Range], t: f64) -> &[Range] {
    &b[b.partition_point(|r| r.1 <= t)..]
}

/// The parts of `a` outside `b` (both merged and sorted).
pub(crate) fn subtract(a: &[Range], b: &[Range]) -> Vec<Range> {
    let mut out = Vec::new();
    let mut j = 0;
    for &(start, end) in a {
        let mut cur = start;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].0 < end {
            if b[k].0 > cur {
                out.push((cur, b[k].0));
            }
            cur = cur.max(b[k].1);
            if b[k].1 >= end {
                break;
            }
            k += 1;
        }
        if cur < end {
            out.push((cur, end));
        }
    }
    out
}

/// Sum of the ranges' lengths, in order.
pub(crate) fn sum(ranges: &[Range]) -> f64 {
    ranges.iter().fold(0.0, |acc, r| acc + (r.1 - r.0))
}

/// torch-tb-profiler's `merge_ranges_with_value`: where ranges with values overlap, the sum
/// of their values capped at 1 (its estimated SM efficiency from blocks per SM).
pub(crate) fn merge_with_value(ranges: &[(f64, f64, f64)]) -> Vec<(f64, f64, f64)> {
    let mut points: Vec<(f64, u8, f64)> = Vec::with_capacity(ranges.len() * 2);
    for &(s, e, v) in ranges {
        points.push((s, 0, v));
        points.push((e, 1, v));
    }
    // Starts before ends at equal times; stable otherwise.
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut out = Vec::new();
    let Some(first) = points.first() else { return out };
    let (mut last_time, mut value) = (first.0, first.2);
    for &(time, kind, v) in &points[1..] {
        if time > last_time && value > 0.0 {
            out.push((last_time, time, value.min(1.0)));
        }
        last_time = time;
        if kind == 0 { value += v } else { value -= v }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_intersect_subtract() {
        // a: |--|   |----|        b:   |----|  |--|
        //    0  2   4    8             1    5  7  9
        let a = merge(vec![(4.0, 8.0), (0.0, 2.0), (5.0, 6.0)]);
        assert_eq!(a, vec![(0.0, 2.0), (4.0, 8.0)]);
        let b = vec![(1.0, 5.0), (7.0, 9.0)];
        assert_eq!(intersect(&a, &b), vec![(1.0, 2.0), (4.0, 5.0), (7.0, 8.0)]);
        assert_eq!(subtract(&a, &b), vec![(0.0, 1.0), (5.0, 7.0)]);
        assert_eq!(subtract(&b, &a), vec![(2.0, 4.0), (8.0, 9.0)]);
        assert_eq!(sum(&a), 6.0);
    }

    #[test]
    fn values_add_where_ranges_overlap_capped_at_one() {
        // 0.5 on [0,4), 0.75 on [2,6): 0.5, then 1 (capped), then 0.75.
        let r = merge_with_value(&[(0.0, 4.0, 0.5), (2.0, 6.0, 0.75)]);
        assert_eq!(r, vec![(0.0, 2.0, 0.5), (2.0, 4.0, 1.0), (4.0, 6.0, 0.75)]);
    }
}
