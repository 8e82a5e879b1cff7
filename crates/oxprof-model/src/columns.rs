//! Compact column types for event and stat tables.
//!
//! A decoded profile must take less memory than its file (≈28 bytes per event on disk),
//! so the per-event columns avoid fixed 64-bit storage where values are usually small:
//!
//! * [`BlockedI64`]: values stored as a 64-bit base per block of 64 plus a 32-bit delta;
//!   blocks whose spread does not fit 32 bits fall back to full 64-bit values.
//!   Timestamps within a line are close together, so almost every block is narrow.
//! * [`EscapedI64`]: a 32-bit value per row; values outside `0..u32::MAX` are kept in a
//!   sorted side table (long durations are rare).
//! * [`IdColumn`]: 16-bit ids until one does not fit, then 32-bit (planes rarely have
//!   more than 65,536 event metadata entries).
//! * [`RowEnds`]: the end of each event's stats in its line, as a 32-bit base per block
//!   of 64 events plus a 16-bit offset (events hold a handful of stats each).

/// Rows per block in [`BlockedI64`].
const BLOCK: usize = 64;
const NARROW: u32 = u32::MAX;

/// A column of `i64` values that are close to each other within blocks of 64 rows.
#[derive(Debug, Default, Clone)]
pub(crate) struct BlockedI64 {
    base: Vec<i64>,
    /// Per block: `NARROW`, or the start of this block's values in `wide`.
    wide_start: Vec<u32>,
    delta: Vec<u32>,
    wide: Vec<i64>,
    pending: Vec<i64>,
}

impl BlockedI64 {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        // Nothing is allocated for an empty column: files can hold millions of empty lines.
        BlockedI64 {
            base: Vec::with_capacity(rows.div_ceil(BLOCK)),
            wide_start: Vec::with_capacity(rows.div_ceil(BLOCK)),
            delta: Vec::with_capacity(rows),
            wide: Vec::new(),
            pending: Vec::with_capacity(rows.min(BLOCK)),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, value: i64) {
        self.pending.push(value);
        if self.pending.len() == BLOCK {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let min = self.pending.iter().copied().min().unwrap_or(0);
        let max = self.pending.iter().copied().max().unwrap_or(0);
        self.base.push(min);
        let spread = (max as i128) - (min as i128);
        if spread < i128::from(NARROW) {
            self.wide_start.push(NARROW);
            self.delta.extend(self.pending.iter().map(|&v| (v.wrapping_sub(min)) as u32));
        } else {
            self.wide_start.push(self.wide.len() as u32);
            self.wide.extend_from_slice(&self.pending);
            self.delta.extend(std::iter::repeat_n(0, self.pending.len()));
        }
        self.pending.clear();
    }

    /// Completes the column; no more pushes are expected.
    pub(crate) fn finish(&mut self) {
        self.flush();
        self.pending = Vec::new();
        self.base.shrink_to_fit();
        self.wide_start.shrink_to_fit();
        self.delta.shrink_to_fit();
        self.wide.shrink_to_fit();
    }

    #[inline]
    pub(crate) fn get(&self, row: usize) -> i64 {
        let block = row / BLOCK;
        let start = self.wide_start[block];
        if start == NARROW {
            self.base[block].wrapping_add(i64::from(self.delta[row]))
        } else {
            self.wide[start as usize + row % BLOCK]
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.base.capacity() * 8 + self.wide_start.capacity() * 4 + self.delta.capacity() * 4 + self.wide.capacity() * 8
    }
}

/// A column of `i64` values that are usually in `0..u32::MAX`.
#[derive(Debug, Default, Clone)]
pub(crate) struct EscapedI64 {
    narrow: Vec<u32>,
    /// `(row, value)` for rows whose value does not fit, sorted by row.
    escaped: Vec<(u32, i64)>,
}

impl EscapedI64 {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        EscapedI64 { narrow: Vec::with_capacity(rows), escaped: Vec::new() }
    }

    #[inline]
    pub(crate) fn push(&mut self, value: i64) {
        if (0..i64::from(NARROW)).contains(&value) {
            self.narrow.push(value as u32);
        } else {
            self.escaped.push((self.narrow.len() as u32, value));
            self.narrow.push(NARROW);
        }
    }

    pub(crate) fn finish(&mut self) {
        self.narrow.shrink_to_fit();
        self.escaped.shrink_to_fit();
    }

    #[inline]
    pub(crate) fn get(&self, row: usize) -> i64 {
        let v = self.narrow[row];
        if v != NARROW {
            return i64::from(v);
        }
        match self.escaped.binary_search_by_key(&(row as u32), |&(r, _)| r) {
            Ok(i) => self.escaped[i].1,
            Err(_) => i64::from(v),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.narrow.capacity() * 4 + self.escaped.capacity() * 16
    }
}

/// A column of ids, 16 bits per row while every id fits, else 32.
#[derive(Debug, Clone)]
pub(crate) enum IdColumn {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Default for IdColumn {
    fn default() -> Self {
        IdColumn::Narrow(Vec::new())
    }
}

impl IdColumn {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        IdColumn::Narrow(Vec::with_capacity(rows))
    }

    #[inline]
    pub(crate) fn push(&mut self, id: u32) {
        match self {
            IdColumn::Narrow(ids) => match u16::try_from(id) {
                Ok(narrow) => ids.push(narrow),
                Err(_) => {
                    self.widen();
                    self.push(id);
                }
            },
            IdColumn::Wide(ids) => ids.push(id),
        }
    }

    /// Switches to 32-bit storage (once per line at most).
    fn widen(&mut self) {
        if let IdColumn::Narrow(ids) = self {
            let mut wide = Vec::with_capacity(ids.capacity());
            wide.extend(ids.iter().map(|&id| u32::from(id)));
            *self = IdColumn::Wide(wide);
        }
    }

    #[inline]
    pub(crate) fn get(&self, row: usize) -> u32 {
        match self {
            IdColumn::Narrow(ids) => u32::from(ids[row]),
            IdColumn::Wide(ids) => ids[row],
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            IdColumn::Narrow(ids) => ids.len(),
            IdColumn::Wide(ids) => ids.len(),
        }
    }

    /// Replaces every id by `f(id)`.
    pub(crate) fn map_in_place(&mut self, f: impl Fn(u32) -> u32) {
        let needs_wide = match self {
            IdColumn::Narrow(ids) => ids.iter().any(|&id| u16::try_from(f(u32::from(id))).is_err()),
            IdColumn::Wide(_) => false,
        };
        if needs_wide {
            self.widen();
        }
        match self {
            IdColumn::Narrow(ids) => ids.iter_mut().for_each(|id| *id = f(u32::from(*id)) as u16),
            IdColumn::Wide(ids) => ids.iter_mut().for_each(|id| *id = f(*id)),
        }
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        match self {
            IdColumn::Narrow(ids) => ids.shrink_to_fit(),
            IdColumn::Wide(ids) => ids.shrink_to_fit(),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            IdColumn::Narrow(ids) => ids.capacity() * 2,
            IdColumn::Wide(ids) => ids.capacity() * 4,
        }
    }
}

/// Marks a row of [`RowEnds`] whose offset is in the side table.
const ESCAPED_END: u16 = u16::MAX;

/// Non-decreasing `u32` row ends (each event's stats end): per block of 64 rows, the end
/// before the block; per row, its offset from it. Offsets that do not fit 16 bits go to a
/// sorted side table.
#[derive(Debug, Default, Clone)]
pub(crate) struct RowEnds {
    block_start: Vec<u32>,
    offset: Vec<u16>,
    escaped: Vec<(u32, u32)>,
    last: u32,
}

impl RowEnds {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        RowEnds {
            block_start: Vec::with_capacity(rows.div_ceil(BLOCK)),
            offset: Vec::with_capacity(rows),
            ..Default::default()
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, end: u32) {
        let row = self.offset.len();
        if row.is_multiple_of(BLOCK) {
            self.block_start.push(self.last);
        }
        let start = self.block_start[row / BLOCK];
        match u16::try_from(end.wrapping_sub(start)) {
            Ok(offset) if offset != ESCAPED_END && end >= start => self.offset.push(offset),
            _ => {
                self.escaped.push((row as u32, end));
                self.offset.push(ESCAPED_END);
            }
        }
        self.last = end;
    }

    /// The end of row `row`.
    #[inline]
    pub(crate) fn get(&self, row: usize) -> u32 {
        let offset = self.offset[row];
        if offset != ESCAPED_END {
            return self.block_start[row / BLOCK] + u32::from(offset);
        }
        match self.escaped.binary_search_by_key(&(row as u32), |&(r, _)| r) {
            Ok(i) => self.escaped[i].1,
            Err(_) => self.block_start[row / BLOCK],
        }
    }

    /// `start..end` of row `row` (its start is the previous row's end).
    #[inline]
    pub(crate) fn range(&self, row: usize) -> std::ops::Range<u32> {
        let start = if row == 0 { 0 } else { self.get(row - 1) };
        start..self.get(row)
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.block_start.shrink_to_fit();
        self.offset.shrink_to_fit();
        self.escaped.shrink_to_fit();
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.block_start.capacity() * 4 + self.offset.capacity() * 2 + self.escaped.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_column_widens_when_an_id_does_not_fit() {
        let mut col = IdColumn::with_capacity(4);
        for id in [0, 7, 65_535] {
            col.push(id);
        }
        assert!(matches!(col, IdColumn::Narrow(_)));
        col.push(70_000);
        col.push(3);
        assert!(matches!(col, IdColumn::Wide(_)));
        assert_eq!((0..col.len()).map(|r| col.get(r)).collect::<Vec<_>>(), [0, 7, 65_535, 70_000, 3]);
        let mut small = IdColumn::with_capacity(2);
        small.push(1);
        small.push(2);
        small.map_in_place(|id| if id == 2 { u32::MAX - 1 } else { id });
        assert_eq!((small.get(0), small.get(1)), (1, u32::MAX - 1));
    }

    #[test]
    fn row_ends_round_trip_small_and_large_offsets() {
        // Rows with 0..3 stats, one row with 100,000 stats, then more small rows.
        let mut ends = Vec::new();
        let mut end = 0u32;
        for row in 0..300u32 {
            end += if row == 130 { 100_000 } else { row % 4 };
            ends.push(end);
        }
        let mut col = RowEnds::with_capacity(0);
        for &e in &ends {
            col.push(e);
        }
        col.shrink_to_fit();
        for (row, &e) in ends.iter().enumerate() {
            assert_eq!(col.get(row), e, "row {row}");
            let start = if row == 0 { 0 } else { ends[row - 1] };
            assert_eq!(col.range(row), start..e);
        }
    }

    #[test]
    fn blocked_column_round_trips_narrow_and_wide_blocks() {
        let mut values: Vec<i64> = (0..200).map(|i| 1_000_000 + i * 7).collect();
        values[70] = i64::MAX; // forces block 1 wide
        values[150] = -5; // block 2: spread still fits
        values.push(i64::MIN);
        let mut col = BlockedI64::with_capacity(0);
        for &v in &values {
            col.push(v);
        }
        col.finish();
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(col.get(i), v, "row {i}");
        }
    }

    #[test]
    fn escaped_column_round_trips() {
        let values = [0i64, 5, u32::MAX as i64, -1, i64::MAX, 42, u32::MAX as i64 - 1];
        let mut col = EscapedI64::with_capacity(0);
        for &v in &values {
            col.push(v);
        }
        col.finish();
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(col.get(i), v);
        }
    }
}
