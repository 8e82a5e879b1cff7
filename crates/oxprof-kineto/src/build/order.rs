//! Sorting a thread's events, which come almost sorted: a trace writes most events in order
//! of start and a few late (an enclosing event after its children, one per step or copy).
//! Those few are set aside, sorted, and merged back in one backward pass over the others,
//! in place: no merge passes over the whole thread and no scratch copy of it, which a
//! general sort of a thread with a few hundred such breaks spends.

use std::cmp::Ordering;

/// Sorts `v` by `order`, stably (elements that compare equal keep their order), as
/// `v.sort_by(order)` does; quickest when few elements are out of place.
pub(super) fn sort_mostly_sorted<T: Copy>(v: &mut [T], order: impl Fn(&T, &T) -> Ordering) {
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
    if aside_count > v.len() / 16 + 16 {
        v.sort_by(order);
        return;
    }
    // The kept run moves to the front; the others, with their places, aside.
    let mut aside: Vec<(usize, T)> = Vec::with_capacity(aside_count);
    let mut kept = 0;
    for i in 0..v.len() {
        let e = v[i];
        if kept == 0 || in_order(&v[kept - 1], &e) {
            v[kept] = e;
            kept += 1;
        } else {
            aside.push((i, e));
        }
    }
    // Their places, ascending (before the sort below reorders them).
    let places: Vec<usize> = aside.iter().map(|&(i, _)| i).collect();
    aside.sort_by(|a, b| order(&a.1, &b.1));

    // Merge from the back into the whole slice. `below` counts the set-aside places before
    // the kept element at `i - 1`, so its place in the input is `i - 1 + below`: on a tie the
    // element from later in the input goes later.
    let (mut i, mut j, mut w) = (kept, aside.len(), v.len());
    let mut below = places.len();
    while j > 0 {
        let take_kept = i > 0 && {
            let p = i - 1;
            while below > 0 && places[below - 1] >= p + below {
                below -= 1;
            }
            match order(&v[p], &aside[j - 1].1) {
                Ordering::Greater => true,
                Ordering::Less => false,
                Ordering::Equal => p + below > aside[j - 1].0,
            }
        };
        w -= 1;
        if take_kept {
            v[w] = v[i - 1];
            i -= 1;
        } else {
            v[w] = aside[j - 1].1;
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorting by the first field leaves ties in input order (the second field), as the
    /// standard library's stable sort does: on mostly sorted input, on input with a few
    /// late or early elements, and on shuffled input (sorted the ordinary way).
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
                    let k = match case % 4 {
                        0 => next(n as u64 + 1),
                        1 => key + next(3) - 1,
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
            sort_mostly_sorted(&mut got, |a, b| a.0.cmp(&b.0));
            assert_eq!(got, want, "case {case}: {v:?}");
        }
    }
}
