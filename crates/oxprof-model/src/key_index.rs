//! Metadata keys (the input's 64-bit ids) → dense indexes, for a plane's tables and for
//! the lines built against them.
//!
//! Inputs number their metadata 1, 2, 3, … almost always, so most keys live in a plain
//! vector indexed by key (4 bytes an entry, where a hash map spends 16 and more for its
//! slack and control bytes: a trace with millions of distinct names has millions of
//! entries). Negative keys, and keys far beyond the number of entries, go to a hash map:
//! the vector never grows past `4 × entries + 1,024` slots, whatever the keys.

use rustc_hash::FxHashMap;

/// Keys → dense indexes; each key is in exactly one of the two parts.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyIndex {
    /// By key, for keys below its length (`ABSENT` where none).
    dense: Vec<u32>,
    sparse: FxHashMap<i64, u32>,
    len: usize,
}

impl KeyIndex {
    const ABSENT: u32 = u32::MAX;

    /// The index of `key`, if present.
    #[inline(always)]
    pub(crate) fn get(&self, key: i64) -> Option<u32> {
        match self.dense.get(key as usize) {
            Some(&index) if index != Self::ABSENT => Some(index),
            // Not in the vector (absent, or too large for it; a negative key converts to a
            // huge one): only the map may hold it.
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&key).copied(),
        }
    }

    /// Whether `key` is present.
    pub(crate) fn contains(&self, key: i64) -> bool {
        self.get(key).is_some()
    }

    /// Adds a key that is not present (`index` must not be `u32::MAX`).
    pub(crate) fn insert_new(&mut self, key: i64, index: u32) {
        debug_assert!(!self.contains(key) && index != Self::ABSENT);
        self.len += 1;
        let fits = u64::try_from(key).is_ok_and(|k| k < 4 * self.len as u64 + 1_024);
        if !fits {
            self.sparse.insert(key, index);
            return;
        }
        let k = key as usize;
        if k >= self.dense.len() {
            // Amortised growth: at least double, never past the bound above.
            let bound = 4 * self.len + 1_024;
            let new_len = (k + 1).max(self.dense.len() * 2).min(bound).max(k + 1);
            self.dense.resize(new_len, Self::ABSENT);
        }
        self.dense[k] = index;
    }

    /// Heap bytes.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.dense.capacity() * 4 + self.sparse.capacity() * 17
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_keys_stay_in_the_vector_and_others_in_the_map() {
        let mut k = KeyIndex::default();
        for key in 1..=1_000i64 {
            k.insert_new(key, key as u32 * 10);
        }
        k.insert_new(-5, 7);
        k.insert_new(1 << 40, 8);
        k.insert_new(i64::MIN, 9);
        assert!(k.sparse.len() == 3 && k.dense.len() <= 4 * 1_003 + 1_024);
        assert_eq!([0, 1, 500, 1_000, 1_001].map(|key| k.get(key)), [None, Some(10), Some(5_000), Some(10_000), None]);
        assert_eq!(
            [-5, 1 << 40, i64::MIN, -1, i64::MAX].map(|key| k.get(key)),
            [Some(7), Some(8), Some(9), None, None]
        );
        // A key put in the map while the vector was short is still found once it is longer.
        let mut late = KeyIndex::default();
        late.insert_new(5_000, 1);
        for key in 0..2_000 {
            late.insert_new(key, 2);
        }
        late.insert_new(6_000, 3);
        assert!(late.dense.len() > 6_000 && late.sparse.len() == 1);
        assert_eq!(late.get(5_000), Some(1));
        assert_eq!((late.get(4_999), late.get(1_999), late.get(6_000)), (None, Some(2), Some(3)));
    }
}
