//! Searching a sorted table near where the last search ended: the build looks things up
//! along times and ids that mostly grow (a row's events by start, a stream's correlation
//! ids), so a search gallops out from its guess, touching a few nearby entries, instead of
//! bisecting the whole table from its middle through memory the caches no longer hold.

/// `slice.partition_point(pred)` (`pred` true on a prefix of `slice`, false after it),
/// found by galloping out from `guess`.
#[inline]
pub(super) fn partition_point_near<T>(slice: &[T], guess: usize, pred: impl Fn(&T) -> bool) -> usize {
    let guess = guess.min(slice.len());
    // The answer is in `lo..=hi`.
    let (lo, hi) = if slice.get(guess).is_some_and(&pred) {
        let (mut lo, mut step) = (guess + 1, 1);
        loop {
            let probe = guess + step;
            if probe >= slice.len() {
                break (lo, slice.len());
            }
            if !pred(&slice[probe]) {
                break (lo, probe);
            }
            lo = probe + 1;
            step *= 2;
        }
    } else {
        let (mut hi, mut step) = (guess, 1);
        loop {
            if step > guess {
                break (0, hi);
            }
            let probe = guess - step;
            if pred(&slice[probe]) {
                break (probe + 1, hi);
            }
            hi = probe;
            step *= 2;
        }
    };
    lo + slice[lo..hi].partition_point(pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every guess finds what a binary search finds, in tables with repeats.
    #[test]
    fn answers_as_a_binary_search() {
        for len in 0..40usize {
            let table: Vec<usize> = (0..len).map(|i| i / 3 * 2).collect();
            for target in 0..=len + 2 {
                let pred = |&v: &usize| v < target;
                let want = table.partition_point(pred);
                for guess in 0..=len + 1 {
                    assert_eq!(
                        partition_point_near(&table, guess, pred),
                        want,
                        "len {len}, target {target}, guess {guess}"
                    );
                }
            }
        }
    }
}
