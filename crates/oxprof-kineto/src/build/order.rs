//! Sorting a thread's events, which come almost sorted: a trace writes a thread's events
//! in a few sorted runs (Kineto: its operators by start, then its runtime calls by start;
//! an enclosing event after its children). The events that break the run kept so far are
//! set aside (sorted the same way, in turn), then merged back in one backward pass, in
//! place: one merge, not a general sort's passes over the whole thread.

use std::cmp::Ordering;

/// Sorts `v` by `order`, stably (elements that compare equal keep their order), as
/// `v.sort_by(order)` does; quickest when `v` is a few sorted runs interleaved.
pub(super) fn sort_mostly_sorted<T: Copy, F: Fn(&T, &T) -> Ordering>(v: &mut [T], order: &F) {
    let in_order = |a: &T, b: &T| order(a, b) != Ordering::Greater;
    // Elements that break the non-decreasing run kept so far are set aside.
    let mut aside_count = 0;
    let mut last: Option<&T> = None;
    for e in v.iter() {
        match last {
            Some(l) if !in_order(l, e) => aside_count += 1,
            _ => last = Some(e),
        }
    }
    if aside_count == 0 {
        return;
    }
    // Keeping at least half bounds the work at a general sort's (each level halves).
    if aside_count > v.len() / 2 {
        v.sort_by(order);
        return;
    }
    // The kept run moves to the front; the others, in their order, aside.
    let mut aside: Vec<T> = Vec::with_capacity(aside_count);
    let mut kept = 0;
    for i in 0..v.len() {
        let e = v[i];
        if kept == 0 || in_order(&v[kept - 1], &e) {
            v[kept] = e;
            kept += 1;
        } else {
            aside.push(e);
        }
    }
    sort_mostly_sorted(&mut aside, order);

    // Merge from the back into the whole slice. On a tie the kept element goes first: it
    // came first in `v` (an element equal to one set aside, and after it, would have been
    // set aside too, since the kept run only grows).
    let (mut i, mut j, mut w) = (kept, aside.len(), v.len());
    while j > 0 {
        w -= 1;
        if i > 0 && order(&v[i - 1], &aside[j - 1]) == Ordering::Greater {
            v[w] = v[i - 1];
            i -= 1;
        } else {
            v[w] = aside[j - 1];
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorting by the first field leaves ties in input order (the second field), as the
    /// standard library's stable sort does: on shuffled input, on interleaved sorted runs,
    /// on input with a few late or early elements.
    #[test]
    fn sorts_as_the_stable_sort() {
        let mut x = 0x9e37_79b9_u64;
        let mut next = move |below: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % below) as i64
        };
        for case in 0..400 {
            let n = next(200) as usize;
            let mut key = 0;
            let v: Vec<(i64, usize)> = (0..n)
                .map(|i| {
                    let k = match case % 5 {
                        0 => next(n as u64 + 1),
                        1 => key + next(3) - 1,
                        // Two sorted runs interleaved in blocks, as Kineto writes a thread.
                        2 => (i / 8) as i64 * 4 + if i % 8 < 5 { 2 * (i % 8) as i64 } else { (i % 8) as i64 - 5 },
                        _ if next(20) == 0 => next(n as u64 + 1),
                        _ => key + next(2),
                    };
                    key = key.max(k);
                    (k, i)
                })
                .collect();
            let mut want = v.clone();
            want.sort_by_key(|e| e.0);
            let mut got = v.clone();
            sort_mostly_sorted(&mut got, &|a, b| a.0.cmp(&b.0));
            assert_eq!(got, want, "case {case}: {v:?}");
        }
    }
}
