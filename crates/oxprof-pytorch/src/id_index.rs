//! Rows by trace id (correlation and external ids), for the parse's joins of millions of
//! runtimes. [`IdIndex`], one row per id, looked up as the walk goes: a profiler numbers
//! these ids upwards, so a vector indexed by the id takes 4 bytes a slot and one memory
//! access, where a hash map takes ~24 bytes an entry and a probe; ids a vector cannot hold
//! within its bound (absent, negative, or far beyond the rows expected: any id a hostile
//! trace makes up) go to a hash map, with the same answers. [`IdLists`], several rows per
//! id, read once the walk is done: sorted pairs.

use rustc_hash::FxHashMap;

/// Rows (indices) by id; a later insert of an id replaces its row, as a map's does.
#[derive(Debug, Default)]
pub(crate) struct IdIndex {
    /// Row + 1 by id (0: none), for ids below `limit`.
    dense: Vec<u32>,
    /// Ids below it are kept in `dense` (grown as they come, never past it).
    limit: u64,
    sparse: FxHashMap<Option<i64>, usize>,
}

impl IdIndex {
    /// An empty index for about `rows` rows: ids up to 16 per row (gaps, ids other
    /// events use: a generated trace repeating a source's events numbers each copy past
    /// every id of the source) plus 65,536 are kept densely, at most 64 bytes a row (what
    /// a hash map takes for one entry while it grows).
    pub(crate) fn for_rows(rows: usize) -> IdIndex {
        IdIndex {
            dense: Vec::new(),
            limit: (rows as u64).saturating_mul(16).saturating_add(1 << 16),
            sparse: Default::default(),
        }
    }

    /// The dense slot of `id`, if it has one.
    fn slot(&self, id: Option<i64>) -> Option<usize> {
        let id = u64::try_from(id?).ok()?;
        (id < self.limit).then_some(id as usize)
    }

    /// Sets `id`'s row.
    pub(crate) fn insert(&mut self, id: Option<i64>, row: usize) {
        match (self.slot(id), u32::try_from(row).ok().filter(|&r| r < u32::MAX)) {
            (Some(slot), Some(row)) => {
                if slot >= self.dense.len() {
                    if slot >= self.dense.capacity() {
                        // Doubling, but never past the bound: the last doubling would
                        // otherwise take up to twice what the bound allows.
                        let target = (slot + 1).max(self.dense.capacity().saturating_mul(2)).min(self.limit as usize);
                        self.dense.reserve_exact(target.saturating_sub(self.dense.len()));
                    }
                    self.dense.resize(slot + 1, 0);
                }
                self.dense[slot] = row + 1;
                // A row beyond u32 kept earlier under this id is replaced.
                if !self.sparse.is_empty() {
                    self.sparse.remove(&id);
                }
            }
            (Some(slot), None) => {
                if let Some(kept) = self.dense.get_mut(slot) {
                    *kept = 0;
                }
                self.sparse.insert(id, row);
            }
            (None, _) => {
                self.sparse.insert(id, row);
            }
        }
    }

    /// `id`'s row.
    pub(crate) fn get(&self, id: Option<i64>) -> Option<usize> {
        match self.slot(id).and_then(|slot| self.dense.get(slot)) {
            Some(&row) if row != 0 => Some(row as usize - 1),
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&id).copied(),
        }
    }
}

/// Rows by id, several per id, each id's in the order they were pushed: (id, row) pairs,
/// sorted by id when first taken from (24 bytes a row whatever the ids: external ids are
/// counters of the whole process, often far above the rows' count, where a vector indexed
/// by the id would take several times that).
#[derive(Debug, Default)]
pub(crate) struct IdLists {
    /// Pushed pairs; those before `sorted` are in id order (stably: push order within an
    /// id). A taken row is [`TAKEN`].
    pairs: Vec<(Option<i64>, usize)>,
    sorted: usize,
}

/// A row already taken.
const TAKEN: usize = usize::MAX;

impl IdLists {
    /// Empty lists for about `rows` rows.
    pub(crate) fn for_rows(rows: usize) -> IdLists {
        IdLists { pairs: Vec::with_capacity(rows), sorted: 0 }
    }

    /// Appends `row` to `id`'s list.
    pub(crate) fn push(&mut self, id: Option<i64>, row: usize) {
        self.pairs.push((id, row));
    }

    /// `id`'s rows in the order they were pushed, removed (`None`: none).
    pub(crate) fn take(&mut self, id: Option<i64>) -> Option<Vec<usize>> {
        if self.sorted < self.pairs.len() {
            // Stable: pairs pushed later follow the earlier ones of their id. Ids come
            // nearly in order (counters), so this is close to a merge.
            self.pairs.sort_by_key(|&(id, _)| id);
            self.sorted = self.pairs.len();
        }
        let from = self.pairs.partition_point(|&(other, _)| other < id);
        let rows: Vec<usize> = self.pairs[from..]
            .iter_mut()
            .take_while(|(other, _)| *other == id)
            .filter(|(_, row)| *row != TAKEN)
            .map(|(_, row)| std::mem::replace(row, TAKEN))
            .collect();
        (!rows.is_empty()).then_some(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// xorshift: reproducible ids without a dependency.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// Ids as traces have them (dense, with gaps), and as hostile ones may (absent,
    /// negative, huge).
    fn id(state: &mut u64) -> Option<i64> {
        match next(state) % 10 {
            0 => None,
            1 => Some(-((next(state) % 5) as i64) - 1),
            2 => Some(i64::MAX - (next(state) % 3) as i64),
            3 => Some((1 << 20) + (next(state) % 7) as i64),
            _ => Some((next(state) % 300) as i64),
        }
    }

    #[test]
    fn the_index_answers_as_a_map_does() {
        let mut state = 0x9E37_79B9_7F4A_7C15;
        for rows in [0, 10, 100] {
            let (mut index, mut map) = (IdIndex::for_rows(rows), HashMap::new());
            for step in 0..5_000 {
                let key = id(&mut state);
                if next(&mut state).is_multiple_of(2) {
                    index.insert(key, step);
                    map.insert(key, step);
                } else {
                    assert_eq!(index.get(key), map.get(&key).copied(), "get {key:?}");
                }
            }
        }
    }

    /// The dense vector grows by doubling up to its bound and never past it.
    #[test]
    fn the_dense_vector_stops_at_its_bound() {
        let mut index = IdIndex::for_rows(10_000);
        let limit = index.limit as usize;
        let mut grown = 0;
        for id in (0..limit as i64).step_by(7) {
            let before = index.dense.capacity();
            index.insert(Some(id), id as usize);
            grown += usize::from(index.dense.capacity() != before);
            assert!(index.dense.capacity() <= limit, "{} > {limit}", index.dense.capacity());
        }
        // Doubling: a handful of growths for ~21,000 inserts, not one each.
        assert!(grown <= 20, "{grown} growths");
        index.insert(Some(limit as i64 - 1), 1);
        assert_eq!(index.dense.capacity(), limit);
        index.insert(Some(limit as i64), 2);
        assert_eq!((index.dense.capacity(), index.sparse.len()), (limit, 1));
    }

    #[test]
    fn rows_past_u32_are_kept_too() {
        let mut index = IdIndex::for_rows(4);
        index.insert(Some(3), 7);
        index.insert(Some(3), u32::MAX as usize + 5);
        assert_eq!(index.get(Some(3)), Some(u32::MAX as usize + 5));
        index.insert(Some(3), 9);
        assert_eq!(index.get(Some(3)), Some(9));
        assert_eq!(index.get(Some(4)), None);
    }

    #[test]
    fn lists_give_each_ids_rows_in_push_order_once() {
        let mut state = 0x2545_F491_4F6C_DD1D;
        let (mut lists, mut map): (IdLists, HashMap<Option<i64>, Vec<usize>>) = (IdLists::for_rows(50), HashMap::new());
        let mut pushed = 0;
        for _ in 0..4_000 {
            let key = id(&mut state);
            if next(&mut state).is_multiple_of(4) {
                assert_eq!(lists.take(key), map.remove(&key), "take {key:?}");
            } else {
                lists.push(key, pushed);
                map.entry(key).or_default().push(pushed);
                pushed += 1;
            }
        }
        let keys: Vec<Option<i64>> = map.keys().copied().collect();
        for key in keys {
            assert_eq!(lists.take(key), map.remove(&key), "take {key:?}");
            assert_eq!(lists.take(key), None);
        }
    }
}
