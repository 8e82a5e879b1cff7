//! Rows by trace id (correlation and external ids), for the parse's joins of millions of
//! runtimes. [`IdIndex`], one row per id, looked up as the walk goes: a profiler numbers
//! these ids upwards as it records the events the walk meets in start order, so ids come
//! almost always in increasing order; those are kept in two sorted vectors (12 bytes an
//! entry, whatever the ids' range: real traces' ids are process-wide counters, 4–14 per
//! runtime) and found by a search back from the newest, the ones a lookup usually wants.
//! Any other id (out of order, absent, a repeat) goes to a hash map, with the same answers.
//! [`IdLists`], several rows per id, read once the walk is done: sorted pairs.

use rustc_hash::FxHashMap;

/// Rows (indices) by id; a later insert of an id replaces its row, as a map's does.
#[derive(Debug, Default)]
pub(crate) struct IdIndex {
    /// Ids inserted in strictly increasing order, and their rows (same length).
    ids: Vec<i64>,
    rows: Vec<u32>,
    /// Every other insert: ids out of order or absent, rows beyond u32. It wins over
    /// `ids` (an id kept there again later is a repeat, and a later insert replaces).
    others: FxHashMap<Option<i64>, usize>,
}

impl IdIndex {
    /// An empty index for about `rows` rows (reserved once; a trace whose ids all come in
    /// order never grows it).
    pub(crate) fn for_rows(rows: usize) -> IdIndex {
        IdIndex { ids: Vec::with_capacity(rows), rows: Vec::with_capacity(rows), others: Default::default() }
    }

    /// Sets `id`'s row.
    pub(crate) fn insert(&mut self, id: Option<i64>, row: usize) {
        let in_order = id.filter(|&id| self.ids.last().is_none_or(|&last| id > last));
        match (in_order, u32::try_from(row)) {
            (Some(id), Ok(row)) => {
                self.ids.push(id);
                self.rows.push(row);
                // A row beyond u32 kept earlier under this id is replaced.
                if !self.others.is_empty() {
                    self.others.remove(&Some(id));
                }
            }
            _ => {
                self.others.insert(id, row);
            }
        }
    }

    /// `id`'s row.
    pub(crate) fn get(&self, id: Option<i64>) -> Option<usize> {
        if !self.others.is_empty()
            && let Some(&row) = self.others.get(&id)
        {
            return Some(row);
        }
        self.position(id?).map(|at| self.rows[at] as usize)
    }

    /// Where `id` is in `ids`: a galloping search back from the end (the walk looks up
    /// ids it inserted shortly before), then a binary search in the range found.
    fn position(&self, id: i64) -> Option<usize> {
        // Every id in `ids[high..]` is greater than `id`.
        let (mut high, mut step) = (self.ids.len(), 1);
        while high > 0 {
            let probe = high.saturating_sub(step);
            if self.ids[probe] <= id {
                return self.ids[probe..high].binary_search(&id).ok().map(|at| probe + at);
            }
            high = probe;
            step *= 2;
        }
        None
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
    /// Where the last take found its id: the next one's search starts there (takes come
    /// in id order within a thread, as operators start).
    hint: usize,
    /// Ids with a long list, all taken since the last sort: later takes of them answer
    /// at once instead of walking the list again (operators without an external id, or
    /// with id 0, ask for the same long list millions of times).
    emptied: rustc_hash::FxHashSet<Option<i64>>,
}

/// Lists longer than this are remembered once emptied.
const LONG_LIST: usize = 16;

impl IdLists {
    /// The first sorted pair whose id is not below `id`: a galloping search from the last
    /// take's place, in whichever direction `id` lies, then a binary search in the range.
    fn first_at_or_after(&self, id: Option<i64>) -> usize {
        let below = |at: usize| self.pairs[at].0 < id;
        let len = self.pairs.len();
        let hint = self.hint.min(len);
        if hint < len && below(hint) {
            // Forward: every pair before `low` is below `id`.
            let (mut low, mut step) = (hint + 1, 1);
            while low + step <= len && below(low + step - 1) {
                low += step;
                step *= 2;
            }
            let high = (low + step - 1).min(len);
            low + self.pairs[low..high].partition_point(|&(other, _)| other < id)
        } else {
            // Backward: no pair from `high` on is below `id`.
            let (mut high, mut step) = (hint, 1);
            while high >= step && !below(high - step) {
                high -= step;
                step *= 2;
            }
            let low = high.saturating_sub(step);
            low + self.pairs[low..high].partition_point(|&(other, _)| other < id)
        }
    }
}

/// A row already taken.
const TAKEN: usize = usize::MAX;

impl IdLists {
    /// Empty lists for about `rows` rows.
    pub(crate) fn for_rows(rows: usize) -> IdLists {
        IdLists { pairs: Vec::with_capacity(rows), sorted: 0, hint: 0, emptied: Default::default() }
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
            self.emptied.clear();
        }
        if self.emptied.contains(&id) {
            return None;
        }
        let from = self.first_at_or_after(id);
        self.hint = from;
        let list = self.pairs[from..].iter_mut().take_while(|(other, _)| *other == id);
        let mut length = 0;
        let rows: Vec<usize> = list
            .inspect(|_| length += 1)
            .filter(|(_, row)| *row != TAKEN)
            .map(|(_, row)| std::mem::replace(row, TAKEN))
            .collect();
        if length > LONG_LIST {
            self.emptied.insert(id);
        }
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

    /// Ids as a profiler numbers them: increasing, with gaps, a few out of order and a
    /// few repeated; the index answers as a map does and keeps the ordered ones in its
    /// vectors, sized once.
    #[test]
    fn ids_in_order_stay_in_the_vectors_and_answer_as_a_map_does() {
        let mut state = 0x9E37_79B9_7F4A_7C15;
        let rows = 20_000;
        let (mut index, mut map) = (IdIndex::for_rows(rows), HashMap::new());
        let (mut counter, mut last) = (1_000_i64, 1_000_i64);
        let mut out_of_order = 0;
        for row in 0..rows {
            counter += 1 + (next(&mut state) % 14) as i64;
            let key = match next(&mut state) % 100 {
                0 => Some(last - (next(&mut state) % 50) as i64),
                1 => map.keys().next().copied().flatten(),
                _ => Some(counter),
            };
            out_of_order += usize::from(key != Some(counter));
            if key == Some(counter) {
                last = counter;
            }
            index.insert(key, row);
            map.insert(key, row);
            let probe = Some(counter - (next(&mut state) % 200) as i64);
            assert_eq!(index.get(probe), map.get(&probe).copied(), "get {probe:?}");
            assert_eq!(index.get(key), Some(row));
        }
        for (key, row) in &map {
            assert_eq!(index.get(*key), Some(*row), "get {key:?}");
        }
        assert_eq!(index.get(Some(0)), None);
        assert_eq!(index.get(Some(i64::MAX)), None);
        assert!(index.others.len() <= out_of_order, "{} kept aside", index.others.len());
        assert_eq!(index.ids.len() + out_of_order, rows);
        assert_eq!((index.ids.capacity(), index.rows.capacity()), (rows, rows), "grown");
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

    /// A long list, once emptied, answers at once; rows pushed to it later are taken.
    #[test]
    fn a_long_list_is_taken_once_and_again_after_new_pushes() {
        let mut lists = IdLists::for_rows(100);
        for row in 0..40 {
            lists.push(if row % 2 == 0 { None } else { Some(0) }, row);
        }
        lists.push(Some(5), 40);
        assert_eq!(lists.take(None), Some((0..40).step_by(2).collect()));
        assert_eq!(lists.take(Some(0)), Some((1..40).step_by(2).collect()));
        assert!(lists.emptied.contains(&None) && lists.emptied.contains(&Some(0)));
        assert_eq!((lists.take(None), lists.take(Some(0))), (None, None));
        lists.push(None, 41);
        assert_eq!(lists.take(None), Some(vec![41]));
        assert_eq!((lists.take(None), lists.take(Some(5)), lists.take(Some(5))), (None, Some(vec![40]), None));
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
