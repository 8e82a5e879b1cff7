//! C++'s `std::sort` and `std::partial_sort` as libstdc++ implements them, for the places
//! where XProf sorts elements that compare equal and the order they end up in shows in its
//! output (its sorts are not stable, so a stable sort would differ).

/// libstdc++'s `std::sort` (introsort: median-of-three quicksort down to runs of 16,
/// heapsort past `2·log2(n)` levels, then one insertion sort), port of `bits/stl_algo.h`
/// and `bits/stl_heap.h`, so that elements comparing equal end up where XProf's C++
/// leaves them. libstdc++'s unguarded loops get bounds checks that never fire with a strict
/// weak order, so an inconsistent `less` cannot index out of bounds.
pub fn introsort<T: Copy>(v: &mut [T], less: impl Fn(&T, &T) -> bool + Copy) {
    const THRESHOLD: usize = 16;
    fn lg(n: usize) -> usize {
        (usize::BITS - 1 - n.leading_zeros()) as usize
    }
    fn unguarded_linear_insert<T: Copy>(v: &mut [T], mut last: usize, less: impl Fn(&T, &T) -> bool) {
        let value = v[last];
        while last > 0 && less(&value, &v[last - 1]) {
            v[last] = v[last - 1];
            last -= 1;
        }
        v[last] = value;
    }
    fn insertion_sort<T: Copy>(v: &mut [T], less: impl Fn(&T, &T) -> bool + Copy) {
        for i in 1..v.len() {
            if less(&v[i], &v[0]) {
                let value = v[i];
                v.copy_within(0..i, 1);
                v[0] = value;
            } else {
                unguarded_linear_insert(v, i, less);
            }
        }
    }
    fn median_to_first<T: Copy>(v: &mut [T], a: usize, b: usize, c: usize, less: impl Fn(&T, &T) -> bool) {
        let pick = if less(&v[a], &v[b]) {
            if less(&v[b], &v[c]) {
                b
            } else if less(&v[a], &v[c]) {
                c
            } else {
                a
            }
        } else if less(&v[a], &v[c]) {
            a
        } else if less(&v[b], &v[c]) {
            c
        } else {
            b
        };
        v.swap(0, pick);
    }
    /// `__unguarded_partition` around `v[0]`; the median-of-three guarantees sentinels.
    fn partition<T: Copy>(v: &mut [T], less: impl Fn(&T, &T) -> bool) -> usize {
        let (mut first, mut last) = (1, v.len());
        loop {
            while first < v.len() && less(&v[first], &v[0]) {
                first += 1;
            }
            last -= 1;
            while last > 0 && less(&v[0], &v[last]) {
                last -= 1;
            }
            if first >= last {
                return first;
            }
            v.swap(first, last);
            first += 1;
        }
    }
    fn introsort_loop<T: Copy>(mut v: &mut [T], mut depth: usize, less: impl Fn(&T, &T) -> bool + Copy) {
        while v.len() > THRESHOLD {
            if depth == 0 {
                heap_sort(v, less);
                return;
            }
            depth -= 1;
            let (mid, last) = (v.len() / 2, v.len() - 1);
            median_to_first(v, 1, mid, last, less);
            let cut = partition(v, less);
            let (left, right) = std::mem::take(&mut v).split_at_mut(cut);
            introsort_loop(right, depth, less);
            v = left;
        }
    }
    if v.len() < 2 {
        return;
    }
    introsort_loop(v, 2 * lg(v.len()), less);
    if v.len() > THRESHOLD {
        let (head, _) = v.split_at_mut(THRESHOLD);
        insertion_sort(head, less);
        for i in THRESHOLD..v.len() {
            unguarded_linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, less);
    }
}

/// `__push_heap`.
fn push_heap<T: Copy>(v: &mut [T], mut hole: usize, top: usize, value: T, less: impl Fn(&T, &T) -> bool) {
    while hole > top {
        let parent = (hole - 1) / 2;
        if !less(&v[parent], &value) {
            break;
        }
        v[hole] = v[parent];
        hole = parent;
    }
    v[hole] = value;
}

/// `__adjust_heap`.
fn adjust_heap<T: Copy>(v: &mut [T], mut hole: usize, len: usize, value: T, less: impl Fn(&T, &T) -> bool) {
    let top = hole;
    let mut child = hole;
    while child < len.saturating_sub(1) / 2 {
        child = 2 * (child + 1);
        if less(&v[child], &v[child - 1]) {
            child -= 1;
        }
        v[hole] = v[child];
        hole = child;
    }
    if len & 1 == 0 && len >= 2 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        v[hole] = v[child - 1];
        hole = child - 1;
    }
    push_heap(v, hole, top, value, less);
}

/// `std::partial_sort(first, first + k, last)`: `__heap_select` (a heap of the first `k`,
/// each later element smaller than its top replaces the top), then `__sort_heap`.
pub fn partial_sort<T: Copy>(v: &mut [T], k: usize, less: impl Fn(&T, &T) -> bool + Copy) {
    let k = k.min(v.len());
    if k >= 2 {
        let mut parent = (k - 2) / 2;
        loop {
            adjust_heap(v, parent, k, v[parent], less);
            if parent == 0 {
                break;
            }
            parent -= 1;
        }
    }
    for i in k..v.len() {
        if less(&v[i], &v[0]) {
            // __pop_heap(first, middle, i): the top goes to i, v[i] sifts into the heap.
            let value = v[i];
            v[i] = v[0];
            adjust_heap(v, 0, k, value, less);
        }
    }
    let mut last = k;
    while last > 1 {
        last -= 1;
        let value = v[last];
        v[last] = v[0];
        adjust_heap(v, 0, last, value, less);
    }
}

/// `std::partial_sort(first, last, last)`: introsort's heapsort fallback.
fn heap_sort<T: Copy>(v: &mut [T], less: impl Fn(&T, &T) -> bool + Copy) {
    partial_sort(v, v.len(), less);
}

#[cfg(test)]
mod tests {
    use super::{heap_sort, introsort, partial_sort};

    #[test]
    fn partial_sort_keeps_libstdcxx_tie_order() {
        // Equal elements: one full partial sort leaves three in place, reorders four.
        let mut three = ['a', 'b', 'c'];
        partial_sort(&mut three, 3, |_, _| false);
        assert_eq!(three, ['a', 'b', 'c']);
        // Orders checked against g++/libstdc++'s std::partial_sort.
        let mut four = ['a', 'b', 'c', 'd'];
        partial_sort(&mut four, 4, |_, _| false);
        assert_eq!(four, ['b', 'd', 'a', 'c']);
        let mut seven = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
        partial_sort(&mut seven, 3, |_, _| false);
        assert_eq!(seven, ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
        // Descending by value, keeping the top two.
        let mut v = [1, 5, 3, 4, 2];
        partial_sort(&mut v, 2, |a, b| a > b);
        assert_eq!(&v[..2], &[5, 4]);
    }

    /// A small deterministic pseudo-random sequence (xorshift).
    fn sequence(n: usize, seed: u64, modulo: u64) -> Vec<(u64, u32)> {
        let mut x = seed;
        (0..n as u32)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % modulo, i)
            })
            .collect()
    }

    #[test]
    fn sorts_like_a_sort() {
        for (n, modulo) in [(0, 1), (1, 1), (5, 3), (16, 4), (17, 4), (100, 1000), (5000, 7), (5000, 1_000_000)] {
            let mut v = sequence(n, 88_172_645_463_325_252, modulo);
            introsort(&mut v, |a, b| a.0 < b.0);
            assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
            let mut ids: Vec<u32> = v.iter().map(|e| e.1).collect();
            ids.sort_unstable();
            assert_eq!(ids, (0..n as u32).collect::<Vec<_>>());
        }
    }

    // The order of equal keys that g++ 12's `std::sort` (libstdc++) produces on these
    // inputs (sorting by key only; the second field is the input position), recorded with
    // a small C++ program over the same xorshift sequence (`std::sort` with a key-only
    // comparator; the heap case with `std::partial_sort(first, last, last)`).
    #[test]
    fn ties_end_up_where_libstdcxx_puts_them() {
        let ids = |v: &[(u64, u32)]| v.iter().map(|e| e.1).collect::<Vec<_>>();
        for (n, modulo, expected) in [(40, 3, &LIBSTDCXX_40_MOD_3[..]), (300, 5, &LIBSTDCXX_300_MOD_5[..])] {
            let mut v = sequence(n, 88_172_645_463_325_252, modulo);
            introsort(&mut v, |a, b| a.0 < b.0);
            assert_eq!(ids(&v), expected);
        }
        let mut v = sequence(40, 88_172_645_463_325_252, 3);
        heap_sort(&mut v, |a, b| a.0 < b.0);
        assert_eq!(ids(&v), LIBSTDCXX_HEAP_40_MOD_3);
    }

    const LIBSTDCXX_40_MOD_3: [u32; 40] = [
        22, 3, 26, 34, 6, 8, 32, 10, 18, 17, 13, 16, 28, 31, 25, 27, 29, 30, 1, 33, 37, 38, 39, 21, 2, 4, 14, 11, 0,
        23, 36, 35, 5, 7, 9, 12, 15, 19, 20, 24,
    ];
    const LIBSTDCXX_300_MOD_5: [u32; 300] = [
        143, 121, 31, 32, 33, 34, 236, 128, 129, 39, 133, 41, 138, 68, 75, 46, 144, 48, 145, 148, 189, 54, 159, 160,
        166, 163, 59, 17, 277, 280, 275, 272, 9, 271, 270, 12, 13, 268, 27, 99, 260, 256, 254, 100, 106, 248, 247, 108,
        26, 1, 139, 92, 88, 150, 156, 153, 96, 131, 87, 115, 233, 297, 284, 281, 266, 265, 253, 250, 241, 240, 239,
        237, 234, 167, 228, 223, 213, 208, 205, 197, 195, 194, 193, 188, 184, 182, 66, 6, 4, 58, 29, 8, 24, 67, 70, 52,
        86, 69, 140, 22, 130, 65, 252, 255, 246, 0, 235, 72, 37, 85, 43, 191, 190, 187, 200, 202, 206, 181, 207, 179,
        232, 210, 173, 170, 216, 56, 165, 40, 226, 94, 102, 104, 289, 81, 279, 293, 278, 111, 276, 295, 113, 95, 274,
        93, 118, 262, 74, 127, 259, 73, 267, 84, 124, 2, 76, 296, 83, 294, 199, 209, 299, 47, 212, 42, 44, 214, 215,
        288, 201, 7, 20, 21, 251, 263, 264, 249, 23, 15, 14, 245, 25, 217, 238, 35, 230, 38, 225, 283, 222, 3, 221,
        219, 287, 125, 57, 157, 62, 155, 154, 63, 50, 141, 137, 135, 134, 126, 147, 123, 120, 117, 116, 77, 110, 78,
        101, 80, 97, 82, 89, 176, 51, 186, 174, 172, 185, 53, 203, 269, 11, 10, 107, 119, 273, 204, 114, 16, 122, 112,
        183, 109, 55, 290, 49, 298, 90, 91, 192, 196, 98, 292, 291, 5, 45, 198, 103, 286, 285, 105, 79, 282, 180, 229,
        28, 151, 152, 30, 36, 171, 169, 231, 168, 149, 158, 227, 61, 60, 224, 161, 162, 164, 220, 136, 18, 218, 258,
        257, 19, 132, 71, 178, 177, 261, 211, 142, 146, 175, 64, 244, 243, 242,
    ];
    /// `std::partial_sort(first, last, last)` (the heapsort fallback) on the 40 keys.
    const LIBSTDCXX_HEAP_40_MOD_3: [u32; 40] = [
        16, 22, 6, 17, 18, 32, 3, 8, 34, 10, 13, 26, 28, 31, 33, 38, 39, 4, 21, 1, 11, 37, 2, 25, 27, 29, 14, 30, 7,
        15, 35, 36, 19, 9, 20, 0, 23, 24, 5, 12,
    ];
}
